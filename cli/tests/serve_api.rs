//! `statecraft serve` answers every endpoint of docs/http.md, and every error in one shape, on SQLite.

mod http;

use http::{
    Server, a_game_made_again_under_its_id_is_never_the_old_one, a_key_raced_on_commits_once,
    apply_ok, create, seeded_rolls_survive_a_restart, sqlite, state,
};
use serde_json::{Value as Json, json};

fn server() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let server = Server::start(&["--db", &sqlite(dir.path())]);
    (dir, server)
}

fn game(server: &Server) -> String {
    create(
        server,
        &json!({
            "state": {"player": {"hp": 100, "gold": 5, "bag": ["rope"]}},
            "schema": {"type": "object", "properties": {"player": {"type": "object",
                "properties": {"hp": {"type": "integer", "minimum": 0, "maximum": 100}}}}},
        }),
    )
}

/// Every error answer has exactly `{"error": {"kind", "message"}}` (and a rejection's details).
fn assert_error(answer: &http::Response, status: u16, kind: &str) {
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

#[test]
fn health_answers_ok_with_a_request_id() {
    let (_dir, server) = server();
    let answer = server.call("GET", "/v1/health", None);
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.body,
        json!({"ok": true, "version": env!("CARGO_PKG_VERSION"), "api": statecraft_server::API_VERSION})
    );
    assert!(answer.header("x-request-id").is_some());
    let answer = server.call_with("GET", "/v1/health", None, &[("X-Request-Id", "abc-123")]);
    assert_eq!(answer.header("x-request-id"), Some("abc-123"));
}

#[test]
fn a_game_is_created_read_changed_and_deleted() {
    let (_dir, server) = server();
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
    let (_dir, server) = server();
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
    let (_dir, server) = server();
    for n in 0..5 {
        create(&server, &json!({"state": {}, "id": format!("g{n}")}));
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
    let (_dir, server) = server();
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
    let (_dir, server) = server();
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
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&["--db", &sqlite(dir.path()), "--max-body", "1000"]);
    let id = create(&server, &json!({"state": {}}));
    let path = format!("/v1/games/{id}/apply");
    let not_json = http::raw(&server.address, "POST", &path, b"{not json", &[]).unwrap();
    assert_error(&not_json, 400, "bad_request");
    // A body is an object of named members: an array is not read as the members in order (it
    // would apply a reply, move the game to the root, or create a game).
    let positional: [(&str, &[u8]); 3] = [
        (
            &path,
            br#"["{\"op\": \"assign\", \"path\": [\"x\"], \"value\": 1}"]"#,
        ),
        (&format!("/v1/games/{id}/checkout"), b"[0]"),
        ("/v1/games", br#"[{"made": "from an array"}]"#),
    ];
    for (endpoint, body) in positional {
        let answer = http::raw(&server.address, "POST", endpoint, body, &[]).unwrap();
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
    let (_dir, server) = server();
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
    let (_dir, server) = server();
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
    let (_dir, server) = server();
    let id = game(&server);
    let one = json!({"batch": [{"op": "increment", "path": ["player", "gold"], "value": 1}], "expect_step": 0});
    apply_ok(&server, &id, &one);
    let stale = server.call("POST", &format!("/v1/games/{id}/apply"), Some(&one));
    assert_error(&stale, 409, "step_conflict");
    assert_eq!(stale.body["step"], json!(1));
    assert_eq!(state(&server, &id)["player"]["gold"], json!(6));
}

#[test]
fn an_idempotency_key_replays_the_first_answer_and_commits_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(dir.path());
    let server = Server::start(&["--db", &db]);
    let id = game(&server);
    let path = format!("/v1/games/{id}/apply");
    let body = json!({"batch": [{"op": "increment", "path": ["player", "gold"], "value": 10}]});
    let first = server.call_with("POST", &path, Some(&body), &[("Idempotency-Key", "k1")]);
    let again = server.call_with("POST", &path, Some(&body), &[("Idempotency-Key", "k1")]);
    assert_eq!(first.status, 200);
    assert_eq!(again.status, first.status);
    assert_eq!(again.body, first.body);
    assert_eq!(state(&server, &id)["player"]["gold"], json!(15));
    let other = json!({"batch": [{"op": "increment", "path": ["player", "gold"], "value": 99}]});
    assert_error(
        &server.call_with("POST", &path, Some(&other), &[("Idempotency-Key", "k1")]),
        409,
        "idempotency_key_reused",
    );
    // A rejected request's answer is kept too.
    let bad = json!({"batch": [{"op": "assign", "path": ["player", "hp"], "value": 500}]});
    let refused = server.call_with("POST", &path, Some(&bad), &[("Idempotency-Key", "k2")]);
    assert_error(&refused, 422, "rejected");
    // After a restart, a retry still gets the first answer and commits nothing.
    let (code, _) = server.stop();
    assert_eq!(code, Some(0));
    let server = Server::start(&["--db", &db]);
    let retried = server.call_with("POST", &path, Some(&body), &[("Idempotency-Key", "k1")]);
    assert_eq!(retried.body, first.body);
    assert_eq!(state(&server, &id)["player"]["gold"], json!(15));
    let again = server.call_with("POST", &path, Some(&bad), &[("Idempotency-Key", "k2")]);
    assert_eq!(again.body, refused.body);
    // Creating a game with a key makes it once.
    let create = json!({"state": {"x": 1}});
    let made = server.call_with(
        "POST",
        "/v1/games",
        Some(&create),
        &[("Idempotency-Key", "c1")],
    );
    let remade = server.call_with(
        "POST",
        "/v1/games",
        Some(&create),
        &[("Idempotency-Key", "c1")],
    );
    assert_eq!(made.status, 201);
    assert_eq!(remade.body, made.body);
    let list = server.call("GET", "/v1/games", None);
    assert_eq!(list.body["games"].as_array().unwrap().len(), 2);
}

#[test]
fn a_game_made_again_under_its_id_at_another_process_is_never_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    a_game_made_again_under_its_id_is_never_the_old_one(&sqlite(dir.path()));
}

