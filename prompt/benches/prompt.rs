//! `prompt` on large states: the rules text and the visible state for a state of 10k, 100k and 1M
//! keys (each a small object, as a game's entities are), without a schema. The baseline in the same
//! run is what printing the prompt needs anyway: the state as JSON text. The prompt's own work (one
//! walk of the state for the examples, one target lookup per node) must add a small constant per key.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use statecraft_engine::Value;
use statecraft_prompt::{Lang, prompt};

/// A state of `keys` entities, each `{"hp": n, "name": "e<n>"}`, so that 2/3 of the nodes are leaves.
fn state(keys: usize) -> Value {
    let entities: serde_json::Map<String, serde_json::Value> = (0..keys)
        .map(|n| (format!("e{n}"), json!({"hp": n, "name": format!("e{n}")})))
        .collect();
    Value::from_json(&json!({ "entities": entities }))
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("prompt");
    group.sample_size(10);
    for keys in [10_000, 100_000, 1_000_000] {
        let state = state(keys);
        group.throughput(Throughput::Elements(keys as u64));
        group.bench_function(format!("prompt/{keys}"), |b| {
            b.iter(|| black_box(prompt(black_box(&state), None, &[], Lang::En)))
        });
        group.bench_function(format!("baseline: state as json text/{keys}"), |b| {
            b.iter(|| black_box(serde_json::to_string(&black_box(&state).to_json())))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
