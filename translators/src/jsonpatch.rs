//! JSON Patch (RFC 6902) documents to batches, and committed change logs back to JSON Patch.
//!
//! A JSON Patch document arrives as text or as a parsed value (finding it in fences or `<JSONPatch>`
//! tags is the extractor's job). This module owns checking that it is a patch document (every member
//! an RFC 6902 op, or MVU's `delta`/`insert`), decoding it leniently through the engine (pointers
//! without a leading `/` and unknown members are accepted and reported), and exporting a committed
//! change log as a patch document so front ends that sync by RFC 6902 can consume it. It must not run
//! the patch: the engine executes RFC semantics atomically.

use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, BatchError, Change, Limits};

use crate::diagnostic::{Diagnostic, Severity};

/// What [`patch_from_text`] or [`patch_from_value`] read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonPatchTranslation {
    /// The document as a batch of RFC 6902 ops; empty when the document has errors, because a patch
    /// applies whole or not at all.
    pub batch: Batch,
    /// Repairs (warnings) and problems (errors). Spans cover the whole text, or are empty for a value.
    pub diagnostics: Vec<Diagnostic>,
}

/// The op names a JSON Patch document may hold: RFC 6902's and MVU's extensions.
const PATCH_OPS: [&str; 8] = [
    "add", "remove", "replace", "move", "copy", "test", "delta", "insert",
];

/// Reads a JSON Patch document from its JSON text.
/// Time: O(n) in the length of `text`.
pub fn patch_from_text(text: &str, limits: &Limits) -> JsonPatchTranslation {
    match serde_json::from_str::<Json>(text) {
        Ok(json) => {
            let mut read = patch_from_value(&json, limits);
            for diagnostic in &mut read.diagnostics {
                *diagnostic = Diagnostic::new(
                    text,
                    diagnostic.kind,
                    diagnostic.severity,
                    0..text.len(),
                    std::mem::take(&mut diagnostic.message),
                );
            }
            read
        }
        Err(error) => {
            let at = byte_offset(text, error.line(), error.column());
            JsonPatchTranslation {
                batch: Batch::default(),
                diagnostics: vec![Diagnostic::new(
                    text,
                    "json_patch_not_json",
                    Severity::Error,
                    at..text.len(),
                    format!("the json patch document is not valid json: {error}"),
                )],
            }
        }
    }
}

/// Reads a JSON Patch document: an array of operation objects (a single operation object is accepted
/// as a one-operation document).
pub fn patch_from_value(json: &Json, limits: &Limits) -> JsonPatchTranslation {
    let problem = |message: String| JsonPatchTranslation {
        batch: Batch::default(),
        diagnostics: vec![Diagnostic::new(
            "",
            "json_patch_invalid",
            Severity::Error,
            0..0,
            message,
        )],
    };
    let operations: &[Json] = match json {
        Json::Array(items) => items,
        Json::Object(_) => std::slice::from_ref(json),
        other => {
            return problem(format!(
                "a json patch document is an array of operations, not {}",
                type_name(other)
            ));
        }
    };
    for (index, operation) in operations.iter().enumerate() {
        match operation.get("op").and_then(Json::as_str) {
            Some(op) if PATCH_OPS.contains(&op) => {}
            Some(op) => {
                return problem(format!(
                    "operation {index}: \"{op}\" is not a json patch op (add, remove, replace, move, copy, test, delta, insert)"
                ));
            }
            None => {
                return problem(format!(
                    "operation {index}: an operation needs an \"op\" string"
                ));
            }
        }
    }
    match Batch::from_json_lenient(json, limits) {
        Ok(lenient) => JsonPatchTranslation {
            batch: lenient.batch,
            diagnostics: lenient
                .warnings
                .iter()
                .map(|w| diagnostic(w, Severity::Warning))
                .collect(),
        },
        Err(errors) => JsonPatchTranslation {
            batch: Batch::default(),
            diagnostics: errors
                .iter()
                .map(|e| diagnostic(e, Severity::Error))
                .collect(),
        },
    }
}

fn diagnostic(error: &BatchError, severity: Severity) -> Diagnostic {
    let kind = if severity == Severity::Error {
        "json_patch_invalid"
    } else {
        "json_patch_repaired"
    };
    Diagnostic::new("", kind, severity, 0..0, error.to_string())
}

fn type_name(json: &Json) -> &'static str {
    match json {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// The byte offset of serde_json's 1-based line and column (columns count bytes).
fn byte_offset(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let mut at = (line_start + column.saturating_sub(1)).min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A committed change log as an RFC 6902 document: a created slot is `add`, a removed one `remove`,
/// a changed one `replace`, in the log's order. Applying the document to the state before the commit
/// gives the state after it. Time: O(size of the changes).
pub fn changes_to_patch(changes: &[Change]) -> Json {
    let operations = changes
        .iter()
        .filter_map(|change| {
            let path = change.path.to_pointer();
            match (&change.old, &change.new) {
                (None, Some(new)) => {
                    Some(json!({"op": "add", "path": path, "value": new.to_json()}))
                }
                (Some(_), Some(new)) => {
                    Some(json!({"op": "replace", "path": path, "value": new.to_json()}))
                }
                (Some(_), None) => Some(json!({"op": "remove", "path": path})),
                // A change that neither creates nor removes changed nothing, so it has no patch form.
                (None, None) => None,
            }
        })
        .collect();
    Json::Array(operations)
}
