//! The store as a host sees it: limits and hostile input, callbacks, history, snapshots, the schema.

use serde_json::{Value as Json, json};
use statecraft_engine::{
    ApplyOptions, Batch, CallbackCall, CallbackHandler, ErrorKind, HandlerError, HistoryLimits,
    HostEvent, Instruction, Limits, Outcome, Policies, Response, StateSchema, Store,
    UnknownCallback, Value, WatchCall, path,
};

use statecraft_test_support::unchanged;

use unchanged::Unchanged;

fn store(state: Json) -> Store {
    Store::new(Value::from(state))
}

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

// Limits and hostile input.

#[test]
fn a_hundred_thousand_levels_of_nesting_is_a_clear_error() {
    let text = format!(
        "{{\"op\":\"assign\",\"path\":[\"a\"],\"value\":{}1{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let errors = Batch::parse(&text).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]
            .message
            .starts_with("not valid JSON: recursion limit exceeded"),
        "{}",
        errors[0]
    );
}

#[test]
fn value_depth_limit() {
    let limits = Limits {
        max_value_depth: 3,
        ..Limits::default()
    };
    let mut store = Store::builder(Value::object())
        .limits(limits)
        .build()
        .unwrap();
    let ok = batch(json!({"op": "assign", "path": ["a"], "value": [[[1]]]}));
    assert!(store.apply(&ok).is_committed());
    let deep = batch(json!({"op": "assign", "path": ["a"], "value": [[[[1]]]]}));
    let errors = store.apply(&deep).rejected().unwrap();
    assert_eq!(
        errors[0].to_string(),
        "instruction 0, field /value: the value nests 4 levels deep; the limit is 3"
    );
}

#[test]
fn path_depth_limit_with_ten_thousand_segments() {
    let segments: Vec<Json> = (0..10_000).map(|i| json!(format!("k{i}"))).collect();
    let mut store = store(json!({}));
    let outcome = store.apply(&batch(
        json!({"op": "assign", "path": segments, "value": 1}),
    ));
    let errors = outcome.rejected().unwrap();
    assert_eq!(errors[0].kind, ErrorKind::PathTooDeep);
    assert_eq!(
        errors[0].to_string(),
        "instruction 0, field /path: the path has 10000 segments; the limit is 32"
    );
}

#[test]
fn string_length_limit_covers_values_keys_and_reasons() {
    let limits = Limits {
        max_string_bytes: 8,
        ..Limits::default()
    };
    let mut store = Store::builder(Value::object())
        .limits(limits)
        .build()
        .unwrap();
    let huge = "x".repeat(50_000_000);
    let outcome = store.apply(&Batch::new(vec![
        Instruction::assign(path!["a"], huge.as_str()),
        Instruction::assign(path!["a"], Value::from(json!({"long key here": 1}))),
        Instruction::assign(path!["a"], 1).with_reason("far too long a reason"),
    ]));
    let errors: Vec<String> = outcome
        .rejected()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors,
        [
            "instruction 0, field /value: a string of 50000000 bytes; the limit is 8",
            "instruction 1, field /value/long key here: a string of 13 bytes; the limit is 8",
            "instruction 2, field /reason: a string of 21 bytes; the limit is 8",
        ]
    );
}

#[test]
fn batch_length_limit() {
    let limits = Limits {
        max_batch_len: 2,
        ..Limits::default()
    };
    let mut store = Store::builder(Value::object())
        .limits(limits)
        .build()
        .unwrap();
    let three = Batch::new(vec![Instruction::assign(path!["a"], 1); 3]);
    let errors = store.apply(&three).rejected().unwrap();
    assert_eq!(
        errors[0].to_string(),
        "the batch has 3 instructions; the limit is 2"
    );
}

/// `n` JSON Patch copies of `from` into `to`, as one batch.
fn copies(n: usize, from: &str, to: impl Fn(usize) -> String) -> Batch {
    let ops: Vec<Json> = (0..n)
        .map(|i| json!({"op": "copy", "from": from, "path": to(i)}))
        .collect();
    batch(Json::Array(ops))
}

