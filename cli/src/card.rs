//! `statecraft card FILE`: what a character card gives a game, as JSON on stdout; and `statecraft
//! card update`: a game takes a new version of its card.
//!
//! Reading the card is the translators' (`card::read`: PNG or JSON card, world book or InitVar
//! text, or the card's statecraft settings); this module reads the file and prints `{"state",
//! "schema", "profile", "entries", "fingerprint"}` (with `json_schema` and `scripts` for a card with
//! settings). A card that cannot be read is a usage error (exit 2) naming the entry and line. `new
//! --card` and `import-chat --card` read cards through [`load`] and make a game's set-up of them with
//! [`setup`]. `card update` plans the update with the engine (`plan_card_update`) and takes it
//! through `Game::take_card`, which writes the step before it returns. This module must not write the
//! save itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::{Value as Json, json};
use statecraft_engine::{CardUpdate, CardUpdateOptions, Outcome, Path as StatePath, Value};
use statecraft_saves::{NewGame, OpenOptions};
use statecraft_translators::card;

use crate::args::{CardAction, CardArgs, CardUpdateArgs};
use crate::render::Output;
use crate::saves::open;
use crate::{EXIT_REJECTED, files};

/// The label of a card update's step unless one is given.
const UPDATE_LABEL: &str = "card update";

/// Reads the card at `path` (PNG or JSON, a world book, or InitVar text) with SillyTavern's macros:
/// what `card` prints and `new --card` makes a game of. A card that cannot be read is an error
/// naming the file, the entry and the line.
pub(crate) fn load(path: &Path, macros: &[(String, String)]) -> Result<card::Card> {
    let bytes = files::read_bytes(Some(path))?;
    let macros: card::Macros = macros.iter().cloned().collect();
    let origin = files::origin(Some(path));
    card::read(&bytes, &macros).with_context(|| format!("cannot read the card {origin}"))
}

/// Runs `card` and `card update`.
pub(crate) fn run(args: &CardArgs, out: &Output) -> Result<ExitCode> {
    if let Some(CardAction::Update(update_args)) = &args.action {
        return update(update_args, out);
    }
    let bytes = files::read_bytes(args.card.as_deref())?;
    let macros: card::Macros = args.macros.iter().cloned().collect();
    let origin = files::origin(args.card.as_deref());
    let card =
        card::read(&bytes, &macros).with_context(|| format!("cannot read the card {origin}"))?;
    let mut document = json!({
        "state": card.state,
        "schema": card.schema,
        "profile": card.profile,
        "entries": card.entries,
        "fingerprint": card.fingerprint,
    });
    if let Some(schema) = &card.json_schema {
        document["json_schema"] = schema.clone();
    }
    if !card.scripts.is_empty() {
        document["scripts"] = json!(card.scripts);
    }
    outln!("{}", serde_json::to_string_pretty(&document)?)?;
    Ok(ExitCode::SUCCESS)
}

/// What a card gives a new save (`new --card`, `import-chat --card`): its automatic schema and
/// fingerprint, its profile unless `profile_given`, its settings' JSON Schema unless `schema_given`,
/// and its settings' scripts, written into the folder `GAME.scripts` beside the save (a save keeps a
/// folder's path, not the files) unless `scripts_given`. The macros the game keeps are `macros`
/// with `char` the card's name unless given. Returns the set-up and the folder it wrote, if any, for
/// the caller to remove if the save cannot be made.
pub(crate) fn setup(
    made: &card::Card,
    mut setup: NewGame,
    save: &Path,
    macros: &card::Macros,
    given: Given,
) -> Result<(NewGame, Option<PathBuf>)> {
    if let Some(name) = &made.name {
        setup = setup.metadata("card", json!(name));
    }
    if let Some(schema) = &made.schema {
        setup = setup.automatic_schema(schema.clone());
    }
    setup = setup
        .card_fingerprint(made.fingerprint.clone())
        .macros(made.game_macros(macros));
    if !given.profile {
        setup = setup.profile(made.profile);
    }
    if let (Some(schema), false) = (&made.json_schema, given.schema) {
        setup = setup.schema(schema.clone());
    }
    if made.scripts.is_empty() || given.scripts {
        return Ok((setup, None));
    }
    let mut folder = save.as_os_str().to_owned();
    folder.push(".scripts");
    let folder = PathBuf::from(folder);
    if folder.symlink_metadata().is_ok() {
        bail!(
            "the card carries scripts, to be written into {}, which exists already: remove it, or \
             give the scripts with --scripts DIR",
            folder.display()
        );
    }
    for name in made.scripts.keys() {
        let plain = Path::new(name)
            .file_name()
            .is_some_and(|file| file == name.as_str());
        if !plain || !name.ends_with(".lua") {
            bail!(
                "the card's script \"{name}\" is not a plain file name ending in .lua; give the \
                 scripts with --scripts DIR"
            );
        }
    }
    std::fs::create_dir(&folder)
        .with_context(|| format!("cannot make the scripts folder {}", folder.display()))?;
    for (name, source) in &made.scripts {
        let file = folder.join(name);
        if let Err(error) = std::fs::write(&file, source) {
            let _ = std::fs::remove_dir_all(&folder);
            return Err(error).with_context(|| format!("cannot write {}", file.display()));
        }
    }
    let canonical = folder
        .canonicalize()
        .with_context(|| format!("cannot find {}", folder.display()))?;
    Ok((setup.scripts(canonical), Some(folder)))
}

