//! `ctx`: what a running call reads and queues, and the one `ctx` table scripts receive.
//!
//! A call sets up its [`CallState`] (the state it reads, the batch's generator, what it emitted and
//! queued); `ctx.get`, `ctx.get_before`, `ctx.emit`, `ctx.event` and `ctx.random` work on it, and
//! what a script hands out (an emitted instruction, a payload, a returned value) is converted and
//! checked here. A `ctx` function's failure is sticky, so that `pcall` cannot swallow it. This module
//! must not register handlers (`globals.rs`) nor answer the engine (`handlers.rs`).

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Function, Lua, Table, Value as LuaValue};
use serde_json::Value as Json;
use statecraft_engine::{HostEvent, Instruction, Random, Segment, Value, find_forbidden_key};

use crate::convert::{ConvertError, Inbound, Outbound, path_from_lua, spelled, type_name};
use crate::error::{located, raised};
use crate::limiter::Limiter;

/// Which kind of call is running, for what `ctx` allows in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A callback or a watcher.
    Handler,
    /// A `before` hook: it returns the batch, and may not emit.
    Before,
    /// An `after` hook: it may read the state as the batch began.
    After,
}

/// What the call in progress reads and queues.
pub(crate) struct CallState {
    pub(crate) active: bool,
    pub(crate) kind: Kind,
    pub(crate) state: Value,
    /// The state as the batch began, for `ctx.get_before` in `after` hooks.
    pub(crate) before: Option<Value>,
    /// The batch's generator, copied in for the call and handed back after it.
    pub(crate) random: Random,
    pub(crate) emitted: Vec<Instruction>,
    pub(crate) events: Vec<HostEvent>,
    pub(crate) out: Option<Outbound>,
    pub(crate) max_emitted: usize,
    /// The VM's memory limit while the script runs.
    pub(crate) memory_limit: usize,
    /// The store's forbidden segments, which returned values and event payloads are checked against.
    /// Kept from call to call: a store's list does not change, so it is copied once.
    pub(crate) forbidden: Rc<[String]>,
    /// The first failure of a `ctx` function. Sticky: a script that catches it with `pcall` still
    /// fails the call, since an invalid emitted value must reject the batch.
    pub(crate) failure: Option<String>,
}

impl CallState {
    pub(crate) fn idle(forbidden: Rc<[String]>) -> CallState {
        CallState {
            active: false,
            kind: Kind::Handler,
            state: Value::Null,
            before: None,
            random: Random::for_step(0, 0),
            emitted: Vec::new(),
            events: Vec::new(),
            out: None,
            max_emitted: 0,
            memory_limit: 0,
            forbidden,
            failure: None,
        }
    }

    pub(crate) fn converter(&mut self) -> Result<&mut Outbound, String> {
        self.out
            .as_mut()
            .ok_or_else(|| "ctx can only be used while a handler runs".to_owned())
    }

    pub(crate) fn queue_instruction(&mut self, instruction: Instruction) -> Result<(), String> {
        if self.kind == Kind::Before {
            return Err(
                "a before hook cannot emit instructions; it returns the batch to run instead"
                    .to_owned(),
            );
        }
        if self.emitted.len() >= self.max_emitted {
            return Err(format!(
                "more than {} instructions were emitted in one call",
                self.max_emitted
            ));
        }
        self.emitted.push(instruction);
        Ok(())
    }
}

/// The `ctx` table every handler receives: one shared, read-only table whose functions work on the
/// call in progress (so a call costs no closure allocation).
pub(crate) fn make(
    lua: &Lua,
    call: &Rc<RefCell<CallState>>,
    limiter: &Rc<Limiter>,
    array_marker: &Table,
) -> mlua::Result<Table> {
    let ctx = lua.create_table()?;
    ctx.raw_set("get", get(lua, call, array_marker)?)?;
    ctx.raw_set("emit", emit(lua, call, limiter)?)?;
    ctx.raw_set("event", event(lua, call, limiter)?)?;
    ctx.raw_set("get_before", get_before(lua, call, array_marker)?)?;
    ctx.raw_set("random", random(lua, call)?)?;
    ctx.set_readonly(true);
    Ok(ctx)
}

/// `ctx.get(path)`: a copy of the value at `path` as the batch stands, `nil` when absent.
fn get(lua: &Lua, call: &Rc<RefCell<CallState>>, array_marker: &Table) -> mlua::Result<Function> {
    let shared = Rc::clone(call);
    let marker = array_marker.clone();
    lua.create_function(move |lua, path: LuaValue| {
        let state = shared.borrow();
        let _relaxed = Relaxed::new(lua, state.memory_limit);
        if !state.active {
            return Err(raised(
                lua,
                "ctx.get: ctx can only be used while a handler runs",
            ));
        }
        let path = path_from_lua(&path).map_err(|e| raised(lua, &format!("ctx.get: {e}")))?;
        let found = state.state.lookup(path.segments());
        Inbound {
            lua,
            array_marker: &marker,
        }
        .top(found)
    })
}

