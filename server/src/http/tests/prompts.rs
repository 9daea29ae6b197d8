//! The prompt kit's per-game endpoints in process (docs/http.md): `POST /v1/games/{id}/prompt` (the
//! view at a step, with its recent changes ranked first), `GET /v1/games/{id}/schema` (the batch
//! and pass schemas) and `POST /v1/games/{id}/evaluate` (conditions at a step), each scoped to its
//! owner; and the stateless `POST /v1/prompt`'s view and modes.

use axum::http::StatusCode;
use serde_json::{Value as Json, json};

use super::{Answered, Harness};

fn as_owner(
    server: &Harness,
    owner: &str,
    method: &str,
    uri: &str,
    body: Option<&Json>,
) -> Answered {
    let text = body.map(Json::to_string).unwrap_or_default();
    server.raw(method, uri, &text, &[("statecraft-owner", owner)])
}

fn ok(server: &Harness, method: &str, uri: &str, body: Option<Json>) -> Json {
    let answer = as_owner(server, "ann", method, uri, body.as_ref());
    assert_eq!(
        answer.status,
        StatusCode::OK,
        "{method} {uri}: {:?}",
        answer.body
    );
    answer.body
}

fn refused(server: &Harness, method: &str, uri: &str, body: Json) -> (StatusCode, Json) {
    let answer = as_owner(server, "ann", method, uri, Some(&body));
    (answer.status, answer.body)
}

/// A game of ann's with a schema that always shows `/hero`, and two steps.
fn game(server: &Harness) {
    let state = json!({
        "hero": {"hp": 10, "name": "Io"},
        "npcs": {"Mira": {"mood": "calm", "notes": "keeps the inn by the old mill"},
                 "Bram": {"mood": "sleepy", "notes": "a miller with a long story to tell"}},
        "town": {"name": "Elm", "gate": "open", "weather": "rain", "market": "busy"},
        "secret": "the king is a fox"
    });
    let schema = json!({
        "type": "object",
        "properties": {
            "hero": {"type": "object", "x-statecraft-always": true},
            "secret": {"type": "string", "x-statecraft-visible": false}
        }
    });
    let made = as_owner(
        server,
        "ann",
        "POST",
        "/v1/games",
        Some(&json!({"id": "io", "state": state, "schema": schema})),
    );
    assert_eq!(made.status, StatusCode::CREATED, "{:?}", made.body);
    for (batch, label) in [
        (
            json!([{"op": "assign", "path": ["town", "gate"], "value": "shut"}]),
            "t1",
        ),
        (
            json!([{"op": "increment", "path": ["hero", "hp"], "value": -3}]),
            "t2",
        ),
    ] {
        ok(
            server,
            "POST",
            "/v1/games/io/apply",
            Some(json!({"batch": batch, "label": label})),
        );
    }
}

#[test]
fn a_games_prompt_views_its_state_at_a_step_within_the_budget() {
    let server = Harness::sqlite(100);
    game(&server);
    let whole = ok(&server, "POST", "/v1/games/io/prompt", Some(json!({})));
    assert_eq!((&whole["step"], &whole["label"]), (&json!(2), &json!("t2")));
    assert_eq!(whole["tokens"]["state"], whole["tokens"]["full_state"]);
    assert_eq!(whole["elided"], json!([]));
    let text = whole["text"].as_str().unwrap();
    assert!(text.starts_with("# State updates"), "{text}");
    assert!(text.contains("\"hp\": 7"), "{text}");
    assert!(!text.contains("fox"), "hidden subtrees stay out: {text}");
    assert!(text.contains(whole["state"].as_str().unwrap()));
    // At the first step, within a budget: the always-shown hero, then the gate that step changed,
    // then what the messages mention; the rest named with its size.
    let full = whole["tokens"]["full_state"].as_u64().unwrap();
    let budget = full - 30;
    let at = ok(
        &server,
        "POST",
        "/v1/games/io/prompt",
        Some(
            json!({"step": "t1", "budget": budget, "messages": ["Mira waves."], "format": "json"}),
        ),
    );
    assert_eq!(at["step"], 1);
    let state = at["state"].as_str().unwrap();
    assert!(at["tokens"]["state"].as_u64().unwrap() <= budget, "{at}");
    assert!(state.contains("\"hp\": 10"), "{state}");
    assert!(state.contains("\"gate\": \"shut\""), "{state}");
    assert!(state.contains("\"Mira\""), "{state}");
    assert!(!state.contains("\"Bram\""), "{state}");
    assert!(state.contains("… /npcs/Bram: "), "{state}");
    assert!(
        at["elided"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == "/npcs/Bram"),
        "{at}"
    );
    // The pass: its rules, the reply; compact; the state alone.
    let pass = ok(
        &server,
        "POST",
        "/v1/games/io/prompt",
        Some(
            json!({"mode": "pass", "reply": "Io drinks a potion.", "format": "compact", "lang": "zh"}),
        ),
    );
    let text = pass["text"].as_str().unwrap();
    assert!(
        text.contains("{\"instructions\": [...]}") && text.contains("Io drinks a potion."),
        "{text}"
    );
    assert!(text.contains("  hp: 7"), "{text}");
    let alone = ok(
        &server,
        "POST",
        "/v1/games/io/prompt",
        Some(json!({"mode": "state"})),
    );
    assert!(
        !alone["text"].as_str().unwrap().contains("\"op\""),
        "{alone}"
    );
    assert_eq!(alone["rules"], "Current state:");
}

