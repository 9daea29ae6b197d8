//! Card updates (docs/mvu.md, "Card updates"): a game in progress takes a new version of its card as
//! one step: keys added with their initial values, every value kept, dropped keys listed and removed
//! only when asked, the new automatic schema enforced from the step down, undo taking the state and
//! the card back together, and a sync walking through the update.

use serde_json::{Value as Json, json};
use statecraft_engine::{
    ApplyOptions, Batch, BatchError, CardUpdateOptions, CardVersion, ErrorKind, Outcome, Profile,
    ReplyReader, StateSchema, StepId, Store, StructureSchema, SyncOptions, SyncReply, Value,
    plan_card_update,
};

/// Version 1 of a card: `hero` locked with `hp`, `npcs` open.
fn v1() -> CardVersion {
    CardVersion {
        structure: Some(
            StructureSchema::new(json!({"type": "object", "properties": {
                "hero": {"type": "object", "required": true, "properties": {
                    "hp": {"type": "number", "required": true},
                    "title": {"type": "string", "required": true}}},
                "npcs": {"type": "object", "required": true, "extensible": true, "properties": {}}
            }}))
            .unwrap(),
        ),
        fingerprint: Some("v1".to_owned()),
    }
}

/// Version 2: `hero.mp` is new, `hero.title` is gone, `npcs` is locked and `quests` is new.
fn v2() -> (Value, CardVersion) {
    let initial = Value::from(json!({"hero": {"hp": 10, "mp": 5}, "npcs": {}, "quests": []}));
    let version = CardVersion {
        structure: Some(
            StructureSchema::new(json!({"type": "object", "properties": {
                "hero": {"type": "object", "required": true, "properties": {
                    "hp": {"type": "number", "required": true},
                    "mp": {"type": "number", "required": true}}},
                "npcs": {"type": "object", "required": true, "extensible": false, "properties": {}},
                "quests": {"type": "array", "required": true, "extensible": true, "elementType": {"type": "any"}}
            }}))
            .unwrap(),
        ),
        fingerprint: Some("v2".to_owned()),
    };
    (initial, version)
}

fn game() -> Store {
    Store::builder(Value::from(
        json!({"hero": {"hp": 10, "title": "squire"}, "npcs": {}}),
    ))
    .profile(Profile::Mvu)
    .card(v1())
    .build()
    .unwrap()
}

fn batch(json: Json) -> Batch {
    Batch::from_json(&json).unwrap()
}

/// What taking `version` (initial state `initial`) does to the store's current state.
fn plan(
    store: &Store,
    initial: &Value,
    version: &CardVersion,
    options: CardUpdateOptions,
) -> statecraft_engine::CardUpdate {
    plan_card_update(store.state(), initial, store.card(), version, options)
}

fn pointers(paths: &[statecraft_engine::Path]) -> Vec<String> {
    paths.iter().map(ToString::to_string).collect()
}

#[test]
fn an_update_adds_keeps_lists_and_enforces_the_new_schema_until_undone() {
    let mut store = game();
    let played = batch(json!([
        {"op": "assign", "path": ["hero", "hp"], "value": 4},
        {"op": "assign", "path": ["npcs", "bob"], "value": {"trust": 1}}
    ]));
    assert!(store.apply(&played).is_committed());
    let (initial, version) = v2();
    let update = plan(&store, &initial, &version, CardUpdateOptions::default());
    assert_eq!(pointers(&update.added), ["/hero/mp", "/quests"]);
    assert_eq!(pointers(&update.dropped), ["/hero/title"]);
    let Outcome::Committed(commit) =
        store.take_card(&update, version.clone(), Some("card v2".to_owned()))
    else {
        panic!("committed")
    };
    let step = commit.step.expect("a step");
    assert_eq!(
        store.state().to_json(),
        json!({"hero": {"hp": 4, "mp": 5, "title": "squire"}, "npcs": {"bob": {"trust": 1}}, "quests": []}),
        "every value the game held is kept, the dropped key only listed"
    );
    assert_eq!(store.card().fingerprint.as_deref(), Some("v2"));
    assert!(store.step(step).unwrap().card_update.is_some());
    assert_eq!(store.find("card v2").unwrap(), step);
    // The new automatic schema holds from the update down: `npcs` is locked now, `quests` open.
    let reply = batch(json!([
        {"op": "assign", "path": ["npcs", "amy"], "value": {}},
        {"op": "push", "path": ["quests"], "value": "find the key"}
    ]));
    let Outcome::Committed(commit) = store.apply(&reply) else {
        panic!("committed")
    };
    assert_eq!(commit.warnings[0].kind, ErrorKind::SchemaViolation);
    assert_eq!(store.state().to_json()["quests"], json!(["find the key"]));
    assert!(store.state().to_json()["npcs"].get("amy").is_none());
    // Undo the reply and the update: the state and the card are as before.
    store.undo().unwrap();
    store.undo().unwrap();
    assert_eq!(
        store.state().to_json(),
        json!({"hero": {"hp": 4, "title": "squire"}, "npcs": {"bob": {"trust": 1}}})
    );
    assert_eq!(store.card().fingerprint.as_deref(), Some("v1"));
    assert!(
        store
            .apply(&batch(
                json!([{"op": "assign", "path": ["npcs", "amy"], "value": {}}])
            ))
            .is_committed()
    );
    assert!(
        store.state().to_json()["npcs"].get("amy").is_some(),
        "v1 keeps npcs open"
    );
    // Redo is gone to a new branch; the update's step still holds v2.
    assert_eq!(
        store.card_at(step).unwrap().fingerprint.as_deref(),
        Some("v2")
    );
}

