//! What a new game is made of: a state, or an MVU character card, with its schema, scripts and
//! profile, checked into the base record and scripts the database keeps.
//!
//! This is the one place a request becomes a game: `POST /v1/games` calls [`base`], and so does
//! any other endpoint that makes games (a sync that creates its game first), so that a game means
//! the same whatever made it. A card (its JSON, `{"png": BASE64}`, or InitVar text) gives the initial
//! state and MVU's automatic schema and defaults the profile to `mvu` (docs/mvu.md), or, when it
//! carries statecraft's settings, their state, JSON Schema, scripts and profile; SillyTavern's
//! macros are substituted in its InitVar text and kept with the game for its replies. Everything is checked before anything is written: the
//! state against the limits and the schema, the schemas compiled, the scripts loaded. This module
//! must not write to the database.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json, json};
use statecraft_engine::{HistoryLimits, Limits, Profile, Value};
use statecraft_saves::BaseRecord;
use statecraft_translators::card;

use crate::error::{ApiError, Kind};
use crate::loaded_game::{build_store, compile_schema};
use crate::requests::{check_macros, check_script_names};
use crate::wire::Problem;

/// What a request gives to make a game from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Source {
    /// The initial state; exactly one of it and `card`.
    pub(crate) state: Option<Json>,
    /// An MVU character card: its JSON, `{"png": BASE64}`, or a string of InitVar text.
    pub(crate) card: Option<Json>,
    /// SillyTavern macros for the card's InitVar text (`{"user": "Alex"}`).
    pub(crate) macros: BTreeMap<String, String>,
    /// A JSON Schema every state must satisfy.
    pub(crate) schema: Option<Json>,
    /// Lua scripts by file name.
    pub(crate) scripts: BTreeMap<String, String>,
    /// Whose rules the game's replies follow; `mvu` with a card and `strict` without by default.
    pub(crate) profile: Option<Profile>,
    /// The seed of scripts' `ctx.random`.
    pub(crate) seed: u64,
}

/// A new game's base record and scripts, checked: the state within the limits and valid under the
/// schema, the schemas compiled and the scripts loaded. A card that cannot be read, a state and a
/// card together, or neither, is a 400 `bad_request`; a state, schema or script that makes no game
/// a 422 `invalid_game`.
pub(crate) fn base(
    mut source: Source,
    limits: &Limits,
) -> Result<(BaseRecord, BTreeMap<String, String>), ApiError> {
    check_script_names(&source.scripts)?;
    check_macros(None, &source.macros)?;
    let mut metadata = Map::new();
    let mut macros = source.macros.clone();
    let (state, automatic_schema, default_profile, card_fingerprint) =
        match (source.state.take(), source.card.take()) {
            (Some(state), None) => (Value::from(state), None, Profile::Strict, None),
            (None, Some(given)) => {
                let made = card::read_value(&given, &source.macros).map_err(|error| {
                    ApiError::new(
                        Kind::BadRequest,
                        format!("the card cannot be read: {error}"),
                    )
                })?;
                if let Some(name) = &made.name {
                    metadata.insert("card".to_owned(), json!(name));
                }
                macros = made.game_macros(&source.macros);
                check_macros(None, &macros)?;
                // The card's statecraft settings, where the request gives none of its own.
                if source.schema.is_none() {
                    source.schema = made.json_schema;
                }
                if source.scripts.is_empty() {
                    source.scripts = made.scripts;
                    check_script_names(&source.scripts)?;
                }
                (
                    Value::from(made.state),
                    made.schema,
                    made.profile,
                    Some(made.fingerprint),
                )
            }
            (Some(_), Some(_)) => {
                return Err(ApiError::new(
                    Kind::BadRequest,
                    "give `state` or `card`, not both: a card's InitVar entries are its state",
                ));
            }
            (None, None) => {
                return Err(ApiError::new(
                    Kind::BadRequest,
                    "a game needs a `state` or a `card`",
                ));
            }
        };
    let schema = compile_schema(source.schema.as_ref())?;
    let refused = limits.check_state(&state);
    if !refused.is_empty() {
        return Err(ApiError::new(
            Kind::InvalidGame,
            "the state is deeper or larger than a game may hold",
        )
        .with_errors(Problem::batch(&refused)));
    }
    let profile = source.profile.unwrap_or(default_profile);
    let base = BaseRecord {
        state,
        schema: source.schema,
        scripts: None,
        history: HistoryLimits::default(),
        metadata,
        seed: Some(source.seed),
        profile: (profile != Profile::Strict).then_some(profile),
        automatic_schema,
        card_fingerprint,
        macros,
        root_keys: Vec::new(),
    };
    // Building the store checks the state against the schema, compiles the automatic schema and
    // loads the scripts.
    build_store(
        base.state.clone(),
        schema.as_ref(),
        &base,
        &source.scripts,
        limits,
    )?;
    Ok((base, source.scripts))
}
