//! Sandboxed Lua callback handlers (owned by the Lua issue).
//!
//! This crate implements the engine's `CallbackHandler` trait on Luau. It is the only crate that links
//! Lua. It must not touch the state directly: handlers read copies and emit instructions that the engine
//! validates and runs inside the same atomic batch.