#[test]
fn a_games_prompt_refuses_what_it_cannot_answer() {
    let server = Harness::sqlite(100);
    game(&server);
    let cases = [
        (
            json!({"mode": "pass"}),
            StatusCode::BAD_REQUEST,
            "\"reply\" is missing",
        ),
        (
            json!({"reply": "x"}),
            StatusCode::BAD_REQUEST,
            "only mode \"pass\"",
        ),
        (json!({"format": "yaml"}), StatusCode::BAD_REQUEST, "yaml"),
        (json!({"budget": -1}), StatusCode::BAD_REQUEST, "-1"),
        (json!({"step": "nowhere"}), StatusCode::NOT_FOUND, "nowhere"),
        (json!({"step": 99}), StatusCode::NOT_FOUND, "99"),
        (json!({"colour": 1}), StatusCode::BAD_REQUEST, "colour"),
    ];
    for (body, status, says) in cases {
        let (got, answer) = refused(&server, "POST", "/v1/games/io/prompt", body.clone());
        assert_eq!(got, status, "{body}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains(says),
            "{body}: {answer}"
        );
    }
}

#[test]
fn a_games_schema_holds_its_batch_schema_and_the_strict_pass_schema() {
    let server = Harness::sqlite(100);
    game(&server);
    let answer = ok(&server, "GET", "/v1/games/io/schema", None);
    assert_eq!(answer["name"], "statecraft_update");
    assert_eq!(answer["schema"]["type"], "array");
    assert_eq!(answer["pass"]["type"], "object");
    assert_eq!(answer["pass"]["required"], json!(["instructions"]));
    assert_eq!(answer["pass"]["additionalProperties"], false);
    // The batch schema is the one `POST /v1/schema` writes for the game's schema.
    let schema = json!({
        "type": "object",
        "properties": {
            "hero": {"type": "object", "x-statecraft-always": true},
            "secret": {"type": "string", "x-statecraft-visible": false}
        }
    });
    let stateless = ok(
        &server,
        "POST",
        "/v1/schema",
        Some(json!({"schema": schema})),
    );
    assert_eq!(answer["schema"], stateless["schema"]);
}

#[test]
fn conditions_are_evaluated_at_a_step_with_errors_at_their_bytes() {
    let server = Harness::sqlite(100);
    game(&server);
    let conditions = json!([
        "hero.hp < 10",
        "/town/gate == 'shut' and not npcs.Mira.mood in ['angry']",
        "hero.mana exists",
        "hero.hp = 3"
    ]);
    let now = ok(
        &server,
        "POST",
        "/v1/games/io/evaluate",
        Some(json!({"conditions": conditions})),
    );
    assert_eq!((&now["step"], &now["label"]), (&json!(2), &json!("t2")));
    assert_eq!(
        now["results"],
        json!([
            {"holds": true},
            {"holds": true},
            {"holds": false},
            {"error": {"code": "expected_operator",
                       "message": "\"=\" is not an operator here: write ==",
                       "start": 8, "end": 9}}
        ])
    );
    let root = ok(
        &server,
        "POST",
        "/v1/games/io/evaluate",
        Some(json!({"conditions": ["hero.hp < 10", "town.gate == 'open'"], "step": 0})),
    );
    assert_eq!(root["results"], json!([{"holds": false}, {"holds": true}]));
    let (status, answer) = refused(
        &server,
        "POST",
        "/v1/games/io/evaluate",
        json!({"conditions": "hp"}),
    );
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    let (status, answer) = refused(
        &server,
        "POST",
        "/v1/games/io/evaluate",
        json!({"conditions": [], "step": "t9"}),
    );
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
}

#[test]
fn another_owner_reaches_none_of_them() {
    let server = Harness::sqlite(100);
    game(&server);
    for (method, uri, body) in [
        ("POST", "/v1/games/io/prompt", Some(json!({}))),
        ("GET", "/v1/games/io/schema", None),
        (
            "POST",
            "/v1/games/io/evaluate",
            Some(json!({"conditions": ["hero.hp > 0"]})),
        ),
    ] {
        let other = as_owner(&server, "bob", method, uri, body.as_ref());
        assert_eq!(
            other.status,
            StatusCode::NOT_FOUND,
            "{uri}: {:?}",
            other.body
        );
        let unowned = server.call(method, uri, body.as_ref());
        assert_eq!(
            unowned.status,
            StatusCode::NOT_FOUND,
            "{uri}: {:?}",
            unowned.body
        );
        let mine = as_owner(&server, "ann", method, uri, body.as_ref());
        assert_eq!(mine.status, StatusCode::OK, "{uri}: {:?}", mine.body);
    }
}

#[test]
fn the_stateless_prompt_takes_the_same_view_and_modes() {
    let server = Harness::sqlite(100);
    let state = json!({"hp": 3, "bag": ["rope", "torch", "map", "coin", "key"], "zone": "cave"});
    let budget = 30;
    let answer = ok(
        &server,
        "POST",
        "/v1/prompt",
        Some(
            json!({"state": state, "budget": budget, "format": "compact", "mode": "pass", "reply": "x"}),
        ),
    );
    assert!(
        answer["tokens"]["state"].as_u64().unwrap() <= budget,
        "{answer}"
    );
    assert!(
        answer["tokens"]["full_state"].as_u64().unwrap() > budget,
        "{answer}"
    );
    assert!(
        answer["elided"].as_array().is_some_and(|e| !e.is_empty()),
        "{answer}"
    );
    assert!(answer.get("step").is_none(), "{answer}");
    let (status, body) = refused(
        &server,
        "POST",
        "/v1/prompt",
        json!({"state": state, "mode": "pass"}),
    );
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}
