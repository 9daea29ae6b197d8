//! Lenient layer throughput: valid batches against `serde_json`, broken model output, hostile input.
//!
//! The baseline in the same run is `serde_json::from_str` to a `Value` on the same bytes of a valid
//! batch; the repair parser (`parse_value`) and the whole extraction (which also decodes instructions
//! into the engine's persistent values) are measured against it. The broken output (about 1 MB) is a
//! reply made of prose, fences, tags, `<think>` drafts and every defect of docs/lenient-layer.md; the broken JSON
//! (about 1 MB) is one array of such instructions with no prose, for the repair parser alone. The adversarial
//! inputs (commas, an unclosed string full of commas and quotes, nested openers, nested objects, `{` in
//! prose, JSON-looking prose) run through both `extract` and the repair parser alone, at 1 MB and at
//! 2 MB (105k and 210k nested openers): linear means twice the time at twice the size.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use statecraft_translators::internals::parse_value;
use statecraft_translators::{ExtractOptions, extract};

use statecraft_test_support::extract_inputs as inputs;

use inputs::{broken_output, valid_batch};

const MEGABYTE: usize = 1 << 20;

/// About `size` bytes of one broken JSON array of instructions, without prose: the repair parser alone.
fn broken_json(size: usize) -> String {
    let mut text = String::from("[\n");
    let mut n = 0usize;
    while text.len() < size {
        text.push_str(&format!(
            "  // hit {n}\n  {{'op': 'assign', path: 'npc{n}.hp', 'value': {}, reason: “a “big” hit”,}}\n  {{\"op\": \"push\" \"path\": [\"log\"], \"value\": \"line\nbreak\", \"ok\": True}},\n",
            n % 100
        ));
        n += 1;
    }
    text.push(']');
    text
}

fn bench_valid(c: &mut Criterion) {
    let text = valid_batch(MEGABYTE);
    let mut group = c.benchmark_group("valid_batch_1mb");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("serde_json_from_str", |b| {
        b.iter(|| black_box(serde_json::from_str::<serde_json::Value>(black_box(&text)).is_ok()))
    });
    group.bench_function("repair_parse_value", |b| {
        b.iter(|| black_box(parse_value(black_box(&text), 0).value.is_some()))
    });
    group.bench_function("extract", |b| {
        b.iter(|| {
            black_box(
                extract(black_box(&text), &ExtractOptions::default())
                    .batch
                    .len(),
            )
        })
    });
    group.finish();
}

fn bench_broken(c: &mut Criterion) {
    let text = broken_output(MEGABYTE);
    let mut group = c.benchmark_group("broken_output_1mb");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("extract", |b| {
        b.iter(|| {
            black_box(
                extract(black_box(&text), &ExtractOptions::default())
                    .batch
                    .len(),
            )
        })
    });
    group.finish();
    let json = broken_json(MEGABYTE);
    let mut group = c.benchmark_group("broken_json_1mb");
    group.throughput(Throughput::Bytes(json.len() as u64));
    group.bench_function("repair_parse_value", |b| {
        b.iter(|| black_box(parse_value(black_box(&json), 0).span.end))
    });
    group.finish();
}

/// The adversarial inputs at about `size` bytes (the nested ones at `size / 10` openers).
fn adversarial(size: usize) -> Vec<(&'static str, String)> {
    vec![
        ("commas", ",".repeat(size)),
        ("unclosed_string", format!("[\"{}", ",\"'".repeat(size / 3))),
        ("nested_openers", "[".repeat(size / 10)),
        ("nested_objects", "{\"a\":".repeat(size / 10)),
        ("braces_in_prose", "{".repeat(size)),
        ("json_looking_prose", "{\"a\" ".repeat(size / 5)),
    ]
}

fn bench_adversarial(c: &mut Criterion) {
    let mut group = c.benchmark_group("adversarial");
    for (size, label) in [(MEGABYTE, "1mb"), (2 * MEGABYTE, "2mb")] {
        for (name, text) in adversarial(size) {
            group.throughput(Throughput::Bytes(text.len() as u64));
            let id = |function: &str| BenchmarkId::new(format!("{function}/{name}"), label);
            group.bench_with_input(id("extract"), &text, |b, text| {
                b.iter(|| {
                    black_box(
                        extract(black_box(text), &ExtractOptions::default())
                            .diagnostics
                            .len(),
                    )
                })
            });
            group.bench_with_input(id("repair_parse_value"), &text, |b, text| {
                b.iter(|| black_box(parse_value(black_box(text), 0).span.end))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_valid, bench_broken, bench_adversarial);
criterion_main!(benches);
