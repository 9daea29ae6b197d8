//! A rejected batch is undone by replaying its changes backwards: a batch writes the state in place,
//! so after a failure anywhere in it, however many writes came before (its own, those of callbacks,
//! watchers and `after` hooks), and whatever failed (an op, an old value, the schema, a callback, a
//! watcher, an `after` hook, the deadline, a limit), the state and the whole history are exactly as
//! before, a reader's snapshot and the state at every step never changed, and the store goes on as
//! if the batch had never been sent: the next batch commits exactly as it does on a twin store that
//! never saw the rejected one. Best effort skips a failing instruction the same way.

use std::time::Instant;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use rstest::rstest;
use serde_json::{Value as Json, json};
use statecraft_engine::{
    AfterCall, ApplyOptions, Batch, CallbackCall, CallbackHandler, ErrorKind, HandlerError,
    HostEvent, Instruction, Limits, Op, Outcome, Path, Response, Segment, StateSchema, StepId,
    Store, Value, WatchCall,
};

use statecraft_test_support::unchanged;

use unchanged::Unchanged;

/// Handlers that write through the batch before something fails. `write [key, value]` emits an
/// assign of `value` at `/w/key` (and an event); `fail` fails; `deep` emits itself, past the cascade
/// limit; `many [n]` emits `n` assigns. The watcher copies every write of `/trigger` to `/seen`,
/// and fails when it sees `/seen` written with `"boom"`. The `after` hook writes the number of
/// changes to `/after`, and fails when `/after_fails` is set.
struct Writers;

fn key_path(keys: &[&str]) -> Path {
    Path::from(keys.iter().map(|key| Segment::key(key)).collect::<Vec<_>>())
}

impl CallbackHandler for Writers {
    fn call(&mut self, call: CallbackCall<'_>) -> Result<Response, HandlerError> {
        match call.name {
            "write" => {
                let key = call.args.first().and_then(Value::as_str).unwrap_or("k");
                let value = call.args.get(1).cloned().unwrap_or_default();
                Ok(Response {
                    instructions: vec![Instruction::assign(key_path(&["w", key]), value.clone())],
                    events: vec![HostEvent {
                        name: "wrote".into(),
                        payload: value,
                    }],
                    ..Response::default()
                })
            }
            "fail" => Err(HandlerError::Failed("the script failed on purpose".into())),
            "deep" => Ok(Response {
                instructions: vec![
                    Instruction::assign(key_path(&["deep"]), call.depth as i64),
                    Instruction::new(Op::Callback, key_path(&["deep"])),
                ],
                ..Response::default()
            }),
            "many" => {
                let n = call.args.first().and_then(|n| n.as_number()?.as_u64());
                Ok(Response {
                    instructions: (0..n.unwrap_or(0))
                        .map(|i| Instruction::assign(key_path(&["many"]), i as i64))
                        .collect(),
                    ..Response::default()
                })
            }
            _ => Err(HandlerError::Unknown),
        }
    }

    fn watch(&mut self, call: WatchCall<'_>) -> Result<Response, HandlerError> {
        let mut instructions = Vec::new();
        for change in call.changes {
            if change.path == key_path(&["seen"]) && change.new == Some(Value::from("boom")) {
                return Err(HandlerError::Failed("the watcher failed on purpose".into()));
            }
            if change.path == key_path(&["trigger"]) {
                let new = change.new.clone().unwrap_or_default();
                instructions.push(Instruction::assign(key_path(&["seen"]), new));
            }
        }
        Ok(Response {
            instructions,
            ..Response::default()
        })
    }

    fn after(&mut self, call: AfterCall<'_>) -> Result<Response, HandlerError> {
        if call
            .state
            .lookup(key_path(&["after_fails"]).segments())
            .is_some()
        {
            return Err(HandlerError::Failed(
                "the after hook failed on purpose".into(),
            ));
        }
        Ok(Response {
            instructions: vec![Instruction::assign(
                key_path(&["after"]),
                call.changes.len() as i64,
            )],
            ..Response::default()
        })
    }
}

/// A batch of instructions decoded one by one: a batch read from text is either instructions or
/// a JSON Patch document, but the store runs any mix, as callbacks emit it.
fn batch(json: Json) -> Batch {
    let items = json.as_array().expect("a list of instructions");
    Batch::new(
        items
            .iter()
            .map(|item| Instruction::from_json(item).unwrap())
            .collect(),
    )
}

