//! Loading a scenario folder: the state, schema and scripts, the MVU macros of `scenario.json`, and
//! the numbered turns, replies or moves on the history tree, with their expectations (format in
//! `examples/README.md`).
//!
//! This module owns the folder layout and the expectation file format, and builds the store the
//! scenario starts from; it must not apply anything or print: a folder that cannot be read is an error
//! naming the file, and nothing runs.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Deserializer};
use statecraft_engine::{
    Condition, Profile, SchemaViolation, StepId, StepRef, Store, StructureSchema, Value,
};
use statecraft_prompt::Expectation;

use crate::apply::build_store;
use crate::files;

/// A scenario folder, read.
#[derive(Debug)]
pub(super) struct Scenario {
    /// The folder.
    pub(super) dir: PathBuf,
    /// Its name, for the report.
    pub(super) title: String,
    /// SillyTavern macros for MVU text: `{"user": "小林"}` replaces `<user>` and `{{user}}`.
    pub(super) macros: BTreeMap<String, String>,
    /// What every turn does with a schema violation (`scenario.json`'s `schema_violation`), when
    /// not what the profile calls for.
    pub(super) schema_violation: Option<SchemaViolation>,
    /// The replies, in name order.
    pub(super) turns: Vec<Turn>,
}

/// One turn of a scenario.
#[derive(Debug)]
pub(super) struct Turn {
    /// `01`, `02`, …: the file stem.
    pub(super) name: String,
    /// The turn's file: a reply (`NN.txt`) or a move (`NN.move.json`).
    pub(super) file: PathBuf,
    /// The move, when the turn is one instead of a reply.
    pub(super) moves: Option<Move>,
    /// Its expectations.
    pub(super) expect: Expect,
}

/// A turn that moves on the history tree instead of applying a reply: the user returns to an earlier
/// swipe, or deletes messages (back to the step before them).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Move {
    /// The step to make current.
    pub(super) checkout: Target,
}

/// A step named in a scenario: a label (`"m2/s1"`), or an id (`0` is the root).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Target {
    Id(u64),
    Label(String),
}

impl Target {
    pub(super) fn step(&self) -> StepRef {
        match self {
            Target::Id(id) => StepId::new(*id).into(),
            Target::Label(label) => label.as_str().into(),
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Id(0) => f.write_str("the root"),
            Target::Id(id) => write!(f, "step {id}"),
            Target::Label(label) => f.write_str(label),
        }
    }
}

/// What a turn expects, from `turns/NN.expect.json`. Unknown members are refused so that a misspelt
/// expectation fails loudly instead of passing by checking nothing.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Expect {
    /// This reply regenerates the previous one: roll the previous turn back before applying.
    #[serde(default)]
    pub(super) regenerates: bool,
    /// The label of the turn's step, instead of `turn-NN` (a front end's message and swipe id).
    pub(super) label: Option<String>,
    /// Commit on this step instead of the current one: a swipe (on the step before the regenerated
    /// message) or an edit (on the step before the edited one).
    pub(super) at: Option<Target>,
    /// The `schema_violation` policy for this turn's batch, instead of the scenario's.
    pub(super) schema_violation: Option<SchemaViolation>,
    /// `"committed"` or `"rejected"`.
    pub(super) outcome: Option<Expected>,
    /// JSON Pointer → the value expected there after the turn, checked as the prompt kit's `grade`
    /// checks them (an absent value counts as `null`).
    #[serde(default, deserialize_with = "expectations")]
    pub(super) values: Vec<Expectation>,
    /// JSON Pointers expected to be absent after the turn.
    #[serde(default)]
    pub(super) absent: Vec<String>,
    /// Error kinds the rejection must include.
    #[serde(default)]
    pub(super) errors: Vec<String>,
    /// Warning kinds the commit must include.
    #[serde(default)]
    pub(super) warnings: Vec<String>,
    /// Host event names the commit must deliver, in order.
    #[serde(default)]
    pub(super) events: Vec<String>,
    /// Diagnostic kinds the reading must report.
    #[serde(default)]
    pub(super) diagnostics: Vec<String>,
    /// The lowest acceptable repair score.
    pub(super) min_score: Option<u8>,
    /// The number of changes the commit must make.
    pub(super) changes: Option<usize>,
    /// The step expected to be current after the turn.
    pub(super) current: Option<Target>,
    /// Label → JSON Pointer → the value expected in the state at that step, read without moving.
    #[serde(default, deserialize_with = "step_expectations")]
    pub(super) steps: BTreeMap<String, Vec<Expectation>>,
    /// JSON Pointer → the value expected in MVU's `display_data` of the current step (docs/mvu.md,
    /// "MVU's views").
    #[serde(default, deserialize_with = "expectations")]
    pub(super) display: Vec<Expectation>,
    /// MVU's `delta_data` of the current step, exactly.
    pub(super) delta: Option<serde_json::Value>,
    /// Condition → whether it holds on the current state (docs/state-view.md).
    #[serde(default, deserialize_with = "conditions")]
    pub(super) conditions: Vec<(String, Condition, bool)>,
    /// The budgeted view of the current state, its recent changes ranked first.
    pub(super) view: Option<ViewExpect>,
}

