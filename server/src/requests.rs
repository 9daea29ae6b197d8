//! The request bodies of the game endpoints, as the API takes them.
//!
//! Every body is read strictly: an unknown member is a 400 that names it, so a typo (`"dryrun"`) never
//! passes silently. A step is named by its label (a string) or its id (a number), the same way in every
//! body. Per-request policies sit in `ApplyRequest::policies`, laid over the policies the reply calls
//! for, so a policy added to the engine is accepted here without a change. The strings a body brings
//! that the engine's limits do not see (macros, script names) are bounded here ([`check_macros`],
//! [`check_script_names`]), and texts that a database keeps as they are (labels) are refused here
//! when they hold NUL, which PostgreSQL cannot store. This module must not run anything.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value as Json};
use statecraft_engine::{ChatReply, ChatReplyError, Profile, StepId, StepRef};

use crate::error::{ApiError, Kind};

/// Most macros one request may define.
pub(crate) const MAX_MACROS: usize = 32;
/// Longest macro name, in bytes (the reader never matches a longer one).
pub(crate) const MAX_MACRO_NAME: usize = 64;
/// Longest macro value, in bytes: a user's or a character's name.
pub(crate) const MAX_MACRO_VALUE: usize = 4096;
/// Most bytes macros may add to a reply, counted from their occurrences in it before anything is read:
/// a short value written in many places must not make the reader build far more text than was sent.
pub(crate) const MAX_MACRO_GROWTH: usize = 4 << 20;
/// Longest script name, in bytes.
pub(crate) const MAX_SCRIPT_NAME: usize = 255;

/// Checks a request's macros against the bounds above, for the reply `input` they apply to.
/// Time: O(length of `input` × number of macros), with a fast substring search.
pub(crate) fn check_macros(
    input: Option<&str>,
    macros: &BTreeMap<String, String>,
) -> Result<(), ApiError> {
    let refuse = |message: String| Err(ApiError::new(Kind::BadRequest, message));
    if macros.len() > MAX_MACROS {
        return refuse(format!(
            "{} macros were given; a request may define at most {MAX_MACROS}",
            macros.len()
        ));
    }
    let mut growth = 0usize;
    for (name, value) in macros {
        if name.len() > MAX_MACRO_NAME {
            return refuse(format!(
                "the macro name \"{}…\" is {} bytes long; the limit is {MAX_MACRO_NAME}",
                name.chars().take(32).collect::<String>(),
                name.len()
            ));
        }
        if value.len() > MAX_MACRO_VALUE {
            return refuse(format!(
                "the value of the macro \"{name}\" is {} bytes long; the limit is {MAX_MACRO_VALUE}",
                value.len()
            ));
        }
        let Some(input) = input else { continue };
        let places = [format!("<{name}>"), format!("{{{{{name}}}}}")]
            .iter()
            .map(|pattern| memchr::memmem::find_iter(input.as_bytes(), pattern).count())
            .sum::<usize>();
        growth = growth.saturating_add(places.saturating_mul(value.len()));
    }
    if growth > MAX_MACRO_GROWTH {
        return refuse(format!(
            "the macros would add {growth} bytes to the reply where it names them; the limit is \
             {MAX_MACRO_GROWTH}"
        ));
    }
    Ok(())
}

/// Why a text cannot be kept: the character U+0000 (NUL), which PostgreSQL cannot store in a text
/// column. The same rule holds on SQLite, which could, so that a request means one thing whatever the
/// database (and a game moves between them).
fn nul_in(what: &str) -> String {
    format!(
        "{what} holds the character U+0000 (NUL), which a game cannot keep in a label or an id \
         (PostgreSQL cannot store it in text)"
    )
}

/// Refuses a text that reaches a text column of the database as it is (a label, a listing's `after`)
/// and holds NUL: the database would refuse it, and with it every write of its group commit.
pub(crate) fn check_text(what: &str, text: &str) -> Result<(), crate::error::ApiError> {
    if text.contains('\0') {
        return Err(crate::error::ApiError::new(
            crate::error::Kind::BadRequest,
            nul_in(&format!("`{what}`")),
        ));
    }
    Ok(())
}