fn initial() -> Json {
    let entities: serde_json::Map<String, Json> = (0..100)
        .map(|e| {
            let fields: serde_json::Map<String, Json> =
                (0..10).map(|f| (format!("f{f}"), json!(f))).collect();
            (format!("e{e}"), Json::Object(fields))
        })
        .collect();
    json!({
        "entities": entities,
        "list": [1, 2, 3],
        "obj": {"a": {"b": 1}},
        "n": 0,
        "text": "x",
        "w": {},
    })
}

/// `count` instructions of every kind that all succeed, in order, on [`initial`] (and on what the
/// ones before them made): assigns that replace and that create parents, increments, pushes,
/// pops, splices, merges, deletes, JSON Patch adds, removes, replaces, moves and copies, and
/// callbacks that emit writes.
fn writes(count: usize, salt: usize) -> Vec<Json> {
    (0..count)
        .map(|i| {
            let v = (i * 7 + salt) as i64;
            let e = (i * 37 + salt) % 100;
            let f = (i * 11 + salt) % 10;
            match i % 14 {
                0 => json!({"op": "assign", "path": ["entities", format!("e{e}"), format!("f{f}")], "value": v}),
                1 => json!({"op": "assign", "path": ["new", format!("k{i}"), "deep"], "value": [v, {"x": v}]}),
                2 => json!({"op": "increment", "path": ["n"], "value": 1}),
                3 => json!({"op": "push", "path": ["list"], "value": v}),
                4 => json!({"op": "splice", "path": ["list"], "value": {"start": 0, "deleteCount": 1, "items": [v, v + 1]}}),
                5 => json!({"op": "merge", "path": ["obj"], "value": {"a": {format!("c{}", i % 20): v}, "z": 1.5}}),
                6 => json!({"op": "add", "path": format!("/tmp{i}"), "value": {"t": v}}),
                7 => json!({"op": "remove", "path": format!("/tmp{}", i - 1)}),
                8 => json!({"op": "replace", "path": "/text", "value": format!("t{v}")}),
                9 => json!({"op": "move", "from": "/list/0", "path": "/list/-"}),
                10 => json!({"op": "copy", "from": "/text", "path": format!("/copies/{}", i % 3)}),
                11 => json!({"op": "pop", "path": ["list"]}),
                12 => json!({"op": "delete", "path": ["new", format!("k{}", i - 11)]}),
                _ => json!({"op": "callback", "path": ["write"], "value": [format!("k{}", i % 5), v]}),
            }
        })
        .collect()
}

/// The store every case starts from: [`initial`] with the [`Writers`], a few committed steps
/// (with a checkpoint every two steps, so that checkpoints share nodes with the root) and `limits`.
fn store(limits: Limits, schema: Option<StateSchema>) -> Store {
    let mut builder = Store::builder(Value::from(initial()))
        .handler(Writers)
        .limits(limits)
        .checkpoint_every(2);
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let mut store = builder.build().unwrap();
    store
        .apply(&batch(
            json!([{"op": "assign", "path": ["copies"], "value": {}}]),
        ))
        .committed()
        .expect("the set-up commits");
    for salt in 0..5 {
        let outcome = store.apply(&batch(Json::Array(writes(30, salt))));
        assert!(outcome.is_committed(), "set-up {salt}: {outcome:?}");
    }
    store
}

/// The states at every retained step, as JSON.
fn every_state(store: &Store) -> Vec<(StepId, Json)> {
    let mut ids: Vec<StepId> = store.history().map(|step| step.id).collect();
    ids.push(StepId::ROOT);
    ids.into_iter()
        .map(|id| (id, store.state_at(id).unwrap().value().to_json()))
        .collect()
}

