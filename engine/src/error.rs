//! Why a batch was refused: one [`BatchError`] per problem, each saying what, where and why.
//!
//! A rejected batch is an expected outcome, not a Rust error: these values travel inside
//! [`crate::Rejection`]. Every error names the instruction (by its index in the batch, followed by the
//! indexes of emitted instructions for callback output) and a JSON Pointer, either into the instruction
//! (`field`, for shape and limit errors) or into the state (`path`, for execution and schema errors).

use std::fmt;

use serde::{Serialize, Serializer};

registry! {
    /// What kind of problem, one kind per rule and per limit. [`ErrorKind::code`] is the stable
    /// name in JSON output.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum ErrorKind {
        /// The instruction is not a JSON object.
        NotAnInstruction = "not_an_instruction",
        /// `op` names no known operation.
        UnknownOp = "unknown_op",
        /// A required member (`op`, `path`, `value`, `from`) is absent.
        MissingField = "missing_field",
        /// A member this op does not take (`value` on `pop`, `from` on `assign`).
        UnexpectedField = "unexpected_field",
        /// A member no instruction has. Strict decoding refuses it; lenient decoding ignores and
        /// reports it.
        UnknownMember = "unknown_member",
        /// A member has the wrong JSON type or shape.
        InvalidField = "invalid_field",
        /// The path is not a list of keys and indexes, or not a valid JSON Pointer.
        InvalidPath = "invalid_path",
        /// A JSON Patch pointer without its leading `/`. Strict decoding refuses it; lenient
        /// decoding reads it with the `/` and reports it.
        PointerWithoutSlash = "pointer_without_slash",
        /// One array mixes instruction ops with JSON Patch ops.
        MixedBatch = "mixed_batch",
        /// The empty path where the op needs a target inside the state.
        EmptyPath = "empty_path",
        /// A forbidden segment (`__proto__`, `constructor`, `prototype`) in a path or a value key.
        ForbiddenSegment = "forbidden_segment",
        /// More path segments than `Limits::max_path_segments`.
        PathTooDeep = "path_too_deep",
        /// A value nested deeper than `Limits::max_value_depth`.
        ValueTooDeep = "value_too_deep",
        /// A string longer than `Limits::max_string_bytes`.
        StringTooLong = "string_too_long",
        /// A batch would nest the state deeper than `Limits::max_state_depth`.
        StateTooDeep = "state_too_deep",
        /// A batch would grow the state beyond `Limits::max_state_bytes`.
        StateTooLarge = "state_too_large",
        /// One instruction would write more than `Limits::max_op_bytes` into the state.
        OpTooLarge = "op_too_large",
        /// A batch's changes and events would carry more than `Limits::max_commit_bytes`.
        CommitTooLarge = "commit_too_large",
        /// A step label longer than `Limits::max_label_bytes`.
        LabelTooLong = "label_too_long",
        /// The batch ran past the deadline its host gave it (`ApplyOptions::deadline`) and was
        /// stopped.
        DeadlineExceeded = "deadline_exceeded",
        /// More instructions than `Limits::max_batch_len`.
        BatchTooLong = "batch_too_long",
        /// More instructions emitted by callbacks than `Limits::max_emitted`.
        TooManyEmitted = "too_many_emitted",
        /// Callbacks emitting callbacks deeper than `Limits::max_cascade_depth`.
        CascadeTooDeep = "cascade_too_deep",
        /// The state holds another type than the op needs (push to an object, a path through a
        /// scalar).
        TypeMismatch = "type_mismatch",
        /// The target of `delete`, `pop`, `splice`, `increment` (or an RFC 6902 target) is absent.
        MissingTarget = "missing_target",
        /// A parent on the path is absent and the `missing_parent` policy is `reject`.
        MissingParent = "missing_parent",
        /// An array index past the end (index == length appends for `assign`).
        IndexOutOfRange = "index_out_of_range",
        /// The value at the path does not equal `old`.
        OldMismatch = "old_mismatch",
        /// Integer arithmetic overflowed.
        Overflow = "overflow",
        /// No handler is registered for the callback's name.
        UnknownCallback = "unknown_callback",
        /// The callback handler failed, hit a limit, or emitted something invalid.
        CallbackFailed = "callback_failed",
        /// An RFC 6902 `test` failed.
        TestFailed = "test_failed",
        /// The would-be state violates the state's JSON Schema.
        SchemaViolation = "schema_violation",
        /// Not a problem: under `schema_violation = repair`, a value was repaired to the schema.
        /// Reported as a warning with the path and the rule.
        SchemaRepaired = "schema_repaired",
        /// Not a problem: a `before` hook changed the batch. Reported as a warning naming the
        /// script's file and line, so that a reader can tell what the model wrote from what ran.
        RewrittenByScript = "rewritten_by_script",
        /// The step a batch was to be committed on (`ApplyOptions::at`) is not in the history: an
        /// unknown label or id, or a step that trimming dropped.
        UnknownStep = "unknown_step",
        /// The state at the step a batch was to be committed on could not be rebuilt: a change log
        /// does not replay, only possible with a history rebuilt from a damaged save.
        HistoryDamaged = "history_damaged",
    }
    impl {
        /// Every kind, in declaration order (docs/codes.md lists them from here).
        pub const ALL;
        /// The stable snake_case code that JSON output and scenario files use (`old_mismatch`).
        pub fn code;
    }
}

/// The code, as in JSON output.
impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Serialised as its code.
impl Serialize for ErrorKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
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

/// Every problem found, as one error value: what decoding and [`crate::StoreBuilder::build`] return
/// when they refuse. It reads as a slice of [`BatchError`]s; its text is every error, joined by `; `.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct BatchErrors(pub Vec<BatchError>);

impl fmt::Display for BatchErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, error) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BatchErrors {}

impl std::ops::Deref for BatchErrors {
    type Target = [BatchError];

    fn deref(&self) -> &[BatchError] {
        &self.0
    }
}

impl From<Vec<BatchError>> for BatchErrors {
    fn from(errors: Vec<BatchError>) -> BatchErrors {
        BatchErrors(errors)
    }
}

impl IntoIterator for BatchErrors {
    type Item = BatchError;
    type IntoIter = std::vec::IntoIter<BatchError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'e> IntoIterator for &'e BatchErrors {
    type Item = &'e BatchError;
    type IntoIter = std::slice::Iter<'e, BatchError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ErrorKind::ALL`, the codes and the enum are one table (`registry!`); the codes are unique.
    #[test]
    fn all_lists_every_kind_once() {
        let codes: std::collections::BTreeSet<&str> =
            ErrorKind::ALL.into_iter().map(ErrorKind::code).collect();
        assert_eq!(codes.len(), ErrorKind::ALL.len(), "two kinds share a code");
    }

    #[test]
    fn a_list_of_batch_errors_is_one_error_naming_each() {
        fn decode() -> Result<(), Box<dyn std::error::Error>> {
            let errors = BatchErrors(vec![
                BatchError::in_field(ErrorKind::MissingField, &Trail(vec![0]), "/op", "no op"),
                BatchError::whole_batch(ErrorKind::BatchTooLong, None, "too long"),
            ]);
            Err(errors)?
        }
        let error = decode().unwrap_err();
        assert_eq!(
            error.to_string(),
            "instruction 0, field /op: no op; too long"
        );
        let errors = BatchErrors::default();
        assert!(errors.is_empty());
        assert_eq!(errors.to_string(), "");
    }
}