#[test]
fn state_depth_limit_covers_what_copies_build() {
    // Each copy of /x into /x/x nests the state one level deeper while every instruction stays small.
    let mut store = store(json!({"x": {"x": 1}}));
    let unchanged = Unchanged::of(&store);
    let outcome = store.apply(&copies(200, "/x", |_| "/x/x".to_owned()));
    let errors = outcome.rejected().expect("rejected");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind, ErrorKind::StateTooDeep);
    assert!(
        errors[0].to_string().starts_with(
            "instruction 62, at /x/x: this would nest the state 65 levels deep; the limit is 64"
        ),
        "{}",
        errors[0]
    );
    unchanged.assert(&store, "a state too deep");
    // Up to the limit it commits, and the result is as deep as the limit allows.
    assert!(
        store
            .apply(&copies(62, "/x", |_| "/x/x".to_owned()))
            .is_committed()
    );
    assert_eq!(store.state().depth(), 64);
    // A state deeper than the limit (one loaded from a file) still takes batches that build nothing deep.
    let limits = Limits {
        max_state_depth: 3,
        ..Limits::default()
    };
    let mut deep = Store::builder(Value::from(json!({"a": {"b": {"c": {"d": 1}}}, "n": 1})))
        .limits(limits)
        .build()
        .unwrap();
    assert!(
        deep.apply(&batch(
            json!({"op": "increment", "path": ["n"], "value": 1})
        ))
        .is_committed()
    );
    assert_eq!(
        kinds(deep.apply(&batch(
            json!({"op": "assign", "path": ["m"], "value": [[[1]]]})
        ))),
        [ErrorKind::StateTooDeep]
    );
}

#[test]
fn state_size_limit() {
    let limits = Limits {
        max_state_bytes: 20_000,
        ..Limits::default()
    };
    let mut store = Store::builder(Value::from(
        json!({"x": {"list": [1, 2, 3, 4, 5, 6, 7, 8]}}),
    ))
    .limits(limits.clone())
    .build()
    .unwrap();
    let unchanged = Unchanged::of(&store);
    // Each copy of /x into /x/yN doubles the state.
    let outcome = store.apply(&copies(26, "/x", |i| format!("/x/y{i}")));
    let errors = outcome.rejected().expect("rejected");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind, ErrorKind::StateTooLarge);
    assert!(
        errors[0]
            .message
            .starts_with("this would grow the state to ")
            && errors[0]
                .message
                .ends_with("bytes (estimated); the limit is 20000"),
        "{}",
        errors[0]
    );
    unchanged.assert(&store, "a state too large");
    // Removing from the state, or changing it without growing it, is never refused by the size.
    let mut store = Store::builder(Value::from(json!({"big": "x".repeat(30_000), "n": 1})))
        .limits(limits)
        .build()
        .unwrap();
    assert!(
        store
            .apply(&batch(
                json!({"op": "increment", "path": ["n"], "value": 1})
            ))
            .is_committed()
    );
    assert_eq!(
        kinds(store.apply(&batch(json!({"op": "assign", "path": ["m"], "value": 1})))),
        [ErrorKind::StateTooLarge]
    );
    assert!(
        store
            .apply(&batch(json!({"op": "delete", "path": ["big"]})))
            .is_committed()
    );
    assert!(
        store
            .apply(&batch(json!({"op": "assign", "path": ["m"], "value": 1})))
            .is_committed()
    );
}

#[test]
fn op_size_limit() {
    let limits = Limits {
        max_op_bytes: 5_000,
        ..Limits::default()
    };
    let list: Vec<i64> = (0..300).collect();
    let mut store = Store::builder(Value::from(json!({"list": list})))
        .limits(limits.clone())
        .build()
        .unwrap();
    let errors = store
        .apply(&batch(
            json!([{"op": "copy", "from": "/list", "path": "/again"}]),
        ))
        .rejected()
        .expect("rejected");
    assert_eq!(
        errors[0].to_string(),
        "instruction 0, at /again: this instruction writes more than the 5000 bytes (estimated) one \
         instruction may write into the state"
    );
    assert_eq!(errors[0].kind, ErrorKind::OpTooLarge);
    // The same bytes in small instructions are within the limit.
    let small: Vec<Json> = (0..4)
        .map(|i| json!({"op": "copy", "from": "/list", "path": format!("/part{i}")}))
        .collect();
    let limits = Limits {
        max_op_bytes: 8_000,
        ..limits
    };
    let mut store = Store::builder(Value::from(json!({"list": (0..100).collect::<Vec<i64>>()})))
        .limits(limits)
        .build()
        .unwrap();
    assert!(store.apply(&batch(Json::Array(small))).is_committed());
}

