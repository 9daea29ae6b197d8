//! A batch's deadline stops the scripts it runs: a script inside one long call, and a batch of many
//! calls each within its own budget, are both stopped once the batch's time is up, and the VM runs the
//! next batch at once.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use statecraft_engine::{ApplyOptions, ErrorKind, Limits};
use support::{Unchanged, batch, store_with, watchdog};

const SPIN: &str = r#"
on("spin", function(ctx, n)
    local x = 0
    for i = 1, n do x = x + i end
    return x
end)
"#;

/// Budgets per call far beyond the deadlines below, so that only the deadline can stop a call.
fn generous() -> Limits {
    Limits {
        max_callback_steps: u64::MAX,
        max_callback_time: Duration::from_secs(600),
        ..Limits::default()
    }
}

fn within(deadline: Duration) -> ApplyOptions {
    ApplyOptions {
        deadline: Some(Instant::now() + deadline),
        ..ApplyOptions::default()
    }
}

#[test]
fn one_long_call_stops_at_the_deadline() {
    watchdog(60, || {
        let mut store = store_with(&[("spin.lua", SPIN)], json!({"n": 0}), generous());
        let unchanged = Unchanged::of(&store);
        let started = Instant::now();
        let spin = batch(json!([
            {"op": "assign", "path": ["n"], "value": 1},
            {"op": "callback", "path": ["spin"], "value": [1e15]},
        ]));
        let errors = store
            .apply_with(&spin, &within(Duration::from_millis(200)))
            .rejected()
            .expect("rejected");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "stopped after {took:?}");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].kind, ErrorKind::DeadlineExceeded, "{errors:?}");
        unchanged.assert(&store, "a rejected batch");
        // The same VM runs the next batch at once.
        let small = batch(json!([{"op": "callback", "path": ["spin"], "value": [10]}]));
        let commit = store
            .apply_with(&small, &within(Duration::from_secs(10)))
            .committed()
            .expect("committed");
        assert_eq!(commit.results, [Some(statecraft_engine::Value::from(55))]);
    });
}

#[test]
fn many_calls_each_within_budget_stop_at_the_deadline() {
    watchdog(60, || {
        let mut store = store_with(&[("spin.lua", SPIN)], json!({"n": 0}), generous());
        let unchanged = Unchanged::of(&store);
        // About a million steps per call, 5,000 calls: minutes of work without the deadline.
        let calls: Vec<Json> = (0..5_000)
            .map(|_| json!({"op": "callback", "path": ["spin"], "value": [1_000_000]}))
            .collect();
        let started = Instant::now();
        let outcome = store.apply_with(
            &batch(Json::Array(calls)),
            &within(Duration::from_millis(300)),
        );
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "stopped after {took:?}");
        let errors = outcome.rejected().expect("rejected");
        assert_eq!(errors[0].kind, ErrorKind::DeadlineExceeded, "{errors:?}");
        unchanged.assert(&store, "a rejected batch");
    });
}
