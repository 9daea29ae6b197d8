//! A fixed amount of the `before` hook bench's work, for instruction counts under callgrind (wall
//! clock is unreliable on a shared machine). Runs one case of `benches/callbacks.rs`'s "before hook"
//! group a given number of times:
//!
//! ```text
//! cargo build --profile profiling -p statecraft-scripts --example before_hook_cost
//! valgrind --tool=callgrind target/profiling/examples/before_hook_cost CASE N
//! ```
//!
//! where CASE is `none` (no hook), `reads` (reads every instruction, no edit) or `edits` (edits
//! one). The cost of one apply is the difference of two runs with different N, divided by the
//! difference of the N.

#[path = "../benches/common/before_hook.rs"]
mod before_hook;

use before_hook::{EDITS, READS, store_with, ten_assigns};

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: before_hook_cost none|reads|edits N";
    let case = args.next().expect(usage);
    let times: usize = args.next().and_then(|n| n.parse().ok()).expect(usage);
    let scripts: &[(&str, &str)] = match case.as_str() {
        "none" => &[],
        "reads" => &[("hook.lua", READS)],
        "edits" => &[("hook.lua", EDITS)],
        _ => panic!("{usage}"),
    };
    let batch = ten_assigns();
    let mut store = store_with(scripts);
    for _ in 0..times {
        assert!(store.apply(&batch).is_committed());
    }
}
