//! Owners (`Statecraft-Owner`, docs/http.md "Owners") in process, on SQLite and PostgreSQL: each
//! owner's games are its own under every endpoint, ids guessed or not, and a request without the
//! header reaches only the games made without one.

use axum::http::StatusCode;
use serde_json::{Value as Json, json};

use super::{Answered, Harness};

fn servers(test: &str) -> Vec<(&'static str, Harness)> {
    let mut servers = vec![("sqlite", Harness::sqlite(1000))];
    servers.extend(Harness::postgres(test, 1000).map(|server| ("postgres", server)));
    servers
}

/// A request as `owner` (`None`: without the header).
fn as_owner(
    server: &Harness,
    owner: Option<&str>,
    method: &str,
    uri: &str,
    body: Option<&Json>,
    extra: &[(&str, &str)],
) -> Answered {
    let mut headers: Vec<(&str, &str)> = extra.to_vec();
    if let Some(owner) = owner {
        headers.push(("statecraft-owner", owner));
    }
    let text = body.map(Json::to_string).unwrap_or_default();
    server.raw(method, uri, &text, &headers)
}

fn listed(server: &Harness, owner: Option<&str>, query: &str) -> (Vec<String>, Json) {
    let answer = as_owner(
        server,
        owner,
        "GET",
        &format!("/v1/games{query}"),
        None,
        &[],
    );
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let ids = answer.body["games"]
        .as_array()
        .expect("games")
        .iter()
        .map(|game| game["id"].as_str().expect("an id").to_owned())
        .collect();
    (ids, answer.body["next"].clone())
}

#[test]
fn each_owner_reaches_only_its_own_games_under_every_endpoint() {
    for (name, server) in &servers("owners") {
        // The same id for three owners (none among them): three games.
        for (owner, hp) in [(Some("alice"), 10), (Some("bob"), 20), (None, 30)] {
            let made = as_owner(
                server,
                owner,
                "POST",
                "/v1/games",
                Some(&json!({"id": "chat-1", "state": {"hp": hp}})),
                &[],
            );
            assert_eq!(made.status, StatusCode::CREATED, "{name}: {:?}", made.body);
            assert_eq!(made.body, json!({"id": "chat-1", "step": 0}), "{name}");
        }
        for (owner, hp) in [(Some("alice"), 10), (Some("bob"), 20), (None, 30)] {
            let shown = as_owner(server, owner, "GET", "/v1/games/chat-1", None, &[]);
            assert_eq!(shown.body["state"], json!({"hp": hp}), "{name}: {owner:?}");
        }
        // Alice's game is out of everyone else's reach, whatever they try.
        let only_alice = as_owner(
            server,
            Some("alice"),
            "POST",
            "/v1/games",
            Some(&json!({"id": "secret", "state": {"key": 1}})),
            &[],
        );
        assert_eq!(only_alice.status, StatusCode::CREATED, "{name}");
        let apply = json!({"batch": [{"op": "assign", "path": ["key"], "value": 2}]});
        for owner in [Some("bob"), None, Some("alice.x"), Some("alic")] {
            for (method, uri, body) in [
                ("GET", "/v1/games/secret", None),
                ("GET", "/v1/games/secret/state?step=0", None),
                ("GET", "/v1/games/secret/log", None),
                ("POST", "/v1/games/secret/apply", Some(&apply)),
                ("POST", "/v1/games/secret/undo", None),
                ("POST", "/v1/games/secret/checkout", Some(&json!({"to": 0}))),
                (
                    "POST",
                    "/v1/games/secret/sync",
                    Some(&json!({"replies": [{"text": "x"}]})),
                ),
                ("DELETE", "/v1/games/secret", None),
            ] {
                let answer = as_owner(server, owner, method, uri, body, &[]);
                assert_eq!(
                    answer.status,
                    StatusCode::NOT_FOUND,
                    "{name}: {owner:?} {method} {uri}: {:?}",
                    answer.body
                );
                assert_eq!(answer.kind(), "unknown_game", "{name}");
                let message = answer.body["error"]["message"].as_str().unwrap_or("");
                assert_eq!(message, "no game has the id \"secret\"", "{name}");
            }
        }
        // Ids that would spell another owner's key are no ids at all.
        for uri in ["/v1/games/alice%2Fsecret", "/v1/games/alice%2Fsecret/log"] {
            let answer = as_owner(server, Some("bob"), "GET", uri, None, &[]);
            assert_eq!(answer.status, StatusCode::NOT_FOUND, "{name}: {uri}");
            let answer = as_owner(server, None, "GET", uri, None, &[]);
            assert_eq!(answer.status, StatusCode::NOT_FOUND, "{name}: {uri}");
        }
        let made = as_owner(
            server,
            Some("bob"),
            "POST",
            "/v1/games",
            Some(&json!({"id": "alice/secret", "state": {}})),
            &[],
        );
        assert_eq!(made.status, StatusCode::BAD_REQUEST, "{name}");
        // Alice's own game is untouched, and hers to change and delete.
        let mine = as_owner(server, Some("alice"), "GET", "/v1/games/secret", None, &[]);
        assert_eq!(mine.body["state"], json!({"key": 1}), "{name}");
        assert_eq!(mine.body["step"], json!(0), "{name}");
        let applied = as_owner(
            server,
            Some("alice"),
            "POST",
            "/v1/games/secret/apply",
            Some(&apply),
            &[],
        );
        assert_eq!(applied.status, StatusCode::OK, "{name}: {:?}", applied.body);
        let deleted = as_owner(
            server,
            Some("alice"),
            "DELETE",
            "/v1/games/secret",
            None,
            &[],
        );
        assert_eq!(
            deleted.body,
            json!({"id": "secret", "deleted": true}),
            "{name}"
        );

        // A sync that makes its game makes it for its owner.
        let synced = as_owner(
            server,
            Some("bob"),
            "POST",
            "/v1/games/fresh/sync",
            Some(&json!({"replies": [{"text": "hi"}], "create": {"state": {"n": 1}}})),
            &[],
        );
        assert_eq!(synced.status, StatusCode::OK, "{name}: {:?}", synced.body);
        let alice_fresh = as_owner(server, Some("alice"), "GET", "/v1/games/fresh", None, &[]);
        assert_eq!(alice_fresh.status, StatusCode::NOT_FOUND, "{name}");

        assert_eq!(
            listed(server, Some("alice"), "").0,
            ["chat-1"],
            "{name}: alice lists hers"
        );
        assert_eq!(
            listed(server, Some("bob"), "").0,
            ["chat-1", "fresh"],
            "{name}"
        );
        assert_eq!(listed(server, None, "").0, ["chat-1"], "{name}: no owner");
        assert_eq!(
            listed(server, Some("carol"), "").0,
            Vec::<String>::new(),
            "{name}"
        );
    }
}

