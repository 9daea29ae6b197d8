//! `statecraft play DIR`: runs a scripted scenario turn by turn and checks its expectations.
//!
//! A scenario folder holds `state.json`, optionally `schema.json`, `scripts/*.lua` and `scenario.json`
//! (MVU macros), and the model's replies `turns/01.txt`, `turns/02.txt`, … with optional
//! `turns/NN.expect.json` (format in `examples/README.md`). Each reply is read, applied as one batch
//! labelled `turn-NN` (or the expectation's `label`, on the step its `at` names), and reported. A turn
//! marked `"regenerates": true` replaces the previous reply: its step is rolled back with `undo_to`
//! first. A turn may also be a move on the history tree (`turns/NN.move.json`: a checkout), the way a
//! front end returns to an earlier swipe or deletes a message. Play exits 1 when an expectation failed.
//! The report goes to stdout; it is the product of this command, not a diagnostic.
//!
//! This module runs the turns in order, makes the moves and rolls back regenerated replies. Reading the folder is
//! [`scenario`]'s, checking a turn is [`expect`]'s and the report is [`report`]'s; none of them holds
//! instruction semantics, which stay in the libraries.

mod expect;
mod report;
mod scenario;

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use statecraft_engine::{ApplyOptions, Outcome, Store};
use statecraft_translators::mvu::Unrunnable;

use self::expect::{Checks, check_position, check_turn};
use self::report::{Report, move_record, turn_record};
use self::scenario::{Scenario, Turn};
use crate::EXIT_REJECTED;
use crate::apply::{plural, with_schema_violation};
use crate::args::PlayArgs;
use crate::files;
use crate::render::{Output, Paint};
use crate::reply::{self, ReadOptions};

/// What happened to a played turn, kept for regeneration and the summary.
#[derive(Debug)]
struct Played {
    name: String,
    /// The label its step got.
    label: String,
    /// Whether the turn made a history step.
    stepped: bool,
}

/// Tallies for the summary.
#[derive(Debug, Default)]
struct Tally {
    committed: usize,
    rejected: usize,
    undone: usize,
    moves: usize,
    passed: usize,
    failed: Vec<String>,
}

/// Runs `play`.
pub(crate) fn run(args: &PlayArgs, out: &Output) -> Result<ExitCode> {
    let (scenario, mut store) = Scenario::load(&args.dir)?;
    let mut report = Report::new(out, args.quiet);
    report.title(&scenario);
    let mut played: Vec<Played> = Vec::new();
    let mut tally = Tally::default();
    // With `--format json` the same facts are collected as one JSON document instead of the text report.
    let mut records: Vec<serde_json::Value> = Vec::new();
    for turn in &scenario.turns {
        report.check()?;
        report.turn(&scenario, turn);
        if let Some(moves) = &turn.moves {
            let crossed = store.checkout(moves.checkout.step());
            report.moved(&moves.checkout, crossed.as_ref());
            tally.moves += 1;
            let mut checks = Checks::default();
            if let Err(error) = &crossed {
                checks
                    .results
                    .push((false, format!("checkout {}: {error}", moves.checkout)));
            }
            check_position(&turn.expect, &store, &mut checks);
            if out.json() {
                records.push(move_record(turn, &scenario, crossed.as_ref().ok(), &checks));
            }
            tally.record(turn, &checks);
            report.checks(turn, &checks);
            continue;
        }
        let undone_before = tally.undone;
        if turn.expect.regenerates {
            regenerate(&mut store, &mut played, turn, &mut report, &mut tally)?;
        }
        let text = files::read_text(&turn.file, "reply")?;
        let mut reading = reply::read(
            &text,
            ReadOptions::of(&store, &scenario.macros, Unrunnable::default()),
        );
        let label = turn
            .expect
            .label
            .clone()
            .unwrap_or_else(|| format!("turn-{}", turn.name));
        let applicable = reading
            .extraction
            .applicable()
            .map(|(batch, options)| (batch.clone(), options));
        let outcome = applicable.map(|(batch, options)| {
            let mut options = ApplyOptions {
                label: Some(label.clone()),
                at: turn.expect.at.as_ref().map(|at| at.step()),
                ..options
            };
            if let Some(policy) = turn.expect.schema_violation.or(scenario.schema_violation) {
                with_schema_violation(&mut options, policy);
            }
            reading.apply(&mut store, &batch, &options, &text)
        });
        // Shown once the batch ran: one by one, each command was decided on the state it met.
        report.reading(&scenario, turn, &text, &reading);
        report.outcome(outcome.as_ref(), &reading);
        match &outcome {
            Some(Outcome::Committed(_)) => tally.committed += 1,
            Some(Outcome::Rejected(_)) | None => tally.rejected += 1,
        }
        played.push(Played {
            name: turn.name.clone(),
            label,
            stepped: matches!(&outcome, Some(Outcome::Committed(commit)) if commit.step.is_some()),
        });
        let mut checks = Checks::default();
        check_turn(
            &turn.expect,
            outcome.as_ref(),
            &reading,
            &store,
            &mut checks,
        );
        if out.json() {
            records.push(turn_record(
                turn,
                &scenario,
                &reading,
                outcome.as_ref(),
                tally.undone - undone_before,
                &checks,
            ));
        }
        tally.record(turn, &checks);
        report.checks(turn, &checks);
    }
    report.finish(&scenario, &store, &tally, records)?;
    Ok(if tally.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_REJECTED)
    })
}

impl Tally {
    /// Counts a turn's checks.
    fn record(&mut self, turn: &Turn, checks: &Checks) {
        for (passed, what) in &checks.results {
            if *passed {
                self.passed += 1;
            } else {
                self.failed.push(format!("turn {}: {what}", turn.name));
            }
        }
    }
}

/// Rolls back the previous turn before its regenerated reply is applied: `undo_to` the newest earlier
/// turn that made a step, or a plain undo when the previous turn was the first step.
fn regenerate(
    store: &mut Store,
    played: &mut [Played],
    turn: &Turn,
    report: &mut Report,
    tally: &mut Tally,
) -> Result<()> {
    let Some((previous, earlier)) = played.split_last_mut() else {
        bail!(
            "turn {} regenerates, but there is no earlier turn to replace",
            turn.name
        );
    };
    if !previous.stepped {
        report.line(&format!(
            "regenerating turn {}: it changed nothing, so nothing is rolled back",
            previous.name
        ));
        return Ok(());
    }
    let undone = match earlier.iter().rev().find(|p| p.stepped) {
        Some(anchor) => {
            let target = anchor.label.clone();
            let crossed = store
                .undo_to(&target)
                .context("cannot roll back the regenerated turn")?
                .with_context(|| format!("no history step is labelled {target}"))?;
            report.line(&report.paint(
                Paint::Yellow,
                &format!(
                    "↺ regenerating turn {}: undo_to({target}) rolled back {crossed} step{}",
                    previous.name,
                    plural(crossed)
                ),
            ));
            crossed
        }
        None => {
            store
                .undo()
                .context("cannot roll back the regenerated turn")?;
            report.line(&report.paint(
                Paint::Yellow,
                &format!(
                    "↺ regenerating turn {}: undo rolled back its step",
                    previous.name
                ),
            ));
            1
        }
    };
    tally.undone += undone;
    previous.stepped = false;
    Ok(())
}
