//! Sandboxed Lua (Luau) callback handlers for the statecraft engine.
//!
//! This crate implements the engine's `CallbackHandler` trait on Luau and is the only crate that links
//! Lua. [`LuaHandlers::load_dir`] loads every `*.lua` file of a scripts folder, in file-name order and
//! as source text only, into one sandboxed VM per game; the host hands the result to
//! `Store::builder(state).handler(handlers)`. Scripts register `on(name, function(ctx, ...) end)` and
//! `watch(path, function(ctx, old, new, path) end)`; `ctx.get(path)` reads a copy of the state as it
//! stands at that point of the batch, `ctx.emit(instruction)` and returned instruction lists queue
//! instructions that the engine validates and runs inside the same batch, and `ctx.event(name,
//! payload)` queues a host event delivered only on commit. The crate must not touch the state
//! directly, and a script must never reach the host: no files, OS, modules, bytecode or debug
//! access, and bounded steps, time, memory, output and error text (see `Limits`).
//!
//! Values crossing the boundary: Lua tables with keys `1..n` are lists, tables with string keys are
//! objects, `array(t)` marks a table (even an empty one) as a list, and the global `null` is JSON
//! `null` inside containers. Integral numbers become integers. Paths in `ctx.get`, `watch` and
//! emitted instructions are lists of keys and 0-based indexes (`{"inventory", 0}`) or dotted strings
//! (`"player.hp"`).

mod convert;
mod error;
mod handlers;
mod limiter;
mod sandbox;

pub use error::LoadError;
pub use handlers::LuaHandlers;
