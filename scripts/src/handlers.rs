//! Lua handlers: loading a scripts folder into one sandboxed VM and answering the engine's calls.
//!
//! Scripts register callbacks with `on(name, fn)` (or `on(name, fn, description)`, read by
//! `describe`) and watchers with `watch(path, fn)` while they load,
//! and only then. A call sets up the call state that `ctx.get`, `ctx.emit` and `ctx.event` work on,
//! starts a fresh step/time budget, runs the Lua function and turns what it queued and returned into
//! a [`Response`]. Every failure (an error, a limit, a value that cannot cross) becomes
//! `HandlerError::Failed` with the handler, the script line and the cause, cut to
//! `Limits::max_error_text`; the VM is collected and stays usable. This module never changes the
//! state itself: it only answers with instructions that the engine validates and runs.

use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt;
use std::rc::Rc;

use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, MultiValue, Table, Value as LuaValue};
use serde_json::Value as Json;
use statecraft_engine::{
    AfterCall, BeforeCall, CallbackCall, CallbackHandler, CallbackSignature, Change, HandlerError,
    HostEvent, Instruction, Limits, Path, Random, Response, Rewrite, Segment, Value, WatchCall,
    find_forbidden_key,
};

use crate::convert::{
    ConvertError, Inbound, MemberNames, Outbound, count_pairs, holds_instruction, path_from_lua,
    spelled, type_name,
};
use crate::describe;
use crate::error::LoadError;
use crate::limiter::{Limiter, where_running};
use crate::rewrite::{self, Entry};
use crate::sandbox;

/// A registered callback.
struct Registered {
    function: Function,
    /// `file.lua:line` of its definition.
    origin: String,
}

/// A registered watcher.
struct Watcher {
    path: Path,
    /// The path as the script wrote it, for messages.
    spelled: String,
    function: Function,
    origin: String,
}

/// What scripts register while they load.
#[derive(Default)]
struct Registrations {
    open: bool,
    handlers: Vec<(String, Registered)>,
    /// What each handler says about itself, in registration order.
    signatures: Vec<CallbackSignature>,
    watchers: Vec<Watcher>,
    /// `before` hooks, in registration order (file-name order, then call order).
    befores: Vec<Registered>,
    /// `after` hooks, in registration order.
    afters: Vec<Registered>,
}

/// Which kind of call is running, for what `ctx` allows in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A callback or a watcher.
    Handler,
    /// A `before` hook: it returns the batch, and may not emit.
    Before,
    /// An `after` hook: it may read the state as the batch began.
    After,
}

/// What the call in progress reads and queues.
struct CallState {
    active: bool,
    kind: Kind,
    state: Value,
    /// The state as the batch began, for `ctx.get_before` in `after` hooks.
    before: Option<Value>,
    /// The batch's generator, copied in for the call and handed back after it.
    random: Random,
    emitted: Vec<Instruction>,
    events: Vec<HostEvent>,
    out: Option<Outbound>,
    max_emitted: usize,
    /// The VM's memory limit while the script runs.
    memory_limit: usize,
    /// The store's forbidden segments, which returned values and event payloads are checked against.
    /// Kept from call to call: a store's list does not change, so it is copied once.
    forbidden: Rc<[String]>,
    /// The first failure of a `ctx` function. Sticky: a script that catches it with `pcall` still
    /// fails the call, since an invalid emitted value must reject the batch.
    failure: Option<String>,
}

