//! What one batch may cost its host: its time (a deadline the host gives it), what its commit carries
//! (changes and events, which every answer and step record spells out), and its label.

use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use statecraft_engine::{
    ApplyOptions, Batch, CallbackCall, CallbackHandler, ErrorKind, HandlerError, HostEvent, Limits,
    Outcome, Policies, Response, Store, Value,
};

use statecraft_test_support::unchanged;

use unchanged::Unchanged;

fn batch(json: Json) -> Batch {
    Batch::from_json(&json).unwrap()
}

fn kinds(outcome: Outcome) -> Vec<ErrorKind> {
    outcome
        .rejected()
        .expect("rejected")
        .iter()
        .map(|e| e.kind)
        .collect()
}

/// `slow` spins for two milliseconds, as a script looping in every callback would; `loud` sends an
/// event whose payload is its argument.
struct Slow;

impl CallbackHandler for Slow {
    fn call(&mut self, call: CallbackCall<'_>) -> Result<Response, HandlerError> {
        match call.name {
            "slow" => {
                let until = Instant::now() + Duration::from_millis(2);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
                Ok(Response::default())
            }
            "loud" => Ok(Response {
                events: vec![HostEvent {
                    name: "loud".into(),
                    payload: call.args.first().cloned().unwrap_or_default(),
                }],
                ..Response::default()
            }),
            _ => Err(HandlerError::Unknown),
        }
    }
}

fn slow_batch(n: usize) -> Batch {
    let mut ops = vec![json!({"op": "assign", "path": ["touched"], "value": true})];
    ops.extend((0..n).map(|_| json!({"op": "callback", "path": ["slow"]})));
    batch(Json::Array(ops))
}

#[test]
fn a_batch_stops_at_its_deadline_and_nothing_of_it_commits() {
    let mut store = Store::builder(Value::from(json!({"n": 0})))
        .handler(Slow)
        .build()
        .unwrap();
    let unchanged = Unchanged::of(&store);
    // 9,000 callbacks of 2 ms each would take 18 s; the deadline stops them after 100 ms.
    for best_effort in [false, true] {
        let started = Instant::now();
        let options = ApplyOptions {
            deadline: Some(started + Duration::from_millis(100)),
            best_effort,
            ..ApplyOptions::default()
        };
        let outcome = store.apply_with(&slow_batch(9_000), &options);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(1), "stopped after {took:?}");
        let errors = outcome.rejected().expect("rejected");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].kind, ErrorKind::DeadlineExceeded);
        assert_eq!(errors[0].kind.code(), "deadline_exceeded");
        unchanged.assert(&store, &format!("best effort {best_effort}"));
    }
    // The store is usable at once, and a batch within its deadline commits.
    let options = ApplyOptions {
        deadline: Some(Instant::now() + Duration::from_secs(10)),
        ..ApplyOptions::default()
    };
    assert!(store.apply_with(&slow_batch(3), &options).is_committed());
}

#[test]
fn plain_instructions_read_the_clock_too() {
    let mut store = Store::new(Value::from(json!({"n": 0})));
    let ops: Vec<Json> = (0..1_000)
        .map(|_| json!({"op": "increment", "path": ["n"], "value": 1}))
        .collect();
    let passed = ApplyOptions {
        deadline: Some(Instant::now()),
        ..ApplyOptions::default()
    };
    assert_eq!(
        kinds(store.apply_with(&batch(Json::Array(ops.clone())), &passed)),
        [ErrorKind::DeadlineExceeded]
    );
    assert_eq!(store.state().to_json(), json!({"n": 0}));
    assert!(
        store
            .apply_with(&batch(Json::Array(ops)), &ApplyOptions::default())
            .is_committed()
    );
}

