//! Store benchmarks against baselines in the same run (see BENCHMARKS.md).
//!
//! State: 1,000 entities x 100 fields. Batches: 10 single-field assigns at scattered places. Baselines:
//! (a) `serde_json` with a deep clone per step for history, (b) `serde_json` with the `json-patch` crate
//! and inverse patches for history. Also: apply with the history full at its default bounds (a long
//! chat's steady state, where every apply trims), undo/redo of a 10-op step at 1k and 1M keys, schema
//! checks with and without the incremental approach. Retained history memory is measured by
//! `history_memory.rs`, whose counting allocator would otherwise slow every timed allocation here.

use statecraft_test_support::baseline;
use statecraft_test_support::entities as common;

use std::cell::RefCell;
use std::hint::black_box;
use std::time::Duration;

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

    // A long chat's steady state: the history full at its default bounds (64 MiB here, about 3,400
    // of these steps), so every apply also trims. Criterion runs the closure once per sample, so the
    // store is made and filled outside it, once.
    let mut full = Store::new(Value::from(&json_state));
    for batch in batches.iter().cycle().take(2 * 3_400) {
        assert!(full.apply(batch).is_committed());
    }
    let mut i = 0;
    group.bench_function(
        "statecraft Store::apply, history full at its default bounds",
        |b| {
            b.iter(|| {
                let outcome = full.apply(&batches[i % batches.len()]);
                i += 1;
                black_box(outcome.is_committed())
            });
        },
    );

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

/// How many batches one side runs before the other takes its turn in `apply_interleaved`: long
/// enough that reading the clock (a system call) is under 1% of a turn, short enough that a turn
/// sees the same machine as the other side's.
const TURN: u64 = 64;

/// Statecraft and baseline (b) on the same batches, timed in alternating turns inside one benchmark
/// and in the thread's own CPU time, so that drift of the machine and other processes' load hit both
/// alike: the ratio of two benchmarks run one after the other moves with the machine, this one does
/// not. Criterion reports statecraft's time per apply; the ratio to the baseline is printed after it
/// (the median over criterion's samples of each sample's ratio).
fn apply_interleaved(c: &mut Criterion) {
    let json_state = state_json(ENTITIES, FIELDS);
    let plan = writes(4_096, ENTITIES, FIELDS);
    let batches: Vec<Batch> = plan.iter().map(|w| engine_batch(w)).collect();
    let patches: Vec<json_patch::Patch> = plan.iter().map(|w| patch_of(w)).collect();
    let mut store = Store::builder(Value::from(&json_state))
        .history_limits(unbounded())
        .build()
        .unwrap();
    let mut baseline = PatchHistory::new(json_state);
    let samples = RefCell::new(Vec::new());
    let (mut ours_next, mut theirs_next, mut turn) = (0, 0, 0u64);
    let mut group = c.benchmark_group("apply 10 assigns, interleaved with baseline (b)");
    group.bench_function("statecraft Store::apply (thread CPU time)", |b| {
        b.iter_custom(|iters| {
            let (mut ours, mut theirs) = (Duration::ZERO, Duration::ZERO);
            let mut done = 0;
            while done < iters {
                let n = TURN.min(iters - done);
                let mut run_ours = || {
                    thread_cpu_time(|| {
                        for _ in 0..n {
                            let batch = &batches[ours_next % batches.len()];
                            black_box(store.apply(batch).is_committed());
                            ours_next += 1;
                        }
                    })
                };
                let mut run_theirs = || {
                    thread_cpu_time(|| {
                        for _ in 0..n {
                            black_box(baseline.apply(&patches[theirs_next % patches.len()]));
                            theirs_next += 1;
                        }
                    })
                };
                // Who goes first alternates too, so that neither always finds the caches warm.
                if turn % 2 == 0 {
                    ours += run_ours();
                    theirs += run_theirs();
                } else {
                    theirs += run_theirs();
                    ours += run_ours();
                }
                turn += 1;
                done += n;
            }
            samples.borrow_mut().push((ours, theirs));
            ours
        });
    });
    group.finish();
    // Criterion's warm-up calls come first; the last `sample_size` calls are its samples.
    let samples = samples.into_inner();
    let measured = &samples[samples.len().saturating_sub(SAMPLES)..];
    let mut ratios: Vec<f64> = measured
        .iter()
        .map(|(ours, theirs)| ours.as_secs_f64() / theirs.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    if let Some(median) = ratios.get(ratios.len() / 2) {
        println!(
            "interleaved ratio, statecraft / baseline (b): median {median:.3} (from {:.3} to {:.3}, {} samples)",
            ratios[0],
            ratios[ratios.len() - 1],
            ratios.len()
        );
    }
}

/// The CPU time this thread spends in `work`: time the scheduler gives other processes is not in it.
fn thread_cpu_time(work: impl FnOnce()) -> Duration {
    let start = thread_cpu_now();
    work();
    thread_cpu_now().saturating_sub(start)
}

#[allow(unsafe_code)]
fn thread_cpu_now() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the call's duration.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
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

/// Criterion's samples per benchmark here.
const SAMPLES: usize = 30;

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(SAMPLES).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(3));
    targets = apply_with_history, apply_interleaved, undo_redo, schema_checks
}
criterion_main!(benches);