impl CallState {
    fn idle(forbidden: Rc<[String]>) -> CallState {
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

    fn converter(&mut self) -> Result<&mut Outbound, String> {
        self.out
            .as_mut()
            .ok_or_else(|| "ctx can only be used while a handler runs".to_owned())
    }

    fn queue_instruction(&mut self, instruction: Instruction) -> Result<(), String> {
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

/// The Lua callback handlers of one game: one sandboxed Luau VM loaded from a scripts folder.
///
/// Give it to the engine with `Store::builder(state).handler(handlers)`. Each value owns its own VM,
/// so two games never see each other's globals. Script globals live as long as the VM and are not
/// rolled back with a rejected batch: game state belongs in the engine's state.
pub struct LuaHandlers {
    lua: Lua,
    handlers: HashMap<String, Registered>,
    signatures: Vec<CallbackSignature>,
    watchers: Vec<Watcher>,
    befores: Vec<Registered>,
    afters: Vec<Registered>,
    call: Rc<RefCell<CallState>>,
    limiter: Rc<Limiter>,
    ctx: Table,
    array_marker: Table,
    /// The member names of instruction tables, for `before` hooks.
    names: MemberNames,
}

impl fmt::Debug for LuaHandlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.handler_names().collect();
        names.sort_unstable();
        f.debug_struct("LuaHandlers")
            .field("handlers", &names)
            .field(
                "watchers",
                &self
                    .watchers
                    .iter()
                    .map(|w| w.spelled.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl LuaHandlers {
    /// Loads every `*.lua` file of `dir` (not its subfolders), in file-name order, into a new VM. Each
    /// file's top level runs under `limits`' step, time and memory limits.
    pub fn load_dir(
        dir: impl AsRef<std::path::Path>,
        limits: &Limits,
    ) -> Result<LuaHandlers, LoadError> {
        let dir = dir.as_ref();
        let listing = std::fs::read_dir(dir).map_err(|source| LoadError::Folder {
            path: dir.to_owned(),
            source,
        })?;
        let mut files = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|source| LoadError::Folder {
                path: dir.to_owned(),
                source,
            })?;
            let path = entry.path();
            let is_lua = path.extension().is_some_and(|ext| ext == "lua");
            if is_lua && path.is_file() {
                files.push((entry.file_name(), path));
            }
        }
        files.sort();
        let mut sources = Vec::with_capacity(files.len());
        for (name, path) in files {
            let bytes = std::fs::read(&path).map_err(|source| LoadError::Read {
                path: path.clone(),
                source,
            })?;
            let name = name.to_string_lossy().into_owned();
            let text =
                String::from_utf8(bytes).map_err(|_| LoadError::NotText { file: name.clone() })?;
            sources.push((name, text));
        }
        LuaHandlers::from_sources(sources, limits)
    }

    /// Loads scripts given as `(file name, source text)` pairs, in the order given, into a new VM.
    /// The file name is what error messages show.
    pub fn from_sources<I, N, S>(sources: I, limits: &Limits) -> Result<LuaHandlers, LoadError>
    where
        I: IntoIterator<Item = (N, S)>,
        N: Into<String>,
        S: AsRef<str>,
    {
        let vm_error = |error: mlua::Error| LoadError::Vm(error.to_string());
        let lua = sandbox::new_vm().map_err(vm_error)?;
        lua.set_memory_limit(limits.max_callback_memory)
            .map_err(vm_error)?;
        let limiter = Limiter::install(&lua);
        let call = Rc::new(RefCell::new(CallState::idle(Rc::from(Vec::new()))));
        let registrations = Rc::new(RefCell::new(Registrations {
            open: true,
            ..Registrations::default()
        }));
        let array_marker = lua.create_table().map_err(vm_error)?;
        // A protected metatable: `getmetatable` shows a string and `setmetatable` refuses to replace it.
        array_marker
            .raw_set("__metatable", "array")
            .map_err(vm_error)?;
        array_marker.set_readonly(true);
        let ctx = make_ctx(&lua, &call, &limiter, &array_marker).map_err(vm_error)?;
        let names = MemberNames::new(&lua).map_err(vm_error)?;
        install_globals(&lua, &registrations, &array_marker).map_err(vm_error)?;
        sandbox::seal(&lua).map_err(vm_error)?;

        for (name, text) in sources {
            let name: String = name.into();
            limiter.start(limits.max_callback_steps, limits.max_callback_time);
            let result = lua
                .load(text.as_ref())
                .set_name(format!("@{name}"))
                .set_mode(ChunkMode::Text)
                .exec();
            if let Some(reason) = limiter.tripped() {
                return Err(script_error(&name, reason));
            }
            if let Err(error) = result {
                return Err(script_error(&name, describe_error(&error, limits)));
            }
        }
        // Between calls no script runs; see `Relaxed` for why the limit is lifted outside scripts.
        lua.set_memory_limit(0).map_err(vm_error)?;
        let registered = std::mem::take(&mut *registrations.borrow_mut());
        let _ = lua.gc_collect();
        Ok(LuaHandlers {
            lua,
            handlers: registered.handlers.into_iter().collect(),
            signatures: registered.signatures,
            watchers: registered.watchers,
            befores: registered.befores,
            afters: registered.afters,
            call,
            limiter,
            ctx,
            array_marker,
            names,
        })
    }

    /// The names registered with `on`, in no particular order.
    pub fn handler_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.handlers.keys().map(String::as_str)
    }

    /// What each handler registered with `on` says about itself (its name, and the doc and arguments
    /// of its description when it gave one), in registration order: file-name order, then the order
    /// of the `on` calls. The prompt kit lists callbacks from these.
    pub fn signatures(&self) -> &[CallbackSignature] {
        &self.signatures
    }

    /// How many watchers were registered with `watch`.
    pub fn watcher_count(&self) -> usize {
        self.watchers.len()
    }

    /// The bytes the VM holds now (scripts, their globals, garbage not yet collected).
    pub fn used_memory(&self) -> usize {
        self.lua.used_memory()
    }

    /// How many hooks were registered with `before` and with `after`.
    pub fn hook_counts(&self) -> (usize, usize) {
        (self.befores.len(), self.afters.len())
    }

    fn begin(
        &self,
        kind: Kind,
        state: &Value,
        random: Random,
        limits: &Limits,
        forbidden: &[String],
    ) {
        self.limiter
            .start(limits.max_callback_steps, limits.max_callback_time);
        let mut call = self.call.borrow_mut();
        let forbidden = if *call.forbidden == *forbidden {
            Rc::clone(&call.forbidden)
        } else {
            Rc::from(forbidden)
        };
        *call = CallState {
            active: true,
            kind,
            state: state.clone(),
            before: None,
            random,
            emitted: Vec::new(),
            events: Vec::new(),
            out: Some(Outbound::new(
                &self.array_marker,
                limits.max_value_depth,
                limits.max_callback_memory,
            )),
            max_emitted: limits.max_emitted,
            memory_limit: limits.max_callback_memory,
            forbidden,
            failure: None,
        };
    }

    fn end(&self) -> CallState {
        let mut call = self.call.borrow_mut();
        let idle = CallState::idle(Rc::clone(&call.forbidden));
        std::mem::replace(&mut *call, idle)
    }

    /// Runs one Lua function with `ctx` and the arguments `args` builds, and reads what it returned.
    fn invoke(
        &self,
        function: &Function,
        limits: &Limits,
        args: impl FnOnce(&Inbound<'_>) -> mlua::Result<Vec<LuaValue>>,
    ) -> Result<Option<Value>, String> {
        self.invoke_with(function, limits, args, take_return)
    }

    /// [`LuaHandlers::invoke`] with its own reading of the returned value.
    fn invoke_with<T>(
        &self,
        function: &Function,
        limits: &Limits,
        args: impl FnOnce(&Inbound<'_>) -> mlua::Result<Vec<LuaValue>>,
        read: impl FnOnce(&mut CallState, &LuaValue) -> Result<T, String>,
    ) -> Result<T, String> {
        let inbound = Inbound {
            lua: &self.lua,
            array_marker: &self.array_marker,
        };
        // The host's own copies are made outside the limit (see `Relaxed`); the script runs under it.
        let returned = args(&inbound).and_then(|args| {
            let mut all = MultiValue::with_capacity(args.len() + 1);
            all.push_back(LuaValue::Table(self.ctx.clone()));
            all.extend(args);
            let _ = self.lua.set_memory_limit(limits.max_callback_memory);
            let returned = function.call::<LuaValue>(all);
            let _ = self.lua.set_memory_limit(0);
            returned
        });
        let mut state = self.call.borrow_mut();
        // A `ctx` failure stops the script (see `fail_sticky`), so it comes before the limiter's reason.
        if let Some(failure) = state.failure.take() {
            return Err(failure);
        }
        if let Some(reason) = self.limiter.tripped() {
            return Err(reason);
        }
        let returned = returned.map_err(|error| describe_error(&error, limits))?;
        read(&mut state, &returned)
    }

    /// Turns a call's outcome into the engine's answer, collecting garbage after a failure so that the
    /// next call starts from a healthy VM.
    fn answer(
        &self,
        label: &str,
        result: Result<Option<Value>, String>,
        limits: &Limits,
        random: &mut Random,
    ) -> Result<Response, HandlerError> {
        let state = self.end();
        *random = state.random;
        match result {
            Ok(value) => Ok(Response {
                value,
                instructions: state.emitted,
                events: state.events,
            }),
            Err(cause) => {
                drop(state);
                let _ = self.lua.gc_collect();
                Err(HandlerError::Failed(cut(
                    format!("{label}: {cause}"),
                    limits.max_error_text,
                )))
            }
        }
    }
}

impl CallbackHandler for LuaHandlers {
    fn call(&mut self, call: CallbackCall<'_>) -> Result<Response, HandlerError> {
        self.limiter.set_deadline(call.deadline);
        let Some(handler) = self.handlers.get(call.name) else {
            return Err(HandlerError::Unknown);
        };
        let label = format!("handler \"{}\" ({})", call.name, handler.origin);
        self.begin(
            Kind::Handler,
            call.state,
            *call.random,
            call.limits,
            call.forbidden,
        );
        let result = self.invoke(&handler.function, call.limits, |inbound| {
            call.args.iter().map(|arg| inbound.top(Some(arg))).collect()
        });
        self.answer(&label, result, call.limits, call.random)
    }

    fn watch(&mut self, call: WatchCall<'_>) -> Result<Response, HandlerError> {
        self.limiter.set_deadline(call.deadline);
        let mut hits = Vec::new();
        for change in call.changes {
            for (index, watcher) in self.watchers.iter().enumerate() {
                if let Some(hit) = relevant(&watcher.path, change) {
                    hits.push((index, hit));
                }
            }
        }
        if hits.is_empty() {
            return Ok(Response::default());
        }
        // One budget for the whole round: a watcher that fires for many changes shares it.
        self.begin(
            Kind::Handler,
            call.state,
            *call.random,
            call.limits,
            call.forbidden,
        );
        for (index, (path, old, new)) in hits {
            let watcher = &self.watchers[index];
            let result = self.invoke(&watcher.function, call.limits, |inbound| {
                Ok(vec![
                    inbound.top(old.as_ref())?,
                    inbound.top(new.as_ref())?,
                    inbound.path(&path)?,
                ])
            });
            if let Err(cause) = result {
                let label = format!("watcher on \"{}\" ({})", watcher.spelled, watcher.origin);
                return self.answer(&label, Err(cause), call.limits, call.random);
            }
        }
        self.answer("", Ok(None), call.limits, call.random)
    }

    fn before(&mut self, call: BeforeCall<'_>) -> Result<Option<Rewrite>, HandlerError> {
        self.limiter.set_deadline(call.deadline);
        if self.befores.is_empty() {
            return Ok(None);
        }
        self.begin(
            Kind::Before,
            call.state,
            *call.random,
            call.limits,
            call.forbidden,
        );
        let mut entries: Vec<Entry> = call
            .instructions
            .iter()
            .enumerate()
            .map(|(i, instruction)| Entry {
                instruction: Cow::Borrowed(instruction),
                span: call.spans.get(i).cloned(),
            })
            .collect();
        if call.spans.len() != call.instructions.len() {
            entries.iter_mut().for_each(|entry| entry.span = None);
        }
        let mut notes = Vec::new();
        for hook in &self.befores {
            self.limiter.start(
                call.limits.max_callback_steps,
                call.limits.max_callback_time,
            );
            let max_len = call.limits.max_batch_len;
            let handed = RefCell::new(Vec::new());
            let result = self.invoke_with(
                &hook.function,
                call.limits,
                |inbound| {
                    Ok(vec![batch_to_lua(
                        inbound,
                        &entries,
                        &self.names,
                        &mut handed.borrow_mut(),
                    )?])
                },
                |state, returned| {
                    let handed = Handed {
                        tables: &handed.borrow(),
                        by_address: OnceCell::new(),
                        entries: &entries,
                        array_marker: &self.array_marker,
                        names: &self.names,
                    };
                    batch_from_lua(state, returned, max_len, &handed)
                },
            );
            match result {
                Ok(Some(returned)) => {
                    notes.extend(rewrite::notes(&hook.origin, &entries, &returned));
                    entries = returned;
                }
                Ok(None) => {}
                Err(cause) => {
                    let label = format!("before hook ({})", hook.origin);
                    return self
                        .answer(&label, Err(cause), call.limits, call.random)
                        .map(|_| None);
                }
            }
        }
        self.answer("", Ok(None), call.limits, call.random)?;
        if notes.is_empty() {
            return Ok(None);
        }
        Ok(Some(Rewrite {
            instructions: entries
                .into_iter()
                .map(|entry| entry.instruction.into_owned())
                .collect(),
            notes,
        }))
    }

    fn after(&mut self, call: AfterCall<'_>) -> Result<Response, HandlerError> {
        self.limiter.set_deadline(call.deadline);
        if self.afters.is_empty() {
            return Ok(Response::default());
        }
        self.begin(
            Kind::After,
            call.state,
            *call.random,
            call.limits,
            call.forbidden,
        );
        self.call.borrow_mut().before = Some(call.before.clone());
        for hook in &self.afters {
            self.limiter.start(
                call.limits.max_callback_steps,
                call.limits.max_callback_time,
            );
            let result = self.invoke(&hook.function, call.limits, |inbound| {
                Ok(vec![changes_to_lua(inbound, call.changes)?])
            });
            let result = match result {
                Ok(Some(_)) => Err(
                    "an after hook returns nothing or instructions; it returned another value"
                        .to_owned(),
                ),
                other => other,
            };
            if let Err(cause) = result {
                let label = format!("after hook ({})", hook.origin);
                return self.answer(&label, Err(cause), call.limits, call.random);
            }
        }
        self.answer("", Ok(None), call.limits, call.random)
    }
}

/// The batch as `before` hooks receive it: a list of instruction tables, each with the `span` of its
/// text in the reply (`{start, stop}`, byte offsets, 0-based, `stop` excluded) when it is known.
/// `handed` learns the address of each entry's table, in order (see [`Handed`]).
fn batch_to_lua(
    inbound: &Inbound<'_>,
    entries: &[Entry<'_>],
    names: &MemberNames,
    handed: &mut Vec<*const c_void>,
) -> mlua::Result<LuaValue> {
    let list = inbound.lua.create_table_with_capacity(entries.len(), 0)?;
    handed.reserve(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let table = inbound.instruction(&entry.instruction, names)?;
        handed.push(table.to_pointer());
        if let Some(span) = &entry.span {
            let pair = inbound.lua.create_table_with_capacity(2, 0)?;
            pair.raw_set(1, span.start as f64)?;
            pair.raw_set(2, span.end as f64)?;
            pair.set_metatable(Some(inbound.array_marker.clone()))?;
            table.raw_set(&names.span, pair)?;
        }
        list.raw_set(i + 1, table)?;
    }
    list.set_metatable(Some(inbound.array_marker.clone()))?;
    Ok(LuaValue::Table(list))
}

/// Reads what a `before` hook returned: `nil` keeps the batch, a list of instruction tables (or one
/// instruction table) replaces it. A `span` member is read back as the instruction's span and is not
/// part of the instruction.
fn batch_from_lua<'b>(
    state: &mut CallState,
    returned: &LuaValue,
    max_len: usize,
    handed: &Handed<'_, 'b>,
) -> Result<Option<Vec<Entry<'b>>>, String> {
    let table = match returned {
        LuaValue::Nil => return Ok(None),
        LuaValue::Table(table) => table,
        other => {
            return Err(format!(
                "a before hook returns the batch (a list of instruction tables) or nil; it returned a \
                 value of type {}",
                type_name(other)
            ));
        }
    };
    if has_op(table) {
        return entry_from_lua(state, returned, 0, handed)
            .map(|entry| Some(vec![entry]))
            .map_err(|e| format!("the returned instruction {e}"));
    }
    let len = table.raw_len();
    if count_pairs(table) != Some(len) {
        return Err(
            "a before hook returns the batch as a list (keys 1..n) of instruction tables; the table \
             returned has other keys"
                .to_owned(),
        );
    }
    if len > max_len {
        return Err(format!(
            "the returned batch has {len} instructions; the limit is {max_len}"
        ));
    }
    let mut entries = Vec::with_capacity(len);
    for i in 1..=len {
        let item: LuaValue = table.raw_get(i).unwrap_or(LuaValue::Nil);
        let entry = entry_from_lua(state, &item, i - 1, handed)
            .map_err(|e| format!("returned instruction {} {e}", i - 1))?;
        entries.push(entry);
    }
    Ok(Some(entries))
}

/// The instruction tables a `before` hook was handed, to skip decoding those it left as they were:
/// most hooks edit a few instructions of a batch, and a strict decode costs microseconds each.
struct Handed<'a, 'b> {
    /// The address of each entry's table, in order. An address is only a hint (a collected table's
    /// address can be reused): the table's contents are compared before the entry is reused.
    tables: &'a [*const c_void],
    /// The same, by address: made only for a hook that moved instructions, since most leave each
    /// one where it was.
    by_address: OnceCell<HashMap<*const c_void, usize>>,
    entries: &'a [Entry<'b>],
    array_marker: &'a Table,
    names: &'a MemberNames,
}

impl<'b> Handed<'_, 'b> {
    /// The handed-out instruction that `table`, returned at `position`, still holds untouched.
    fn unchanged(
        &self,
        table: &Table,
        position: usize,
        with_span: bool,
    ) -> Option<Cow<'b, Instruction>> {
        let address = table.to_pointer();
        let index = if self.tables.get(position) == Some(&address) {
            position
        } else {
            let by_address = self.by_address.get_or_init(|| {
                self.tables
                    .iter()
                    .enumerate()
                    .map(|(index, address)| (*address, index))
                    .collect()
            });
            *by_address.get(&address)?
        };
        let entry = &self.entries[index];
        holds_instruction(
            table,
            &entry.instruction,
            self.array_marker,
            self.names,
            with_span,
        )
        .then(|| entry.instruction.clone())
    }
}

