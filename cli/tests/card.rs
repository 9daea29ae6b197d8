//! `statecraft card`: a character card in (PNG, card JSON, world book export, InitVar text), MVU's
//! initial state and automatic schema out; bad cards get an error naming the entry and the line.
//!
//! The cards are in `tests/fixtures/cards/`: `mira.json` is a V2 card in the shape of MVU's example
//! cards (an `[InitVar]` entry of YAML in a code fence with `<user>`, `{{char}}`, value-description
//! pairs, `$meta` and the extensible marker; a second one of JSON with comments; both disabled, as
//! MVU cards keep them out of the prompt), `mira.png` the same card in a PNG's `chara` chunk, and
//! `mira-book.json` its world book as SillyTavern exports it (entries keyed by uid).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

mod support;
use support::run_in;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cards")
        .join(name)
}

fn card(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut all = vec!["card"];
    all.extend_from_slice(args);
    let run = run_in(dir.path(), &all, "");
    assert_eq!(run.code, 0, "{run:?}");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not json ({e}): {}", run.stdout))
}

fn mira_state() -> Value {
    json!({
        "日期": "2024-03-01",
        "时间": "08:00",
        "Alex": {"生命值": [100, "0-100, 0 means death"], "金钱": 50, "背包": ["绳子"]},
        "Mira": {"好感度": [10, "-100 to 100"], "心情": "平静"},
        "NPC": {"小林": {"好感度": 5, "心情": "开心"}},
        "事件": [{"名称": "初遇", "已完成": true}]
    })
}

#[test]
fn a_png_card_and_its_json_give_the_same_state_and_schema() {
    let png = fixture("mira.png");
    let json = fixture("mira.json");
    let from_png = card(&[png.to_str().unwrap(), "--macro", "user=Alex"]);
    let from_json = card(&[json.to_str().unwrap(), "--macro", "user=Alex"]);
    assert_eq!(from_png, from_json);
    assert_eq!(from_png["state"], mira_state());
    assert_eq!(from_png["profile"], "mvu");
    assert_eq!(
        from_png["entries"],
        json!(["[InitVar] 1 start", "[initvar] events"]),
        "only InitVar entries, disabled ones included, in the book's order"
    );
}

#[test]
fn markers_become_the_automatic_schema() {
    let read = card(&[
        fixture("mira.json").to_str().unwrap(),
        "--macro",
        "user=Alex",
    ]);
    let schema = &read["schema"];
    assert_eq!(schema["extensible"], false, "the root is closed");
    let alex = &schema["properties"]["Alex"];
    assert_eq!(alex["required"], true);
    assert_eq!(alex["extensible"], false);
    assert_eq!(
        alex["properties"]["背包"]["extensible"], true,
        "the marker opens the bag"
    );
    let npc = &schema["properties"]["NPC"];
    assert_eq!(npc["extensible"], true);
    assert_eq!(npc["template"], json!({"好感度": 0, "心情": "平静"}));
    assert_eq!(
        npc["properties"]["小林"]["required"], false,
        "members of an open object may go"
    );
    let events = &schema["properties"]["事件"];
    assert_eq!(events["extensible"], true);
    assert_eq!(events["template"], json!({"已完成": false}));
}

#[test]
fn an_exported_world_book_is_read_in_uid_order() {
    let read = card(&[
        fixture("mira-book.json").to_str().unwrap(),
        "--macro",
        "user=Alex",
        "--macro",
        "char=Mira",
    ]);
    // uid 10 comes after uid 2, though "10" sorts before "2" as text, and its 金钱 is merged last.
    assert_eq!(
        read["entries"],
        json!(["[InitVar] 1 start", "[initvar] events", "[InitVar] late"])
    );
    assert_eq!(read["state"]["金钱"], 1);
    assert_eq!(read["state"]["Alex"]["金钱"], 50);
}

