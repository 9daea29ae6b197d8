//! `statecraft convert`: translation between MVU commands, JSON instructions and JSON Patch, no state.
//!
//! Reading and writing are the translators' (`translate`, `to_mvu`, `patch_from_text`); this module
//! wires a reader to a writer. The translated text goes to stdout and every problem to stderr. Exit 0
//! when everything was translated, 1 when some of the input could not be read or expressed in the target
//! notation (what could be translated is still printed), 2 for usage and IO errors. Without a state,
//! MVU's type-dependent commands are guessed and the diagnostics say so.

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;
use statecraft_engine::{Batch, BatchError, Limits, Path};
use statecraft_translators::{
    Diagnostic, MvuOptions, Severity, patch_from_text, to_mvu, translate,
};

use crate::EXIT_REJECTED;
use crate::args::{ConvertArgs, Notation};
use crate::files;
use crate::render::{self, Output};

/// Runs `convert`.
pub(crate) fn run(args: &ConvertArgs, out: &Output) -> Result<ExitCode> {
    let text = files::read_input(args.input.as_deref())?;
    let origin = files::origin(args.input.as_deref());
    let (batch, read_diagnostics, errors) = match args.from {
        Notation::Mvu => {
            let translation = translate(&text, &MvuOptions::default());
            (
                Batch::new(translation.instructions),
                translation.diagnostics,
                Vec::new(),
            )
        }
        Notation::Json => {
            let json: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{origin} is not valid json"))?;
            match Batch::from_json(&json) {
                Ok(batch) => (batch, Vec::new(), Vec::new()),
                Err(errors) => (Batch::default(), Vec::new(), errors),
            }
        }
        Notation::Jsonpatch => {
            let read = patch_from_text(&text, &Limits::default());
            (read.batch, read.diagnostics, Vec::new())
        }
    };
    let mut failed = !errors.is_empty()
        || read_diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error);
    report(out, &text, &origin, &read_diagnostics, &errors);
    if !errors.is_empty() {
        return Ok(ExitCode::from(EXIT_REJECTED));
    }
    match args.to {
        Notation::Json => outln!("{}", pretty(&batch.to_json())?)?,
        Notation::Mvu => {
            let (mvu, diagnostics) = to_mvu(&batch);
            failed |= !diagnostics.is_empty();
            out!("{mvu}")?;
            if !mvu.is_empty() && !mvu.ends_with('\n') {
                outln!()?;
            }
            report(out, &mvu, "<mvu output>", &diagnostics, &[]);
        }
        Notation::Jsonpatch => {
            let unexpressible = to_patch_problems(&batch);
            failed |= !unexpressible.is_empty();
            if unexpressible.is_empty() {
                outln!("{}", pretty(&with_pointers(batch.to_json()))?)?;
            }
            report(out, "", &origin, &[], &unexpressible);
        }
    }
    Ok(if failed {
        ExitCode::from(EXIT_REJECTED)
    } else {
        ExitCode::SUCCESS
    })
}

/// Why a batch has no state-free JSON Patch form: only a JSON Patch document converts as it is, because
/// instruction ops such as `assign` (creating parents) or `increment` have no RFC 6902 equivalent that
/// keeps their meaning without knowing the state. The way to get a patch from instructions is to apply
/// them and export the change log.
fn to_patch_problems(batch: &Batch) -> Vec<BatchError> {
    if batch.is_json_patch() {
        return Vec::new();
    }
    batch
        .instructions
        .iter()
        .enumerate()
        .filter(|(_, instruction)| !instruction.op.is_json_patch())
        .map(|(index, instruction)| {
            BatchError::in_field(
                statecraft_engine::ErrorKind::UnknownOp,
                &statecraft_engine::Trail(vec![index]),
                "/op",
                format!(
                    "`{}` has no json patch form without a state; apply the batch and export its change log instead",
                    instruction.op.name()
                ),
            )
        })
        .collect()
}

/// A canonical patch batch as an RFC 6902 document: `path` and `from` become JSON Pointers.
fn with_pointers(mut json: serde_json::Value) -> serde_json::Value {
    if let Some(operations) = json.as_array_mut() {
        for operation in operations
            .iter_mut()
            .filter_map(serde_json::Value::as_object_mut)
        {
            for member in ["path", "from"] {
                if let Some(path) = operation
                    .get(member)
                    .and_then(|p| serde_json::from_value::<Path>(p.clone()).ok())
                {
                    operation.insert(
                        member.to_owned(),
                        serde_json::Value::String(path.to_pointer()),
                    );
                }
            }
        }
    }
    json
}

/// Pretty JSON text.
fn pretty(json: &serde_json::Value) -> Result<String> {
    serde_json::to_string_pretty(json).context("cannot write json")
}

/// Prints diagnostics and errors on stderr.
fn report(
    out: &Output,
    text: &str,
    origin: &str,
    diagnostics: &[Diagnostic],
    errors: &[BatchError],
) {
    if diagnostics.is_empty() && errors.is_empty() {
        return;
    }
    if out.json() {
        errln!(
            "{}",
            json!({"diagnostics": render::diagnostics_json(diagnostics), "errors": render::errors_json(errors)})
        );
        return;
    }
    err!(
        "{}",
        out.diagnostics(text, origin, diagnostics, out.colour_err)
    );
    if !errors.is_empty() {
        errln!("cannot convert:");
        err!("{}", render::errors_text(errors));
    }
}
