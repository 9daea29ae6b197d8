//! The statecraft engine: a state store that runs validated instructions in atomic batches.
//!
//! The state is one JSON value on persistent data structures ([`Value`]). A [`Store`] owns the current
//! root and applies a [`Batch`] all-or-nothing: it writes the root in place, logging every change,
//! and undoes a rejected batch by replaying the log backwards, so the state is then exactly what it
//! was (snapshots share the root's nodes, which are copied before they are written, so they never
//! change). Every commit is a history step that undo and
//! redo replay from its change log. The engine never does IO, never links a script interpreter and
//! never guesses at text: it takes instructions that are already structured. The rules every crate
//! shares live here too, so that they exist once: JSON Pointer escaping ([`escape_pointer_token`]),
//! the string path spellings of docs/instructions.md ([`parse_path`]), the forbidden-key check
//! ([`is_forbidden`], [`find_forbidden_key`]) and the refusal of JSON text that names a member twice
//! in one object ([`duplicate_member`]).

// First: its macro is used by the modules below it.
#[macro_use]
mod registry;

mod budget;
mod callback;
mod card;
mod change;
mod condition;
mod error;
mod exec;
mod history;
mod instruction;
mod limits;
mod number;
mod path;
mod pathtext;
mod profile;
mod random;
mod retained;
mod run;
mod schema;
mod store;
mod structure;
mod sync;
mod tree;
mod unique;
mod validate;
mod value;

pub use callback::{
    AfterCall, BatchContext, BeforeCall, CallbackArg, CallbackCall, CallbackHandler,
    CallbackSignature, HandlerError, HostEvent, NoHandlers, Response, Rewrite, RewriteNote,
    WatchCall,
};
pub use card::{CardUpdate, CardUpdateOptions, CardVersion, plan as plan_card_update};
pub use change::{Change, ReplayError, replay_backward, replay_forward};
pub use condition::{
    Comparison, Condition, ConditionError, MAX_CONDITION_DEPTH, MAX_CONDITION_TESTS,
};
pub use error::{BatchError, BatchErrors, ErrorKind, Trail};
pub use history::{HistoryLimits, StepId, StepMarks, StepRef, TimelineError, TrimmedStep};
pub use instruction::{Batch, Instruction, Lenient, Op};
pub use limits::{
    Limits, MissingParent, MissingTarget, OldMismatch, Policies, SchemaViolation, UnknownCallback,
};
pub use number::Number;
pub use path::{
    Path, PointerError, Segment, decimal_index, escape_pointer_token, unescape_pointer_token,
};
pub use pathtext::{PathSpelling, PathSpellingError, parse_path};
pub use profile::{Profile, UnknownProfile};
pub use random::{EmptyRange, Random};
pub use schema::{SchemaError, StateSchema};
pub use store::{
    ApplyOptions, Commit, Outcome, Rejection, Resolve, Snapshot, StepInfo, Store, StoreBuilder,
};
pub use structure::{StructureSchema, apply_template};
pub use sync::{
    AppliedReply, ChatReply, ChatReplyError, ContentKey, KeyError, ReplyReader, SyncError,
    SyncOptions, SyncReply, Synced,
};
pub use tree::{JsonTree, NodeKind};
pub use unique::{DuplicateMember, duplicate_member};
pub use validate::{DEFAULT_FORBIDDEN, find_forbidden_key, is_forbidden};
pub use value::{Array, Key, Object, Value, ValueType, json_depth, numbers_equal};

/// The README's library tour runs as a doctest, so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeTour;
