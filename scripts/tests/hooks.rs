//! The batch hooks (`before`, `after`) and `ctx.random` through a real `Store`: edits, drops and
//! additions, their `rewritten_by_script` notes, errors and limits in a hook, returns that are not a
//! batch, `ctx.get_before`, and draws that repeat for the same seed and step.

mod support;

use rstest::rstest;
use serde_json::json;
use statecraft_engine::{ApplyOptions, ErrorKind, HistoryLimits, Outcome, Store, Value};
use statecraft_scripts::LuaHandlers;
use support::{Unchanged, batch, commit, reject, state, store, test_limits, watchdog};

/// What a commit warned about, as `(kind, instruction, message)`.
fn notes(commit: &statecraft_engine::Commit) -> Vec<(ErrorKind, Option<usize>, String)> {
    commit
        .warnings
        .iter()
        .map(|w| {
            (
                w.kind,
                w.instruction.as_ref().and_then(|t| t.0.first().copied()),
                w.message.clone(),
            )
        })
        .collect()
}

#[test]
fn a_before_hook_edits_an_instruction_and_the_edit_is_reported_with_its_line_and_span() {
    let mut store = store(
        &[(
            "10_paths.lua",
            r#"
before(function(ctx, batch)
    for _, ins in ipairs(batch) do
        if ins.path[2] == "max-hp" then ins.path[2] = "max_hp" end
    end
    return batch
end)
"#,
        )],
        json!({"player": {"max_hp": 10, "hp": 5}}),
    );
    let options = ApplyOptions {
        spans: vec![0..40, 41..80],
        ..ApplyOptions::default()
    };
    let outcome = store.apply_with(
        &batch(json!([
            {"op": "assign", "path": ["player", "max-hp"], "value": 20},
            {"op": "assign", "path": ["player", "hp"], "value": 6},
        ])),
        &options,
    );
    let Outcome::Committed(done) = outcome else {
        panic!("expected a commit: {outcome:?}")
    };
    assert_eq!(state(&store), json!({"player": {"max_hp": 20, "hp": 6}}));
    let notes = notes(&done);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let (kind, instruction, message) = &notes[0];
    assert_eq!(*kind, ErrorKind::RewrittenByScript);
    assert_eq!(*instruction, Some(0));
    assert!(message.contains("10_paths.lua:2"), "{message}");
    assert!(message.contains("reply bytes 0..40"), "{message}");
    assert!(
        message.contains("max-hp") && message.contains("max_hp"),
        "{message}"
    );
}

#[test]
fn a_before_hook_drops_and_adds_instructions() {
    let mut store = store(
        &[(
            "hooks.lua",
            r#"
before(function(ctx, batch)
    local kept = {}
    for _, ins in ipairs(batch) do
        if ins.path[1] ~= "secret" then table.insert(kept, ins) end
    end
    table.insert(kept, {op = "increment", path = {"turns"}, value = 1})
    return kept
end)
"#,
        )],
        json!({"turns": 0, "hp": 1}),
    );
    let done = commit(
        &mut store,
        &batch(json!([
            {"op": "assign", "path": ["secret"], "value": 1},
            {"op": "assign", "path": ["hp"], "value": 2},
        ])),
    );
    assert_eq!(state(&store), json!({"turns": 1, "hp": 2}));
    let notes = notes(&done);
    // Instruction 0 became `hp`, instruction 1 became the increment: two edits of the same position.
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes.iter().all(|n| n.0 == ErrorKind::RewrittenByScript));
    assert_eq!(done.results.len(), 2);
}

