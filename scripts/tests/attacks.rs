//! The attack suite: untrusted scripts trying to hang, exhaust, escape or corrupt the host.
//!
//! Every case runs under a watchdog so that a regression fails instead of hanging, and every case must
//! end the same way: the batch is rejected with a message naming the cause, the state is exactly what
//! it was, and the same VM still runs an honest handler (with the string and table libraries intact).

mod support;

use std::time::Duration;

use rstest::rstest;
use serde_json::json;
use statecraft_engine::{Limits, Store, Value};
use statecraft_scripts::{LoadError, LuaHandlers};
use support::{
    Unchanged, batch, callback, commit, reject, state, store_with, test_limits, watchdog,
};

/// An honest handler that also checks that the libraries still behave.
const PING: &str = r#"
on("ping", function(ctx)
    ctx.emit({op = "assign", path = "ok", value = string.upper("ok") .. table.concat({"!"}) .. string.format("%d", 1)})
end)
"#;

/// Loads `attack` (which registers a handler named "attack") next to [`PING`], runs a batch that first
/// changes the state and then calls the attack, and checks the three outcomes of every attack.
fn survives(attack: &'static str, expected: &'static str, limits: Limits) {
    watchdog(60, move || {
        let mut store = store_with(
            &[("attack.lua", attack), ("ping.lua", PING)],
            json!({"hp": 10}),
            limits,
        );
        let unchanged = Unchanged::of(&store);
        let message = reject(
            &mut store,
            &batch(json!([
                {"op": "assign", "path": ["hp"], "value": 0},
                {"op": "callback", "path": ["attack"], "value": []},
            ])),
        );
        assert!(
            message.contains(expected),
            "expected {expected:?} in: {message}"
        );
        assert!(
            message.contains("handler \"attack\" (attack.lua:"),
            "the handler is named: {message}"
        );
        assert!(
            message.len() < 2 * test_limits().max_error_text,
            "the message is bounded: {}",
            message.len()
        );
        unchanged.assert(&store, "the state is untouched");
        commit(&mut store, &callback("ping", json!([])));
        assert_eq!(state(&store), json!({"hp": 10, "ok": "OK!1"}));
    });
}