#[test]
fn initvar_text_is_a_card_too() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let run = run_in(
        dir.path(),
        &["card", "-", "--macro", "user=Ann"],
        "<user>:\n  hp: 10\n  bag: [rope, $__META_EXTENSIBLE__$]\n",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let read: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(read["state"], json!({"Ann": {"hp": 10, "bag": ["rope"]}}));
    assert_eq!(
        read["schema"]["properties"]["Ann"]["properties"]["bag"]["extensible"],
        true
    );
}

#[test]
fn bad_cards_are_refused_with_what_and_where() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let cases: [(&str, &[u8], &str); 4] = [
        ("broken YAML", b"a: 1\nb: [1, 2\nc: 3\n", "line 3"),
        (
            "no InitVar entry",
            br#"{"spec": "chara_card_v2", "data": {"name": "x", "character_book": {"entries": [{"comment": "lore", "content": "a: 1"}]}}}"#,
            "1 world book entries and none is an InitVar entry",
        ),
        ("a PNG without a card", &[0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', 0, 0], "PNG file is damaged"),
        ("a list, not a mapping", b"- 1\n- 2\n", "not a list"),
    ];
    for (what, input, expected) in cases {
        let path = dir.path().join("card.bin");
        std::fs::write(&path, input).unwrap();
        let run = run_in(dir.path(), &["--format", "json", "card", "card.bin"], "");
        assert_eq!(run.code, 2, "{what}: {run:?}");
        assert!(run.stdout.is_empty(), "{what}: nothing on stdout");
        assert!(run.stderr.contains(expected), "{what}: {}", run.stderr);
        let error: Value = serde_json::from_str(run.stderr.trim()).expect("a JSON error");
        assert!(error["error"].is_string(), "{what}: {error}");
    }
}

/// Runs `statecraft` in `dir` and returns the run.
fn run(dir: &Path, args: &[&str], stdin: &str) -> support::Run {
    run_in(dir, args, stdin)
}

#[test]
fn a_game_made_from_a_card_keeps_mvu_rules_in_its_save() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let card = fixture("mira.png");
    let made = run(
        dir.path(),
        &[
            "new",
            "game.save",
            "--card",
            card.to_str().unwrap(),
            "--macro",
            "user=Alex",
        ],
        "",
    );
    assert_eq!(made.code, 0, "{made:?}");
    let shown = run(dir.path(), &["show", "--save", "game.save"], "");
    assert_eq!(
        serde_json::from_str::<Value>(&shown.stdout).unwrap(),
        mira_state()
    );
    // A pair takes the value at element 0; a misspelt path is skipped; a locked object takes no new
    // key; a templated insert gets the template; a bad command is skipped and the rest stand.
    let reply = "<UpdateVariable>\n_.set('Mira.好感度', 10, 15);//笑了\n_.set('Mira.心晴', '好');\n_.insert('Alex', '魔力', 5);\n_.insert('NPC', '阿明', {\"好感度\": 3});\n_.add('Alex.背包', 1);\n_.add('Alex.金钱', -20);\n</UpdateVariable>";
    let applied = run(
        dir.path(),
        &[
            "--format",
            "json",
            "apply",
            "--save",
            "game.save",
            "--label",
            "m1",
            "-",
        ],
        reply,
    );
    assert_eq!(applied.code, 0, "{applied:?}");
    let state: Value = serde_json::from_str(&applied.stdout).unwrap();
    assert_eq!(state["Mira"]["好感度"], json!([15, "-100 to 100"]));
    assert_eq!(state["Mira"].get("心晴"), None);
    assert_eq!(state["Alex"].get("魔力"), None);
    assert_eq!(state["NPC"]["阿明"], json!({"好感度": 3, "心情": "平静"}));
    assert_eq!(state["Alex"]["金钱"], 30);
    let documents: Vec<Value> = applied
        .stderr
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let commit = documents
        .iter()
        .find(|d| d["committed"] == true)
        .expect("the commit");
    let warnings: Vec<&str> = commit["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        vec!["schema_violation", "type_mismatch"],
        "{commit}"
    );
    let reading = documents
        .iter()
        .find(|d| d.get("diagnostics").is_some())
        .expect("the diagnostics");
    let kinds: Vec<&str> = reading["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"mvu_missing_path"), "{kinds:?}");
    // The save keeps the profile: reopened, the next reply still follows MVU's rules.
    let next = run(
        dir.path(),
        &["apply", "--save", "game.save", "-"],
        "_.set('Mira.好感度', 20);\n_.set('nowhere', 1);",
    );
    assert_eq!(next.code, 0, "{next:?}");
    let state: Value = serde_json::from_str(&next.stdout).unwrap();
    assert_eq!(state["Mira"]["好感度"], json!([20, "-100 to 100"]));
    assert_eq!(state.get("nowhere"), None);
}

#[test]
fn new_with_a_card_takes_another_profile_and_refuses_both_sources() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let card = fixture("mira.json");
    let made = run(
        dir.path(),
        &[
            "new",
            "strict.save",
            "--card",
            card.to_str().unwrap(),
            "--profile",
            "strict",
        ],
        "",
    );
    assert_eq!(made.code, 0, "{made:?}");
    let refused = run(
        dir.path(),
        &["apply", "--save", "strict.save", "-"],
        "_.set('Mira.好感度', 15);\n_.add('Mira.心情', 1);",
    );
    assert_eq!(
        refused.code, 1,
        "strict: one bad command refuses the reply: {refused:?}"
    );
    std::fs::write(dir.path().join("s.json"), "{}").unwrap();
    let both = run(
        dir.path(),
        &[
            "new",
            "x.save",
            "--state",
            "s.json",
            "--card",
            card.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(both.code, 2, "{both:?}");
    let bad = run(dir.path(), &["new", "y.save", "--card", "s.json"], "");
    assert_eq!(bad.code, 0, "an empty JSON object is InitVar text: {bad:?}");
    std::fs::write(dir.path().join("bad.yaml"), "- 1\n").unwrap();
    let bad = run(dir.path(), &["new", "z.save", "--card", "bad.yaml"], "");
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr.contains("cannot read the card"),
        "{}",
        bad.stderr
    );
    assert!(!dir.path().join("z.save").exists());
}

#[test]
fn apply_on_a_state_file_follows_the_profile_given() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(
        dir.path().join("state.json"),
        r#"{"hp": [10, "0-100"], "name": "a", "bag": []}"#,
    )
    .unwrap();
    let reply =
        "_.set('hp', 10, 8);\n_.add('name', 1);\n_.insert('bag', 'rope');\n_.set('typo', 1);";
    let strict = run(dir.path(), &["apply", "--state", "state.json", "-"], reply);
    assert_eq!(strict.code, 1, "strict refuses the whole reply: {strict:?}");
    let mvu = run(
        dir.path(),
        &["apply", "--state", "state.json", "--profile", "mvu", "-"],
        reply,
    );
    assert_eq!(mvu.code, 0, "{mvu:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&mvu.stdout).unwrap(),
        json!({"hp": [8, "0-100"], "name": "a", "bag": ["rope"]})
    );
    assert!(
        mvu.stderr.contains("skipped `_.add('name', 1);`"),
        "{}",
        mvu.stderr
    );
    assert!(!mvu.stderr.contains("old_mismatch"), "{}", mvu.stderr);
    // mvu-zod: `_.set` may create what the schema allows, and the schema repairs what it can.
    std::fs::write(
        dir.path().join("schema.json"),
        r#"{"type": "object", "additionalProperties": false,
            "properties": {"hp": {"type": "array", "prefixItems": [{"type": "integer", "maximum": 100}]},
                           "name": {"type": "string"}, "bag": {"type": "array"}, "mood": {"type": "string"}}}"#,
    )
    .unwrap();
    let zod = run(
        dir.path(),
        &[
            "--format",
            "json",
            "apply",
            "--state",
            "state.json",
            "--schema",
            "schema.json",
            "--profile",
            "mvu-zod",
            "-",
        ],
        "_.set('hp', 150);\n_.set('mood', 'glad');\n_.set('typo', 1);",
    );
    assert_eq!(zod.code, 0, "{zod:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&zod.stdout).unwrap(),
        json!({"hp": [100, "0-100"], "name": "a", "bag": [], "mood": "glad"})
    );
    assert!(zod.stderr.contains("schema_repaired"), "{}", zod.stderr);
    assert!(
        zod.stderr.contains("skipped `_.set('typo', 1);`"),
        "{}",
        zod.stderr
    );
    let misplaced = run(
        dir.path(),
        &["apply", "--save", "x.save", "--profile", "mvu", "-"],
        reply,
    );
    assert_eq!(
        misplaced.code, 2,
        "a save keeps its own profile: {misplaced:?}"
    );
}

