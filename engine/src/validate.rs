//! Validation before anything runs: limits, forbidden segments and the shape each op needs.
//!
//! Every problem is reported, not only the first, each with the instruction's trail and a JSON Pointer
//! into the instruction. Validation reads only the batch, never the state: what depends on the state
//! (types found, missing targets) is found while running.

use crate::error::{BatchError, ErrorKind, Trail};
use crate::exec::splice_args;
use crate::instruction::{Instruction, Op};
use crate::limits::Limits;
use crate::path::{Segment, escape_pointer_token, pointer_of};
use crate::value::Value;

/// The path segments refused by default: front ends are JavaScript and merge values into objects.
pub const DEFAULT_FORBIDDEN: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// Whether `key` is one of the `forbidden` segments (a store's list, [`DEFAULT_FORBIDDEN`] unless
/// configured). The one check behind every refusal of a forbidden path segment or value key (docs/instructions.md, "Paths").
pub fn is_forbidden(key: &str, forbidden: &[String]) -> bool {
    forbidden.iter().any(|f| f == key)
}

/// The JSON Pointer, relative to `value`, of the first object key inside `value` that is forbidden
/// (depth first, in key order), or `None`. For callers that check a value before it reaches the
/// engine's validation, such as a script host placing the error on the script's line.
///
/// Time: O(size of `value`); iterative, so any depth is safe.
pub fn find_forbidden_key(value: &Value, forbidden: &[String]) -> Option<String> {
    // Each entry is a value, the key it sits under (if any) and its pointer; keys are checked as they
    // come off the stack, so the first forbidden key found is the first in document order.
    let mut stack: Vec<(&Value, Option<&str>, String)> = vec![(value, None, String::new())];
    while let Some((value, key, at)) = stack.pop() {
        if key.is_some_and(|key| is_forbidden(key, forbidden)) {
            return Some(at);
        }
        match value {
            Value::Object(map) => {
                for (key, item) in map.iter().rev() {
                    let here = format!("{at}/{}", escape_pointer_token(key));
                    stack.push((item, Some(key), here));
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((item, None, format!("{at}/{i}")));
                }
            }
            _ => {}
        }
    }
    None
}

/// What validation checks against: limits and the forbidden segments.
#[derive(Debug)]
pub(crate) struct Rules<'a> {
    pub(crate) limits: &'a Limits,
    pub(crate) forbidden: &'a [String],
}