/// What the command line gave beside a card, which wins over the card's own.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Given {
    pub(crate) profile: bool,
    pub(crate) schema: bool,
    pub(crate) scripts: bool,
}

/// `statecraft card update --save GAME CARD [--remove-dropped] [--dry-run]`: the answer on stdout,
/// exit 0 once the step is on disk (or nothing changed), exit 1 when the game refuses it.
fn update(args: &CardUpdateArgs, out: &Output) -> Result<ExitCode> {
    let bytes = files::read_bytes(args.card.as_deref())?;
    let origin = files::origin(args.card.as_deref());
    let mut game = open(&args.save, OpenOptions::default(), out)?;
    let mut macros = game.macros().clone();
    macros.extend(args.macros.iter().cloned());
    let made =
        card::read(&bytes, &macros).with_context(|| format!("cannot read the card {origin}"))?;
    let version = made
        .version()
        .with_context(|| format!("the automatic schema of the card {origin} is unusable"))?;
    let previous = game.store().card().fingerprint.clone();
    let changed = previous.as_deref() != Some(made.fingerprint.as_str());
    let update = statecraft_engine::plan_card_update(
        game.state(),
        &Value::from(made.state),
        game.store().card(),
        &version,
        CardUpdateOptions {
            remove_dropped: args.remove_dropped,
            descriptions: game.store().profile().is_mvu(),
        },
    );
    let mut answer = answer(&update, changed, &made.fingerprint, previous.as_deref());
    if !changed || args.dry_run {
        answer["step"] = json!(game.store().current_step().get());
        outln!("{}", serde_json::to_string_pretty(&answer)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let label = args.label.as_deref().unwrap_or(UPDATE_LABEL);
    match game.take_card(&update, version, Some(label))? {
        Outcome::Committed(commit) => {
            answer["committed"] = json!(true);
            answer["step"] = json!(game.store().current_step().get());
            answer["label"] = json!(label);
            answer["changes"] = json!(commit.changes);
            outln!("{}", serde_json::to_string_pretty(&answer)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Outcome::Rejected(rejection) => {
            if out.json() {
                errln!(
                    "{}",
                    json!({"errors": crate::render::errors_json(&rejection.errors)})
                );
            } else {
                errln!(
                    "error: the game refuses the new card; nothing changed\n{}",
                    crate::render::errors_text(&rejection.errors)
                );
            }
            Ok(ExitCode::from(EXIT_REJECTED))
        }
    }
}

/// `card update`'s answer, as `POST /v1/games/{id}/card` gives it (docs/http.md).
fn answer(update: &CardUpdate, changed: bool, fingerprint: &str, previous: Option<&str>) -> Json {
    let paths = |paths: &[StatePath]| -> Vec<Json> { paths.iter().map(|p| json!(p)).collect() };
    json!({
        "changed": changed,
        "committed": false,
        "added": paths(&update.added),
        "dropped": paths(&update.dropped),
        "removed": if update.removes_dropped { paths(&update.dropped) } else { Vec::new() },
        "descriptions": paths(&update.descriptions),
        "changes": [],
        "fingerprint": fingerprint,
        "previous": previous,
    })
}

/// The macros a new game keeps from the command line.
pub(crate) fn macros_of(given: &[(String, String)]) -> BTreeMap<String, String> {
    given.iter().cloned().collect()
}
