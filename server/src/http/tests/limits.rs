//! What one request may make the server hold and store, in process, on SQLite, with `statecraft
//! serve`'s defaults (`Options::serve`, the shared server's limits among them): a record too big to
//! store (a 422 naming the limit, never a retryable 503), and the strings a client sends (labels,
//! macros, script names). What is measured on the process itself (its CPU time after a stopped
//! batch, its peak memory) stays in `cli/tests/serve_limits.rs`.

use serde_json::{Value as Json, json};
use statecraft_engine::Limits;

use super::{Answered, Harness, Options};

fn apply(server: &Harness, id: &str, body: &Json) -> Answered {
    server.call("POST", &format!("/v1/games/{id}/apply"), Some(body))
}

/// A part of the state of about 3 MB: 3,000 strings of 1,000 bytes.
fn big_part() -> Json {
    json!((0..3_000).map(|i| format!("{i:01000}")).collect::<Vec<_>>())
}

#[test]
fn a_record_too_big_to_store_is_a_422_naming_the_limit() {
    // The engine's bound raised past what the database is allowed to take for one record.
    let server = Harness::sqlite_with(Options {
        limits: Limits {
            max_commit_bytes: 1_000_000_000,
            max_state_bytes: 100_000_000,
            ..crate::shared_limits()
        },
        max_record_bytes: 8_000_000,
        ..Options::serve()
    });
    let id = server.create(&json!({"state": {"a": big_part()}}));
    let copies: Vec<Json> = (0..10)
        .map(|_| json!({"op": "copy", "from": "/a", "path": "/b"}))
        .collect();
    for _ in 0..2 {
        // A request that can never succeed answers the same each time: 422, never a 503 to retry.
        let answer = apply(&server, &id, &json!({"batch": copies}));
        assert_eq!(answer.status, 422, "{:?}", answer.body["error"]);
        assert_eq!(answer.kind(), "rejected");
        assert_eq!(answer.body["errors"][0]["kind"], "record_too_large");
        let message = answer.body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("8000000 bytes") && message.contains("--max-record-bytes"),
            "{message}"
        );
    }
    // Nothing of it stayed, in memory or in the database, and the game goes on.
    let shown = server.call("GET", &format!("/v1/games/{id}"), None);
    assert_eq!(shown.body["step"], 0);
    assert!(shown.body["state"].get("b").is_none());
    let next = apply(
        &server,
        &id,
        &json!({"batch": [{"op": "assign", "path": ["n"], "value": 1}]}),
    );
    assert_eq!(next.status, 200, "{:?}", next.body);
    // The limit cannot be set past what a database row takes: the server refuses to start (`serve`
    // and `statecraft serve` check the configuration first).
    let refused = crate::check(&crate::Config {
        max_record_bytes: 2_000_000_000,
        ..crate::Config::new()
    });
    assert!(
        matches!(refused, Err(crate::ServeError::RecordLimit(2_000_000_000))),
        "{refused:?}"
    );
}

#[test]
fn labels_macros_and_script_names_are_bounded() {
    let server = Harness::sqlite_with(Options::serve());
    let id = server.create(&json!({"state": {"n": 0}}));
    let set = json!([{"op": "assign", "path": ["n"], "value": 1}]);
    // A 3 MiB label, and one just past the default of 256 bytes.
    for length in [3 << 20, 257] {
        let answer = apply(
            &server,
            &id,
            &json!({"batch": set, "label": "m".repeat(length)}),
        );
        assert_eq!(answer.status, 422, "{:?}", answer.body["error"]);
        assert_eq!(answer.body["errors"][0]["kind"], "label_too_long");
        assert!(
            answer.body["errors"][0]["message"]
                .as_str()
                .unwrap()
                .ends_with("the limit is 256")
        );
    }
    let ok = apply(
        &server,
        &id,
        &json!({"batch": set, "label": "m".repeat(256)}),
    );
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    // Macros: too many, too long, or expanding a short reply into a long one.
    let many: serde_json::Map<String, Json> =
        (0..33).map(|i| (format!("m{i}"), json!("x"))).collect();
    let long = json!({"user": "x".repeat(5000)});
    let places = "<user>".repeat(100_000);
    let growing = json!({"user": "y".repeat(100)});
    for (input, macros, says) in [
        ("_.set('n', 2);", Json::Object(many), "at most 32"),
        ("_.set('n', 2);", long, "the limit is 4096"),
        (places.as_str(), growing, "would add 10000000 bytes"),
    ] {
        for endpoint in [format!("/v1/games/{id}/apply"), "/v1/extract".to_owned()] {
            let answer = server.call(
                "POST",
                &endpoint,
                Some(&json!({"input": input, "macros": macros})),
            );
            assert_eq!(answer.status, 400, "{endpoint}: {:?}", answer.body);
            let message = answer.body["error"]["message"].as_str().unwrap();
            assert!(message.contains(says), "{message}");
        }
    }
    // Script names.
    let mut scripts = serde_json::Map::new();
    scripts.insert("a".repeat(300), json!("on('x', function() end)"));
    let answer = server.call(
        "POST",
        "/v1/games",
        Some(&json!({"state": {}, "scripts": scripts})),
    );
    assert_eq!(answer.status, 400, "{:?}", answer.body);
    assert!(
        answer.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the limit is 255")
    );
}
