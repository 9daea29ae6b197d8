//! Callback costs: one round trip (dispatch, a small table argument, one emitted instruction), with
//! and without the store around it; 10,000 callbacks in one batch; and the limiter's overhead: the
//! same no-op call and the same 10k-iteration loop in two bare mlua VMs, one with the limiter's
//! interrupt and a budget started per call, one without.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;
use statecraft_engine::{
    Batch, BatchContext, CallbackCall, CallbackHandler, DEFAULT_FORBIDDEN, Limits, Random, Store,
    Value,
};
use statecraft_scripts::LuaHandlers;
use statecraft_scripts::internals::Limiter;

#[path = "common/before_hook.rs"]
mod before_hook;

use before_hook::{EDITS, READS, store_with, ten_assigns};

const SCRIPT: &str = r#"
on("hit", function(ctx, attack)
    local hp = ctx.get({"monster", "hp"})
    ctx.emit({op = "assign", path = {"monster", "hp"}, value = hp - attack.damage})
end)
on("noop", function(ctx) end)
on("arg_only", function(ctx, attack) return nil end)
on("get_only", function(ctx) local hp = ctx.get({"monster", "hp"}) end)
on("emit_only", function(ctx) ctx.emit({op = "assign", path = {"monster", "hp"}, value = 5}) end)
on("sum", function(ctx, n)
    local s = 0
    for i = 1, n do s = s + i end
    return s
end)
"#;

const LOOP: u32 = 10_000;

fn handlers() -> LuaHandlers {
    LuaHandlers::from_sources([("bench.lua", SCRIPT)], &Limits::default())
        .expect("bench script loads")
}

fn state() -> Value {
    Value::from_json(
        &json!({"monster": {"hp": 1_000_000_000, "name": "orc"}, "player": {"hp": 100}}),
    )
}

fn round_trip(c: &mut Criterion) {
    let mut group = c.benchmark_group("round_trip");
    let limits = Limits::default();
    let forbidden: Vec<String> = DEFAULT_FORBIDDEN.iter().map(|s| (*s).to_owned()).collect();
    let root = state();
    let args = [Value::from_json(&json!({"damage": 3, "kind": "slash"}))];

    let mut direct = handlers();
    group.bench_function("handler_call", |b| {
        b.iter(|| {
            let call = CallbackCall {
                name: "hit",
                args: &args,
                state: &root,
                depth: 0,
                batch: BatchContext {
                    limits: &limits,
                    forbidden: &forbidden,
                    random: &mut Random::for_step(0, 1),
                    deadline: None,
                },
            };
            black_box(direct.call(call).expect("handler runs"))
        })
    });

    // The parts of the round trip, one at a time.
    for part in ["noop", "arg_only", "get_only", "emit_only"] {
        group.bench_function(format!("part_{part}"), |b| {
            b.iter(|| {
                let call = CallbackCall {
                    name: part,
                    args: &args,
                    state: &root,
                    depth: 0,
                    batch: BatchContext {
                        limits: &limits,
                        forbidden: &forbidden,
                        random: &mut Random::for_step(0, 1),
                        deadline: None,
                    },
                };
                black_box(direct.call(call).expect("handler runs"))
            })
        });
    }

    let mut store = Store::builder(state())
        .handler(handlers())
        .build()
        .expect("store");
    store.set_history_limits(statecraft_engine::HistoryLimits {
        max_steps: 0,
        ..store.history_limits()
    });
    let callback = Batch::from_json(
        &json!([{"op": "callback", "path": ["hit"], "value": [{"damage": 3, "kind": "slash"}]}]),
    )
    .expect("batch");
    group.bench_function("store_apply_callback", |b| {
        b.iter(|| black_box(store.apply(&callback).is_committed()))
    });

    // The same change without Lua: what the engine alone costs for this batch.
    let mut plain = Store::builder(state()).build().expect("store");
    plain.set_history_limits(statecraft_engine::HistoryLimits {
        max_steps: 0,
        ..plain.history_limits()
    });
    let assign =
        Batch::from_json(&json!([{"op": "increment", "path": ["monster", "hp"], "value": -3}]))
            .expect("batch");
    group.bench_function("store_apply_without_lua", |b| {
        b.iter(|| black_box(plain.apply(&assign).is_committed()))
    });
    group.finish();
}

