//! The incremental schema check against the full one, on generated schemas and batches.
//!
//! The store checks each batch incrementally: it descends through plain object schemas and validates
//! only what the batch touched (`engine/src/schema.rs`). That is sound only for the shapes it claims to
//! understand, and must fall back to a whole-subtree check on everything else. Here schemas are
//! generated with nested objects, arrays, `additionalProperties` (false, true, a schema), `required`,
//! sizes, `$ref`, and the keywords the descent must stop at (`allOf`, `anyOf`, `oneOf`, `not`,
//! `if`/`then`, `patternProperties`, `dependentRequired`). A store with the schema then takes a run of
//! random batches, and for each one the answer must be exactly the full check's: it commits if and
//! only if the state the batch would give (applied without a schema) passes `check_full`, and when it
//! is refused for the schema, it names exactly the locations the full check names.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Map, Value as Json, json};
use statecraft_engine::{Batch, ErrorKind, StateSchema, Store, Value};

const KEYS: [&str; 3] = ["a", "b", "c"];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS.to_vec()).prop_map(str::to_owned)
}

fn leaf_schema() -> impl Strategy<Value = Json> {
    prop::sample::select(vec![
        json!({"type": "integer"}),
        json!({"type": "integer", "minimum": 0}),
        json!({"type": "string"}),
        json!({"type": ["string", "null"]}),
        json!({"enum": [1, 2, "x"]}),
        json!(true),
        json!({}),
        json!({"type": "array", "items": {"type": "integer"}, "maxItems": 2}),
        json!({"$ref": "#/$defs/counter"}),
        json!({"$ref": "#/$defs/thing", "description": "a lone $ref with an annotation"}),
    ])
}

/// A plain object schema over `inner`: what the incremental check descends through.
fn object_schema(inner: BoxedStrategy<Json>) -> impl Strategy<Value = Json> {
    (
        prop::collection::btree_map(key(), inner.clone(), 0..3),
        prop::collection::btree_set(key(), 0..2),
        prop_oneof![
            Just(None),
            Just(Some(json!(false))),
            Just(Some(json!(true))),
            inner.prop_map(Some),
        ],
        prop::option::of(0u64..3),
        any::<bool>(),
    )
        .prop_map(|(properties, required, additional, max, names)| {
            let mut schema = Map::new();
            schema.insert("type".into(), json!("object"));
            schema.insert(
                "properties".into(),
                Json::Object(properties.into_iter().collect()),
            );
            if !required.is_empty() {
                schema.insert("required".into(), json!(required));
            }
            if let Some(additional) = additional {
                schema.insert("additionalProperties".into(), additional);
            }
            if let Some(max) = max {
                schema.insert("maxProperties".into(), json!(max));
            }
            if names {
                schema.insert("propertyNames".into(), json!({"maxLength": 1}));
            }
            Json::Object(schema)
        })
}

fn schema() -> impl Strategy<Value = Json> {
    leaf_schema().prop_recursive(3, 24, 4, |inner| {
        let inner = inner.boxed();
        prop_oneof![
            3 => object_schema(inner.clone()),
            1 => (inner.clone(), inner.clone()).prop_map(|(x, y)| json!({"allOf": [x, y]})),
            1 => inner.clone().prop_map(|x| json!({"anyOf": [x, {"type": "null"}]})),
            1 => inner.clone().prop_map(|x| json!({"oneOf": [x, {"type": "string"}]})),
            1 => inner.clone().prop_map(|x| json!({"allOf": [x], "not": {"type": "string"}})),
            1 => object_schema(inner.clone()).prop_map(|mut x| {
                x["if"] = json!({"required": ["a"]});
                x["then"] = json!({"required": ["b"]});
                x
            }),
            1 => (object_schema(inner.clone()), inner.clone()).prop_map(|(mut x, y)| {
                x["patternProperties"] = json!({"^c": y});
                x
            }),
            1 => object_schema(inner.clone()).prop_map(|mut x| {
                x["dependentRequired"] = json!({"a": ["c"]});
                x
            }),
            1 => inner.prop_map(|x| json!({"type": "array", "items": x, "maxItems": 3})),
        ]
    })
}

