//! InitVar text read as MVU reads it: YAML 1.2 (JSON being YAML), or, for text that starts like JSON,
//! strict JSON first and then the lenient JSON reader of this crate (MVU tries JSON5 and jsonrepair
//! there). This module owns turning a YAML tree into a JSON value the way MVU's `yaml` library does
//! (`toJS()`): keys become strings, merge keys (`<<`) merge, anchors are copied; it must not know
//! what a card or an entry is.

use serde_json::{Map, Number, Value as Json};
use yaml_rust2::{Yaml, YamlLoader};

/// Why a text could not be read, with the 1-based line and column where it went wrong.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ReadError {
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) message: String,
}

/// Reads one InitVar text. An empty text (or only comments) is `Ok(None)`, as MVU skips it.
pub(crate) fn read(text: &str) -> Result<Option<Json>, ReadError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        if let Ok(value) = serde_json::from_str::<Json>(text) {
            return Ok(Some(value));
        }
        // JSON with comments, trailing commas, single quotes, unquoted keys: what MVU's JSON5 and
        // jsonrepair fallbacks read. A text that is valid YAML but not JSON-like (a flow mapping with
        // plain scalars) is read as YAML below when the lenient reader leaves something unread.
        if let Some(repaired) = crate::repair::repair_json(text)
            && repaired.complete
        {
            return Ok(Some(repaired.value));
        }
    }
    let documents = YamlLoader::load_from_str(text).map_err(|error| ReadError {
        line: error.marker().line(),
        column: error.marker().col() + 1,
        message: error.info().to_owned(),
    })?;
    match documents.into_iter().next() {
        None | Some(Yaml::Null) => Ok(None),
        Some(document) => to_json(document).map(Some),
    }
}

/// A YAML node as JSON.
fn to_json(node: Yaml) -> Result<Json, ReadError> {
    Ok(match node {
        Yaml::Null => Json::Null,
        Yaml::Boolean(value) => Json::Bool(value),
        Yaml::Integer(value) => Json::from(value),
        // A float keeps its exact text (`arbitrary_precision`); `.inf` and `.nan` have no JSON form and
        // become null, as JSON.stringify writes them. An integer too large for 64 bits is read here
        // too, exactly.
        Yaml::Real(text) => real(&text),
        Yaml::String(text) => Json::String(text),
        Yaml::Array(items) => {
            Json::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?)
        }
        Yaml::Hash(hash) => {
            let mut map = Map::new();
            let mut merged = Vec::new();
            for (key, value) in hash {
                if key == Yaml::String("<<".to_owned()) {
                    merged.push(value);
                    continue;
                }
                map.insert(key_text(key)?, to_json(value)?);
            }
            // Merge keys: the mappings named by `<<` fill in what the mapping itself does not set,
            // the first one named winning over later ones.
            for source in merged {
                let sources = match source {
                    Yaml::Array(list) => list,
                    single => vec![single],
                };
                for source in sources {
                    if let Json::Object(fields) = to_json(source)? {
                        for (key, value) in fields {
                            map.entry(key).or_insert(value);
                        }
                    }
                }
            }
            Json::Object(map)
        }
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err(ReadError {
                line: 0,
                column: 0,
                message: "an alias names no anchor before it".to_owned(),
            });
        }
    })
}

fn real(text: &str) -> Json {
    let cleaned = text.replace('_', "");
    serde_json::from_str::<Number>(cleaned.trim_start_matches('+'))
        .map(Json::Number)
        .unwrap_or(Json::Null)
}

/// A mapping key as JavaScript turns it into an object key.
fn key_text(key: Yaml) -> Result<String, ReadError> {
    Ok(match key {
        Yaml::String(text) | Yaml::Real(text) => text,
        Yaml::Integer(value) => value.to_string(),
        Yaml::Boolean(value) => value.to_string(),
        Yaml::Null => "null".to_owned(),
        Yaml::Hash(_) => {
            return Err(ReadError {
                line: 0,
                column: 0,
                message: "a mapping key is itself a mapping: `{{name}}` left in a key is YAML for \
                          a mapping, so a macro the card uses (`{{char}}`, `{{user}}`) needs a value"
                    .to_owned(),
            });
        }
        _ => {
            return Err(ReadError {
                line: 0,
                column: 0,
                message: "a mapping key must be text or a number, not a list".to_owned(),
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_yaml_with_anchors_merge_keys_and_numbers() {
        let text = "base: &base\n  hp: 100\n  mp: 5\nhero:\n  <<: *base\n  mp: 9\n  tags: [a, 'b c']\n  ratio: 0.5\n  big: 123456789012345678901234567890\n1: one\n";
        let value = read(text).unwrap().unwrap();
        assert_eq!(
            value["hero"],
            json!({"hp": 100, "mp": 9, "tags": ["a", "b c"], "ratio": 0.5, "big": 123456789012345678901234567890u128})
        );
        assert_eq!(value["1"], "one");
    }

    #[test]
    fn json_and_lenient_json() {
        assert_eq!(read("{\"a\": [1, 2]}").unwrap(), Some(json!({"a": [1, 2]})));
        assert_eq!(
            read("{a: 1, // note\n 'b': [1, 2,],}").unwrap(),
            Some(json!({"a": 1, "b": [1, 2]}))
        );
        assert_eq!(read("# nothing\n").unwrap(), None);
    }

    #[test]
    fn errors_name_line_and_column() {
        let error = read("a: 1\nb: [1, 2\nc: 3\n").unwrap_err();
        assert!(error.line >= 2, "{error:?}");
    }
}