/// `ctx.emit(instruction)`: queues an instruction table, decoded strictly.
fn emit(lua: &Lua, call: &Rc<RefCell<CallState>>, limiter: &Rc<Limiter>) -> mlua::Result<Function> {
    let shared = Rc::clone(call);
    let stopper = Rc::clone(limiter);
    lua.create_function(move |lua, instruction: LuaValue| {
        let mut state = shared.borrow_mut();
        let _relaxed = Relaxed::new(lua, state.memory_limit);
        let result = check_active(&state)
            .and_then(|()| {
                instruction_out(&mut state, &instruction)
                    .map_err(|e| format!("the instruction {e}"))
            })
            .and_then(|instruction| state.queue_instruction(instruction));
        fail_sticky(lua, &mut state, &stopper, "ctx.emit", result)
    })
}

/// `ctx.event(name, payload)`: queues a host event, delivered only if the batch commits.
fn event(
    lua: &Lua,
    call: &Rc<RefCell<CallState>>,
    limiter: &Rc<Limiter>,
) -> mlua::Result<Function> {
    let shared = Rc::clone(call);
    let stopper = Rc::clone(limiter);
    lua.create_function(move |lua, (name, payload): (LuaValue, LuaValue)| {
        let mut state = shared.borrow_mut();
        let _relaxed = Relaxed::new(lua, state.memory_limit);
        let result = check_active(&state).and_then(|()| {
            let LuaValue::String(name) = &name else {
                return Err(format!(
                    "the event name must be a string, not a {}",
                    type_name(&name)
                ));
            };
            let name = name
                .to_str()
                .map_err(|_| "the event name is not valid utf-8".to_owned())?
                .to_owned();
            if name.is_empty() {
                return Err("the event name is empty".to_owned());
            }
            let payload = value_out(&mut state, &payload, "the event payload")?;
            if state.events.len() >= state.max_emitted {
                return Err(format!(
                    "more than {} events were queued in one call",
                    state.max_emitted
                ));
            }
            state.events.push(HostEvent { name, payload });
            Ok(())
        });
        fail_sticky(lua, &mut state, &stopper, "ctx.event", result)
    })
}

/// `ctx.get_before(path)`: in `after` hooks, the value at `path` as the batch began.
fn get_before(
    lua: &Lua,
    call: &Rc<RefCell<CallState>>,
    array_marker: &Table,
) -> mlua::Result<Function> {
    let shared = Rc::clone(call);
    let marker = array_marker.clone();
    lua.create_function(move |lua, path: LuaValue| {
        let state = shared.borrow();
        let _relaxed = Relaxed::new(lua, state.memory_limit);
        let before = match (&state.before, state.active) {
            (Some(before), true) => before,
            _ => {
                return Err(raised(
                    lua,
                    "ctx.get_before: only after hooks see the state as the batch began",
                ));
            }
        };
        let path =
            path_from_lua(&path).map_err(|e| raised(lua, &format!("ctx.get_before: {e}")))?;
        Inbound {
            lua,
            array_marker: &marker,
        }
        .top(before.lookup(path.segments()))
    })
}

/// `ctx.random(m, n)`: a draw from the batch's generator (`()` a unit float, `(n)` 1..=n).
fn random(lua: &Lua, call: &Rc<RefCell<CallState>>) -> mlua::Result<Function> {
    let shared = Rc::clone(call);
    lua.create_function(move |lua, (low, high): (LuaValue, LuaValue)| {
        let mut state = shared.borrow_mut();
        if !state.active {
            return Err(raised(
                lua,
                "ctx.random: ctx can only be used while a handler runs",
            ));
        }
        let (low, high) = match (&low, &high) {
            (LuaValue::Nil, LuaValue::Nil) => return Ok(state.random.unit()),
            (_, LuaValue::Nil) => (1, bound(lua, &low, "upper")?),
            _ => (bound(lua, &low, "lower")?, bound(lua, &high, "upper")?),
        };
        state
            .random
            .range(low, high)
            .map(|n| n as f64)
            .map_err(|e| raised(lua, &format!("ctx.random: {e}")))
    })
}

/// One bound of `ctx.random`: a whole number a Luau number holds exactly.
fn bound(lua: &Lua, value: &LuaValue, which: &str) -> Result<i64, mlua::Error> {
    let number = match value {
        LuaValue::Integer(n) => *n as f64,
        LuaValue::Number(n) => *n,
        other => {
            return Err(raised(
                lua,
                &format!(
                    "ctx.random: the {which} bound must be a number, not a {}",
                    type_name(other)
                ),
            ));
        }
    };
    if number.fract() != 0.0 || number.abs() > MAX_EXACT {
        return Err(raised(
            lua,
            &format!(
                "ctx.random: the {which} bound must be a whole number within ±2^53, not {number}"
            ),
        ));
    }
    Ok(number as i64)
}

