//! The script contract of docs/callbacks.md through a real `Store`: reads, emits, events only on commit,
//! returned lists, watchers, ordering, loading and the values that cross the boundary.

mod support;

use rstest::rstest;
use serde_json::json;
use statecraft_engine::{Limits, Store, Value};
use statecraft_scripts::{LoadError, LuaHandlers};
use support::{Unchanged, batch, callback, commit, reject, state, store, test_limits};

#[test]
fn a_handler_reads_the_state_and_emits_an_instruction() {
    let mut store = store(
        &[(
            "heal.lua",
            r#"
            on("heal", function(ctx, amount)
                local hp = ctx.get({"player", "hp"})
                ctx.emit({op = "assign", path = {"player", "hp"}, value = hp + amount, reason = "healed"})
            end)
            "#,
        )],
        json!({"player": {"hp": 50}}),
    );
    let done = commit(&mut store, &callback("heal", json!([20])));
    assert_eq!(state(&store), json!({"player": {"hp": 70}}));
    assert_eq!(done.changes.len(), 1);
    assert_eq!(done.changes[0].reason.as_deref(), Some("healed"));
}

#[rstest]
#[case::list(r#"{"player", "hp"}"#, json!(50))]
#[case::dotted(r#""player.hp""#, json!(50))]
#[case::array_index_in_list(r#"{"bag", 1}"#, json!("rope"))]
#[case::array_index_dotted(r#""bag.0""#, json!("sword"))]
#[case::absent(r#""player.mana""#, json!(null))]
#[case::through_a_scalar(r#""player.hp.x""#, json!(null))]
#[case::whole_state(
    "nil",
    json!({"player": {"hp": 50, "x.y": "dotted key"}, "bag": ["sword", "rope"]})
)]
#[case::bracketed_index(r#""bag[1]""#, json!("rope"))]
#[case::quoted_key_with_a_dot(r#""player['x.y']""#, json!("dotted key"))]
#[case::pointer(r#""/player/hp""#, json!(50))]
fn get_reads_paths_as_lists_or_spelled_strings(
    #[case] path: &str,
    #[case] expected: serde_json::Value,
) {
    let script =
        format!(r#"on("read", function(ctx) return {{found = ctx.get({path}), done = true}} end)"#);
    let mut store = store(
        &[("read.lua", &script)],
        json!({"player": {"hp": 50, "x.y": "dotted key"}, "bag": ["sword", "rope"]}),
    );
    let done = commit(&mut store, &callback("read", json!([])));
    let result = done.results[0].as_ref().expect("a result").to_json();
    let mut want = json!({"done": true});
    if !expected.is_null() {
        want["found"] = expected;
    }
    assert_eq!(result, want);
}

#[test]
fn string_paths_are_read_by_the_same_rules_as_model_output() {
    // `a['x.y']` names the key `x.y` (lodash), `[0]` an index, and a malformed spelling is an error
    // with the script's line, never a guess.
    let mut store = store(
        &[(
            "paths.lua",
            r#"on("set", function(ctx) ctx.emit({op = "assign", path = "player['x.y']", value = 1}) end)
on("push", function(ctx) ctx.emit({op = "assign", path = "bag[0]", value = "axe"}) end)
on("bad", function(ctx) return ctx.get("bag[0") end)"#,
        )],
        json!({"player": {}, "bag": ["sword"]}),
    );
    commit(&mut store, &callback("set", json!([])));
    commit(&mut store, &callback("push", json!([])));
    assert_eq!(state(&store), json!({"player": {"x.y": 1}, "bag": ["axe"]}));
    let message = reject(&mut store, &callback("bad", json!([])));
    assert!(
        message.contains("paths.lua:3") && message.contains("unclosed '['"),
        "{message}"
    );
}

#[test]
fn results_and_events_are_checked_against_the_stores_forbidden_list() {
    let script = r#"on("give", function(ctx, key)
  ctx.event("shown", {[key] = 1})
  return {[key] = true}
end)"#;
    let limits = test_limits();
    let game = |forbidden: &[&str]| {
        let handlers = LuaHandlers::from_sources([("give.lua", script)], &limits).expect("loads");
        Store::builder(Value::from_json(&json!({})))
            .handler(handlers)
            .limits(limits.clone())
            .forbidden_segments(forbidden.iter().copied())
            .build()
            .expect("no schema")
    };
    // A game that allows `constructor` (its state has such a key) gets it back from scripts.
    let mut open = game(&["__proto__"]);
    let done = commit(&mut open, &callback("give", json!(["constructor"])));
    assert_eq!(done.events.len(), 1);
    // A game that forbids its own key has it refused, with the script's line.
    let mut strict = game(&["secret"]);
    let message = reject(&mut strict, &callback("give", json!(["secret"])));
    assert!(
        message.contains("give.lua:2") && message.contains("forbidden key at /secret"),
        "{message}"
    );
}

