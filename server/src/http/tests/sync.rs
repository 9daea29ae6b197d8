//! `POST /v1/games/{id}/sync` in process, on SQLite and PostgreSQL (docs/http.md, docs/timeline.md).

use axum::http::StatusCode;
use serde_json::{Value as Json, json};
use statecraft_engine::ContentKey;

use super::Harness;

/// Every server these tests run on: SQLite, and PostgreSQL when it answers.
fn servers(test: &str) -> Vec<(&'static str, Harness)> {
    let mut servers = vec![("sqlite", Harness::sqlite(100))];
    servers.extend(Harness::postgres(test, 100).map(|server| ("postgres", server)));
    servers
}

fn key(text: &str) -> String {
    ContentKey::of_text(text).to_string()
}

/// Reply `n`: MVU text or a JSON fence, each changing the state by what came before.
fn reply(n: usize) -> String {
    if n % 2 == 0 {
        format!("Turn {n}.\n<UpdateVariable>\n_.add('gold', {n});//found\n</UpdateVariable>")
    } else {
        format!(
            "Turn {n}.\n```json\n[{{\"op\": \"push\", \"path\": [\"log\"], \"value\": {n}}}]\n```"
        )
    }
}

fn texts(replies: &[String]) -> Json {
    replies.iter().map(|text| json!({"text": text})).collect()
}

fn keys(replies: &[String]) -> Json {
    replies
        .iter()
        .map(|text| json!({"sha256": key(text)}))
        .collect()
}

const START: fn() -> Json = || json!({"gold": 0, "log": []});

#[test]
fn a_first_sync_equals_applying_reply_by_reply_and_a_resync_by_keys_changes_nothing() {
    for (name, server) in servers("sync_first") {
        let chat: Vec<String> = (0..1000).map(reply).collect();
        let synced = server.create(&json!({"state": START()}));
        let answer = server.call(
            "POST",
            &format!("/v1/games/{synced}/sync"),
            Some(&json!({"replies": texts(&chat)})),
        );
        assert_eq!(answer.status, StatusCode::OK, "{name}: {:?}", answer.body);
        assert_eq!(answer.body["reused"], 0, "{name}");
        assert_eq!(answer.body["applied"].as_array().unwrap().len(), 1000);
        let end = answer.body["step"].clone();

        let applied = server.create(&json!({"state": START()}));
        for text in &chat {
            let one = server.call(
                "POST",
                &format!("/v1/games/{applied}/apply"),
                Some(&json!({"input": text})),
            );
            assert_eq!(one.status, StatusCode::OK, "{name}: {:?}", one.body);
        }
        let expected = server.call("GET", &format!("/v1/games/{applied}"), None);
        assert_eq!(answer.body["state"], expected.body["state"], "{name}");

        let again = server.call(
            "POST",
            &format!("/v1/games/{synced}/sync"),
            Some(&json!({"replies": keys(&chat)})),
        );
        assert_eq!(again.status, StatusCode::OK, "{name}: {:?}", again.body);
        assert_eq!(again.body["reused"], 1000, "{name}");
        assert_eq!(again.body["applied"], json!([]), "{name}");
        assert_eq!(again.body["step"], end, "{name}");
        assert_eq!(again.body["state"], expected.body["state"], "{name}");
    }
}

#[test]
fn unknown_keys_answer_need_text_and_change_nothing() {
    for (name, server) in servers("sync_need") {
        let id = server.create(&json!({"state": START()}));
        let uri = format!("/v1/games/{id}/sync");
        let chat: Vec<String> = (0..4).map(reply).collect();
        server.call("POST", &uri, Some(&json!({"replies": texts(&chat[..2])})));
        let log = server.call("GET", &format!("/v1/games/{id}/log"), None);
        let answer = server.call("POST", &uri, Some(&json!({"replies": keys(&chat)})));
        assert_eq!(
            answer.status,
            StatusCode::CONFLICT,
            "{name}: {:?}",
            answer.body
        );
        assert_eq!(answer.kind(), "need_text", "{name}");
        assert_eq!(answer.body["need"], json!([2, 3]), "{name}");
        let after = server.call("GET", &format!("/v1/games/{id}/log"), None);
        assert_eq!(after.body, log.body, "{name}: nothing changed");
        // Sending the texts asked for completes the sync.
        let mut mixed = keys(&chat);
        mixed[2] = json!({"text": chat[2]});
        mixed[3] = json!({"text": chat[3]});
        let answer = server.call("POST", &uri, Some(&json!({"replies": mixed})));
        assert_eq!(answer.status, StatusCode::OK, "{name}: {:?}", answer.body);
        assert_eq!(answer.body["reused"], 2, "{name}");
    }
}

