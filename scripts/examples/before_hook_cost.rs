//! A fixed amount of the `before` hook bench's work, for instruction counts under callgrind (wall
//! clock is unreliable on a shared machine). Runs one case of `benches/callbacks.rs`'s "before hook"
//! group a given number of times:
//!
//! ```text
//! cargo build --profile bench -p statecraft-scripts --example before_hook_cost
//! valgrind --tool=callgrind target/release/examples/before_hook_cost CASE N
//! ```
//!
//! where CASE is `none` (no hook), `reads` (reads every instruction, no edit) or `edits` (edits
//! one). The cost of one apply is the difference of two runs with different N, divided by the
//! difference of the N.

use serde_json::json;
use statecraft_engine::{Batch, HistoryLimits, Limits, Store, Value};
use statecraft_scripts::LuaHandlers;

const READS: &str = r#"
before(function(ctx, batch)
    for _, ins in ipairs(batch) do
        if ins.path[2] == "max-hp" then ins.path[2] = "max_hp" end
    end
    return batch
end)"#;

const EDITS: &str = r#"
before(function(ctx, batch)
    for _, ins in ipairs(batch) do
        if ins.path[2] == "stat-3" then ins.path[2] = "stat_3" end
    end
    return batch
end)"#;

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
    let instructions: Vec<_> = (0..10)
        .map(|i| json!({"op": "assign", "path": ["player", format!("stat-{i}")], "value": i}))
        .collect();
    let batch = Batch::from_json(&json!(instructions)).expect("valid");
    let limits = Limits::default();
    let handlers = LuaHandlers::from_sources(scripts.iter().copied(), &limits).expect("loads");
    let state = Value::from_json(
        &json!({"monster": {"hp": 1_000_000_000, "name": "orc"}, "player": {"hp": 100}}),
    );
    let mut store = Store::builder(state)
        .handler(handlers)
        .limits(limits)
        .history_limits(HistoryLimits {
            max_steps: 64,
            ..HistoryLimits::default()
        })
        .build()
        .expect("no schema");
    for _ in 0..times {
        assert!(store.apply(&batch).is_committed());
    }
}