#[test]
fn get_returns_a_copy_that_the_script_cannot_use_to_change_the_state() {
    let mut store = store(
        &[(
            "copy.lua",
            r#"
            on("tamper", function(ctx)
                local player = ctx.get("player")
                player.hp = 0
                return ctx.get("player.hp")
            end)
            "#,
        )],
        json!({"player": {"hp": 50}}),
    );
    let done = commit(&mut store, &callback("tamper", json!([])));
    assert_eq!(
        done.results[0].as_ref().map(Value::to_json),
        Some(json!(50))
    );
    assert_eq!(state(&store), json!({"player": {"hp": 50}}));
}

#[test]
fn a_handler_sees_the_state_as_it_stands_at_its_point_of_the_batch() {
    let mut store = store(
        &[(
            "read.lua",
            r#"on("read", function(ctx) return ctx.get("gold") end)"#,
        )],
        json!({"gold": 1}),
    );
    let done = commit(
        &mut store,
        &batch(json!([
            {"op": "callback", "path": ["read"]},
            {"op": "assign", "path": ["gold"], "value": 2},
            {"op": "callback", "path": ["read"]},
        ])),
    );
    let results: Vec<_> = done
        .results
        .iter()
        .map(|r| r.as_ref().map(Value::to_json))
        .collect();
    assert_eq!(
        results,
        vec![Some(json!(1)), Some(json!(1)), Some(json!(2))]
    );
}

#[test]
fn emitted_instructions_run_right_after_the_callback_before_the_next_instruction() {
    let mut store = store(
        &[(
            "log.lua",
            r#"
            on("mark", function(ctx, label)
                ctx.emit({op = "push", path = "log", value = label})
            end)
            "#,
        )],
        json!({"log": []}),
    );
    commit(
        &mut store,
        &batch(json!([
            {"op": "push", "path": ["log"], "value": "first"},
            {"op": "callback", "path": ["mark"], "value": "second"},
            {"op": "push", "path": ["log"], "value": "third"},
        ])),
    );
    assert_eq!(state(&store), json!({"log": ["first", "second", "third"]}));
}

#[test]
fn a_returned_list_of_instructions_runs_after_the_emitted_ones() {
    let mut store = store(
        &[(
            "both.lua",
            r#"
            on("both", function(ctx)
                ctx.emit({op = "push", path = {"log"}, value = "emitted"})
                return {
                    {op = "push", path = {"log"}, value = "returned 1"},
                    {op = "push", path = {"log"}, value = "returned 2"},
                }
            end)
            "#,
        )],
        json!({"log": []}),
    );
    let done = commit(&mut store, &callback("both", json!([])));
    assert_eq!(
        state(&store),
        json!({"log": ["emitted", "returned 1", "returned 2"]})
    );
    assert_eq!(
        done.results[0], None,
        "a returned instruction list is not the callback's result"
    );
}

#[test]
fn a_single_returned_instruction_table_runs_too() {
    let mut store = store(
        &[(
            "one.lua",
            r#"on("one", function(ctx) return {op = "assign", path = "x", value = 1} end)"#,
        )],
        json!({}),
    );
    commit(&mut store, &callback("one", json!([])));
    assert_eq!(state(&store), json!({"x": 1}));
}

#[test]
fn a_returned_value_is_the_callbacks_result() {
    let mut store = store(
        &[(
            "value.lua",
            r#"on("value", function(ctx, a, b) return {sum = a + b, list = {a, b}} end)"#,
        )],
        json!({}),
    );
    let done = commit(&mut store, &callback("value", json!([2, 3])));
    assert_eq!(
        done.results[0].as_ref().map(Value::to_json),
        Some(json!({"sum": 5, "list": [2, 3]}))
    );
}