/// One returned instruction table (at `position` in the returned batch) and its `span`.
fn entry_from_lua<'b>(
    state: &mut CallState,
    value: &LuaValue,
    position: usize,
    handed: &Handed<'_, 'b>,
) -> Result<Entry<'b>, String> {
    let LuaValue::Table(table) = value else {
        return Err(format!("is of type {}, not a table", type_name(value)));
    };
    let span = match table.raw_get::<LuaValue>(&handed.names.span) {
        Ok(LuaValue::Table(pair)) => {
            let start: Option<f64> = pair.raw_get(1).ok();
            let stop: Option<f64> = pair.raw_get(2).ok();
            match (start, stop) {
                (Some(start), Some(stop)) if 0.0 <= start && start <= stop && stop < 1e15 => {
                    Some(start as usize..stop as usize)
                }
                _ => return Err("has a span that is not {start, stop}".to_owned()),
            }
        }
        Ok(LuaValue::Nil) => None,
        _ => return Err("has a span that is not {start, stop}".to_owned()),
    };
    let instruction = match handed.unchanged(table, position, span.is_some()) {
        Some(instruction) => instruction,
        None => Cow::Owned(instruction_from(state, value, true)?),
    };
    Ok(Entry { instruction, span })
}

/// The change log as `after` hooks receive it: a list of `{path, old, new, op, reason}` tables (`old`
/// absent where a key or element was created, `new` where it was removed).
fn changes_to_lua(inbound: &Inbound<'_>, changes: &[Change]) -> mlua::Result<LuaValue> {
    let lua = inbound.lua;
    let list = lua.create_table_with_capacity(changes.len(), 0)?;
    for (i, change) in changes.iter().enumerate() {
        let item = lua.create_table_with_capacity(0, 5)?;
        item.raw_set("path", inbound.path(&change.path)?)?;
        if let Some(old) = &change.old {
            item.raw_set("old", inbound.nested(old)?)?;
        }
        if let Some(new) = &change.new {
            item.raw_set("new", inbound.nested(new)?)?;
        }
        item.raw_set("op", change.op.name())?;
        if let Some(reason) = &change.reason {
            item.raw_set("reason", &**reason)?;
        }
        list.raw_set(i + 1, item)?;
    }
    list.set_metatable(Some(inbound.array_marker.clone()))?;
    Ok(LuaValue::Table(list))
}

