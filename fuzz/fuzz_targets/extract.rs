//! Fuzzes the lenient layer: any bytes, read as text, must extract without panicking or hanging, with
//! every diagnostic span inside the text on character boundaries, and every instruction it outputs must
//! decode again strictly from its canonical form (the extractor never emits an instruction the engine
//! would refuse to read). The repair parser is fuzzed on the same text from two starting points.

#![no_main]

use libfuzzer_sys::fuzz_target;
use statecraft_engine::Batch;
use statecraft_translators::{ExtractOptions, extract, parse_value, repair_json};

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
    }
});