#[test]
fn events_reach_the_host_only_when_the_batch_commits() {
    let script = r#"
        on("announce", function(ctx, text)
            ctx.event("message", {text = text, level = ctx.get("level")})
        end)
    "#;
    let mut store = store(&[("events.lua", script)], json!({"level": 2}));
    let done = commit(&mut store, &callback("announce", json!(["level up!"])));
    assert_eq!(done.events.len(), 1);
    assert_eq!(done.events[0].name, "message");
    assert_eq!(
        done.events[0].payload.to_json(),
        json!({"text": "level up!", "level": 2})
    );

    // The same callback followed by a failing instruction: the event must not be delivered.
    let failing = batch(json!([
        {"op": "callback", "path": ["announce"], "value": ["lost"]},
        {"op": "increment", "path": ["missing"], "value": 1},
    ]));
    reject(&mut store, &failing);
    assert_eq!(state(&store), json!({"level": 2}));
}

#[test]
fn emitted_instructions_are_part_of_the_atomic_batch() {
    let mut store = store(
        &[(
            "gold.lua",
            r#"on("pay", function(ctx) ctx.emit({op = "increment", path = "gold", value = -5}) end)"#,
        )],
        json!({"gold": 10, "bought": false}),
    );
    let failing = batch(json!([
        {"op": "callback", "path": ["pay"]},
        {"op": "assign", "path": ["bought"], "value": true},
        {"op": "pop", "path": ["nothing"]},
    ]));
    reject(&mut store, &failing);
    assert_eq!(state(&store), json!({"gold": 10, "bought": false}));
}

#[test]
fn emitted_callbacks_cascade_and_the_engine_bounds_the_depth() {
    let script = r#"
        on("count", function(ctx, n)
            ctx.emit({op = "increment", path = "n", value = 1})
            if n > 1 then ctx.emit({op = "callback", path = {"count"}, value = {n - 1}}) end
        end)
    "#;
    let mut store = store(&[("cascade.lua", script)], json!({"n": 0}));
    commit(&mut store, &callback("count", json!([3])));
    assert_eq!(state(&store), json!({"n": 3}));
    let message = reject(&mut store, &callback("count", json!([50])));
    assert!(message.contains("levels deep"), "{message}");
    assert_eq!(state(&store), json!({"n": 3}));
}

#[test]
fn watchers_see_every_change_under_their_path_with_old_and_new() {
    let script = r#"
        watch("player.hp", function(ctx, old, new)
            if new <= 0 and old > 0 then
                ctx.emit({op = "assign", path = "player.alive", value = false})
                ctx.event("died", {hp = new})
            end
        end)
    "#;
    let mut store = store(
        &[("death.lua", script)],
        json!({"player": {"hp": 10, "alive": true}}),
    );
    let done = commit(
        &mut store,
        &batch(json!([{"op": "increment", "path": ["player", "hp"], "value": -15}])),
    );
    assert_eq!(state(&store), json!({"player": {"hp": -5, "alive": false}}));
    assert_eq!(done.events.len(), 1);
    assert_eq!(done.events[0].payload.to_json(), json!({"hp": -5}));
}

#[test]
fn watchers_see_a_parent_replacement_at_their_own_path() {
    let script = r#"
        watch({"player", "level"}, function(ctx, old, new, path)
            ctx.emit({op = "push", path = "seen", value = {old = old, new = new, path = path}})
        end)
    "#;
    let mut store = store(
        &[("level.lua", script)],
        json!({"player": {"level": 1}, "seen": []}),
    );
    commit(
        &mut store,
        &batch(json!([{"op": "assign", "path": ["player"], "value": {"level": 2, "hp": 5}}])),
    );
    assert_eq!(
        state(&store)["seen"],
        json!([{"old": 1, "new": 2, "path": ["player", "level"]}])
    );
    // A replacement that leaves the watched value as it was does not call the watcher.
    commit(
        &mut store,
        &batch(json!([{"op": "assign", "path": ["player"], "value": {"level": 2}}])),
    );
    assert_eq!(state(&store)["seen"].as_array().map(Vec::len), Some(1));
}

