//! The play report: per turn the repair score and diagnostics, the change log, warnings, events or
//! the reasons for a rejection with the feedback a front end would send, or the move on the history
//! tree, and the checks; then the final state and a summary. With `--format json` the same facts form one JSON document instead.
//!
//! This module owns the report's wording and layout; it must not apply anything or decide what passed
//! (the expectations module does).

use anyhow::Result;
use serde_json::json;
use statecraft_engine::{BatchError, Commit, Outcome, StepId, Store, TimelineError};

use super::Tally;
use super::expect::Checks;
use super::scenario::{Scenario, Target, Turn};
use crate::apply::plural;
use crate::files;
use crate::render::{self, Output, Paint};
use crate::reply;

/// The play report, printed as it is written so that a run stopped by an IO error still shows what
/// happened up to that point. With `--format json` nothing is printed here: the JSON document is the
/// report. A failed write (a closed pipe) is kept and returned after the turn, so that writing stops
/// with an IO error rather than a panic.
#[derive(Debug)]
pub(super) struct Report {
    out: Output,
    pub(super) quiet: bool,
    broken: Option<anyhow::Error>,
}

impl Report {
    /// A line shown unless `--quiet`.
    pub(super) fn line(&mut self, line: &str) {
        if !self.quiet {
            self.always(line);
        }
    }

    /// A line always shown.
    pub(super) fn always(&mut self, line: &str) {
        if !self.out.json() {
            self.write(&format!("{line}\n"));
        }
    }

    /// Rendered text (diagnostics, error lists) shown unless `--quiet`.
    pub(super) fn raw(&mut self, text: &str) {
        if !self.quiet && !self.out.json() {
            self.write(text);
        }
    }

    fn write(&mut self, text: &str) {
        if self.broken.is_none() {
            self.broken = render::write_stdout(text).err();
        }
    }

    /// The write error, if stdout failed: the run stops with it.
    pub(super) fn check(&mut self) -> Result<()> {
        self.broken.take().map_or(Ok(()), Err)
    }

    pub(super) fn paint(&self, style: Paint, text: &str) -> String {
        self.out.paint(self.out.colour_out, style, text)
    }

    /// A report on `out`; `quiet` keeps only failed checks and the summary.
    pub(super) fn new(out: &Output, quiet: bool) -> Report {
        Report {
            out: *out,
            quiet,
            broken: None,
        }
    }

    /// The scenario's title line.
    pub(super) fn title(&mut self, scenario: &Scenario) {
        let turns = scenario.turns.len();
        let title = format!("scenario {}: {turns} turn{}", scenario.title, plural(turns));
        self.line(&self.paint(Paint::Bold, &title));
    }

    /// A turn's heading.
    pub(super) fn turn(&mut self, scenario: &Scenario, turn: &Turn) {
        self.line("");
        let heading = format!("── turn {} ({})", turn.name, scenario.relative(&turn.file));
        self.line(&self.paint(Paint::Bold, &heading));
    }

    /// What reading the reply found: the count, the repair score and the diagnostics.
    pub(super) fn reading(
        &mut self,
        scenario: &Scenario,
        turn: &Turn,
        text: &str,
        reading: &reply::Reading,
    ) {
        let (count, found) = (reading.batch().len(), reading.diagnostics().len());
        self.line(&format!(
            "read {count} instruction{}, repair score {}/100, {found} diagnostic{}",
            plural(count),
            reading.score(),
            plural(found)
        ));
        if found > 0 && !self.quiet {
            let origin = scenario.relative(&turn.file);
            let rendered =
                self.out
                    .diagnostics(text, &origin, reading.diagnostics(), self.out.colour_out);
            self.raw(&rendered);
        }
    }

    /// What applying did: the commit, or the rejection with the feedback for the model. `None` is a
    /// reply refused before it ran, for its invalid instructions.
    pub(super) fn outcome(&mut self, outcome: Option<&Outcome>, reading: &reply::Reading) {
        match outcome {
            Some(Outcome::Committed(done)) => commit(self, done),
            Some(Outcome::Rejected(rejection)) => {
                let n = rejection.errors.len();
                self.line(&self.paint(
                    Paint::Red,
                    &format!("rejected, nothing changed ({n} problem{}):", plural(n)),
                ));
                self.raw(&render::errors_text(&rejection.errors));
                feedback(self, reading, &rejection.errors);
            }
            None => {
                let n = reading.errors().count();
                self.line(&self.paint(
                    Paint::Red,
                    &format!(
                        "rejected, nothing changed: the reply holds {n} invalid instruction{}",
                        plural(n)
                    ),
                ));
                feedback(self, reading, &[]);
            }
        }
    }

    /// A move on the history tree, or why it could not be made.
    pub(super) fn moved(&mut self, to: &Target, crossed: Result<&usize, &TimelineError>) {
        match crossed {
            Ok(crossed) => self.line(&self.paint(
                Paint::Yellow,
                &format!(
                    "↷ checkout {to}: crossed {crossed} step{} of the history tree",
                    plural(*crossed)
                ),
            )),
            Err(error) => self.line(&self.paint(
                Paint::Red,
                &format!("checkout {to} failed, nothing moved: {error}"),
            )),
        }
    }

    /// A turn's checks: passed ones unless quiet, failed ones always.
    pub(super) fn checks(&mut self, turn: &Turn, checks: &Checks) {
        for (passed, what) in &checks.results {
            if *passed {
                if !self.quiet {
                    self.line(&self.paint(Paint::Green, &format!("  ✓ {what}")));
                }
            } else {
                self.always(&self.paint(Paint::Red, &format!("  ✗ turn {}: {what}", turn.name)));
            }
        }
    }