/// A run in `dir` that must succeed; its stdout as JSON when it is JSON, else `null`.
fn ok(dir: &Path, args: &[&str], stdin: &str) -> Value {
    let run = run_in(dir, args, stdin);
    assert_eq!(run.code, 0, "{args:?}: {run:?}");
    serde_json::from_str(&run.stdout).unwrap_or(Value::Null)
}

/// The real cards' failure: a card's game forgot its macros, so `<user>` in a reply's command path
/// was not replaced (the command skipped or a literal `<user>` written). A game made from a card
/// keeps them: `apply --save`, `sync` and `play` read `<user>`, `{{user}}` and `{{char}}` (the card's
/// name) with them, and `apply --save --macro` takes macros for one reply, over the kept ones.
#[test]
fn a_card_game_keeps_its_macros_for_every_reply() {
    let dir = tempfile::tempdir().unwrap();
    let card = fixture("mira.json");
    ok(
        dir.path(),
        &[
            "new",
            "game.save",
            "--card",
            card.to_str().unwrap(),
            "--macro",
            "user=Alex",
        ],
        "",
    );
    let reply = "<UpdateVariable>\n_.set('<user>.金钱', 50, 40);//paid\n\
                 _.set('{{char}}.心情', '平静', '高兴');\n_.set('{{user}}.背包[0]', '绳子', '灯');\n</UpdateVariable>";
    let state = ok(dir.path(), &["apply", "--save", "game.save", "-"], reply);
    assert_eq!(state["Alex"]["金钱"], 40);
    assert_eq!(state["Alex"]["背包"], json!(["灯"]));
    assert_eq!(state["Mira"]["心情"], "高兴");
    assert!(state.get("<user>").is_none() && state.get("{{char}}").is_none());
    // One reply's own macros win over the kept ones: Bob is no one in this game (mvu skips it).
    let run = run_in(
        dir.path(),
        &["apply", "--save", "game.save", "--macro", "user=Bob", "-"],
        "_.set('<user>.金钱', 1);",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("mvu_missing_path"), "{}", run.stderr);
    assert!(run.stderr.contains("Bob"), "{}", run.stderr);
    // A sync of the game's chat reads them too (its first reply builds on the card's state).
    let path = json!({"replies": [{"text": "_.add('<user>.金钱', 5);"}]});
    let synced = ok(
        dir.path(),
        &["sync", "--save", "game.save", "-"],
        &path.to_string(),
    );
    assert_eq!(synced["state"]["Alex"]["金钱"], 55);
}

