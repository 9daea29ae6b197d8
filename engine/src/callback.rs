//! The seam between the engine and callback handlers (Lua is one implementation, in `scripts/`).
//!
//! The store calls a [`CallbackHandler`] for every `callback` instruction, and once more after the
//! batch's own instructions so that watchers can react to the changes. A handler sees the state as it
//! stands at that point of the batch, read-only, and answers with a return value, instructions to run
//! next inside the same batch, and host events that reach the host only if the batch commits.
//!
//! The same handler owns the batch hooks: [`CallbackHandler::before`] sees the decoded batch before
//! validation and may hand back another one ([`Rewrite`]), and [`CallbackHandler::after`] sees the
//! whole change log and the state as the batch began once watchers are done, before the schema
//! check. Every call carries the batch's [`Random`] generator, so that scripts draw deterministic
//! numbers. This module must not know any scripting language.

use std::fmt;
use std::ops::Range;
use std::time::Instant;

use serde::Serialize;

use crate::change::Change;
use crate::instruction::Instruction;
use crate::limits::Limits;
use crate::random::Random;
use crate::value::Value;

/// Something a handler wants the host to do (show a message, play a sound). Delivered only on commit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostEvent {
    /// What kind of event, chosen by the script (`"message"`).
    pub name: String,
    /// Its data.
    pub payload: Value,
}

/// What every handler call of one batch carries: a callback's, a watcher's and a hook's alike.
#[derive(Debug)]
pub struct BatchContext<'a> {
    /// The limits in force; handlers enforce the time, step and memory limits themselves.
    pub limits: &'a Limits,
    /// The store's forbidden segments. A handler that checks what it hands back before the engine
    /// does (to place the error in its own source) checks against these, with
    /// [`crate::find_forbidden_key`], never against a list of its own.
    pub forbidden: &'a [String],
    /// The batch's generator: draws advance it for the rest of the batch.
    pub random: &'a mut Random,
    /// When the batch's time is up ([`crate::ApplyOptions::deadline`]): a handler stops a running
    /// script at it and fails, and the store rejects the batch as out of time.
    pub deadline: Option<Instant>,
}

/// One `callback` instruction, as the handler sees it.
#[derive(Debug)]
pub struct CallbackCall<'a> {
    /// The handler's name: the callback's `path[0]`.
    pub name: &'a str,
    /// The arguments: the instruction's `value` as a list (a non-array value is one argument).
    pub args: &'a [Value],
    /// The state at this point of the batch. Cloning it is O(1).
    pub state: &'a Value,
    /// How many callbacks deep this call is: 0 for a callback in the batch itself.
    pub depth: usize,
    /// The batch's limits, forbidden segments, generator and deadline.
    pub batch: BatchContext<'a>,
}

/// The changes a batch made, offered to watchers.
#[derive(Debug)]
pub struct WatchCall<'a> {
    /// The changes since the last watch call in this batch (the first call sees all the batch's own).
    pub changes: &'a [Change],
    /// The state after those changes.
    pub state: &'a Value,
    /// 0 for the batch's own changes, 1 for changes made by what watchers emitted, and so on.
    pub depth: usize,
    /// The batch's limits, forbidden segments, generator and deadline.
    pub batch: BatchContext<'a>,
}

/// The batch as decoded, offered to `before` hooks before validation.
#[derive(Debug)]
pub struct BeforeCall<'a> {
    /// The instructions as submitted (not yet validated).
    pub instructions: &'a [Instruction],
    /// The byte span in the reply of each instruction, when the batch came from a reply
    /// ([`crate::ApplyOptions::spans`]); empty otherwise.
    pub spans: &'a [Range<usize>],
    /// The state the batch will run on.
    pub state: &'a Value,
    /// The batch's limits, forbidden segments, generator and deadline.
    pub batch: BatchContext<'a>,
}

/// What `before` hooks made of a batch: the batch to run instead, and one note per edit.
#[derive(Clone, Debug, Default)]
pub struct Rewrite {
    /// The instructions to validate and run instead of the submitted ones.
    pub instructions: Vec<Instruction>,
    /// What each hook changed, in the order the hooks ran.
    pub notes: Vec<RewriteNote>,
}

