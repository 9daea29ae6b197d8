//! The `schema_violation` policy: what `repair` mends (coercion, clamping, defaults, enum case), how
//! each repair is recorded (a change of the same step, a warning with the path and the rule), what it
//! leaves to reject, and, as properties, that whatever commits under `repair` satisfies the schema,
//! that repairable batches never reject, and that `reject` behaves exactly as a plain check.

use proptest::prelude::*;
use serde_json::{Value as Json, json};
use statecraft_engine::{
    ApplyOptions, Batch, ErrorKind, Outcome, Policies, SchemaViolation, StateSchema, Store, Value,
};

use statecraft_test_support::unchanged;

use unchanged::Unchanged;

fn schema() -> StateSchema {
    StateSchema::new(json!({
        "type": "object",
        "required": ["hp", "mood", "alive"],
        "additionalProperties": false,
        "properties": {
            "hp": {"type": "integer", "minimum": 0, "maximum": 100},
            "gold": {"type": "number", "minimum": 0},
            "mood": {"enum": ["calm", "angry", "happy", "Angry Bird"]},
            "alive": {"type": "boolean"},
            "stats": {"$ref": "#/$defs/stats"},
            "bag": {"type": "array", "items": {"type": "integer", "maximum": 9}},
            "name": {"type": "string", "maxLength": 10}
        },
        "$defs": {
            "stats": {
                "type": "object",
                "required": ["str"],
                "properties": {"str": {"type": "integer", "minimum": 1, "default": 10}}
            }
        }
    }))
    .expect("the schema compiles")
}

fn start() -> Json {
    json!({"hp": 50, "mood": "calm", "alive": true, "bag": [1]})
}

fn store(policy: SchemaViolation) -> Store {
    Store::builder(Value::from_json(&start()))
        .schema(schema())
        .policies(Policies {
            schema_violation: policy,
            ..Policies::default()
        })
        .build()
        .expect("the state fits")
}

fn assign(path: Json, value: Json) -> Json {
    json!({"op": "assign", "path": path, "value": value})
}

fn apply(store: &mut Store, instructions: Vec<Json>) -> Outcome {
    let batch = Batch::from_json(&Json::Array(instructions)).expect("a valid batch");
    store.apply(&batch)
}

#[test]
fn repairs_mend_what_the_schema_says_how_and_each_is_a_change_and_a_warning() {
    let mut store = store(SchemaViolation::Repair);
    let outcome = apply(
        &mut store,
        vec![
            assign(json!(["hp"]), json!(" 180 ")),
            assign(json!(["gold"]), json!("-2.5")),
            assign(json!(["mood"]), json!("  ANGRY ")),
            assign(json!(["alive"]), json!("False")),
            assign(json!(["stats"]), json!({})),
            assign(json!(["bag", 1]), json!("12")),
        ],
    );
    let Outcome::Committed(commit) = outcome else {
        panic!("expected a commit: {outcome:?}")
    };
    assert_eq!(
        store.state().to_json(),
        json!({"hp": 100, "gold": 0, "mood": "angry", "alive": false, "stats": {"str": 10}, "bag": [1, 9]})
    );
    let mut repaired: Vec<(String, String)> = commit
        .warnings
        .iter()
        .map(|w| {
            assert_eq!(w.kind, ErrorKind::SchemaRepaired);
            let rule = w.message.split(['(', ')']).nth(1).unwrap_or("").to_owned();
            (w.path.clone().expect("a path"), rule)
        })
        .collect();
    repaired.sort();
    assert_eq!(
        repaired,
        [
            ("/alive", "coerce_type"),
            ("/bag/1", "clamp_maximum"),
            ("/gold", "clamp_minimum"),
            ("/hp", "clamp_maximum"),
            ("/mood", "enum_case"),
            ("/stats/str", "default"),
        ]
        .map(|(p, r)| (p.to_owned(), r.to_owned()))
    );
    // Six instructions and six repairs, each repair an `assign` with its reason.
    assert_eq!(commit.changes.len(), 12);
    assert!(commit.changes[6..].iter().all(|c| {
        c.reason
            .as_deref()
            .is_some_and(|r| r.starts_with("schema repair: "))
    }));
    // Undo reverts the repairs with the rest of the step.
    store.undo().expect("undo");
    assert_eq!(store.state().to_json(), start());
}

#[test]
fn what_no_rule_mends_still_rejects_with_every_violation_and_changes_nothing() {
    let mut store = store(SchemaViolation::Repair);
    let unchanged = Unchanged::of(&store);
    let outcome = apply(
        &mut store,
        vec![
            assign(json!(["hp"]), json!("lots")),
            assign(json!(["mood"]), json!("bored")),
            assign(json!(["name"]), json!("a name far too long")),
            assign(json!(["extra"]), json!(1)),
            assign(json!(["gold"]), json!("12")),
        ],
    );
    let errors = outcome.rejected().expect("rejected");
    let mut paths: Vec<&str> = errors
        .iter()
        .filter(|e| e.kind == ErrorKind::SchemaViolation)
        .filter_map(|e| e.path.as_deref())
        .collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(paths, ["", "/hp", "/mood", "/name"], "{errors:?}");
    unchanged.assert(&store, "a schema violation");
}