#[test]
fn an_idempotency_key_raced_on_by_two_processes_commits_once() {
    let dir = tempfile::tempdir().unwrap();
    a_key_raced_on_commits_once(&sqlite(dir.path()));
}

#[test]
fn games_survive_a_restart_with_their_whole_timeline_compacted_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(dir.path());
    let server = Server::start(&["--db", &db, "--log-level", "debug"]);
    let id = game(&server);
    for n in 0..10 {
        apply_ok(
            &server,
            &id,
            &json!({"batch": [{"op": "increment", "path": ["player", "gold"], "value": 1}], "label": format!("m{n}")}),
        );
    }
    // Checkouts back and forth: their records soon outnumber the steps, and the game compacts.
    for n in 0..30 {
        let to = if n % 2 == 0 { "m3" } else { "m7" };
        let moved = server.call(
            "POST",
            &format!("/v1/games/{id}/checkout"),
            Some(&json!({"to": to})),
        );
        assert_eq!(moved.status, 200, "{:?}", moved.body);
    }
    // Swipes after the compaction, on its new records.
    for n in 0..5 {
        apply_ok(
            &server,
            &id,
            &json!({"batch": [{"op": "assign", "path": ["player", "hp"], "value": n}], "at": "m9", "label": format!("s{n}")}),
        );
    }
    server.call(
        "POST",
        &format!("/v1/games/{id}/checkout"),
        Some(&json!({"to": "m5"})),
    );
    server.call("POST", &format!("/v1/games/{id}/redo"), None);
    let before_log = server
        .call("GET", &format!("/v1/games/{id}/log"), None)
        .body;
    let before = server.call("GET", &format!("/v1/games/{id}"), None).body;
    assert_eq!(before["label"], json!("m6"));
    let (_, stderr) = server.stop();
    assert!(stderr.contains("compacted"), "the game compacted: {stderr}");
    let server = Server::start(&["--db", &db]);
    assert_eq!(
        server.call("GET", &format!("/v1/games/{id}"), None).body,
        before
    );
    assert_eq!(
        server
            .call("GET", &format!("/v1/games/{id}/log"), None)
            .body,
        before_log
    );
    let swipe = server.call("GET", &format!("/v1/games/{id}/state?at=s3"), None);
    assert_eq!(swipe.body["state"]["player"]["hp"], json!(3));
    assert_eq!(swipe.body["state"]["player"]["gold"], json!(15));
    // Redo after the restart follows the same child as before it.
    server.call("POST", &format!("/v1/games/{id}/undo"), None);
    let redone = server.call("POST", &format!("/v1/games/{id}/redo"), None);
    assert_eq!(redone.body["label"], json!("m6"));
}

