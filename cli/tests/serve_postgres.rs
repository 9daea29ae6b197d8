//! `statecraft serve --db postgres://...`: the same API on PostgreSQL, and several server processes on
//! one database that never lose an update.
//!
//! Each test works in a schema of its own, dropped afterwards. Without a usable PostgreSQL server the
//! tests say so and skip; under CI (where `.ci/run` starts one) that is a failure.

mod http;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http::{
    Server, a_change_at_a_process_with_an_old_copy_runs_on_the_newest_state,
    a_game_made_again_under_its_id_is_never_the_old_one, a_key_raced_on_commits_once, apply_ok,
    create, increment, seeded_rolls_survive_a_restart, state,
};
use serde_json::json;
use statecraft_test_support::pg_schema::PgSchema;

#[test]
fn the_api_works_on_postgresql_across_restarts() {
    let Some(schema) = PgSchema::new("api") else {
        return;
    };
    let server = Server::start(&["--db", &schema.url, "--log-level", "debug"]);
    let id = create(&server, &json!({"state": {"n": 0}, "id": "pg-1"}));
    for n in 0..6 {
        apply_ok(
            &server,
            &id,
            &json!({"batch": [{"op": "increment", "path": ["n"], "value": 1}], "label": format!("m{n}")}),
        );
    }
    let swipe = apply_ok(
        &server,
        &id,
        &json!({"input": "_.set('n', 100);//reroll", "at": "m2", "label": "m3/b"}),
    );
    assert_eq!(swipe["step"], json!(7));
    for n in 0..30 {
        let to = if n % 2 == 0 { "m1" } else { "m4" };
        server.call(
            "POST",
            &format!("/v1/games/{id}/checkout"),
            Some(&json!({"to": to})),
        );
    }
    let path = format!("/v1/games/{id}/apply");
    let body = json!({"batch": [{"op": "increment", "path": ["n"], "value": 10}]});
    let first = server.call_with("POST", &path, Some(&body), &[("Idempotency-Key", "pg-k")]);
    assert_eq!(first.status, 200, "{:?}", first.body);
    let expected = state(&server, &id);
    let log = server
        .call("GET", &format!("/v1/games/{id}/log"), None)
        .body;
    let changes =
        json!([{"path": ["n"], "old": 3, "new": 100, "reason": "reroll", "op": "assign"}]);
    let at = server.call("GET", &format!("/v1/games/{id}/state?at=m3/b"), None);
    assert_eq!(at.body["changes"], changes);
    let (_, stderr) = server.stop();
    assert!(stderr.contains("compacted"), "{stderr}");
    let server = Server::start(&["--db", &schema.url]);
    assert_eq!(state(&server, &id), expected);
    assert_eq!(
        server
            .call("GET", &format!("/v1/games/{id}/log"), None)
            .body,
        log
    );
    let again = server.call_with("POST", &path, Some(&body), &[("Idempotency-Key", "pg-k")]);
    assert_eq!(again.body, first.body);
    assert_eq!(state(&server, &id), expected);
    let at = server.call("GET", &format!("/v1/games/{id}/state?at=m3/b"), None);
    assert_eq!(at.body["state"], json!({"n": 100}));
    assert_eq!(
        at.body["changes"], changes,
        "the reason survives the reload"
    );
    let list = server.call("GET", "/v1/games", None).body;
    assert_eq!(list["games"][0]["id"], json!("pg-1"));
    assert_eq!(
        server
            .call("DELETE", &format!("/v1/games/{id}"), None)
            .status,
        200
    );
    assert_eq!(
        server.call("GET", &format!("/v1/games/{id}"), None).status,
        404
    );
}

/// Two processes apply to the same games at once, some requests with `expect_step`. Every
/// acknowledged increment is in the final state exactly once, and the state equals a serial replay
/// of the committed steps: one line of steps, each adding one.
#[test]
fn two_processes_on_one_database_never_lose_an_update() {
    let Some(schema) = PgSchema::new("two") else {
        return;
    };
    let servers = Arc::new([
        Server::start(&["--db", &schema.url]),
        Server::start(&["--db", &schema.url]),
    ]);
    let games: Vec<String> = (0..3)
        .map(|n| {
            create(
                &servers[0],
                &json!({"state": {"n": 0}, "id": format!("race-{n}")}),
            )
        })
        .collect();
    let acknowledged = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));
    let conflicts = Arc::new(Mutex::new(0u64));
    let threads: Vec<_> = (0..8)
        .map(|client| {
            let (servers, games, acknowledged, conflicts) = (
                Arc::clone(&servers),
                games.clone(),
                Arc::clone(&acknowledged),
                Arc::clone(&conflicts),
            );
            std::thread::spawn(move || {
                for round in 0..30 {
                    let server = &servers[(client + round) % 2];
                    let id = &games[(client * 7 + round) % games.len()];
                    let path = format!("/v1/games/{id}/apply");
                    // Every third request is optimistic: it names the step it read.
                    let mut body = increment();
                    if round % 3 == 0 {
                        let read = server.call("GET", &format!("/v1/games/{id}"), None);
                        body["expect_step"] = read.body["step"].clone();
                    }
                    let answer = server.call("POST", &path, Some(&body));
                    match answer.status {
                        200 => *acknowledged.lock().unwrap().entry(id.clone()).or_default() += 1,
                        409 => {
                            assert_eq!(answer.kind(), "step_conflict", "{:?}", answer.body);
                            *conflicts.lock().unwrap() += 1;
                        }
                        _ => panic!("unexpected answer {}: {:?}", answer.status, answer.body),
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a client thread");
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert_eq!(
        acknowledged.values().sum::<u64>() + *conflicts.lock().unwrap(),
        240
    );
    for id in &games {
        let count = acknowledged.get(id).copied().unwrap_or(0);
        for server in servers.iter() {
            assert_eq!(state(server, id), json!({"n": count}), "game {id}");
        }
        let log = servers[1]
            .call("GET", &format!("/v1/games/{id}/log"), None)
            .body;
        let steps = log["steps"].as_array().unwrap();
        assert_eq!(
            steps.len() as u64,
            count,
            "one step per acknowledged change"
        );
        for (index, step) in steps.iter().enumerate() {
            assert_eq!(step["parent"], json!(index), "a single line: {log}");
            let at = servers[0].call(
                "GET",
                &format!("/v1/games/{id}/state?step={}", index + 1),
                None,
            );
            assert_eq!(
                at.body["state"],
                json!({"n": index + 1}),
                "serial replay at step {}",
                index + 1
            );
        }
    }
}

#[test]
fn the_seed_is_kept_with_the_game_on_postgresql() {
    let Some(schema) = PgSchema::new("seed") else {
        return;
    };
    seeded_rolls_survive_a_restart(&schema.url);
}

#[test]
fn an_idempotency_key_raced_on_by_two_processes_commits_once_on_postgresql() {
    let Some(schema) = PgSchema::new("key_race") else {
        return;
    };
    a_key_raced_on_commits_once(&schema.url);
}

#[test]
fn a_change_at_a_process_with_an_old_copy_runs_on_the_newest_state_on_postgresql() {
    let Some(schema) = PgSchema::new("old_copy") else {
        return;
    };
    a_change_at_a_process_with_an_old_copy_runs_on_the_newest_state(&schema.url);
}

#[test]
fn a_game_made_again_under_its_id_at_another_process_is_never_the_old_one_on_postgresql() {
    let Some(schema) = PgSchema::new("remade") else {
        return;
    };
    a_game_made_again_under_its_id_is_never_the_old_one(&schema.url);
}
