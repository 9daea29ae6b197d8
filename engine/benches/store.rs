//! Store benchmarks against baselines in the same run (see BENCHMARKS.md).
//!
//! State: 1,000 entities x 100 fields. Batches: 10 single-field assigns at scattered places. Baselines:
//! (a) `serde_json` with a deep clone per step for history, (b) `serde_json` with the `json-patch` crate
//! and inverse patches for history. Also: undo/redo of a 10-op step at 1k and 1M keys, schema checks
//! with and without the incremental approach, and retained history bytes per op (counted by a global
//! allocator, printed before the timings).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value as Json, json};
use statecraft_engine::{
    Batch, HistoryLimits, Instruction, Path, Policies, SchemaViolation, Segment, StateSchema,
    Store, Value,
};

/// Counts live heap bytes so that retained history can be measured, not estimated.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: delegates to the system allocator and only adds bookkeeping.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const ENTITIES: usize = 1_000;
const FIELDS: usize = 100;
const BATCH: usize = 10;

fn state_json(entities: usize, fields: usize) -> Json {
    let mut root = serde_json::Map::new();
    for e in 0..entities {
        let mut entity = serde_json::Map::new();
        for f in 0..fields {
            entity.insert(format!("f{f}"), json!(f));
        }
        root.insert(format!("e{e}"), Json::Object(entity));
    }
    json!({ "entities": root })
}

/// A cheap deterministic generator, so every variant sees the same writes.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % bound
    }
}

/// `count` batches of 10 scattered assigns, as (entity, field, value) triples.
fn writes(count: usize, entities: usize, fields: usize) -> Vec<Vec<(usize, usize, i64)>> {
    let mut rng = Lcg(7);
    (0..count)
        .map(|i| {
            (0..BATCH)
                .map(|j| (rng.next(entities), rng.next(fields), (i * BATCH + j) as i64))
                .collect()
        })
        .collect()
}

fn engine_batch(writes: &[(usize, usize, i64)]) -> Batch {
    Batch::new(
        writes
            .iter()
            .map(|&(e, f, v)| {
                let path = Path::from(vec![
                    Segment::key("entities"),
                    Segment::key(&format!("e{e}")),
                    Segment::key(&format!("f{f}")),
                ]);
                Instruction::assign(path, v)
            })
            .collect(),
    )
}

fn patch_of(writes: &[(usize, usize, i64)]) -> json_patch::Patch {
    let ops: Vec<Json> = writes
        .iter()
        .map(|&(e, f, v)| json!({"op": "replace", "path": format!("/entities/e{e}/f{f}"), "value": v}))
        .collect();
    serde_json::from_value(Json::Array(ops)).unwrap()
}

fn unbounded() -> HistoryLimits {
    HistoryLimits {
        max_steps: usize::MAX,
        max_bytes: usize::MAX,
    }
}

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
            let mut doc = json_state.clone();
            let mut history: Vec<json_patch::Patch> = Vec::new();
            let mut i = 0;
            b.iter(|| {
                let patch = &patches[i % patches.len()];
                let inverse: Vec<Json> = patch
                    .0
                    .iter()
                    .rev()
                    .map(|op| {
                        let json_patch::PatchOperation::Replace(op) = op else {
                            unreachable!()
                        };
                        let old = doc.pointer(op.path.as_str()).cloned().unwrap_or(Json::Null);
                        json!({"op": "replace", "path": op.path.to_string(), "value": old})
                    })
                    .collect();
                json_patch::patch(&mut doc, patch).unwrap();
                history.push(serde_json::from_value(Json::Array(inverse)).unwrap());
                i += 1;
                black_box(history.len())
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

/// Retained history per op: live bytes after 2,000 batches with history, minus the same without.
fn history_memory() {
    let json_state = state_json(ENTITIES, FIELDS);
    let plan = writes(2_000, ENTITIES, FIELDS);
    let batches: Vec<Batch> = plan.iter().map(|w| engine_batch(w)).collect();
    let mut retained = Vec::new();
    for limits in [
        HistoryLimits {
            max_steps: 0,
            max_bytes: 0,
        },
        unbounded(),
    ] {
        let start = LIVE.load(Ordering::Relaxed);
        let mut store = Store::builder(Value::from(&json_state))
            .history_limits(limits)
            .build()
            .unwrap();
        for batch in &batches {
            assert!(store.apply(batch).is_committed());
        }
        retained.push((LIVE.load(Ordering::Relaxed) - start, store.history_bytes()));
        drop(store);
    }
    let ops = (batches.len() * BATCH) as f64;
    let per_op = (retained[1].0 - retained[0].0) as f64 / ops;
    println!(
        "retained history: {per_op:.0} bytes per op measured ({:.0} estimated by the store), over {} ops at batch size {BATCH}",
        retained[1].1 as f64 / ops,
        ops
    );
}

fn memory(_: &mut Criterion) {
    history_memory();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(3));
    targets = memory, apply_with_history, undo_redo, schema_checks
}
criterion_main!(benches);