/// The largest whole number a Luau number holds exactly: `ctx.random`'s bounds stay within it.
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

/// Lifts the VM's memory limit while host code (not the script) builds or reads Lua values, and puts
/// it back when dropped. With a limit set, mlua runs every allocating API call in protected mode,
/// which made a small table argument cost microseconds; without one, calls are direct. What the host
/// builds is bounded by the state and the arguments, which the engine bounds; the script's own
/// allocations always run under the limit, and a copy that pushed the VM over it fails the script's
/// next allocation.
struct Relaxed<'a> {
    lua: &'a Lua,
    limit: usize,
}

impl<'a> Relaxed<'a> {
    fn new(lua: &'a Lua, limit: usize) -> Relaxed<'a> {
        let _ = lua.set_memory_limit(0);
        Relaxed { lua, limit }
    }
}

impl Drop for Relaxed<'_> {
    fn drop(&mut self) {
        let _ = self.lua.set_memory_limit(self.limit);
    }
}

fn check_active(state: &CallState) -> Result<(), String> {
    if state.active {
        Ok(())
    } else {
        Err("ctx can only be used while a handler runs".to_owned())
    }
}

/// Records the first failure of a `ctx` function (see [`CallState::failure`]), raises it in Lua and
/// trips the limiter: the call has already failed, so a script that swallows the error with `pcall`
/// is stopped at its next loop iteration or call instead of running on to no purpose.
fn fail_sticky(
    lua: &Lua,
    state: &mut CallState,
    limiter: &Limiter,
    what: &str,
    result: Result<(), String>,
) -> mlua::Result<()> {
    match result {
        Ok(()) => Ok(()),
        Err(problem) => {
            let message = located(lua, &format!("{what}: {problem}"));
            if state.active && state.failure.is_none() {
                state.failure = Some(message.clone());
                limiter.stop(format!("the call already failed: {message}"));
            }
            Err(mlua::Error::runtime(message))
        }
    }
}

/// Converts a value a script hands out (an event payload, a callback's result), refusing forbidden
/// keys.
pub(crate) fn value_out(
    state: &mut CallState,
    value: &LuaValue,
    what: &str,
) -> Result<Value, String> {
    let out = state.converter()?;
    let json = out
        .convert(value, 0)
        .map_err(|e| format!("{what} cannot be converted: {e}"))?;
    let value = Value::from_json(&json);
    // The engine checks results and payloads against the store's list too; checking here places the
    // error on the script's line.
    if let Some(at) = find_forbidden_key(&value, &state.forbidden) {
        return Err(format!(
            "{what} has a forbidden key at {at} (front ends merge values into javascript objects)"
        ));
    }
    Ok(value)
}

/// Converts an instruction table and decodes it strictly, as the engine decodes JSON instructions. A
/// string path not starting with `/` is read in its docs/instructions.md spelling, like `ctx.get`'s; a JSON
/// Pointer is left to the engine, which reads it by the same rules (and keeps RFC 6902 ops' pointers).
pub(crate) fn instruction_out(
    state: &mut CallState,
    value: &LuaValue,
) -> Result<Instruction, String> {
    instruction_from(state, value, false)
}

/// [`instruction_out`], leaving out a `span` member when `without_span` (a `before` hook's tables
/// carry their reply span).
pub(crate) fn instruction_from(
    state: &mut CallState,
    value: &LuaValue,
    without_span: bool,
) -> Result<Instruction, String> {
    if !matches!(value, LuaValue::Table(_)) {
        return Err(format!("is a {}, not a table", type_name(value)));
    }
    let out = state.converter()?;
    let mut json = out
        .convert(value, 0)
        .map_err(|e: ConvertError| format!("cannot be converted: {e}"))?;
    // Written without let-chains: the workspace's rust-version predates them.
    let spelled_path = match &json {
        Json::Object(map) => match map.get("path") {
            Some(Json::String(text)) if !text.starts_with('/') => {
                Some(spelled(text).map_err(|e| format!("is invalid: field /path: {e}"))?)
            }
            _ => None,
        },
        _ => None,
    };
    if let (true, Json::Object(map)) = (without_span, &mut json) {
        map.remove("span");
    }
    if let (Some(path), Json::Object(map)) = (spelled_path, &mut json) {
        let keys = path
            .segments()
            .iter()
            .map(|segment| match segment {
                Segment::Key(key) => Json::String(key.to_string()),
                Segment::Index(index) => Json::from(*index),
            })
            .collect();
        map.insert("path".to_owned(), Json::Array(keys));
    }
    Instruction::from_json(&json).map_err(|errors| {
        let reasons: Vec<String> = errors
            .iter()
            .map(|error| match error.field.as_deref() {
                Some(field) if !field.is_empty() => format!("field {field}: {}", error.message),
                _ => error.message.clone(),
            })
            .collect();
        format!("is invalid: {}", reasons.join("; "))
    })
}