/// Checks the names of the scripts a body brings.
pub(crate) fn check_script_names(scripts: &BTreeMap<String, String>) -> Result<(), ApiError> {
    match scripts.keys().find(|name| name.len() > MAX_SCRIPT_NAME) {
        Some(name) => Err(ApiError::new(
            Kind::BadRequest,
            format!(
                "the script name \"{}…\" is {} bytes long; the limit is {MAX_SCRIPT_NAME}",
                name.chars().take(32).collect::<String>(),
                name.len()
            ),
        )),
        None => Ok(()),
    }
}

/// Reads a label, refusing NUL as [`check_text`] does.
fn text_without_nul<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    let text = Option::<String>::deserialize(deserializer)?;
    if text.as_deref().is_some_and(|text| text.contains('\0')) {
        return Err(serde::de::Error::custom(nul_in("the label")));
    }
    Ok(text)
}

/// A step as a body names it: `"m7"` (a label) or `3` (an id; `0` is the root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StepName {
    /// By id.
    Id(u64),
    /// By label.
    Label(String),
}

/// Read by hand rather than as an untagged enum, whose error ("data did not match any variant of
/// untagged enum StepName") says neither what was found nor what a step is. It goes through a JSON
/// value because numbers are read with their exact text (`arbitrary_precision`).
impl<'de> Deserialize<'de> for StepName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<StepName, D::Error> {
        use serde::de::{Error, Unexpected};
        const A_STEP: &str =
            "a step: its label (a string) or its id (a whole number, 0 for the root)";
        let number;
        let found = match Json::deserialize(deserializer)? {
            Json::String(label) => return Ok(StepName::Label(label)),
            Json::Number(id) => {
                if let Some(id) = id.as_u64() {
                    return Ok(StepName::Id(id));
                }
                number = id.to_string();
                Unexpected::Other(&number)
            }
            Json::Bool(value) => Unexpected::Bool(value),
            Json::Null => Unexpected::Unit,
            Json::Array(_) => Unexpected::Seq,
            Json::Object(_) => Unexpected::Map,
        };
        Err(D::Error::invalid_type(found, &A_STEP))
    }
}

impl StepName {
    /// The engine's reference.
    pub(crate) fn to_ref(&self) -> StepRef {
        match self {
            StepName::Id(id) => StepRef::Id(StepId::new(*id)),
            StepName::Label(label) => StepRef::Label(label.clone()),
        }
    }
}

/// `POST /v1/games`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateRequest {
    /// The initial state; exactly one of it and `card`.
    #[serde(default)]
    pub(crate) state: Option<Json>,
    /// An MVU character card (its JSON, `{"png": BASE64}`, or a string of InitVar text), whose
    /// InitVar entries are the initial state and whose markers the automatic schema.
    #[serde(default)]
    pub(crate) card: Option<Json>,
    /// SillyTavern macros for the card's InitVar text (`{"user": "Alex"}`).
    #[serde(default)]
    pub(crate) macros: BTreeMap<String, String>,
    /// Whose rules the game's replies follow: `strict`, `mvu` or `mvu-zod` (default `mvu` with a
    /// card, `strict` without).
    #[serde(default)]
    pub(crate) profile: Option<Profile>,
    /// A JSON Schema every state must satisfy.
    #[serde(default)]
    pub(crate) schema: Option<Json>,
    /// Lua scripts by file name (`"rules.lua"`), loaded in file-name order.
    #[serde(default)]
    pub(crate) scripts: BTreeMap<String, String>,
    /// The id to give the game; the server makes one when absent.
    #[serde(default)]
    pub(crate) id: Option<String>,
    /// The seed of scripts' `ctx.random` (default 0), kept with the game.
    #[serde(default)]
    pub(crate) seed: u64,
}

