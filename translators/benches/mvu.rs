//! MVU text → instructions throughput, on a realistic corpus and on adversarial text.
//!
//! The realistic corpus (about 1 MB) mixes the shapes seen in real cards: `<UpdateVariable>` blocks
//! with an analysis section, `_.set` with two and three arguments and Chinese paths, `[0]` suffixes,
//! `_.add`, `_.insert` with object literals, `_.remove`, reasons, and prose. The expressions corpus
//! (about 1 MB) is the same replies where the values are math.js expressions, YAML values and YAML
//! single quotes, so most arguments go through the evaluator or the YAML reader; it must translate at
//! 100 MB/s or more. The dense expressions corpus is the worst case: nothing but such commands. The
//! adversarial inputs (`_.set(` with no closing parenthesis, quotes, `_.set('` unclosed, one command
//! whose argument is nested parentheses or an exponent tower) run at 1 MB and at 2 MB: linear means
//! twice the time at twice the size. The baseline in the same run is a plain `str::find` pass over
//! the same bytes, which bounds what any scanner can do.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use statecraft_translators::mvu::{self, MvuOptions};

use statecraft_test_support::mvu_inputs as inputs;

use inputs::{MEGABYTE, adversarial, expressions, expressions_dense, realistic};

fn bench(c: &mut Criterion) {
    let options = MvuOptions::default();
    let inputs = [
        ("realistic_1mb", realistic(MEGABYTE)),
        ("expressions_1mb", expressions(MEGABYTE)),
        ("expressions_dense_1mb", expressions_dense(MEGABYTE)),
    ];
    let mut group = c.benchmark_group("mvu_translate");
    for (name, text) in &inputs {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| mvu::from_text(black_box(text), &options))
        });
    }
    group.bench_function("baseline_find_1mb", |b| {
        b.iter(|| black_box(&inputs[0].1).matches("_.").count())
    });
    group.finish();
    let mut group = c.benchmark_group("mvu_adversarial");
    for (size, label) in [(MEGABYTE, "1mb"), (2 * MEGABYTE, "2mb")] {
        for (name, text) in adversarial(size) {
            group.throughput(Throughput::Bytes(text.len() as u64));
            group.bench_with_input(BenchmarkId::new(name, label), &text, |b, text| {
                b.iter(|| mvu::from_text(black_box(text), &options))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
