//! Feedback for the model: what was wrong with its instructions and how to write them right.
//!
//! Front ends send this text back to the model in a self-correction loop. This module owns the wording:
//! one numbered item per problem, each naming where it is (line and column) and how to write it
//! correctly, followed by one reminder of the canonical form. It must not decide what is a problem: it
//! reads the diagnostics of an [`Extraction`] and the engine's validation errors. Notes about harmless
//! cleaning (a fence, a path spelling) are summed up in one line so the model learns the preferred form
//! without being told it failed.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use statecraft_engine::BatchError;

use crate::diagnostic::Severity;
use crate::extract::Extraction;

/// How to write it right, for each diagnostic kind that calls for a correction.
fn advice(kind: &str) -> &'static str {
    match kind {
        "truncated_instruction" => {
            "your reply ended inside this instruction, so it was not applied; write every instruction completely and close every string, array and object"
        }
        "invalid_instruction" => {
            "this instruction is invalid; every instruction is an object with \"op\", \"path\" as a list of keys and indexes, and \"value\" where the op needs one"
        }
        "invalid_path" => {
            "this path could not be read; write paths as a list, like [\"player\", \"hp\"] or [\"inventory\", 0, \"name\"]"
        }
        "mixed_batch" => {
            "JSON Patch ops (add, remove, replace, move, copy, test) and instruction ops (assign, merge, push, …) cannot share one array; send them as separate blocks"
        }
        "not_an_instruction" => {
            "this JSON value has no \"op\" and was skipped; if it was meant as an update, give it an \"op\""
        }
        "unknown_member" => {
            "this member is not part of an instruction and was ignored; use only op, path, value, old, reason and metadata"
        }
        "too_deep" => "this value nests too deeply to be read; keep values shallow",
        "no_instructions" => {
            "no instructions were found; write them as a JSON array of instructions in a ```json fence"
        }
        "unclosed_string" => "a string was not closed; close every string with a double quote",
        "unclosed_container" => {
            "an array or object was not closed; close every [ with ] and every { with }"
        }
        "missing_closer" | "stray_closer" => {
            "brackets did not match; close every [ with ] and every { with } in order"
        }
        "unescaped_quote" => "a double quote inside a string was not escaped; write it as \\\"",
        "garbage" => {
            "text that is not JSON appeared inside a value; write only JSON inside the block"
        }
        "missing_value" => "a key had no value; give every key a value",
        _ => "",
    }
}

/// A short name for a cleaning note, used in the summary line.
fn preferred_form(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "trailing_comma" | "extra_comma" => "no trailing or doubled commas",
        "missing_comma" => "commas between all items",
        "missing_colon" => "a colon after every key",
        "single_quotes" | "smart_quotes" | "escaped_quotes" => "plain double quotes around strings",
        "unquoted_key" | "unquoted_string" => "double quotes around every key and string",
        "python_literal" | "js_literal" => "JSON literals true, false and null",
        "comment" => "no comments",
        "control_character" => "escaped newlines and tabs (\\n, \\t) inside strings",
        "invalid_escape" => "only JSON escapes inside strings",
        "number_fixed" => "plain JSON numbers",
        "ellipsis" => "every item written out, no ellipses",
        "path_normalised" => "paths as lists, like [\"player\", \"hp\"]",
        "trailing_garbage" => "nothing after the closing bracket",
        "wrapper_unwrapped" => "the instruction array on its own, not wrapped in another object",
        "arguments_repaired" => "valid JSON inside tool-call arguments",
        _ => return None,
    })
}

/// Writes a feedback message for the model from an extraction and the engine's validation errors of
/// its batch. Returns an empty string when there is nothing to correct or suggest.
///
/// Time: O(d + e) in the number of diagnostics and errors.
pub fn feedback(extraction: &Extraction, validation_errors: &[BatchError]) -> String {
    let mut items = Vec::new();
    let mut preferred = BTreeSet::new();
    for diagnostic in &extraction.diagnostics {
        let advice = advice(diagnostic.kind);
        if diagnostic.severity >= Severity::Warning && !advice.is_empty() {
            items.push(format!(
                "line {}, column {} ({}): {}; {advice}",
                diagnostic.line, diagnostic.column, diagnostic.kind, diagnostic.message
            ));
        } else if diagnostic.severity >= Severity::Error {
            items.push(format!(
                "line {}, column {} ({}): {}",
                diagnostic.line, diagnostic.column, diagnostic.kind, diagnostic.message
            ));
        } else if let Some(form) = preferred_form(diagnostic.kind) {
            preferred.insert(form);
        }
    }
    for error in validation_errors {
        items.push(format!(
            "{error}; fix this instruction and send the whole batch again"
        ));
    }
    if items.is_empty() && preferred.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    if !items.is_empty() {
        if !extraction.valid || !validation_errors.is_empty() {
            out.push_str("Your state update was not applied. Correct these problems and send the complete update again:\n");
        } else {
            out.push_str("Your state update was applied, but some of it could not be used:\n");
        }
        for (index, item) in items.iter().enumerate() {
            let _ = writeln!(out, "{}. {item}", index + 1);
        }
    }
    if !preferred.is_empty() {
        let forms: Vec<&str> = preferred.into_iter().collect();
        let _ = writeln!(out, "Next time write strict JSON: {}.", forms.join("; "));
    }
    out.push_str(
        "The expected form is a JSON array of instructions, for example:\n\
         [{\"op\": \"assign\", \"path\": [\"player\", \"hp\"], \"value\": 80, \"reason\": \"hit by a goblin\"}]\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::{ExtractOptions, extract};

    #[test]
    fn clean_replies_need_no_feedback() {
        let extraction = extract(
            r#"[{"op": "assign", "path": ["hp"], "value": 80}]"#,
            &ExtractOptions::default(),
        );
        assert_eq!(feedback(&extraction, &[]), "");
    }

    #[test]
    fn truncation_is_explained_with_its_position() {
        let text = "```json\n[{\"op\": \"assign\", \"path\": [\"a\"], \"value\": 1},\n {\"op\": \"assign\", \"path\": [\"hp\"], \"value\": 8";
        let extraction = extract(text, &ExtractOptions::default());
        let message = feedback(&extraction, &[]);
        assert!(
            message.contains("line 3, column 2 (truncated_instruction)"),
            "{message}"
        );
        assert!(
            message.contains("write every instruction completely"),
            "{message}"
        );
        assert!(
            message.contains("The expected form is a JSON array"),
            "{message}"
        );
    }

    #[test]
    fn cleaning_notes_become_one_preference_line() {
        let extraction = extract(
            "{'op': 'assign', 'path': 'hp', 'value': 1,}",
            &ExtractOptions::default(),
        );
        let message = feedback(&extraction, &[]);
        assert!(
            message.starts_with("Next time write strict JSON: "),
            "{message}"
        );
        assert!(message.contains("paths as lists"), "{message}");
        assert!(message.contains("plain double quotes"), "{message}");
    }
}
