//! The API of docs/http.md in process, on SQLite, as `statecraft serve` answers it: every endpoint
//! (games, the timeline, dry runs, the stateless ones), every error in one shape, the guard (token,
//! origins, preflights, `Host`), and the limits a request meets (body size, the game limit, the
//! request's time, scripts in the sandbox). What needs a real process (a restart, a stop, two
//! processes, the listening address) stays in `cli/tests/serve_api.rs`.

use std::time::Duration;

use serde_json::{Value as Json, json};

use super::{Answered, Harness, Options};
use crate::active_games::CacheBounds;
use crate::db::Database;

fn game(server: &Harness) -> String {
    server.create(&json!({
        "state": {"player": {"hp": 100, "gold": 5, "bag": ["rope"]}},
        "schema": {"type": "object", "properties": {"player": {"type": "object",
            "properties": {"hp": {"type": "integer", "minimum": 0, "maximum": 100}}}}},
    }))
}

/// Every error answer has exactly `{"error": {"kind", "message"}}` (and a rejection's details).
fn assert_error(answer: &Answered, status: u16, kind: &str) {
    assert_eq!(answer.status, status, "{:?}", answer.body);
    assert_eq!(answer.kind(), kind, "{:?}", answer.body);
    let message = answer.body["error"]["message"].as_str().unwrap_or("");
    assert!(!message.is_empty(), "an error says why: {:?}", answer.body);
    assert_eq!(answer.body["error"].as_object().map(|o| o.len()), Some(2));
    assert_eq!(
        answer.header("content-type"),
        Some("application/json"),
        "{:?}",
        answer.headers
    );
}

/// Applies a batch of instructions and checks it committed.
fn apply_ok(server: &Harness, id: &str, body: &Json) -> Json {
    let answer = server.call("POST", &format!("/v1/games/{id}/apply"), Some(body));
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

/// The state of a game now.
fn state(server: &Harness, id: &str) -> Json {
    let answer = server.call("GET", &format!("/v1/games/{id}"), None);
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["state"].clone()
}

#[test]
fn health_answers_ok_with_a_request_id() {
    let server = Harness::sqlite(100);
    let answer = server.call("GET", "/v1/health", None);
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.body,
        json!({"ok": true, "version": env!("CARGO_PKG_VERSION"), "api": crate::API_VERSION})
    );
    assert!(answer.header("x-request-id").is_some());
    let answer = server.call_with("GET", "/v1/health", None, &[("X-Request-Id", "abc-123")]);
    assert_eq!(answer.header("x-request-id"), Some("abc-123"));
}

#[test]
fn a_game_is_created_read_changed_and_deleted() {
    let server = Harness::sqlite(100);
    let answer = server.call(
        "POST",
        "/v1/games",
        Some(&json!({"state": {"hp": 1}, "id": "chat-1"})),
    );
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    assert_eq!(answer.body, json!({"id": "chat-1", "step": 0}));
    let shown = server.call("GET", "/v1/games/chat-1", None);
    assert_eq!(
        shown.body,
        json!({"state": {"hp": 1}, "step": 0, "label": null})
    );
    assert_error(
        &server.call(
            "POST",
            "/v1/games",
            Some(&json!({"state": {}, "id": "chat-1"})),
        ),
        409,
        "game_exists",
    );
    let made = server.call("POST", "/v1/games", Some(&json!({"state": {}})));
    assert_eq!(made.status, 201);
    let id = made.body["id"].as_str().unwrap();
    assert_eq!(id.len(), 32, "a server-made id is 128 random bits");
    let deleted = server.call("DELETE", "/v1/games/chat-1", None);
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert_error(
        &server.call("GET", "/v1/games/chat-1", None),
        404,
        "unknown_game",
    );
    assert_error(
        &server.call("DELETE", "/v1/games/chat-1", None),
        404,
        "unknown_game",
    );
    assert_error(
        &server.call(
            "POST",
            "/v1/games",
            Some(&json!({"state": {}, "id": "no spaces"})),
        ),
        400,
        "bad_request",
    );
}

