//! `statecraft play DIR`: runs a scripted scenario turn by turn and checks its expectations.
//!
//! A scenario folder holds `state.json`, optionally `schema.json`, `scripts/*.lua` and `scenario.json`
//! (MVU macros), and the model's replies `turns/01.txt`, `turns/02.txt`, … with optional
//! `turns/NN.expect.json` (format in `examples/README.md`). Each reply is read, applied as one batch labelled `turn-NN`, and reported: the
//! repair score and diagnostics, the change log as `path: old -> new (reason)`, host events, or the
//! reasons for a rejection. A turn marked `"regenerates": true` replaces the previous reply: its step is
//! rolled back with `undo_to` first, the way a front end handles a swipe. Play ends with the final state
//! and a summary, and exits 1 when an expectation failed. The report goes to stdout; it is the product
//! of this command, not a diagnostic.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::json;
use statecraft_engine::{
    ApplyOptions, BatchError, Commit, Outcome, Path as StatePath, Store, Value,
};

use crate::EXIT_REJECTED;
use crate::apply::{build_store, plural};
use crate::args::PlayArgs;
use crate::files;
use crate::render::{self, Output, Paint};
use crate::reply;

/// What a turn expects, from `turns/NN.expect.json`. Unknown members are refused so that a misspelt
/// expectation fails loudly instead of passing by checking nothing.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// This reply regenerates the previous one: roll the previous turn back before applying.
    #[serde(default)]
    regenerates: bool,
    /// `"committed"` or `"rejected"`.
    outcome: Option<Expected>,
    /// JSON Pointer → the value expected there after the turn.
    #[serde(default)]
    values: BTreeMap<String, serde_json::Value>,
    /// JSON Pointers expected to be absent after the turn.
    #[serde(default)]
    absent: Vec<String>,
    /// Error kinds the rejection must include.
    #[serde(default)]
    errors: Vec<String>,
    /// Warning kinds the commit must include.
    #[serde(default)]
    warnings: Vec<String>,
    /// Host event names the commit must deliver, in order.
    #[serde(default)]
    events: Vec<String>,
    /// Diagnostic kinds the reading must report.
    #[serde(default)]
    diagnostics: Vec<String>,
    /// The lowest acceptable repair score.
    min_score: Option<u8>,
    /// The number of changes the commit must make.
    changes: Option<usize>,
}

/// Scenario-wide settings, from the optional `scenario.json`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// SillyTavern macros for MVU text: `{"user": "小林"}` replaces `<user>` and `{{user}}`.
    #[serde(default)]
    macros: BTreeMap<String, String>,
}

/// The expected outcome of a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Expected {
    Committed,
    Rejected,
}

/// One turn of a scenario.
#[derive(Debug)]
struct Turn {
    /// `01`, `02`, …: the file stem.
    name: String,
    /// The reply file.
    reply: PathBuf,
    /// Its expectations.
    expect: Expect,
}

/// What happened to a played turn, kept for regeneration and the summary.
#[derive(Debug)]
struct Played {
    name: String,
    /// Whether the turn made a history step (a commit that changed something).
    stepped: bool,
}

/// Tallies for the summary.
#[derive(Debug, Default)]
struct Tally {
    committed: usize,
    rejected: usize,
    undone: usize,
    passed: usize,
    failed: Vec<String>,
}