/// Untouched tables are not decoded again (they are compared with what was handed out), so every
/// kind of in-place edit must still be seen: deep in a value, a string, a number, a member added.
#[rstest]
#[case::nested_item("ins.value.a[2] = 3", json!({"a": [1, 2]}), json!({"a": [1, 3]}), None)]
#[case::string_edited("ins.value.c = 'y'", json!({"c": "x"}), json!({"c": "y"}), None)]
#[case::member_added("ins.reason = 'why'", json!({"a": []}), json!({"a": []}), Some("why"))]
#[case::number_edited("ins.value.b = 2", json!({"b": 2.5}), json!({"b": 2}), None)]
fn in_place_edits_of_the_handed_out_tables_are_seen(
    #[case] edit: &str,
    #[case] value: serde_json::Value,
    #[case] expected: serde_json::Value,
    #[case] reason: Option<&str>,
) {
    let source = format!(
        "before(function(ctx, batch)\n    local ins = batch[1]\n    {edit}\n    return batch\nend)\n"
    );
    let mut store = store(&[("edit.lua", source.as_str())], json!({"x": null}));
    let done = commit(
        &mut store,
        &batch(json!([
            {"op": "assign", "path": ["x"], "value": value},
            {"op": "assign", "path": ["y"], "value": 1},
        ])),
    );
    let notes = notes(&done);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].1, Some(0), "{notes:?}");
    assert_eq!(state(&store), json!({"x": expected, "y": 1}));
    assert_eq!(done.changes[0].reason.as_deref(), reason);
}

#[test]
fn a_hook_that_returns_nil_or_the_same_batch_reports_nothing() {
    let mut store = store(
        &[(
            "hooks.lua",
            r#"
before(function(ctx, batch) end)
before(function(ctx, batch) return batch end)
"#,
        )],
        json!({"hp": 1}),
    );
    let done = commit(
        &mut store,
        &batch(json!([{"op": "assign", "path": ["hp"], "value": 2}])),
    );
    assert!(done.warnings.is_empty(), "{:?}", done.warnings);
    assert_eq!(state(&store), json!({"hp": 2}));
}

#[test]
fn before_hooks_run_in_file_name_order_each_on_what_the_last_returned() {
    let mut store = store(
        &[
            (
                "a.lua",
                r#"before(function(ctx, batch) table.insert(batch, {op = "push", path = "log", value = "a"}) return batch end)"#,
            ),
            (
                "b.lua",
                r#"before(function(ctx, batch) table.insert(batch, {op = "push", path = "log", value = "b" .. #batch}) return batch end)"#,
            ),
        ],
        json!({"log": []}),
    );
    let done = commit(&mut store, &batch(json!([])));
    assert_eq!(state(&store), json!({"log": ["a", "b1"]}));
    let notes = notes(&done);
    assert!(notes[0].2.contains("a.lua:1"), "{notes:?}");
    assert!(notes[1].2.contains("b.lua:1"), "{notes:?}");
}

#[test]
fn what_a_before_hook_returns_is_validated_like_any_batch() {
    let mut store = store(
        &[(
            "hooks.lua",
            r#"before(function(ctx, batch) return {{op = "assign", path = {"__proto__", "x"}, value = 1}} end)"#,
        )],
        json!({"hp": 1}),
    );
    let unchanged = Unchanged::of(&store);
    let outcome = store.apply(&batch(
        json!([{"op": "assign", "path": ["hp"], "value": 2}]),
    ));
    let errors = outcome.rejected().expect("rejected");
    assert_eq!(errors[0].kind, ErrorKind::ForbiddenSegment);
    assert!(
        errors[0]
            .message
            .contains("the batch the before hooks returned"),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.kind == ErrorKind::RewrittenByScript),
        "the rejection lists the edits: {errors:?}"
    );
    unchanged.assert(&store, "a rejected batch");
}