#[test]
fn listings_page_through_one_owner_among_many() {
    for (name, server) in &servers("owner_pages") {
        // Owners whose names sort around each other and around the games without owner.
        let owners = [Some("a"), Some("ab"), Some("a-b"), Some("b"), None];
        for owner in owners {
            for n in 0..7 {
                let made = as_owner(
                    server,
                    owner,
                    "POST",
                    "/v1/games",
                    Some(&json!({"id": format!("g{n}"), "state": {}})),
                    &[],
                );
                assert_eq!(made.status, StatusCode::CREATED, "{name}");
            }
            // Ids that sort next to the owners' keys: `a0` after every `a/...`, `a.z` before.
            for id in ["a0", "a.z", "a", "b~"] {
                let made = as_owner(
                    server,
                    owner,
                    "POST",
                    "/v1/games",
                    Some(&json!({"id": id, "state": {}})),
                    &[],
                );
                assert_eq!(made.status, StatusCode::CREATED, "{name}");
            }
        }
        let mut expected: Vec<String> = (0..7).map(|n| format!("g{n}")).collect();
        expected.extend(["a0", "a.z", "a", "b~"].map(str::to_owned));
        expected.sort();
        for owner in owners {
            let mut seen = Vec::new();
            let mut query = "?limit=3".to_owned();
            loop {
                let (ids, next) = listed(server, owner, &query);
                assert!(ids.len() <= 3, "{name}");
                seen.extend(ids);
                match next.as_str() {
                    Some(after) => query = format!("?limit=3&after={after}"),
                    None => break,
                }
            }
            assert_eq!(seen, expected, "{name}: {owner:?}");
        }
    }
}

#[test]
fn create_receipts_belong_to_their_owner() {
    for (name, server) in &servers("owner_receipts") {
        let key = [("Idempotency-Key", "make-1")];
        let body = json!({"state": {"n": 0}});
        let alice = as_owner(
            server,
            Some("alice"),
            "POST",
            "/v1/games",
            Some(&body),
            &key,
        );
        assert_eq!(alice.status, StatusCode::CREATED, "{name}");
        // Bob's request under the same key is his own: a game of his, not Alice's answer.
        let bob = as_owner(server, Some("bob"), "POST", "/v1/games", Some(&body), &key);
        assert_eq!(bob.status, StatusCode::CREATED, "{name}");
        assert_ne!(bob.body["id"], alice.body["id"], "{name}");
        let again = as_owner(
            server,
            Some("alice"),
            "POST",
            "/v1/games",
            Some(&body),
            &key,
        );
        assert_eq!(again.body, alice.body, "{name}: alice's retry replays hers");
        // Alice deletes hers: her retry hears so; Bob's retry still replays his.
        let id = alice.body["id"].as_str().expect("an id");
        let deleted = as_owner(
            server,
            Some("alice"),
            "DELETE",
            &format!("/v1/games/{id}"),
            None,
            &[],
        );
        assert_eq!(deleted.status, StatusCode::OK, "{name}");
        let gone = as_owner(
            server,
            Some("alice"),
            "POST",
            "/v1/games",
            Some(&body),
            &key,
        );
        assert_eq!(gone.kind(), "game_deleted", "{name}: {:?}", gone.body);
        let still = as_owner(server, Some("bob"), "POST", "/v1/games", Some(&body), &key);
        assert_eq!(still.body, bob.body, "{name}");
    }
}

#[test]
fn a_bad_owner_header_is_refused_by_name() {
    let server = Harness::sqlite(100);
    for owner in ["a/b", "..", &"x".repeat(65)] {
        for (method, uri) in [("GET", "/v1/games"), ("GET", "/v1/games/g")] {
            let answer = as_owner(&server, Some(owner), method, uri, None, &[]);
            assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{owner} {uri}");
            let message = answer.body["error"]["message"].as_str().unwrap_or("");
            assert!(message.contains("statecraft-owner"), "{message}");
        }
        let made = as_owner(
            &server,
            Some(owner),
            "POST",
            "/v1/games",
            Some(&json!({"state": {}})),
            &[],
        );
        assert_eq!(made.status, StatusCode::BAD_REQUEST, "{owner}");
    }
}
