//! MVU text under the `mvu` profiles (docs/mvu.md, "Profiles"): pairs, missing paths, MVU's
//! `Number()`, and a reply applied one command at a time, each decided on the state it meets.

use serde_json::{Value as Json, json};
use statecraft_engine::{Outcome, Profile, Store, Value};
use statecraft_translators::mvu::{self, MvuOptions};
use statecraft_translators::{ExtractOptions, Extraction, extract};

fn options(profile: Profile, state: Json) -> MvuOptions {
    MvuOptions {
        state: Some(Value::from(state)),
        profile,
        ..MvuOptions::default()
    }
}

fn instructions(text: &str, options: &MvuOptions) -> (Json, Vec<&'static str>) {
    let translation = mvu::from_text(text, options);
    let batch: Vec<Json> = translation
        .instructions
        .iter()
        .map(|i| i.to_json())
        .collect();
    let kinds = translation
        .diagnostics
        .iter()
        .map(|d| d.kind.code())
        .collect();
    (Json::Array(batch), kinds)
}

#[test]
fn pairs_are_on_under_mvu_and_old_values_compare_with_element_0() {
    let state = json!({"悠纪": {"好感度": [30, "0-100"]}});
    let (batch, kinds) = instructions(
        "_.set('悠纪.好感度', 30, 35);//聊天",
        &options(Profile::Mvu, state.clone()),
    );
    assert_eq!(
        batch,
        json!([{"op": "assign", "path": ["悠纪", "好感度", 0], "value": 35, "old": 30, "reason": "聊天"}])
    );
    assert!(kinds.is_empty(), "{kinds:?}");
    // The same text under strict writes the bare value over the pair, as before.
    let (batch, _) = instructions(
        "_.set('悠纪.好感度', 30, 35);",
        &options(Profile::Strict, state.clone()),
    );
    assert_eq!(batch[0]["path"], json!(["悠纪", "好感度"]));
    // The card's strictSet turns pairs off even under mvu.
    let strict_set = MvuOptions {
        strict_set: true,
        ..options(Profile::Mvu, state)
    };
    let (batch, _) = instructions("_.add('悠纪.好感度', 5);", &strict_set);
    assert_eq!(batch[0]["path"], json!(["悠纪", "好感度"]));
}

#[test]
fn set_and_add_on_a_missing_path_are_skipped_under_mvu() {
    let state = json!({"player": {"hp": 10}});
    let text = "_.set('player.typo', 1);\n_.add('player.mana', 2);\n_.set('player.hp', 9);";
    let (batch, kinds) = instructions(text, &options(Profile::Mvu, state.clone()));
    assert_eq!(
        batch,
        json!([{"op": "assign", "path": ["player", "hp"], "value": 9}])
    );
    assert_eq!(kinds, vec!["mvu_missing_path", "mvu_missing_path"]);
    // mvu-zod lets `_.set` create (the card's schema decides); `_.add` still needs a number there.
    let (batch, kinds) = instructions(text, &options(Profile::MvuZod, state.clone()));
    assert_eq!(batch.as_array().unwrap().len(), 2);
    assert_eq!(kinds, vec!["mvu_missing_path"]);
    // strict creates the path, as before.
    let (batch, _) = instructions(text, &options(Profile::Strict, state));
    assert_eq!(batch.as_array().unwrap().len(), 3);
}

/// MVU's documentation: "if 'achievements' is {"a":1, "b":2, "c":3}, this line removes '"b":2'".
/// Under the `mvu` profiles a number names an object's key by its position (keys that are array
/// indexes first, in numeric order, as `Object.keys` lists them); out of range is skipped with a
/// warning, as MVU skips it. `strict` reads the number as the key's text.
#[test]
fn remove_by_position_on_objects_and_arrays() {
    let state = json!({"achievements": {"a": 1, "b": 2, "c": 3}, "bag": ["rope", "lamp"],
                       "slots": {"x": 0, "10": "ten", "2": "two"}});
    for profile in [Profile::Mvu, Profile::MvuZod] {
        let (batch, kinds) = instructions(
            "_.remove('achievements', 1);\n_.remove('bag', 1);\n_.remove('slots', 1);\n\
             _.remove('slots', 2);",
            &options(profile, state.clone()),
        );
        assert_eq!(
            batch,
            json!([{"op": "delete", "path": ["achievements", "b"]},
                   {"op": "delete", "path": ["bag", 1]},
                   {"op": "delete", "path": ["slots", "10"]},
                   {"op": "delete", "path": ["slots", "x"]}]),
            "{profile}"
        );
        assert!(kinds.is_empty(), "{kinds:?}");
        let (batch, kinds) = instructions(
            "_.remove('achievements', 3);\n_.remove('bag', 2);",
            &options(profile, state.clone()),
        );
        assert_eq!(batch, json!([]));
        assert_eq!(kinds, vec!["mvu_missing_target", "mvu_missing_target"]);
    }
    let (batch, kinds) = instructions(
        "_.remove('achievements', 1);\n_.remove('bag', 1);\n_.remove('slots', 2);",
        &options(Profile::Strict, state),
    );
    assert_eq!(
        batch,
        json!([{"op": "delete", "path": ["bag", 1]}, {"op": "delete", "path": ["slots", "2"]}])
    );
    assert_eq!(kinds, vec!["mvu_missing_target"]);
}