/// A failure of each kind in the middle of a long batch, after `before` writes and followed by
/// `after` more: the store's limits and schema for it, and the batch.
fn failing(kind: ErrorKind) -> (Limits, Option<StateSchema>, Vec<Json>) {
    let limits = Limits::default();
    let mut schema = None;
    let failure = match kind {
        ErrorKind::TestFailed => vec![json!({"op": "test", "path": "/text", "value": "never"})],
        ErrorKind::OldMismatch => {
            vec![json!({"op": "assign", "path": ["n"], "value": 1, "old": "never"})]
        }
        ErrorKind::TypeMismatch => vec![json!({"op": "increment", "path": ["obj"], "value": 1})],
        ErrorKind::MissingTarget => vec![json!({"op": "remove", "path": "/absent"})],
        ErrorKind::CallbackFailed => vec![
            json!({"op": "callback", "path": ["write"], "value": ["before_failing", 1]}),
            json!({"op": "callback", "path": ["fail"]}),
        ],
        ErrorKind::UnknownCallback => vec![json!({"op": "callback", "path": ["nobody"]})],
        ErrorKind::CascadeTooDeep => vec![json!({"op": "callback", "path": ["deep"]})],
        ErrorKind::TooManyEmitted => {
            return (
                Limits {
                    max_emitted: 500,
                    ..limits
                },
                None,
                [
                    writes(400, 9),
                    vec![json!({"op": "callback", "path": ["many"], "value": [600]})],
                ]
                .concat(),
            );
        }
        ErrorKind::StateTooLarge => {
            vec![json!({"op": "assign", "path": ["big"], "value": "x".repeat(200_000)})]
        }
        // Each copy of /nest into /nest/x nests the state one level deeper.
        ErrorKind::StateTooDeep => [
            vec![json!({"op": "assign", "path": ["nest"], "value": {"x": 1}})],
            vec![json!({"op": "copy", "from": "/nest", "path": "/nest/x"}); 70],
        ]
        .concat(),
        ErrorKind::CommitTooLarge => {
            return (
                Limits {
                    max_commit_bytes: 300_000,
                    ..limits
                },
                None,
                [
                    writes(400, 9),
                    (0..40)
                        .map(|i| json!({"op": "assign", "path": ["blob", i], "value": "y".repeat(10_000)}))
                        .collect(),
                ]
                .concat(),
            );
        }
        ErrorKind::SchemaViolation => {
            schema = Some(
                StateSchema::new(json!({
                    "type": "object",
                    "properties": {"n": {"type": "integer", "maximum": 1000000}}
                }))
                .unwrap(),
            );
            vec![json!({"op": "assign", "path": ["n"], "value": 2_000_000})]
        }
        ErrorKind::DeadlineExceeded => Vec::new(),
        other => panic!("no case for {other:?}"),
    };
    let limits = match kind {
        ErrorKind::StateTooLarge => Limits {
            max_state_bytes: 150_000,
            ..limits
        },
        _ => limits,
    };
    (
        limits,
        schema,
        [writes(400, 9), failure, writes(100, 3)].concat(),
    )
}

/// Runs a rejected batch on a store that writes in place and, with `held`, on one whose state a
/// reader's snapshot holds; checks that each is exactly as before and that its next batch commits
/// exactly as on a twin store that never saw the rejection.
fn rejected_changes_nothing(
    limits: &Limits,
    schema: Option<&StateSchema>,
    ops: &[Json],
    options: &ApplyOptions,
    expected: ErrorKind,
) {
    let next = batch(Json::Array(writes(50, 4)));
    for held in [false, true] {
        let mut store = store(limits.clone(), schema.cloned());
        let mut twin = store_like(limits, schema);
        let unchanged = Unchanged::of(&store);
        let states = every_state(&store);
        let snapshot = held.then(|| (store.snapshot(), store.state().to_json()));
        let errors = match store.apply_with(&batch(Json::Array(ops.to_vec())), options) {
            Outcome::Rejected(rejection) => rejection.errors,
            Outcome::Committed(commit) => panic!("committed: {:?}", commit.warnings),
        };
        assert!(
            errors.iter().any(|e| e.kind == expected),
            "held {held}: expected {expected:?}, got {errors:?}"
        );
        unchanged.assert(&store, &format!("{expected:?}, held {held}"));
        assert_eq!(every_state(&store), states, "a step's state changed");
        if let Some((snapshot, shown)) = snapshot {
            assert_eq!(
                snapshot.value().to_json(),
                shown,
                "a reader's snapshot changed"
            );
        }
        // The store goes on exactly as a twin that never saw the batch.
        let ours = store
            .apply(&next)
            .committed()
            .expect("the next batch commits");
        let theirs = twin.apply(&next).committed().expect("the twin commits");
        assert_eq!(ours.events, theirs.events);
        assert_eq!(Unchanged::of(&store), Unchanged::of(&twin), "{expected:?}");
    }
}

fn store_like(limits: &Limits, schema: Option<&StateSchema>) -> Store {
    store(limits.clone(), schema.cloned())
}

