//! `statecraft serve` as a process, on SQLite: what the API's in-process tests
//! (`server/src/http/tests/api.rs`) cannot show. Idempotency keys, a timeline and a game's changes
//! across a restart, two processes on one database, a graceful stop with a request in flight, and
//! the refusal to listen beyond loopback without a token.

mod http;

use http::{
    Server, a_change_at_a_process_with_an_old_copy_runs_on_the_newest_state,
    a_game_made_again_under_its_id_is_never_the_old_one, a_key_raced_on_commits_once, apply_ok,
    create, seeded_rolls_survive_a_restart, sqlite, state,
};
use serde_json::json;

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
fn a_change_at_a_process_with_an_old_copy_runs_on_the_newest_state_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    a_change_at_a_process_with_an_old_copy_runs_on_the_newest_state(&sqlite(dir.path()));
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
fn a_graceful_stop_finishes_and_exits_zero() {
    let (_dir, server) = server();
    let id = game(&server);
    apply_ok(&server, &id, &http::increment_gold());
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
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
