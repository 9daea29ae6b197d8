//! The save commands of docs/cli.md: `new`, `apply --save [--at]`, `undo`, `redo`, `checkout`, `show [--at]`
//! and `log`.
//!
//! `main.rs` parses the arguments (see `args.rs`) and calls the functions below. Each returns the
//! exit code: 0 success, 1 when nothing changed (a rejected batch, nothing to undo or redo, an unknown
//! label), and an `Err` for usage, IO and save errors, which `main.rs` prints and turns into exit 2.
//! Every change goes through `statecraft_saves::Game`, which returns only once the change is on disk,
//! so exit 0 from `apply --save` means the step is durable (a closed stdout afterwards still exits 2,
//! with the step on disk). Output goes through `main.rs`'s `out!` and `errln!`, which never panic. This
//! module must not write the save itself.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;
use statecraft_engine::{Outcome, StepId, StepRef, Store, Value};
use statecraft_saves::{Game, NewGame, OpenOptions};

use crate::apply::{
    plural, prepare, report_commit, report_rejection, report_resolved, with_schema_violation,
};
use crate::args::{ApplyArgs, CheckoutArgs, LogArgs, NewArgs, RedoArgs, ShowArgs, UndoArgs};
use crate::render::Output;
use crate::reply::ReadOptions;
use crate::{EXIT_REJECTED, card, files, reply, scripting};

