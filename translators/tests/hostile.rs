//! Hostile inputs: each must come back quickly, without a stack overflow, and without inventing
//! instructions. Time is checked loosely (a generous bound that only quadratic behaviour breaks, even
//! in a debug build on a busy machine); the precise figures are in the criterion bench.

use std::time::{Duration, Instant};

use statecraft_translators::internals::{parse_value, repair_json};
use statecraft_translators::{ExtractOptions, extract};

const MEGABYTE: usize = 1 << 20;

fn check(name: &str, text: &str) {
    let started = Instant::now();
    let extraction = extract(text, &ExtractOptions::default());
    let parsed = parse_value(text, 0);
    let _ = repair_json(text);
    let elapsed = started.elapsed();
    println!(
        "{name}: {} bytes in {elapsed:?}, {} diagnostics",
        text.len(),
        extraction.diagnostics.len()
    );
    assert!(
        extraction.batch.is_empty(),
        "{name}: invented {} instructions",
        extraction.batch.len()
    );
    assert!(parsed.span.end <= text.len());
    assert!(
        elapsed < Duration::from_secs(20),
        "{name}: took {elapsed:?}"
    );
}

#[test]
fn one_megabyte_of_commas() {
    check("commas", &",".repeat(MEGABYTE));
}

#[test]
fn an_unclosed_string_full_of_commas_and_quotes() {
    check(
        "unclosed string",
        &format!("[\"{}", ",\"'".repeat(MEGABYTE / 3)),
    );
    check(
        "unclosed object string",
        &format!(
            "{{\"op\": \"assign\", \"value\": \"{}",
            "a,\"b\":".repeat(MEGABYTE / 6)
        ),
    );
}

#[test]
fn a_hundred_thousand_nested_openers() {
    check("arrays", &"[".repeat(100_000));
    check("objects", &"{\"a\":".repeat(100_000));
    check(
        "closed arrays",
        &format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
    );
    check(
        "fenced arrays",
        &format!("```json\n{}", "[".repeat(100_000)),
    );
}

#[test]
fn one_megabyte_of_braces_in_prose() {
    check("braces", &"{".repeat(MEGABYTE));
    check("json-looking prose", &"{\"a\" ".repeat(MEGABYTE / 5));
    check("tags", &"<tool_call>".repeat(MEGABYTE / 11));
    check("fences", &"```".repeat(MEGABYTE / 3));
    check("think", &"<think>".repeat(MEGABYTE / 7));
    check("mvu openers", &"_.set(".repeat(MEGABYTE / 6));
}