#[rstest]
#[case::error(r#"error("no batch today")"#, "no batch today")]
#[case::a_number("return 5", "value of type integer")]
#[case::a_map(r#"return {a = 1}"#, "other keys")]
#[case::a_list_of_numbers("return {1, 2}", "returned instruction 0 is of type integer")]
#[case::an_invalid_instruction(
    r#"return {{op = "fly", path = {"hp"}}}"#,
    "returned instruction 0 is invalid"
)]
#[case::emit(
    r#"ctx.emit({op = "assign", path = "hp", value = 3})"#,
    "a before hook cannot emit"
)]
#[case::a_bad_span(
    r#"return {{op = "assign", path = {"hp"}, value = 3, span = "here"}}"#,
    "span"
)]
#[case::get_before(r#"return ctx.get_before("hp")"#, "only after hooks")]
#[case::step_limit("while true do end", "step limit")]
#[case::memory_limit(r#"local s = "x" while true do s = s .. s end"#, "memory limit")]
#[case::too_long(
    r#"local t = {} for i = 1, 10001 do t[i] = {op = "assign", path = {"hp"}, value = i} end return t"#,
    "the limit is 10000"
)]
fn a_failing_before_hook_rejects_the_batch_and_names_itself(
    #[case] body: &'static str,
    #[case] expected: &'static str,
) {
    watchdog(60, move || {
        let script = format!("before(function(ctx, batch)\n{body}\nend)");
        let mut store = store(&[("hook.lua", &script)], json!({"hp": 1}));
        let unchanged = Unchanged::of(&store);
        let message = reject(
            &mut store,
            &batch(json!([{"op": "assign", "path": ["hp"], "value": 2}])),
        );
        assert!(
            message.contains(expected),
            "expected {expected:?} in {message}"
        );
        assert!(
            message.contains("before hook (hook.lua:1)"),
            "the hook is named: {message}"
        );
        unchanged.assert(&store, "a rejected batch");
    });
}

#[test]
fn an_after_hook_sees_the_changes_and_the_state_before_and_corrects_the_state() {
    let mut store = store(
        &[(
            "after.lua",
            r#"
after(function(ctx, changes)
    local now, was = ctx.get("affection"), ctx.get_before("affection")
    if now > 100 then ctx.emit({op = "assign", path = "affection", value = 100, reason = "clamped"}) end
    local mood = now > was and "warm" or "cold"
    return {{op = "assign", path = "mood", value = mood .. " " .. #changes .. " " .. changes[1].op}}
end)
"#,
        )],
        json!({"affection": 90, "mood": ""}),
    );
    let done = commit(
        &mut store,
        &batch(json!([{"op": "increment", "path": ["affection"], "value": 30}])),
    );
    assert_eq!(
        state(&store),
        json!({"affection": 100, "mood": "warm 1 increment"})
    );
    assert_eq!(done.changes.len(), 3);
    assert_eq!(done.changes[1].reason.as_deref(), Some("clamped"));
}

#[test]
fn an_after_hook_runs_once_even_when_nothing_changed_and_watchers_do_not_see_it() {
    let mut store = store(
        &[(
            "after.lua",
            r#"
watch("count", function(ctx) ctx.emit({op = "increment", path = "watched", value = 1}) end)
after(function(ctx, changes) ctx.emit({op = "increment", path = "count", value = 1}) end)
"#,
        )],
        json!({"count": 0, "watched": 0}),
    );
    commit(&mut store, &batch(json!([])));
    commit(&mut store, &batch(json!([])));
    assert_eq!(state(&store), json!({"count": 2, "watched": 0}));
}

#[rstest]
#[case::error(r#"error("bad mood")"#, "bad mood")]
#[case::returns_a_value("return 5", "returns nothing or instructions")]
#[case::invalid_emit(
    r#"ctx.emit({op = "assign", path = {"x"}})"#,
    "assign needs a \"value\""
)]
#[case::step_limit("while true do end", "step limit")]
fn a_failing_after_hook_rejects_the_batch(
    #[case] body: &'static str,
    #[case] expected: &'static str,
) {
    watchdog(60, move || {
        let script = format!("after(function(ctx, changes)\n{body}\nend)");
        let mut store = store(&[("after.lua", &script)], json!({"hp": 1}));
        let unchanged = Unchanged::of(&store);
        let message = reject(
            &mut store,
            &batch(json!([{"op": "assign", "path": ["hp"], "value": 2}])),
        );
        assert!(
            message.contains(expected),
            "expected {expected:?} in {message}"
        );
        assert!(message.contains("after hook (after.lua:1)"), "{message}");
        unchanged.assert(&store, "a rejected batch");
    });
}