#[test]
fn a_step_answers_its_own_changes_with_reasons_before_and_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(dir.path());
    let server = Server::start(&["--db", &db]);
    let id = game(&server);
    let reply = "_.set('player.hp', 100, 80);//hit\n_.add('player.gold', 15);//loot\n";
    let applied = apply_ok(&server, &id, &json!({"input": reply, "label": "m1"}));
    apply_ok(
        &server,
        &id,
        &json!({"batch": [{"op": "delete", "path": ["player", "bag"], "reason": "dropped"}], "label": "m2"}),
    );
    let m1 = json!([
        {"path": ["player", "hp"], "old": 100, "new": 80, "reason": "hit", "op": "assign"},
        {"path": ["player", "gold"], "old": 5, "new": 20, "reason": "loot", "op": "increment"}
    ]);
    let m2 =
        json!([{"path": ["player", "bag"], "old": ["rope"], "reason": "dropped", "op": "delete"}]);
    assert_eq!(applied["changes"], m1);
    let changes_at = |server: &Server, query: &str| {
        let answer = server.call("GET", &format!("/v1/games/{id}/state?{query}"), None);
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        answer.body["changes"].clone()
    };
    // Each step answers its own changes only, whether by label or by id; the root changed nothing.
    assert_eq!(changes_at(&server, "at=m1"), m1);
    assert_eq!(changes_at(&server, "step=2"), m2);
    assert_eq!(changes_at(&server, "step=0"), json!([]));
    // A game rebuilt from the database after a restart answers the same changes, reasons included.
    server.stop();
    let server = Server::start(&["--db", &db]);
    assert_eq!(changes_at(&server, "at=m1"), m1);
    assert_eq!(changes_at(&server, "at=m2"), m2);
    assert_eq!(changes_at(&server, "step=0"), json!([]));
}

#[test]
fn the_stateless_endpoints_extract_convert_and_prompt() {
    let (_dir, server) = server();
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
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&[
        "--db",
        &sqlite(dir.path()),
        "--allow-origin",
        "http://localhost:8000",
    ]);
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
    let preflight = server.call_with(
        "OPTIONS",
        "/v1/games",
        None,
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
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&[
        "--db",
        &sqlite(dir.path()),
        "--token",
        "s3cret",
        "--allow-origin",
        "http://localhost:8000",
    ]);
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
    let preflight = server.call_with(
        "OPTIONS",
        "/v1/games",
        None,
        &[
            ("Origin", "http://localhost:8000"),
            ("Access-Control-Request-Method", "POST"),
        ],
    );
    assert_eq!(preflight.status, 204);
}

#[test]
fn any_address_but_loopback_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_statecraft"))
        .args([
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--db",
            &sqlite(dir.path()),
        ])
        .env_remove("STATECRAFT_TOKEN")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("needs --token"), "{stderr}");
    assert!(run.stdout.is_empty(), "it never listened");
}

#[test]
fn the_game_limit_and_request_limits_hold() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&["--db", &sqlite(dir.path()), "--max-games", "2"]);
    create(&server, &json!({"state": {}}));
    create(&server, &json!({"state": {}}));
    assert_error(
        &server.call("POST", "/v1/games", Some(&json!({"state": {}}))),
        507,
        "game_limit",
    );
}

