//! Character cards in: the initial state and automatic schema of an MVU card, built as MVU builds them.
//!
//! A card is a SillyTavern character card (a PNG whose `ccv3` or `chara` text chunk holds the card's
//! JSON in base64, or that JSON itself, spec V1, V2 or V3, with its world book in
//! `data.character_book.entries`), a world book export (JSON with `entries`), or InitVar text itself
//! (YAML or JSON). [`read`] finds the world book's entries whose name or comment contains `[InitVar]`
//! (in any case), takes each one's text out of an `<initvar>` block or a code fence when it has one,
//! substitutes SillyTavern macros (`<user>`, `{{user}}`, `{{char}}`, and any `{{name}}` the caller
//! passes), reads it as YAML (or JSON), and merges the entries in the world book's order the way MVU
//! does (objects deep, arrays replaced whole); then MVU's structure markers leave the state and become
//! the automatic schema (`schema.rs`). A character card that carries statecraft's own settings
//! (`data.extensions.statecraft` with a `state`, as the SillyTavern extension stores them) gives that
//! state, JSON Schema, scripts and profile instead, before its `[InitVar]` entries. Every card has a
//! fingerprint, the SHA-256 of what its state is made from (its InitVar entries' text, or its
//! settings), by which a game notices that its card changed. Bad input is an error naming the entry
//! and the line, never a panic.
//!
//! This module must not run instructions, enforce the schema or touch files: it turns bytes into a
//! state and a schema.

mod png;
mod schema;
mod yaml;

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value as Json};
use statecraft_engine::{CardVersion, ContentKey, Profile, SchemaError, StructureSchema};

#[doc(hidden)]
pub use png::png_with_text;

/// What a card gives a game.
#[derive(Clone, Debug, PartialEq)]
pub struct Card {
    /// The character's name, when the input is a character card.
    pub name: Option<String>,
    /// The initial state: MVU's `stat_data` after its InitVar entries are merged and its markers
    /// removed, or the state of the card's statecraft settings.
    pub state: Json,
    /// MVU's automatic schema for that state, in MVU's own shape (`type`, `extensible`,
    /// `recursiveExtensible`, `required`, `properties`, `elementType`, `template`, and at the top
    /// `strictTemplate`, `concatTemplateArray`, `strictSet` when the card sets them); `None` for a
    /// card whose statecraft settings give its state (they are statecraft's, not MVU's).
    pub schema: Option<Json>,
    /// The names of the InitVar entries read, in the order they were merged (none for settings).
    pub entries: Vec<String>,
    /// The SHA-256 (64 lowercase hex digits) of what the state is made from: the JSON array of the
    /// InitVar entries' texts as written (before macros), in the order merged, or the JSON text of
    /// the card's statecraft settings. A game keeps it to notice that its card changed.
    pub fingerprint: String,
    /// The profile the card's replies follow: its settings' `profile`, else `mvu` for InitVar and
    /// `strict` for settings.
    pub profile: Profile,
    /// The JSON Schema of the card's statecraft settings.
    pub json_schema: Option<Json>,
    /// The Lua scripts of the card's statecraft settings, by file name.
    pub scripts: BTreeMap<String, String>,
}

impl Card {
    /// The version of the card a game holds: its automatic schema, compiled, and its fingerprint.
    pub fn version(&self) -> Result<CardVersion, SchemaError> {
        Ok(CardVersion {
            structure: self.schema.clone().map(StructureSchema::new).transpose()?,
            fingerprint: Some(self.fingerprint.clone()),
        })
    }

    /// The macros a game made from this card keeps: `given`, with `char` the card's name unless
    /// given, so that `{{char}}` in a reply's commands reads as it did in the card.
    pub fn game_macros(&self, given: &Macros) -> Macros {
        let mut macros = given.clone();
        if let Some(name) = &self.name
            && !macros.keys().any(|key| key.eq_ignore_ascii_case("char"))
        {
            macros.insert("char".to_owned(), name.clone());
        }
        macros
    }
}