#[test]
fn a_games_prompt_schemas_and_conditions_are_served() {
    let server = Harness::sqlite(100);
    let id = game(&server);
    let prompt = server.call(
        "POST",
        &format!("/v1/games/{id}/prompt"),
        Some(&json!({"budget": 20, "format": "compact", "mode": "state"})),
    );
    assert_eq!(prompt.status, 200, "{:?}", prompt.body);
    assert!(prompt.body["tokens"]["state"].as_u64().unwrap() <= 20);
    assert_eq!(prompt.body["step"], 0);
    let schemas = server.call("GET", &format!("/v1/games/{id}/schema"), None);
    assert_eq!(schemas.status, 200, "{:?}", schemas.body);
    assert_eq!(schemas.body["pass"]["required"], json!(["instructions"]));
    let evaluated = server.call(
        "POST",
        &format!("/v1/games/{id}/evaluate"),
        Some(&json!({"conditions": ["player.hp == 100 and player.bag[0] == 'rope'", "gold >"]})),
    );
    assert_eq!(evaluated.status, 200, "{:?}", evaluated.body);
    assert_eq!(evaluated.body["results"][0], json!({"holds": true}));
    assert_eq!(
        evaluated.body["results"][1]["error"]["code"],
        "expected_value"
    );
    assert_error(
        &server.call(
            "POST",
            &format!("/v1/games/{id}/prompt"),
            Some(&json!({"mode": "pass"})),
        ),
        400,
        "bad_request",
    );
    assert_error(
        &server.call(
            "POST",
            "/v1/games/nobody/evaluate",
            Some(&json!({"conditions": []})),
        ),
        404,
        "unknown_game",
    );
}

#[test]
fn games_are_listed_a_page_at_a_time() {
    let server = Harness::sqlite(100);
    for n in 0..5 {
        server.create(&json!({"state": {}, "id": format!("g{n}")}));
    }
    let first = server.call("GET", "/v1/games?limit=2", None);
    assert_eq!(
        first.body,
        json!({"games": [{"id": "g0", "step": 0, "label": null}, {"id": "g1", "step": 0, "label": null}], "next": "g1"})
    );
    let last = server.call("GET", "/v1/games?after=g3&limit=2", None);
    assert_eq!(last.body["games"].as_array().unwrap().len(), 1);
    assert_eq!(last.body["next"], Json::Null);
    assert_error(
        &server.call("GET", "/v1/games?limit=x", None),
        400,
        "bad_request",
    );
}

