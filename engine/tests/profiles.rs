//! Profiles in the store: `strict` all or nothing; `mvu` and `mvu-zod` one command at a time, a
//! refused one skipped with a warning, the automatic schema enforced, and commands decided again on
//! the state the commands before them left (docs/mvu.md, "Profiles").

use std::ops::Range;

use serde_json::{Value as Json, json};
use statecraft_engine::{
    ApplyOptions, Batch, ErrorKind, Instruction, Outcome, Profile, Resolve, StateSchema, Store,
    StructureSchema, Value,
};

fn batch(json: Json) -> Batch {
    Batch::from_json(&json).unwrap()
}

fn store(state: Json, profile: Profile) -> Store {
    Store::builder(Value::from(state))
        .profile(profile)
        .build()
        .unwrap()
}

/// MVU's automatic schema of `{"player": {"hp", "bag": [..]}, "npcs": {..}}` with `npcs` open and
/// templated, `bag` open, the rest locked.
fn structure() -> StructureSchema {
    StructureSchema::new(json!({
        "type": "object", "extensible": false,
        "properties": {
            "player": {"type": "object", "required": true, "extensible": false, "properties": {
                "hp": {"type": "number", "required": true},
                "bag": {"type": "array", "required": true, "extensible": true, "elementType": {"type": "string"}}
            }},
            "npcs": {"type": "object", "required": true, "extensible": true,
                     "template": {"mood": "calm", "trust": 0}, "properties": {}}
        }
    }))
    .unwrap()
}

fn card_store(profile: Profile) -> Store {
    Store::builder(Value::from(
        json!({"player": {"hp": 10, "bag": ["rope"]}, "npcs": {}}),
    ))
    .profile(profile)
    .structure(structure())
    .build()
    .unwrap()
}

#[test]
fn strict_refuses_the_whole_batch_as_before() {
    let mut store = store(json!({"a": 1, "s": "x"}), Profile::Strict);
    let outcome = store.apply(&batch(json!([
        {"op": "assign", "path": ["a"], "value": 2},
        {"op": "increment", "path": ["s"], "value": 1}
    ])));
    assert!(!outcome.is_committed());
    assert_eq!(store.state().to_json(), json!({"a": 1, "s": "x"}));
}

#[test]
fn mvu_skips_a_refused_command_and_keeps_the_rest_in_one_step() {
    let mut store = store(json!({"a": 1, "s": "x"}), Profile::Mvu);
    let Outcome::Committed(commit) = store.apply(&batch(json!([
        {"op": "assign", "path": ["a"], "value": 2},
        {"op": "increment", "path": ["s"], "value": 1},
        {"op": "assign", "path": ["b"], "value": 3}
    ]))) else {
        panic!("committed")
    };
    assert_eq!(store.state().to_json(), json!({"a": 2, "s": "x", "b": 3}));
    assert!(commit.step.is_some(), "one step");
    assert_eq!(commit.changes.len(), 2);
    let skipped = &commit.warnings[0];
    assert_eq!(skipped.kind, ErrorKind::TypeMismatch);
    assert!(
        skipped.message.starts_with("skipped instruction 1: "),
        "{}",
        skipped.message
    );
    store.undo().unwrap();
    assert_eq!(store.state().to_json(), json!({"a": 1, "s": "x"}));
}

#[test]
fn mvu_skips_invalid_instructions_and_warns_on_old_mismatches() {
    let mut store = store(json!({"a": 1}), Profile::Mvu);
    let Outcome::Committed(commit) = store.apply(&batch(json!([
        {"op": "assign", "path": ["a"], "value": 2, "old": 7},
        {"op": "assign", "path": ["__proto__"], "value": 1}
    ]))) else {
        panic!("committed")
    };
    assert_eq!(store.state().to_json(), json!({"a": 2}));
    let kinds: Vec<ErrorKind> = commit.warnings.iter().map(|w| w.kind).collect();
    assert_eq!(
        kinds,
        vec![ErrorKind::OldMismatch, ErrorKind::ForbiddenSegment]
    );
}

#[test]
fn a_profile_named_by_the_batch_overrides_the_stores() {
    let mut store = store(json!({"a": 1, "s": "x"}), Profile::Strict);
    let bad = batch(json!([
        {"op": "assign", "path": ["a"], "value": 2},
        {"op": "increment", "path": ["s"], "value": 1}
    ]));
    let options = ApplyOptions {
        profile: Some(Profile::Mvu),
        ..ApplyOptions::default()
    };
    assert!(store.apply_with(&bad, &options).is_committed());
    assert_eq!(store.state().to_json()["a"], 2);
}

