//! The `before` hook workload of issue 17, shared by `benches/callbacks.rs` (criterion's wall clock)
//! and `examples/before_hook_cost.rs` (a fixed number of applies, for instruction counts), so that
//! both measure the same thing: a 10-assign batch applied with no hook, with a hook that reads every
//! instruction and hands the batch back unchanged, or with one that also fixes one path (a reported
//! rewrite).

use serde_json::json;
use statecraft_engine::{Batch, HistoryLimits, Limits, Store, Value};
use statecraft_scripts::LuaHandlers;

/// Reads every instruction's path; no instruction of the batch matches, so nothing changes.
pub(crate) const READS: &str = r#"
before(function(ctx, batch)
    for _, ins in ipairs(batch) do
        if ins.path[2] == "max-hp" then ins.path[2] = "max_hp" end
    end
    return batch
end)"#;

/// The same, but one instruction matches and is edited.
pub(crate) const EDITS: &str = r#"
before(function(ctx, batch)
    for _, ins in ipairs(batch) do
        if ins.path[2] == "stat-3" then ins.path[2] = "stat_3" end
    end
    return batch
end)"#;

/// The batch: 10 assigns under `player`.
pub(crate) fn ten_assigns() -> Batch {
    let instructions: Vec<_> = (0..10)
        .map(|i| json!({"op": "assign", "path": ["player", format!("stat-{i}")], "value": i}))
        .collect();
    Batch::from_json(&json!(instructions)).expect("valid")
}

/// A store on a small state with `scripts` loaded and 64 steps of history.
pub(crate) fn store_with(scripts: &[(&str, &str)]) -> Store {
    let limits = Limits::default();
    let handlers = LuaHandlers::from_sources(scripts.iter().copied(), &limits).expect("loads");
    let state = Value::from_json(
        &json!({"monster": {"hp": 1_000_000_000, "name": "orc"}, "player": {"hp": 100}}),
    );
    Store::builder(state)
        .handler(handlers)
        .limits(limits)
        .history_limits(HistoryLimits {
            max_steps: 64,
            ..HistoryLimits::default()
        })
        .build()
        .expect("no schema")
}
