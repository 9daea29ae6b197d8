//! End to end across crates: a messy model reply goes through extraction, runs on a store, and its change
//! log round-trips through JSON Patch; undo brings back the exact state before.

use serde_json::{Value as Json, json};
use statecraft_engine::{ApplyOptions, Batch, Outcome, Store, Value};
use statecraft_translators::{ExtractOptions, extract, jsonpatch, mvu};

const REPLY: &str = r#"The goblin swings its club. <think>{"op": "assign", "path": ["player", "hp"], "value": 1}</think>
Use the {name} template for the log.
```json
[
  {"op": "assign", "path": "player.hp", "value": 80, "old": 100, "reason": "hit by a goblin",},
  {'op': 'push', 'path': ['player', 'bag'], 'value': 'goblin ear'}
]
```
_.add('player.gold', 15);//loot
Then the goblin flees."#;

fn state() -> Json {
    json!({"player": {"hp": 100, "gold": 5, "bag": ["rope"]}})
}

#[test]
fn a_messy_reply_lands_exactly_and_its_change_log_round_trips() {
    let extraction = extract(REPLY, &ExtractOptions::default());
    assert!(extraction.valid, "{:#?}", extraction.diagnostics);
    assert_eq!(
        extraction.batch.len(),
        3,
        "the think draft is ignored, the prose braces skipped"
    );
    assert!(extraction.report.score < 100, "cleaning was needed");

    let mut store = Store::new(Value::from(state()));
    let before = store.snapshot();
    let (batch, options) = extraction.applicable().expect("the reply is valid");
    let options = ApplyOptions {
        label: Some("m1".into()),
        ..options
    };
    let Outcome::Committed(commit) = store.apply_with(batch, &options) else {
        panic!("rejected")
    };
    let expected = json!({"player": {"hp": 80, "gold": 20, "bag": ["rope", "goblin ear"]}});
    assert_eq!(store.state().to_json(), expected);

    // The change log as an RFC 6902 document reproduces the commit on the original state.
    let patch = jsonpatch::from_changes(&commit.changes);
    let translated = jsonpatch::from_value(&patch, &Default::default());
    let mut replica = Store::new(Value::from(state()));
    assert!(
        replica.apply(&translated.batch).is_committed(),
        "{:#?}",
        translated.diagnostics
    );
    assert_eq!(replica.state().to_json(), expected);

    store.undo().unwrap();
    assert_eq!(store.state(), before.value());
}

#[test]
fn mvu_text_round_trips_through_instructions() {
    let text = "_.set('悠纪.好感度', 33, 35);//愉快的讨论\n_.set('悠纪.心情', \"开心\");//被夸奖\n";
    let first = mvu::from_text(text, &Default::default());
    let batch = Batch::new(first.instructions.clone());
    let (emitted, problems) = mvu::to_text(&batch);
    assert!(problems.is_empty(), "{problems:#?}");
    let second = mvu::from_text(&emitted, &Default::default());
    assert_eq!(first.instructions, second.instructions);

    let mut store = Store::new(Value::from(json!({"悠纪": {"好感度": 30, "心情": "平静"}})));
    let options = ApplyOptions {
        policies: Some(mvu::MvuTranslation::policies()),
        ..ApplyOptions::default()
    };
    let commit = store
        .apply_with(&batch, &options)
        .committed()
        .expect("mvu ignores stale old values");
    assert_eq!(
        store.state().to_json(),
        json!({"悠纪": {"好感度": 35, "心情": "开心"}})
    );
    assert_eq!(
        commit.warnings.len(),
        1,
        "the stale old value 33 is reported: {:#?}",
        commit.warnings
    );
}

#[test]
fn an_extraction_applies_with_the_policies_its_reply_calls_for() {
    // MVU ignores old values and models often write stale ones (docs/instructions.md, "Old-value checks"): the extraction's options
    // make the stale `old` a warning, where the store's own policies would reject the batch.
    let reply = "<UpdateVariable>\n_.set('player.hp', 90, 70);//hit\n</UpdateVariable>";
    let extraction = extract(reply, &ExtractOptions::default());
    let (batch, options) = extraction.applicable().expect("the reply is valid");
    let mut store = Store::new(Value::from(state()));
    assert!(
        !store.apply(batch).is_committed(),
        "without the reply's policies the stale old value is refused, and nothing changes"
    );
    let commit = store
        .apply_with(batch, &options)
        .committed()
        .expect("applied with a warning");
    assert_eq!(commit.warnings.len(), 1, "{:#?}", commit.warnings);
    assert_eq!(store.state().to_json()["player"]["hp"], json!(70));

    let invalid = extract(
        r#"[{"op": "assign", "path": ["player", "hp"]}]"#,
        &ExtractOptions::default(),
    );
    assert!(
        invalid.applicable().is_none(),
        "an invalid instruction makes the reply unappliable"
    );
}
