//! Store benchmarks against baselines in the same run (see BENCHMARKS.md).
//!
//! State: 1,000 entities x 100 fields. Batches: 10 single-field assigns at scattered places. Baselines:
//! (a) `serde_json` with a deep clone per step for history, (b) `serde_json` with the `json-patch` crate
//! and inverse patches for history. Also: undo/redo of a 10-op step at 1k and 1M keys, schema checks
//! with and without the incremental approach. Retained history memory is measured by
//! `history_memory.rs`, whose counting allocator would otherwise slow every timed allocation here.

use statecraft_test_support::baseline;
use statecraft_test_support::entities as common;

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, Policies, SchemaViolation, StateSchema, Store, Value};

use baseline::{PatchHistory, patch_of};
use common::{ENTITIES, FIELDS, engine_batch, state_json, unbounded, writes};

fn apply_with_history(c: &mut Criterion) {
    let json_state = state_json(ENTITIES, FIELDS);
    let plan = writes(4_096, ENTITIES, FIELDS);
    let batches: Vec<Batch> = plan.iter().map(|w| engine_batch(w)).collect();
    let patches: Vec<json_patch::Patch> = plan.iter().map(|w| patch_of(w)).collect();
    let mut group = c.benchmark_group("apply 10 assigns, history kept (1k entities x 100 fields)");

    group.bench_function("statecraft Store::apply", |b| {
        let mut store = Store::builder(Value::from(&json_state))
            .history_limits(unbounded())
            .build()
            .unwrap();
        let mut i = 0;
        b.iter(|| {
            let outcome = store.apply(&batches[i % batches.len()]);
            i += 1;
            black_box(outcome.is_committed())
        });
    });

    group.bench_function("baseline (a) serde_json + deep clone per step", |b| {
        let mut doc = json_state.clone();
        let mut history: std::collections::VecDeque<Json> = std::collections::VecDeque::new();
        let mut i = 0;
        b.iter(|| {
            history.push_back(doc.clone());
            if history.len() > 64 {
                history.pop_front();
            }
            for &(e, f, v) in &plan[i % plan.len()] {
                doc["entities"][format!("e{e}")][format!("f{f}")] = json!(v);
            }
            i += 1;
            black_box(history.len())
        });
    });

    group.bench_function(
        "baseline (b) serde_json + json-patch + inverse patches",
        |b| {
            let mut baseline = PatchHistory::new(json_state.clone());
            let mut i = 0;
            b.iter(|| {
                let kept = baseline.apply(&patches[i % patches.len()]);
                i += 1;
                black_box(kept)
            });
        },
    );
    group.finish();
}

fn undo_redo(c: &mut Criterion) {
    let mut group = c.benchmark_group("undo + redo of a 10-op step");
    for (label, entities, fields) in [("1k keys", 10, 100), ("1M keys", 10_000, 100)] {
        let json_state = state_json(entities, fields);
        let mut store = Store::builder(Value::from(&json_state)).build().unwrap();
        drop(json_state);
        let batch = engine_batch(&writes(1, entities, fields)[0]);
        assert!(store.apply(&batch).is_committed());
        group.bench_function(label, |b| {
            b.iter(|| {
                store.undo().unwrap();
                store.redo().unwrap();
            });
        });
    }
    group.finish();
}

fn schema_checks(c: &mut Criterion) {
    let schema_json = json!({
        "type": "object",
        "properties": {"entities": {"type": "object", "additionalProperties": {"$ref": "#/$defs/entity"}}},
        "$defs": {"entity": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}}
    });
    let json_state = state_json(ENTITIES, FIELDS);
    let plan = writes(1_024, ENTITIES, FIELDS);
    let batches: Vec<Batch> = plan.iter().map(|w| engine_batch(w)).collect();
    let mut group = c.benchmark_group("schema check per batch (1k entities x 100 fields)");
    group.bench_function("full re-validation", |b| {
        let schema = StateSchema::new(schema_json.clone()).unwrap();
        let mut store = Store::builder(Value::from(&json_state)).build().unwrap();
        let mut i = 0;
        b.iter(|| {
            assert!(store.apply(&batches[i % batches.len()]).is_committed());
            i += 1;
            black_box(schema.check_full(store.state()).len())
        });
    });
    group.bench_function("incremental (Store with schema)", |b| {
        let schema = StateSchema::new(schema_json.clone()).unwrap();
        let mut store = Store::builder(Value::from(&json_state))
            .schema(schema)
            .build()
            .unwrap();
        let mut i = 0;
        b.iter(|| {
            let outcome = store.apply(&batches[i % batches.len()]);
            i += 1;
            black_box(outcome.is_committed())
        });
    });
    // The same batches under `schema_violation = repair`: nothing violates, so nothing is repaired;
    // the policy may cost no more than the check (issue 17: under 5%).
    group.bench_function(
        "incremental, schema_violation = repair, nothing to repair",
        |b| {
            let schema = StateSchema::new(schema_json.clone()).unwrap();
            let mut store = Store::builder(Value::from(&json_state))
                .schema(schema)
                .policies(Policies {
                    schema_violation: SchemaViolation::Repair,
                    ..Policies::default()
                })
                .build()
                .unwrap();
            let mut i = 0;
            b.iter(|| {
                let outcome = store.apply(&batches[i % batches.len()]);
                i += 1;
                black_box(outcome.is_committed())
            });
        },
    );
    group.bench_function("no schema (reference)", |b| {
        let mut store = Store::builder(Value::from(&json_state)).build().unwrap();
        let mut i = 0;
        b.iter_batched(
            || (),
            |()| {
                let outcome = store.apply(&batches[i % batches.len()]);
                i += 1;
                black_box(outcome.is_committed())
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(3));
    targets = apply_with_history, undo_redo, schema_checks
}
criterion_main!(benches);
