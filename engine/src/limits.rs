//! Limits and policies: plain data that a store holds and a batch may override.
//!
//! Every limit has its own error kind and its own test. Limits the engine cannot enforce itself (time and
//! memory inside a callback handler) are carried here so that handlers read them from one place. The
//! time a whole batch may take is not a limit but a deadline the host gives each batch
//! (`ApplyOptions::deadline`), since only the host knows when its request's time is up.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Bounds on what one batch may contain and do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Most segments in a path. Error: `PathTooDeep`.
    pub max_path_segments: usize,
    /// Deepest container nesting in a value (`[[1]]` is 2). Error: `ValueTooDeep`.
    pub max_value_depth: usize,
    /// Longest string, in bytes, in a value, key or reason. Error: `StringTooLong`.
    pub max_string_bytes: usize,
    /// Deepest container nesting a batch may build in the state, where a value lands (its path's length
    /// plus its own depth). Equal to `max_value_depth` by default, so that every part of a state can be
    /// written back as an instruction value, and far below the 128 levels that JSON readers (state
    /// files, save records with their few levels of framing) accept: what commits can always be read
    /// back. Error: `StateTooDeep`.
    pub max_state_depth: usize,
    /// Largest estimated size, in bytes, that a batch may grow the state to (by
    /// [`crate::Value::estimated_bytes`], which counts shared parts as often as they appear, as every
    /// written form of the state does). Checked after every instruction; an instruction that does not
    /// grow the state is never refused by it. Error: `StateTooLarge`.
    pub max_state_bytes: usize,
    /// Most estimated bytes one instruction (or one emitted by a callback) may write into the state:
    /// a JSON Patch `copy` writes the whole value it copies. Error: `OpTooLarge`.
    pub max_op_bytes: usize,
    /// Most estimated bytes a batch's commit may carry: the old and the new value of every change (each
    /// counted in full, though the state shares them) and the payloads of its events. Every written
    /// form of a commit spells them out (an answer listing its changes, a step record in a save or a
    /// database), so this bounds what one small batch can make a host write: five `copy` instructions
    /// of a large part into one place build nothing new in memory, yet their change log holds that
    /// part ten times. Checked after every instruction. Error: `CommitTooLarge`.
    pub max_commit_bytes: usize,
    /// Longest label a batch may give its step, in bytes. Labels are kept with their steps and
    /// counted in the history's byte bound. Error: `LabelTooLong`.
    pub max_label_bytes: usize,
    /// Most instructions in a batch as submitted. Error: `BatchTooLong`.
    pub max_batch_len: usize,
    /// Most instructions that callbacks and watchers may emit in one batch. Error: `TooManyEmitted`.
    pub max_emitted: usize,
    /// How deep callbacks may emit callbacks (and watchers trigger watchers). Error: `CascadeTooDeep`.
    pub max_cascade_depth: usize,
    /// Interpreter instructions one handler call may run (enforced by the handler).
    pub max_callback_steps: u64,
    /// Wall-clock time one handler call may take (enforced by the handler).
    pub max_callback_time: Duration,
    /// Memory a handler's VM may hold, in bytes (enforced by the handler).
    pub max_callback_memory: usize,
    /// Longest error text a handler may report; longer text is cut (enforced by the handler).
    pub max_error_text: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_path_segments: 32,
            max_value_depth: 64,
            max_string_bytes: 1 << 20,
            max_state_depth: 64,
            max_state_bytes: 256 << 20,
            max_op_bytes: 64 << 20,
            max_commit_bytes: 512 << 20,
            max_label_bytes: 1024,
            max_batch_len: 10_000,
            max_emitted: 100_000,
            max_cascade_depth: 8,
            max_callback_steps: 10_000_000,
            max_callback_time: Duration::from_secs(1),
            max_callback_memory: 64 << 20,
            max_error_text: 1_000,
        }
    }
}

/// What to do when an `old` value does not match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OldMismatch {
    /// The batch fails.
    #[default]
    Reject,
    /// The instruction runs and the mismatch is reported as a warning.
    Warn,
    /// The instruction runs silently.
    Ignore,
}

/// What to do when a parent on an `assign`/`merge`/`push` path is absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingParent {
    /// Create it: an integer segment creates an array, a string segment an object.
    #[default]
    Create,
    /// The batch fails.
    Reject,
}

/// What to do when the target of `delete`, `pop`, `splice` or `increment` is absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingTarget {
    /// The batch fails.
    #[default]
    Reject,
    /// The instruction does nothing and a warning is reported.
    Skip,
}

/// What to do with a callback whose name has no handler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownCallback {
    /// The batch fails.
    #[default]
    Reject,
    /// The callback does nothing and a warning is reported.
    Skip,
}

/// What to do when the would-be state violates the state's schema.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchemaViolation {
    /// The batch fails.
    #[default]
    Reject,
    /// Violations the schema says how to mend are repaired (a number or boolean written as a string
    /// is coerced, numbers are clamped to `minimum`/`maximum`, a missing required member takes its
    /// `default`, a string matching an `enum` member up to case and surrounding spaces becomes that
    /// member), each repair a change of the same step and a `schema_repaired` warning; anything else
    /// still fails the batch.
    Repair,
}

/// How a store treats the soft failures of docs/instructions.md, "Policies". Set per store, overridable per batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policies {
    /// Default `reject`.
    pub old_mismatch: OldMismatch,
    /// Default `create`.
    pub missing_parent: MissingParent,
    /// Default `reject`.
    pub missing_target: MissingTarget,
    /// Default `reject`.
    pub unknown_callback: UnknownCallback,
    /// Default `reject`.
    pub schema_violation: SchemaViolation,
}

impl Policies {
    /// The defaults for instructions translated from MVU text: MVU ignores old values and models often
    /// write stale ones, so a mismatch only warns.
    pub fn mvu() -> Policies {
        Policies {
            old_mismatch: OldMismatch::Warn,
            ..Policies::default()
        }
    }
}
