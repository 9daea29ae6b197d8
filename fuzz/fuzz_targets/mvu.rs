//! Fuzzes the MVU translator: any bytes, read as text, must translate without panicking, with every
//! diagnostic span inside the text, and whatever it reads must write back as MVU text without panicking.
//! Hangs are caught by libFuzzer's timeout; the scanner's budget keeps it linear.

#![no_main]

use libfuzzer_sys::fuzz_target;
use statecraft_engine::Batch;
use statecraft_translators::mvu::{self, MvuOptions};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let translation = mvu::from_text(&text, &MvuOptions::default());
    for diagnostic in &translation.diagnostics {
        assert!(diagnostic.span.start <= diagnostic.span.end && diagnostic.span.end <= text.len());
    }
    let (written, _) = mvu::to_text(&Batch::new(translation.instructions));
    let _ = mvu::from_text(&written, &MvuOptions::default());
});
