//! Fixed work for the instruction-count check (`.ci/instruction-counts`, run by `.ci/run`): each
//! workload beside a baseline that does the same job with plain `serde_json`, in the same binary.
//!
//! - `counted_apply`: the store applies 10-assign batches with history kept, on the benches' 1,000
//!   entities x 100 fields (`support/src/entities.rs`); `counted_patch_baseline` is baseline (b)
//!   of `engine/benches/store.rs` (a `serde_json` document changed by `json-patch`, with inverse
//!   patches for history) applying the same writes.
//! - `counted_apply_full`: the same batches on a store whose history is full (bounded at 8 MiB and
//!   filled past it, by `counted_fill`, whose part the check does not read), so that every apply also
//!   trims, as a long chat's does; beside the same baseline (b).
//! - `counted_undo_redo`: undo + redo of one 10-op step on the same state, as the store bench does.
//! - `counted_extract`: one extraction of about 1 MB of broken model output, and `counted_mvu` one
//!   MVU translation of about 1 MB of realistic MVU text (the benches' inputs,
//!   `support/src/`), beside `counted_json_baseline`: `serde_json` parsing a valid
//!   batch of the same size into a `serde_json::Value`, the baseline of `translators/benches/extract.rs`.
//!
//! Each measured loop is a function of its own, called one after the other once everything is set up
//! and warmed up; callgrind's `--dump-before='*counted_*'` then writes one part per function, whose
//! total is that function's work alone. The program prints how many units (batches, undo + redo
//! pairs, bytes) each function did, and the check divides. Instruction counts are exact at any load,
//! so the ratios hold on any machine of the same kind. The `profiling` profile is the release build
//! with its symbols (release itself is stripped), which callgrind needs to find the functions:
//!
//! ```text
//! cargo build --profile profiling -p statecraft-tests --example instruction_counts
//! valgrind --tool=callgrind --dump-before='*counted_*' target/profiling/examples/instruction_counts
//! ```

use std::hint::black_box;

use statecraft_engine::{Batch, HistoryLimits, Outcome, Store, Value};
use statecraft_translators::mvu::{self, MvuOptions};
use statecraft_translators::{ExtractOptions, extract};

use statecraft_test_support::baseline;
use statecraft_test_support::entities as common;
use statecraft_test_support::extract_inputs;
use statecraft_test_support::mvu_inputs;

use baseline::{PatchHistory, patch_of};
use common::{ENTITIES, FIELDS, engine_batch, state_json, unbounded, writes};

/// Rounds run before counting starts, so that the history already takes checkpoints (one every 32
/// steps), as a long chat's does.
const WARM_UP: usize = 64;
/// Rounds counted: ten checkpoint spacings' worth of steps.
const ROUNDS: usize = 320;
/// Rounds run on the store with a full history before counting starts: twice what its bound holds.
const FULL_AFTER: usize = 1_000;
/// The size of the text workloads.
const TEXT_BYTES: usize = 1 << 20;

#[inline(never)]
fn counted_apply(store: &mut Store, batches: &[Batch]) -> usize {
    let mut committed = 0;
    for batch in batches {
        committed += usize::from(store.apply(black_box(batch)).is_committed());
    }
    committed
}

/// Makes the store of `counted_apply_full`: bounded at 8 MiB (about 420 of these steps) and filled
/// past it. Named so that its work has a part of its own, which the check does not read: it runs
/// last, so that the heap its trimming leaves does not change what the other workloads count.
#[inline(never)]
fn counted_fill(state: Value, batches: &[Batch]) -> Store {
    let mut full = Store::builder(state)
        .history_limits(HistoryLimits {
            max_steps: 10_000,
            max_bytes: 8 << 20,
        })
        .build()
        .unwrap();
    for batch in batches.iter().cycle().take(FULL_AFTER) {
        assert!(full.apply(batch).is_committed());
    }
    assert!(full.history_len() < FULL_AFTER, "the history is full");
    full
}

/// `counted_apply`'s batches on a store whose history is full, so that every apply also trims, as
/// a long chat's does. Returns the steps trimmed.
#[inline(never)]
fn counted_apply_full(store: &mut Store, batches: &[Batch]) -> usize {
    let mut trimmed = 0;
    for batch in batches {
        if let Outcome::Committed(commit) = store.apply(black_box(batch)) {
            trimmed += commit.trimmed.len();
        }
    }
    trimmed
}

