//! Fuzzes the MVU translator: any bytes, read as text, must translate without panicking, with every
//! diagnostic span inside the text, and whatever it reads must write back as MVU text without panicking.
//! Hangs are caught by libFuzzer's timeout; the scanner's budget keeps it linear.

#![no_main]

use libfuzzer_sys::fuzz_target;
use statecraft_engine::Batch;
use statecraft_translators::{MvuOptions, to_mvu, translate};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let translation = translate(&text, &MvuOptions::default());
    for diagnostic in &translation.diagnostics {
        assert!(diagnostic.span.start <= diagnostic.span.end && diagnostic.span.end <= text.len());
    }
    let (written, _) = to_mvu(&Batch::new(translation.instructions));
    let _ = translate(&written, &MvuOptions::default());
});