/// Which part of `change` a watcher on `watch` sees: the changed path and its old and new values. A
/// change under the watched path is seen as it is; a change that replaced a parent of the watched path
/// is seen at the watched path, and only if the value there differs.
fn relevant(watch: &Path, change: &Change) -> Option<(Path, Option<Value>, Option<Value>)> {
    let watched = watch.segments();
    let changed = change.path.segments();
    if changed.len() >= watched.len() && prefix_matches(watched, changed) {
        return Some((change.path.clone(), change.old.clone(), change.new.clone()));
    }
    if changed.len() < watched.len() && prefix_matches(changed, watched) {
        let rest = &watched[changed.len()..];
        let old = change
            .old
            .as_ref()
            .and_then(|value| value.lookup(rest))
            .cloned();
        let new = change
            .new
            .as_ref()
            .and_then(|value| value.lookup(rest))
            .cloned();
        return (old != new).then(|| (watch.clone(), old, new));
    }
    None
}

/// Whether `prefix` leads `path`, reading decimal keys as indexes as the engine does (docs/instructions.md).
fn prefix_matches(prefix: &[Segment], path: &[Segment]) -> bool {
    prefix
        .iter()
        .zip(path)
        .all(|(a, b)| a == b || (a.as_index().is_some() && a.as_index() == b.as_index()))
}

