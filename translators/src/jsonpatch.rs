//! JSON Patch (RFC 6902) documents to batches, and committed change logs back to JSON Patch.
//!
//! A JSON Patch document arrives as text or as a parsed value (finding it in fences or `<JSONPatch>`
//! tags is the extractor's job). This module owns checking that it is a patch document (every member
//! an RFC 6902 op, or MVU's `delta`/`insert`), decoding it leniently through the engine (pointers
//! without a leading `/` and unknown members are accepted and reported), and exporting a committed
//! change log as a patch document so front ends that sync by RFC 6902 can consume it, and writing a
//! batch that is itself a patch document back out. It must not run the patch: the engine executes RFC
//! semantics atomically.

use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, BatchError, BatchErrors, Change, ErrorKind, Limits, Path, Trail};

use crate::diagnostic::{Diagnostic, DiagnosticKind, Severity};

/// What [`from_text`] or [`from_value`] read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonPatchTranslation {
    /// The document as a batch of RFC 6902 ops; empty when the document has errors, because a patch
    /// applies whole or not at all.
    pub batch: Batch,
    /// Repairs (warnings) and problems (errors). Spans cover the whole text, or are empty for a value.
    pub diagnostics: Vec<Diagnostic>,
}

/// The op names a JSON Patch document may hold: RFC 6902's and MVU's extensions. They make a value a
/// JSON Patch operation rather than an instruction, here and in the extractor.
pub(crate) const PATCH_OPS: [&str; 8] = [
    "add", "remove", "replace", "move", "copy", "test", "delta", "insert",
];

/// Reads a JSON Patch document from its JSON text.
/// Time: O(n) in the length of `text`.
pub fn from_text(text: &str, limits: &Limits) -> JsonPatchTranslation {
    // A byte-order mark, which some editors on Windows write, is not JSON but says nothing either;
    // spans still count it.
    let document = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mark = text.len() - document.len();
    match serde_json::from_str::<Json>(document) {
        Ok(json) => {
            let mut read = from_value(&json, limits);
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
            let at = mark + byte_offset(document, error.line(), error.column());
            JsonPatchTranslation {
                batch: Batch::default(),
                diagnostics: vec![Diagnostic::new(
                    text,
                    DiagnosticKind::JsonPatchNotJson,
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
pub fn from_value(json: &Json, limits: &Limits) -> JsonPatchTranslation {
    let problem = |message: String| JsonPatchTranslation {
        batch: Batch::default(),
        diagnostics: vec![Diagnostic::new(
            "",
            DiagnosticKind::JsonPatchInvalid,
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
        DiagnosticKind::JsonPatchInvalid
    } else {
        DiagnosticKind::JsonPatchRepaired
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

/// A batch as an RFC 6902 document, with `path` and `from` as JSON Pointers.
///
/// Only a batch of JSON Patch ops has a state-free patch form: instruction ops such as `assign`
/// (which creates parents) or `increment` have no RFC 6902 equivalent that keeps their meaning without
/// knowing the state. The error names each such instruction; the way to a patch from instructions is
/// to apply them and export the change log ([`from_changes`]). Time: O(size of the batch).
pub fn from_batch(batch: &Batch) -> Result<Json, BatchErrors> {
    // Every instruction is checked: a batch built in code may mix both kinds (decoding refuses that),
    // and an empty batch is the empty document.
    let errors: Vec<BatchError> = batch
        .instructions
        .iter()
        .enumerate()
        .filter(|(_, instruction)| !instruction.op.is_json_patch())
        .map(|(index, instruction)| {
            BatchError::in_field(
                ErrorKind::UnknownOp,
                &Trail(vec![index]),
                "/op",
                format!(
                    "`{}` has no json patch form without a state; apply the batch and export its change log instead",
                    instruction.op.name()
                ),
            )
        })
        .collect();
    if !errors.is_empty() {
        return Err(BatchErrors(errors));
    }
    let mut json = batch.to_json();
    for operation in json
        .as_array_mut()
        .into_iter()
        .flatten()
        .filter_map(Json::as_object_mut)
    {
        for member in ["path", "from"] {
            if let Some(path) = operation
                .get(member)
                .and_then(|p| serde_json::from_value::<Path>(p.clone()).ok())
            {
                operation.insert(member.to_owned(), Json::String(path.to_pointer()));
            }
        }
    }
    Ok(json)
}

/// A committed change log as an RFC 6902 document: a created slot is `add`, a removed one `remove`,
/// a changed one `replace`, in the log's order. Applying the document to the state before the commit
/// gives the state after it. Time: O(size of the changes).
pub fn from_changes(changes: &[Change]) -> Json {
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