    /// The final state and the summary, or with `--format json` the whole document of `records`.
    pub(super) fn finish(
        &mut self,
        scenario: &Scenario,
        store: &Store,
        tally: &Tally,
        records: Vec<serde_json::Value>,
    ) -> Result<()> {
        self.line("");
        self.line(&self.paint(Paint::Bold, "final state:"));
        self.line(files::state_text(store.state())?.trim_end());
        let steps = store.history().filter(|s| s.applied).count();
        let tree = store.history_len();
        let turns = scenario.turns.len();
        if self.out.json() {
            let document = json!({
                "scenario": scenario.title,
                "turns": records,
                "final_state": store.state(),
                "summary": {
                    "turns": turns,
                    "committed": tally.committed,
                    "rejected": tally.rejected,
                    "rolled_back": tally.undone,
                    "moves": tally.moves,
                    "applied_steps": steps,
                    "steps": tree,
                    "passed": tally.passed,
                    "failed": tally.failed,
                },
            });
            outln!("{}", serde_json::to_string_pretty(&document)?)?;
        } else {
            let summary = format!(
                "summary: {} turn{}, {} committed, {} rejected, {} step{} rolled back, {} move{}, {} history step{} \
                 applied of {} in the tree; expectations: {} passed, {} failed",
                turns,
                plural(turns),
                tally.committed,
                tally.rejected,
                tally.undone,
                plural(tally.undone),
                tally.moves,
                plural(tally.moves),
                steps,
                plural(steps),
                tree,
                tally.passed,
                tally.failed.len()
            );
            self.always("");
            let colour = if tally.failed.is_empty() {
                Paint::Green
            } else {
                Paint::Red
            };
            self.always(&self.paint(colour, &summary));
        }
        self.check()
    }
}

/// One turn as JSON, for `--format json`.
pub(super) fn turn_record(
    turn: &Turn,
    scenario: &Scenario,
    reading: &reply::Reading,
    outcome: Option<&Outcome>,
    rolled_back: usize,
    checks: &Checks,
) -> serde_json::Value {
    let mut record = json!({
        "turn": turn.name,
        "reply": scenario.relative(&turn.file),
        "rolled_back": rolled_back,
        "score": reading.score(),
        "diagnostics": render::diagnostics_json(reading.diagnostics()),
        "checks": checks.results.iter().map(|(passed, what)| json!({"passed": passed, "check": what})).collect::<Vec<_>>(),
    });
    let fields = match outcome {
        Some(Outcome::Committed(commit)) => json!({
            "outcome": "committed",
            "step": commit.step,
            "parent": commit.parent,
            "label_moved_from": commit.label_moved_from,
            "trimmed": commit.trimmed,
            "changes": commit.changes,
            "warnings": render::errors_json(&commit.warnings),
            "events": commit.events,
        }),
        Some(Outcome::Rejected(rejection)) => json!({
            "outcome": "rejected",
            "errors": render::errors_json(&rejection.errors),
            "feedback": reading.feedback(&rejection.errors),
        }),
        None => json!({
            "outcome": "rejected",
            "errors": render::diagnostics_json(&reading.errors().cloned().collect::<Vec<_>>()),
            "feedback": reading.feedback(&[]),
        }),
    };
    if let (Some(record), Some(fields)) = (record.as_object_mut(), fields.as_object()) {
        record.extend(fields.clone());
    }
    record
}

/// One move as JSON, for `--format json`.
pub(super) fn move_record(
    turn: &Turn,
    scenario: &Scenario,
    crossed: Option<&usize>,
    checks: &Checks,
) -> serde_json::Value {
    json!({
        "turn": turn.name,
        "move": scenario.relative(&turn.file),
        "checkout": turn.moves.as_ref().map(|moves| moves.checkout.to_string()),
        "crossed": crossed,
        "checks": checks.results.iter().map(|(passed, what)| json!({"passed": passed, "check": what})).collect::<Vec<_>>(),
    })
}

/// Prints the message a front end would send back to the model so it can correct itself.
fn feedback(report: &mut Report, reading: &reply::Reading, errors: &[BatchError]) {
    let message = reading.feedback(errors);
    if message.is_empty() {
        return;
    }
    report.line(&report.paint(Paint::Dim, "feedback for the model:"));
    for line in message.lines() {
        report.line(&report.paint(Paint::Dim, &format!("  | {line}")));
    }
}

/// Prints a commit: the change log, warnings and host events.
fn commit(report: &mut Report, commit: &Commit) {
    report.line(&report.paint(
        Paint::Green,
        &format!(
            "committed {} change{}:",
            commit.changes.len(),
            plural(commit.changes.len())
        ),
    ));
    for change in commit.changes.iter() {
        report.line(&format!("  {}", render::change_text(change)));
    }
    for warning in &commit.warnings {
        report.line(&report.paint(Paint::Yellow, &format!("  warning: {warning}")));
    }
    for event in &commit.events {
        report.line(&report.paint(
            Paint::Cyan,
            &format!("  event: {}", render::event_text(event)),
        ));
    }
    if let Some(step) = commit.step {
        let on = if commit.parent == StepId::ROOT {
            "the root".to_owned()
        } else {
            format!("step {}", commit.parent)
        };
        report.line(&format!("  history step {step}, committed on {on}"));
    }
    if let Some(from) = commit.label_moved_from {
        report.line(&report.paint(
            Paint::Yellow,
            &format!("  the label moved here from step {from}, which stays in the tree unlabelled"),
        ));
    }
    for trimmed in &commit.trimmed {
        let label = trimmed
            .label
            .as_deref()
            .map_or_else(String::new, |l| format!(" ({l})"));
        report.line(&report.paint(
            Paint::Yellow,
            &format!(
                "  trimmed step {}{label}: the history bounds dropped it",
                trimmed.id
            ),
        ));
    }
}
