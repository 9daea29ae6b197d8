//! Games made from cards, in process, on SQLite and PostgreSQL: the macros a game was made with read
//! every later reply (apply and sync), a request's own over them; a new version of the card taken as
//! one step (`POST /v1/games/{id}/card`), undone like any other, kept across a restart; and a card
//! with statecraft's own settings (docs/mvu.md, "Character cards", "Card updates").

use axum::http::StatusCode;
use serde_json::{Value as Json, json};

use super::{Harness, mvu_card};

/// Every server these tests run on: SQLite, and PostgreSQL when it answers.
fn servers(test: &str) -> Vec<(&'static str, Harness)> {
    let mut servers = vec![("sqlite", Harness::sqlite(100))];
    servers.extend(Harness::postgres(test, 100).map(|server| ("postgres", server)));
    servers
}

fn ok(server: &Harness, method: &str, uri: &str, body: Option<Json>) -> Json {
    let answer = server.call(method, uri, body.as_ref());
    assert_eq!(
        answer.status,
        StatusCode::OK,
        "{method} {uri}: {:?}",
        answer.body
    );
    answer.body
}

#[test]
fn a_card_game_reads_every_reply_with_the_macros_it_was_made_with() {
    for (name, server) in servers("card_macros") {
        server.create(&json!({"card": mvu_card(), "macros": {"user": "Alex"}, "id": "mira"}));
        let applied = ok(
            &server,
            "POST",
            "/v1/games/mira/apply",
            Some(
                json!({"input": "_.set('<user>.金钱', 50, 40);\n_.set('{{char}}.心情', '平静', '高兴');"}),
            ),
        );
        assert_eq!(
            applied["changes"].as_array().unwrap().len(),
            2,
            "{name}: {applied}"
        );
        let state = ok(&server, "GET", "/v1/games/mira", None)["state"].clone();
        assert_eq!(state["Alex"]["金钱"], 40, "{name}");
        assert_eq!(state["Mira"]["心情"], "高兴", "{name}");
        // The request's own macros win: Bob is no one here, so mvu skips the command.
        let other = ok(
            &server,
            "POST",
            "/v1/games/mira/apply",
            Some(json!({"input": "_.set('<user>.金钱', 1);", "macros": {"user": "Bob"}})),
        );
        assert_eq!(other["changes"], json!([]), "{name}");
        // A sync that makes its game from the card keeps the macros for its replies too.
        let reply = "_.add('<user>.金钱', -5);";
        let synced = ok(
            &server,
            "POST",
            "/v1/games/chat/sync",
            Some(json!({"replies": [{"text": reply}],
                        "create": {"card": mvu_card(), "macros": {"user": "Alex"}}})),
        );
        assert_eq!(synced["state"]["Alex"]["金钱"], 45, "{name}");
        let held = ok(&server, "GET", "/v1/games/chat/card", None);
        assert_eq!(
            held["macros"],
            json!({"user": "Alex", "char": "Mira"}),
            "{name}"
        );
        assert_eq!(held["profile"], "mvu", "{name}");
        assert_eq!(
            held["fingerprint"].as_str().map(str::len),
            Some(64),
            "{name}"
        );
    }
}

fn card(content: &str) -> Json {
    json!({"spec": "chara_card_v2", "data": {"name": "Io", "character_book": {"entries": [
        {"comment": "[InitVar]", "content": content, "enabled": false}]}}})
}