/// A view of the current state and what it must show (docs/state-view.md).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ViewExpect {
    /// The budget in tokens, by the estimator; the view must keep within it.
    pub(super) budget: usize,
    /// `json` (default) or `compact`.
    #[serde(default)]
    pub(super) format: ViewFormatName,
    /// The recent messages, oldest first.
    #[serde(default)]
    pub(super) messages: Vec<String>,
    /// Texts the view must hold.
    #[serde(default)]
    pub(super) contains: Vec<String>,
    /// Texts the view must not hold.
    #[serde(default)]
    pub(super) lacks: Vec<String>,
    /// JSON Pointers the view must name as left out.
    #[serde(default)]
    pub(super) elided: Vec<String>,
}

/// A view's format, as an expectation names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ViewFormatName {
    #[default]
    Json,
    Compact,
}

/// `conditions`: each read now, so that a condition that cannot be read is an error of the file, not
/// a check that fails.
fn conditions<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<(String, Condition, bool)>, D::Error> {
    let map = BTreeMap::<String, bool>::deserialize(deserializer)?;
    map.into_iter()
        .map(|(text, holds)| {
            let condition = Condition::parse(&text).map_err(|error| {
                serde::de::Error::custom(format!(
                    "condition \"{text}\": {} ({}, bytes {}..{})",
                    error.message, error.code, error.start, error.end
                ))
            })?;
            Ok((text, condition, holds))
        })
        .collect()
}

impl Expect {
    /// The members that only mean something for a reply, present in this expectation file.
    fn reply_members(&self) -> Vec<&'static str> {
        let set = [
            ("regenerates", self.regenerates),
            ("label", self.label.is_some()),
            ("at", self.at.is_some()),
            ("schema_violation", self.schema_violation.is_some()),
            ("outcome", self.outcome.is_some()),
            ("errors", !self.errors.is_empty()),
            ("warnings", !self.warnings.is_empty()),
            ("events", !self.events.is_empty()),
            ("diagnostics", !self.diagnostics.is_empty()),
            ("min_score", self.min_score.is_some()),
            ("changes", self.changes.is_some()),
        ];
        set.into_iter()
            .filter_map(|(name, present)| present.then_some(name))
            .collect()
    }
}

/// The expected outcome of a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Expected {
    Committed,
    Rejected,
}

/// Scenario-wide settings, from the optional `scenario.json`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    #[serde(default)]
    macros: BTreeMap<String, String>,
    /// The seed of scripts' `ctx.random` (default 0).
    #[serde(default)]
    seed: u64,
    /// `reject` or `repair`; by default what the profile calls for (`reject` but under `mvu-zod`).
    #[serde(default)]
    schema_violation: Option<SchemaViolation>,
    /// A character card in the folder (PNG or JSON, a world book, or InitVar text) to start from,
    /// instead of `state.json`: its InitVar entries are the state and its markers the automatic
    /// schema, read with `macros`.
    #[serde(default)]
    card: Option<PathBuf>,
    /// Whose rules the replies follow: `strict`, `mvu` or `mvu-zod`. Default: `mvu` with a card,
    /// `strict` otherwise.
    #[serde(default)]
    profile: Option<Profile>,
}

/// `values` as the prompt kit's expectations: an object of JSON Pointers, each checked to be one.
fn expectations<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Expectation>, D::Error> {
    let json = serde_json::Value::deserialize(deserializer)?;
    Expectation::from_map(&json).map_err(serde::de::Error::custom)
}

/// `steps` as the prompt kit's expectations for each label.
fn step_expectations<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, Vec<Expectation>>, D::Error> {
    let steps = BTreeMap::<String, serde_json::Value>::deserialize(deserializer)?;
    steps
        .into_iter()
        .map(|(label, values)| {
            Expectation::from_map(&values)
                .map(|expectations| (label, expectations))
                .map_err(serde::de::Error::custom)
        })
        .collect()
}