/// The state's schema: mostly an object at the root, with the definitions the `$ref`s point to.
fn root_schema() -> impl Strategy<Value = Json> {
    prop_oneof![3 => object_schema(schema().boxed()), 1 => schema()].prop_map(|schema| {
        let defs = json!({
            "counter": {"type": "integer", "minimum": 0},
            "thing": {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}
        });
        match schema {
            Json::Object(mut map) => {
                map.insert("$defs".into(), defs);
                Json::Object(map)
            }
            other => other,
        }
    })
}

fn value() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        (-2i64..4).prop_map(|n| json!(n)),
        prop::sample::select(vec!["x", "", "cc"]).prop_map(|s| json!(s)),
        any::<bool>().prop_map(Json::Bool),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Json::Array),
            prop::collection::btree_map(key(), inner, 0..3)
                .prop_map(|m| Json::Object(m.into_iter().collect())),
        ]
    })
}

fn path(min: usize) -> impl Strategy<Value = Json> {
    prop::collection::vec(
        prop_oneof![
            3 => key().prop_map(Json::String),
            1 => (0usize..2).prop_map(|n| json!(n)),
        ],
        min..4,
    )
    .prop_map(Json::Array)
}

fn instruction() -> impl Strategy<Value = Json> {
    prop_oneof![
        3 => (path(1), value()).prop_map(|(path, value)| json!({"op": "assign", "path": path, "value": value})),
        1 => path(1).prop_map(|path| json!({"op": "delete", "path": path})),
        1 => (path(0), prop::collection::btree_map(key(), value(), 0..3)).prop_map(|(path, map)| {
            json!({"op": "merge", "path": path, "value": Json::Object(map.into_iter().collect())})
        }),
        1 => (path(1), value()).prop_map(|(path, value)| json!({"op": "push", "path": path, "value": value})),
        1 => (path(1), -3i64..3).prop_map(|(path, n)| json!({"op": "increment", "path": path, "value": n})),
    ]
}

/// The locations a list of schema violations names.
fn locations(errors: &[statecraft_engine::BatchError]) -> BTreeSet<String> {
    errors
        .iter()
        .filter(|e| e.kind == ErrorKind::SchemaViolation)
        .map(|e| e.path.clone().unwrap_or_default())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        // A failing case is saved beside this file (`*.proptest-regressions`, committed) and run first
        // from then on, so a failure seen once, in CI or anywhere, is reproduced by every run.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn incremental_and_full_schema_checks_agree(
        source in root_schema(),
        start in prop::collection::btree_map(key(), value(), 0..3),
        batches in prop::collection::vec(prop::collection::vec(instruction(), 1..4), 1..10),
    ) {
        let schema = StateSchema::new(source.clone()).expect("generated schemas compile");
        let start = Value::from(Json::Object(start.into_iter().collect()));
        // Only a state that satisfies the schema can start a store; start from `{}` otherwise, and
        // skip the schemas that `{}` does not satisfy either.
        let start = if schema.check_full(&start).is_empty() { start } else { Value::from(json!({})) };
        prop_assume!(schema.check_full(&start).is_empty());
        let mut store = Store::builder(start).schema(schema.clone()).build().expect("a valid start");
        for instructions in batches {
            let batch = Batch::from_json(&Json::Array(instructions)).expect("generated batches are valid");
            let mut free = Store::new(store.state().clone());
            let would_be = free.apply(&batch).committed().map(|_| free.state().clone());
            let full = would_be.as_ref().map(|state| schema.check_full(state));
            let outcome = store.apply(&batch);
            let context = format!("schema {source}\nbatch {}\nstate {:?}", batch.to_json(), would_be.as_ref().map(Value::to_json));
            match (&full, outcome.rejected().as_deref()) {
                (Some(violations), None) => {
                    prop_assert!(violations.is_empty(), "committed, but the full check finds {violations:?}\n{context}");
                }
                (Some(violations), Some(errors)) => {
                    prop_assert!(!violations.is_empty(), "refused ({errors:?}), but the full check finds nothing\n{context}");
                    prop_assert_eq!(locations(errors), locations(violations), "{}", context);
                }
                (None, refused) => prop_assert!(refused.is_some(), "committed a batch that fails without a schema\n{context}"),
            }
        }
    }
}