/// `POST /v1/games/{id}/sync`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SyncRequest {
    /// The chat path: each reply `{"text": T}`, `{"sha256": H}` or `H`, or the first item that is
    /// none of these ([`read_replies`] answers it).
    #[serde(deserialize_with = "ChatReply::deserialize_path")]
    pub(crate) replies: Result<Vec<ChatReply>, ChatReplyError>,
    /// Make the last reply's step current (the default), or only read there.
    #[serde(default = "yes", rename = "move")]
    pub(crate) move_to_end: bool,
    /// SillyTavern macros for MVU command text.
    #[serde(default)]
    pub(crate) macros: BTreeMap<String, String>,
    /// The game to make first when it does not exist: `POST /v1/games`'s body (its `id`, if given,
    /// must be the path's).
    #[serde(default)]
    pub(crate) create: Option<CreateRequest>,
}

fn yes() -> bool {
    true
}

/// A sync's replies ([`ChatReply::deserialize_path`]); a bad one is a 400 naming its index.
pub(crate) fn read_replies(
    replies: Result<Vec<ChatReply>, ChatReplyError>,
) -> Result<Vec<ChatReply>, ApiError> {
    replies
        .map_err(|error| ApiError::new(Kind::BadRequest, error.to_string()).with_index(error.index))
}

/// `POST /v1/games/{id}/apply`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApplyRequest {
    /// A raw model reply, read by the lenient layer.
    #[serde(default)]
    pub(crate) input: Option<String>,
    /// A batch of canonical instructions (or a JSON Patch document), read strictly.
    #[serde(default)]
    pub(crate) batch: Option<Json>,
    /// A label for the new step.
    #[serde(default, deserialize_with = "text_without_nul")]
    pub(crate) label: Option<String>,
    /// The step to commit on (a swipe, an edit); the current step when absent.
    #[serde(default)]
    pub(crate) at: Option<StepName>,
    /// Validate and run on a copy, report, and change nothing.
    #[serde(default)]
    pub(crate) dry_run: bool,
    /// Refuse (409) unless this is the current step.
    #[serde(default)]
    pub(crate) expect_step: Option<u64>,
    /// SillyTavern macros for MVU text (`{"user": "Alex"}` replaces `<user>` and `{{user}}`).
    #[serde(default)]
    pub(crate) macros: BTreeMap<String, String>,
    /// Policies for this batch (`{"old_mismatch": "warn"}`), over the ones the reply calls for.
    #[serde(default)]
    pub(crate) policies: Option<Map<String, Json>>,
    /// Apply what succeeds and report the rest, instead of all or nothing.
    #[serde(default)]
    pub(crate) best_effort: bool,
}

/// `POST /v1/games/{id}/card`: a new version of the game's card.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CardUpdateRequest {
    /// The new version of the card, as `POST /v1/games` takes one.
    pub(crate) card: Json,
    /// SillyTavern macros for the card's InitVar text, over the ones the game keeps.
    #[serde(default)]
    pub(crate) macros: BTreeMap<String, String>,
    /// Remove the keys the new card dropped; by default they are only listed.
    #[serde(default)]
    pub(crate) remove_dropped: bool,
    /// Only say what would change.
    #[serde(default)]
    pub(crate) dry_run: bool,
    /// The step's label (default `card update`).
    #[serde(default, deserialize_with = "text_without_nul")]
    pub(crate) label: Option<String>,
    /// Refuse (409) unless this is the current step.
    #[serde(default)]
    pub(crate) expect_step: Option<u64>,
}

/// `POST /v1/games/{id}/checkout`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckoutRequest {
    /// The step to make current.
    pub(crate) to: StepName,
}

/// `POST /v1/extract`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExtractRequest {
    /// The model reply.
    pub(crate) input: String,
    /// A state, so that MVU's type-dependent commands resolve exactly.
    #[serde(default)]
    pub(crate) state: Option<Json>,
    /// SillyTavern macros for MVU text.
    #[serde(default)]
    pub(crate) macros: BTreeMap<String, String>,
}

