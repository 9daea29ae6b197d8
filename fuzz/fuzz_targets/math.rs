//! Fuzzes the math.js subset evaluator: any bytes, read as text, must evaluate without panicking, to a
//! number, a reason for keeping the text, or "not math". Hangs are caught by libFuzzer's timeout; the
//! evaluator's length and depth limits keep it linear. Seeds for hostile shapes (a megabyte of nested
//! parentheses, exponent towers) can be given as a corpus folder; run with `-max_len=1048576` to feed
//! them whole.

#![no_main]

use libfuzzer_sys::fuzz_target;
use statecraft_translators::mvu::{self, MathOutcome, MvuOptions};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match mvu::evaluate_math(&text) {
        MathOutcome::Number(number) => {
            // A number result is always finite: JSON has no other kind.
            assert!(number.as_f64().is_some_and(f64::is_finite), "{number}");
        }
        MathOutcome::Outside(reason) => assert!(!reason.is_empty()),
        _ => {}
    }
    // The same text as an MVU argument goes through the whole value chain.
    let command = format!("_.set('v', {text});");
    let _ = mvu::from_text(&command, &MvuOptions::default());
});