impl Rules<'_> {
    /// Checks a whole batch as submitted.
    pub(crate) fn batch(&self, instructions: &[Instruction]) -> Vec<BatchError> {
        let mut errors = Vec::new();
        if instructions.len() > self.limits.max_batch_len {
            errors.push(BatchError::whole_batch(
                ErrorKind::BatchTooLong,
                None,
                format!(
                    "the batch has {} instructions; the limit is {}",
                    instructions.len(),
                    self.limits.max_batch_len
                ),
            ));
            return errors;
        }
        // One trail for the whole batch, its index set per instruction: no allocation each.
        let mut trail = Trail(vec![0]);
        for (index, instruction) in instructions.iter().enumerate() {
            trail.0[0] = index;
            self.instruction(instruction, &trail, &mut errors);
        }
        errors
    }

    /// Checks one instruction, appending every problem.
    pub(crate) fn instruction(
        &self,
        instruction: &Instruction,
        trail: &Trail,
        errors: &mut Vec<BatchError>,
    ) {
        let op = instruction.op;
        let mut error = |kind, field: String, message: String| {
            errors.push(BatchError::in_field(kind, trail, field, message))
        };
        self.path(instruction.path.segments(), "/path", &mut error);
        if let Some(from) = &instruction.from {
            self.path(from.segments(), "/from", &mut error);
        }
        if instruction.path.is_empty() && !op.takes_root() {
            error(
                ErrorKind::EmptyPath,
                "/path".into(),
                format!(
                    "{op} needs a path inside the state; only get and merge may target the root"
                ),
            );
        }
        for (field, value) in [
            ("/value", &instruction.value),
            ("/old", &instruction.old),
            ("/metadata", &instruction.metadata),
        ] {
            if let Some(value) = value {
                self.value(value, field, &mut error);
            }
        }
        if let Some(reason) = &instruction.reason {
            if reason.len() > self.limits.max_string_bytes {
                error(
                    ErrorKind::StringTooLong,
                    "/reason".into(),
                    self.too_long(reason.len()),
                );
            }
        }
        match (op, &instruction.value) {
            (Op::Merge, Some(value)) if !matches!(value, Value::Object(_)) => error(
                ErrorKind::InvalidField,
                "/value".into(),
                format!("merge needs an object value, not {}", value.value_type()),
            ),
            (Op::Increment, Some(value)) if !matches!(value, Value::Number(_)) => error(
                ErrorKind::InvalidField,
                "/value".into(),
                format!("increment needs a number value, not {}", value.value_type()),
            ),
            (Op::Splice, value @ Some(_)) => {
                if let Err(message) = splice_args(value.as_ref()) {
                    error(ErrorKind::InvalidField, "/value".into(), message);
                }
            }
            (Op::Callback, _) => match instruction.path.segments().first() {
                Some(Segment::Key(_)) => {}
                _ => error(
                    ErrorKind::InvalidPath,
                    "/path/0".into(),
                    "a callback's path starts with the handler's name, like [\"levelUp\"]".into(),
                ),
            },
            _ => {}
        }
    }

    fn too_long(&self, len: usize) -> String {
        format!(
            "a string of {len} bytes; the limit is {}",
            self.limits.max_string_bytes
        )
    }

    fn path(
        &self,
        segments: &[Segment],
        field: &str,
        error: &mut impl FnMut(ErrorKind, String, String),
    ) {
        if segments.len() > self.limits.max_path_segments {
            error(
                ErrorKind::PathTooDeep,
                field.into(),
                format!(
                    "the path has {} segments; the limit is {}",
                    segments.len(),
                    self.limits.max_path_segments
                ),
            );
            return;
        }
        for (i, segment) in segments.iter().enumerate() {
            if let Segment::Key(key) = segment {
                if self.is_forbidden(key) {
                    error(
                        ErrorKind::ForbiddenSegment,
                        format!("{field}/{i}"),
                        forbidden_message(key),
                    );
                } else if key.len() > self.limits.max_string_bytes {
                    error(
                        ErrorKind::StringTooLong,
                        format!("{field}/{i}"),
                        self.too_long(key.len()),
                    );
                }
            }
        }
    }

    fn is_forbidden(&self, key: &str) -> bool {
        is_forbidden(key, self.forbidden)
    }

    /// Checks what a handler hands back besides instructions (its result, event payloads) by the same
    /// rules as instruction values: they reach the host and front ends just the same.
    pub(crate) fn handler_output(
        &self,
        value: &Value,
        field: &str,
        trail: &Trail,
        errors: &mut Vec<BatchError>,
    ) {
        let mut error = |kind, field: String, message: String| {
            errors.push(BatchError::in_field(kind, trail, field, message))
        };
        self.value(value, field, &mut error);
    }

    /// Checks nesting depth, string lengths and forbidden keys inside a value, without recursion.
    fn value(&self, value: &Value, field: &str, error: &mut impl FnMut(ErrorKind, String, String)) {
        // Scalars are the common case: skip the walk and its allocations.
        if matches!(value, Value::Null | Value::Bool(_) | Value::Number(_)) {
            return;
        }
        let depth = value.depth();
        if depth > self.limits.max_value_depth {
            error(
                ErrorKind::ValueTooDeep,
                field.into(),
                format!(
                    "the value nests {depth} levels deep; the limit is {}",
                    self.limits.max_value_depth
                ),
            );
            return;
        }
        let mut stack: Vec<(&Value, Vec<Segment>)> = vec![(value, Vec::new())];
        while let Some((value, at)) = stack.pop() {
            let pointer = || format!("{field}{}", pointer_of(&at));
            match value {
                Value::String(text) if text.len() > self.limits.max_string_bytes => {
                    error(
                        ErrorKind::StringTooLong,
                        pointer(),
                        self.too_long(text.len()),
                    );
                }
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate().rev() {
                        if matches!(item, Value::String(_) | Value::Array(_) | Value::Object(_)) {
                            let mut child = at.clone();
                            child.push(Segment::Index(i));
                            stack.push((item, child));
                        }
                    }
                }
                Value::Object(map) => {
                    for (key, item) in map.iter().rev() {
                        let mut child = at.clone();
                        child.push(Segment::Key(key.clone()));
                        if self.is_forbidden(key) {
                            error(
                                ErrorKind::ForbiddenSegment,
                                format!("{field}{}", pointer_of(&child)),
                                forbidden_message(key),
                            );
                        } else if key.len() > self.limits.max_string_bytes {
                            error(
                                ErrorKind::StringTooLong,
                                format!("{field}{}", pointer_of(&child)),
                                self.too_long(key.len()),
                            );
                        }
                        stack.push((item, child));
                    }
                }
                _ => {}
            }
        }
    }
}

fn forbidden_message(key: &str) -> String {
    format!(
        "\"{key}\" is a forbidden key (front ends are JavaScript; it would reach the object prototype)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| (*k).to_owned()).collect()
    }

    #[test]
    fn the_first_forbidden_key_is_found_in_document_order() {
        let value = Value::from_json(&json!({
            "a": [{"x": 1}, {"b/c": {"__proto__": 1}}],
            "constructor": 2
        }));
        let defaults = list(&DEFAULT_FORBIDDEN);
        assert_eq!(
            find_forbidden_key(&value, &defaults).as_deref(),
            Some("/a/1/b~1c/__proto__")
        );
        assert_eq!(
            find_forbidden_key(&value, &list(&["constructor"])).as_deref(),
            Some("/constructor")
        );
        assert_eq!(find_forbidden_key(&value, &list(&["secret"])), None);
        assert_eq!(find_forbidden_key(&Value::from(1), &defaults), None);
        assert!(is_forbidden("prototype", &defaults));
        assert!(!is_forbidden("proto", &defaults));
    }
}