#[test]
fn what_a_commit_carries_is_bounded_though_copies_share_their_parts() {
    // A part of about 1.1 MB (estimated); each copy onto /b records the part it replaces and the new
    // one, so five copies carry about ten times the part while the state only doubles.
    let big: Vec<String> = (0..1_000).map(|i| format!("{i:01000}")).collect();
    let limits = Limits {
        max_commit_bytes: 4_000_000,
        ..Limits::default()
    };
    let mut store = Store::builder(Value::from(json!({"a": big})))
        .limits(limits.clone())
        .build()
        .unwrap();
    let unchanged = Unchanged::of(&store);
    let five = batch(json!([
        {"op": "copy", "from": "/a", "path": "/b"},
        {"op": "copy", "from": "/a", "path": "/b"},
        {"op": "copy", "from": "/a", "path": "/b"},
        {"op": "copy", "from": "/a", "path": "/b"},
        {"op": "copy", "from": "/a", "path": "/b"},
    ]));
    let errors = store.apply(&five).rejected().expect("rejected");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].kind, ErrorKind::CommitTooLarge);
    assert_eq!(
        errors[0].instruction.as_ref().map(|t| t.0.clone()),
        Some(vec![2])
    );
    assert!(
        errors[0]
            .message
            .contains("more than the 4000000 bytes (estimated) one commit may carry"),
        "{}",
        errors[0].message
    );
    unchanged.assert(&store, "a commit too large");
    // One copy carries the part once, and commits.
    assert!(
        store
            .apply(&batch(json!([{"op": "copy", "from": "/a", "path": "/b"}])))
            .is_committed()
    );
    // Events count too: a handler sending the part back as a payload, again and again.
    let mut loud = Store::builder(Value::object())
        .limits(limits)
        .handler(Slow)
        .build()
        .unwrap();
    let part: Vec<String> = (0..1_000).map(|i| format!("{i:01000}")).collect();
    let calls: Vec<Json> = (0..5)
        .map(|_| json!({"op": "callback", "path": ["loud"], "value": [part]}))
        .collect();
    assert_eq!(
        kinds(loud.apply(&batch(Json::Array(calls)))),
        [ErrorKind::CommitTooLarge]
    );
}

#[test]
fn a_label_is_bounded_and_counted_in_the_history() {
    let limits = Limits {
        max_label_bytes: 16,
        ..Limits::default()
    };
    let mut store = Store::builder(Value::object())
        .limits(limits)
        .build()
        .unwrap();
    let labelled = |label: &str| ApplyOptions {
        label: Some(label.to_owned()),
        ..ApplyOptions::default()
    };
    let set = batch(json!({"op": "assign", "path": ["a"], "value": 1}));
    let errors = store
        .apply_with(&set, &labelled(&"m".repeat(17)))
        .rejected()
        .expect("rejected");
    assert_eq!(errors[0].kind, ErrorKind::LabelTooLong);
    assert_eq!(
        errors[0].message,
        "the step's label is 17 bytes long; the limit is 16"
    );
    assert_eq!(store.history_len(), 0);
    // The label a step keeps is in the bytes the history counts.
    let mut short = Store::new(Value::object());
    let mut long = Store::new(Value::object());
    assert!(short.apply_with(&set, &labelled("m")).is_committed());
    assert!(
        long.apply_with(&set, &labelled(&"m".repeat(1001)))
            .is_committed()
    );
    assert_eq!(long.history_bytes() - short.history_bytes(), 2 * 1000);
}

#[test]
fn a_mismatch_on_a_large_part_quotes_only_its_beginning() {
    let big: Vec<i64> = (0..100_000).collect();
    let mut store = Store::builder(Value::from(json!({"a": big})))
        .policies(Policies {
            old_mismatch: statecraft_engine::OldMismatch::Warn,
            ..Policies::default()
        })
        .build()
        .unwrap();
    // Each push finds the whole list where it expected 5: before, every warning quoted all of it.
    let ops: Vec<Json> = (0..100)
        .map(|_| json!({"op": "push", "path": ["a"], "value": 1, "old": 5}))
        .chain([json!({"op": "assign", "path": ["b"], "value": 1, "old": {"x": "y"}})])
        .collect();
    let commit = store
        .apply(&batch(Json::Array(ops)))
        .committed()
        .expect("committed with warnings");
    assert_eq!(commit.warnings.len(), 101);
    let test = store
        .apply(&batch(json!([{"op": "test", "path": "/a", "value": 1}])))
        .rejected()
        .expect("rejected");
    for message in commit
        .warnings
        .iter()
        .chain(&test)
        .map(|w| w.message.as_str())
    {
        assert!(
            message.len() < 600,
            "{} bytes: {}",
            message.len(),
            &message[..600]
        );
    }
    assert!(test[0].message.ends_with("…"), "{}", test[0].message);
}
