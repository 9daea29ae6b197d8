//! Why a batch was refused: one [`BatchError`] per problem, each saying what, where and why.
//!
//! A rejected batch is an expected outcome, not a Rust error: these values travel inside
//! [`crate::Rejection`]. Every error names the instruction (by its index in the batch, followed by the
//! indexes of emitted instructions for callback output) and a JSON Pointer, either into the instruction
//! (`field`, for shape and limit errors) or into the state (`path`, for execution and schema errors).

use std::fmt;

use serde::Serialize;

/// What kind of problem, one kind per rule and per limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The instruction is not a JSON object.
    NotAnInstruction,
    /// `op` names no known operation.
    UnknownOp,
    /// A required member (`op`, `path`, `value`, `from`) is absent.
    MissingField,
    /// A member this op does not take (`value` on `pop`, `from` on `assign`).
    UnexpectedField,
    /// A member no instruction has. Strict decoding refuses it; lenient decoding ignores and reports it.
    UnknownMember,
    /// A member has the wrong JSON type or shape.
    InvalidField,
    /// The path is not a list of keys and indexes, or not a valid JSON Pointer.
    InvalidPath,
    /// A JSON Patch pointer without its leading `/`. Strict decoding refuses it; lenient decoding reads
    /// it with the `/` and reports it.
    PointerWithoutSlash,
    /// One array mixes instruction ops with JSON Patch ops.
    MixedBatch,
    /// The empty path where the op needs a target inside the state.
    EmptyPath,
    /// A forbidden segment (`__proto__`, `constructor`, `prototype`) in a path or a value key.
    ForbiddenSegment,
    /// More path segments than `Limits::max_path_depth`.
    PathTooDeep,
    /// A value nested deeper than `Limits::max_value_depth`.
    ValueTooDeep,
    /// A string longer than `Limits::max_string_bytes`.
    StringTooLong,
    /// More instructions than `Limits::max_batch_len`.
    BatchTooLong,
    /// More instructions emitted by callbacks than `Limits::max_emitted`.
    TooManyEmitted,
    /// Callbacks emitting callbacks deeper than `Limits::max_cascade_depth`.
    CascadeTooDeep,
    /// The state holds another type than the op needs (push to an object, a path through a scalar).
    TypeMismatch,
    /// The target of `delete`, `pop`, `splice`, `increment` (or an RFC 6902 target) is absent.
    MissingTarget,
    /// A parent on the path is absent and the `missing_parent` policy is `reject`.
    MissingParent,
    /// An array index past the end (index == length appends for `assign`).
    IndexOutOfRange,
    /// The value at the path does not equal `old`.
    OldMismatch,
    /// Integer arithmetic overflowed.
    Overflow,
    /// No handler is registered for the callback's name.
    UnknownCallback,
    /// The callback handler failed, hit a limit, or emitted something invalid.
    CallbackFailed,
    /// An RFC 6902 `test` failed.
    TestFailed,
    /// The would-be state violates the state's JSON Schema.
    SchemaViolation,
}

/// Which instruction: its index in the batch, then the index among the instructions each callback
/// emitted (`[2, 0]` is the first instruction emitted by instruction 2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Trail(pub Vec<usize>);

impl fmt::Display for Trail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut indexes = self.0.iter();
        if let Some(first) = indexes.next() {
            write!(f, "instruction {first}")?;
        }
        for emitted in indexes {
            write!(f, " > emitted {emitted}")?;
        }
        Ok(())
    }
}

/// One problem with a batch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BatchError {
    /// What kind of problem.
    pub kind: ErrorKind,
    /// The instruction, or `None` for the batch as a whole (its length, the schema).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<Trail>,
    /// JSON Pointer into the instruction (`/path/1`, `/value/hp`) for shape and limit errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// JSON Pointer into the state for execution and schema errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The full explanation, lower-case, no trailing period.
    pub message: String,
}

impl BatchError {
    /// An error about an instruction's own text: `field` points into the instruction.
    pub fn in_field(
        kind: ErrorKind,
        trail: &Trail,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> BatchError {
        BatchError {
            kind,
            instruction: Some(trail.clone()),
            field: Some(field.into()),
            path: None,
            message: message.into(),
        }
    }

    /// An error found while running: `path` points into the state.
    pub fn at_path(
        kind: ErrorKind,
        trail: &Trail,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> BatchError {
        BatchError {
            kind,
            instruction: Some(trail.clone()),
            field: None,
            path: Some(path.into()),
            message: message.into(),
        }
    }

    /// An error about the whole batch.
    pub fn whole_batch(
        kind: ErrorKind,
        path: Option<String>,
        message: impl Into<String>,
    ) -> BatchError {
        BatchError {
            kind,
            instruction: None,
            field: None,
            path,
            message: message.into(),
        }
    }
}

/// `instruction 2, field /path/1: <message>` or `instruction 0, at /player/hp: <message>`.
impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut wrote = false;
        if let Some(trail) = &self.instruction {
            write!(f, "{trail}")?;
            wrote = true;
        }
        if let Some(field) = &self.field {
            write!(
                f,
                "{}field {}",
                if wrote { ", " } else { "" },
                if field.is_empty() { "(whole)" } else { field }
            )?;
            wrote = true;
        }
        if let Some(path) = &self.path {
            write!(
                f,
                "{}at {}",
                if wrote { ", " } else { "" },
                if path.is_empty() { "(root)" } else { path }
            )?;
            wrote = true;
        }
        if wrote {
            f.write_str(": ")?;
        }
        f.write_str(&self.message)
    }
}
