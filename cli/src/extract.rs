//! `statecraft extract`: the batch found in a model reply, as canonical JSON, without applying it.
//!
//! stdout gets a JSON array of canonical instructions (paths as lists); stderr gets the diagnostics (and
//! the repair score when the reader gives one). Exit 0 whenever the text could be read, even when the
//! batch is empty or text was skipped, because finding nothing is an answer; exit 1 only when an
//! instruction was recognisable but invalid (or MVU text was refused under `--mvu-unrunnable reject`).

use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use crate::EXIT_REJECTED;
use crate::apply::{plural, report_invalid, report_reading};
use crate::args::ExtractArgs;
use crate::files;
use crate::render::{self, Output};
use crate::reply;

/// Runs `extract`.
pub(crate) fn run(args: &ExtractArgs, out: &Output) -> Result<ExitCode> {
    let text = files::read_input(args.input.as_deref())?;
    let origin = files::origin(args.input.as_deref());
    let macros = args.macros.iter().cloned().collect();
    let reading = reply::read(
        &text,
        reply::ReadOptions {
            state: None,
            macros: &macros,
            unrunnable: args.mvu_unrunnable.into(),
            profile: statecraft_engine::Profile::Strict,
            strict_set: false,
        },
    );
    if out.json() {
        errln!(
            "{}",
            json!({
                "diagnostics": render::diagnostics_json(reading.diagnostics()),
                "score": reading.score(),
                "valid": reading.valid(),
                "report": reading.extraction.report,
            })
        );
    } else {
        report_reading(out, &text, &origin, &reading);
        let count = reading.batch().len();
        errln!(
            "repair score {}/100, {count} instruction{}",
            reading.score(),
            plural(count)
        );
    }
    if !reading.valid() {
        report_invalid(out, &reading);
        return Ok(ExitCode::from(EXIT_REJECTED));
    }
    render::write_batch(reading.batch())?;
    // The process exits next: freeing every instruction and diagnostic one by one (8 M of the 205 M
    // instructions of a clean 1 MiB reply) would be work no one sees. The system takes the memory back.
    std::mem::forget(reading);
    Ok(ExitCode::SUCCESS)
}