#[inline(never)]
fn counted_patch_baseline(baseline: &mut PatchHistory, patches: &[json_patch::Patch]) -> usize {
    let mut kept = 0;
    for patch in patches {
        kept = baseline.apply(black_box(patch));
    }
    kept
}

#[inline(never)]
fn counted_undo_redo(store: &mut Store, rounds: usize) -> usize {
    let mut moved = 0;
    for _ in 0..rounds {
        moved += usize::from(store.undo().unwrap().is_some());
        moved += usize::from(store.redo().unwrap().is_some());
    }
    moved
}

#[inline(never)]
fn counted_extract(text: &str) -> usize {
    extract(black_box(text), &ExtractOptions::default())
        .batch
        .len()
}

#[inline(never)]
fn counted_mvu(text: &str) -> usize {
    mvu::from_text(black_box(text), &MvuOptions::default())
        .instructions
        .len()
}

#[inline(never)]
fn counted_json_baseline(text: &str) -> usize {
    match serde_json::from_str::<serde_json::Value>(black_box(text)) {
        Ok(serde_json::Value::Array(items)) => items.len(),
        _ => 0,
    }
}

/// About a sixteenth of `text`, cut at a character boundary.
fn prefix(text: &str) -> &str {
    let mut end = text.len() / 16;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Marks the end of the last counted function for `--dump-before`.
#[inline(never)]
fn counted_end() -> usize {
    black_box(0)
}

fn main() {
    let json_state = state_json(ENTITIES, FIELDS);
    let state = Value::from(&json_state);
    let plan = writes(WARM_UP + ROUNDS, ENTITIES, FIELDS);
    let batches: Vec<Batch> = plan.iter().map(|w| engine_batch(w)).collect();
    let patches: Vec<json_patch::Patch> = plan.iter().map(|w| patch_of(w)).collect();

    let mut store = Store::builder(state.clone())
        .history_limits(unbounded())
        .build()
        .unwrap();
    for batch in &batches[..WARM_UP] {
        assert!(store.apply(batch).is_committed());
    }
    let mut baseline = PatchHistory::new(json_state);
    for patch in &patches[..WARM_UP] {
        baseline.apply(patch);
    }
    // Undo + redo of one 10-op step with the default history bounds, as `benches/store.rs` has it.
    let mut stepped = Store::new(state.clone());
    assert!(stepped.apply(&batches[0]).is_committed());
    for _ in 0..WARM_UP {
        stepped.undo().unwrap();
        stepped.redo().unwrap();
    }
    let broken = extract_inputs::broken_output(TEXT_BYTES);
    let valid = extract_inputs::valid_batch(TEXT_BYTES);
    let realistic = mvu_inputs::realistic(TEXT_BYTES);
    // One uncounted run of each text workload, so that the counted one finds the allocator warm.
    counted_extract(prefix(&broken));
    counted_mvu(prefix(&realistic));

    let applied = counted_apply(&mut store, &batches[WARM_UP..]);
    let patched = counted_patch_baseline(&mut baseline, &patches[WARM_UP..]);
    let moved = counted_undo_redo(&mut stepped, ROUNDS);
    let extracted = counted_extract(&broken);
    let translated = counted_mvu(&realistic);
    let parsed = counted_json_baseline(&valid);
    let mut full = counted_fill(state, &batches);
    let trimmed = counted_apply_full(&mut full, &batches[WARM_UP..]);
    counted_end();

    // Every workload did its whole job, and the store and baseline (b) did the same writes.
    assert_eq!(applied, ROUNDS);
    assert!(trimmed >= ROUNDS / 2, "every apply on the full store trims");
    assert_eq!(patched, WARM_UP + ROUNDS);
    assert_eq!(moved, 2 * ROUNDS);
    assert!(extracted > 0 && translated > 0 && parsed > 0);
    assert!(
        store.state().to_json() == baseline.doc,
        "the store and baseline (b) disagree"
    );
    // The units each counted function did, for the check to divide by.
    println!("counted_apply {ROUNDS} batches");
    println!("counted_apply_full {ROUNDS} batches");
    println!("counted_patch_baseline {ROUNDS} batches");
    println!("counted_undo_redo {ROUNDS} pairs");
    println!("counted_extract {} bytes", broken.len());
    println!("counted_mvu {} bytes", realistic.len());
    println!("counted_json_baseline {} bytes", valid.len());
}
