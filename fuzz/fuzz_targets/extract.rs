//! Fuzzes the lenient layer: any bytes, read as text, must extract without panicking or hanging, with
//! every diagnostic span inside the text on character boundaries, and every instruction it outputs must
//! decode again strictly from its canonical form (the extractor never emits an instruction the engine
//! would refuse to read). The repair parser is fuzzed on the same text from two starting points, and
//! on valid JSON it must read exactly what serde_json reads.

#![no_main]

use libfuzzer_sys::fuzz_target;
use statecraft_engine::Batch;
use statecraft_translators::internals::{parse_value, repair_json};
use statecraft_translators::{ExtractOptions, extract};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let extraction = extract(&text, &ExtractOptions::default());
    for diagnostic in &extraction.diagnostics {
        assert!(diagnostic.span.start <= diagnostic.span.end && diagnostic.span.end <= text.len());
        assert!(
            text.is_char_boundary(diagnostic.span.start)
                && text.is_char_boundary(diagnostic.span.end)
        );
    }
    assert!(extraction.report.score <= 100);
    for instruction in &extraction.batch.instructions {
        // JSON Patch ops serialise their paths as lists, which only the pointer form reads back.
        if !instruction.op.is_json_patch() {
            let json = instruction.to_json();
            assert!(
                Batch::from_json(&json).is_ok(),
                "extracted an instruction that does not decode: {json}"
            );
        }
    }
    let _ = repair_json(&text);
    let middle = (0..=text.len() / 2)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    for start in [0, middle] {
        let parsed = parse_value(&text, start);
        assert!(parsed.span.end <= text.len());
        for repair in &parsed.repairs {
            assert!(repair.span.start <= repair.span.end && repair.span.end <= text.len());
        }
        if let Some(root) = parsed.value {
            let span = parsed.document.node(root).span();
            assert!(span.start <= span.end && span.end <= text.len());
        }
    }
    // Valid JSON reads exactly as serde_json reads it, borrowed strings and all, except that `-0`
    // is read as the integer 0 (a deliberate choice of the repair parser).
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) {
        let read = parse_value(&text, 0).to_json().map(zeros_as_integers);
        assert_eq!(
            read,
            Some(zeros_as_integers(json)),
            "valid JSON read differently"
        );
    }
});

/// Every zero, integer or float of either sign, as the integer 0.
fn zeros_as_integers(json: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match json {
        Value::Number(n) if n.as_f64() == Some(0.0) => Value::from(0),
        Value::Array(items) => Value::Array(items.into_iter().map(zeros_as_integers).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| (key, zeros_as_integers(value)))
                .collect(),
        ),
        other => other,
    }
}