#[test]
fn watchers_react_to_what_watchers_emitted_in_later_rounds() {
    let script = r#"
        watch("xp", function(ctx, old, new)
            if new >= 100 then ctx.emit({op = "increment", path = "level", value = 1}) end
        end)
        watch("level", function(ctx, old, new)
            ctx.emit({op = "push", path = "log", value = "level " .. new})
        end)
    "#;
    let mut store = store(
        &[("chain.lua", script)],
        json!({"xp": 0, "level": 1, "log": []}),
    );
    commit(
        &mut store,
        &batch(json!([{"op": "assign", "path": ["xp"], "value": 120}])),
    );
    assert_eq!(
        state(&store),
        json!({"xp": 120, "level": 2, "log": ["level 2"]})
    );
}

#[test]
fn a_watcher_failure_rejects_the_batch_and_names_the_watcher() {
    let script = "watch(\"gold\", function(ctx, old, new)\n  if new < 0 then error(\"gold cannot go negative\") end\nend)\n";
    let mut store = store(&[("guard.lua", script)], json!({"gold": 5}));
    let message = reject(
        &mut store,
        &batch(json!([{"op": "increment", "path": ["gold"], "value": -10}])),
    );
    assert!(
        message.contains("watcher on \"gold\" (guard.lua:1)"),
        "{message}"
    );
    assert!(
        message.contains("guard.lua:2: gold cannot go negative"),
        "{message}"
    );
    assert_eq!(state(&store), json!({"gold": 5}));
    commit(
        &mut store,
        &batch(json!([{"op": "increment", "path": ["gold"], "value": -1}])),
    );
    assert_eq!(state(&store), json!({"gold": 4}));
}

#[test]
fn a_handler_error_names_the_handler_the_line_and_the_cause() {
    let script = "on(\"broken\", function(ctx)\n  local t = nil\n  return t.field\nend)\n";
    let mut store = store(&[("broken.lua", script)], json!({"a": 1}));
    let message = reject(&mut store, &callback("broken", json!([])));
    assert!(
        message.contains("handler \"broken\" (broken.lua:1)"),
        "{message}"
    );
    assert!(message.contains("broken.lua:3:"), "{message}");
    assert!(message.contains("attempt to index nil"), "{message}");
}

#[test]
fn an_invalid_emitted_instruction_names_the_emit_line_and_the_field() {
    let script =
        "on(\"bad\", function(ctx)\n  ctx.emit({op = \"teleport\", path = {\"x\"}})\nend)\n";
    let mut store = store(&[("bad.lua", script)], json!({}));
    let message = reject(&mut store, &callback("bad", json!([])));
    assert!(
        message.contains("bad.lua:2: ctx.emit: the instruction is invalid"),
        "{message}"
    );
    assert!(message.contains("teleport"), "{message}");
}

#[test]
fn emitted_instructions_are_validated_by_the_engine() {
    let mut store = store(
        &[(
            "proto.lua",
            r#"on("proto", function(ctx) ctx.emit({op = "assign", path = {"__proto__"}, value = 1}) end)"#,
        )],
        json!({}),
    );
    let message = reject(&mut store, &callback("proto", json!([])));
    assert!(message.contains("__proto__"), "{message}");
    assert_eq!(state(&store), json!({}));
}

#[test]
fn unknown_callbacks_are_the_engines_to_report() {
    let mut store = store(&[("none.lua", "-- no handlers")], json!({}));
    let message = reject(&mut store, &callback("nobody", json!([])));
    assert!(message.contains("no handler named \"nobody\""), "{message}");
}

