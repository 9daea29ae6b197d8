//! Retained history memory, measured with a counting global allocator: per op (live heap bytes after
//! 2,000 batches with history kept, minus the same run without history), and what the chat timeline
//! of `timeline.rs` keeps alive (with and without checkpoints, and on 1M keys and on 5), each against
//! what the byte bound counts (`Store::history_bytes`). A program of its own, so that the
//! counting allocator never runs under a timed benchmark (`store.rs` and `timeline.rs` time with the
//! system allocator). Run: `cargo bench -p statecraft-engine --bench history_memory`.

use statecraft_test_support::chat;
use statecraft_test_support::entities as common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use statecraft_engine::{Batch, HistoryLimits, Store, Value};

use chat::{CHANGES, MESSAGES, SWIPES};
use common::{BATCH, ENTITIES, FIELDS, engine_batch, state_json, unbounded, writes};

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
    let counted = retained[1].1 as f64 / ops;
    println!(
        "retained history: {per_op:.0} bytes per op measured, {counted:.0} counted by the byte bound (count / measured = {:.2}), over {} ops at batch size {BATCH}",
        counted / per_op,
        ops
    );
}

/// Plays the chat (`support/src/chat.rs`) on a store.
fn play_chat(store: &mut Store, characters: usize, fields: usize) {
    chat::play(characters, fields, |batch, options| {
        assert!(store.apply_with(batch, options).is_committed());
    });
}

/// What the chat's history keeps alive, measured (live bytes with the chat played, minus a copy of the
/// same final state without history), against what the byte bound counts (`Store::history_bytes`), on
/// the bench's 10k keys with and without checkpoints, on 1M keys, and on a tiny state of 5 keys.
fn chat_memory() {
    for (name, characters, fields, every) in [
        ("10k keys, checkpoints every 32 steps", 100, 100, 32),
        ("10k keys, no checkpoints", 100, 100, u64::MAX),
        ("1M keys, checkpoints every 32 steps", 10_000, 100, 32),
        ("5 keys, checkpoints every 32 steps", 1, 5, 32),
    ] {
        let start = LIVE.load(Ordering::Relaxed);
        let mut store = Store::builder(Value::from(&chat::state_json(characters, fields)))
            .history_limits(unbounded())
            .checkpoint_every(every)
            .build()
            .unwrap();
        play_chat(&mut store, characters, fields);
        let with_history = LIVE.load(Ordering::Relaxed) - start;
        let bare = {
            let start = LIVE.load(Ordering::Relaxed);
            let copy = Value::from_json(&store.state().to_json());
            let bytes = LIVE.load(Ordering::Relaxed) - start;
            drop(copy);
            bytes
        };
        let changes = (MESSAGES * SWIPES * CHANGES) as f64;
        let measured = (with_history - bare) as f64;
        let counted = store.history_bytes() as f64;
        println!(
            "chat memory ({name}): state alone {:.1} MB; history keeps {:.1} MB alive ({:.0} bytes per change), the byte bound counts {:.1} MB ({:.0} bytes per change): count / measured = {:.2}",
            bare as f64 / 1e6,
            measured / 1e6,
            measured / changes,
            counted / 1e6,
            counted / changes,
            counted / measured
        );
        drop(store);
    }
}

fn main() {
    // `cargo bench` passes `--bench` (and any filter); there is nothing to filter here.
    history_memory();
    chat_memory();
}
