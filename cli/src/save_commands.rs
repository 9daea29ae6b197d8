//! The save commands of SPEC §7: `new`, `apply --save`, `undo`, `redo`, `show` (owned by the saves issue).
//!
//! `main.rs` parses the arguments (see `args.rs`) and calls the five functions below. Each returns the
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
use statecraft_engine::Outcome;
use statecraft_saves::{Game, NewGame, OpenOptions};

use crate::apply::{prepare, report_commit, report_rejection};
use crate::args::{ApplyArgs, NewArgs, RedoArgs, ShowArgs, UndoArgs};
use crate::render::Output;
use crate::{EXIT_REJECTED, files, reply, scripting};

/// `statecraft new GAME --state STATE.json [--schema S] [--scripts DIR]`. The scripts folder is
/// recorded as an absolute path, so that the game finds it from any working directory.
pub(crate) fn new(args: &NewArgs, out: &Output) -> Result<ExitCode> {
    let state = files::read_state(&args.state)?;
    let mut setup = NewGame::default().metadata(
        "created_by",
        json!(concat!("statecraft ", env!("CARGO_PKG_VERSION"))),
    );
    if let Some(schema) = &args.schema {
        setup = setup.schema(files::read_json(schema, "schema")?);
    }
    if let Some(scripts) = &args.scripts {
        let folder = scripts
            .canonicalize()
            .with_context(|| format!("cannot find the scripts folder {}", scripts.display()))?;
        setup = setup.scripts(folder);
    }
    let game = Game::create(&args.game, state, setup)?;
    if !out.json() {
        errln!("created {}", game.path().display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `statecraft apply --save GAME [--label L] [INPUT|-]`: exit 0, with the new state on stdout, only once
/// the step is on disk; a rejected batch exits 1 with the reasons on stderr and writes nothing.
pub(crate) fn apply(args: &ApplyArgs, save: &Path, out: &Output) -> Result<ExitCode> {
    let text = files::read_input(args.input.as_deref())?;
    let origin = files::origin(args.input.as_deref());
    // Only `apply` runs callbacks, so only it loads the game's scripts; the other commands replay
    // recorded changes and keep working even where the scripts cannot be loaded.
    let options = OpenOptions::default().setup(|builder, scripts| match scripts {
        Some(folder) => scripting::attach(builder, folder).map_err(|error| format!("{error:#}")),
        None => Ok(builder),
    });
    let mut game = Game::open_with(save, options)?;
    let reading = reply::read(&text, Some(game.state()));
    let Some(options) = prepare(out, &text, &origin, &reading, args.label.clone()) else {
        return Ok(ExitCode::from(EXIT_REJECTED));
    };
    match game.apply_with(reading.batch(), &options)? {
        Outcome::Rejected(rejection) => {
            report_rejection(out, &rejection.errors);
            Ok(ExitCode::from(EXIT_REJECTED))
        }
        Outcome::Committed(commit) => {
            report_commit(out, &commit);
            out!("{}", files::state_text(game.state())?)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `statecraft undo --save GAME [--to LABEL]`: the new state on stdout; exit 1 when there is nothing to
/// undo or no applied step has the label.
pub(crate) fn undo(args: &UndoArgs, out: &Output) -> Result<ExitCode> {
    let mut game = Game::open(&args.save)?;
    let moved = match &args.to {
        Some(label) => match game.undo_to(label)? {
            Some(_) => true,
            None => return unchanged(out, &format!("no applied step is labelled \"{label}\"")),
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
    let mut game = Game::open(&args.save)?;
    if game.redo()?.is_none() {
        return unchanged(out, "nothing to redo");
    }
    out!("{}", files::state_text(game.state())?)?;
    Ok(ExitCode::SUCCESS)
}

/// `statecraft show --save GAME [--history]`: the state, or the history (oldest first, each step's
/// label, whether it is applied or undone, and its change log), as JSON on stdout.
pub(crate) fn show(args: &ShowArgs, _out: &Output) -> Result<ExitCode> {
    let game = Game::open(&args.save)?;
    if args.history {
        let steps: Vec<_> = game
            .store()
            .history()
            .map(|step| json!({"label": step.label, "applied": step.applied, "changes": step.changes}))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&steps)?)?;
    } else {
        out!("{}", files::state_text(game.state())?)?;
    }
    Ok(ExitCode::SUCCESS)
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
