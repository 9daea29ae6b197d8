//! Feedback for the model: what was wrong with its instructions and how to write them right.
//!
//! Front ends send this text back to the model in a self-correction loop. This module owns the
//! message's layout: one numbered item per problem, each naming where it is (line and column) and how
//! to write it correctly (the kind's [`DiagnosticKind::advice`](crate::DiagnosticKind::advice)),
//! followed by one reminder of the canonical form. It must not decide what is a problem: it
//! reads the diagnostics of an [`Extraction`] and the engine's validation errors. Notes about harmless
//! cleaning (a fence, a path spelling) are summed up in one line so the model learns the preferred form
//! without being told it failed.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use statecraft_engine::BatchError;

use crate::diagnostic::{Diagnostic, Severity};
use crate::extract::Extraction;

/// Writes a feedback message for the model from an extraction and the engine's validation errors of
/// its batch. Returns an empty string when there is nothing to correct or suggest.
///
/// Time: O(d + e) in the number of diagnostics and errors.
pub fn feedback(extraction: &Extraction, validation_errors: &[BatchError]) -> String {
    write(&extraction.diagnostics, extraction.valid, validation_errors)
}

/// Writes a feedback message for a batch that came as structured instructions, not as text: only the
/// engine's validation errors. Returns an empty string when there are none.
///
/// Time: O(e) in the number of errors.
pub fn feedback_for_errors(validation_errors: &[BatchError]) -> String {
    write(&[], true, validation_errors)
}

fn write(diagnostics: &[Diagnostic], valid: bool, validation_errors: &[BatchError]) -> String {
    let mut items = Vec::new();
    let mut preferred = BTreeSet::new();
    for diagnostic in diagnostics {
        match diagnostic.kind.advice() {
            Some(advice) if diagnostic.severity >= Severity::Warning => items.push(format!(
                "line {}, column {} ({}): {}; {advice}",
                diagnostic.line, diagnostic.column, diagnostic.kind, diagnostic.message
            )),
            _ if diagnostic.severity >= Severity::Error => items.push(format!(
                "line {}, column {} ({}): {}",
                diagnostic.line, diagnostic.column, diagnostic.kind, diagnostic.message
            )),
            _ => {
                if let Some(form) = diagnostic.kind.preferred_form() {
                    preferred.insert(form);
                }
            }
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
        if !valid || !validation_errors.is_empty() {
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
    fn structured_batches_get_feedback_from_their_errors_alone() {
        assert_eq!(feedback_for_errors(&[]), "");
        let error = BatchError::whole_batch(
            statecraft_engine::ErrorKind::SchemaViolation,
            None,
            "hp must be at most 100",
        );
        let message = feedback_for_errors(&[error]);
        assert!(
            message.starts_with("Your state update was not applied."),
            "{message}"
        );
        assert!(message.contains("hp must be at most 100"), "{message}");
    }

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