#[test]
fn what_an_after_hook_emits_is_validated_and_bounded_by_the_cascade_limit() {
    let mut store = store(
        &[(
            "after.lua",
            r#"
on("again", function(ctx) ctx.emit({op = "callback", path = {"again"}}) end)
after(function(ctx, changes) ctx.emit({op = "callback", path = {"again"}}) end)
"#,
        )],
        json!({}),
    );
    let outcome = store.apply(&batch(json!([])));
    let errors = outcome.rejected().expect("rejected");
    assert_eq!(errors[0].kind, ErrorKind::CascadeTooDeep, "{errors:?}");
    assert!(errors[0].message.contains("emitted by an after hook"));
}

const DICE: &str = r#"
on("loot", function(ctx)
    local rolls = {}
    for i = 1, 8 do rolls[i] = ctx.random(1, 6) end
    ctx.emit({op = "push", path = "rolls", value = rolls})
end)
watch("rolls", function(ctx) ctx.emit({op = "assign", path = "coin", value = ctx.random(2)}) end)
"#;

fn dice_store(seed: u64) -> Store {
    let limits = test_limits();
    let handlers = LuaHandlers::from_sources([("dice.lua", DICE)], &limits).expect("loads");
    Store::builder(Value::from_json(&json!({"rolls": []})))
        .handler(handlers)
        .limits(limits)
        .seed(seed)
        .build()
        .expect("no schema")
}

#[test]
fn random_draws_repeat_for_the_same_seed_and_step_and_differ_otherwise() {
    let loot = batch(json!([{"op": "callback", "path": ["loot"]}]));
    let play = |seed: u64| {
        let mut store = dice_store(seed);
        commit(&mut store, &loot);
        commit(&mut store, &loot);
        state(&store)
    };
    let first = play(42);
    assert_eq!(first, play(42), "the same seed plays the same");
    assert_ne!(first, play(43), "another seed plays otherwise");
    let rolls = first["rolls"].as_array().expect("a list");
    assert_ne!(rolls[0], rolls[1], "each step rolls anew");
    for roll in rolls.iter().flat_map(|r| r.as_array().expect("a list")) {
        let n = roll.as_i64().expect("an integer");
        assert!((1..=6).contains(&n), "{n}");
    }
    let coin = first["coin"].as_i64().expect("an integer");
    assert!((1..=2).contains(&coin));
}

#[test]
fn a_swipe_rolls_again_and_a_rejected_batch_rolls_the_same_when_resubmitted() {
    let loot = batch(json!([{"op": "callback", "path": ["loot"]}]));
    let mut store = dice_store(7);
    let first = commit(&mut store, &loot);
    let swipe = ApplyOptions {
        at: Some(statecraft_engine::StepId::ROOT.into()),
        ..ApplyOptions::default()
    };
    let Outcome::Committed(second) = store.apply_with(&loot, &swipe) else {
        panic!("the swipe commits")
    };
    assert_ne!(first.changes[0].new, second.changes[0].new);

    // A batch that rolls and is then rejected draws nothing for good: resubmitted, it rolls the same.
    let mut fresh = dice_store(7);
    let failing = batch(json!([
        {"op": "callback", "path": ["loot"]},
        {"op": "delete", "path": ["nothing_here"]},
    ]));
    reject(&mut fresh, &failing);
    let again = commit(&mut fresh, &loot);
    assert_eq!(first.changes[0].new, again.changes[0].new);
}

