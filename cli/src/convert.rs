//! `statecraft convert`: translation between MVU commands, JSON instructions and JSON Patch, no state.
//!
//! Reading and writing are the translators' (`mvu::from_text`, `mvu::to_text`, `jsonpatch::from_text`,
//! `jsonpatch::from_batch`, which also decides which batches have a JSON Patch form); this module
//! wires a reader to a writer. The translated text goes to stdout and every problem to stderr. Exit 0
//! whenever the input could be read, even when text MVU would not run was skipped (each skip is a
//! warning); 1 when the input holds something invalid (an error diagnostic, which MVU text MVU would
//! not run becomes under `--mvu-unrunnable reject`) or something the target notation cannot express
//! (what could be translated is still printed); 2 for usage and IO errors. Without a state, MVU's
//! type-dependent commands are guessed and the diagnostics say so.

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;
use statecraft_engine::{Batch, BatchError, Limits};
use statecraft_translators::mvu::{self, MvuOptions};
use statecraft_translators::{Diagnostic, Severity, jsonpatch};

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
            let options = MvuOptions {
                unrunnable: args.mvu_unrunnable.into(),
                ..MvuOptions::default()
            };
            let translation = mvu::from_text(&text, &options);
            (
                Batch::new(translation.instructions),
                translation.diagnostics,
                Vec::new(),
            )
        }
        Notation::Json => {
            // A byte-order mark is skipped, as in state files.
            let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
            let json: serde_json::Value = serde_json::from_str(body)
                .with_context(|| format!("{origin} is not valid json"))?;
            // A member given twice is gone from the parsed value: the text is what shows it.
            match Batch::from_json_text(&json, body) {
                Ok(batch) => (batch, Vec::new(), Vec::new()),
                Err(errors) => (Batch::default(), Vec::new(), errors.0),
            }
        }
        Notation::Jsonpatch => {
            let read = jsonpatch::from_text(&text, &Limits::default());
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
        Notation::Json => {
            render::write_batch(&batch)?;
            // The process exits next: freeing the instructions one by one is work no one sees.
            std::mem::forget(batch);
        }
        Notation::Mvu => {
            let (mvu, diagnostics) = mvu::to_text(&batch);
            failed |= !diagnostics.is_empty();
            out!("{mvu}")?;
            if !mvu.is_empty() && !mvu.ends_with('\n') {
                outln!()?;
            }
            report(out, &mvu, "<mvu output>", &diagnostics, &[]);
        }
        Notation::Jsonpatch => match jsonpatch::from_batch(&batch) {
            Ok(patch) => outln!("{}", pretty(&patch)?)?,
            Err(unexpressible) => {
                failed = true;
                report(out, "", &origin, &[], &unexpressible);
            }
        },
    }
    Ok(if failed {
        ExitCode::from(EXIT_REJECTED)
    } else {
        ExitCode::SUCCESS
    })
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
