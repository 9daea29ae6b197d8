//! Fuzzes the lenient layer: any bytes, read as text, must extract without panicking or hanging, with
//! every diagnostic span inside the text on character boundaries, and every instruction it outputs must
//! decode again strictly, from its canonical form (the RFC 6902 form for a JSON Patch op), to exactly
//! itself (the extractor never emits an instruction the engine would refuse or misread). The repair
//! parser is fuzzed on the same text from two starting points, and on valid JSON it must read exactly
//! what serde_json reads.

#![no_main]

use libfuzzer_sys::fuzz_target;
use statecraft_engine::Batch;
use statecraft_translators::internals::{parse_value, repair_json};
use statecraft_translators::{ExtractOptions, extract, jsonpatch};

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
        // A JSON Patch op's canonical form is its RFC 6902 document (pointers); the rest are lists.
        let single = Batch::new(vec![instruction.clone()]);
        let json = if instruction.op.is_json_patch() {
            jsonpatch::from_batch(&single).expect("a JSON Patch op has a patch form")
        } else {
            single.to_json()
        };
        assert_eq!(
            Batch::from_json(&json),
            Ok(single),
            "extracted an instruction that does not decode to itself: {json}"
        );
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
    // Valid JSON reads exactly as serde_json reads it, borrowed strings and all, except that the
    // integer `-0` is read as the integer 0 (a deliberate choice of the repair parser); `-0.0` and
    // `-0e0` keep their text like every other number.
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) {
        let read = parse_value(&text, 0).to_json();
        assert_eq!(
            read,
            Some(minus_zero_as_zero(json)),
            "valid JSON read differently"
        );
    }
});

/// `json` with every integer `-0` as the integer 0.
fn minus_zero_as_zero(json: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match json {
        Value::Number(n) if n.to_string() == "-0" => Value::from(0),
        Value::Array(items) => Value::Array(items.into_iter().map(minus_zero_as_zero).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| (key, minus_zero_as_zero(value)))
                .collect(),
        ),
        other => other,
    }
}
