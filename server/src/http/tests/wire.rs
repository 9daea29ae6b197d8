//! The wire, pinned: one scenario through every endpoint, each answer compared with its golden file in
//! `server/tests/wire/` (status and body). A change to what the API answers shows there as a diff to
//! review; `UPDATE_EXPECT=1` writes the files anew. Each file also names the TypeScript type of
//! `clients/js/statecraft.d.ts` that the body is, and `cli/tests/js_types.rs` has tsc check every
//! body against it, so the client's types cannot drift from what the server sends.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use super::{Answered, Harness};

fn golden_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wire")
}

/// The answers of the scenario, compared (or written) one by one.
struct Goldens {
    server: Harness,
    seen: BTreeSet<String>,
    differences: Vec<String>,
    update: bool,
}

impl Goldens {
    /// Sends a request and compares its answer with the golden file `name`, whose body is the
    /// TypeScript type `typescript`.
    fn check(
        &mut self,
        name: &str,
        typescript: &str,
        method: &str,
        uri: &str,
        body: Option<Json>,
    ) -> Answered {
        let answer = self.server.call(method, uri, body.as_ref());
        let golden = json!({
            "request": format!("{method} {uri}"),
            "status": answer.status.as_u16(),
            "typescript": typescript,
            "body": answer.body,
        });
        assert!(self.seen.insert(name.to_owned()), "{name} is checked twice");
        let path = golden_folder().join(format!("{name}.json"));
        if self.update {
            let text = serde_json::to_string_pretty(&golden).expect("JSON") + "\n";
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        } else {
            let kept: Option<Json> = std::fs::read_to_string(&path)
                .ok()
                .and_then(|text| serde_json::from_str(&text).ok());
            if kept.as_ref() != Some(&golden) {
                self.differences.push(format!(
                    "{name}: the answer is\n{}",
                    serde_json::to_string_pretty(&golden).expect("JSON")
                ));
            }
        }
        answer
    }
}

const SCRIPT: &str = r#"
on("heal", function(ctx, amount)
  ctx.emit({ op = "increment", path = { "hp" }, value = amount, reason = "healed" })
  ctx.event("message", { text = "healed by " .. amount })
end, {
  doc = "heal the hero",
  args = { { name = "amount", type = "integer", minimum = 0, doc = "hit points" } },
})
"#;

fn schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            "hp": {"type": "integer", "minimum": 0, "maximum": 20},
            "bag": {"type": "array", "items": {"type": "string"}},
            "mood": {"type": "string", "enum": ["calm", "angry"]}
        },
        "required": ["hp", "bag", "mood"]
    })
}

/// A card's game: its macros kept for its replies, the card it holds, and a new version of it.
fn card_answers(g: &mut Goldens) {
    let card = |content: &str| {
        json!({"spec": "chara_card_v2", "data": {"name": "Io", "character_book": {"entries": [
            {"comment": "[InitVar]", "content": content}]}}})
    };
    g.server.create(&json!({
        "id": "io",
        "card": card("<user>:\n  hp: 10\n  title: squire\nnpcs:\n  $meta: {extensible: true}"),
        "macros": {"user": "Alex"},
    }));
    g.server.call(
        "POST",
        "/v1/games/io/apply",
        Some(&json!({"input": "_.set('<user>.hp', 10, 4);"})),
    );
    g.check("card", "GameCard", "GET", "/v1/games/io/card", None);
    let v2 = card("<user>:\n  hp: 10\n  mp: 5\nnpcs: {}\nquests: []");
    g.check(
        "card_update_dry_run",
        "CardUpdated",
        "POST",
        "/v1/games/io/card",
        Some(json!({"card": v2, "dry_run": true})),
    );
    g.check(
        "card_update",
        "CardUpdated",
        "POST",
        "/v1/games/io/card",
        Some(json!({"card": v2, "remove_dropped": true})),
    );
}