#[rstest]
#[case::infinite_loop("while true do end", "step limit")]
#[case::pcall_loop(
    "while true do pcall(function() while true do end end) end",
    "step limit"
)]
#[case::xpcall_loop_with_looping_handler(
    "while true do xpcall(function() while true do end end, function() while true do end end) end",
    "step limit"
)]
#[case::swallowed_kill_then_normal_return(
    "pcall(function() while true do end end) return nil",
    "step limit"
)]
#[case::kill_swallowed_inside_a_coroutine(
    "coroutine.resume(coroutine.create(function() while true do end end)) return 1",
    "step limit"
)]
#[case::coroutine_ping_pong(
    "local co = coroutine.wrap(function() while true do coroutine.yield() end end) while true do co() end",
    "step limit"
)]
#[case::deep_recursion(
    "local function f(n) return 1 + f(n + 1) end return f(1)",
    "stack overflow"
)]
#[case::recursion_through_pcall("local function f() pcall(f) f() end f()", "limit")]
#[case::sort_comparator_loop(
    "local t = {} for i = 1, 100 do t[i] = i end table.sort(t, function(a, b) while true do end end)",
    "step limit"
)]
#[case::gsub_callback_loop(
    r#"string.gsub("aaaa", "a", function() while true do end end)"#,
    "step limit"
)]
#[case::pathological_pattern(
    r#"return string.find(string.rep("a", 20000), ".-.-.-.-.-.-.-b")"#,
    "step limit"
)]
#[case::memory_bomb_string_rep(
    r#"local s = string.rep("x", 200 * 1024 * 1024) return #s"#,
    "memory limit"
)]
#[case::memory_bomb_doubling(r#"local s = "x" while true do s = s .. s end"#, "memory limit")]
#[case::memory_bomb_table_growth(
    "local t = {} local i = 0 while true do i = i + 1 t[i] = {i, i, i} end",
    "memory limit"
)]
#[case::memory_bomb_of_state_copies(
    r#"local t = {} while true do t[#t + 1] = ctx.get("") end"#,
    "limit"
)]
#[case::memory_bomb_caught_then_looping(
    r#"while true do pcall(function() local t = {} while true do t[#t + 1] = string.rep("y", 1000) end end) end"#,
    "limit"
)]
#[case::io_access(r#"return io.open("/etc/passwd"):read("*a")"#, "attempt to index nil")]
#[case::os_execute(r#"os.execute("touch /tmp/statecraft-pwned")"#, "attempt to index nil")]
#[case::require(r#"require("socket")"#, "attempt to call a nil value")]
#[case::loadstring(r#"loadstring("return 1")()"#, "attempt to call a nil value")]
#[case::load(r#"load("return 1")()"#, "attempt to call a nil value")]
#[case::dofile(r#"dofile("/etc/passwd")"#, "attempt to call a nil value")]
#[case::string_dump("return string.dump(function() end)", "attempt to call a nil value")]
#[case::debug_library("return debug.getinfo(1)", "attempt to index nil")]
#[case::setfenv("setfenv(1, {})", "attempt to call a nil value")]
#[case::getfenv("return getfenv(0)", "attempt to call a nil value")]
#[case::collectgarbage(r#"collectgarbage("stop")"#, "attempt to call a nil value")]
#[case::replace_a_library_function(r#"string.upper = function() return "pwned" end"#, "readonly")]
#[case::rawset_a_library_function(
    r#"rawset(table, "concat", function() return "" end)"#,
    "readonly"
)]
#[case::setmetatable_on_a_library(
    "setmetatable(string, {__index = function() return 1 end})",
    "readonly"
)]
#[case::string_metatable_swap(
    r#"getmetatable("").__index = {upper = function() return "pwned" end}"#,
    "readonly"
)]
#[case::array_marker_on_a_library("array(string)", "read-only")]
#[case::cyclic_table_emitted(
    r#"local t = {} t.self = t ctx.emit({op = "assign", path = "x", value = t})"#,
    "cyclic table"
)]
#[case::function_emitted(
    r#"ctx.emit({op = "assign", path = "x", value = print or function() end})"#,
    "function"
)]
#[case::userdata_emitted(
    r#"ctx.emit({op = "assign", path = "x", value = newproxy()})"#,
    "userdata"
)]
#[case::nan_emitted(r#"ctx.emit({op = "assign", path = "x", value = 0/0})"#, "not finite")]
#[case::infinity_emitted(
    r#"ctx.emit({op = "assign", path = "x", value = math.huge})"#,
    "not finite"
)]
#[case::coroutine_emitted(
    r#"ctx.emit({op = "assign", path = "x", value = coroutine.create(function() end)})"#,
    "coroutine"
)]
#[case::too_deep_value(
    r#"local t = {} local c = t for i = 1, 200 do c.x = {} c = c.x end ctx.emit({op = "assign", path = "x", value = t})"#,
    "nest deeper"
)]
#[case::mixed_keys_emitted(
    r#"ctx.emit({op = "assign", path = "x", value = {1, 2, name = "n"}})"#,
    "mixes"
)]
#[case::million_instructions(
    r#"for i = 1, 1000000 do ctx.emit({op = "assign", path = "x", value = i}) end"#,
    "instructions were emitted"
)]
#[case::million_instructions_with_pcall(
    r#"for i = 1, 1000000 do pcall(ctx.emit, {op = "assign", path = "x", value = i}) end"#,
    "more than 10000 instructions were emitted"
)]
#[case::million_returned_instructions(
    r#"local t = {} for i = 1, 1000000 do t[i] = {op = "assign", path = "x", value = i} end return t"#,
    "limit"
)]
#[case::invalid_emit_swallowed_by_pcall(r#"pcall(ctx.emit, {op = "nope"}) return 1"#, "ctx.emit")]
#[case::million_events_of_one_big_payload(
    r#"local p = {string.rep("x", 1000000)} for i = 1, 1000000 do ctx.event("e", p) end"#,
    "memory limit"
)]
#[case::error_thrown_as_table("error({code = 42})", "raised a table")]
#[case::error_table_with_looping_tostring(
    "error(setmetatable({}, {__tostring = function() while true do end end}))",
    "step limit"
)]
#[case::error_message_too_long(r#"error(string.rep("x", 100000))"#, "xxx")]
#[case::emitted_table_with_hostile_metatable(
    "ctx.emit(setmetatable({}, {__index = function() while true do end end, __pairs = function() while true do end end}))",
    "ctx.emit"
)]
#[case::prototype_key_in_an_event(
    r#"ctx.event("e", {a = {["__proto__"] = {admin = true}}})"#,
    "forbidden key at /a/__proto__"
)]
#[case::prototype_key_in_a_result(r#"return {constructor = 1}"#, "forbidden key at /constructor")]
#[case::yield_out_of_the_handler("coroutine.yield(1)", "attempt to yield")]
fn attacks_are_rejected_and_leave_everything_usable(
    #[case] body: &'static str,
    #[case] expected: &'static str,
) {
    let script: &'static str =
        Box::leak(format!("on(\"attack\", function(ctx)\n{body}\nend)\n").into_boxed_str());
    survives(script, expected, test_limits());
}

