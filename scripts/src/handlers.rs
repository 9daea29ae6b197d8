//! Lua handlers: loading a scripts folder into one sandboxed VM and answering the engine's calls.
//!
//! Scripts register callbacks with `on(name, fn)` (or `on(name, fn, description)`, read by
//! `describe`), watchers with `watch(path, fn)` and hooks with `before` and `after` while they load,
//! and only then (`globals.rs`). A call sets up the call state that `ctx` works on (`ctx.rs`), starts
//! a fresh step/time budget, runs the Lua function and turns what it queued and returned into a
//! [`Response`]; a `before` hook's batch crosses here both ways. Every failure (an error, a limit, a
//! value that cannot cross) becomes `HandlerError::Failed` with the handler, the script line and the
//! cause (`error.rs`), cut to `Limits::max_error_text`; the VM is collected and stays usable. This
//! module never changes the state itself: it only answers with instructions that the engine
//! validates and runs.

use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt;
use std::rc::Rc;

use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, MultiValue, Table, Value as LuaValue};
use statecraft_engine::{
    AfterCall, BatchContext, BeforeCall, CallbackCall, CallbackHandler, CallbackSignature, Change,
    HandlerError, Instruction, Limits, Path, Response, Rewrite, Segment, Value, WatchCall,
};

use crate::convert::{Inbound, MemberNames, Outbound, count_pairs, holds_instruction, type_name};
use crate::ctx::{self, CallState, Kind, instruction_from, instruction_out, value_out};
use crate::error::{LoadError, cut, describe_error, script_error};
use crate::globals::{self, Registered, Registrations, Watcher};
use crate::limiter::Limiter;
use crate::rewrite::{self, Entry};
use crate::sandbox;

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
        let ctx = ctx::make(&lua, &call, &limiter, &array_marker).map_err(vm_error)?;
        let names = MemberNames::new(&lua).map_err(vm_error)?;
        globals::install(&lua, &registrations, &array_marker).map_err(vm_error)?;
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
        // Between calls no script runs; see `ctx::Relaxed` for why the limit is lifted outside scripts.
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

    fn begin(&self, kind: Kind, state: &Value, batch: &BatchContext<'_>) {
        let (random, limits, forbidden) = (*batch.random, batch.limits, batch.forbidden);
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
        // The host's own copies are made outside the limit (see `ctx::Relaxed`); the script runs under it.
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
        batch: &mut BatchContext<'_>,
    ) -> Result<Response, HandlerError> {
        let state = self.end();
        *batch.random = state.random;
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
                    batch.limits.max_error_text,
                )))
            }
        }
    }
}

impl CallbackHandler for LuaHandlers {
    fn call(&mut self, mut call: CallbackCall<'_>) -> Result<Response, HandlerError> {
        self.limiter.set_deadline(call.batch.deadline);
        let Some(handler) = self.handlers.get(call.name) else {
            return Err(HandlerError::Unknown);
        };
        let label = format!("handler \"{}\" ({})", call.name, handler.origin);
        self.begin(Kind::Handler, call.state, &call.batch);
        let result = self.invoke(&handler.function, call.batch.limits, |inbound| {
            call.args.iter().map(|arg| inbound.top(Some(arg))).collect()
        });
        self.answer(&label, result, &mut call.batch)
    }

    fn watch(&mut self, mut call: WatchCall<'_>) -> Result<Response, HandlerError> {
        self.limiter.set_deadline(call.batch.deadline);
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
        self.begin(Kind::Handler, call.state, &call.batch);
        for (index, (path, old, new)) in hits {
            let watcher = &self.watchers[index];
            let result = self.invoke(&watcher.function, call.batch.limits, |inbound| {
                Ok(vec![
                    inbound.top(old.as_ref())?,
                    inbound.top(new.as_ref())?,
                    inbound.path(&path)?,
                ])
            });
            if let Err(cause) = result {
                let label = format!("watcher on \"{}\" ({})", watcher.spelled, watcher.origin);
                return self.answer(&label, Err(cause), &mut call.batch);
            }
        }
        self.answer("", Ok(None), &mut call.batch)
    }

    fn before(&mut self, mut call: BeforeCall<'_>) -> Result<Option<Rewrite>, HandlerError> {
        self.limiter.set_deadline(call.batch.deadline);
        if self.befores.is_empty() {
            return Ok(None);
        }
        self.begin(Kind::Before, call.state, &call.batch);
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
                call.batch.limits.max_callback_steps,
                call.batch.limits.max_callback_time,
            );
            let max_len = call.batch.limits.max_batch_len;
            let handed = RefCell::new(Vec::new());
            let result = self.invoke_with(
                &hook.function,
                call.batch.limits,
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
                        .answer(&label, Err(cause), &mut call.batch)
                        .map(|_| None);
                }
            }
        }
        self.answer("", Ok(None), &mut call.batch)?;
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

    fn after(&mut self, mut call: AfterCall<'_>) -> Result<Response, HandlerError> {
        self.limiter.set_deadline(call.batch.deadline);
        if self.afters.is_empty() {
            return Ok(Response::default());
        }
        self.begin(Kind::After, call.state, &call.batch);
        self.call.borrow_mut().before = Some(call.before.clone());
        for hook in &self.afters {
            self.limiter.start(
                call.batch.limits.max_callback_steps,
                call.batch.limits.max_callback_time,
            );
            let result = self.invoke(&hook.function, call.batch.limits, |inbound| {
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
                return self.answer(&label, Err(cause), &mut call.batch);
            }
        }
        self.answer("", Ok(None), &mut call.batch)
    }

    fn has_after_hooks(&self) -> bool {
        !self.afters.is_empty()
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