#[rstest]
#[case::a_failing_test(ErrorKind::TestFailed)]
#[case::an_old_value_mismatch(ErrorKind::OldMismatch)]
#[case::an_op_on_the_wrong_type(ErrorKind::TypeMismatch)]
#[case::a_missing_target(ErrorKind::MissingTarget)]
#[case::a_callback_error_after_a_callback_wrote(ErrorKind::CallbackFailed)]
#[case::an_unknown_callback(ErrorKind::UnknownCallback)]
#[case::callbacks_too_deep(ErrorKind::CascadeTooDeep)]
#[case::too_many_emitted(ErrorKind::TooManyEmitted)]
#[case::the_state_too_large(ErrorKind::StateTooLarge)]
#[case::the_state_too_deep(ErrorKind::StateTooDeep)]
#[case::the_commit_too_large(ErrorKind::CommitTooLarge)]
#[case::the_schema(ErrorKind::SchemaViolation)]
fn a_failure_in_the_middle_of_a_long_batch_undoes_every_write_before_it(#[case] kind: ErrorKind) {
    let (limits, schema, ops) = failing(kind);
    rejected_changes_nothing(
        &limits,
        schema.as_ref(),
        &ops,
        &ApplyOptions::default(),
        kind,
    );
}

#[test]
fn a_batch_out_of_time_undoes_what_it_wrote() {
    // The clock is read before every callback and every 64 instructions: a deadline already passed
    // stops the batch at the first reading, after the writes before it.
    let ops = writes(500, 2);
    let options = ApplyOptions {
        deadline: Some(Instant::now()),
        ..ApplyOptions::default()
    };
    rejected_changes_nothing(
        &Limits::default(),
        None,
        &ops,
        &options,
        ErrorKind::DeadlineExceeded,
    );
    // Best effort or not: out of time, nothing of it commits.
    let options = ApplyOptions {
        best_effort: true,
        ..options
    };
    rejected_changes_nothing(
        &Limits::default(),
        None,
        &ops,
        &options,
        ErrorKind::DeadlineExceeded,
    );
}

#[test]
fn a_watcher_error_undoes_the_batch_and_what_the_watchers_wrote_before() {
    // The first round of watchers copies /trigger to /seen; the second sees "boom" there and fails.
    let ops = [
        writes(300, 1),
        vec![json!({"op": "assign", "path": ["trigger"], "value": "boom"})],
        writes(50, 2),
    ]
    .concat();
    rejected_changes_nothing(
        &Limits::default(),
        None,
        &ops,
        &ApplyOptions::default(),
        ErrorKind::CallbackFailed,
    );
}

#[test]
fn an_after_hook_error_undoes_the_batch_and_the_watchers_writes() {
    let ops = [
        writes(300, 1),
        vec![
            json!({"op": "assign", "path": ["trigger"], "value": 1}),
            json!({"op": "assign", "path": ["after_fails"], "value": true}),
        ],
    ]
    .concat();
    rejected_changes_nothing(
        &Limits::default(),
        None,
        &ops,
        &ApplyOptions::default(),
        ErrorKind::CallbackFailed,
    );
}

#[test]
fn what_an_after_hook_writes_is_undone_when_the_schema_then_refuses() {
    // The after hook writes the change count to /after, which the schema caps above what the
    // set-up batches and the next one change, and below what this one does.
    let schema = StateSchema::new(json!({
        "type": "object",
        "properties": {"after": {"type": "integer", "maximum": 200}}
    }))
    .unwrap();
    rejected_changes_nothing(
        &Limits::default(),
        Some(&schema),
        &writes(300, 1),
        &ApplyOptions::default(),
        ErrorKind::SchemaViolation,
    );
}