#[test]
fn a_time_limit_stops_a_loop_when_steps_are_unbounded() {
    let limits = Limits {
        max_callback_steps: u64::MAX,
        max_callback_time: Duration::from_millis(200),
        ..test_limits()
    };
    survives(
        "on(\"attack\", function(ctx)\nwhile true do end\nend)\n",
        "time limit",
        limits,
    );
}

#[test]
fn the_limit_message_points_at_the_looping_line() {
    survives(
        "on(\"attack\", function(ctx)\nlocal x = 0\nwhile true do x = x + 1 end\nend)\n",
        "attack.lua:3",
        test_limits(),
    );
}

#[test]
fn error_text_is_cut_to_the_limit() {
    watchdog(30, || {
        let limits = Limits {
            max_error_text: 200,
            ..test_limits()
        };
        let mut store = store_with(
            &[(
                "long.lua",
                r#"on("long", function(ctx) error(string.rep("é", 10000)) end)"#,
            )],
            json!({}),
            limits,
        );
        let message = reject(&mut store, &callback("long", json!([])));
        let own = message
            .split("failed: ")
            .nth(1)
            .expect("the handler's own text");
        assert!(own.len() <= 200, "{} bytes", own.len());
        assert!(own.ends_with('…'), "{own}");
    });
}

