//! Fuzzes the MVU translator: any bytes, read as text, must translate without panicking, with every
//! diagnostic span inside the text on character boundaries. Whatever it reads must write back as MVU
//! text (`to_text`) without panicking, and when the writer reports nothing lost, that text must read
//! back as exactly the same instructions and write again as the same text.
//! Hangs are caught by libFuzzer's timeout; the scanner's budget keeps it linear.

#![no_main]

use libfuzzer_sys::fuzz_target;
use statecraft_engine::Batch;
use statecraft_translators::Severity;
use statecraft_translators::mvu::{self, MvuOptions};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let translation = mvu::from_text(&text, &MvuOptions::default());
    for diagnostic in &translation.diagnostics {
        assert!(diagnostic.span.start <= diagnostic.span.end && diagnostic.span.end <= text.len());
        assert!(
            text.is_char_boundary(diagnostic.span.start)
                && text.is_char_boundary(diagnostic.span.end),
            "a diagnostic span cuts a character: {:?}",
            diagnostic.span
        );
    }
    let batch = Batch::new(translation.instructions);
    let (written, emitted) = mvu::to_text(&batch);
    let read = mvu::from_text(&written, &MvuOptions::default());
    if emitted.is_empty() {
        assert!(
            read.diagnostics
                .iter()
                .all(|d| d.severity != Severity::Error),
            "written MVU text does not read back: {written}\n{:?}",
            read.diagnostics
        );
        assert_eq!(read.instructions, batch.instructions, "{written}");
        let (again, _) = mvu::to_text(&Batch::new(read.instructions));
        assert_eq!(again, written);
    }
});