#[test]
fn a_raw_reply_is_applied_with_diagnostics_and_report() {
    let server = Harness::sqlite(100);
    let id = game(&server);
    let reply = "The goblin hits you.\n```json\n[{'op': 'assign', 'path': 'player.hp', 'value': 80, 'old': 100, 'reason': 'hit'},]\n```\n_.add('player.gold', 15);//loot\n";
    let body = apply_ok(&server, &id, &json!({"input": reply, "label": "m1"}));
    assert_eq!(body["committed"], json!(true));
    assert_eq!(body["step"], json!(1));
    assert_eq!(body["label"], json!("m1"));
    assert_eq!(
        body["changes"],
        json!([
            {"path": ["player", "hp"], "old": 100, "new": 80, "reason": "hit", "op": "assign"},
            {"path": ["player", "gold"], "old": 5, "new": 20, "reason": "loot", "op": "increment"}
        ])
    );
    let kinds: Vec<&str> = body["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"trailing_comma"), "{kinds:?}");
    assert!(body["report"]["score"].as_u64().unwrap() < 100);
    assert_eq!(
        state(&server, &id),
        json!({"player": {"hp": 80, "gold": 20, "bag": ["rope"]}})
    );
}

#[test]
fn a_rejected_batch_answers_422_with_errors_diagnostics_and_feedback() {
    let server = Harness::sqlite(100);
    let id = game(&server);
    let path = format!("/v1/games/{id}/apply");
    // The schema refuses hp 150: nothing changes.
    let answer = server.call(
        "POST",
        &path,
        Some(&json!({"input": "[{\"op\": \"assign\", \"path\": [\"player\", \"hp\"], \"value\": 150}]"})),
    );
    assert_error(&answer, 422, "rejected");
    assert_eq!(answer.body["errors"][0]["kind"], json!("schema_violation"));
    assert!(answer.body["diagnostics"].is_array());
    let feedback = answer.body["feedback"].as_str().unwrap();
    assert!(feedback.contains("was not applied"), "{feedback}");
    // An invalid instruction in a reply: refused before it runs.
    let answer = server.call(
        "POST",
        &path,
        Some(&json!({"input": "[{\"op\": \"frobnicate\", \"path\": [\"x\"]}]"})),
    );
    assert_error(&answer, 422, "rejected");
    assert!(!answer.body["errors"].as_array().unwrap().is_empty());
    assert!(
        answer.body["feedback"]
            .as_str()
            .unwrap()
            .contains("not applied")
    );
    // A strict batch with an unknown member.
    let answer = server.call(
        "POST",
        &path,
        Some(&json!({"batch": [{"op": "assign", "path": ["a"], "value": 1, "colour": "red"}]})),
    );
    assert_error(&answer, 422, "rejected");
    assert!(answer.body["feedback"].as_str().unwrap().contains("colour"));
    assert_eq!(state(&server, &id)["player"]["hp"], json!(100));
    let log = server.call("GET", &format!("/v1/games/{id}/log"), None);
    assert_eq!(log.body["steps"], json!([]), "nothing was recorded");
}

#[test]
fn bad_bodies_answer_400_and_large_ones_413() {
    let server = Harness::sqlite_with(Options {
        max_body: 1000,
        ..Options::default()
    });
    let id = server.create(&json!({"state": {}}));
    let path = format!("/v1/games/{id}/apply");
    let not_json = server.raw("POST", &path, "{not json", &[]);
    assert_error(&not_json, 400, "bad_request");
    // A body is an object of named members: an array is not read as the members in order (it
    // would apply a reply, move the game to the root, or create a game).
    let positional: [(&str, &str); 3] = [
        (
            &path,
            r#"["{\"op\": \"assign\", \"path\": [\"x\"], \"value\": 1}"]"#,
        ),
        (&format!("/v1/games/{id}/checkout"), "[0]"),
        ("/v1/games", r#"[{"made": "from an array"}]"#),
    ];
    for (endpoint, body) in positional {
        let answer = server.raw("POST", endpoint, body, &[]);
        assert_error(&answer, 400, "bad_request");
        assert!(
            answer.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("JSON object"),
            "{:?}",
            answer.body
        );
    }
    assert_eq!(state(&server, &id), json!({}));
    // An endpoint that takes no query refuses one, rather than ignoring what it asked for: this dry
    // run would commit, this delete would delete.
    let dry = json!({"batch": [{"op": "assign", "path": ["x"], "value": 1}]});
    let answer = server.call("POST", &format!("{path}?dry_run=true"), Some(&dry));
    assert_error(&answer, 400, "bad_request");
    assert!(
        answer.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"dry_run=true\""),
        "{:?}",
        answer.body
    );
    assert_error(
        &server.call("DELETE", &format!("/v1/games/{id}?really=no"), None),
        400,
        "bad_request",
    );
    assert_eq!(state(&server, &id), json!({}));
    // A step that is neither a label nor an id says what it found and what a step is.
    for (endpoint, body, found) in [
        (&path, json!({"batch": [], "at": -1}), "-1"),
        (&path, json!({"batch": [], "at": 1.5}), "1.5"),
        (
            &format!("/v1/games/{id}/checkout"),
            json!({"to": true}),
            "boolean `true`",
        ),
    ] {
        let answer = server.call("POST", endpoint, Some(&body));
        assert_error(&answer, 400, "bad_request");
        let message = answer.body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(found) && message.contains("its label (a string) or its id"),
            "{message}"
        );
    }
    let list = server.call("GET", "/v1/games", None);
    assert_eq!(list.body["games"].as_array().unwrap().len(), 1);
    assert_error(
        &server.call("POST", &path, Some(&json!({"input": "x", "dryrun": true}))),
        400,
        "bad_request",
    );
    assert_error(
        &server.call("POST", &path, Some(&json!({"input": "x", "batch": []}))),
        400,
        "bad_request",
    );
    assert_error(
        &server.call(
            "POST",
            &path,
            Some(&json!({"batch": [], "policies": {"old_mismatch": "shrug"}})),
        ),
        400,
        "bad_request",
    );
    let large = json!({"input": "x".repeat(2000)});
    assert_error(
        &server.call("POST", &path, Some(&large)),
        413,
        "body_too_large",
    );
    assert_error(&server.call("GET", "/nowhere", None), 404, "not_found");
    assert_error(
        &server.call("PUT", "/v1/games", None),
        405,
        "method_not_allowed",
    );
    assert_error(
        &server.call(
            "POST",
            "/v1/games",
            Some(&json!({"state": {"a": 1}, "schema": {"type": "array"}})),
        ),
        400,
        "invalid_game",
    );
    assert_error(
        &server.call(
            "POST",
            "/v1/games",
            Some(&json!({"state": {}, "scripts": {"bad.lua": "this is not lua"}})),
        ),
        400,
        "invalid_game",
    );
}