#[test]
fn play_reads_char_as_the_card_name() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario");
    std::fs::create_dir_all(scenario.join("turns")).unwrap();
    std::fs::copy(fixture("mira.json"), scenario.join("card.json")).unwrap();
    std::fs::write(
        scenario.join("scenario.json"),
        r#"{"card": "card.json", "macros": {"user": "Alex"}}"#,
    )
    .unwrap();
    std::fs::write(
        scenario.join("turns/01.txt"),
        "_.set('{{char}}.心情', '平静', '高兴');\n_.add('<user>.金钱', -5);",
    )
    .unwrap();
    std::fs::write(
        scenario.join("turns/01.expect.json"),
        r#"{"outcome": "committed", "values": {"/Mira/心情": "高兴", "/Alex/金钱": 45}, "absent": ["/{{char}}"]}"#,
    )
    .unwrap();
    let run = run_in(dir.path(), &["play", "scenario"], "");
    assert_eq!(run.code, 0, "{run:?}");
}

/// A card update over the command line: a dry run lists what would change; the update adds the new
/// keys, keeps every value, lists the dropped key; undo takes it back; `--remove-dropped` removes
/// it; the new automatic schema holds from the update on; the same card again changes nothing.
#[test]
fn card_update_adds_keeps_lists_removes_on_request_and_undoes() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = "```yaml\nhero:\n  hp: 10\n  title: squire\nnpcs:\n  $meta: {extensible: true}\n```";
    let v2 = "```yaml\nhero:\n  hp: 10\n  mp: [5, \"mana\"]\nnpcs: {}\nquests:\n  - $__META_EXTENSIBLE__$\n```";
    let book = |content: &str| {
        json!({"spec": "chara_card_v2", "data": {"name": "Io", "character_book": {"entries": [
            {"comment": "[InitVar]", "content": content, "enabled": false}]}}})
        .to_string()
    };
    std::fs::write(dir.path().join("v1.json"), book(v1)).unwrap();
    std::fs::write(dir.path().join("v2.json"), book(v2)).unwrap();
    ok(dir.path(), &["new", "game.save", "--card", "v1.json"], "");
    ok(
        dir.path(),
        &["apply", "--save", "game.save", "-"],
        "_.set('hero.hp', 10, 4);\n_.insert('npcs', 'bob', {trust: 1});",
    );
    let preview = ok(
        dir.path(),
        &[
            "card",
            "update",
            "--save",
            "game.save",
            "v2.json",
            "--dry-run",
        ],
        "",
    );
    assert_eq!(preview["changed"], true);
    assert_eq!(preview["committed"], false);
    assert_eq!(preview["added"], json!([["hero", "mp"], ["quests"]]));
    assert_eq!(preview["dropped"], json!([["hero", "title"]]));
    let shown = ok(dir.path(), &["show", "--save", "game.save"], "");
    assert!(
        shown["hero"].get("mp").is_none(),
        "a dry run changes nothing"
    );
    let taken = ok(
        dir.path(),
        &["card", "update", "--save", "game.save", "v2.json"],
        "",
    );
    assert_eq!(taken["committed"], true);
    assert_eq!(taken["removed"], json!([]));
    let shown = ok(dir.path(), &["show", "--save", "game.save"], "");
    assert_eq!(
        shown,
        json!({"hero": {"hp": 4, "mp": [5, "mana"], "title": "squire"}, "npcs": {"bob": {"trust": 1}}, "quests": []})
    );
    // The new card's schema: npcs is locked now, quests open.
    let run = run_in(
        dir.path(),
        &["apply", "--save", "game.save", "-"],
        "_.insert('npcs', 'amy', {});\n_.insert('quests', 'find the key');",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("schema_violation"), "{}", run.stderr);
    let again = ok(
        dir.path(),
        &["card", "update", "--save", "game.save", "v2.json"],
        "",
    );
    assert_eq!(again["changed"], false, "the same card takes no step");
    // Undo the reply and the update: back to v1's game, which takes the update again, removing.
    ok(dir.path(), &["undo", "--save", "game.save"], "");
    let undone = ok(dir.path(), &["undo", "--save", "game.save"], "");
    assert_eq!(
        undone,
        json!({"hero": {"hp": 4, "title": "squire"}, "npcs": {"bob": {"trust": 1}}})
    );
    let removed = ok(
        dir.path(),
        &[
            "card",
            "update",
            "--save",
            "game.save",
            "v2.json",
            "--remove-dropped",
        ],
        "",
    );
    assert_eq!(removed["removed"], json!([["hero", "title"]]));
    let log = ok(dir.path(), &["log", "--save", "game.save"], "");
    assert!(log.to_string().contains("card update"), "labelled: {log}");
    let shown = ok(dir.path(), &["show", "--save", "game.save"], "");
    assert_eq!(
        shown,
        json!({"hero": {"hp": 4, "mp": [5, "mana"]}, "npcs": {"bob": {"trust": 1}}, "quests": []})
    );
}