#[test]
fn files_load_in_file_name_order_and_share_one_vm() {
    let dir = std::env::temp_dir().join(format!("statecraft-scripts-order-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("20_use.lua"),
        r#"on("greet", function(ctx) return greeting .. "!" end)"#,
    )
    .expect("write");
    std::fs::write(dir.join("10_define.lua"), r#"greeting = "hello""#).expect("write");
    std::fs::write(dir.join("notes.txt"), "not a script").expect("write");
    let handlers = LuaHandlers::load_dir(&dir, &test_limits()).expect("loads");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(handlers.handler_names().collect::<Vec<_>>(), vec!["greet"]);
    let mut store = Store::builder(Value::object())
        .handler(handlers)
        .build()
        .expect("store");
    let done = commit(&mut store, &callback("greet", json!([])));
    assert_eq!(
        done.results[0].as_ref().map(Value::to_json),
        Some(json!("hello!"))
    );
}

#[test]
fn load_errors_name_the_file_and_the_line() {
    let error = LuaHandlers::from_sources(
        [("ok.lua", "x = 1"), ("bad.lua", "x = 1\ny = = 2\n")],
        &Limits::default(),
    )
    .expect_err("a syntax error");
    match &error {
        LoadError::Script {
            file,
            line,
            message,
        } => {
            assert_eq!(file, "bad.lua");
            assert_eq!(*line, Some(2));
            assert!(!message.is_empty());
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(error.to_string().starts_with("bad.lua:2: "), "{error}");
}

#[test]
fn a_missing_folder_is_a_folder_error() {
    let error = LuaHandlers::load_dir("/nonexistent/statecraft/scripts", &Limits::default())
        .expect_err("missing");
    assert!(matches!(error, LoadError::Folder { .. }), "{error}");
}

#[test]
fn a_duplicate_handler_name_is_a_load_error() {
    let error = LuaHandlers::from_sources(
        [
            ("a.lua", "on(\"x\", function() end)"),
            ("b.lua", "\non(\"x\", function() end)"),
        ],
        &Limits::default(),
    )
    .expect_err("duplicate");
    let text = error.to_string();
    assert!(
        text.contains("b.lua:2") && text.contains("already registered at a.lua:1"),
        "{text}"
    );
}

#[test]
fn handlers_cannot_be_registered_after_loading() {
    let mut store = store(
        &[(
            "late.lua",
            r#"on("late", function(ctx) on("later", function() end) end)"#,
        )],
        json!({}),
    );
    let message = reject(&mut store, &callback("late", json!([])));
    assert!(
        message.contains("only be registered while the scripts load"),
        "{message}"
    );
}

#[test]
fn values_round_trip_with_arrays_objects_null_and_numbers() {
    let script = r#"
        on("echo", function(ctx, value) return value end)
        on("make", function(ctx)
            return {empty_list = array(), empty_object = {}, nothing = null, float = 1.5, int = 3, nested = {array({})}}
        end)
    "#;
    let mut store = store(&[("echo.lua", script)], json!({}));
    let sample =
        json!({"list": [1, [], {}], "obj": {"k": null, "s": "é"}, "n": -7, "f": 0.25, "t": true});
    let done = commit(&mut store, &callback("echo", json!([sample.clone()])));
    assert_eq!(done.results[0].as_ref().map(Value::to_json), Some(sample));
    let done = commit(&mut store, &callback("make", json!([])));
    assert_eq!(
        done.results[0].as_ref().map(Value::to_json),
        Some(
            json!({"empty_list": [], "empty_object": {}, "nothing": null, "float": 1.5, "int": 3, "nested": [[]]})
        )
    );
}

#[test]
fn paths_in_emitted_instructions_use_zero_based_indexes() {
    let mut store = store(
        &[(
            "index.lua",
            r#"on("rename", function(ctx) ctx.emit({op = "assign", path = {"bag", 0}, value = "axe"}) end)"#,
        )],
        json!({"bag": ["sword", "rope"]}),
    );
    commit(&mut store, &callback("rename", json!([])));
    assert_eq!(state(&store), json!({"bag": ["axe", "rope"]}));
}

#[test]
fn script_globals_persist_between_calls_of_one_game() {
    let mut store = store(
        &[(
            "counter.lua",
            "calls = 0\non(\"tick\", function(ctx) calls = calls + 1 return calls end)",
        )],
        json!({}),
    );
    commit(&mut store, &callback("tick", json!([])));
    let done = commit(&mut store, &callback("tick", json!([])));
    assert_eq!(done.results[0].as_ref().map(Value::to_json), Some(json!(2)));
}

#[test]
fn ctx_is_read_only() {
    let mut store = store(
        &[(
            "ctx.lua",
            r#"on("swap", function(ctx) ctx.get = function() return 1 end end)"#,
        )],
        json!({}),
    );
    let message = reject(&mut store, &callback("swap", json!([])));
    assert!(message.contains("readonly"), "{message}");
}

#[test]
fn watchers_run_in_change_order_then_registration_order_and_events_keep_that_order() {
    let mut store = store(
        &[
            (
                "1_first.lua",
                r#"watch("stats", function(ctx, old, new, path) ctx.event("first", {at = path[2], new = new}) end)"#,
            ),
            (
                "2_second.lua",
                r#"watch("stats", function(ctx, old, new, path) ctx.event("second", {at = path[2], new = new}) end)"#,
            ),
            (
                "3_handler.lua",
                r#"on("shout", function(ctx, word) ctx.event("shout", word) end)"#,
            ),
        ],
        json!({"stats": {"str": 1, "dex": 1}}),
    );
    let done = commit(
        &mut store,
        &batch(json!([
            {"op": "callback", "path": ["shout"], "value": ["a"]},
            {"op": "assign", "path": ["stats", "str"], "value": 2},
            {"op": "callback", "path": ["shout"], "value": ["b"]},
            {"op": "assign", "path": ["stats", "dex"], "value": 3},
        ])),
    );
    let seen: Vec<(String, serde_json::Value)> = done
        .events
        .iter()
        .map(|e| (e.name.clone(), e.payload.to_json()))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("shout".to_owned(), json!("a")),
            ("shout".to_owned(), json!("b")),
            ("first".to_owned(), json!({"at": "str", "new": 2})),
            ("second".to_owned(), json!({"at": "str", "new": 2})),
            ("first".to_owned(), json!({"at": "dex", "new": 3})),
            ("second".to_owned(), json!({"at": "dex", "new": 3})),
        ]
    );
}

#[test]
fn the_stores_limits_apply_at_call_time() {
    // Loaded under generous limits, called under a store whose step limit is tiny.
    let handlers = LuaHandlers::from_sources(
        [("count.lua", r#"on("count", function(ctx) local s = 0 for i = 1, 1000 do s = s + i end return s end)"#)],
        &Limits::default(),
    )
    .expect("loads");
    let limits = Limits {
        max_callback_steps: 100,
        ..Limits::default()
    };
    let mut store = Store::builder(Value::object())
        .handler(handlers)
        .limits(limits)
        .build()
        .expect("store");
    let message = reject(&mut store, &callback("count", json!([])));
    assert!(
        message.contains("the step limit of 100 was exceeded at count.lua:1"),
        "{message}"
    );
}

#[test]
fn handlers_describe_themselves_in_registration_order() {
    let handlers = LuaHandlers::from_sources(
        [
            (
                "10-xp.lua",
                r#"on("gain_xp", function(ctx, amount) end, {
                    doc = "grant experience points",
                    args = { { name = "amount", type = "integer", minimum = 0, doc = "points" } },
                })"#,
            ),
            (
                "20-shop.lua",
                r#"on("buy", function(ctx, item, count) end, { args = {
                    { name = "item", type = "string" },
                    { name = "count", type = "integer", minimum = 1, optional = true },
                } })
                on("rest", function(ctx) end)"#,
            ),
        ],
        &Limits::default(),
    )
    .expect("scripts load");
    let described: Vec<serde_json::Value> = handlers
        .signatures()
        .iter()
        .map(|s| serde_json::to_value(s).unwrap())
        .collect();
    assert_eq!(
        described,
        [
            json!({"name": "gain_xp", "doc": "grant experience points", "args": [
                {"name": "amount", "doc": "points", "schema": {"type": "integer", "minimum": 0}, "optional": false}
            ]}),
            json!({"name": "buy", "doc": null, "args": [
                {"name": "item", "doc": null, "schema": {"type": "string"}, "optional": false},
                {"name": "count", "doc": null, "schema": {"type": "integer", "minimum": 1}, "optional": true}
            ]}),
            json!({"name": "rest", "doc": null, "args": null}),
        ]
    );
}

