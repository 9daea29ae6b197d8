//! Save benchmarks: loading 10 MB saves, appending a 10-instruction step without and with fsync.
//!
//! Baselines in the same run: for loading, the engine's own way to read the same state (`serde_json`
//! to a `serde_json::Value`, then `Value::from_json`), which is the floor of any load that ends in an
//! engine value; for appending, `Store::apply` of the same batch with no file, so the difference is
//! what the save adds before the disk. Run with `cargo bench -p statecraft-saves`; the figures are in
//! `BENCHMARKS.md`.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, Store, Value};
use statecraft_saves::{Durability, Game, NewGame, OpenOptions};

/// About `bytes` of JSON as many small records (an inventory): the worst case, one small persistent
/// map per record.
fn records_state(bytes: usize) -> Json {
    let mut items = Vec::new();
    let mut size = 0;
    let mut i = 0u64;
    while size < bytes {
        let item = json!({"id": i, "name": format!("item number {i}"), "weight": (i % 97) as f64 / 4.0, "tags": ["a", "b"], "ok": i % 2 == 0});
        size += item.to_string().len() + 1;
        items.push(item);
        i += 1;
    }
    json!({"player": {"hp": 100}, "items": items})
}

/// About `bytes` of JSON as a chat log of 2 KB messages: text-heavy, like a long roleplay.
fn chat_state(bytes: usize) -> Json {
    let text = "The innkeeper leans closer and lowers her voice. ".repeat(40);
    let messages: Vec<Json> = (0..bytes / (text.len() + 40))
        .map(|i| json!({"id": i, "who": "narrator", "text": text}))
        .collect();
    json!({"player": {"hp": 100}, "log": messages})
}

fn unsynced() -> OpenOptions {
    OpenOptions::default().durability(Durability::Unsynced)
}

/// The time `iters` calls of `load` take, leaving out dropping what each returns.
fn timed_without_drop<T>(iters: u64, mut load: impl FnMut() -> T) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = std::time::Instant::now();
        let loaded = black_box(load());
        total += start.elapsed();
        drop(loaded);
    }
    total
}

fn load_one(c: &mut Criterion, name: &str, dir: &Path, state: &Json) {
    let path = dir.join(format!("{name}.save"));
    drop(
        Game::create_with(
            &path,
            Value::from_json(state),
            NewGame::default(),
            unsynced(),
        )
        .expect("create"),
    );
    let len = std::fs::metadata(&path).expect("metadata").len();
    let text = state.to_string();
    let mut group = c.benchmark_group(format!("load_{name}"));
    group.throughput(Throughput::Bytes(len));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    // Loading is measured; freeing the loaded game afterwards is not (that happens when the game
    // closes), so both variants drop their result outside the timing. A game must be dropped before the
    // next open, since it holds the save's lock.
    group.bench_function("open_save", |b| {
        b.iter_custom(|iters| {
            timed_without_drop(iters, || Game::open_with(&path, unsynced()).expect("open"))
        })
    });
    group.bench_function("baseline_serde_json_then_from_json", |b| {
        b.iter_custom(|iters| {
            timed_without_drop(iters, || {
                let json: Json = serde_json::from_str(&text).expect("json");
                Value::from_json(&json)
            })
        })
    });
    group.finish();
}

fn load(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    load_one(c, "10mb_records", dir.path(), &records_state(10 << 20));
    load_one(c, "10mb_chat", dir.path(), &chat_state(10 << 20));
}

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let stats: serde_json::Map<String, Json> =
        (0..10).map(|k| (format!("stat{k}"), json!(0))).collect();
    let state = Value::from(json!({"player": stats}));
    // Ten increments: the same batch changes the state every time, so it is built once, outside the timing.
    let batch = Batch::from_json(&json!((0..10)
        .map(|k| json!({"op": "increment", "path": ["player", format!("stat{k}")], "value": 1, "reason": "bench"}))
        .collect::<Vec<_>>()))
    .expect("valid batch");
    let mut group = c.benchmark_group("append_10_instructions");
    let mut store = Store::new(state.clone());
    group.bench_function("baseline_engine_only", |b| {
        b.iter(|| black_box(store.apply(&batch)))
    });
    let mut game = Game::create_with(
        dir.path().join("nosync.save"),
        state.clone(),
        NewGame::default(),
        unsynced(),
    )
    .expect("create");
    group.bench_function("save_before_fsync", |b| {
        b.iter(|| black_box(game.apply(&batch, Some("m")).expect("apply")))
    });
    let mut synced =
        Game::create(dir.path().join("sync.save"), state, NewGame::default()).expect("create");
    group.sample_size(20);
    group.bench_function("save_with_fsync", |b| {
        b.iter(|| black_box(synced.apply(&batch, Some("m")).expect("apply")))
    });
    group.finish();
}

criterion_group!(benches, load, append);
criterion_main!(benches);
