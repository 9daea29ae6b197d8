//! A handler's description of itself: the optional third argument of `on(name, fn, description)`.
//!
//! ```lua
//! on("gain_xp", gain_xp, {
//!   doc = "grant experience points; every 100 is a level",
//!   args = { { name = "amount", type = "integer", minimum = 0, doc = "points gained" } },
//! })
//! ```
//!
//! This module owns reading that table into the engine's [`CallbackSignature`], which the prompt kit
//! turns into rules text, a schema and a grammar. The table is data, never run: only the keys below
//! are read, each is checked, and anything else is refused with the place and the reason, so that a
//! typo does not silently drop a constraint. A description has `doc` (a string) and `args` (a list);
//! an argument has `name` (required), `doc`, `type` (`string`, `integer`, `number`, `boolean`,
//! `array`, `object` or `any`), `minimum` and `maximum` (numbers, for numeric types), `enum` (a list of
//! strings, numbers and booleans) and `optional` (a boolean; optional arguments come last). It must
//! not register anything itself.

use mlua::Value as LuaValue;
use serde_json::{Map, Number, Value as Json};
use statecraft_engine::{CallbackArg, CallbackSignature};

use crate::convert::type_name;

/// The most arguments a description may list.
const MAX_ARGS: usize = 32;

/// The longest `doc` text, in bytes: descriptions go into every prompt.
const MAX_DOC_BYTES: usize = 1000;

/// The argument types a description may name.
const TYPES: [&str; 7] = [
    "string", "integer", "number", "boolean", "array", "object", "any",
];

/// Reads the description given to `on(name, fn, description)`; `None` means no description.
pub(crate) fn signature(name: &str, description: LuaValue) -> Result<CallbackSignature, String> {
    let table = match description {
        LuaValue::Nil => {
            return Ok(CallbackSignature {
                name: name.to_owned(),
                doc: None,
                args: None,
            });
        }
        LuaValue::Table(table) => table,
        other => {
            return Err(format!(
                "the description must be a table, not a {}",
                type_name(&other)
            ));
        }
    };
    let mut doc = None;
    let mut args = None;
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let (key, value) = pair.map_err(|e| e.to_string())?;
        match key_text(&key).as_deref() {
            Some("doc") => doc = Some(text(value, "doc")?),
            Some("args") => args = Some(arguments(value)?),
            _ => {
                return Err(format!(
                    "unknown key {} (a description has doc and args)",
                    shown(&key)
                ));
            }
        }
    }
    Ok(CallbackSignature {
        name: name.to_owned(),
        doc,
        args,
    })
}

/// `args`: a list of argument tables, optional ones last, names unique.
fn arguments(value: LuaValue) -> Result<Vec<CallbackArg>, String> {
    let LuaValue::Table(list) = value else {
        return Err(format!(
            "args must be a list of tables, not a {}",
            type_name(&value)
        ));
    };
    let length = list.raw_len();
    if length > MAX_ARGS {
        return Err(format!("args lists {length} arguments; at most {MAX_ARGS}"));
    }
    if list.pairs::<LuaValue, LuaValue>().count() != length {
        return Err("args must be a list (keys 1, 2, 3, ...)".to_owned());
    }
    let mut out: Vec<CallbackArg> = Vec::with_capacity(length);
    for index in 1..=length {
        let item: LuaValue = list.raw_get(index).map_err(|e| e.to_string())?;
        let arg = argument(item).map_err(|reason| format!("args[{index}]: {reason}"))?;
        if out.iter().any(|earlier| earlier.name == arg.name) {
            return Err(format!(
                "args[{index}]: the name \"{}\" is used twice",
                arg.name
            ));
        }
        if !arg.optional && out.last().is_some_and(|earlier| earlier.optional) {
            return Err(format!(
                "args[{index}]: \"{}\" is required but follows an optional argument",
                arg.name
            ));
        }
        out.push(arg);
    }
    Ok(out)
}

/// One argument table.
fn argument(value: LuaValue) -> Result<CallbackArg, String> {
    let LuaValue::Table(table) = value else {
        return Err(format!("must be a table, not a {}", type_name(&value)));
    };
    let mut name = None;
    let mut doc = None;
    let mut kind = "any".to_owned();
    let mut optional = false;
    let mut bounds = Map::new();
    let mut choices = None;
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let (key, value) = pair.map_err(|e| e.to_string())?;
        match key_text(&key).as_deref() {
            Some("name") => name = Some(text(value, "name")?),
            Some("doc") => doc = Some(text(value, "doc")?),
            Some("type") => {
                kind = text(value, "type")?;
                if !TYPES.contains(&kind.as_str()) {
                    return Err(format!(
                        "type \"{kind}\" is not one of {}",
                        TYPES.join(", ")
                    ));
                }
            }
            Some(bound @ ("minimum" | "maximum")) => {
                let number = match value {
                    LuaValue::Integer(n) => Number::from(n),
                    LuaValue::Number(n) => Number::from_f64(n)
                        .ok_or_else(|| format!("{bound} must be a finite number"))?,
                    other => {
                        return Err(format!(
                            "{bound} must be a number, not a {}",
                            type_name(&other)
                        ));
                    }
                };
                bounds.insert(bound.to_owned(), Json::Number(number));
            }
            Some("enum") => choices = Some(enum_values(value)?),
            Some("optional") => match value {
                LuaValue::Boolean(flag) => optional = flag,
                other => {
                    return Err(format!(
                        "optional must be true or false, not a {}",
                        type_name(&other)
                    ));
                }
            },
            _ => {
                return Err(format!(
                    "unknown key {} (an argument has name, doc, type, minimum, maximum, enum and optional)",
                    shown(&key)
                ));
            }
        }
    }
    let name = name.ok_or("has no name")?;
    if name.is_empty() {
        return Err("has an empty name".to_owned());
    }
    if !bounds.is_empty() && !matches!(kind.as_str(), "integer" | "number") {
        return Err(format!(
            "\"{name}\": minimum and maximum need type integer or number, not {kind}"
        ));
    }
    let mut schema = Map::new();
    if kind != "any" {
        schema.insert("type".to_owned(), Json::String(kind));
    }
    schema.extend(bounds);
    if let Some(choices) = choices {
        schema.insert("enum".to_owned(), Json::Array(choices));
    }
    Ok(CallbackArg {
        name,
        doc,
        schema: Json::Object(schema),
        optional,
    })
}