#[test]
fn each_command_meets_the_json_schema_on_its_own() {
    let schema = StateSchema::new(json!({
        "type": "object",
        "properties": {"hp": {"type": "integer", "minimum": 0, "maximum": 100}}
    }))
    .unwrap();
    let replies = json!([
        {"op": "assign", "path": ["hp"], "value": 150},
        {"op": "assign", "path": ["mood"], "value": "ok"}
    ]);
    let mut mvu = Store::builder(Value::from(json!({"hp": 50})))
        .profile(Profile::Mvu)
        .schema(schema.clone())
        .build()
        .unwrap();
    let Outcome::Committed(commit) = mvu.apply(&batch(replies.clone())) else {
        panic!("committed")
    };
    assert_eq!(mvu.state().to_json(), json!({"hp": 50, "mood": "ok"}));
    assert_eq!(commit.warnings[0].kind, ErrorKind::SchemaViolation);
    // Under mvu-zod the schema repairs what it can, command by command.
    let mut zod = Store::builder(Value::from(json!({"hp": 50})))
        .profile(Profile::MvuZod)
        .schema(schema)
        .build()
        .unwrap();
    let Outcome::Committed(commit) = zod.apply(&batch(replies)) else {
        panic!("committed")
    };
    assert_eq!(zod.state().to_json(), json!({"hp": 100, "mood": "ok"}));
    assert_eq!(commit.warnings[0].kind, ErrorKind::SchemaRepaired);
}

#[test]
fn the_automatic_schema_locks_and_templates_under_mvu_only() {
    let reply = batch(json!([
        {"op": "assign", "path": ["player", "mana"], "value": 5},
        {"op": "delete", "path": ["player", "hp"]},
        {"op": "assign", "path": ["npcs", "bob"], "value": {"mood": "angry"}},
        {"op": "push", "path": ["player", "bag"], "value": "lamp"}
    ]));
    let mut mvu = card_store(Profile::Mvu);
    let Outcome::Committed(commit) = mvu.apply(&reply) else {
        panic!("committed")
    };
    assert_eq!(
        mvu.state().to_json(),
        json!({"player": {"hp": 10, "bag": ["rope", "lamp"]},
               "npcs": {"bob": {"mood": "angry", "trust": 0}}})
    );
    let skipped: Vec<(ErrorKind, Option<&str>)> = commit
        .warnings
        .iter()
        .map(|w| (w.kind, w.path.as_deref()))
        .collect();
    assert_eq!(
        skipped,
        vec![
            (ErrorKind::SchemaViolation, Some("/player")),
            (ErrorKind::SchemaViolation, Some("/player"))
        ]
    );
    // Strict ignores the automatic schema: the batch runs as written.
    let mut strict = card_store(Profile::Strict);
    assert!(strict.apply(&reply).is_committed());
    assert_eq!(
        strict.state().to_json()["npcs"]["bob"],
        json!({"mood": "angry"})
    );
    assert!(strict.state().to_json()["player"].get("hp").is_none());
}

/// Commands decided on the state they meet: `_.set` of a path skips when nothing is there; a
/// command without a path keeps the batch's own instructions.
struct SetIfPresent {
    units: Vec<Range<usize>>,
    commands: Vec<(&'static str, i64)>,
}

impl Resolve for SetIfPresent {
    fn units(&self) -> &[Range<usize>] {
        &self.units
    }

    fn resolve(&mut self, unit: usize, state: &Value) -> Option<Vec<Instruction>> {
        let (path, value) = self.commands[unit];
        if path.is_empty() {
            return None;
        }
        let path = statecraft_engine::Path::from_pointer(path).unwrap();
        Some(match state.lookup(path.segments()) {
            Some(_) => vec![Instruction::assign(path, value)],
            None => Vec::new(),
        })
    }