#[test]
fn a_wrong_description_is_a_load_error_at_its_line() {
    let error = LuaHandlers::from_sources(
        [(
            "shop.lua",
            "local function buy() end\non(\"buy\", buy, { args = { { name = \"item\", typ = \"string\" } } })\n",
        )],
        &Limits::default(),
    )
    .expect_err("an unknown key");
    let text = error.to_string();
    assert!(text.starts_with("shop.lua:2: "), "{text}");
    assert!(
        text.contains("the description of \"buy\": args[1]: unknown key \"typ\""),
        "{text}"
    );
}

/// Handlers that write through the batch before something fails: `grant` emits `n` assigns, an
/// increment and an event; the watchers pass `/alarm` on to `/guards` and refuse `"fail"` there; the
/// `after` hook writes the change count and refuses when `/after_fails` is set.
const WRITERS: &str = r#"
on("grant", function(ctx, n)
    for i = 1, n do
        ctx.emit({op = "assign", path = {"loot", "item" .. i}, value = i})
    end
    ctx.emit({op = "increment", path = "gold", value = n})
    ctx.event("granted", n)
end)
on("boom", function(ctx) error("the script failed on purpose") end)
on("spin", function(ctx) while true do end end)
on("bad_emit", function(ctx) ctx.emit({op = "increment", path = "name", value = 1}) end)
watch("alarm", function(ctx, old, new)
    ctx.emit({op = "assign", path = "guards", value = new})
end)
watch("guards", function(ctx, old, new)
    if new == "fail" then error("the guards refuse") end
end)
after(function(ctx, changes)
    ctx.emit({op = "assign", path = "changed", value = #changes})
    if ctx.get("after_fails") then error("the after hook refuses") end
end)
"#;

fn writers_store() -> Store {
    let mut store = store(
        &[("writers.lua", WRITERS)],
        json!({"hp": 10, "gold": 0, "name": "Mira", "log": [], "loot": {}}),
    );
    // A few steps first, so that the history has something to keep as it was.
    for n in 1..4 {
        commit(&mut store, &callback("grant", json!([n])));
    }
    store
}

#[rstest]
#[case::a_callback_error_after_callbacks_wrote(
    json!([
        {"op": "assign", "path": ["hp"], "value": 9},
        {"op": "callback", "path": ["grant"], "value": [20]},
        {"op": "push", "path": ["log"], "value": "granted"},
        {"op": "callback", "path": ["boom"]},
        {"op": "assign", "path": ["hp"], "value": 1},
    ]),
    "the script failed on purpose"
)]
#[case::the_step_limit_after_callbacks_wrote(
    json!([
        {"op": "callback", "path": ["grant"], "value": [5]},
        {"op": "callback", "path": ["spin"]},
    ]),
    "step limit"
)]
#[case::an_emitted_instruction_that_fails(
    json!([
        {"op": "callback", "path": ["grant"], "value": [5]},
        {"op": "callback", "path": ["bad_emit"]},
    ]),
    "increment needs a number"
)]
#[case::a_watcher_error_after_watchers_wrote(
    json!([
        {"op": "callback", "path": ["grant"], "value": [3]},
        {"op": "assign", "path": ["alarm"], "value": "fail"},
    ]),
    "the guards refuse"
)]
#[case::an_after_hook_error_after_it_wrote(
    json!([
        {"op": "callback", "path": ["grant"], "value": [3]},
        {"op": "assign", "path": ["alarm"], "value": "ring"},
        {"op": "assign", "path": ["after_fails"], "value": true},
    ]),
    "the after hook refuses"
)]
fn what_scripts_wrote_is_undone_when_the_batch_fails_later(
    #[case] failing: serde_json::Value,
    #[case] expected: &str,
) {
    for held in [false, true] {
        let mut store = writers_store();
        let mut twin = writers_store();
        let unchanged = Unchanged::of(&store);
        let snapshot = held.then(|| (store.snapshot(), state(&store)));
        let message = reject(&mut store, &batch(failing.clone()));
        assert!(
            message.contains(expected),
            "expected {expected:?} in {message}"
        );
        unchanged.assert(&store, expected);
        if let Some((snapshot, shown)) = snapshot {
            assert_eq!(
                snapshot.value().to_json(),
                shown,
                "a reader's snapshot changed"
            );
        }
        // The store goes on exactly as a twin that never saw the batch.
        let next = batch(json!([
            {"op": "callback", "path": ["grant"], "value": [4]},
            {"op": "assign", "path": ["alarm"], "value": "ring"},
        ]));
        let ours = commit(&mut store, &next);
        let theirs = commit(&mut twin, &next);
        assert_eq!(ours.events, theirs.events);
        assert_eq!(Unchanged::of(&store), Unchanged::of(&twin), "held {held}");
    }
}
