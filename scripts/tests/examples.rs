//! The example handlers of the fantasy scenario (`examples/fantasy/scripts/`: level-up, shop, quest
//! progress) against its state, loaded from their folder as a host would load them.

mod support;

use serde_json::{Value as Json, json};
use statecraft_engine::{Store, Value};
use statecraft_scripts::LuaHandlers;
use support::{batch, callback, commit, reject, state, test_limits};

fn fantasy() -> Store {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/fantasy/scripts");
    let handlers = LuaHandlers::load_dir(dir, &test_limits()).expect("the examples load");
    let state = json!({
        "player": {"name": "Aria", "level": 1, "xp": 0, "hp": 30, "max_hp": 30, "gold": 25, "inventory": ["rusty sword"]},
        "quest": {"name": "The Goblin Cave", "stage": "village"},
        "shop": {"potion": 10, "iron sword": 40, "leather armor": 30}
    });
    Store::builder(Value::from_json(&state))
        .handler(handlers)
        .limits(test_limits())
        .build()
        .expect("store")
}

fn at(store: &Store, pointer: &str) -> Json {
    state(store).pointer(pointer).cloned().unwrap_or(Json::Null)
}

#[test]
fn gaining_xp_levels_up_heals_and_announces() {
    let mut store = fantasy();
    let done = commit(&mut store, &callback("gain_xp", json!([120])));
    assert_eq!(
        at(&store, "/player"),
        json!({
            "name": "Aria", "level": 2, "xp": 120, "hp": 40, "max_hp": 40, "gold": 25, "inventory": ["rusty sword"]
        })
    );
    assert_eq!(done.events.len(), 1);
    assert_eq!(done.events[0].name, "level_up");
    assert_eq!(done.results[0].as_ref().map(Value::to_json), Some(json!(2)));
}

#[test]
fn gaining_a_negative_amount_is_refused() {
    let mut store = fantasy();
    let message = reject(&mut store, &callback("gain_xp", json!([-5])));
    assert!(message.contains("10_level_up.lua:"), "{message}");
    assert!(message.contains("non-negative whole number"), "{message}");
}

#[test]
fn buying_takes_the_price_from_the_state() {
    let mut store = fantasy();
    commit(&mut store, &callback("buy", json!(["potion", 2])));
    assert_eq!(at(&store, "/player/gold"), json!(5));
    assert_eq!(
        at(&store, "/player/inventory"),
        json!(["rusty sword", "potion", "potion"])
    );
}

#[test]
fn buying_without_enough_gold_rejects_the_whole_reply() {
    let mut store = fantasy();
    let before = state(&store);
    let reply = batch(json!([
        {"op": "assign", "path": ["player", "hp"], "value": 12},
        {"op": "callback", "path": ["buy"], "value": ["iron sword"]},
    ]));
    let message = reject(&mut store, &reply);
    assert!(
        message.contains("not enough gold for 1 iron sword: 25 < 40"),
        "{message}"
    );
    assert_eq!(state(&store), before);
}

#[test]
fn selling_returns_half_the_price() {
    let mut store = fantasy();
    commit(&mut store, &callback("buy", json!(["potion"])));
    let done = commit(&mut store, &callback("sell", json!(["potion"])));
    assert_eq!(done.results[0].as_ref().map(Value::to_json), Some(json!(5)));
    assert_eq!(at(&store, "/player/gold"), json!(20));
    assert_eq!(at(&store, "/player/inventory"), json!(["rusty sword"]));
}

#[test]
fn quests_only_move_forward_and_announce_each_stage() {
    let mut store = fantasy();
    let done = commit(&mut store, &callback("advance_quest", json!(["cave"])));
    assert_eq!(at(&store, "/quest/stage"), json!("cave"));
    let texts: Vec<Json> = done
        .events
        .iter()
        .map(|e| e.payload.to_json()["text"].clone())
        .collect();
    assert_eq!(
        texts,
        vec![json!("Quest \"The Goblin Cave\": village -> cave")]
    );
    let message = reject(&mut store, &callback("advance_quest", json!(["forest"])));
    assert!(message.contains("cannot go back to forest"), "{message}");
}

#[test]
fn finding_the_crown_completes_the_quest_through_watchers_and_pays_through_a_handler() {
    let mut store = fantasy();
    let done = commit(
        &mut store,
        &batch(
            json!([{"op": "push", "path": ["player", "inventory"], "value": "goblin king's crown"}]),
        ),
    );
    assert_eq!(at(&store, "/quest/stage"), json!("complete"));
    assert_eq!(at(&store, "/player/gold"), json!(125));
    assert_eq!(at(&store, "/player/xp"), json!(150));
    assert_eq!(at(&store, "/player/level"), json!(2));
    let names: Vec<&str> = done.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, vec!["level_up", "message"]);
}
