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
use statecraft_engine::{
    Batch, BatchError, BatchErrors, Change, ErrorKind, Limits, Op, Path, Trail,
};

use statecraft_engine::{JsonTree, NodeKind};

use crate::diagnostic::{Diagnostic, DiagnosticKind, Severity, place_in_order};
use crate::document::PointerTargets;
use crate::repair;

/// What [`from_text`] or [`from_value`] read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonPatchTranslation {
    /// The document as a batch of RFC 6902 ops; empty when the document has errors, because a patch
    /// applies whole or not at all.
    pub batch: Batch,
    /// Repairs (warnings) and problems (errors). Spans cover the operation or member each is about
    /// (the whole text for a document that is no patch at all), or are empty for a value.
    pub diagnostics: Vec<Diagnostic>,
}

/// The op names a JSON Patch document may hold: RFC 6902's and MVU's extensions. They make a value a
/// JSON Patch operation rather than an instruction, here and in the extractor.
pub(crate) const PATCH_OPS: [&str; 8] = [
    "add", "remove", "replace", "move", "copy", "test", "delta", "insert",
];

/// Reads a JSON Patch document from its JSON text. Each problem's span covers the operation, or the
/// member of it, that the problem is about.
/// Time: O(n) in the length of `text`.
pub fn from_text(text: &str, limits: &Limits) -> JsonPatchTranslation {
    // A byte-order mark, which some editors on Windows write, is not JSON but says nothing either;
    // spans still count it.
    let document = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mark = text.len() - document.len();
    match serde_json::from_str::<Json>(document) {
        Ok(json) => {
            let (batch, problems) = read(&json, limits);
            // On valid JSON the repair parser reads what serde_json reads, with the span of each node.
            let parsed = repair::parse_value(text, mark);
            // The problems come operation by operation: the current one's fields are resolved by one
            // `PointerTargets`, so that thousands of unknown members of one operation stay linear.
            let mut operation: Option<(usize, PointerTargets<'_, '_>)> = None;
            let mut place = |problem: &Problem| {
                let Some(((index, field), root)) = problem.at.as_ref().zip(parsed.value) else {
                    return mark..text.len();
                };
                if operation.as_ref().is_none_or(|(at, _)| at != index) {
                    let root = parsed.document.node(root);
                    let node = match root.kind() {
                        NodeKind::Array => root.item(*index).unwrap_or(root),
                        _ => root,
                    };
                    operation = Some((*index, PointerTargets::new(node)));
                }
                match &mut operation {
                    Some((_, fields)) => fields.target(field).span(),
                    None => mark..text.len(),
                }
            };
            let mut diagnostics: Vec<Diagnostic> = problems
                .iter()
                .map(|problem| problem.diagnostic(place(problem)))
                .collect();
            // Lines and columns in one pass over the text, not one from its start per problem.
            place_in_order(text, &mut diagnostics);
            JsonPatchTranslation { batch, diagnostics }
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
/// as a one-operation document). A value has no text, so the diagnostics have empty spans.
pub fn from_value(json: &Json, limits: &Limits) -> JsonPatchTranslation {
    let (batch, problems) = read(json, limits);
    JsonPatchTranslation {
        batch,
        diagnostics: problems
            .iter()
            .map(|problem| problem.diagnostic(0..0))
            .collect(),
    }
}

/// Something [`read`] reports: a repair (warning) or a problem (error), and where it is.
struct Problem {
    severity: Severity,
    message: String,
    /// The operation's index and a JSON Pointer into it, or `None` for the document as a whole.
    at: Option<(usize, String)>,
}

impl Problem {
    fn new(severity: Severity, index: usize, field: &str, message: String) -> Problem {
        Problem {
            severity,
            message,
            at: Some((index, field.to_owned())),
        }
    }

    /// An error or warning of the engine's decoding, placed where it points. `index_offset` is the
    /// operation's index when it was decoded on its own (as instruction 0).
    fn decoded(error: &BatchError, severity: Severity, index_offset: usize) -> Problem {
        let mut error = error.clone();
        if let Some(index) = error
            .instruction
            .as_mut()
            .and_then(|trail| trail.0.first_mut())
        {
            *index += index_offset;
        }
        let index = error.instruction.as_ref().and_then(|trail| trail.0.first());
        Problem {
            severity,
            message: error.to_string(),
            at: index.map(|index| (*index, error.field.clone().unwrap_or_default())),
        }
    }

    /// The problem at `span`, its line and column left for [`place_in_order`] (a value has none:
    /// line 1, column 1).
    fn diagnostic(&self, span: std::ops::Range<usize>) -> Diagnostic {
        let kind = if self.severity == Severity::Error {
            DiagnosticKind::JsonPatchInvalid
        } else {
            DiagnosticKind::JsonPatchRepaired
        };
        Diagnostic::new("", kind, self.severity, span, self.message.clone())
    }
}

/// The batch a JSON Patch document holds, and every problem in it: an operation whose `op` is not a
/// patch op does not hide the problems of the others.
fn read(json: &Json, limits: &Limits) -> (Batch, Vec<Problem>) {
    let operations: &[Json] = match json {
        Json::Array(items) => items,
        Json::Object(_) => std::slice::from_ref(json),
        other => {
            let problem = Problem {
                severity: Severity::Error,
                message: format!(
                    "a json patch document is an array of operations, not {}",
                    type_name(other)
                ),
                at: None,
            };
            return (Batch::default(), vec![problem]);
        }
    };
    if operations
        .iter()
        .any(|operation| !op_name(operation).is_some_and(|op| PATCH_OPS.contains(&op)))
    {
        // The document is refused. Every operation is reported, in order: one whose op is not a
        // patch op, and what else is wrong with the others, so that one round of corrections fixes
        // everything.
        let mut problems = Vec::new();
        for (index, operation) in operations.iter().enumerate() {
            match op_name(operation) {
                Some(op) if PATCH_OPS.contains(&op) => {
                    if let Err(errors) = Batch::from_json_lenient(operation, limits) {
                        problems.extend(
                            errors
                                .iter()
                                .map(|e| Problem::decoded(e, Severity::Error, index)),
                        );
                    }
                }
                Some(op) => problems.push(Problem::new(
                    Severity::Error,
                    index,
                    "/op",
                    format!(
                        "operation {index}: \"{op}\" is not a json patch op ({}, delta, insert)",
                        Op::names(true)
                    ),
                )),
                None => problems.push(Problem::new(
                    Severity::Error,
                    index,
                    "",
                    format!("operation {index}: an operation needs an \"op\" string"),
                )),
            }
        }
        return (Batch::default(), problems);
    }
    match Batch::from_json_lenient(json, limits) {
        Ok(lenient) => {
            let warnings = lenient
                .warnings
                .iter()
                .map(|w| Problem::decoded(w, Severity::Warning, 0))
                .collect();
            (lenient.batch, warnings)
        }
        Err(errors) => {
            let errors = errors
                .iter()
                .map(|e| Problem::decoded(e, Severity::Error, 0))
                .collect();
            (Batch::default(), errors)
        }
    }
}

/// The `op` member of an operation, when it is a string.
fn op_name(operation: &Json) -> Option<&str> {
    operation.get("op").and_then(Json::as_str)
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