#[test]
fn the_timeline_swipes_checks_out_and_reads_any_step() {
    let server = Harness::sqlite(100);
    let id = game(&server);
    let hp =
        |value: i64| json!({"batch": [{"op": "assign", "path": ["player", "hp"], "value": value}]});
    let with = |mut body: Json, extra: Json| {
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    apply_ok(&server, &id, &with(hp(90), json!({"label": "m1"})));
    apply_ok(&server, &id, &with(hp(80), json!({"label": "m2"})));
    // A swipe of m2: committed on m1, beside m2.
    let swipe = apply_ok(
        &server,
        &id,
        &with(hp(70), json!({"label": "m2/s2", "at": "m1"})),
    );
    assert_eq!(swipe["step"], json!(3));
    assert_eq!(state(&server, &id)["player"]["hp"], json!(70));
    // The state at m2 without moving, by label and by id.
    let at = server.call("GET", &format!("/v1/games/{id}/state?at=m2"), None);
    assert_eq!(at.body["state"]["player"]["hp"], json!(80));
    assert_eq!(at.body["step"], json!(2));
    let at = server.call("GET", &format!("/v1/games/{id}/state?step=0"), None);
    assert_eq!(at.body["state"]["player"]["hp"], json!(100));
    assert_error(
        &server.call("GET", &format!("/v1/games/{id}/state?at=m9"), None),
        404,
        "unknown_label",
    );
    assert_error(
        &server.call("GET", &format!("/v1/games/{id}/state?step=99"), None),
        404,
        "unknown_step",
    );
    // Back to the first swipe.
    let back = server.call(
        "POST",
        &format!("/v1/games/{id}/checkout"),
        Some(&json!({"to": "m2"})),
    );
    assert_eq!(back.status, 200, "{:?}", back.body);
    assert_eq!(back.body["state"]["player"]["hp"], json!(80));
    assert_eq!(back.body["label"], json!("m2"));
    assert_error(
        &server.call(
            "POST",
            &format!("/v1/games/{id}/checkout"),
            Some(&json!({"to": "nope"})),
        ),
        404,
        "unknown_label",
    );
    let log = server
        .call("GET", &format!("/v1/games/{id}/log"), None)
        .body;
    assert_eq!(log["current"], json!(2));
    let steps = log["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[0]["children"], json!([2, 3]));
    assert_eq!(steps[2]["parent"], json!(1));
    assert_eq!(steps[2]["label"], json!("m2/s2"));
    assert_eq!(steps[1]["current"], json!(true));
    // Undo to m1, redo to the child visited last (m2).
    let undone = server.call("POST", &format!("/v1/games/{id}/undo"), None);
    assert_eq!(undone.body["step"], json!(1));
    assert_eq!(undone.body["moved"], json!(true));
    let redone = server.call("POST", &format!("/v1/games/{id}/redo"), Some(&json!({})));
    assert_eq!(redone.body["step"], json!(2));
    // The listing shows where each game stands.
    let list = server.call("GET", "/v1/games", None);
    assert_eq!(list.body["games"][0]["label"], json!("m2"));
    // Undo at the root is not an error: nothing moves.
    for _ in 0..3 {
        server.call("POST", &format!("/v1/games/{id}/undo"), None);
    }
    let still = server.call("POST", &format!("/v1/games/{id}/undo"), None);
    assert_eq!(still.status, 200);
    assert_eq!(still.body["moved"], json!(false));
}

#[test]
fn a_dry_run_reports_and_changes_nothing() {
    let server = Harness::sqlite(100);
    let id = game(&server);
    let body = apply_ok(
        &server,
        &id,
        &json!({"input": "_.set('player.hp', 50);", "dry_run": true, "label": "m1"}),
    );
    assert_eq!(body["committed"], json!(false));
    assert_eq!(body["dry_run"], json!(true));
    assert_eq!(body["state"]["player"]["hp"], json!(50));
    assert_eq!(body["changes"][0]["new"], json!(50));
    assert_eq!(state(&server, &id)["player"]["hp"], json!(100));
    let log = server.call("GET", &format!("/v1/games/{id}/log"), None);
    assert_eq!(log.body["steps"], json!([]));
    let refused = server.call(
        "POST",
        &format!("/v1/games/{id}/apply"),
        Some(&json!({"batch": [{"op": "assign", "path": ["player", "hp"], "value": -1}], "dry_run": true})),
    );
    assert_error(&refused, 422, "rejected");
}

#[test]
fn expect_step_refuses_a_stale_writer_with_409() {
    let server = Harness::sqlite(100);
    let id = game(&server);
    let one = json!({"batch": [{"op": "increment", "path": ["player", "gold"], "value": 1}], "expect_step": 0});
    apply_ok(&server, &id, &one);
    let stale = server.call("POST", &format!("/v1/games/{id}/apply"), Some(&one));
    assert_error(&stale, 409, "step_conflict");
    assert_eq!(stale.body["step"], json!(1));
    assert_eq!(state(&server, &id)["player"]["gold"], json!(6));
}

#[test]
fn the_stateless_endpoints_extract_convert_and_prompt() {
    let server = Harness::sqlite(100);
    let extracted = server.call(
        "POST",
        "/v1/extract",
        Some(&json!({"input": "sure! {'op': 'assign', 'path': 'hp', 'value': 3}"})),
    );
    assert_eq!(extracted.status, 200, "{:?}", extracted.body);
    assert_eq!(
        extracted.body["batch"],
        json!([{"op": "assign", "path": ["hp"], "value": 3}])
    );
    assert_eq!(extracted.body["valid"], json!(true));
    assert!(extracted.body["report"]["score"].as_u64().unwrap() < 100);
    let converted = server.call(
        "POST",
        "/v1/convert",
        Some(&json!({"input": "_.set('a.b', 1, 2);//why\n", "from": "mvu", "to": "jsonpatch"})),
    );
    // An assignment has no JSON Patch form without a state: said, not mangled.
    assert_eq!(converted.status, 200, "{:?}", converted.body);
    assert_eq!(converted.body["output"], Json::Null);
    assert_eq!(converted.body["errors"][0]["kind"], json!("unknown_op"));
    let patch = server.call(
        "POST",
        "/v1/convert",
        Some(&json!({"input": "[{\"op\": \"replace\", \"path\": \"/a/b\", \"value\": 2}]", "from": "jsonpatch", "to": "json"})),
    );
    assert_eq!(patch.status, 200, "{:?}", patch.body);
    assert_eq!(patch.body["output"][0]["op"], json!("replace"));
    let back = server.call(
        "POST",
        "/v1/convert",
        Some(&json!({"input": [{"op": "assign", "path": ["a", "b"], "value": 2}], "from": "json", "to": "mvu"})),
    );
    assert_eq!(back.body["output"], json!("_.set('a.b', 2);\n"));
    assert_error(
        &server.call(
            "POST",
            "/v1/convert",
            Some(&json!({"input": "x", "from": "yaml", "to": "json"})),
        ),
        400,
        "bad_request",
    );
    let prompt = server.call(
        "POST",
        "/v1/prompt",
        Some(&json!({"state": {"player": {"hp": 3}}, "lang": "en"})),
    );
    assert_eq!(prompt.status, 200, "{:?}", prompt.body);
    assert!(prompt.body["rules"].as_str().unwrap().contains("player"));
    assert_eq!(
        prompt.body["state"],
        json!("{\n  \"player\": {\n    \"hp\": 3\n  }\n}")
    );
    assert_eq!(prompt.body["elided"], json!([]));
    let compact = server.call(
        "POST",
        "/v1/prompt",
        Some(&json!({"state": {"player": {"hp": 3}}, "format": "compact", "mode": "state"})),
    );
    assert_eq!(
        compact.body["state"],
        json!("player:\n  hp: 3"),
        "{:?}",
        compact.body
    );
    let schema = server.call(
        "POST",
        "/v1/schema",
        Some(&json!({"schema": {"type": "object", "properties": {"hp": {"type": "integer"}}}})),
    );
    assert_eq!(schema.status, 200, "{:?}", schema.body);
    assert!(schema.body["schema"].is_object());
    let gbnf = server.call("POST", "/v1/schema", Some(&json!({"gbnf": true})));
    assert!(gbnf.body["gbnf"].as_str().unwrap().contains("root"));
}

#[test]
fn browser_origins_are_refused_unless_allowed_and_preflights_answered() {
    let server = Harness::sqlite_with(Options {
        origins: vec!["http://localhost:8000".to_owned()],
        ..Options::default()
    });
    let refused = server.call_with(
        "GET",
        "/v1/health",
        None,
        &[("Origin", "http://evil.example")],
    );
    assert_error(&refused, 403, "origin_not_allowed");
    assert_eq!(refused.header("access-control-allow-origin"), None);
    let allowed = server.call_with(
        "GET",
        "/v1/health",
        None,
        &[("Origin", "http://localhost:8000")],
    );
    assert_eq!(allowed.status, 200);
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("http://localhost:8000")
    );
    // A preflight's answer has no body.
    let preflight = server.fetch(
        "OPTIONS",
        "/v1/games",
        "",
        &[
            ("Origin", "http://localhost:8000"),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "content-type, idempotency-key",
            ),
        ],
    );
    assert_eq!(preflight.status, 204);
    assert!(
        preflight
            .header("access-control-allow-methods")
            .unwrap()
            .contains("POST")
    );
    assert!(
        preflight
            .header("access-control-allow-headers")
            .unwrap()
            .contains("idempotency-key")
    );
    let rebinding = server.call_with("GET", "/v1/health", None, &[("Host", "evil.example:8765")]);
    assert_error(&rebinding, 403, "host_not_allowed");
}