fn ten_thousand(c: &mut Criterion) {
    let mut group = c.benchmark_group("batch");
    group.sample_size(10);
    let calls: Vec<_> = (0..10_000)
        .map(|_| json!({"op": "callback", "path": ["hit"], "value": [{"damage": 1, "kind": "slash"}]}))
        .collect();
    let batch = Batch::from_json(&json!(calls)).expect("batch");
    group.bench_function("10k_callbacks_one_batch", |b| {
        b.iter_batched(
            || {
                let mut store = Store::builder(state())
                    .handler(handlers())
                    .build()
                    .expect("store");
                store.set_history_limits(statecraft_engine::HistoryLimits {
                    max_steps: 0,
                    ..store.history_limits()
                });
                store
            },
            |mut store| {
                let outcome = store.apply(&batch);
                assert!(outcome.is_committed());
                store
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn limiter(c: &mut Criterion) {
    let mut group = c.benchmark_group("limiter");
    // Like with like: the same functions in two bare VMs, one with the limiter's interrupt installed
    // and a fresh budget started before each call (what a handler call does), one with no interrupt.
    let source = "noop = function(ctx) end
         sum = function(ctx, n) local s = 0 for i = 1, n do s = s + i end return s end";
    let limited = mlua::Lua::new();
    let budget = Limiter::install(&limited);
    let bare = mlua::Lua::new();
    let limits = Limits::default();
    // An installed limiter starts with no budget: loading the functions needs one too.
    budget.start(limits.max_callback_steps, limits.max_callback_time);
    for lua in [&limited, &bare] {
        lua.load(source).exec().expect("bench functions load");
    }
    let function = |lua: &mlua::Lua, name: &str| -> mlua::Function {
        lua.globals().get(name).expect("defined")
    };
    let (limited_noop, limited_sum) = (function(&limited, "noop"), function(&limited, "sum"));
    let (bare_noop, bare_sum) = (function(&bare, "noop"), function(&bare, "sum"));
    let start = || budget.start(limits.max_callback_steps, limits.max_callback_time);
    group.bench_function("noop_with_limiter", |b| {
        b.iter(|| {
            start();
            limited_noop.call::<mlua::Value>(()).expect("runs")
        })
    });
    group.bench_function("noop_without_limiter", |b| {
        b.iter(|| bare_noop.call::<mlua::Value>(()).expect("runs"))
    });
    let n = f64::from(LOOP);
    group.bench_function("loop_10k_with_limiter", |b| {
        b.iter(|| {
            start();
            black_box(
                limited_sum
                    .call::<f64>((mlua::Value::Nil, n))
                    .expect("runs"),
            )
        })
    });
    group.bench_function("loop_10k_without_limiter", |b| {
        b.iter(|| black_box(bare_sum.call::<f64>((mlua::Value::Nil, n)).expect("runs")))
    });
    // For reference, the whole host dispatch of the no-op handler (`LuaHandlers::call`: argument
    // conversion, the sandboxed context, the limiter and the result).
    let root = state();
    let forbidden: Vec<String> = DEFAULT_FORBIDDEN.iter().map(|s| (*s).to_owned()).collect();
    let mut handlers = handlers();
    group.bench_function("handler_noop_dispatch", |b| {
        b.iter(|| {
            let call = CallbackCall {
                name: "noop",
                args: &[],
                state: &root,
                depth: 0,
                batch: BatchContext {
                    limits: &limits,
                    forbidden: &forbidden,
                    random: &mut Random::for_step(0, 1),
                    deadline: None,
                },
            };
            black_box(handlers.call(call).expect("handler runs"))
        })
    });
    group.finish();
}

/// A `before` hook on a 10-instruction batch, against the same batch with no hook (issue 17: the hook
/// may add at most 20 µs). One hook reads every instruction and hands the batch back unchanged; the
/// other also fixes one path, so its rewrite is reported.
fn hooks(c: &mut Criterion) {
    let mut group = c.benchmark_group("before hook, 10-instruction batch");
    let batch = ten_assigns();
    for (name, scripts) in [
        ("no hook (baseline)", &[][..]),
        (
            "hook reads every instruction, no edit",
            &[("hook.lua", READS)][..],
        ),
        (
            "hook edits one instruction (reported)",
            &[("hook.lua", EDITS)][..],
        ),
    ] {
        let mut store = store_with(scripts);
        group.bench_function(name, |b| {
            b.iter(|| black_box(store.apply(&batch).is_committed()))
        });
    }
    group.finish();
}

fn config() -> Criterion {
    // The machine is shared and small: short, steady runs.
    Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! { name = benches; config = config(); targets = round_trip, ten_thousand, limiter, hooks }
criterion_main!(benches);