#[test]
fn the_vm_memory_recovers_after_a_memory_bomb() {
    watchdog(60, || {
        let limits = test_limits();
        let handlers = LuaHandlers::from_sources(
            [("bomb.lua", r#"on("bomb", function(ctx) local t = {} while true do t[#t + 1] = string.rep("z", 4096) .. #t end end)"#)],
            &limits,
        )
        .expect("loads");
        let mut store = Store::builder(Value::object())
            .handler(handlers)
            .limits(limits.clone())
            .build()
            .expect("store");
        for _ in 0..5 {
            let message = reject(&mut store, &callback("bomb", json!([])));
            assert!(message.contains("memory limit"), "{message}");
        }
    });
}

#[rstest]
#[case::infinite_loop_at_load("while true do end", "step limit")]
#[case::syntax_error("on(\"x\", function(ctx) return end end)", "attack.lua:1")]
#[case::runtime_error_at_load("local x = nil\nx.y = 1", "attack.lua:2")]
#[case::memory_bomb_at_load(r#"local s = string.rep("x", 100 * 1024 * 1024)"#, "memory limit")]
#[case::luau_bytecode("\u{6}\u{3}\u{2}\u{0}\u{1}\u{0}", "attack.lua")]
#[case::handler_not_a_function(r#"on("x", 42)"#, "must be a function")]
#[case::io_at_load(r#"io.write("x")"#, "attempt to index nil")]
fn scripts_that_fail_at_load_time_are_refused_with_their_file(
    #[case] source: &'static str,
    #[case] expected: &'static str,
) {
    watchdog(60, move || {
        let error = LuaHandlers::from_sources(
            [
                ("ok.lua", "on(\"fine\", function() end)"),
                ("attack.lua", source),
            ],
            &test_limits(),
        )
        .expect_err("the load fails");
        assert!(
            matches!(error, LoadError::Script { ref file, .. } if file == "attack.lua"),
            "{error:?}"
        );
        assert!(
            error.to_string().contains(expected),
            "expected {expected:?} in: {error}"
        );
    });
}

#[test]
fn a_file_that_is_not_text_is_refused_before_it_reaches_lua() {
    let dir =
        std::env::temp_dir().join(format!("statecraft-scripts-binary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("a.lua"),
        [0x1b, b'L', b'u', b'a', 0xff, 0xfe, 0x00],
    )
    .expect("write");
    let error = LuaHandlers::load_dir(&dir, &test_limits()).expect_err("binary");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        matches!(error, LoadError::NotText { ref file } if file == "a.lua"),
        "{error:?}"
    );
}

#[test]
fn one_game_cannot_see_or_change_another_games_globals() {
    watchdog(30, || {
        let limits = test_limits();
        let first = store_with(
            &[(
                "a.lua",
                r#"secret = "first" on("leak", function(ctx) secret = "changed" return secret end)"#,
            )],
            json!({}),
            limits.clone(),
        );
        let mut second = store_with(
            &[(
                "b.lua",
                r#"on("peek", function(ctx) return {secret = secret or "none", g = rawget(_G, "secret") or "none"} end)"#,
            )],
            json!({}),
            limits,
        );
        let mut first = first;
        commit(&mut first, &callback("leak", json!([])));
        let done = commit(&mut second, &callback("peek", json!([])));
        assert_eq!(
            done.results[0].as_ref().map(Value::to_json),
            Some(json!({"secret": "none", "g": "none"}))
        );
    });
}

#[test]
fn the_host_globals_of_the_contract_cannot_be_replaced_for_other_files() {
    watchdog(30, || {
        // A script may shadow `on` in its own environment, but registration already happened and the
        // library tables it would need to corrupt the host are read-only.
        let mut store = store_with(
            &[
                (
                    "a.lua",
                    r#"on("first", function(ctx) return "first" end) on = nil"#,
                ),
                (
                    "b.lua",
                    r#"on("second", function(ctx) return tostring(on) end)"#,
                ),
            ],
            json!({}),
            test_limits(),
        );
        let done = commit(&mut store, &callback("first", json!([])));
        assert_eq!(
            done.results[0].as_ref().map(Value::to_json),
            Some(json!("first"))
        );
    });
}

/// The hooks are entry points of their own: an attack in a `before` or `after` hook (run only when
/// the batch's first instruction writes `attack`) rejects that batch with the hook named, leaves the
/// state as it was, and the same VM then runs an honest batch and handler.
#[rstest]
fn hooks_survive_attacks(
    #[values("before", "after")] hook: &'static str,
    #[values(
        ("while true do end", "step limit"),
        ("while true do pcall(function() while true do end end) end", "step limit"),
        ("local function f(n) return 1 + f(n + 1) end return f(1)", "stack overflow"),
        (r#"local s = "x" while true do s = s .. s end"#, "memory limit"),
        (r#"local t = {} while true do t[#t + 1] = ctx.get("") end"#, "limit"),
        (r#"return io.open("/etc/passwd"):read("*a")"#, "attempt to index nil"),
        (r#"string.upper = function() return "pwned" end"#, "readonly"),
        ("local t = {} t.self = t return {t}", "cyclic table"),
        (r#"local t = {} for i = 1, 20000 do t[i] = {op = "assign", path = "hp", value = i} end return t"#, "10000"),
        ("error(setmetatable({}, {__tostring = function() while true do end end}))", "step limit"),
    )]
    attack: (&'static str, &'static str),
) {
    let (body, expected) = attack;
    watchdog(60, move || {
        let trigger = if hook == "before" {
            "batch[1] and batch[1].path[1] == \"attack\""
        } else {
            "changes[1] and changes[1].path[1] == \"attack\""
        };
        let arg = if hook == "before" { "batch" } else { "changes" };
        let script = format!("{hook}(function(ctx, {arg})\nif {trigger} then\n{body}\nend\nend)");
        let mut store = store_with(
            &[("attack.lua", &script), ("ping.lua", PING)],
            json!({"hp": 10}),
            test_limits(),
        );
        let unchanged = Unchanged::of(&store);
        let message = reject(
            &mut store,
            &batch(json!([{"op": "assign", "path": ["attack"], "value": 1}])),
        );
        assert!(
            message.contains(expected),
            "expected {expected:?} in: {message}"
        );
        assert!(
            message.contains(&format!("{hook} hook (attack.lua:1)")),
            "the hook is named: {message}"
        );
        assert!(
            message.len() < 2 * test_limits().max_error_text,
            "the message is bounded: {}",
            message.len()
        );
        unchanged.assert(&store, "the state is untouched");
        commit(&mut store, &callback("ping", json!([])));
        assert_eq!(state(&store), json!({"hp": 10, "ok": "OK!1"}));
    });
}