/// Runs `play`.
pub(crate) fn run(args: &PlayArgs, out: &Output) -> Result<ExitCode> {
    let dir = &args.dir;
    if !dir.is_dir() {
        bail!("cannot play {}: it is not a scenario folder", dir.display());
    }
    let state = files::read_state(&dir.join("state.json"))?;
    let schema_path = dir.join("schema.json");
    let schema = schema_path
        .exists()
        .then(|| files::read_schema(&schema_path))
        .transpose()?;
    let scripts = dir.join("scripts");
    let scripts = scripts.is_dir().then_some(scripts.as_path());
    let turns = load_turns(dir)?;
    let settings_path = dir.join("scenario.json");
    let settings: Settings = if settings_path.exists() {
        serde_json::from_value(files::read_json(&settings_path, "scenario")?).with_context(
            || format!("the scenario file {} is not valid", settings_path.display()),
        )?
    } else {
        Settings::default()
    };
    let mut store = build_store(state, schema, scripts)?;
    let mut report = Report {
        out: *out,
        quiet: args.quiet,
        broken: None,
    };
    let title = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    report.line(&report.paint(
        Paint::Bold,
        &format!(
            "scenario {title}: {} turn{}",
            turns.len(),
            plural(turns.len())
        ),
    ));

    let mut played: Vec<Played> = Vec::new();
    let mut tally = Tally::default();
    // With `--format json` the same facts are collected as one JSON document instead of the text report.
    let mut records: Vec<serde_json::Value> = Vec::new();
    for turn in &turns {
        report.check()?;
        report.line("");
        report.line(&report.paint(
            Paint::Bold,
            &format!(
                "── turn {} ({})",
                turn.name,
                display_relative(dir, &turn.reply)
            ),
        ));
        let undone_before = tally.undone;
        if turn.expect.regenerates {
            regenerate(&mut store, &mut played, turn, &mut report, &mut tally)?;
        }
        let text = files::read_text(&turn.reply, "reply")?;
        let reading = reply::read_with(&text, Some(store.state()), &settings.macros);
        let (count, found) = (reading.batch().len(), reading.diagnostics().len());
        report.line(&format!(
            "read {count} instruction{}, repair score {}/100, {found} diagnostic{}",
            plural(count),
            reading.score(),
            plural(found)
        ));
        if found > 0 && !report.quiet {
            let origin = display_relative(dir, &turn.reply);
            report.raw(&out.diagnostics(&text, &origin, reading.diagnostics(), out.colour_out));
        }
        let outcome = if reading.valid() {
            let label = Some(label(&turn.name));
            let options = ApplyOptions {
                label,
                policies: Some(reading.policies()),
                best_effort: false,
            };
            Some(store.apply_with(reading.batch(), &options))
        } else {
            None
        };
        let mut checks = Checks::default();
        let mut stepped = false;
        match &outcome {
            Some(Outcome::Committed(commit)) => {
                tally.committed += 1;
                report_commit(&mut report, commit);
                stepped = commit.step.is_some();
            }
            Some(Outcome::Rejected(rejection)) => {
                tally.rejected += 1;
                let n = rejection.errors.len();
                report.line(&report.paint(
                    Paint::Red,
                    &format!("rejected, nothing changed ({n} problem{}):", plural(n)),
                ));
                report.raw(&render::errors_text(&rejection.errors));
                report_feedback(&mut report, &reading, &rejection.errors);
            }
            None => {
                tally.rejected += 1;
                let n = reading.errors().count();
                report.line(&report.paint(
                    Paint::Red,
                    &format!(
                        "rejected, nothing changed: the reply holds {n} invalid instruction{}",
                        plural(n)
                    ),
                ));
                report_feedback(&mut report, &reading, &[]);
            }
        }
        played.push(Played {
            name: turn.name.clone(),
            stepped,
        });
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
                dir,
                &reading,
                outcome.as_ref(),
                tally.undone - undone_before,
                &checks,
            ));
        }
        for (passed, what) in &checks.results {
            if *passed {
                tally.passed += 1;
                if !report.quiet {
                    report.line(&report.paint(Paint::Green, &format!("  ✓ {what}")));
                }
            } else {
                tally.failed.push(format!("turn {}: {what}", turn.name));
                report
                    .always(&report.paint(Paint::Red, &format!("  ✗ turn {}: {what}", turn.name)));
            }
        }
    }

    report.line("");
    report.line(&report.paint(Paint::Bold, "final state:"));
    report.line(files::state_text(store.state())?.trim_end());
    let steps = store.history().filter(|s| s.applied).count();
    let summary = format!(
        "summary: {} turn{}, {} committed, {} rejected, {} step{} rolled back, {} history step{} applied; \
         expectations: {} passed, {} failed",
        turns.len(),
        plural(turns.len()),
        tally.committed,
        tally.rejected,
        tally.undone,
        plural(tally.undone),
        steps,
        plural(steps),
        tally.passed,
        tally.failed.len()
    );
    if out.json() {
        let document = json!({
            "scenario": title,
            "turns": records,
            "final_state": store.state(),
            "summary": {
                "turns": turns.len(),
                "committed": tally.committed,
                "rejected": tally.rejected,
                "rolled_back": tally.undone,
                "applied_steps": steps,
                "passed": tally.passed,
                "failed": tally.failed,
            },
        });
        outln!("{}", serde_json::to_string_pretty(&document)?)?;
    } else {
        report.always("");
        let colour = if tally.failed.is_empty() {
            Paint::Green
        } else {
            Paint::Red
        };
        report.always(&report.paint(colour, &summary));
    }
    report.check()?;
    Ok(if tally.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_REJECTED)
    })
}

