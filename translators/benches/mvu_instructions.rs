//! One MVU translation of each bench input, for an instruction counter: on a shared machine wall-clock
//! figures drift with the load, instruction counts do not.
//!
//! Run under callgrind, counting only the translations (the input generation is left out):
//!
//! ```text
//! cargo bench --profile profiling -p statecraft-translators --bench mvu_instructions --no-run
//! valgrind --tool=callgrind --toggle-collect='*translate_once*' target/profiling/deps/mvu_instructions-HASH expressions
//! ```
//!
//! The argument names one input (`realistic`, `expressions`, `dense`, `unclosed_set`, `quoted_set`,
//! `quotes`, `nested_parentheses`, `exponent_tower`; `all` runs each once); a second argument sets the
//! size in megabytes (1 by default). Each translation's instruction and diagnostic counts are printed,
//! so a change that alters the output shows up next to its cost.

use std::hint::black_box;

use statecraft_translators::mvu::{self, MvuOptions};

use statecraft_test_support::mvu_inputs as inputs;

use inputs::{MEGABYTE, adversarial, expressions, expressions_dense, realistic};

/// One translation, dropped before returning, as criterion's timing loop drops it.
#[inline(never)]
fn translate_once(text: &str, options: &MvuOptions) -> (usize, usize) {
    let translation = mvu::from_text(black_box(text), options);
    (
        translation.instructions.len(),
        translation.diagnostics.len(),
    )
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let which = args.next().unwrap_or_else(|| "all".to_owned());
    let megabytes: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let size = megabytes * MEGABYTE;
    let mut named: Vec<(String, String)> = vec![
        ("realistic".to_owned(), realistic(size)),
        ("expressions".to_owned(), expressions(size)),
        ("dense".to_owned(), expressions_dense(size)),
    ];
    for (name, text) in adversarial(size) {
        let short = name.trim_end_matches("_argument");
        named.push((short.to_owned(), text));
    }
    let options = MvuOptions::default();
    let mut ran = false;
    for (name, text) in &named {
        if which == "all" || which == *name {
            let (instructions, diagnostics) = translate_once(text, &options);
            println!(
                "{name}: {} bytes, {instructions} instructions, {diagnostics} diagnostics",
                text.len()
            );
            ran = true;
        }
    }
    if !ran {
        let names: Vec<&str> = named.iter().map(|(name, _)| name.as_str()).collect();
        eprintln!("unknown input {which:?}; one of all, {}", names.join(", "));
        std::process::exit(2);
    }
}
