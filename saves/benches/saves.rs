//! Save benchmarks: loading a 10 MB save, appending a 10-instruction step without and with fsync.
//!
//! The baseline in the same run is the engine alone: `Store::apply` of the same batch with no file, so
//! the difference is what the save adds before the disk. Run with `cargo bench -p statecraft-saves`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use statecraft_engine::{Batch, Store, Value};
use statecraft_saves::{Durability, Game, NewGame, OpenOptions};

/// A state of about `bytes` bytes of JSON: many small records, like a long game's inventory and log.
fn big_state(bytes: usize) -> Value {
    let mut items = Vec::new();
    let mut size = 0;
    let mut i = 0u64;
    while size < bytes {
        let item = json!({"id": i, "name": format!("item number {i}"), "weight": (i % 97) as f64 / 4.0, "tags": ["a", "b"], "ok": i % 2 == 0});
        size += item.to_string().len() + 1;
        items.push(item);
        i += 1;
    }
    Value::from(json!({"player": {"hp": 100, "gold": 0}, "items": items}))
}

fn ten_instructions(turn: u64) -> Batch {
    let mut instructions = Vec::new();
    for k in 0..10 {
        instructions.push(json!({"op": "assign", "path": ["player", format!("stat{k}")], "value": turn + k, "reason": "bench"}));
    }
    Batch::from_json(&json!(instructions)).expect("valid batch")
}

fn unsynced() -> OpenOptions {
    OpenOptions::default().durability(Durability::Unsynced)
}

fn load(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.save");
    drop(
        Game::create_with(&path, big_state(10 << 20), NewGame::default(), unsynced())
            .expect("create"),
    );
    let len = std::fs::metadata(&path).expect("metadata").len();
    let mut group = c.benchmark_group("load");
    group.throughput(Throughput::Bytes(len));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("open_10mb_save", |b| {
        b.iter(|| black_box(Game::open_with(&path, unsynced()).expect("open")))
    });
    group.finish();
}

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = Value::from(json!({"player": {"hp": 100}}));
    let mut group = c.benchmark_group("append");
    let mut store = Store::new(state.clone());
    let mut turn = 0;
    group.bench_function("engine_only_10_instructions", |b| {
        b.iter(|| {
            turn += 1;
            black_box(store.apply(&ten_instructions(turn)))
        })
    });
    let mut game = Game::create_with(
        dir.path().join("nosync.save"),
        state.clone(),
        NewGame::default(),
        unsynced(),
    )
    .expect("create");
    group.bench_function("save_10_instructions_before_fsync", |b| {
        b.iter(|| {
            turn += 1;
            black_box(
                game.apply(&ten_instructions(turn), Some("m"))
                    .expect("apply"),
            )
        })
    });
    let mut synced =
        Game::create(dir.path().join("sync.save"), state, NewGame::default()).expect("create");
    group.sample_size(20);
    group.bench_function("save_10_instructions_with_fsync", |b| {
        b.iter(|| {
            turn += 1;
            black_box(
                synced
                    .apply(&ten_instructions(turn), Some("m"))
                    .expect("apply"),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, load, append);
criterion_main!(benches);