/// The same through a store: the reply is one step, the command applied, the key gone.
#[test]
fn remove_by_position_applies_under_mvu() {
    let text = "_.remove('achievements', 1);//forgotten";
    let mut store = Store::builder(Value::from(
        json!({"achievements": {"a": 1, "b": 2, "c": 3}}),
    ))
    .profile(Profile::Mvu)
    .build()
    .unwrap();
    let extraction = extract(
        text,
        &ExtractOptions {
            mvu: options(Profile::Mvu, store.state().to_json()),
            ..ExtractOptions::default()
        },
    );
    let (batch, apply) = extraction.applicable().unwrap();
    let batch = batch.clone();
    assert!(store.apply_with(&batch, &apply).is_committed());
    assert_eq!(
        store.state().to_json(),
        json!({"achievements": {"a": 1, "c": 3}})
    );
}

#[test]
fn a_value_written_over_a_number_becomes_one_as_in_mvu() {
    let state = json!({"hp": 10, "gold": [5, "coins"], "name": "x"});
    let (batch, kinds) = instructions(
        "_.set('hp', '50');\n_.set('gold', '0x10');\n_.set('name', '7');\n_.set('hp', 'dead');",
        &options(Profile::Mvu, state),
    );
    assert_eq!(batch[0]["value"], json!(50));
    assert_eq!(batch[1]["value"], json!(16));
    assert_eq!(batch[1]["path"], json!(["gold", 0]));
    assert_eq!(batch[2]["value"], json!("7"), "only over a number");
    assert_eq!(batch[3]["value"], json!(null), "NaN, saved by mvu as null");
    assert_eq!(kinds, vec!["mvu_coerced", "mvu_coerced", "mvu_coerced"]);
}

fn read(text: &str, profile: Profile, state: &Value) -> Extraction {
    extract(
        text,
        &ExtractOptions {
            mvu: MvuOptions {
                state: Some(state.clone()),
                profile,
                ..MvuOptions::default()
            },
            ..ExtractOptions::default()
        },
    )
}

/// Applies `text` to `store` as a host does under the store's profile.
fn apply(store: &mut Store, text: &str) -> (Outcome, Extraction) {
    let mut extraction = read(text, store.profile(), &store.state().clone());
    let (batch, options) = extraction.applicable().expect("valid");
    let batch = batch.clone();
    let mut resolver = extraction.resolver();
    let outcome = store.apply_resolved(
        &batch,
        &options,
        resolver
            .as_mut()
            .map(|r| r as &mut dyn statecraft_engine::Resolve),
    );
    if let Some(resolver) = resolver {
        extraction.absorb(resolver, text);
    }
    (outcome, extraction)
}

fn mvu_store(state: Json) -> Store {
    Store::builder(Value::from(state))
        .profile(Profile::Mvu)
        .build()
        .unwrap()
}

#[test]
fn each_command_is_decided_on_the_state_the_ones_before_it_left() {
    let mut store = mvu_store(json!({"npcs": {}}));
    let text = "_.insert('npcs', 'bob', {\"hp\": 1});\n_.set('npcs.bob.hp', 5);//hit\n_.add('npcs.bob.hp', 2);";
    let (outcome, extraction) = apply(&mut store, text);
    let Outcome::Committed(commit) = outcome else {
        panic!("committed")
    };
    assert_eq!(store.state().to_json(), json!({"npcs": {"bob": {"hp": 7}}}));
    assert_eq!(commit.changes.len(), 3);
    // Read on the state before the reply, the set and the add found no bob; decided again, they did,
    // and their stale warnings are gone.
    let kinds: Vec<&str> = extraction
        .diagnostics
        .iter()
        .map(|d| d.kind.code())
        .collect();
    assert!(!kinds.contains(&"mvu_missing_path"), "{kinds:?}");
}

#[test]
fn a_refused_command_is_skipped_and_named_and_the_rest_stand() {
    let mut store = mvu_store(json!({"hp": 10, "name": "a", "bag": []}));
    let text = "_.set('hp', 8);\n_.add('name', 1);//oops\n_.insert('bag', 'rope');";
    let (outcome, _) = apply(&mut store, text);
    let Outcome::Committed(commit) = outcome else {
        panic!("committed")
    };
    assert_eq!(
        store.state().to_json(),
        json!({"hp": 8, "name": "a", "bag": ["rope"]})
    );
    assert_eq!(commit.warnings.len(), 1);
    let warning = &commit.warnings[0];
    assert_eq!(warning.kind.code(), "type_mismatch");
    assert!(
        warning
            .message
            .starts_with("skipped `_.add('name', 1);//oops`: "),
        "{}",
        warning.message
    );
    // Under strict the same reply is refused whole.
    let mut strict = Store::new(Value::from(json!({"hp": 10, "name": "a", "bag": []})));
    let (outcome, _) = apply(&mut strict, text);
    assert!(!outcome.is_committed());
}

#[test]
fn json_blocks_and_patch_operations_are_commands_of_their_own() {
    let mut store = mvu_store(json!({"a": 1, "s": "x"}));
    let text = "```json\n[{\"op\": \"increment\", \"path\": [\"s\"], \"value\": 1}, {\"op\": \"assign\", \"path\": [\"a\"], \"value\": 2}]\n```\n_.set('a', 3);";
    let (outcome, _) = apply(&mut store, text);
    let Outcome::Committed(commit) = outcome else {
        panic!("committed")
    };
    assert_eq!(store.state().to_json(), json!({"a": 3, "s": "x"}));
    assert_eq!(commit.warnings.len(), 1);
    assert!(
        commit.warnings[0]
            .message
            .starts_with("skipped instruction 0")
    );
}