#[test]
fn a_token_is_required_on_every_request_once_set() {
    let server = Harness::sqlite_with(Options {
        token: Some("s3cret".to_owned()),
        origins: vec!["http://localhost:8000".to_owned()],
        ..Options::default()
    });
    assert_error(&server.call("GET", "/v1/health", None), 401, "unauthorized");
    assert_error(
        &server.call_with(
            "GET",
            "/v1/health",
            None,
            &[("Authorization", "Bearer s3cre")],
        ),
        401,
        "unauthorized",
    );
    assert_error(
        &server.call_with(
            "GET",
            "/v1/health",
            None,
            &[("Authorization", "Bearer s3cret2")],
        ),
        401,
        "unauthorized",
    );
    let ok = server.call_with(
        "GET",
        "/v1/health",
        None,
        &[("Authorization", "Bearer s3cret")],
    );
    assert_eq!(ok.status, 200);
    // An allowed origin reads the refusal of a wrong token (a browser hides an answer without
    // CORS headers, and the page could not tell it from a refused origin); a refused origin
    // still gets no CORS headers.
    let wrong = server.call_with(
        "GET",
        "/v1/health",
        None,
        &[
            ("Origin", "http://localhost:8000"),
            ("Authorization", "Bearer nope"),
        ],
    );
    assert_error(&wrong, 401, "unauthorized");
    assert_eq!(
        wrong.header("access-control-allow-origin"),
        Some("http://localhost:8000")
    );
    let foreign = server.call_with(
        "GET",
        "/v1/health",
        None,
        &[
            ("Origin", "http://evil.example"),
            ("Authorization", "Bearer nope"),
        ],
    );
    assert_error(&foreign, 403, "origin_not_allowed");
    assert_eq!(foreign.header("access-control-allow-origin"), None);
    // A preflight carries no credentials and is answered all the same.
    let preflight = server.fetch(
        "OPTIONS",
        "/v1/games",
        "",
        &[
            ("Origin", "http://localhost:8000"),
            ("Access-Control-Request-Method", "POST"),
        ],
    );
    assert_eq!(preflight.status, 204);
}

