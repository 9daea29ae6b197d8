//! `statecraft card FILE`: what a character card gives a game, as JSON on stdout.
//!
//! Reading the card is the translators' (`card::read`: PNG or JSON card, world book or InitVar
//! text); this module reads the file and prints `{"state", "schema", "profile", "entries"}`: the
//! initial state MVU builds from the card's InitVar entries, MVU's automatic schema in MVU's shape,
//! the profile the card's replies follow (`mvu`), and the entries read. A card that cannot be read
//! is a usage error (exit 2) naming the entry and line. `new --card` reads cards through [`load`].

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;
use statecraft_translators::card;

use crate::args::CardArgs;
use crate::files;
use crate::render::Output;

/// Reads the card at `path` (PNG or JSON, a world book, or InitVar text) with SillyTavern's macros:
/// what `card` prints and `new --card` makes a game of. A card that cannot be read is an error
/// naming the file, the entry and the line.
pub(crate) fn load(path: &Path, macros: &[(String, String)]) -> Result<card::Card> {
    let bytes = files::read_bytes(Some(path))?;
    let macros: card::Macros = macros.iter().cloned().collect();
    let origin = files::origin(Some(path));
    card::read(&bytes, &macros).with_context(|| format!("cannot read the card {origin}"))
}

/// Runs `card`.
pub(crate) fn run(args: &CardArgs, _out: &Output) -> Result<ExitCode> {
    let bytes = files::read_bytes(args.card.as_deref())?;
    let macros: card::Macros = args.macros.iter().cloned().collect();
    let origin = files::origin(args.card.as_deref());
    let card =
        card::read(&bytes, &macros).with_context(|| format!("cannot read the card {origin}"))?;
    let document = json!({
        "state": card.state,
        "schema": card.schema,
        "profile": "mvu",
        "entries": card.entries,
    });
    outln!("{}", serde_json::to_string_pretty(&document)?)?;
    Ok(ExitCode::SUCCESS)
}