/// One turn as JSON, for `--format json`.
fn turn_record(
    turn: &Turn,
    dir: &Path,
    reading: &reply::Reading,
    outcome: Option<&Outcome>,
    rolled_back: usize,
    checks: &Checks,
) -> serde_json::Value {
    let mut record = json!({
        "turn": turn.name,
        "reply": display_relative(dir, &turn.reply),
        "rolled_back": rolled_back,
        "score": reading.score(),
        "diagnostics": render::diagnostics_json(reading.diagnostics()),
        "checks": checks.results.iter().map(|(passed, what)| json!({"passed": passed, "check": what})).collect::<Vec<_>>(),
    });
    let fields = match outcome {
        Some(Outcome::Committed(commit)) => json!({
            "outcome": "committed",
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

/// The history label of a turn.
fn label(name: &str) -> String {
    format!("turn-{name}")
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
            let target = label(&anchor.name);
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

/// Prints the message a front end would send back to the model so it can correct itself.
fn report_feedback(report: &mut Report, reading: &reply::Reading, errors: &[BatchError]) {
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
fn report_commit(report: &mut Report, commit: &Commit) {
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
}

/// Expectation results of one turn: `(passed, description)`.
#[derive(Debug, Default)]
struct Checks {
    results: Vec<(bool, String)>,
}

impl Checks {
    fn check(&mut self, passed: bool, what: String) {
        self.results.push((passed, what));
    }
}

/// The snake_case name of an error kind, as in JSON output.
fn kind_name(error: &BatchError) -> String {
    serde_json::to_value(error.kind)
        .ok()
        .and_then(|k| k.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Checks a turn's expectations against what happened.
fn check_turn(
    expect: &Expect,
    outcome: Option<&Outcome>,
    reading: &reply::Reading,
    store: &Store,
    checks: &mut Checks,
) {
    let committed = outcome.is_some_and(Outcome::is_committed);
    if let Some(wanted) = expect.outcome {
        let want_commit = wanted == Expected::Committed;
        let said = if committed { "committed" } else { "rejected" };
        let wanted_text = if want_commit { "committed" } else { "rejected" };
        checks.check(
            want_commit == committed,
            format!("expected {wanted_text}, was {said}"),
        );
    }
    for (pointer, wanted) in &expect.values {
        let found = StatePath::from_pointer(pointer)
            .ok()
            .and_then(|path| store.get(&path).cloned());
        let wanted_value = Value::from_json(wanted);
        let passed = found.as_ref() == Some(&wanted_value);
        let found_text = found.map_or_else(|| "absent".to_owned(), |v| v.to_string());
        checks.check(
            passed,
            format!("{pointer} = {wanted_value} (found {found_text})"),
        );
    }
    for pointer in &expect.absent {
        let found = StatePath::from_pointer(pointer)
            .ok()
            .and_then(|path| store.get(&path).cloned());
        checks.check(found.is_none(), format!("{pointer} is absent"));
    }
    match outcome {
        None => {
            let kinds: Vec<String> = reading.errors().map(|d| d.kind.to_string()).collect();
            for wanted in &expect.errors {
                checks.check(
                    kinds.contains(wanted),
                    format!("rejected with {wanted} (got {})", kinds.join(", ")),
                );
            }
        }
        Some(Outcome::Rejected(rejection)) => {
            let kinds: Vec<String> = rejection.errors.iter().map(kind_name).collect();
            for wanted in &expect.errors {
                checks.check(
                    kinds.contains(wanted),
                    format!("rejected with {wanted} (got {})", kinds.join(", ")),
                );
            }
        }
        Some(Outcome::Committed(commit)) => {
            for wanted in &expect.errors {
                checks.check(
                    false,
                    format!("rejected with {wanted} (the batch committed)"),
                );
            }
            let kinds: Vec<String> = commit.warnings.iter().map(kind_name).collect();
            for wanted in &expect.warnings {
                checks.check(
                    kinds.contains(wanted),
                    format!("warned {wanted} (got {})", kinds.join(", ")),
                );
            }
            if !expect.events.is_empty() {
                let names: Vec<&str> = commit.events.iter().map(|e| e.name.as_str()).collect();
                checks.check(
                    names == expect.events,
                    format!(
                        "events {} (got {})",
                        expect.events.join(", "),
                        names.join(", ")
                    ),
                );
            }
            if let Some(count) = expect.changes {
                checks.check(
                    commit.changes.len() == count,
                    format!("{count} changes (got {})", commit.changes.len()),
                );
            }
        }
    }
    if !committed {
        for wanted in &expect.warnings {
            checks.check(false, format!("warned {wanted} (the batch was rejected)"));
        }
        if !expect.events.is_empty() {
            checks.check(
                false,
                format!(
                    "events {} (the batch was rejected)",
                    expect.events.join(", ")
                ),
            );
        }
    }
    let kinds: Vec<&str> = reading.diagnostics().iter().map(|d| d.kind).collect();
    for wanted in &expect.diagnostics {
        checks.check(
            kinds.contains(&wanted.as_str()),
            format!("diagnostic {wanted} (got {})", kinds.join(", ")),
        );
    }
    if let Some(minimum) = expect.min_score {
        let got = reading.score();
        checks.check(
            got >= minimum,
            format!("repair score at least {minimum} (got {got})"),
        );
    }
}

/// Lists `turns/*.txt` in name order with their expectations.
fn load_turns(dir: &Path) -> Result<Vec<Turn>> {
    let folder = dir.join("turns");
    let entries = fs::read_dir(&folder)
        .with_context(|| format!("cannot list the turns folder {}", folder.display()))?;
    let mut replies: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot list the turns folder {}", folder.display()))?
            .path();
        if path.extension().is_some_and(|e| e == "txt") {
            replies.push(path);
        }
    }
    replies.sort();
    if replies.is_empty() {
        bail!(
            "the turns folder {} holds no replies (turns/01.txt, turns/02.txt, ...)",
            folder.display()
        );
    }
    let mut turns = Vec::with_capacity(replies.len());
    for reply in replies {
        let name = reply
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let expect_path = folder.join(format!("{name}.expect.json"));
        let expect = if expect_path.exists() {
            let json = files::read_json(&expect_path, "expectation")?;
            serde_json::from_value(json).with_context(|| {
                format!(
                    "the expectation file {} is not valid",
                    expect_path.display()
                )
            })?
        } else {
            Expect::default()
        };
        turns.push(Turn {
            name,
            reply,
            expect,
        });
    }
    Ok(turns)
}

/// `path` relative to the scenario's parent, for short headings.
fn display_relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir).unwrap_or(path).display().to_string()
}

/// The play report, printed as it is written so that a run stopped by an IO error still shows what
/// happened up to that point. With `--format json` nothing is printed here: the JSON document is the
/// report. A failed write (a closed pipe) is kept and returned after the turn, so that writing stops
/// with an IO error rather than a panic.
#[derive(Debug)]
struct Report {
    out: Output,
    quiet: bool,
    broken: Option<anyhow::Error>,
}

impl Report {
    /// A line shown unless `--quiet`.
    fn line(&mut self, line: &str) {
        if !self.quiet {
            self.always(line);
        }
    }

    /// A line always shown.
    fn always(&mut self, line: &str) {
        if !self.out.json() {
            self.write(&format!("{line}\n"));
        }
    }

    /// Rendered text (diagnostics, error lists) shown unless `--quiet`.
    fn raw(&mut self, text: &str) {
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
    fn check(&mut self) -> Result<()> {
        self.broken.take().map_or(Ok(()), Err)
    }

    fn paint(&self, style: Paint, text: &str) -> String {
        self.out.paint(self.out.colour_out, style, text)
    }
}