#[test]
fn dropped_keys_are_removed_only_when_asked_and_the_json_schema_still_decides() {
    let mut store = game();
    let (initial, version) = v2();
    let remove = CardUpdateOptions {
        remove_dropped: true,
        ..CardUpdateOptions::default()
    };
    let update = plan(&store, &initial, &version, remove);
    assert!(
        store
            .take_card(&update, version.clone(), None)
            .is_committed()
    );
    assert_eq!(
        store.state().to_json(),
        json!({"hero": {"hp": 10, "mp": 5}, "npcs": {}, "quests": []})
    );
    // A game whose JSON Schema forbids what the update adds refuses it whole.
    let mut strict = Store::builder(Value::from(
        json!({"hero": {"hp": 1, "title": "x"}, "npcs": {}}),
    ))
    .schema(
        StateSchema::new(
            json!({"type": "object", "properties": {"hero": {"type": "object",
                "additionalProperties": false, "properties": {"hp": {}, "title": {}}}}}),
        )
        .unwrap(),
    )
    .card(v1())
    .build()
    .unwrap();
    let update = plan(&strict, &initial, &version, remove);
    let Outcome::Rejected(rejection) = strict.take_card(&update, version, None) else {
        panic!("refused")
    };
    assert_eq!(rejection.errors[0].kind, ErrorKind::SchemaViolation);
    assert_eq!(strict.card().fingerprint.as_deref(), Some("v1"));
    assert_eq!(strict.current_step(), StepId::ROOT);
}

#[test]
fn an_update_that_changes_no_value_is_still_a_step_holding_the_new_card() {
    let mut store = game();
    let version = CardVersion {
        fingerprint: Some("v1 reworded".to_owned()),
        ..v1()
    };
    let initial = Value::from(json!({"hero": {"hp": 10, "title": "knight"}, "npcs": {}}));
    let update = plan(&store, &initial, &version, CardUpdateOptions::default());
    assert!(update.is_empty());
    let Outcome::Committed(commit) = store.take_card(&update, version, None) else {
        panic!("committed")
    };
    assert!(commit.step.is_some());
    assert_eq!(store.card().fingerprint.as_deref(), Some("v1 reworded"));
}

/// Reads a reply as a JSON batch.
struct Json2Batch;

impl ReplyReader for Json2Batch {
    fn read(&mut self, text: &str, _state: &Value) -> Result<(Batch, ApplyOptions), String> {
        Ok((
            batch(serde_json::from_str(text).unwrap()),
            ApplyOptions::default(),
        ))
    }

    fn refused(&mut self, errors: &[BatchError]) -> String {
        errors[0].to_string()
    }
}

#[test]
fn a_sync_walks_through_the_update_made_on_the_last_reply() {
    let mut store = game();
    let first = r#"[{"op": "assign", "path": ["hero", "hp"], "value": 8}]"#;
    let second = r#"[{"op": "assign", "path": ["hero", "hp"], "value": 6}]"#;
    let swipe = r#"[{"op": "assign", "path": ["hero", "hp"], "value": 7}]"#;
    let sync = |store: &mut Store, replies: &[&str]| {
        let path: Vec<SyncReply<'_>> = replies.iter().map(|text| SyncReply::Text(text)).collect();
        store
            .sync(&path, &SyncOptions::default(), &mut Json2Batch)
            .unwrap()
    };
    sync(&mut store, &[first]);
    let (initial, version) = v2();
    let update = plan(&store, &initial, &version, CardUpdateOptions::default());
    let update_step = store
        .take_card(&update, version, None)
        .committed()
        .unwrap()
        .step
        .unwrap();
    // The same chat again ends on the update; the next reply builds on it.
    let again = sync(&mut store, &[first]);
    assert_eq!(again.end, update_step);
    assert!(again.applied.is_empty());
    let next = sync(&mut store, &[first, second]);
    assert_eq!(store.step(next.end).unwrap().parent, update_step);
    assert_eq!(
        store.state().to_json(),
        json!({"hero": {"hp": 6, "mp": 5, "title": "squire"}, "npcs": {}, "quests": []})
    );
    assert_eq!(store.card().fingerprint.as_deref(), Some("v2"));
    // A swipe of the first reply is made beside it, under the card it was made with.
    sync(&mut store, &[swipe]);
    assert_eq!(
        store.state().to_json(),
        json!({"hero": {"hp": 7, "title": "squire"}, "npcs": {}})
    );
    assert_eq!(store.card().fingerprint.as_deref(), Some("v1"));
    // Back to the first swipe: through the update again.
    let back = sync(&mut store, &[first, second]);
    assert_eq!(back.reused, 2);
    assert_eq!(store.card().fingerprint.as_deref(), Some("v2"));
}

#[test]
fn the_card_survives_trimming_into_the_root() {
    let mut store = Store::builder(Value::from(
        json!({"hero": {"hp": 10, "title": "x"}, "npcs": {}}),
    ))
    .profile(Profile::Mvu)
    .card(v1())
    .history_limits(statecraft_engine::HistoryLimits {
        max_steps: 2,
        max_bytes: 1 << 20,
    })
    .build()
    .unwrap();
    let (initial, version) = v2();
    let update = plan(&store, &initial, &version, CardUpdateOptions::default());
    assert!(store.take_card(&update, version, None).is_committed());
    for hp in [9, 8, 7] {
        let reply = batch(json!([{"op": "assign", "path": ["hero", "hp"], "value": hp}]));
        assert!(store.apply(&reply).is_committed());
    }
    assert_eq!(
        store.card_at(StepId::ROOT).unwrap().fingerprint.as_deref(),
        Some("v2")
    );
}