/// Why a card could not be read: what, and where.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum CardError {
    /// The PNG file is damaged or cut off.
    #[error("the PNG file is damaged at byte {offset}: {problem}")]
    Png {
        /// The byte where the damaged chunk starts.
        offset: usize,
        /// What is wrong.
        problem: String,
    },
    /// A PNG without a card in it.
    #[error(
        "the PNG file holds no character card: it has no text chunk named ccv3 or chara (an image \
         saved without its card, or not a SillyTavern card)"
    )]
    NoCardChunk,
    /// The card chunk is not base64 of UTF-8 JSON.
    #[error("the {chunk} chunk of the PNG file is not a card: {problem}")]
    BadChunk {
        /// `ccv3` or `chara`.
        chunk: String,
        /// What is wrong.
        problem: String,
    },
    /// The text is not UTF-8.
    #[error("the card is not UTF-8 text: the first bad byte is at byte {offset}")]
    NotUtf8 {
        /// Where.
        offset: usize,
    },
    /// The card's JSON could not be read.
    #[error("the card's JSON is not valid at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// Why.
        message: String,
    },
    /// A PNG card sent as base64 that is not base64.
    #[error("the card's \"png\" is not base64: {problem}")]
    Base64 {
        /// What is wrong.
        problem: String,
    },
    /// JSON that is no card: neither an object nor InitVar text.
    #[error(
        "a card is a character card's JSON, a world book's JSON, {{\"png\": BASE64}}, InitVar text \
         or InitVar JSON (an object), not {found}"
    )]
    NotACard {
        /// What was given instead.
        found: &'static str,
    },
    /// The card's world book has no InitVar entry.
    #[error(
        "the card has {entries} world book entries and none is an InitVar entry: MVU builds the \
         initial state from the entries whose name or comment contains [InitVar]"
    )]
    NoInitVar {
        /// How many entries there are.
        entries: usize,
    },
    /// The card's statecraft settings (`data.extensions.statecraft`) are not what the extension
    /// stores.
    #[error("the card's statecraft settings (data.extensions.statecraft): {problem}")]
    Settings {
        /// What is wrong.
        problem: String,
    },
    /// An InitVar entry could not be read.
    #[error("InitVar entry \"{entry}\", line {line}, column {column}: {message}")]
    Entry {
        /// The entry's name (its comment).
        entry: String,
        /// 1-based line in the entry's text (after an `<initvar>` block or fence is taken out).
        line: usize,
        /// 1-based column.
        column: usize,
        /// Why.
        message: String,
    },
}

/// SillyTavern macros by name (`user`, `char`, ...), substituted into InitVar text before it is read.
pub type Macros = BTreeMap<String, String>;