    fn describe(&self, unit: usize) -> Option<String> {
        Some(format!("`_.set('{}')`", self.commands[unit].0))
    }
}

#[test]
fn a_resolver_decides_each_command_on_the_state_before_it() {
    let mut store = store(json!({"npcs": {}}), Profile::Mvu);
    // As resolved on the state before the reply: the insert, and nothing for the set (no bob yet).
    let reply = batch(json!([
        {"op": "assign", "path": ["npcs", "bob"], "value": {"hp": 1}}
    ]));
    let mut resolver = SetIfPresent {
        units: vec![0..0, 0..1, 1..1],
        commands: vec![("/npcs/bob/hp", 7), ("", 0), ("/npcs/bob/hp", 9)],
    };
    // The first set finds no bob; the insert makes him; the last set finds him.
    let Outcome::Committed(_) =
        store.apply_resolved(&reply, &ApplyOptions::default(), Some(&mut resolver))
    else {
        panic!("committed")
    };
    assert_eq!(store.state().to_json(), json!({"npcs": {"bob": {"hp": 9}}}));
    // Resolution follows the state: the set after an insert sees the inserted value.
    let mut store = store_with_bob();
    let mut resolver = SetIfPresent {
        units: std::iter::once(0..0).collect(),
        commands: vec![("/npcs/bob/hp", 7)],
    };
    assert!(
        store
            .apply_resolved(
                &batch(json!([])),
                &ApplyOptions::default(),
                Some(&mut resolver)
            )
            .is_committed()
    );
    assert_eq!(store.state().to_json(), json!({"npcs": {"bob": {"hp": 7}}}));
}

fn store_with_bob() -> Store {
    store(json!({"npcs": {"bob": {"hp": 1}}}), Profile::Mvu)
}

#[test]
fn a_refused_command_without_an_instruction_is_named_and_points_nowhere() {
    struct Refused(Vec<Range<usize>>);
    impl Resolve for Refused {
        fn units(&self) -> &[Range<usize>] {
            &self.0
        }
        fn resolve(&mut self, _: usize, _: &Value) -> Option<Vec<Instruction>> {
            Some(vec![
                Instruction::new(
                    statecraft_engine::Op::Increment,
                    statecraft_engine::path!["s"],
                )
                .with_value(1),
            ])
        }
        fn describe(&self, _: usize) -> Option<String> {
            Some("`_.add('s', 1)`".to_owned())
        }
    }
    let mut store = store(json!({"s": "x"}), Profile::Mvu);
    let Outcome::Committed(commit) = store.apply_resolved(
        &batch(json!([])),
        &ApplyOptions::default(),
        Some(&mut Refused(std::iter::once(0..0).collect())),
    ) else {
        panic!("committed")
    };
    assert_eq!(commit.warnings.len(), 1);
    assert_eq!(commit.warnings[0].instruction, None);
    assert!(
        commit.warnings[0]
            .message
            .starts_with("skipped `_.add('s', 1)`: "),
        "{}",
        commit.warnings[0].message
    );
    // Units that do not cover the batch are the host's mistake, refused whole.
    let mut store = store_with_bob();
    let outcome = store.apply_resolved(
        &batch(json!([{"op": "get", "path": ["npcs"]}])),
        &ApplyOptions::default(),
        Some(&mut Refused(std::iter::once(0..0).collect())),
    );
    assert!(!outcome.is_committed());
}

/// A zod card: its `$meta`-less InitVar locks every container in the automatic schema, but its JSON
/// Schema (a zod record: `additionalProperties`) lets the model add and remove entries. Under
/// `mvu-zod` the JSON Schema decides; the automatic schema does not apply.
#[test]
fn under_mvu_zod_the_json_schema_decides_what_is_added_or_removed() {
    let locked = StructureSchema::new(json!({
        "type": "object", "extensible": false,
        "properties": {
            "npcs": {"type": "object", "required": true, "extensible": false, "properties": {
                "bob": {"type": "object", "required": true, "extensible": false,
                        "properties": {"trust": {"type": "number", "required": true}}}
            }}
        }
    }))
    .unwrap();
    let record = StateSchema::new(json!({
        "type": "object", "required": ["npcs"],
        "properties": {"npcs": {"type": "object",
            "additionalProperties": {"type": "object", "required": ["trust"],
                                     "properties": {"trust": {"type": "number"}}}}}
    }))
    .unwrap();
    let reply = batch(json!([
        {"op": "delete", "path": ["npcs", "bob"]},
        {"op": "assign", "path": ["npcs", "amy"], "value": {"trust": 2}},
        {"op": "assign", "path": ["npcs", "cat"], "value": {"mood": "shy"}},
        {"op": "delete", "path": ["npcs"]}
    ]));
    let game = |profile: Profile| {
        Store::builder(Value::from(json!({"npcs": {"bob": {"trust": 1}}})))
            .profile(profile)
            .schema(record.clone())
            .structure(locked.clone())
            .build()
            .unwrap()
    };
    let mut zod = game(Profile::MvuZod);
    let Outcome::Committed(commit) = zod.apply(&reply) else {
        panic!("committed")
    };
    assert_eq!(
        zod.state().to_json(),
        json!({"npcs": {"amy": {"trust": 2}}})
    );
    let kinds: Vec<ErrorKind> = commit.warnings.iter().map(|w| w.kind).collect();
    assert_eq!(
        kinds,
        vec![ErrorKind::SchemaViolation, ErrorKind::SchemaViolation],
        "the record's value without `trust`, and `npcs` itself, which the schema requires"
    );
    // Under mvu the automatic schema locks `npcs`: no entry leaves or enters.
    let mut mvu = game(Profile::Mvu);
    assert!(mvu.apply(&reply).is_committed());
    assert_eq!(
        mvu.state().to_json(),
        json!({"npcs": {"bob": {"trust": 1}}})
    );
}