/// Reads a handler's return value: a list of instruction tables (or one instruction table) is run
/// after what `ctx.emit` queued; anything else non-nil is the callback's result.
fn take_return(state: &mut CallState, returned: &LuaValue) -> Result<Option<Value>, String> {
    let LuaValue::Table(table) = returned else {
        return match returned {
            LuaValue::Nil => Ok(None),
            other => value_out(state, other, "the returned value").map(Some),
        };
    };
    if has_op(table) {
        let instruction = instruction_out(state, returned)
            .map_err(|e| format!("the returned instruction {e}"))?;
        state.queue_instruction(instruction)?;
        return Ok(None);
    }
    let first: LuaValue = table.raw_get(1).unwrap_or(LuaValue::Nil);
    if matches!(&first, LuaValue::Table(first) if has_op(first)) {
        for i in 1..=table.raw_len() {
            let item: LuaValue = table.raw_get(i).unwrap_or(LuaValue::Nil);
            let instruction = instruction_out(state, &item)
                .map_err(|e| format!("returned instruction {} {e}", i - 1))?;
            state.queue_instruction(instruction)?;
        }
        return Ok(None);
    }
    value_out(state, returned, "the returned value").map(Some)
}

fn has_op(table: &Table) -> bool {
    matches!(table.raw_get::<LuaValue>("op"), Ok(LuaValue::String(_)))
}