#[test]
fn the_default_limits_stop_a_doubling_reply() {
    // 26 copies double a small state 26 times: tens of gigabytes once written out, in 1.3 KB of reply.
    let mut store = store(json!({"x": {"x": 1}}));
    let outcome = store.apply(&copies(26, "/x", |i| format!("/x/y{i}")));
    let kinds = kinds(outcome);
    assert!(
        kinds == [ErrorKind::OpTooLarge] || kinds == [ErrorKind::StateTooLarge],
        "{kinds:?}"
    );
    assert_eq!(store.state().to_json(), json!({"x": {"x": 1}}));
}

#[test]
fn a_new_state_is_checked_against_the_build_limits() {
    let limits = Limits {
        max_state_depth: 2,
        max_state_bytes: 100,
        ..Limits::default()
    };
    let errors = limits.check_state(&Value::from(json!({"a": {"b": {"c": "x".repeat(200)}}})));
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors[0].kind, ErrorKind::StateTooDeep);
    assert_eq!(errors[1].kind, ErrorKind::StateTooLarge);
    assert_eq!(
        messages[0],
        "at (root): the state nests 3 levels deep; the limit is 2"
    );
    assert!(
        messages[1].starts_with("at (root): the state holds "),
        "{}",
        messages[1]
    );
    assert!(limits.check_state(&Value::from(json!({"a": 1}))).is_empty());
}

#[test]
fn forbidden_segments_are_configurable() {
    let mut store = Store::builder(Value::object())
        .forbidden_segments(["secret"])
        .build()
        .unwrap();
    assert_eq!(
        kinds(store.apply(&batch(
            json!({"op": "assign", "path": ["secret"], "value": 1})
        ))),
        [ErrorKind::ForbiddenSegment]
    );
    assert!(
        store
            .apply(&batch(
                json!({"op": "assign", "path": ["__proto__"], "value": 1})
            ))
            .is_committed()
    );
}

// Callbacks.

/// A Rust handler: `levelUp` emits an assign and an event; `boom` fails; `chain` emits itself;
/// `spam` emits many instructions; a watcher on `hp` keeps `alive` in step.
#[derive(Default)]
struct Game {
    calls: Vec<String>,
}

impl CallbackHandler for Game {
    fn call(&mut self, call: CallbackCall<'_>) -> Result<Response, HandlerError> {
        self.calls.push(call.name.to_owned());
        let level = |state: &Value| {
            state
                .as_object()
                .and_then(|m| m.get("level"))
                .cloned()
                .unwrap_or(Value::from(0))
        };
        match call.name {
            "levelUp" => {
                let Value::Number(n) = level(call.state) else {
                    return Err(HandlerError::Failed("level is not a number".into()));
                };
                let next = n.as_i64().unwrap_or(0) + 1;
                Ok(Response {
                    value: Some(Value::from(next)),
                    instructions: vec![
                        Instruction::assign(path!["level"], next).with_reason("level up"),
                    ],
                    events: vec![HostEvent {
                        name: "message".into(),
                        payload: call.args.first().cloned().unwrap_or_default(),
                    }],
                })
            }
            "boom" => Err(HandlerError::Failed(
                "script.lua:3: attempt to index nil".into(),
            )),
            "chain" => Ok(Response {
                instructions: vec![Instruction::new(
                    statecraft_engine::Op::Callback,
                    path!["chain"],
                )],
                ..Response::default()
            }),
            "spam" => Ok(Response {
                instructions: vec![Instruction::assign(path!["x"], 1); 1_000],
                ..Response::default()
            }),
            "bad" => Ok(Response {
                instructions: vec![Instruction::assign(path![], 1)],
                ..Response::default()
            }),
            "leaky" => Ok(Response {
                value: Some(Value::from(json!({"__proto__": 1}))),
                events: vec![HostEvent {
                    name: "m".into(),
                    payload: Value::from(json!({"a": {"secret": 1}})),
                }],
                ..Response::default()
            }),
            _ => Err(HandlerError::Unknown),
        }
    }