#[test]
fn every_answer_matches_its_golden_file() {
    let mut goldens = Goldens {
        server: Harness::sqlite(100),
        seen: BTreeSet::new(),
        differences: Vec::new(),
        update: std::env::var_os("UPDATE_EXPECT").is_some(),
    };
    let g = &mut goldens;
    g.check("health", "Health", "GET", "/v1/health", None);
    g.check(
        "create",
        "Created",
        "POST",
        "/v1/games",
        Some(json!({
            "id": "hero",
            "state": {"hp": 10, "bag": [], "mood": "calm"},
            "schema": schema(),
            "scripts": {"heal.lua": SCRIPT},
        })),
    );
    g.check("list", "GameList", "GET", "/v1/games?limit=10", None);
    g.check(
        "apply",
        "Applied",
        "POST",
        "/v1/games/hero/apply",
        Some(json!({
            "batch": [
                {"op": "assign", "path": ["hp"], "value": 7, "old": 10, "reason": "a goblin"},
                {"op": "push", "path": ["bag"], "value": "rope"},
                {"op": "callback", "path": ["heal"], "value": [2]}
            ],
            "label": "first",
        })),
    );
    g.check(
        "apply_reply",
        "Applied",
        "POST",
        "/v1/games/hero/apply",
        Some(json!({
            "input": "The hero rests.\n```json\n[{'op': 'assign', 'path': 'mood', 'value': 'angry',},]\n```\n<UpdateVariable>\n_.set('hp', 9, 12);//rest\n</UpdateVariable>",
            "label": "second",
        })),
    );
    g.check(
        "apply_dry_run",
        "Applied",
        "POST",
        "/v1/games/hero/apply",
        Some(json!({"batch": [{"op": "remove", "path": ["bag", 0]}], "dry_run": true})),
    );
    g.check(
        "apply_rejected",
        "ErrorBody",
        "POST",
        "/v1/games/hero/apply",
        Some(json!({"batch": [
            {"op": "assign", "path": ["hp"], "value": 30},
            {"op": "assign", "path": ["mood"], "value": "sad", "old": "calm"}
        ]})),
    );
    g.check(
        "apply_unreadable",
        "ErrorBody",
        "POST",
        "/v1/games/hero/apply",
        Some(json!({"input": "```json\n[{\"op\": \"fly\", \"path\": [\"hp\"]}]\n```"})),
    );
    g.check(
        "apply_invalid_batch",
        "ErrorBody",
        "POST",
        "/v1/games/hero/apply",
        Some(json!({"batch": [{"op": "assign", "value": 1}]})),
    );
    g.check(
        "step_conflict",
        "ErrorBody",
        "POST",
        "/v1/games/hero/apply",
        Some(json!({"batch": [], "expect_step": 1})),
    );
    g.check("show", "Position", "GET", "/v1/games/hero", None);
    g.check(
        "show_mvu",
        "MvuView",
        "GET",
        "/v1/games/hero?view=mvu",
        None,
    );
    g.check(
        "state_at",
        "StepState",
        "GET",
        "/v1/games/hero/state?at=first",
        None,
    );
    g.check(
        "state_at_root",
        "StepState",
        "GET",
        "/v1/games/hero/state?step=0",
        None,
    );
    g.check("undo", "Moved", "POST", "/v1/games/hero/undo", None);
    g.check("redo", "Moved", "POST", "/v1/games/hero/redo", None);
    g.check(
        "checkout",
        "Moved",
        "POST",
        "/v1/games/hero/checkout",
        Some(json!({"to": "first"})),
    );
    let chat = [
        "Mira smiles.\n<UpdateVariable>\n_.set('hp', 10, 12);//rest\n</UpdateVariable>",
        "Mira frowns.\n```json\n[{\"op\": \"assign\", \"path\": [\"hp\"], \"value\": 99}]\n```",
    ];
    g.check(
        "sync",
        "Synced",
        "POST",
        "/v1/games/chat/sync",
        Some(json!({
            "replies": [{"text": chat[0]}, {"text": chat[1]}],
            "create": {"state": {"hp": 10, "bag": [], "mood": "calm"}, "schema": schema()},
        })),
    );
    g.check(
        "sync_need_text",
        "ErrorBody",
        "POST",
        "/v1/games/chat/sync",
        Some(json!({"replies": [
            {"text": chat[0]},
            {"sha256": "0000000000000000000000000000000000000000000000000000000000000000"}
        ]})),
    );
    g.check("log", "Log", "GET", "/v1/games/chat/log", None);
    g.check("log_timeline", "Log", "GET", "/v1/games/hero/log", None);
    g.check(
        "game_prompt",
        "GamePrompted",
        "POST",
        "/v1/games/chat/prompt",
        Some(json!({"budget": 13, "format": "compact", "mode": "state", "messages": ["Mira?"]})),
    );
    g.check(
        "game_prompt_pass",
        "GamePrompted",
        "POST",
        "/v1/games/chat/prompt",
        Some(json!({"step": 1, "mode": "pass", "reply": "Mira smiles.", "lang": "zh"})),
    );
    g.check(
        "game_schema",
        "GameSchemas",
        "GET",
        "/v1/games/chat/schema",
        None,
    );
    g.check(
        "evaluate",
        "Evaluated",
        "POST",
        "/v1/games/chat/evaluate",
        Some(json!({"conditions": ["hp >= 10 and mood == 'calm'", "bag[0] exists", "hp =="], "step": 1})),
    );
    card_answers(g);
    g.check(
        "extract",
        "Extracted",
        "POST",
        "/v1/extract",
        Some(json!({
            "input": "Done.\n<UpdateVariable>\n_.set('hp', 3);//ouch\n_.add('gold', 'x');\n</UpdateVariable>",
            "state": {"hp": 10},
        })),
    );
    g.check(
        "convert",
        "Converted",
        "POST",
        "/v1/convert",
        Some(json!({"input": "_.set('a.b', 1, 2);//why", "from": "mvu", "to": "json"})),
    );
    g.check(
        "convert_to_mvu",
        "Converted",
        "POST",
        "/v1/convert",
        Some(json!({
            "input": [{"op": "assign", "path": ["a"], "value": 1}, {"op": "callback", "path": ["f"]}],
            "from": "json",
            "to": "mvu",
        })),
    );
    g.check(
        "convert_rejected",
        "ErrorBody",
        "POST",
        "/v1/convert",
        Some(json!({"input": [{"op": "assign"}], "from": "json", "to": "jsonpatch"})),
    );
    g.check(
        "prompt",
        "Prompted",
        "POST",
        "/v1/prompt",
        Some(json!({"state": {"hp": 10}, "schema": {"type": "object"}})),
    );
    g.check(
        "schema",
        "Schemas",
        "POST",
        "/v1/schema",
        Some(json!({"schema": {"type": "object", "properties": {"hp": {"type": "integer"}}}})),
    );
    g.check(
        "schema_gbnf",
        "Schemas",
        "POST",
        "/v1/schema",
        Some(json!({"gbnf": true})),
    );
    g.check("delete", "Deleted", "DELETE", "/v1/games/chat", None);
    g.check("unknown_game", "ErrorBody", "GET", "/v1/games/chat", None);
    g.check(
        "bad_request",
        "ErrorBody",
        "POST",
        "/v1/games/hero/apply",
        Some(json!({"batch": [], "dryrun": true})),
    );

    // Every golden file is one this scenario checks: a removed answer must not leave a stale file.
    let stale: Vec<String> = std::fs::read_dir(golden_folder())
        .expect("server/tests/wire")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".json")?.to_owned();
            (!goldens.seen.contains(&stem)).then_some(name)
        })
        .collect();
    assert!(
        stale.is_empty(),
        "golden files no request checks: {stale:?}"
    );
    assert!(
        goldens.differences.is_empty(),
        "answers differ from server/tests/wire (UPDATE_EXPECT=1 writes them; review the diff):\n{}",
        goldens.differences.join("\n")
    );
}