fn value_out(state: &mut CallState, value: &LuaValue, what: &str) -> Result<Value, String> {
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
fn instruction_out(state: &mut CallState, value: &LuaValue) -> Result<Instruction, String> {
    instruction_from(state, value, false)
}

/// [`instruction_out`], leaving out a `span` member when `without_span` (a `before` hook's tables
/// carry their reply span).
fn instruction_from(
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

/// The `ctx` table every handler receives: one shared, read-only table whose functions work on the
/// call in progress (so a call costs no closure allocation).
fn make_ctx(
    lua: &Lua,
    call: &Rc<RefCell<CallState>>,
    limiter: &Rc<Limiter>,
    array_marker: &Table,
) -> mlua::Result<Table> {
    let ctx = lua.create_table()?;

    let shared = Rc::clone(call);
    let marker = array_marker.clone();
    ctx.raw_set(
        "get",
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
        })?,
    )?;

    let shared = Rc::clone(call);
    let stopper = Rc::clone(limiter);
    ctx.raw_set(
        "emit",
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
        })?,
    )?;

    let shared = Rc::clone(call);
    let stopper = Rc::clone(limiter);
    ctx.raw_set(
        "event",
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
        })?,
    )?;

    let shared = Rc::clone(call);
    let marker = array_marker.clone();
    ctx.raw_set(
        "get_before",
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
        })?,
    )?;

    let shared = Rc::clone(call);
    ctx.raw_set(
        "random",
        lua.create_function(move |lua, (low, high): (LuaValue, LuaValue)| {
            let mut state = shared.borrow_mut();
            if !state.active {
                return Err(raised(
                    lua,
                    "ctx.random: ctx can only be used while a handler runs",
                ));
            }
            let bound = |value: &LuaValue, which: &str| -> Result<i64, mlua::Error> {
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
            };
            let (low, high) = match (&low, &high) {
                (LuaValue::Nil, LuaValue::Nil) => return Ok(state.random.unit()),
                (_, LuaValue::Nil) => (1, bound(&low, "upper")?),
                _ => (bound(&low, "lower")?, bound(&high, "upper")?),
            };
            state
                .random
                .range(low, high)
                .map(|n| n as f64)
                .map_err(|e| raised(lua, &format!("ctx.random: {e}")))
        })?,
    )?;

    ctx.set_readonly(true);
    Ok(ctx)
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

