//! The chat timeline benchmarks of issue 14 (see BENCHMARKS.md), with their baselines in the same run.
//!
//! The chat (`support/src/chat.rs`, shared with `saves/benches/timeline.rs`, which measures its save size
//! and load time): 1,000 messages with 3 swipes each (3,000 steps), every reply about 10 assigns
//! scattered over a state of 10,000 keys (100 characters x 100 fields); the chat goes on from a
//! different swipe of each message, so every message has three branches. Measured: switching between
//! two sibling swipes at 10k and 1M keys (baseline: restoring a stored full copy, as MVU does),
//! `state_at` of steps spread over the whole tree (baseline: the same store without checkpoints,
//! replaying from the live state or the root), and apply with this tree in place against apply with a
//! plain line of as many steps (what history was before the tree). What the chat's history keeps alive
//! is measured by `history_memory.rs`, so that its counting allocator never runs under these timings.

use std::hint::black_box;

use criterion::{Criterion, criterion_group};
use statecraft_engine::{Batch, HistoryLimits, StepId, Store, Value};

use chat::{Lcg, MESSAGES, SWIPES, label, reply, state_json};
use statecraft_test_support::chat;

fn unbounded() -> HistoryLimits {
    HistoryLimits {
        max_steps: usize::MAX,
        max_bytes: usize::MAX,
    }
}

/// Plays the chat (`support/src/chat.rs`) on a store.
fn chat(store: &mut Store, characters: usize, fields: usize) {
    chat::play(characters, fields, |batch, options| {
        assert!(store.apply_with(batch, options).is_committed());
    });
}

fn chat_store(characters: usize, fields: usize, checkpoint_every: u64) -> Store {
    let mut store = Store::builder(Value::from(&state_json(characters, fields)))
        .history_limits(unbounded())
        .checkpoint_every(checkpoint_every)
        .build()
        .unwrap();
    chat(&mut store, characters, fields);
    store
}

fn swipe_switch(c: &mut Criterion) {
    let mut group = c.benchmark_group("switch between two sibling swipes");
    for (name, characters, fields) in [("10k keys", 100, 100), ("1M keys", 10_000, 100)] {
        let mut store = chat_store(characters, fields, 32);
        let last = MESSAGES - 1;
        let (a, b) = (
            store.find(label(last, 0).as_str()).unwrap(),
            store.find(label(last, 1).as_str()).unwrap(),
        );
        group.bench_function(format!("statecraft checkout, {name}"), |bench| {
            let mut flip = false;
            bench.iter(|| {
                flip = !flip;
                black_box(store.checkout(if flip { a } else { b }).unwrap())
            });
        });
        // MVU keeps a full copy of the variables per swipe and restores it on a switch.
        let copies = [
            store.state_at(a).unwrap().value().to_json(),
            store.state_at(b).unwrap().value().to_json(),
        ];
        group.bench_function(format!("baseline full copy restored, {name}"), |bench| {
            let mut flip = false;
            bench.iter(|| {
                flip = !flip;
                black_box(copies[usize::from(flip)].clone())
            });
        });
    }
    group.finish();
}

fn state_at(c: &mut Criterion) {
    let mut group = c.benchmark_group("state_at of steps all over the chat (10k keys)");
    let mut rng = Lcg(11);
    let targets: Vec<String> = (0..64)
        .map(|_| label(rng.next(MESSAGES), rng.next(SWIPES)))
        .collect();
    for (name, every) in [
        ("statecraft, checkpoints every 32 steps", 32),
        ("baseline no checkpoints", u64::MAX),
    ] {
        let store = chat_store(100, 100, every);
        let ids: Vec<StepId> = targets
            .iter()
            .map(|t| store.find(t.as_str()).unwrap())
            .collect();
        group.bench_function(name, |bench| {
            let mut i = 0;
            bench.iter(|| {
                i += 1;
                black_box(store.state_at(ids[i % ids.len()]).unwrap())
            });
        });
        // The worst read with checkpoints every 32 steps: 31 steps below a checkpoint (depth 511), on a
        // swipe off the current line, about 490 steps from the current step.
        let worst = store.find(label(510, 2).as_str()).unwrap();
        group.bench_function(format!("{name}, a step 31 below a checkpoint"), |bench| {
            bench.iter(|| black_box(store.state_at(worst).unwrap()));
        });
    }
    group.finish();
}

/// Apply with the chat's tree of 3,000 steps in place, against the same apply on a store whose history
/// is a plain line of 3,000 steps (what history was before the tree).
fn apply_with_tree(c: &mut Criterion) {
    let mut group = c.benchmark_group("apply a 10-assign reply (10k keys, 3,000 steps kept)");
    let mut tree = chat_store(100, 100, 32);
    let mut line = Store::builder(Value::from(&state_json(100, 100)))
        .history_limits(unbounded())
        .build()
        .unwrap();
    let mut rng = Lcg(3);
    for i in 0..MESSAGES * SWIPES {
        assert!(
            line.apply(&reply(&mut rng, 100, 100, i as i64))
                .is_committed()
        );
    }
    let replies: Vec<Batch> = (0..4_096).map(|i| reply(&mut rng, 100, 100, i)).collect();
    for (name, store) in [("tree of swipes", &mut tree), ("plain line", &mut line)] {
        let mut i = 0;
        group.bench_function(name, |bench| {
            bench.iter(|| {
                i += 1;
                black_box(store.apply(&replies[i % replies.len()]).is_committed())
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(3));
    targets = swipe_switch, state_at, apply_with_tree
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