#[test]
fn an_enum_match_must_be_unique_and_a_string_allowed_by_the_type_is_left_alone() {
    let schema = StateSchema::new(json!({
        "type": "object",
        "properties": {
            "a": {"enum": ["Yes", "YES"]},
            "b": {"type": ["string", "integer"], "maximum": 5},
            "c": {"type": "integer"}
        }
    }))
    .expect("compiles");
    let mut store = Store::builder(Value::object())
        .schema(schema)
        .policies(Policies {
            schema_violation: SchemaViolation::Repair,
            ..Policies::default()
        })
        .build()
        .expect("fits");
    // `yes` matches two members: no guess.
    let errors = apply(&mut store, vec![assign(json!(["a"]), json!("yes"))])
        .rejected()
        .expect("rejected");
    assert_eq!(errors[0].path.as_deref(), Some("/a"));
    // A string is allowed at `b`, so "80" stays a string (and `maximum` does not apply to it).
    let outcome = apply(&mut store, vec![assign(json!(["b"]), json!("80"))]);
    assert!(outcome.is_committed());
    assert_eq!(store.state().to_json(), json!({"b": "80"}));
    // An integer is never made from a fraction.
    let errors = apply(&mut store, vec![assign(json!(["c"]), json!("2.5"))])
        .rejected()
        .expect("rejected");
    assert_eq!(errors[0].path.as_deref(), Some("/c"));
}

#[test]
fn the_policy_can_be_set_per_batch() {
    let mut store = store(SchemaViolation::Reject);
    let batch = Batch::from_json(&json!([assign(json!(["hp"]), json!(120))])).expect("valid");
    let errors = store
        .apply(&batch)
        .rejected()
        .expect("rejected by the store's policy");
    assert_eq!(errors[0].kind, ErrorKind::SchemaViolation);
    let options = ApplyOptions {
        policies: Some(Policies {
            schema_violation: SchemaViolation::Repair,
            ..Policies::default()
        }),
        ..ApplyOptions::default()
    };
    assert!(store.apply_with(&batch, &options).is_committed());
    assert_eq!(store.state().to_json()["hp"], json!(100));
}

/// One write of the property test: where, what, and whether a rule mends it.
fn write() -> impl Strategy<Value = (Json, bool)> {
    prop_oneof![
        (-500i64..500).prop_map(|n| (assign(json!(["hp"]), json!(n)), true)),
        (-500i64..500).prop_map(|n| (assign(json!(["hp"]), json!(format!(" {n}"))), true)),
        Just((assign(json!(["hp"]), json!("many")), false)),
        Just((assign(json!(["hp"]), json!(1.5)), false)),
        (-50.0f64..50.0).prop_map(|x| (assign(json!(["gold"]), json!(x)), true)),
        (-50.0f64..50.0).prop_map(|x| (assign(json!(["gold"]), json!(x.to_string())), true)),
        prop::sample::select(vec!["calm", " Happy", "ANGRY ", "angry bird"])
            .prop_map(|m| (assign(json!(["mood"]), json!(m)), true)),
        Just((assign(json!(["mood"]), json!("bored")), false)),
        prop::sample::select(vec![json!(true), json!("TRUE"), json!(" false")])
            .prop_map(|b| (assign(json!(["alive"]), b), true)),
        Just((assign(json!(["alive"]), json!("maybe")), false)),
        Just((assign(json!(["stats"]), json!({})), true)),
        (-5i64..5).prop_map(|n| (assign(json!(["stats"]), json!({"str": n})), true)),
        (0i64..20).prop_map(|n| (json!({"op": "push", "path": ["bag"], "value": n}), true)),
        Just((assign(json!(["name"]), json!("far too long a name")), false)),
        Just((assign(json!(["extra"]), json!(1)), false)),
        Just((json!({"op": "delete", "path": ["mood"]}), false)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn repair_commits_only_valid_states_and_never_rejects_what_it_can_mend(
        writes in prop::collection::vec(write(), 0..8)
    ) {
        let repairable = writes.iter().all(|(_, ok)| *ok);
        let instructions: Vec<Json> = writes.into_iter().map(|(w, _)| w).collect();
        let mut store = store(SchemaViolation::Repair);
        let unchanged = Unchanged::of(&store);
        match apply(&mut store, instructions) {
            Outcome::Committed(_) => {
                let errors = schema().check_full(store.state());
                prop_assert!(errors.is_empty(), "committed an invalid state: {:?}", errors);
            }
            Outcome::Rejected(rejection) => {
                prop_assert!(!repairable, "rejected a repairable batch: {:?}", rejection.errors);
                let difference = unchanged.differs(&store);
                prop_assert!(difference.is_none(), "{}", difference.unwrap_or_default());
            }
        }
    }

    #[test]
    fn reject_is_exactly_a_plain_check_of_the_would_be_state(
        writes in prop::collection::vec(write(), 0..8)
    ) {
        let instructions: Vec<Json> = writes.into_iter().map(|(w, _)| w).collect();
        let mut plain = Store::new(Value::from_json(&start()));
        let mut checked = store(SchemaViolation::Reject);
        let unchecked = apply(&mut plain, instructions.clone());
        let outcome = apply(&mut checked, instructions);
        match (unchecked, outcome) {
            (Outcome::Committed(free), Outcome::Committed(commit)) => {
                prop_assert!(schema().check_full(plain.state()).is_empty());
                prop_assert_eq!(plain.state(), checked.state());
                prop_assert_eq!(&free.changes[..], &commit.changes[..]);
                prop_assert!(commit.warnings.iter().all(|w| w.kind != ErrorKind::SchemaRepaired));
            }
            (Outcome::Committed(_), Outcome::Rejected(rejection)) => {
                prop_assert!(!schema().check_full(plain.state()).is_empty());
                prop_assert!(rejection.errors.iter().all(|e| e.kind == ErrorKind::SchemaViolation));
            }
            (Outcome::Rejected(a), Outcome::Rejected(b)) => prop_assert_eq!(a.errors, b.errors),
            (Outcome::Rejected(a), Outcome::Committed(_)) => {
                prop_assert!(false, "committed what runs nowhere: {:?}", a.errors)
            }
        }
    }
}