#[test]
fn with_history_off_each_batch_still_rolls_anew_and_replays_the_same() {
    let loot = batch(json!([{"op": "callback", "path": ["loot"]}]));
    let play = || {
        let mut store = dice_store(42);
        store.set_history_limits(HistoryLimits {
            max_steps: 0,
            max_bytes: 0,
        });
        for _ in 0..3 {
            commit(&mut store, &loot);
        }
        (state(&store), store.next_step_id())
    };
    let (first, next) = play();
    let rolls = first["rolls"].as_array().expect("a list");
    assert_ne!(rolls[0], rolls[1], "each batch rolls anew");
    assert_ne!(rolls[1], rolls[2], "each batch rolls anew");
    assert_eq!(next.get(), 4, "each commit used up a step id");
    assert_eq!((first, next), play(), "the same seed plays the same");
}

#[test]
fn a_missed_roll_that_changes_nothing_is_a_step_so_the_next_batch_rolls_anew() {
    let limits = test_limits();
    // A roll of 1 in a million hits; the misses change nothing and only report the roll.
    let source = r#"
on("attack", function(ctx)
    local roll = ctx.random(1, 1000000)
    if roll == 1 then ctx.emit({op = "assign", path = "hit", value = true}) end
    ctx.event("rolled", { roll = roll })
end)
"#;
    let handlers = LuaHandlers::from_sources([("attack.lua", source)], &limits).expect("loads");
    let mut store = Store::builder(Value::from_json(&json!({})))
        .handler(handlers)
        .limits(limits)
        .seed(5)
        .build()
        .expect("no schema");
    let attack = batch(json!([{"op": "callback", "path": ["attack"]}]));
    let mut rolls = Vec::new();
    for _ in 0..3 {
        let committed = commit(&mut store, &attack);
        assert!(committed.changes.is_empty(), "a miss changes nothing");
        assert!(committed.step.is_some(), "a batch that drew is a step");
        rolls.push(committed.events[0].payload.to_json());
    }
    assert_ne!(rolls[0], rolls[1], "each attack rolls anew: {rolls:?}");
    assert_ne!(rolls[1], rolls[2], "each attack rolls anew: {rolls:?}");

    // A batch that draws nothing and changes nothing still makes no step.
    let nothing = commit(&mut store, &batch(json!([])));
    assert_eq!(nothing.step, None);
}

#[rstest]
#[case::empty_range("ctx.random(6, 1)", "is empty")]
#[case::fraction("ctx.random(1.5, 3)", "whole number")]
#[case::a_string(r#"ctx.random("1", 3)"#, "must be a number")]
#[case::too_large("ctx.random(0, 2^60)", "2^53")]
fn bad_random_bounds_are_errors(#[case] call: &str, #[case] expected: &str) {
    let script = format!("on(\"roll\", function(ctx) return {call} end)");
    let mut store = store(&[("roll.lua", &script)], json!({}));
    let message = reject(&mut store, &support::callback("roll", json!([])));
    assert!(
        message.contains(expected),
        "expected {expected:?} in {message}"
    );
    assert!(message.contains("roll.lua:1"), "{message}");
}

#[test]
fn random_without_bounds_is_a_fraction() {
    let mut store = store(
        &[(
            "roll.lua",
            r#"on("roll", function(ctx) local x = ctx.random() return {ok = x >= 0 and x < 1} end)"#,
        )],
        json!({}),
    );
    let done = commit(&mut store, &support::callback("roll", json!([])));
    assert_eq!(
        done.results[0].as_ref().map(Value::to_json),
        Some(json!({"ok": true}))
    );
}

#[test]
fn hooks_can_only_be_registered_while_the_scripts_load() {
    let mut store = store(
        &[(
            "late.lua",
            r#"on("late", function(ctx) before(function() end) end)"#,
        )],
        json!({}),
    );
    let message = reject(&mut store, &support::callback("late", json!([])));
    assert!(message.contains("while the scripts load"), "{message}");
    let error =
        LuaHandlers::from_sources([("bad.lua", "after(5)")], &test_limits()).expect_err("refused");
    assert!(error.to_string().contains("must be a function"), "{error}");
}