/// A Lua error carrying the script location of the caller.
fn raised(lua: &Lua, message: &str) -> mlua::Error {
    mlua::Error::runtime(located(lua, message))
}

/// `file.lua:line: message` when a script frame is on the stack.
fn located(lua: &Lua, message: &str) -> String {
    match caller(lua) {
        Some(place) => format!("{place}: {message}"),
        None => message.to_owned(),
    }
}

/// The innermost script frame on the stack, as `file.lua:line`.
fn caller(lua: &Lua) -> Option<String> {
    (0..4).find_map(|level| where_running(lua, level))
}

/// `on`, `watch`, `array` and `null`: the globals the script contract adds to Luau's safe libraries.
fn install_globals(
    lua: &Lua,
    registrations: &Rc<RefCell<Registrations>>,
    array_marker: &Table,
) -> mlua::Result<()> {
    let globals = lua.globals();

    let shared = Rc::clone(registrations);
    globals.raw_set(
        "on",
        lua.create_function(
            move |lua, (name, function, description): (LuaValue, LuaValue, LuaValue)| {
                let mut registered = shared.borrow_mut();
                if !registered.open {
                    return Err(raised(
                        lua,
                        "on: handlers can only be registered while the scripts load",
                    ));
                }
                let LuaValue::String(name) = name else {
                    return Err(raised(
                        lua,
                        &format!(
                            "on: the handler name must be a string, not a {}",
                            type_name(&name)
                        ),
                    ));
                };
                let name = name
                    .to_str()
                    .map_err(|_| raised(lua, "on: the handler name is not valid utf-8"))?
                    .to_owned();
                if name.is_empty() {
                    return Err(raised(lua, "on: the handler name is empty"));
                }
                let LuaValue::Function(function) = function else {
                    return Err(raised(
                        lua,
                        &format!(
                            "on: the handler must be a function, not a {}",
                            type_name(&function)
                        ),
                    ));
                };
                if let Some((_, earlier)) =
                    registered.handlers.iter().find(|(known, _)| *known == name)
                {
                    return Err(raised(
                        lua,
                        &format!("on: \"{name}\" is already registered at {}", earlier.origin),
                    ));
                }
                let signature = describe::signature(&name, description).map_err(|reason| {
                    raised(lua, &format!("on: the description of \"{name}\": {reason}"))
                })?;
                let origin = origin(&function);
                registered.signatures.push(signature);
                registered
                    .handlers
                    .push((name, Registered { function, origin }));
                Ok(())
            },
        )?,
    )?;

    let shared = Rc::clone(registrations);
    globals.raw_set(
        "watch",
        lua.create_function(move |lua, (path, function): (LuaValue, LuaValue)| {
            let mut registered = shared.borrow_mut();
            if !registered.open {
                return Err(raised(
                    lua,
                    "watch: watchers can only be registered while the scripts load",
                ));
            }
            let spelled = match &path {
                LuaValue::String(text) => text.to_string_lossy(),
                _ => String::new(),
            };
            let path = path_from_lua(&path).map_err(|e| raised(lua, &format!("watch: {e}")))?;
            let spelled = if spelled.is_empty() {
                path.to_pointer()
            } else {
                spelled
            };
            let LuaValue::Function(function) = function else {
                return Err(raised(
                    lua,
                    &format!(
                        "watch: the watcher must be a function, not a {}",
                        type_name(&function)
                    ),
                ));
            };
            let origin = origin(&function);
            registered.watchers.push(Watcher {
                path,
                spelled,
                function,
                origin,
            });
            Ok(())
        })?,
    )?;

    for (global, after) in [("before", false), ("after", true)] {
        let shared = Rc::clone(registrations);
        globals.raw_set(
            global,
            lua.create_function(move |lua, function: LuaValue| {
                let mut registered = shared.borrow_mut();
                if !registered.open {
                    return Err(raised(
                        lua,
                        &format!("{global}: hooks can only be registered while the scripts load"),
                    ));
                }
                let LuaValue::Function(function) = function else {
                    return Err(raised(
                        lua,
                        &format!(
                            "{global}: the hook must be a function, not a {}",
                            type_name(&function)
                        ),
                    ));
                };
                let origin = origin(&function);
                let hook = Registered { function, origin };
                if after {
                    registered.afters.push(hook);
                } else {
                    registered.befores.push(hook);
                }
                Ok(())
            })?,
        )?;
    }

    let marker = array_marker.clone();
    globals.raw_set(
        "array",
        lua.create_function(move |lua, table: Option<Table>| {
            let table = match table {
                Some(table) => table,
                None => lua.create_table()?,
            };
            // Read-only tables (the libraries) and tables with a metatable of their own are refused:
            // marking them would change what a script does not own or lose its behaviour.
            if table.is_readonly() {
                return Err(raised(lua, "array: the table is read-only"));
            }
            match table.metatable() {
                Some(meta) if meta.to_pointer() != marker.to_pointer() => {
                    return Err(raised(lua, "array: the table already has a metatable"));
                }
                _ => table.set_metatable(Some(marker.clone()))?,
            }
            Ok(table)
        })?,
    )?;

    globals.raw_set("null", LuaValue::NULL)?;
    Ok(())
}