#[test]
fn best_effort_undoes_only_the_failing_instruction_and_what_its_callbacks_wrote() {
    // A failing callback, a failing test, a callback emitting past the limit, and one whose emitted
    // instructions write at every level until the cascade limit stops them: each failing
    // instruction is undone whole, with what its callbacks wrote.
    let limits = Limits {
        max_emitted: 500,
        ..Limits::default()
    };
    let good = writes(300, 5);
    let bad = [
        json!({"op": "callback", "path": ["fail"]}),
        json!({"op": "test", "path": "/text", "value": "never"}),
        json!({"op": "callback", "path": ["many"], "value": [600]}),
        json!({"op": "callback", "path": ["deep"]}),
    ];
    let mut mixed = good.clone();
    for (i, op) in bad.iter().enumerate() {
        mixed.insert(50 + 60 * i, op.clone());
    }
    let options = ApplyOptions {
        best_effort: true,
        ..ApplyOptions::default()
    };
    for held in [false, true] {
        let mut store = store(limits.clone(), None);
        let mut twin = store_like(&limits, None);
        let snapshot = held.then(|| (store.snapshot(), store.state().to_json()));
        let commit = store
            .apply_with(&batch(Json::Array(mixed.clone())), &options)
            .committed()
            .expect("best effort commits");
        assert_eq!(commit.warnings.len(), bad.len(), "{:?}", commit.warnings);
        let theirs = twin
            .apply(&batch(Json::Array(good.clone())))
            .committed()
            .expect("the good part commits");
        assert_eq!(commit.changes, theirs.changes);
        assert_eq!(commit.events, theirs.events);
        assert_eq!(Unchanged::of(&store), Unchanged::of(&twin), "held {held}");
        if let Some((snapshot, shown)) = snapshot {
            assert_eq!(
                snapshot.value().to_json(),
                shown,
                "a reader's snapshot changed"
            );
        }
    }
}

#[test]
fn snapshots_and_the_states_of_every_step_never_change_as_the_store_writes_in_place() {
    let mut store = store(Limits::default(), None);
    let mut seen: Vec<(statecraft_engine::Snapshot, Json)> = Vec::new();
    let mut states = every_state(&store);
    for round in 0..40 {
        seen.push((store.snapshot(), store.state().to_json()));
        let ops = writes(40, round);
        if round % 4 == 3 {
            // A rejected batch between commits.
            let failing = [
                ops.clone(),
                vec![json!({"op": "test", "path": "/n", "value": -1})],
            ]
            .concat();
            assert!(!store.apply(&batch(Json::Array(failing))).is_committed());
        } else if round % 7 == 5 {
            store.undo().unwrap();
        } else {
            assert!(store.apply(&batch(Json::Array(ops))).is_committed());
        }
        // The states of the steps that were there before never change.
        let now = every_state(&store);
        for (id, state) in &states {
            if let Some((_, again)) = now.iter().find(|(other, _)| other == id) {
                assert_eq!(
                    again, state,
                    "the state at step {id} changed in round {round}"
                );
            }
        }
        states = now;
        for (snapshot, shown) in &seen {
            assert_eq!(&snapshot.value().to_json(), shown, "round {round}");
        }
    }
}

// Random batches with a failing instruction at a random place.

/// A random instruction on a small state: most succeed, some fail; the test keeps only those that
/// succeed in order, and then puts one that always fails among them.
fn instruction() -> impl Strategy<Value = Json> {
    let key = prop::sample::select(vec!["a", "b", "c", "x", "y", "new"]);
    let segment = prop_oneof![
        key.clone().prop_map(|k| json!(k)),
        (0usize..4).prop_map(|i| json!(i)),
    ];
    let path = prop::collection::vec(segment, 1..4);
    let value = prop_oneof![
        (-5i64..5).prop_map(|n| json!(n)),
        Just(json!(1.5)),
        Just(json!("s")),
        Just(json!([])),
        Just(json!({})),
        Just(json!({"z": [1, {"q": null}]})),
        Just(json!(null)),
    ];
    let pointer = |path: &Json| -> String {
        path.as_array()
            .unwrap()
            .iter()
            .map(|s| match s {
                Json::String(k) => format!("/{k}"),
                other => format!("/{other}"),
            })
            .collect()
    };
    (0usize..13, path.clone(), path, value, key).prop_map(move |(op, path, from, value, k)| {
        let p = pointer(&Json::Array(path.clone()));
        let f = pointer(&Json::Array(from));
        match op {
            0 => json!({"op": "assign", "path": path, "value": value}),
            1 => json!({"op": "delete", "path": path}),
            2 => json!({"op": "push", "path": path, "value": value}),
            3 => json!({"op": "pop", "path": path}),
            4 => json!({"op": "merge", "path": path, "value": {k: value}}),
            5 => json!({"op": "increment", "path": path, "value": 2}),
            6 => json!({"op": "splice", "path": path, "value": {"start": 1, "deleteCount": 1, "items": [value]}}),
            7 => json!({"op": "add", "path": p, "value": value}),
            8 => json!({"op": "remove", "path": p}),
            9 => json!({"op": "replace", "path": p, "value": value}),
            10 => json!({"op": "move", "from": f, "path": p}),
            11 => json!({"op": "copy", "from": f, "path": p}),
            _ => json!({"op": "callback", "path": ["write"], "value": [k, value]}),
        }
    })
}