/// One edit a `before` hook made, reported with the commit (or the rejection) as a
/// `rewritten_by_script` warning, so that a reader can tell what the model wrote from what ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RewriteNote {
    /// Where the hook is defined (`hooks.lua:3`).
    pub origin: String,
    /// The first instruction of the rewritten batch the edit concerns, if it left one there.
    pub instruction: Option<usize>,
    /// What changed, in words (`instruction 1 was dropped (reply bytes 40..72)`).
    pub message: String,
}

/// The whole batch, offered to `after` hooks once instructions, callbacks and watchers have run.
#[derive(Debug)]
pub struct AfterCall<'a> {
    /// Every change of the batch so far, in order.
    pub changes: &'a [Change],
    /// The state as the batch began.
    pub before: &'a Value,
    /// The state now.
    pub state: &'a Value,
    /// The batch's limits, forbidden segments, generator and deadline.
    pub batch: BatchContext<'a>,
}

/// A handler's answer.
#[derive(Clone, Debug, Default)]
pub struct Response {
    /// The callback's result, reported with the batch's results (`None`: absent).
    pub value: Option<Value>,
    /// Instructions to validate and run right after, in the same batch.
    pub instructions: Vec<Instruction>,
    /// Events for the host, delivered only if the batch commits.
    pub events: Vec<HostEvent>,
}

/// Why a handler failed. The batch is rejected with this text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandlerError {
    /// No handler has this name.
    Unknown,
    /// The handler ran and failed: an error, a limit, an invalid emitted value. The message names the
    /// handler, the script line and the cause.
    Failed(String),
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerError::Unknown => f.write_str("no handler is registered under this name"),
            HandlerError::Failed(message) => f.write_str(message),
        }
    }
}

/// What a callback says about itself, so that a model can be told it exists: its name, what it does,
/// and the arguments its `value` list holds. The prompt kit lists callbacks from these in the rules
/// text, the batch schema and the grammar; the engine itself never reads them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallbackSignature {
    /// The handler's name: a callback instruction's `path[0]`.
    pub name: String,
    /// What it does, in a sentence for the model.
    pub doc: Option<String>,
    /// Its arguments in order, or `None` when the handler does not describe them (any list).
    pub args: Option<Vec<CallbackArg>>,
}

/// One argument of a [`CallbackSignature`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallbackArg {
    /// Its name, for the model.
    pub name: String,
    /// What it means, in a few words for the model.
    pub doc: Option<String>,
    /// A JSON Schema for its value (`{"type": "integer", "minimum": 0}`); `{}` accepts any value.
    pub schema: serde_json::Value,
    /// Whether it may be left out. Only arguments after every required one may be.
    pub optional: bool,
}

/// Something the store calls for `callback` instructions and after each round of changes.
pub trait CallbackHandler {
    /// Runs the handler named `call.name`.
    fn call(&mut self, call: CallbackCall<'_>) -> Result<Response, HandlerError>;

    /// Lets watchers react to changes. The default watches nothing.
    fn watch(&mut self, call: WatchCall<'_>) -> Result<Response, HandlerError> {
        let _ = call;
        Ok(Response::default())
    }

    /// Lets `before` hooks rewrite the batch before it is validated. `None` runs the batch as
    /// submitted (the default: no hooks); a [`Rewrite`] replaces it, and is validated like any batch.
    fn before(&mut self, call: BeforeCall<'_>) -> Result<Option<Rewrite>, HandlerError> {
        let _ = call;
        Ok(None)
    }

    /// Lets `after` hooks correct the would-be state before the schema check. Their instructions run
    /// inside the same batch, bounded by the cascade limit; watchers do not see them. The default
    /// does nothing.
    fn after(&mut self, call: AfterCall<'_>) -> Result<Response, HandlerError> {
        let _ = call;
        Ok(Response::default())
    }

    /// Whether [`CallbackHandler::after`] may do anything. When it says no, the store does not call
    /// `after` and keeps no copy of the state as the batch began for [`AfterCall::before`]: that copy
    /// is an O(1) clone, but while it lives every write of the batch copies the nodes it touches
    /// instead of writing them in place. The default says yes; a handler whose `after` does nothing
    /// should say no.
    fn has_after_hooks(&self) -> bool {
        true
    }
}

/// No handlers at all: every callback is unknown.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHandlers;

impl CallbackHandler for NoHandlers {
    fn call(&mut self, _call: CallbackCall<'_>) -> Result<Response, HandlerError> {
        Err(HandlerError::Unknown)
    }

    fn has_after_hooks(&self) -> bool {
        false
    }
}