/// `file.lua:line` where a function was defined.
fn origin(function: &Function) -> String {
    let info = function.info();
    let file = info.short_src.unwrap_or_else(|| "?".to_owned());
    match info.line_defined {
        Some(line) => format!("{file}:{line}"),
        None => file,
    }
}

/// The cause of a Lua error, in words, without Rust-side noise (tracebacks, wrapper layers).
fn describe_error(error: &mlua::Error, limits: &Limits) -> String {
    match error {
        mlua::Error::CallbackError { cause, .. } => describe_error(cause, limits),
        mlua::Error::WithContext { cause, .. } => describe_error(cause, limits),
        mlua::Error::MemoryError(_) => format!(
            "the memory limit of {} bytes was exceeded",
            limits.max_callback_memory
        ),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(message) => {
            // mlua appends a traceback to some messages. Keep only the innermost script line from it,
            // for messages that carry no location of their own (errors raised by library functions).
            let (head, traceback) = message
                .split_once("\nstack traceback:")
                .unwrap_or((message, ""));
            let text = match thrown_value(head) {
                Some(kind) => {
                    format!("the script raised a {kind} as its error instead of a message")
                }
                None => head.to_owned(),
            };
            match traceback_place(traceback) {
                Some(place) if !head.starts_with(&place) => format!("{text} (at {place})"),
                _ => text,
            }
        }
        other => other.to_string(),
    }
}

/// The type of a non-string error value, which mlua renders as `table: 0x…` (or `<table 0x…>`): its
/// address is noise and its `__tostring` is not the script's to run on the host's behalf.
fn thrown_value(message: &str) -> Option<&str> {
    let trimmed = message.trim_start_matches('<');
    [
        "table", "userdata", "function", "thread", "buffer", "vector",
    ]
    .into_iter()
    .find(|kind| {
        trimmed
            .strip_prefix(kind)
            .is_some_and(|rest| rest.starts_with(": 0x") || rest.starts_with(" 0x"))
    })
}

/// The innermost script frame of a Luau traceback (`attack.lua:2: in function <attack.lua:1>`), as
/// `attack.lua:2`.
fn traceback_place(traceback: &str) -> Option<String> {
    traceback
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("[C]"))
        .find_map(|line| {
            let (file, rest) = line.split_once(':')?;
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            (!digits.is_empty()).then(|| format!("{file}:{digits}"))
        })
}

fn script_error(file: &str, message: String) -> LoadError {
    // Interpreter messages start with `file:line:`; lift the line out so callers can point at it.
    let rest = message
        .strip_prefix(file)
        .and_then(|rest| rest.strip_prefix(':'));
    if let Some(rest) = rest {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let (Ok(line), Some(text)) = (
            digits.parse::<usize>(),
            rest[digits.len()..].strip_prefix(':'),
        ) {
            return LoadError::Script {
                file: file.to_owned(),
                line: Some(line),
                message: text.trim_start().to_owned(),
            };
        }
    }
    LoadError::Script {
        file: file.to_owned(),
        line: None,
        message,
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut.
fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    const MARK: &str = "…";
    let mut end = max.saturating_sub(MARK.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    if max >= MARK.len() {
        text.push_str(MARK);
    }
    text
}