/// `enum`: a non-empty list of strings, numbers and booleans.
fn enum_values(value: LuaValue) -> Result<Vec<Json>, String> {
    let LuaValue::Table(list) = value else {
        return Err(format!("enum must be a list, not a {}", type_name(&value)));
    };
    let length = list.raw_len();
    if length == 0 || list.pairs::<LuaValue, LuaValue>().count() != length {
        return Err("enum must be a non-empty list (keys 1, 2, 3, ...)".to_owned());
    }
    (1..=length)
        .map(|index| {
            let item: LuaValue = list.raw_get(index).map_err(|e| e.to_string())?;
            match item {
                LuaValue::String(s) => s
                    .to_str()
                    .map(|s| Json::String(s.to_owned()))
                    .map_err(|_| format!("enum[{index}] is not valid utf-8")),
                LuaValue::Integer(n) => Ok(Json::from(n)),
                LuaValue::Number(n) => Number::from_f64(n)
                    .map(Json::Number)
                    .ok_or_else(|| format!("enum[{index}] must be a finite number")),
                LuaValue::Boolean(flag) => Ok(Json::Bool(flag)),
                other => Err(format!(
                    "enum[{index}] must be a string, number or boolean, not a {}",
                    type_name(&other)
                )),
            }
        })
        .collect()
}

/// A string member of a description, at most [`MAX_DOC_BYTES`] long.
fn text(value: LuaValue, key: &str) -> Result<String, String> {
    let LuaValue::String(text) = value else {
        return Err(format!(
            "{key} must be a string, not a {}",
            type_name(&value)
        ));
    };
    let text = text
        .to_str()
        .map_err(|_| format!("{key} is not valid utf-8"))?
        .to_owned();
    if text.len() > MAX_DOC_BYTES {
        return Err(format!(
            "{key} is {} bytes long; at most {MAX_DOC_BYTES}",
            text.len()
        ));
    }
    Ok(text)
}

fn key_text(key: &LuaValue) -> Option<String> {
    match key {
        LuaValue::String(text) => text.to_str().ok().map(|s| s.to_owned()),
        _ => None,
    }
}

/// A key as a message shows it.
fn shown(key: &LuaValue) -> String {
    match key {
        LuaValue::String(text) => format!("\"{}\"", text.to_string_lossy()),
        LuaValue::Integer(n) => format!("[{n}]"),
        other => format!("of type {}", type_name(other)),
    }
}

/// Reads a description written as Lua source, for the tests below.
#[cfg(test)]
fn read(source: &str) -> Result<CallbackSignature, String> {
    let lua = mlua::Lua::new();
    let value: LuaValue = lua.load(source).eval().map_err(|e| e.to_string())?;
    signature("test", value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_full_description() {
        let signature = read(
            r#"{ doc = "buy from the shop", args = {
                { name = "item", type = "string", enum = { "rope", "lamp" } },
                { name = "count", type = "integer", minimum = 1, maximum = 9, optional = true, doc = "how many" },
            } }"#,
        )
        .unwrap();
        assert_eq!(signature.doc.as_deref(), Some("buy from the shop"));
        let args = signature.args.unwrap();
        assert_eq!(
            args[0].schema,
            json!({"type": "string", "enum": ["rope", "lamp"]})
        );
        assert_eq!(
            args[1].schema,
            json!({"type": "integer", "minimum": 1, "maximum": 9})
        );
        assert!(args[1].optional && !args[0].optional);
    }

    #[test]
    fn mistakes_are_refused_with_the_place() {
        for (source, expected) in [
            (r#"{ dok = "x" }"#, "unknown key \"dok\""),
            (
                r#"{ args = { { name = "a", typ = "integer" } } }"#,
                "args[1]: unknown key \"typ\"",
            ),
            (
                r#"{ args = { { name = "a", type = "int" } } }"#,
                "args[1]: type \"int\" is not one of",
            ),
            (r#"{ args = { { doc = "x" } } }"#, "args[1]: has no name"),
            (
                r#"{ args = { { name = "a" }, { name = "a" } } }"#,
                "args[2]: the name \"a\" is used twice",
            ),
            (
                r#"{ args = { { name = "a", optional = true }, { name = "b" } } }"#,
                "follows an optional",
            ),
            (
                r#"{ args = { { name = "a", type = "string", minimum = 1 } } }"#,
                "need type integer or number",
            ),
            (
                r#"{ args = { { name = "a", enum = {} } } }"#,
                "non-empty list",
            ),
            (r#"{ args = { x = 1 } }"#, "args must be a list"),
            ("42", "must be a table"),
        ] {
            let error = read(source).unwrap_err();
            assert!(error.contains(expected), "{source}: {error}");
        }
    }

    #[test]
    fn no_description_is_no_arguments_known() {
        let lua = mlua::Lua::new();
        let signature = signature("x", LuaValue::Nil).unwrap();
        drop(lua);
        assert_eq!(signature.args, None);
        assert_eq!(signature.doc, None);
    }
}