impl Scenario {
    /// Reads the scenario folder `dir`, and builds the store it starts from: the state, the schema and
    /// the scripts folder's handlers.
    pub(super) fn load(dir: &Path) -> Result<(Scenario, Store)> {
        if !dir.is_dir() {
            bail!("cannot play {}: it is not a scenario folder", dir.display());
        }
        let settings_path = dir.join("scenario.json");
        let mut settings: Settings = if settings_path.exists() {
            serde_json::from_value(files::read_json(&settings_path, "scenario")?).with_context(
                || format!("the scenario file {} is not valid", settings_path.display()),
            )?
        } else {
            Settings::default()
        };
        let state_path = dir.join("state.json");
        let mut card_profile = None;
        let (state, structure) = match &settings.card.clone() {
            Some(card) => {
                if state_path.exists() {
                    bail!(
                        "{} starts from the card {}: a state.json beside it would be ignored; remove one",
                        dir.display(),
                        card.display()
                    );
                }
                let macros: Vec<(String, String)> = settings
                    .macros
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let made = crate::card::load(&dir.join(card), &macros)?;
                let structure = made
                    .schema
                    .clone()
                    .map(StructureSchema::new)
                    .transpose()
                    .with_context(|| {
                        format!(
                            "the automatic schema of the card {} is unusable",
                            card.display()
                        )
                    })?;
                // The card's replies read `{{char}}` as its name, as a game made from it does.
                settings.macros = made.game_macros(&settings.macros);
                card_profile = Some(made.profile);
                (Value::from(made.state), structure)
            }
            None => (files::read_state(&state_path)?, None),
        };
        let profile = settings.profile.or(card_profile).unwrap_or(Profile::Strict);
        let schema_path = dir.join("schema.json");
        let schema = schema_path
            .exists()
            .then(|| files::read_schema(&schema_path))
            .transpose()?;
        let scripts = dir.join("scripts");
        let scripts = scripts.is_dir().then_some(scripts.as_path());
        let turns = load_turns(dir)?;
        let title = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let store = build_store(state, schema, scripts, settings.seed, profile, structure)?;
        let scenario = Scenario {
            dir: dir.to_owned(),
            title,
            macros: settings.macros,
            schema_violation: settings.schema_violation,
            turns,
        };
        Ok((scenario, store))
    }

    /// `path` relative to the scenario folder, for short headings.
    pub(super) fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.dir)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

/// Lists the turns in name order, replies (`turns/NN.txt`) and moves (`turns/NN.move.json`), each with
/// its expectations.
fn load_turns(dir: &Path) -> Result<Vec<Turn>> {
    let folder = dir.join("turns");
    let entries = fs::read_dir(&folder)
        .with_context(|| format!("cannot list the turns folder {}", folder.display()))?;
    // (name, file, whether it is a move)
    let mut files: Vec<(String, PathBuf, bool)> = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot list the turns folder {}", folder.display()))?
            .path();
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(name) = file_name.strip_suffix(".move.json") {
            files.push((name.to_owned(), path, true));
        } else if let Some(name) = file_name.strip_suffix(".txt") {
            files.push((name.to_owned(), path, false));
        }
    }
    files.sort();
    if files.is_empty() {
        bail!(
            "the turns folder {} holds no replies (turns/01.txt, turns/02.txt, ...)",
            folder.display()
        );
    }
    if let Some(pair) = files.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        bail!(
            "turn {} is both a reply and a move ({} and {}); a turn is one or the other",
            pair[0].0,
            pair[0].1.display(),
            pair[1].1.display()
        );
    }
    let mut turns = Vec::with_capacity(files.len());
    for (name, file, is_move) in files {
        let expect_path = folder.join(format!("{name}.expect.json"));
        let expect: Expect = if expect_path.exists() {
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
        let moves = if is_move {
            let json = files::read_json(&file, "move")?;
            let moves: Move = serde_json::from_value(json).with_context(|| {
                format!(
                    "the move file {} is not valid (expected {{\"checkout\": LABEL or ID}})",
                    file.display()
                )
            })?;
            let misplaced = expect.reply_members();
            if !misplaced.is_empty() {
                bail!(
                    "the expectation file {} is for a move, which applies no reply: {} only fit a reply",
                    expect_path.display(),
                    misplaced.join(", ")
                );
            }
            Some(moves)
        } else {
            None
        };
        turns.push(Turn {
            name,
            file,
            moves,
            expect,
        });
    }
    Ok(turns)
}