    fn watch(&mut self, call: WatchCall<'_>) -> Result<Response, HandlerError> {
        let touched_hp = call
            .changes
            .iter()
            .any(|c| c.path.starts_with(&path!["hp"]));
        if !touched_hp {
            return Ok(Response::default());
        }
        let hp = call
            .state
            .as_object()
            .and_then(|m| m.get("hp"))
            .and_then(Value::as_number)
            .and_then(|n| n.as_i64());
        Ok(Response {
            instructions: vec![Instruction::assign(path!["alive"], hp.unwrap_or(0) > 0)],
            ..Response::default()
        })
    }
}

#[test]
fn callbacks_emit_into_the_same_batch_and_events_arrive_on_commit() {
    let mut store = Store::builder(Value::from(json!({"level": 1})))
        .handler(Game::default())
        .build()
        .unwrap();
    let commit = store
        .apply(&batch(json!([
            {"op": "callback", "path": ["levelUp"], "value": "Level up!"},
            {"op": "get", "path": ["level"]},
        ])))
        .committed()
        .unwrap();
    assert_eq!(store.state().to_json(), json!({"level": 2}));
    assert_eq!(commit.results, [Some(Value::from(2)), Some(Value::from(2))]);
    assert_eq!(
        commit.events,
        [HostEvent {
            name: "message".into(),
            payload: Value::from("Level up!")
        }]
    );
    assert_eq!(commit.changes[0].reason.as_deref(), Some("level up"));
}

#[test]
fn events_of_a_rejected_batch_never_arrive_and_the_state_is_untouched() {
    let mut store = Store::builder(Value::from(json!({"level": 1})))
        .handler(Game::default())
        .build()
        .unwrap();
    let unchanged = Unchanged::of(&store);
    let errors = store
        .apply(&batch(json!([
            {"op": "callback", "path": ["levelUp"], "value": "Level up!"},
            {"op": "callback", "path": ["boom"]},
        ])))
        .rejected()
        .unwrap();
    assert_eq!(
        errors[0].to_string(),
        "instruction 1, field (whole): callback \"boom\" failed: script.lua:3: attempt to index nil"
    );
    unchanged.assert(&store, "a callback failed");
}

#[test]
fn emitted_instructions_are_validated() {
    let mut store = Store::builder(Value::object())
        .handler(Game::default())
        .build()
        .unwrap();
    let errors = store
        .apply(&batch(json!({"op": "callback", "path": ["bad"]})))
        .rejected()
        .unwrap();
    assert_eq!(
        errors[0].to_string(),
        "instruction 0 > emitted 0, field /path: assign needs a path inside the state; only get and merge may target the root"
    );
}

#[test]
fn handler_results_and_event_payloads_follow_the_value_rules() {
    let mut store = Store::builder(Value::object())
        .handler(Game::default())
        .forbidden_segments(["__proto__", "secret"])
        .build()
        .unwrap();
    let errors = store
        .apply(&batch(json!({"op": "callback", "path": ["leaky"]})))
        .rejected()
        .unwrap();
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "instruction 0, field /result/__proto__: \"__proto__\" is a forbidden key (front ends are JavaScript; it would reach the object prototype)",
        ]
    );
    let mut store = Store::builder(Value::object())
        .handler(Game::default())
        .forbidden_segments(["secret"])
        .build()
        .unwrap();
    let errors = store
        .apply(&batch(json!({"op": "callback", "path": ["leaky"]})))
        .rejected()
        .unwrap();
    assert_eq!(
        errors[0].to_string(),
        "instruction 0, field /events/0/payload/a/secret: \"secret\" is a forbidden key (front ends are JavaScript; it would reach the object prototype)"
    );
}