#[test]
fn scripts_sent_by_clients_run_in_the_sandbox() {
    let (_dir, server) = server();
    let scripts = json!({
        "a.lua": "on('heal', function(ctx, n) return {{op = 'increment', path = {'hp'}, value = n}} end)",
        "b.lua": "on('escape', function(ctx) return io.open('/etc/passwd') end)",
        "c.lua": "on('spin', function(ctx) while true do end end)",
    });
    let id = create(&server, &json!({"state": {"hp": 1}, "scripts": scripts}));
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
fn a_graceful_stop_finishes_and_exits_zero() {
    let (_dir, server) = server();
    let id = game(&server);
    apply_ok(&server, &id, &http::increment_gold());
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn games_dropped_from_memory_load_again_from_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&["--db", &sqlite(dir.path()), "--max-active-games", "2"]);
    let ids: Vec<String> = (0..6)
        .map(|n| create(&server, &json!({"state": {"n": n}})))
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
fn a_stop_answers_the_requests_in_flight_first() {
    let (_dir, server) = server();
    // A handler that keeps the game busy for a while (within the script limits).
    let scripts = json!({"busy.lua": "on('busy', function(ctx) local n = 0 for i = 1, 2000000 do n = n + i end return {{op = 'assign', path = {'n'}, value = 1}} end)"});
    let id = create(&server, &json!({"state": {"n": 0}, "scripts": scripts}));
    let address = server.address.clone();
    let path = format!("/v1/games/{id}/apply");
    let in_flight = std::thread::spawn(move || {
        let body = json!({"batch": [{"op": "callback", "path": ["busy"]}]});
        http::request(&address, "POST", &path, Some(&body), &[])
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    let (code, stderr) = server.stop();
    let answer = in_flight.join().expect("the request thread");
    assert!(
        matches!(answer.status, 200 | 422),
        "the request in flight got its answer: {:?}",
        answer.body
    );
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn numbers_keep_their_kind_and_digits_through_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(dir.path());
    let server = Server::start(&["--db", &db]);
    let body = r#"{"id": "numbers", "state": {"big": 1180591620717411303424, "f": 5.0, "i": 5}}"#;
    let made = http::raw(&server.address, "POST", "/v1/games", body.as_bytes(), &[]).unwrap();
    assert_eq!(made.status, 201, "{:?}", made.body);
    let apply = r#"{"batch": [{"op": "assign", "path": ["huge"], "value": 123456789012345678901234567890}, {"op": "increment", "path": ["i"], "value": 1}]}"#;
    let applied = http::raw(
        &server.address,
        "POST",
        "/v1/games/numbers/apply",
        apply.as_bytes(),
        &[],
    )
    .unwrap();
    assert_eq!(applied.status, 200, "{:?}", applied.body);
    let text = |server: &Server| {
        let mut stream = std::net::TcpStream::connect(&server.address).unwrap();
        use std::io::{Read, Write};
        write!(
            stream,
            "GET /v1/games/numbers HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            server.address
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer.split_once("\r\n\r\n").unwrap().1.to_owned()
    };
    let before = text(&server);
    assert!(before.contains("1180591620717411303424"), "{before}");
    assert!(
        before.contains("123456789012345678901234567890"),
        "{before}"
    );
    assert!(before.contains("\"f\":5.0"), "{before}");
    server.stop();
    let server = Server::start(&["--db", &db]);
    assert_eq!(
        text(&server),
        before,
        "the same digits after a reload from the database"
    );
    let _: Json = serde_json::from_str(&before).unwrap();
}

#[test]
fn a_request_over_the_time_limit_answers_503_and_the_game_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&["--db", &sqlite(dir.path()), "--request-timeout", "0.5"]);
    // Each turn of the handler's loop builds a 100 KB string, so its ten million steps would take
    // far longer than the script's time limit of 1 s: the time limit stops it, after the server's
    // limit of 0.5 s has run out, whatever the machine's speed. (An empty loop reached the step limit
    // before 1 s on a fast machine.)
    let scripts = json!({"spin.lua": "on('spin', function(ctx) while true do local s = string.rep('x', 100000) end end)"});
    let id = create(&server, &json!({"state": {"n": 0}, "scripts": scripts}));
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
            Some(&http::increment()),
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

#[test]
fn the_seed_is_kept_with_the_game_and_repair_is_a_policy() {
    let dir = tempfile::tempdir().unwrap();
    seeded_rolls_survive_a_restart(&sqlite(dir.path()));
    let (_dir, server) = server();
    let id = game(&server);
    let body = json!({"batch": [{"op": "assign", "path": ["player", "hp"], "value": "250"}], "policies": {"schema_violation": "repair"}});
    let done = apply_ok(&server, &id, &body);
    assert_eq!(done["warnings"][0]["kind"], json!("schema_repaired"));
    assert_eq!(done["warnings"][0]["path"], json!("/player/hp"));
    assert_eq!(state(&server, &id)["player"]["hp"], json!(100));
    let refused = server.call(
        "POST",
        &format!("/v1/games/{id}/apply"),
        Some(&json!({"batch": [], "policies": {"schema_violation": "mend"}})),
    );
    assert_error(&refused, 400, "bad_request");
}
