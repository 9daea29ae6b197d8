//! `statecraft apply --state`: one model reply or JSON batch applied atomically to a state file.
//!
//! The contract (docs/cli.md): on commit exit 0 with the new state on stdout (or written back atomically with
//! `--in-place`); on a rejected batch exit 1 with nothing on stdout, the reasons on stderr and the state
//! file untouched; usage and IO errors exit 2. `apply --save` is the save engineer's and lives in
//! `saves.rs`. This module must not write the state file anywhere but through
//! [`statecraft_saves::replace_file`], which follows a symbolic link to the file and keeps its mode.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use serde_json::json;
use statecraft_engine::{
    ApplyOptions, Batch, BatchError, Commit, Outcome, Profile, SchemaViolation, StateSchema, Store,
    StructureSchema, Value,
};

use crate::args::ApplyArgs;
use crate::files;
use crate::render::{self, Output};
use crate::reply::{self, ReadOptions, Reading};
use crate::{EXIT_REJECTED, scripting};

/// Runs `apply --state`.
pub(crate) fn run(args: &ApplyArgs, state_path: &Path, out: &Output) -> Result<ExitCode> {
    // Written back in place, the state file is read, changed and replaced under its lock, so that
    // two commands at once cannot both start from the old state and lose one's change.
    let _lock = if args.in_place {
        Some(files::lock_state(state_path)?)
    } else {
        None
    };
    let state = files::read_state(state_path)?;
    let schema = args.schema.as_deref().map(files::read_schema).transpose()?;
    let text = files::read_input(args.input.as_deref())?;
    let origin = files::origin(args.input.as_deref());
    let profile: Profile = args.profile.into();
    let mut store = build_store(
        state,
        schema,
        args.scripts.as_deref(),
        args.seed,
        profile,
        None,
    )?;
    let macros = args.macros.iter().cloned().collect();
    let mut reading = reply::read(
        &text,
        ReadOptions::of(&store, &macros, args.mvu_unrunnable.into()),
    );
    // A state file keeps no history, so there is no step to label (clap refuses --label here).
    let Some((batch, mut options)) = prepare(out, &text, &origin, &reading, None) else {
        return Ok(ExitCode::from(EXIT_REJECTED));
    };
    if let Some(policy) = args.schema_violation {
        with_schema_violation(&mut options, policy.into());
    }
    let batch = batch.clone();
    let outcome = reading.apply(&mut store, &batch, &options, &text);
    report_resolved(out, &text, &origin, &reading);
    match outcome {
        Outcome::Rejected(rejection) => {
            report_rejection(out, &rejection.errors);
            Ok(ExitCode::from(EXIT_REJECTED))
        }
        Outcome::Committed(commit) => {
            report_commit(out, &commit, false);
            let text = files::state_text(store.state())?;
            if args.in_place {
                statecraft_saves::replace_file(state_path, text.as_bytes())?;
            } else {
                out!("{text}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Sets the batch's `schema_violation` policy, keeping the other policies the reply calls for.
pub(crate) fn with_schema_violation(options: &mut ApplyOptions, policy: SchemaViolation) {
    let mut policies = options.policies.unwrap_or_default();
    policies.schema_violation = policy;
    options.policies = Some(policies);
}

/// A store for `state` with the schema, the scripts folder's handlers, the seed of their random
/// draws and the profile replies follow. A state that violates the schema is a usage error: the file
/// given is not a valid starting point.
pub(crate) fn build_store(
    state: Value,
    schema: Option<StateSchema>,
    scripts: Option<&Path>,
    seed: u64,
    profile: Profile,
    structure: Option<StructureSchema>,
) -> Result<Store> {
    let mut builder = Store::builder(state).profile(profile).seed(seed);
    if let Some(structure) = structure {
        builder = builder.structure(structure);
    }
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    if let Some(folder) = scripts {
        builder = scripting::attach(builder, folder)?;
    }
    match builder.build() {
        Ok(store) => Ok(store),
        Err(errors) => bail!(
            "the state does not satisfy the schema:\n{}",
            render::errors_text(&errors).trim_end()
        ),
    }
}

/// Reports what reading the reply found and, when it holds only valid instructions, the batch and
/// the options to apply it with (the reply's policies, the label). `None` means it was refused and
/// reported.
pub(crate) fn prepare<'r>(
    out: &Output,
    text: &str,
    origin: &str,
    reading: &'r Reading,
    label: Option<String>,
) -> Option<(&'r Batch, ApplyOptions)> {
    let Some((batch, options)) = reading.extraction.applicable() else {
        report_reading(out, text, origin, reading);
        report_invalid(out, reading);
        return None;
    };
    // One by one, the diagnostics are those of the commands as they ran (`report_resolved`).
    if !reading.extraction.profile().one_by_one() {
        report_reading(out, text, origin, reading);
    }
    Some((batch, ApplyOptions { label, ..options }))
}

/// Under a profile that decides commands one by one, the reading's diagnostics once the batch ran:
/// [`prepare`] leaves them until then, since each command is decided on the state it meets (a
/// `_.set` that an earlier `_.insert` made possible is not skipped).
pub(crate) fn report_resolved(out: &Output, text: &str, origin: &str, reading: &Reading) {
    if reading.extraction.profile().one_by_one() {
        report_reading(out, text, origin, reading);
    }
}

pub(crate) fn report_reading(out: &Output, text: &str, origin: &str, reading: &Reading) {
    if reading.diagnostics().is_empty() {
        return;
    }
    if out.json() {
        errln!(
            "{}",
            json!({
                "diagnostics": render::diagnostics_json(reading.diagnostics()),
                "score": reading.score(),
                "report": reading.extraction.report,
            })
        );
    } else {
        err!(
            "{}",
            out.diagnostics(text, origin, reading.diagnostics(), out.colour_err)
        );
    }
}

/// Prints why a reply with invalid instructions was refused (its error diagnostics were just shown).
pub(crate) fn report_invalid(out: &Output, reading: &Reading) {
    let errors: Vec<_> = reading.errors().cloned().collect();
    if out.json() {
        errln!(
            "{}",
            json!({"rejected": true, "errors": render::diagnostics_json(&errors)})
        );
    } else {
        errln!(
            "rejected: the input holds invalid instructions, so the batch changed nothing ({} problem{})",
            errors.len(),
            plural(errors.len())
        );
    }
}

/// Prints why a batch was rejected on stderr.
pub(crate) fn report_rejection(out: &Output, errors: &[BatchError]) {
    if out.json() {
        errln!(
            "{}",
            json!({"rejected": true, "errors": render::errors_json(errors)})
        );
    } else {
        errln!(
            "rejected: the batch changed nothing ({} problem{})",
            errors.len(),
            plural(errors.len())
        );
        err!("{}", render::errors_text(errors));
    }
}

/// Prints a commit's warnings and host events on stderr (stdout carries only the state); with
/// `--format json`, the change log too.
pub(crate) fn report_commit(out: &Output, commit: &Commit, saved: bool) {
    if out.json() {
        // Always one document, so a script reading stderr gets the change log of every commit.
        let mut document = json!({
            "committed": true,
            "changes": commit.changes,
            "warnings": render::errors_json(&commit.warnings),
            "events": commit.events,
        });
        // On a save the commit is a step of its history: where it went, and what the bounds dropped.
        if saved {
            document["step"] = json!(commit.step);
            document["parent"] = json!(commit.parent);
            document["trimmed"] = json!(commit.trimmed);
            document["label_moved_from"] = json!(commit.label_moved_from);
        }
        errln!("{document}");
        return;
    }
    if !commit.warnings.is_empty() {
        errln!("warnings:");
        err!("{}", render::errors_text(&commit.warnings));
    }
    for event in &commit.events {
        errln!("event: {}", render::event_text(event));
    }
    if !saved {
        return;
    }
    if let Some(from) = commit.label_moved_from {
        errln!(
            "note: the label moved here from step {from}, which stays in the history unlabelled"
        );
    }
    if !commit.trimmed.is_empty() {
        let steps: Vec<String> = commit
            .trimmed
            .iter()
            .map(|step| match &step.label {
                Some(label) => format!("{} ({label})", step.id),
                None => step.id.to_string(),
            })
            .collect();
        errln!(
            "note: the history bounds trimmed {} step{}, visited least recently, that can no longer be reached: {}",
            steps.len(),
            plural(steps.len()),
            steps.join(", ")
        );
    }
}

/// `s` for counts other than one.
pub(crate) fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}
