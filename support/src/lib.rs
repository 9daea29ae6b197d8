//! What the tests, benches and examples of several crates share, in one crate instead of files
//! included by a path attribute into each: a dev-dependency only, never shipped (`publish = false`).
//!
//! - [`unchanged`]: what a rejected batch must leave exactly as it was (the engine's, the scripts'
//!   and the cross-crate tests).
//! - [`pg_schema`] (feature `postgres`): a PostgreSQL schema of a test's own (the server's tests, in
//!   process and not, and the command's).
//! - [`chat`]: the chat of the timeline benchmarks (the engine's and the saves').
//! - [`entities`] and [`baseline`]: the engine benchmarks' state and batches, and the `json-patch`
//!   baseline they are compared with (also counted by `tests/examples/instruction_counts.rs`).
//! - [`extract_inputs`] and [`mvu_inputs`]: the text layer's benchmark inputs (also counted there).
//!
//! Nothing here may depend on a crate besides the engine: the crates that use it are below it too.

pub mod baseline;
pub mod chat;
pub mod entities;
pub mod extract_inputs;
pub mod mvu_inputs;
#[cfg(feature = "postgres")]
pub mod pg_schema;
pub mod unchanged;