/// A notation `POST /v1/convert` reads or writes.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Notation {
    /// MVU command text.
    Mvu,
    /// Statecraft instructions as JSON.
    Json,
    /// An RFC 6902 JSON Patch document.
    Jsonpatch,
}

/// `POST /v1/convert`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConvertRequest {
    /// The text to translate (for `json` and `jsonpatch`, JSON text or a JSON value).
    pub(crate) input: Json,
    /// What it is written in.
    pub(crate) from: Notation,
    /// What to write.
    pub(crate) to: Notation,
}

/// A language of the rules text.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Lang {
    /// English.
    #[default]
    En,
    /// Simplified Chinese.
    Zh,
}

/// `POST /v1/prompt`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PromptRequest {
    /// The state the examples and the payload come from.
    pub(crate) state: Json,
    /// The state's JSON Schema.
    #[serde(default)]
    pub(crate) schema: Option<Json>,
    /// The language of the rules text.
    #[serde(default)]
    pub(crate) lang: Lang,
    /// Lua scripts by file name, whose handlers the rules list as callbacks.
    #[serde(default)]
    pub(crate) scripts: BTreeMap<String, String>,
    /// The most tokens the state view may take, by the documented estimator.
    #[serde(default)]
    pub(crate) budget: Option<usize>,
    /// The state view's format.
    #[serde(default)]
    pub(crate) format: ViewFormat,
    /// What the prompt is for.
    #[serde(default)]
    pub(crate) mode: PromptMode,
    /// The recent chat messages, oldest first.
    #[serde(default)]
    pub(crate) messages: Vec<String>,
    /// The reply whose update a pass asks for (required for `mode: "pass"`).
    #[serde(default)]
    pub(crate) reply: Option<String>,
}

/// A format of the state view.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ViewFormat {
    /// Pretty JSON.
    #[default]
    Json,
    /// `key: value` lines.
    Compact,
}

/// What a prompt is for.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PromptMode {
    /// The rules for commands in the story reply.
    #[default]
    Reply,
    /// The rules for a separate update pass.
    Pass,
    /// The state alone.
    State,
}

/// `POST /v1/games/{id}/prompt`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GamePromptRequest {
    /// The step the generation builds on (default: the current step).
    #[serde(default)]
    pub(crate) step: Option<StepName>,
    /// The language of the rules text.
    #[serde(default)]
    pub(crate) lang: Lang,
    /// The most tokens the state view may take, by the documented estimator.
    #[serde(default)]
    pub(crate) budget: Option<usize>,
    /// The state view's format.
    #[serde(default)]
    pub(crate) format: ViewFormat,
    /// What the prompt is for.
    #[serde(default)]
    pub(crate) mode: PromptMode,
    /// The recent chat messages, oldest first.
    #[serde(default)]
    pub(crate) messages: Vec<String>,
    /// The reply whose update a pass asks for (required for `mode: "pass"`).
    #[serde(default)]
    pub(crate) reply: Option<String>,
}

/// `POST /v1/games/{id}/evaluate`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EvaluateRequest {
    /// The conditions, each evaluated on its own.
    pub(crate) conditions: Vec<String>,
    /// The step whose state they read (default: the current step).
    #[serde(default)]
    pub(crate) step: Option<StepName>,
}

/// `POST /v1/schema`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SchemaRequest {
    /// The state's JSON Schema to tailor the batch schema to.
    #[serde(default)]
    pub(crate) schema: Option<Json>,
    /// Answer a GBNF grammar instead of a JSON Schema.
    #[serde(default)]
    pub(crate) gbnf: bool,
    /// Lua scripts by file name, whose handlers the batch may call.
    #[serde(default)]
    pub(crate) scripts: BTreeMap<String, String>,
}