#[test]
fn the_game_limit_and_request_limits_hold() {
    let server = Harness::sqlite(2);
    server.create(&json!({"state": {}}));
    server.create(&json!({"state": {}}));
    assert_error(
        &server.call("POST", "/v1/games", Some(&json!({"state": {}}))),
        507,
        "game_limit",
    );
}

#[test]
fn scripts_sent_by_clients_run_in_the_sandbox() {
    let server = Harness::sqlite(100);
    let scripts = json!({
        "a.lua": "on('heal', function(ctx, n) return {{op = 'increment', path = {'hp'}, value = n}} end)",
        "b.lua": "on('escape', function(ctx) return io.open('/etc/passwd') end)",
        "c.lua": "on('spin', function(ctx) while true do end end)",
    });
    let id = server.create(&json!({"state": {"hp": 1}, "scripts": scripts}));
    let body = apply_ok(
        &server,
        &id,
        &json!({"batch": [{"op": "callback", "path": ["heal"], "value": [4]}]}),
    );
    assert_eq!(body["changes"][0]["new"], json!(5));
    for name in ["escape", "spin"] {
        let refused = server.call(
            "POST",
            &format!("/v1/games/{id}/apply"),
            Some(&json!({"batch": [{"op": "callback", "path": [name]}]})),
        );
        assert_error(&refused, 422, "rejected");
        assert_eq!(refused.body["errors"][0]["kind"], json!("callback_failed"));
    }
    assert_eq!(state(&server, &id), json!({"hp": 5}));
}