#[test]
fn move_false_reads_the_parent_of_a_regenerated_reply_without_moving() {
    for (name, server) in servers("sync_move") {
        let id = server.create(&json!({"state": START()}));
        let uri = format!("/v1/games/{id}/sync");
        let chat: Vec<String> = (0..3).map(reply).collect();
        let shown = server.call("POST", &uri, Some(&json!({"replies": texts(&chat)})));
        let parent = server.call(
            "POST",
            &uri,
            Some(&json!({"replies": keys(&chat[..2]), "move": false})),
        );
        assert_eq!(parent.status, StatusCode::OK, "{name}: {:?}", parent.body);
        assert_eq!(
            parent.body["state"],
            json!({"gold": 0, "log": [1]}),
            "{name}"
        );
        assert_eq!(parent.body["current"], shown.body["step"], "{name}");
        let game = server.call("GET", &format!("/v1/games/{id}"), None);
        assert_eq!(game.body["step"], shown.body["step"], "{name}: not moved");
    }
}

#[test]
fn a_first_sync_with_create_makes_the_game_and_retries_answer_once() {
    for (name, server) in servers("sync_create") {
        let uri = "/v1/games/chat-1/sync";
        let chat: Vec<String> = (0..3).map(reply).collect();
        let body = json!({"replies": texts(&chat), "create": {"state": START()}});
        let headers = [("idempotency-key", "sync-1")];
        let first = server.raw("POST", uri, &body.to_string(), &headers);
        assert_eq!(first.status, StatusCode::OK, "{name}: {:?}", first.body);
        let retry = server.raw("POST", uri, &body.to_string(), &headers);
        assert_eq!(retry.body, first.body, "{name}: the first answer again");
        let log = server.call("GET", "/v1/games/chat-1/log", None);
        assert_eq!(log.body["steps"].as_array().unwrap().len(), 3, "{name}");
        // Without `create`, an unknown game is a 404.
        let answer = server.call(
            "POST",
            "/v1/games/chat-2/sync",
            Some(&json!({"replies": []})),
        );
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{name}");
    }
}

#[test]
fn a_refused_reply_keeps_its_feedback_and_is_not_applied_again() {
    for (name, server) in servers("sync_refused") {
        let id = server.create(&json!({"state": START()}));
        let uri = format!("/v1/games/{id}/sync");
        let chat = vec![
            reply(0),
            "```json\n[{\"op\": \"delete\", \"path\": [\"missing\"]}]\n```".to_owned(),
            reply(2),
        ];
        let answer = server.call("POST", &uri, Some(&json!({"replies": texts(&chat)})));
        assert_eq!(answer.status, StatusCode::OK, "{name}: {:?}", answer.body);
        let refused = &answer.body["applied"][1];
        assert_eq!(refused["committed"], false, "{name}");
        assert!(
            refused["feedback"].as_str().unwrap().contains("missing"),
            "{name}: {refused}"
        );
        assert_eq!(answer.body["state"]["gold"], 2, "{name}");
        let again = server.call("POST", &uri, Some(&json!({"replies": keys(&chat)})));
        assert_eq!(again.body["reused"], 3, "{name}");
    }
}

#[test]
fn bad_replies_are_refused_by_index_and_change_nothing() {
    let server = Harness::sqlite(100);
    let id = server.create(&json!({"state": START()}));
    let uri = format!("/v1/games/{id}/sync");
    let cases = [
        (
            json!([{"text": "a"}, {"sha256": "abc"}]),
            1,
            "64 hex digits",
        ),
        (json!([{"text": "a"}, {"text": "b"}, {}]), 2, "needs `text`"),
        (json!(["a"]), 0, "a bare string is its key"),
        (json!([1]), 0, "the key alone as a string"),
        (json!([{"text": "a", "sha256": key("a")}]), 0, "not both"),
        (json!([{"txt": "a"}]), 0, "unknown member `txt`"),
    ];
    for (replies, index, says) in cases {
        let answer = server.call("POST", &uri, Some(&json!({"replies": replies})));
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{replies}");
        assert_eq!(answer.body["index"], index, "{replies}");
        let message = answer.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{replies}: {message}");
    }
    let too_long: Json = (0..10_001).map(|_| json!({"text": ""})).collect();
    let answer = server.call("POST", &uri, Some(&json!({"replies": too_long})));
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{:?}", answer.body);
    assert_eq!(answer.body["index"], 10_000);
    let log = server.call("GET", &format!("/v1/games/{id}/log"), None);
    assert_eq!(log.body["steps"], json!([]));
}