#[test]
fn cascade_depth_and_emitted_count_are_limited() {
    let mut store = Store::builder(Value::object())
        .handler(Game::default())
        .build()
        .unwrap();
    let errors = store
        .apply(&batch(json!({"op": "callback", "path": ["chain"]})))
        .rejected()
        .unwrap();
    assert_eq!(errors[0].kind, ErrorKind::CascadeTooDeep);
    assert_eq!(
        errors[0].to_string(),
        "instruction 0 > emitted 0 > emitted 0 > emitted 0 > emitted 0 > emitted 0 > emitted 0 > emitted 0 > emitted 0, \
         field (whole): callbacks emitted instructions 9 levels deep; the limit is 8"
    );
    let limits = Limits {
        max_emitted: 1_500,
        ..Limits::default()
    };
    let mut store = Store::builder(Value::object())
        .handler(Game::default())
        .limits(limits)
        .build()
        .unwrap();
    let errors = store
        .apply(&batch(
            json!([{"op": "callback", "path": ["spam"]}, {"op": "callback", "path": ["spam"]}]),
        ))
        .rejected()
        .unwrap();
    assert_eq!(
        errors[0].to_string(),
        "instruction 1, field (whole): callbacks emitted 2000 instructions in this batch; the limit is 1500"
    );
}

#[test]
fn unknown_callbacks_follow_the_policy() {
    let mut store = store(json!({}));
    assert_eq!(
        kinds(store.apply(&batch(json!({"op": "callback", "path": ["nope"]})))),
        [ErrorKind::UnknownCallback]
    );
    let skip = Policies {
        unknown_callback: UnknownCallback::Skip,
        ..Policies::default()
    };
    let options = ApplyOptions {
        policies: Some(skip),
        ..ApplyOptions::default()
    };
    let commit = store
        .apply_with(
            &batch(json!({"op": "callback", "path": ["nope"]})),
            &options,
        )
        .committed()
        .unwrap();
    assert_eq!(commit.warnings[0].kind, ErrorKind::UnknownCallback);
}

#[test]
fn watchers_run_inside_the_batch() {
    let mut store = Store::builder(Value::from(json!({"hp": 5, "alive": true})))
        .handler(Game::default())
        .build()
        .unwrap();
    let commit = store
        .apply(&batch(json!({"op": "assign", "path": ["hp"], "value": 0})))
        .committed()
        .unwrap();
    assert_eq!(store.state().to_json(), json!({"hp": 0, "alive": false}));
    assert_eq!(commit.changes.len(), 2);
    store.undo().unwrap();
    assert_eq!(
        store.state().to_json(),
        json!({"hp": 5, "alive": true}),
        "one undo reverts the watcher's changes too"
    );
}

// History.

#[test]
fn undo_to_label_rolls_back_later_steps_on_the_current_line() {
    let mut store = store(json!({"n": 0}));
    for (i, label) in ["m1", "m2", "m3"].iter().enumerate() {
        let options = ApplyOptions {
            label: Some((*label).into()),
            ..ApplyOptions::default()
        };
        assert!(
            store
                .apply_with(
                    &batch(json!({"op": "assign", "path": ["n"], "value": i + 1})),
                    &options
                )
                .is_committed()
        );
    }
    assert_eq!(store.undo_to("m1").unwrap(), Some(2));
    assert_eq!(store.state().to_json(), json!({"n": 1}));
    assert_eq!(store.undo_to("nope").unwrap(), None);
    // A new commit after undo starts a branch; the undone steps stay, off the current line.
    assert!(
        store
            .apply(&batch(json!({"op": "assign", "path": ["n"], "value": 9})))
            .is_committed()
    );
    assert_eq!(store.redo().unwrap(), None);
    let labels: Vec<(Option<&str>, bool)> = store.history().map(|s| (s.label, s.applied)).collect();
    assert_eq!(
        labels,
        [
            (Some("m1"), true),
            (Some("m2"), false),
            (Some("m3"), false),
            (None, true)
        ]
    );
    assert_eq!(
        store.undo_to("m3").unwrap(),
        None,
        "m3 is on another branch: undo_to only goes back along the current line"
    );
    assert_eq!(store.checkout("m3").unwrap(), 3);
    assert_eq!(store.state().to_json(), json!({"n": 3}));
}