/// Instructions that fail whatever the state: `test` and `old` against a value no instruction
/// writes, a JSON Patch remove and a pop under a key none writes, a failing callback.
fn always_failing() -> impl Strategy<Value = (Json, ErrorKind)> {
    prop::sample::select(vec![
        (
            json!({"op": "test", "path": ["c"], "value": "never"}),
            ErrorKind::TestFailed,
        ),
        (
            json!({"op": "assign", "path": ["a"], "value": 1, "old": "never"}),
            ErrorKind::OldMismatch,
        ),
        (
            json!({"op": "remove", "path": "/absent/0"}),
            ErrorKind::MissingTarget,
        ),
        (
            json!({"op": "pop", "path": ["absent"]}),
            ErrorKind::MissingTarget,
        ),
        (
            json!({"op": "callback", "path": ["fail"]}),
            ErrorKind::CallbackFailed,
        ),
    ])
}

fn small_state() -> Json {
    json!({"a": {"x": 1, "y": [1, 2, 3]}, "b": [{"c": 1}, 2, "s"], "c": 3, "w": {}})
}

fn small_store(checkpoint_every: u64) -> Store {
    Store::builder(Value::from(small_state()))
        .handler(Writers)
        .checkpoint_every(checkpoint_every)
        .build()
        .unwrap()
}

/// Applies each instruction alone and keeps those that commit, so that the list runs in order.
fn succeeding(store: &mut Store, candidates: &[Json]) -> Vec<Json> {
    let mut kept = Vec::new();
    for candidate in candidates {
        if store.apply(&batch(json!([candidate]))).is_committed() {
            kept.push(candidate.clone());
        }
    }
    kept
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_failing_instruction_anywhere_leaves_state_and_history_exactly_as_they_were(
        history in prop::collection::vec(prop::collection::vec(instruction(), 0..8), 0..6),
        candidates in prop::collection::vec(instruction(), 0..40),
        (failing, kind) in always_failing(),
        place in any::<prop::sample::Index>(),
        checkpoint_every in 1u64..4,
        held in any::<bool>(),
        best_effort in any::<bool>(),
    ) {
        let mut store = small_store(checkpoint_every);
        let mut twin = small_store(checkpoint_every);
        // The same history on both: the batches of instructions that commit.
        for step in &history {
            let mut scratch = Store::builder(store.state().clone()).handler(Writers).build().unwrap();
            let ops = succeeding(&mut scratch, step);
            let batch = batch(Json::Array(ops));
            prop_assert!(store.apply(&batch).is_committed());
            prop_assert!(twin.apply(&batch).is_committed());
        }
        let mut scratch = Store::builder(store.state().clone()).handler(Writers).build().unwrap();
        let good = succeeding(&mut scratch, &candidates);
        let at = place.index(good.len() + 1);
        let mut ops = good.clone();
        ops.insert(at, failing);
        let unchanged = Unchanged::of(&store);
        let states = every_state(&store);
        let snapshot = held.then(|| (store.snapshot(), store.state().to_json()));
        let options = ApplyOptions { best_effort, ..ApplyOptions::default() };
        match store.apply_with(&batch(Json::Array(ops)), &options) {
            Outcome::Rejected(rejection) => {
                prop_assert!(!best_effort, "best effort rejected: {:?}", rejection.errors);
                prop_assert_eq!(rejection.errors[0].kind, kind);
                let difference = unchanged.differs(&store);
                prop_assert!(difference.is_none(), "{}", difference.unwrap_or_default());
                prop_assert_eq!(every_state(&store), states);
                // Then the good instructions commit as on the twin.
                let ours = store.apply(&batch(Json::Array(good.clone())));
                let theirs = twin.apply(&batch(Json::Array(good)));
                prop_assert!(ours.is_committed() && theirs.is_committed());
            }
            Outcome::Committed(commit) => {
                // Best effort skips the failing instruction alone: the same as the good ones.
                prop_assert!(best_effort);
                prop_assert_eq!(commit.warnings.len(), 1);
                let theirs = twin.apply(&batch(Json::Array(good))).committed().expect("commits");
                prop_assert_eq!(&commit.changes, &theirs.changes);
            }
        }
        prop_assert_eq!(Unchanged::of(&store), Unchanged::of(&twin));
        if let Some((snapshot, shown)) = snapshot {
            prop_assert_eq!(snapshot.value().to_json(), shown);
        }
    }
}