#[test]
fn games_dropped_from_memory_load_again_from_the_database() {
    let server = Harness::sqlite_with(Options {
        cache: CacheBounds {
            max_active: 2,
            ..Options::default().cache
        },
        ..Options::default()
    });
    let ids: Vec<String> = (0..6)
        .map(|n| server.create(&json!({"state": {"n": n}})))
        .collect();
    for round in 1..=3 {
        for id in &ids {
            apply_ok(
                &server,
                id,
                &json!({"batch": [{"op": "increment", "path": ["n"], "value": 10}], "label": format!("r{round}")}),
            );
        }
    }
    for (n, id) in ids.iter().enumerate() {
        assert_eq!(state(&server, id), json!({"n": n + 30}));
        let at = server.call("GET", &format!("/v1/games/{id}/state?at=r1"), None);
        assert_eq!(at.body["state"], json!({"n": n + 10}));
    }
}

#[test]
fn numbers_keep_their_kind_and_digits_through_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::Sqlite(dir.path().join("games.db"));
    let server = Harness::on(&db, 100, None, None);
    let body = r#"{"id": "numbers", "state": {"big": 1180591620717411303424, "f": 5.0, "i": 5}}"#;
    let made = server.raw("POST", "/v1/games", body, &[]);
    assert_eq!(made.status, 201, "{:?}", made.body);
    let apply = r#"{"batch": [{"op": "assign", "path": ["huge"], "value": 123456789012345678901234567890}, {"op": "increment", "path": ["i"], "value": 1}]}"#;
    let applied = server.raw("POST", "/v1/games/numbers/apply", apply, &[]);
    assert_eq!(applied.status, 200, "{:?}", applied.body);
    let text = |server: &Harness| server.fetch("GET", "/v1/games/numbers", "", &[]).text;
    let before = text(&server);
    assert!(before.contains("1180591620717411303424"), "{before}");
    assert!(
        before.contains("123456789012345678901234567890"),
        "{before}"
    );
    assert!(before.contains("\"f\":5.0"), "{before}");
    // Another server on the same database loads the game from its rows, as a restart would.
    drop(server);
    let server = Harness::on(&db, 100, None, None);
    assert_eq!(
        text(&server),
        before,
        "the same digits after a reload from the database"
    );
    let _: Json = serde_json::from_str(&before).unwrap();
}

#[test]
fn a_request_over_the_time_limit_answers_503_and_the_game_goes_on() {
    let server = Harness::sqlite_with(Options {
        request_timeout: Duration::from_millis(500),
        ..Options::default()
    });
    // Each turn of the handler's loop builds a 100 KB string, so its ten million steps would take
    // far longer than the script's time limit of 1 s: the time limit stops it, after the server's
    // limit of 0.5 s has run out, whatever the machine's speed. (An empty loop reached the step limit
    // before 1 s on a fast machine.)
    let scripts = json!({"spin.lua": "on('spin', function(ctx) while true do local s = string.rep('x', 100000) end end)"});
    let id = server.create(&json!({"state": {"n": 0}, "scripts": scripts}));
    let slow = server.call(
        "POST",
        &format!("/v1/games/{id}/apply"),
        Some(&json!({"batch": [{"op": "callback", "path": ["spin"]}]})),
    );
    assert_error(&slow, 503, "timeout");
    // The batch stops at the deadline and the game says so itself: nothing of it was applied.
    assert!(
        slow.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nothing changed"),
        "{:?}",
        slow.body
    );
    // A client retries with a key, and the change commits once.
    let path = format!("/v1/games/{id}/apply");
    let mut answer = None;
    for _ in 0..20 {
        let retry = server.call_with(
            "POST",
            &path,
            Some(&json!({"batch": [{"op": "increment", "path": ["n"], "value": 1}]})),
            &[("Idempotency-Key", "after-the-spin")],
        );
        if retry.status != 503 {
            answer = Some(retry);
            break;
        }
    }
    let answer = answer.expect("the game answers again once the handler has stopped");
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(state(&server, &id), json!({"n": 1}));
}