/// `statecraft new GAME --state STATE.json [--schema S] [--scripts DIR]`. The scripts folder is
/// recorded as an absolute path, so that the game finds it from any working directory. A card gives
/// the state, its automatic schema, fingerprint and profile, and its settings' JSON Schema and
/// scripts (written beside the save) where the command line gives none; the macros are kept.
pub(crate) fn new(args: &NewArgs, out: &Output) -> Result<ExitCode> {
    let mut setup = NewGame::default().metadata(
        "created_by",
        json!(concat!("statecraft ", env!("CARGO_PKG_VERSION"))),
    );
    let macros = card::macros_of(&args.macros);
    let mut written = None;
    let state = match (&args.state, &args.card) {
        (_, Some(card)) => {
            let made = card::load(card, &args.macros)?;
            let given = card::Given {
                profile: args.profile.is_some(),
                schema: args.schema.is_some(),
                scripts: args.scripts.is_some(),
            };
            (setup, written) = card::setup(&made, setup, &args.game, &macros, given)?;
            Value::from(made.state)
        }
        (Some(state), None) => {
            setup = setup.macros(macros);
            files::read_state(state)?
        }
        (None, None) => anyhow::bail!("new needs --state STATE.json or --card FILE"),
    };
    let made = create(args, state, setup);
    if let (Err(_), Some(folder)) = (&made, &written) {
        // The scripts written for a game that could not be made go with it.
        let _ = std::fs::remove_dir_all(folder);
    }
    let game = made?;
    if out.json() {
        errln!("{}", json!({"created": game.path().display().to_string()}));
    } else {
        errln!("created {}", game.path().display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The save `new` makes, once the state and the card's part of the set-up are known.
fn create(args: &NewArgs, state: Value, mut setup: NewGame) -> Result<Game> {
    if let Some(profile) = args.profile {
        setup = setup.profile(profile.into());
    }
    if let Some(schema) = &args.schema {
        setup = setup.schema(files::read_json(schema, "schema")?);
    }
    setup = setup.seed(args.seed);
    if let Some(scripts) = &args.scripts {
        let folder = scripts
            .canonicalize()
            .with_context(|| format!("cannot find the scripts folder {}", scripts.display()))?;
        setup = setup.scripts(folder);
    }
    Ok(Game::create(&args.game, state, setup)?)
}

/// `statecraft apply --save GAME [--label L] [--at LABEL | --at-step ID] [INPUT|-]`: exit 0, with the new
/// state on stdout, only once the step is on disk; a rejected batch (an unknown `--at` step included)
/// exits 1 with the reasons on stderr and writes nothing.
pub(crate) fn apply(args: &ApplyArgs, save: &Path, out: &Output) -> Result<ExitCode> {
    let text = files::read_input(args.input.as_deref())?;
    let origin = files::origin(args.input.as_deref());
    // Only `apply` runs callbacks, so only it loads the game's scripts; the other commands replay
    // recorded changes and keep working even where the scripts cannot be loaded.
    let options = OpenOptions::default().setup(|builder, scripts| match scripts {
        // The whole chain of causes, as the command prints every error.
        Some(folder) => {
            scripting::attach(builder, folder).map_err(|error| format!("{error:#}").into())
        }
        None => Ok(builder),
    });
    let mut game = open(save, options, out)?;
    // The macros the game was made with, and this reply's own over them.
    let mut macros = game.macros().clone();
    macros.extend(args.macros.iter().cloned());
    let mut reading = reply::read(
        &text,
        ReadOptions::of(game.store(), &macros, args.mvu_unrunnable.into()),
    );
    let Some((batch, mut options)) = prepare(out, &text, &origin, &reading, args.label.clone())
    else {
        return Ok(ExitCode::from(EXIT_REJECTED));
    };
    options.at = step_ref(args.at.as_deref(), args.at_step);
    if let Some(policy) = args.schema_violation {
        with_schema_violation(&mut options, policy.into());
    }
    let batch = batch.clone();
    let outcome = reading.apply_saved(&mut game, &batch, &options, &text)?;
    report_resolved(out, &text, &origin, &reading);
    match outcome {
        Outcome::Rejected(rejection) => {
            report_rejection(out, &rejection.errors);
            Ok(ExitCode::from(EXIT_REJECTED))
        }
        Outcome::Committed(commit) => {
            report_commit(out, &commit, true);
            // The step is durable by now: an error from here on must not read as "nothing applied",
            // or a host would apply the reply a second time.
            out!("{}", files::state_text(game.state())?).with_context(|| {
                let step = commit
                    .step
                    .map_or_else(|| "the step".to_owned(), |id| format!("step {id}"));
                format!("{step} is committed and on disk; only printing the new state failed")
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `statecraft undo --save GAME [--to LABEL]`: the new state on stdout; exit 1 when there is nothing to
/// undo or no applied step has the label.
pub(crate) fn undo(args: &UndoArgs, out: &Output) -> Result<ExitCode> {
    let mut game = open(&args.save, OpenOptions::default(), out)?;
    let moved = match &args.to {
        Some(label) => match game.undo_to(label)? {
            Some(_) => true,
            None => {
                return unchanged(
                    out,
                    &format!(
                        "no step on the current line is labelled \"{label}\" (checkout goes to a step on another branch)"
                    ),
                );
            }
        },
        None => game.undo()?.is_some(),
    };
    if !moved {
        return unchanged(out, "nothing to undo");
    }
    out!("{}", files::state_text(game.state())?)?;
    Ok(ExitCode::SUCCESS)
}

/// `statecraft redo --save GAME`: the new state on stdout; exit 1 when there is nothing to redo.
pub(crate) fn redo(args: &RedoArgs, out: &Output) -> Result<ExitCode> {
    let mut game = open(&args.save, OpenOptions::default(), out)?;
    if game.redo()?.is_none() {
        return unchanged(out, "nothing to redo");
    }
    out!("{}", files::state_text(game.state())?)?;
    Ok(ExitCode::SUCCESS)
}

/// `statecraft checkout --save GAME (LABEL | --step ID)`: the new state on stdout; exit 1, with nothing
/// changed, when no retained step is named so.
pub(crate) fn checkout(args: &CheckoutArgs, out: &Output) -> Result<ExitCode> {
    let mut game = open(&args.save, OpenOptions::default(), out)?;
    let Some(to) = step_ref(args.label.as_deref(), args.step) else {
        anyhow::bail!("checkout needs a LABEL or --step ID");
    };
    if game.checkout(to.clone())?.is_none() {
        // The engine's words: `no step is labelled "m9"`, `no step 12 in the history`.
        let why = game.store().find(to).err().map(|error| error.to_string());
        return unchanged(out, why.as_deref().unwrap_or("no such step"));
    }
    out!("{}", files::state_text(game.state())?)?;
    Ok(ExitCode::SUCCESS)
}

/// `statecraft show --save GAME [--at LABEL | --at-step ID | --history]`: the state (now, or at a step
/// without moving), or the history (every step in id order with its id, parent, label, whether it is
/// on the current line or current, and its change log), as JSON on stdout; exit 1 when no retained
/// step is named so. Reading needs only read access: the save is opened read-only.
pub(crate) fn show(args: &ShowArgs, out: &Output) -> Result<ExitCode> {
    let game = open(&args.save, OpenOptions::default().read_only(), out)?;
    if args.history {
        let steps: Vec<_> = game
            .store()
            .history()
            .map(|step| {
                json!({
                    "id": step.id,
                    "parent": step.parent,
                    "label": step.label,
                    "applied": step.applied,
                    "current": step.current,
                    "changes": step.changes,
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&steps)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    match step_ref(args.at.as_deref(), args.at_step) {
        None => out!("{}", files::state_text(game.state())?)?,
        Some(at) => match game.store().state_at(at.clone()) {
            Ok(state) => out!("{}", files::state_text(state.value())?)?,
            Err(error) => return unchanged(out, &error.to_string()),
        },
    }
    Ok(ExitCode::SUCCESS)
}

/// `statecraft log --save GAME`: the history tree. JSON by default (`{"current", "next_id", "steps":
/// [{"id", "parent", "label", "changes" (a count), "applied", "current"}]}`, in id order, so a parent
/// always comes before its children); with `--format human` given, the tree drawn.
pub(crate) fn log(args: &LogArgs, out: &Output, drawn: bool) -> Result<ExitCode> {
    let game = open(&args.save, OpenOptions::default().read_only(), out)?;
    let store = game.store();
    if drawn {
        out!("{}", draw_tree(store))?;
        return Ok(ExitCode::SUCCESS);
    }
    let steps: Vec<_> = store
        .history()
        .map(|step| {
            let mut entry = json!({
                "id": step.id,
                "parent": step.parent,
                "label": step.label,
                "changes": step.changes.len(),
                "applied": step.applied,
                "current": step.current,
            });
            // A step made by sync: its reply's key, and why the reply was refused.
            if let Some(key) = step.key {
                entry["key"] = json!(key.to_string());
            }
            if let Some(refusal) = step.refusal {
                entry["refusal"] = json!(refusal);
            }
            entry
        })
        .collect();
    let document = json!({
        "current": store.current_step(),
        "next_id": store.next_step_id(),
        "steps": steps,
    });
    outln!("{}", serde_json::to_string_pretty(&document)?)?;
    Ok(ExitCode::SUCCESS)
}

/// The history tree drawn as text. A step with one child continues on the next line at the same
/// indentation, so a long chat stays narrow; a step with several children (swipes, an edit) opens one
/// branch per child. Each line: the id, the label, the change count; the current step is marked.
/// Time: O(steps); no recursion, so a chat of any length draws.
fn draw_tree(store: &Store) -> String {
    let current = store.current_step();
    let mut text = String::new();
    let mark = |id: StepId| if id == current { "  <- current" } else { "" };
    text.push_str(&format!("root{}\n", mark(StepId::ROOT)));
    // Each entry: a step, the text before it on its own line, and the text before its descendants.
    let mut stack: Vec<(StepId, String, String)> = Vec::new();
    let push_children =
        |stack: &mut Vec<(StepId, String, String)>, children: &[StepId], indent: &str| {
            if let [only] = children {
                stack.push((*only, indent.to_owned(), indent.to_owned()));
                return;
            }
            // Pushed last first, so that the oldest child is drawn first.
            for (i, child) in children.iter().enumerate().rev() {
                let last = i + 1 == children.len();
                let (lead, rest) = if last {
                    ("└─ ", "   ")
                } else {
                    ("├─ ", "│  ")
                };
                stack.push((*child, format!("{indent}{lead}"), format!("{indent}{rest}")));
            }
        };
    push_children(
        &mut stack,
        store.children(StepId::ROOT).unwrap_or_default(),
        "",
    );
    while let Some((id, lead, indent)) = stack.pop() {
        let Some(step) = store.step(id) else { continue };
        let count = step.changes.len();
        let label = step
            .label
            .map_or_else(String::new, |label| format!(" {label}"));
        text.push_str(&format!(
            "{lead}* {id}{label} ({count} change{}){}\n",
            plural(count),
            mark(id)
        ));
        push_children(&mut stack, step.children, &indent);
    }
    text
}

/// The step the `--at LABEL` / `--at-step ID` pair (or `LABEL` / `--step ID`) names.
fn step_ref(label: Option<&str>, id: Option<u64>) -> Option<StepRef> {
    match (label, id) {
        (Some(label), _) => Some(label.into()),
        (None, Some(id)) => Some(StepId::new(id).into()),
        (None, None) => None,
    }
}

/// Opens a save, and warns when opening it dropped a torn tail (a crash cut a write short, and what
/// it held was never acknowledged), or when a read-only opening stopped at a damaged record.
pub(crate) fn open(save: &Path, options: OpenOptions, out: &Output) -> Result<Game> {
    let game = Game::open_with(save, options)?;
    if let Some(torn) = game.torn_tail() {
        let file = game.path().display();
        if out.json() {
            errln!(
                "{}",
                json!({
                    "warning": "torn_tail",
                    "file": file.to_string(),
                    "offset": torn.offset,
                    "bytes": torn.bytes,
                    "cut": torn.cut,
                    "message": torn.to_string(),
                })
            );
        } else {
            errln!("warning: {file}: {torn}");
        }
    }
    if let Some(damage) = game.damage() {
        let file = game.path().display();
        if out.json() {
            errln!(
                "{}",
                json!({
                    "warning": "damaged",
                    "file": file.to_string(),
                    "offset": damage.offset,
                    "problem": damage.problem,
                    "records": damage.records,
                    "message": damage.to_string(),
                })
            );
        } else {
            errln!("warning: {file}: {damage}");
        }
    }
    Ok(game)
}

/// Says why nothing changed, and exits 1.
fn unchanged(out: &Output, why: &str) -> Result<ExitCode> {
    if out.json() {
        errln!("{}", json!({"unchanged": true, "reason": why}));
    } else {
        errln!("unchanged: {why}");
    }
    Ok(ExitCode::from(EXIT_REJECTED))
}