#[test]
fn an_empty_batch_with_a_label_is_a_step_that_undo_to_finds() {
    // A front end labels every message, also those that change nothing (docs/timeline.md: an empty batch is a
    // successful, empty commit, and each commit is a step).
    let mut store = store(json!({"n": 0}));
    let labelled = |label: &str| ApplyOptions {
        label: Some(label.into()),
        ..ApplyOptions::default()
    };
    let commit = store
        .apply_with(&Batch::new(Vec::new()), &labelled("msg-2"))
        .committed()
        .unwrap();
    assert!(commit.step.is_some() && commit.changes.is_empty());
    let increment = batch(json!({"op": "increment", "path": ["n"], "value": 1}));
    assert!(
        store
            .apply_with(&increment, &labelled("msg-3"))
            .is_committed()
    );
    assert_eq!(store.undo_to("msg-2").unwrap(), Some(1));
    assert_eq!(store.state().to_json(), json!({"n": 0}));
    // Without a label, a batch that changes nothing leaves no step for undo to cross in silence.
    let commit = store.apply(&Batch::new(Vec::new())).committed().unwrap();
    assert!(commit.step.is_none());
    assert_eq!(store.history_len(), 2);
}

#[test]
fn checkout_any_retained_step_by_id() {
    let mut store = store(json!({"n": 0}));
    let mut ids = Vec::new();
    for i in 1..=5 {
        ids.push(
            store
                .apply(&batch(json!({"op": "assign", "path": ["n"], "value": i})))
                .committed()
                .unwrap()
                .step
                .unwrap(),
        );
    }
    assert_eq!(store.checkout(ids[1]).unwrap(), 3);
    assert_eq!(store.state().to_json(), json!({"n": 2}));
    assert_eq!(store.checkout(ids[4]).unwrap(), 3);
    assert_eq!(store.state().to_json(), json!({"n": 5}));
}

#[test]
fn history_is_bounded_by_steps_and_bytes_keeping_the_newest() {
    let mut store = Store::builder(Value::object())
        .history_limits(HistoryLimits {
            max_steps: 3,
            max_bytes: usize::MAX,
        })
        .build()
        .unwrap();
    for i in 0..10 {
        let _ = store.apply(&batch(json!({"op": "assign", "path": ["n"], "value": i})));
    }
    assert_eq!(store.history().count(), 3);
    assert_eq!(
        store.history().last().unwrap().changes[0].new,
        Some(Value::from(9))
    );

    let mut store = Store::builder(Value::object())
        .history_limits(HistoryLimits {
            max_steps: 1_000,
            max_bytes: 20_000,
        })
        .build()
        .unwrap();
    for i in 0..100 {
        let _ = store.apply(&batch(
            json!({"op": "assign", "path": ["text"], "value": "x".repeat(1_000 + i)}),
        ));
    }
    assert!(store.history_bytes() <= 20_000, "{}", store.history_bytes());
    assert!(store.history().count() >= 5);
}

#[test]
fn snapshots_do_not_see_later_changes_and_undo_works_while_they_are_held() {
    let mut store = store(json!({"a": {"b": 1}}));
    let before = store.snapshot();
    assert!(
        store
            .apply(&batch(
                json!({"op": "assign", "path": ["a", "b"], "value": 2})
            ))
            .is_committed()
    );
    let after = store.snapshot();
    store.undo().unwrap();
    assert_eq!(before.get(&path!["a", "b"]), Some(&Value::from(1)));
    assert_eq!(after.get(&path!["a", "b"]), Some(&Value::from(2)));
    assert_eq!(store.get(&path!["a", "b"]), Some(&Value::from(1)));
}

// Schema.

