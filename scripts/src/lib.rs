//! Sandboxed Lua (Luau) callback handlers for the statecraft engine.
//!
//! This crate implements the engine's `CallbackHandler` trait on Luau and is the only crate that links
//! Lua. It must not touch the state directly: handlers read copies and answer with instructions that
//! the engine validates and runs inside the same atomic batch. A script must never reach the host: no
//! files, OS, modules, source or bytecode loading, debug access or printing, and every call is bounded
//! in steps, time, memory, output and error text.
//!
//! A host loads a game's scripts folder with [`LuaHandlers::load_dir`] (every `*.lua` file, in
//! file-name order, as source text only, into one VM per game) and hands the result to the store:
//!
//! ```no_run
//! # use statecraft_engine::{Limits, Store, Value};
//! # use statecraft_scripts::LuaHandlers;
//! let limits = Limits::default();
//! let handlers = LuaHandlers::load_dir("examples/fantasy/scripts", &limits)?;
//! let store = Store::builder(Value::object()).handler(handlers).limits(limits).build();
//! # Ok::<(), statecraft_scripts::LoadError>(())
//! ```
//!
//! The script contract (docs/callbacks.md):
//! - `on(name, function(ctx, ...args) ... end)` registers the handler of `callback` instructions whose
//!   `path[0]` is `name`; the instruction's `value` list is the arguments. An optional third argument
//!   describes the handler for the model, `{doc = "...", args = {{name = "amount", type = "integer",
//!   minimum = 0, doc = "..."}, ...}}`; it is checked as it is registered and read back with
//!   [`LuaHandlers::signatures`] (see the `describe` module for every key).
//! - `watch(path, function(ctx, old, new, changed_path) ... end)` runs once for every change under
//!   `path` made by the batch's own instructions, then for the changes made by what watchers emitted,
//!   up to `Limits::max_cascade_depth`. A change that replaced a parent is seen at `path` itself, and
//!   only if the value there differs.
//! - `ctx.get(path)` returns a copy of the value at `path` as the state stands at that point of the
//!   batch (`nil` when absent); `ctx.emit(instruction)` queues an instruction table; `ctx.event(name,
//!   payload)` queues a host event, delivered only if the batch commits. A handler may also return a
//!   list of instruction tables (or one), which run after the emitted ones; any other returned value
//!   is the callback's result.
//! - `before(function(ctx, batch) ... end)` runs once per batch before validation and returns the
//!   batch to run (`nil` keeps it); each edit is reported as a `rewritten_by_script` warning with the
//!   hook's file and line. `after(function(ctx, changes) ... end)` runs once after watchers, before
//!   the schema check, reads `ctx.get_before(path)` and may emit. `ctx.random(m, n)` draws from the
//!   batch's generator, keyed by the game's seed and the step. `docs/callbacks.md` has the details.
//! - Paths are lists of keys and 0-based indexes (`{"inventory", 0}`), as in instructions, or strings
//!   in any spelling of docs/instructions.md, read by the engine's `parse_path` exactly as model output is read:
//!   `"player.hp"`, `"inventory[0].name"`, `"a['x.y']"`, `"/player/hp"`. A malformed spelling (an
//!   unclosed `[`) is an error, never a guess.
//!
//! Values crossing the boundary: tables with keys `1..n` are lists and tables with string keys are
//! objects; `array(t)` marks a table, even an empty one, as a list (lists read with `ctx.get` carry
//! that mark); the global `null` stands for JSON `null` inside containers; integral numbers become
//! integers. Cycles, functions, userdata, coroutines, NaN, infinities, mixed or sparse tables and
//! nesting deeper than `Limits::max_value_depth` are refused with the place and the reason.
//!
//! Limits (from the engine's `Limits`, per trait call): `max_callback_steps` counts Luau interrupts
//! (every function call and loop iteration, pattern matching included), `max_callback_time` is wall
//! time, both enforced by an interrupt that stays tripped once exceeded so `pcall` cannot swallow it;
//! `max_callback_memory` bounds the VM and, separately, what one call hands back to Rust;
//! `max_emitted` bounds the instructions and events of one call; `max_error_text` cuts messages. Any
//! failure rejects the batch with a message naming the handler, the script line and the cause, and the
//! VM stays usable. Script globals persist between calls of one game and are not rolled back with a
//! rejected batch.

mod convert;
mod ctx;
mod describe;
mod error;
mod globals;
mod handlers;
mod limiter;
mod rewrite;
mod sandbox;

pub use error::LoadError;
pub use handlers::LuaHandlers;

/// Parts exposed for the benches only (the limiter's cost is measured on a bare VM); not a stable API.
#[doc(hidden)]
pub mod internals {
    pub use crate::limiter::Limiter;
}