/// A card that carries the extension's statecraft settings and no [InitVar] entry: `new --card`
/// and `import-chat --card` make the game the extension makes (its state, JSON Schema, scripts and
/// profile); `import-chat --state` starts from a state file.
#[test]
fn a_card_with_statecraft_settings_and_no_initvar_makes_the_extensions_game() {
    let dir = tempfile::tempdir().unwrap();
    let card = json!({"spec": "chara_card_v2", "data": {"name": "Vex", "character_book": {"entries": []},
        "extensions": {"statecraft": {
            "state": {"gold": 10, "log": []},
            "schema": {"type": "object", "properties": {"gold": {"type": "integer", "minimum": 0}}},
            "scripts": {"shop.lua": "on('buy', function(ctx, price) return {{op = 'increment', path = {'gold'}, value = -price}} end)"},
            "profile": "strict"}}}});
    std::fs::write(dir.path().join("vex.json"), card.to_string()).unwrap();
    let read = ok(dir.path(), &["card", "vex.json"], "");
    assert_eq!(read["state"], json!({"gold": 10, "log": []}));
    assert_eq!(read["schema"], Value::Null);
    assert_eq!(read["profile"], "strict");
    ok(dir.path(), &["new", "game.save", "--card", "vex.json"], "");
    assert!(dir.path().join("game.save.scripts/shop.lua").exists());
    let state = ok(
        dir.path(),
        &["apply", "--save", "game.save", "-"],
        r#"[{"op": "callback", "path": ["buy"], "value": [3]}]"#,
    );
    assert_eq!(state["gold"], 7, "the card's script runs");
    let refused = run_in(
        dir.path(),
        &["apply", "--save", "game.save", "-"],
        r#"[{"op": "assign", "path": ["gold"], "value": -1}]"#,
    );
    assert_eq!(refused.code, 1, "the card's schema holds: {refused:?}");
    // import-chat --card makes the same game and replays the chat on it.
    let chat = [
        json!({"user_name": "You", "character_name": "Vex", "chat_metadata": {}}),
        json!({"name": "Vex", "is_user": false, "mes": "Welcome.", "swipes": ["Welcome."], "swipe_id": 0}),
        json!({"name": "You", "is_user": true, "mes": "One apple."}),
        json!({"name": "Vex", "is_user": false, "mes": "```json\n[{\"op\": \"callback\", \"path\": [\"buy\"], \"value\": [2]}]\n```", "swipe_id": 0,
               "swipes": ["```json\n[{\"op\": \"callback\", \"path\": [\"buy\"], \"value\": [2]}]\n```"]}),
    ]
    .iter()
    .map(Value::to_string)
    .collect::<Vec<_>>()
    .join("\n");
    std::fs::write(dir.path().join("chat.jsonl"), chat).unwrap();
    ok(
        dir.path(),
        &[
            "import-chat",
            "chat.jsonl",
            "--save",
            "imported.save",
            "--card",
            "vex.json",
        ],
        "",
    );
    let imported = ok(dir.path(), &["show", "--save", "imported.save"], "");
    assert_eq!(imported, json!({"gold": 8, "log": []}));
    // --state: the state a chat starts from, as a file.
    std::fs::write(dir.path().join("start.json"), r#"{"gold": 1, "log": []}"#).unwrap();
    let run = run_in(
        dir.path(),
        &[
            "import-chat",
            "chat.jsonl",
            "--save",
            "plain.save",
            "--state",
            "start.json",
            "--profile",
            "strict",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let plain = ok(dir.path(), &["show", "--save", "plain.save"], "");
    assert_eq!(
        plain,
        json!({"gold": 1, "log": []}),
        "no scripts: the callback is refused"
    );
}