/// Reads a card (PNG, card JSON, world book JSON or InitVar text) into its initial state and schema.
/// `{{char}}` defaults to the card's name when `macros` does not set it.
/// Time: O(n) in the size of the input.
pub fn read(bytes: &[u8], macros: &Macros) -> Result<Card, CardError> {
    if png::is_png(bytes) {
        let chunks = png::text_chunks(bytes)?;
        // A V3 card also carries its V2 form for older readers; V3 is the newer and preferred.
        let chunk = ["ccv3", "chara"]
            .iter()
            .find_map(|name| chunks.iter().find(|chunk| chunk.keyword == *name))
            .ok_or(CardError::NoCardChunk)?;
        let bad = |problem: String| CardError::BadChunk {
            chunk: chunk.keyword.clone(),
            problem,
        };
        let compact: String = chunk.text.split_ascii_whitespace().collect();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(compact.as_bytes())
            .map_err(|error| bad(format!("its text is not base64 ({error})")))?;
        let text = String::from_utf8(decoded).map_err(|error| {
            bad(format!(
                "its base64 is not UTF-8 (byte {})",
                error.utf8_error().valid_up_to()
            ))
        })?;
        let json = serde_json::from_str(&text)
            .map_err(|error| bad(format!("its text is not JSON ({error})")))?;
        return from_json(json, macros);
    }
    let text = std::str::from_utf8(bytes).map_err(|error| CardError::NotUtf8 {
        offset: error.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match serde_json::from_str::<Json>(text) {
        Ok(json @ Json::Object(_)) if is_card(&json) || json.get("entries").is_some() => {
            from_json(json, macros)
        }
        // Anything else is InitVar text itself: YAML, JSON, or a JSON object that is a state.
        _ => {
            let entry = Entry {
                name: "InitVar text".to_owned(),
                content: text.to_owned(),
            };
            build(None, vec![entry], 1, macros)
        }
    }
}

/// Reads a card given as JSON, as an HTTP request carries one: the card's (or world book's) JSON
/// itself, `{"png": BASE64}` for a PNG card's bytes, a string of InitVar text, or any other object
/// as InitVar JSON.
/// Time: O(n) in the size of the card.
pub fn read_value(value: &Json, macros: &Macros) -> Result<Card, CardError> {
    match value {
        Json::Object(fields) if fields.len() == 1 && fields.contains_key("png") => {
            let Some(Json::String(text)) = fields.get("png") else {
                return Err(CardError::Base64 {
                    problem: "\"png\" must be a string of base64".to_owned(),
                });
            };
            let compact: String = text.split_ascii_whitespace().collect();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(compact.as_bytes())
                .map_err(|error| CardError::Base64 {
                    problem: error.to_string(),
                })?;
            read(&bytes, macros)
        }
        Json::String(text) => read(text.as_bytes(), macros),
        Json::Object(_) if is_card(value) || value.get("entries").is_some() => {
            from_json(value.clone(), macros)
        }
        // Any other object is InitVar JSON, as `read` takes it: the state with its markers.
        Json::Object(_) => read(value.to_string().as_bytes(), macros),
        other => Err(CardError::NotACard { found: kind(other) }),
    }
}

/// One world book entry: its name (the comment) and its text.
struct Entry {
    name: String,
    content: String,
}

fn is_card(json: &Json) -> bool {
    json.get("spec").is_some() || json.get("data").is_some_and(Json::is_object)
}

fn from_json(json: Json, macros: &Macros) -> Result<Card, CardError> {
    let settings = statecraft_settings(&json);
    if let Some(settings) = settings.filter(|settings| settings.get("state").is_some()) {
        return from_settings(&json, settings);
    }
    let profile = match settings.map(|settings| settings_profile(settings, Profile::Mvu)) {
        Some(profile) => profile?,
        None => Profile::Mvu,
    };
    let (name, book) = if is_card(&json) {
        let data = json
            .get("data")
            .filter(|data| data.is_object())
            .unwrap_or(&json);
        let name = data
            .get("name")
            .or_else(|| json.get("name"))
            .and_then(Json::as_str)
            .map(str::to_owned);
        (
            name,
            data.get("character_book").cloned().unwrap_or(Json::Null),
        )
    } else {
        (None, json)
    };
    let all = book_entries(&book);
    let count = all.len();
    // MVU reads every entry named [InitVar], enabled or not: cards often disable these entries so
    // that they stay out of the prompt, and MVU still builds the state from them.
    let chosen: Vec<Entry> = all
        .into_iter()
        .filter(|entry| entry.name.to_lowercase().contains("[initvar]"))
        .collect();
    let mut card = build(name, chosen, count, macros)?;
    card.profile = profile;
    Ok(card)
}

/// A character card's statecraft settings: `data.extensions.statecraft`, when it is an object.
fn statecraft_settings(json: &Json) -> Option<&Map<String, Json>> {
    if !is_card(json) {
        return None;
    }
    json.get("data")?
        .get("extensions")?
        .get("statecraft")?
        .as_object()
}

/// The profile the settings name, or `default`.
fn settings_profile(settings: &Map<String, Json>, default: Profile) -> Result<Profile, CardError> {
    match settings.get("profile") {
        None | Some(Json::Null) => Ok(default),
        Some(Json::String(name)) if name.is_empty() => Ok(default),
        Some(Json::String(name)) => name.parse().map_err(|error| CardError::Settings {
            problem: format!("`profile`: {error}"),
        }),
        Some(other) => Err(CardError::Settings {
            problem: format!(
                "`profile` is a name (strict, mvu or mvu-zod), not {}",
                kind(other)
            ),
        }),
    }
}

/// A card made from its statecraft settings (`{"state", "schema"?, "scripts"?, "profile"?}`), read
/// as the extension makes a chat's game of them: the state as it is, no automatic schema.
fn from_settings(json: &Json, settings: &Map<String, Json>) -> Result<Card, CardError> {
    let bad = |problem: String| CardError::Settings { problem };
    if let Some(name) = settings
        .keys()
        .find(|name| !["state", "schema", "scripts", "profile"].contains(&name.as_str()))
    {
        return Err(bad(format!(
            "unknown member `{name}` (state, schema, scripts, profile)"
        )));
    }
    let json_schema = match settings.get("schema") {
        None | Some(Json::Null) => None,
        Some(schema @ (Json::Object(_) | Json::Bool(_))) => Some(schema.clone()),
        Some(other) => {
            return Err(bad(format!(
                "`schema` is a JSON Schema (an object), not {}",
                kind(other)
            )));
        }
    };
    let scripts = match settings.get("scripts") {
        None | Some(Json::Null) => BTreeMap::new(),
        Some(Json::Object(files)) => files
            .iter()
            .map(|(name, source)| match source {
                Json::String(source) => Ok((name.clone(), source.clone())),
                other => Err(bad(format!(
                    "`scripts` maps file names to Lua source; \"{name}\" is {}",
                    kind(other)
                ))),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(bad(format!(
                "`scripts` is an object of file names to Lua source, not {}",
                kind(other)
            )));
        }
    };
    let name = json
        .get("data")
        .and_then(|data| data.get("name"))
        .or_else(|| json.get("name"))
        .and_then(Json::as_str)
        .map(str::to_owned);
    Ok(Card {
        name,
        state: settings.get("state").cloned().unwrap_or(Json::Null),
        schema: None,
        entries: Vec::new(),
        fingerprint: ContentKey::of_text(&Json::Object(settings.clone()).to_string()).to_string(),
        profile: settings_profile(settings, Profile::Strict)?,
        json_schema,
        scripts,
    })
}

/// The entries of a world book in SillyTavern's order: a card's `character_book.entries` is a list
/// (kept in order); an exported world book's `entries` is an object keyed by uid, which JavaScript
/// walks in ascending order of the integer keys.
fn book_entries(book: &Json) -> Vec<Entry> {
    let entry = |value: &Json| {
        let text = |key: &str| value.get(key).and_then(Json::as_str).unwrap_or_default();
        // V2/V3 card entries carry `comment` and sometimes `name`; either may hold the marker.
        let name = match (text("comment"), text("name")) {
            (comment, name) if comment.to_lowercase().contains("[initvar]") || name.is_empty() => {
                comment.to_owned()
            }
            (_, name) => name.to_owned(),
        };
        Entry {
            name,
            content: text("content").to_owned(),
        }
    };
    match book.get("entries") {
        Some(Json::Array(list)) => list.iter().map(entry).collect(),
        Some(Json::Object(map)) => {
            let mut keyed: Vec<(&String, &Json)> = map.iter().collect();
            keyed.sort_by_key(|(key, _)| match key.parse::<u32>() {
                Ok(index) if index.to_string() == **key => (0, index, String::new()),
                _ => (1, 0, (*key).clone()),
            });
            keyed.into_iter().map(|(_, value)| entry(value)).collect()
        }
        _ => Vec::new(),
    }
}

fn build(
    name: Option<String>,
    entries: Vec<Entry>,
    count: usize,
    macros: &Macros,
) -> Result<Card, CardError> {
    if entries.is_empty() {
        return Err(CardError::NoInitVar { entries: count });
    }
    let mut state = Json::Object(Map::new());
    let mut names = Vec::new();
    let texts: Vec<&str> = entries.iter().map(|entry| entry.content.as_str()).collect();
    let fingerprint = ContentKey::of_text(&Json::from(texts).to_string()).to_string();
    for entry in entries {
        let body = substitute(initvar_body(&entry.content), macros, name.as_deref());
        let read = yaml::read(&body).map_err(|error| CardError::Entry {
            entry: entry.name.clone(),
            line: error.line.max(1),
            column: error.column.max(1),
            message: error.message,
        })?;
        match read {
            None => {}
            Some(value @ Json::Object(_)) => merge(&mut state, value),
            Some(other) => {
                return Err(CardError::Entry {
                    entry: entry.name,
                    line: 1,
                    column: 1,
                    message: format!(
                        "an InitVar entry holds a mapping of names to values, not {}",
                        kind(&other)
                    ),
                });
            }
        }
        names.push(entry.name);
    }
    let schema = schema::generate_and_clean(&mut state);
    Ok(Card {
        name,
        state,
        schema: Some(schema),
        entries: names,
        fingerprint,
        profile: Profile::Mvu,
        json_schema: None,
        scripts: BTreeMap::new(),
    })
}

fn kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "a mapping",
    }
}

/// The text MVU reads from an entry: the lines between the first `<initvar>` line and the last
/// `</initvar>` line when there are such, then the inside of a code fence when there is one.
fn initvar_body(content: &str) -> &str {
    let mut body = content.trim();
    if let (Some(open), Some(close)) = (body.find("<initvar>"), body.rfind("</initvar>")) {
        let inner_start = body[open..].find('\n').map(|at| open + at + 1);
        let inner_end = body[..close].rfind('\n');
        if let (Some(start), Some(end)) = (inner_start, inner_end)
            && start <= end
        {
            body = &body[start..end];
        }
    }
    let body = body.trim();
    if let Some(fence) = body.find("```") {
        let after_line = body[fence..].find('\n').map(|at| fence + at + 1);
        let closing = body.rfind("\n```");
        if let (Some(start), Some(end)) = (after_line, closing)
            && start <= end
        {
            return &body[start..end];
        }
    }
    body
}

/// SillyTavern's macros in InitVar text: `{{name}}` for every name in `macros` (any case), `{{char}}`
/// falling back to the card's name, and the old forms `<user>`, `<char>` and `<bot>` (any case).
/// Unknown macros are left as they are.
fn substitute(text: &str, macros: &Macros, card_name: Option<&str>) -> String {
    let lookup = |name: &str| -> Option<&str> {
        let name = name.trim().to_lowercase();
        let name = if name == "bot" {
            "char".to_owned()
        } else {
            name
        };
        macros
            .iter()
            .find(|(key, _)| key.to_lowercase() == name)
            .map(|(_, value)| value.as_str())
            .or_else(|| (name == "char").then_some(card_name).flatten())
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['{', '<']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let (open, close) = if tail.starts_with("{{") {
            ("{{", "}}")
        } else {
            ("<", ">")
        };
        let replaced = tail.strip_prefix(open).and_then(|inside| {
            let end = inside.find(close)?;
            let name = &inside[..end];
            let old_form = open == "<";
            if old_form && !["user", "char", "bot"].contains(&name.to_lowercase().as_str()) {
                return None;
            }
            Some((lookup(name)?, open.len() + end + close.len()))
        });
        match replaced {
            Some((value, used)) => {
                out.push_str(value);
                rest = &tail[used..];
            }
            None => {
                out.push_str(&tail[..1]);
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// MVU's `correctlyMerge` (lodash `mergeWith` that replaces arrays): objects merge key by key, a list
/// replaces what was there, anything else overwrites.
fn merge(target: &mut Json, source: Json) {
    match (target, source) {
        (Json::Object(into), Json::Object(from)) => {
            for (key, value) in from {
                match into.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (target, source) => *target = source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bodies_come_out_of_blocks_and_fences() {
        assert_eq!(initvar_body("  ```yaml\na: 1\n```  "), "a: 1");
        assert_eq!(
            initvar_body("note <initvar>\n```\na: 1\n```\n</initvar> end"),
            "a: 1"
        );
        assert_eq!(initvar_body("a: 1"), "a: 1");
    }

    #[test]
    fn macros_are_substituted_and_unknown_ones_kept() {
        let macros = Macros::from([("user".to_owned(), "Ann".to_owned())]);
        assert_eq!(
            substitute(
                "<user> meets {{char}} and {{User}}; <b> {{other}}",
                &macros,
                Some("Bo")
            ),
            "Ann meets Bo and Ann; <b> {{other}}"
        );
    }

    #[test]
    fn cards_in_json_requests_are_read_in_every_form() {
        let card = json!({"spec": "chara_card_v2", "data": {"name": "Mo", "character_book": {"entries": [
            {"comment": "[InitVar]", "content": "{{char}}: {hp: 1}"}
        ]}}});
        let macros = Macros::new();
        let from_json = read_value(&card, &macros).unwrap();
        assert_eq!(from_json.state, json!({"Mo": {"hp": 1}}));
        let encoded = base64::engine::general_purpose::STANDARD.encode(card.to_string());
        let png = png_with_text(&[("chara", &encoded)]);
        let png = json!({"png": base64::engine::general_purpose::STANDARD.encode(png)});
        assert_eq!(read_value(&png, &macros).unwrap(), from_json);
        assert_eq!(
            read_value(&json!("a: 1"), &macros).unwrap().state,
            json!({"a": 1})
        );
        let initvar = json!({"bag": ["rope", "$__META_EXTENSIBLE__$"]});
        let read = read_value(&initvar, &macros).unwrap();
        assert_eq!(read.state, json!({"bag": ["rope"]}));
        assert_eq!(
            read.schema.as_ref().unwrap()["properties"]["bag"]["extensible"],
            true
        );
        assert!(matches!(
            read_value(&json!({"png": "%%%"}), &macros),
            Err(CardError::Base64 { .. })
        ));
        assert!(matches!(
            read_value(&json!([1]), &macros),
            Err(CardError::NotACard { .. })
        ));
    }

    #[test]
    fn merging_replaces_lists_and_deepens_objects() {
        let mut state = json!({"a": {"x": 1, "list": [1, 2, 3]}, "b": 1});
        merge(&mut state, json!({"a": {"y": 2, "list": [9]}, "b": null}));
        assert_eq!(
            state,
            json!({"a": {"x": 1, "y": 2, "list": [9]}, "b": null})
        );
    }
}

#[cfg(test)]
mod settings_tests {
    use super::*;
    use serde_json::json;

    fn card(extensions: Json, entries: Json) -> Json {
        json!({"spec": "chara_card_v2", "data": {"name": "Mo", "extensions": extensions,
               "character_book": {"entries": entries}}})
    }

    #[test]
    fn settings_with_a_state_come_before_initvar() {
        let initvar = json!([{"comment": "[InitVar]", "content": "hp: 1"}]);
        let settings = json!({"statecraft": {"state": {"gold": 3}, "schema": {"type": "object"},
                               "scripts": {"a.lua": "on('x', function() end)"}, "profile": "mvu"}});
        let read = read_value(&card(settings, initvar.clone()), &Macros::new()).unwrap();
        assert_eq!(read.state, json!({"gold": 3}));
        assert_eq!(read.schema, None);
        assert_eq!(read.json_schema, Some(json!({"type": "object"})));
        assert_eq!(read.scripts.len(), 1);
        assert_eq!(read.profile, Profile::Mvu);
        assert!(read.entries.is_empty());
        // Settings without a state name only the profile of the InitVar card.
        let zod = read_value(
            &card(
                json!({"statecraft": {"profile": "mvu-zod"}}),
                initvar.clone(),
            ),
            &Macros::new(),
        )
        .unwrap();
        assert_eq!(
            (zod.state, zod.profile),
            (json!({"hp": 1}), Profile::MvuZod)
        );
        // Settings alone make a card: no [InitVar] entry needed; strict unless they say otherwise.
        let alone = read_value(
            &card(json!({"statecraft": {"state": {"a": 1}}}), json!([])),
            &Macros::new(),
        )
        .unwrap();
        assert_eq!(alone.profile, Profile::Strict);
        assert!(matches!(
            read_value(
                &card(
                    json!({"statecraft": {"state": {}, "scripts": {"a.lua": 1}}}),
                    json!([])
                ),
                &Macros::new()
            ),
            Err(CardError::Settings { .. })
        ));
    }

    #[test]
    fn the_fingerprint_follows_the_initvar_text_not_the_macros() {
        let entries = |hp: &str| json!([{"comment": "[InitVar]", "content": format!("<user>: {{hp: {hp}}}")}]);
        let macros = |name: &str| Macros::from([("user".to_owned(), name.to_owned())]);
        let a = read_value(&card(json!({}), entries("1")), &macros("Ann")).unwrap();
        let b = read_value(&card(json!({}), entries("1")), &macros("Bo")).unwrap();
        let c = read_value(&card(json!({}), entries("2")), &macros("Ann")).unwrap();
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_ne!(a.fingerprint, c.fingerprint);
        assert_eq!(a.fingerprint.len(), 64);
    }
}