#[test]
fn a_card_update_is_one_step_that_undo_takes_back_and_a_restart_keeps() {
    let v1 = card("hero:\n  hp: 10\n  title: squire\nnpcs:\n  $meta: {extensible: true}");
    let v2 = card("hero:\n  hp: 10\n  mp: [5, mana]\nnpcs: {}\nquests:\n  - $__META_EXTENSIBLE__$");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let sqlite = crate::db::Database::Sqlite(dir.path().join("games.db"));
    let schema = super::PgSchema::new("card_update");
    let mut databases = vec![("sqlite", sqlite)];
    if let Some(schema) = &schema {
        databases.push((
            "postgres",
            crate::db::Database::Postgres(schema.url.clone()),
        ));
    }
    for (name, database) in &databases {
        let server = Harness::on(database, 100, None, None);
        server.create(&json!({"card": v1, "id": "io"}));
        ok(
            &server,
            "POST",
            "/v1/games/io/apply",
            Some(
                json!({"input": "_.set('hero.hp', 10, 4);\n_.insert('npcs', 'bob', {trust: 1});"}),
            ),
        );
        let before = ok(&server, "GET", "/v1/games/io/card", None);
        let preview = ok(
            &server,
            "POST",
            "/v1/games/io/card",
            Some(json!({"card": v2, "dry_run": true})),
        );
        assert_eq!(
            (&preview["changed"], &preview["committed"], &preview["step"]),
            (&json!(true), &json!(false), &json!(1)),
            "{name}"
        );
        assert_eq!(
            preview["added"],
            json!([["hero", "mp"], ["quests"]]),
            "{name}"
        );
        assert_eq!(preview["dropped"], json!([["hero", "title"]]), "{name}");
        assert_eq!(preview["previous"], before["fingerprint"], "{name}");
        let taken = ok(
            &server,
            "POST",
            "/v1/games/io/card",
            Some(json!({"card": v2})),
        );
        assert_eq!(taken["committed"], true, "{name}");
        assert_eq!(taken["removed"], json!([]), "{name}");
        let state = ok(&server, "GET", "/v1/games/io", None);
        assert_eq!(
            state["state"],
            json!({"hero": {"hp": 4, "mp": [5, "mana"], "title": "squire"}, "npcs": {"bob": {"trust": 1}}, "quests": []}),
            "{name}"
        );
        assert_eq!(state["label"], "card update", "{name}");
        // The new automatic schema applies: npcs is locked now, in a dry run too.
        let dry = ok(
            &server,
            "POST",
            "/v1/games/io/apply",
            Some(json!({"input": "_.insert('npcs', 'amy', {});", "dry_run": true})),
        );
        assert_eq!(dry["warnings"][0]["kind"], "schema_violation", "{name}");
        let locked = ok(
            &server,
            "POST",
            "/v1/games/io/apply",
            Some(json!({"input": "_.insert('npcs', 'amy', {});"})),
        );
        assert_eq!(locked["warnings"][0]["kind"], "schema_violation", "{name}");
        let same = ok(
            &server,
            "POST",
            "/v1/games/io/card",
            Some(json!({"card": v2})),
        );
        assert_eq!(
            same["changed"], false,
            "{name}: the same card takes no step"
        );
        // Another server on the same database rebuilds the card from the rows.
        drop(server);
        let server = Harness::on(database, 100, None, None);
        let held = ok(&server, "GET", "/v1/games/io/card", None);
        assert_eq!(held["fingerprint"], taken["fingerprint"], "{name}");
        // The refused insert changed nothing and made no step: one undo takes the update back.
        let undone = ok(&server, "POST", "/v1/games/io/undo", None);
        assert_eq!(
            undone["state"],
            json!({"hero": {"hp": 4, "title": "squire"}, "npcs": {"bob": {"trust": 1}}}),
            "{name}"
        );
        let held = ok(&server, "GET", "/v1/games/io/card", None);
        assert_eq!(
            held["fingerprint"], before["fingerprint"],
            "{name}: undone with the state"
        );
        let removed = ok(
            &server,
            "POST",
            "/v1/games/io/card",
            Some(json!({"card": v2, "remove_dropped": true, "label": "v2"})),
        );
        assert_eq!(removed["removed"], json!([["hero", "title"]]), "{name}");
        let state = ok(&server, "GET", "/v1/games/io", None);
        assert_eq!(
            state["state"]["hero"],
            json!({"hp": 4, "mp": [5, "mana"]}),
            "{name}"
        );
        assert_eq!(state["label"], "v2", "{name}");
        // A card that cannot be read, or a game the card update conflicts with, changes nothing.
        let bad = server.call("POST", "/v1/games/io/card", Some(&json!({"card": [1]})));
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{name}");
        let conflict = server.call(
            "POST",
            "/v1/games/io/card",
            Some(&json!({"card": v1, "expect_step": 1})),
        );
        assert_eq!(conflict.status, StatusCode::CONFLICT, "{name}");
        let unknown = server.call("GET", "/v1/games/nobody/card", None);
        assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{name}");
        server.call("DELETE", "/v1/games/io", None);
    }
}

#[test]
fn a_json_schema_that_refuses_the_new_keys_refuses_the_update() {
    let server = Harness::sqlite(100);
    server.create(&json!({
        "id": "io",
        "card": card("hero:\n  hp: 10"),
        "schema": {"type": "object", "properties": {"hero": {"type": "object", "additionalProperties": false, "properties": {"hp": {}}}}},
    }));
    let refused = server.call(
        "POST",
        "/v1/games/io/card",
        Some(&json!({"card": card("hero:\n  hp: 10\n  mp: 5")})),
    );
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        refused.body
    );
    assert_eq!(refused.kind(), "rejected");
    let shown = ok(&server, "GET", "/v1/games/io", None);
    assert_eq!(
        (shown["step"].clone(), shown["state"].clone()),
        (json!(0), json!({"hero": {"hp": 10}}))
    );
}

/// The card the extension stores its settings in, and no [InitVar] entry: the game is the one the
/// extension makes of them (state, schema, scripts, profile).
#[test]
fn a_card_with_statecraft_settings_makes_the_extensions_game() {
    let server = Harness::sqlite(100);
    let settings = json!({
        "state": {"gold": 10},
        "schema": {"type": "object", "properties": {"gold": {"type": "integer", "minimum": 0}}},
        "scripts": {"shop.lua": "on('buy', function(ctx, price) return {{op = 'increment', path = {'gold'}, value = -price}} end)"},
        "profile": "mvu",
    });
    let card = json!({"spec": "chara_card_v2", "data": {"name": "Vex", "extensions": {"statecraft": settings}}});
    server.create(&json!({"card": card, "id": "vex"}));
    let shown = ok(&server, "GET", "/v1/games/vex", None);
    assert_eq!(shown["state"], json!({"gold": 10}));
    let bought = ok(
        &server,
        "POST",
        "/v1/games/vex/apply",
        Some(json!({"batch": [{"op": "callback", "path": ["buy"], "value": [4]}]})),
    );
    assert_eq!(bought["changes"][0]["new"], 6);
    let held = ok(&server, "GET", "/v1/games/vex/card", None);
    assert_eq!(
        (held["profile"].clone(), held["automatic_schema"].clone()),
        (json!("mvu"), Json::Null)
    );
    let refused = server.call(
        "POST",
        "/v1/games/vex/apply",
        Some(&json!({"batch": [{"op": "assign", "path": ["gold"], "value": -1}]})),
    );
    assert_eq!(
        refused.body["warnings"][0]["kind"], "schema_violation",
        "{:?}",
        refused.body
    );
}