fn schema() -> StateSchema {
    StateSchema::new(json!({
        "type": "object",
        "required": ["player"],
        "properties": {
            "player": {
                "type": "object",
                "required": ["hp"],
                "additionalProperties": false,
                "properties": {"hp": {"type": "integer", "minimum": 0}, "name": {"type": "string"}}
            },
            "npcs": {"type": "object", "additionalProperties": {"$ref": "#/$defs/npc"}}
        },
        "$defs": {"npc": {"type": "object", "properties": {"mood": {"enum": ["calm", "angry"]}}}}
    }))
    .unwrap()
}

#[test]
fn schema_violations_reject_and_list_every_location() {
    let state = Value::from(json!({"player": {"hp": 10}, "npcs": {"bob": {"mood": "calm"}}}));
    let mut store = Store::builder(state).schema(schema()).build().unwrap();
    let errors = store
        .apply(&batch(json!([
            {"op": "assign", "path": ["player", "hp"], "value": -1},
            {"op": "assign", "path": ["player", "mana"], "value": 3},
            {"op": "assign", "path": ["npcs", "bob", "mood"], "value": "glad"},
            {"op": "delete", "path": ["player", "hp"]},
        ])))
        .rejected()
        .unwrap();
    let mut paths: Vec<&str> = errors.iter().map(|e| e.path.as_deref().unwrap()).collect();
    paths.sort();
    assert_eq!(
        paths,
        ["/npcs/bob/mood", "/player", "/player"],
        "{errors:#?}"
    );
    assert!(errors.iter().all(|e| e.kind == ErrorKind::SchemaViolation));
    let mood = errors
        .iter()
        .find(|e| e.path.as_deref() == Some("/npcs/bob/mood"))
        .unwrap();
    assert_eq!(
        mood.to_string(),
        "at /npcs/bob/mood: schema violation: \"glad\" is not one of \"calm\" or \"angry\""
    );
}

#[test]
fn incremental_schema_check_agrees_with_a_full_check() {
    let state = Value::from(json!({"player": {"hp": 10}, "npcs": {}}));
    let mut store = Store::builder(state).schema(schema()).build().unwrap();
    let cases = [
        json!({"op": "assign", "path": ["player", "hp"], "value": 3}),
        json!({"op": "assign", "path": ["player", "hp"], "value": "3"}),
        json!({"op": "assign", "path": ["npcs", "ann"], "value": {"mood": "angry"}}),
        json!({"op": "assign", "path": ["npcs", "ann"], "value": {"mood": 1}}),
        json!({"op": "delete", "path": ["player"]}),
        json!({"op": "merge", "path": [], "value": {"player": {"name": "Ann"}}}),
        json!({"op": "merge", "path": [], "value": {"player": {"nick": "A"}}}),
        json!({"op": "assign", "path": ["npcs"], "value": []}),
        json!({"op": "assign", "path": ["extra"], "value": 1}),
    ];
    for case in cases {
        let batch = batch(case.clone());
        let mut full = Store::new(store.state().clone());
        let would_be = full.apply(&batch).committed().map(|_| full.state().clone());
        let expected_ok = would_be
            .as_ref()
            .is_some_and(|state| schema().check_full(state).is_empty());
        let outcome = store.apply(&batch);
        assert_eq!(outcome.is_committed(), expected_ok, "{case}");
    }
}

#[test]
fn an_initial_state_that_violates_the_schema_is_refused() {
    let errors = Store::builder(Value::from(json!({"player": {}})))
        .schema(schema())
        .build()
        .unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].path.as_deref(), Some("/player"));
}

#[test]
fn an_unusable_schema_is_blamed_on_the_schema_and_says_where() {
    let missing = StateSchema::new(json!({"$ref": "#/$defs/missing"})).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "the schema itself is unusable, at (root): Pointer '/$defs/missing' does not exist"
    );
    let regex = StateSchema::new(json!({
        "type": "object",
        "properties": {"name": {"type": "string", "pattern": "(unclosed"}}
    }))
    .unwrap_err();
    assert_eq!(regex.location, "/properties/name/pattern");
    assert_eq!(
        regex.to_string(),
        "the schema itself is unusable, at /properties/name/pattern: \"(unclosed\" is not a \"regex\""
    );
}
