//! The tailored JSON Schema (draft 2020-12) for one instruction batch, written from an
//! [`InstructionSpec`].
//!
//! This module owns the JSON Schema spelling of the language: every shape becomes a `$defs` entry named
//! `s<id>`, every (target, op group) pair one `anyOf` branch of the instruction schema. It must not
//! decide what the language is ([`crate::spec`] does), so the grammar written from the same
//! spec cannot say something else. Three rules keep real decoders able to read the document: no
//! subschema is a bare `true` or `false` (`{}` and `maxItems` say the same; `additionalProperties:
//! false` stays, as every decoder reads it); a list with optional trailing positions (a callback's
//! arguments) is one fixed-length `prefixItems` list per allowed length, since some decoders require
//! every `prefixItems` entry; and the written text lists an instruction's members as
//! `op`, `path`, `value`, `old`, `reason`, because decoders that follow a schema's member order (xgrammar,
//! Outlines) would otherwise make a model write `old` first. `serde_json` sorts map keys, so
//! [`BatchSchema`] writes its text itself rather than leaving the order to the map.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value as Json, json};

use statecraft_engine::Op;

use crate::spec::{InstructionSpec, SegmentPattern, Shape, ShapeId, Target};

/// An instruction's members in the order the language writes them.
const MEMBER_ORDER: [&str; 5] = ["op", "path", "value", "old", "reason"];

/// The tailored JSON Schema of one batch.
///
/// [`BatchSchema::json`] is the document for validators (member order does not matter to them).
/// Serialising it (`serde_json::to_string_pretty(&schema)`, or `Display`) writes each instruction's
/// `properties` in the language's order: hand decoders that text.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchSchema {
    json: Json,
}

impl BatchSchema {
    /// The schema as a JSON value, for validators.
    pub fn json(&self) -> &Json {
        &self.json
    }

    /// The schema as a JSON value.
    pub fn into_json(self) -> Json {
        self.json
    }
}

impl Serialize for BatchSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Ordered(&self.json).serialize(serializer)
    }
}

/// Pretty JSON text, instruction members in the language's order.
impl std::fmt::Display for BatchSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = serde_json::to_string_pretty(self).map_err(|_| std::fmt::Error)?;
        f.write_str(&text)
    }
}

/// A JSON value written with the members of every instruction `properties` map in [`MEMBER_ORDER`]
/// (a map holding `op` and nothing but instruction members); other maps keep `serde_json`'s order.
struct Ordered<'a>(&'a Json);

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Json::Object(map) => {
                let instruction = map.contains_key("op")
                    && map.keys().all(|key| MEMBER_ORDER.contains(&key.as_str()));
                let mut entries: Vec<(&String, &Json)> = map.iter().collect();
                if instruction {
                    entries.sort_by_key(|(key, _)| {
                        MEMBER_ORDER.iter().position(|member| member == key)
                    });
                }
                let mut out = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    out.serialize_entry(key, &Ordered(value))?;
                }
                out.end()
            }
            Json::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Ordered(item))?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// The JSON Schema for one batch: an array of instructions in the spec's language.
///
/// Time: O(shapes + targets).
pub fn batch_schema(spec: &InstructionSpec) -> BatchSchema {
    let mut defs = Map::new();
    for (id, shape) in spec.shapes.iter().enumerate() {
        defs.insert(name(id), shape_schema(shape));
    }
    let mut branches = Vec::new();
    for target in &spec.targets {
        for group in &target.groups {
            let ops: Vec<&str> = group.ops.iter().map(|op| op.name()).collect();
            let mut properties = Map::new();
            properties.insert(
                "op".into(),
                if ops.len() == 1 {
                    json!({"const": ops[0]})
                } else {
                    json!({"enum": ops})
                },
            );
            properties.insert("path".into(), path_schema(target));
            let mut required = vec!["op", "path"];
            if let Some(operand) = group.operand {
                properties.insert("value".into(), reference(operand));
                required.push("value");
            }
            if target.takes_old {
                properties.insert(
                    "old".into(),
                    json!({"anyOf": [reference(target.shape), {"type": "null"}]}),
                );
            }
            properties.insert("reason".into(), json!({"type": "string"}));
            branches.push(json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            }));
        }
    }
    let json = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "statecraft instruction batch",
        "description": "a JSON array of state-update instructions; each names an op, a path (a list of keys and indexes) and, when the op takes one, a value",
        "type": "array",
        "items": {"anyOf": branches},
        "$defs": defs,
    });
    BatchSchema { json }
}

/// A decimal string index as the engine reads it on an array (no sign, no leading zeros), no longer
/// than the grammar's 16 digits.
const DECIMAL_INDEX: &str = "^(0|[1-9][0-9]{0,15})$";

/// The `$defs` name of a shape.
fn name(id: ShapeId) -> String {
    format!("s{id}")
}

fn reference(id: ShapeId) -> Json {
    json!({"$ref": format!("#/$defs/{}", name(id))})
}

fn shape_schema(shape: &Shape) -> Json {
    match shape {
        // `{}` rather than `true`: some decoders refuse boolean subschemas.
        Shape::Any => json!({}),
        Shape::Null => json!({"type": "null"}),
        Shape::Boolean => json!({"type": "boolean"}),
        Shape::String => json!({"type": "string"}),
        Shape::Integer { min, max } => {
            let mut schema = json!({"type": "integer"});
            if let Some(min) = min {
                schema["minimum"] = json!(min);
            }
            if let Some(max) = max {
                schema["maximum"] = json!(max);
            }
            schema
        }
        Shape::Number {
            min,
            exclusive_min,
            max,
            exclusive_max,
        } => {
            let mut schema = json!({"type": "number"});
            if let Some(min) = min {
                let keyword = if *exclusive_min {
                    "exclusiveMinimum"
                } else {
                    "minimum"
                };
                schema[keyword] = json!(min);
            }
            if let Some(max) = max {
                let keyword = if *exclusive_max {
                    "exclusiveMaximum"
                } else {
                    "maximum"
                };
                schema[keyword] = json!(max);
            }
            schema
        }
        Shape::Enum(options) => json!({"enum": options}),
        Shape::Array { items } => json!({"type": "array", "items": reference(*items)}),
        Shape::Object {
            properties, extra, ..
        } => {
            let members: Map<String, Json> = properties
                .iter()
                .map(|p| (p.name.clone(), reference(p.shape)))
                .collect();
            let required: Vec<&str> = properties
                .iter()
                .filter(|p| p.required)
                .map(|p| p.name.as_str())
                .collect();
            json!({
                "type": "object",
                "properties": members,
                "required": required,
                "additionalProperties": extra.map_or(Json::Bool(false), reference),
            })
        }
        Shape::Union(options) => {
            json!({"anyOf": options.iter().map(|o| reference(*o)).collect::<Vec<_>>()})
        }
        Shape::Tuple { items, required } => {
            // One fixed-length list per allowed length: decoders such as Outlines require every
            // `prefixItems` entry, whatever `minItems` says.
            let mut lengths: Vec<Json> = (*required..=items.len())
                .map(|length| {
                    let mut schema = json!({
                        "type": "array",
                        "minItems": length,
                        "maxItems": length,
                    });
                    if length > 0 {
                        schema["prefixItems"] = Json::Array(
                            items[..length]
                                .iter()
                                .map(|item| reference(*item))
                                .collect(),
                        );
                    }
                    schema
                })
                .collect();
            if lengths.len() == 1 {
                lengths.remove(0)
            } else {
                json!({"anyOf": lengths})
            }
        }
    }
}

/// The schema of a target's `path`: its fixed segments, then any keys and indexes when it is open.
fn path_schema(target: &Target) -> Json {
    let prefix: Vec<Json> = target
        .path
        .iter()
        .map(|segment| match segment {
            SegmentPattern::Key(key) => json!({"const": key}),
            SegmentPattern::AnyKey => json!({"type": "string"}),
            SegmentPattern::AnyIndex => json!({"anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": DECIMAL_INDEX},
            ]}),
        })
        .collect();
    let fixed = prefix.len();
    let mut schema = json!({"type": "array"});
    if !prefix.is_empty() {
        schema["prefixItems"] = Json::Array(prefix);
    }
    if target.open_tail {
        schema["items"] = json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]});
        schema["minItems"] = json!(fixed + 1);
    } else {
        // `maxItems` rather than `"items": false`, which decoders that visit `items` as a schema
        // (Outlines, llama.cpp's converter) refuse.
        schema["minItems"] = json!(fixed);
        schema["maxItems"] = json!(fixed);
    }
    schema
}

/// The keywords of OpenAI's strict structured-output subset the pass schema uses; every other
/// keyword is left out.
pub const STRICT_KEYWORDS: [&str; 15] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "anyOf",
    "$ref",
    "$defs",
    "description",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
];

/// The schema of an update pass's answer: one object `{"instructions": [...]}` whose array is the
/// batch, inside OpenAI's strict structured-output subset (docs/prompt-kit.md): an object at the
/// root, every member of every object required, `additionalProperties: false` on every object, no
/// keyword outside [`STRICT_KEYWORDS`] and `maxItems`. A function tool's parameters are the same
/// object. What the subset cannot say is given up, never made stricter than the engine:
///
/// - `merge` is left out (its value has optional members by nature; `assign` says the same whole);
/// - an instruction has no `old` and no `reason` (optional members);
/// - a value's optional members are required, and an object with free keys takes only its declared
///   members;
/// - an "any value" is a string, number, boolean, null or a list of those (no object);
/// - a path is a list of the target's keys and indexes, each from the set the target allows, in any
///   position (no `prefixItems`), of the target's length; a callback's arguments are a list of the
///   union of its argument shapes, of an allowed length.
///
/// The engine checks every instruction as always, so what the schema lets through is refused there.
///
/// Time: O(the batch schema).
pub fn pass_schema(spec: &InstructionSpec) -> BatchSchema {
    let batch = batch_schema(spec).into_json();
    let mut defs: Map<String, Json> = batch
        .get("$defs")
        .and_then(Json::as_object)
        .map(|defs| {
            defs.iter()
                .map(|(name, schema)| (name.clone(), strict(schema)))
                .collect()
        })
        .unwrap_or_default();
    defs.insert(
        "any".into(),
        json!({"anyOf": [
            {"type": "string"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
            {"type": "array", "items": {"$ref": "#/$defs/any"}},
        ]}),
    );
    let mut branches = Vec::new();
    for target in &spec.targets {
        for group in &target.groups {
            let ops: Vec<&str> = group
                .ops
                .iter()
                .filter(|op| **op != Op::Merge)
                .map(|op| op.name())
                .collect();
            if ops.is_empty() {
                continue;
            }
            let mut properties = Map::new();
            properties.insert("op".into(), json!({"enum": ops}));
            properties.insert("path".into(), strict_path(target));
            if let Some(operand) = group.operand {
                properties.insert("value".into(), reference(operand));
            }
            let required: Vec<Json> = properties.keys().map(|k| Json::String(k.clone())).collect();
            branches.push(json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            }));
        }
    }
    let json = json!({
        "type": "object",
        "description": "the state-update instructions the reply implies, applied in order; an empty list when nothing changed",
        "properties": {
            "instructions": {"type": "array", "items": {"anyOf": branches}},
        },
        "required": ["instructions"],
        "additionalProperties": false,
        "$defs": defs,
    });
    BatchSchema { json }
}

/// A path schema without `prefixItems`: each position takes any of the segments the target allows.
fn strict_path(target: &Target) -> Json {
    let mut keys: Vec<&str> = Vec::new();
    let mut any_key = target.open_tail;
    let mut any_index = target.open_tail;
    for segment in &target.path {
        match segment {
            SegmentPattern::Key(key) => {
                if !keys.contains(&key.as_str()) {
                    keys.push(key);
                }
            }
            SegmentPattern::AnyKey => any_key = true,
            SegmentPattern::AnyIndex => any_index = true,
        }
    }
    let mut options = Vec::new();
    if any_key {
        options.push(json!({"type": "string"}));
    } else if !keys.is_empty() {
        options.push(json!({"type": "string", "enum": keys}));
    }
    if any_index {
        options.push(json!({"type": "integer", "minimum": 0}));
    }
    let items = match options.len() {
        // The root's path: an empty list.
        0 => json!({"type": "string"}),
        1 => options.remove(0),
        _ => json!({"anyOf": options}),
    };
    let fixed = target.path.len();
    let mut schema = json!({"type": "array", "items": items, "minItems": fixed});
    if target.open_tail {
        schema["minItems"] = json!(fixed + 1);
    } else {
        schema["maxItems"] = json!(fixed);
    }
    schema
}

/// A subschema inside the strict subset (see [`pass_schema`]).
fn strict(schema: &Json) -> Json {
    let Some(map) = schema.as_object() else {
        return json!({"$ref": "#/$defs/any"});
    };
    if map.is_empty() {
        return json!({"$ref": "#/$defs/any"});
    }
    if let Some(value) = map.get("const") {
        return json!({"enum": [value]});
    }
    if let Some(options) = map.get("anyOf").and_then(Json::as_array) {
        return json!({"anyOf": options.iter().map(strict).collect::<Vec<_>>()});
    }
    let mut out = Map::new();
    match map.get("type").and_then(Json::as_str) {
        Some("object") => {
            let properties: Map<String, Json> = map
                .get("properties")
                .and_then(Json::as_object)
                .map(|p| p.iter().map(|(k, v)| (k.clone(), strict(v))).collect())
                .unwrap_or_default();
            let required: Vec<Json> = properties.keys().map(|k| Json::String(k.clone())).collect();
            out.insert("type".into(), json!("object"));
            out.insert("properties".into(), Json::Object(properties));
            out.insert("required".into(), Json::Array(required));
            out.insert("additionalProperties".into(), json!(false));
        }
        Some("array") => {
            out.insert("type".into(), json!("array"));
            let items = match map.get("prefixItems").and_then(Json::as_array) {
                Some(items) => {
                    let mut options: Vec<Json> = Vec::new();
                    for item in items.iter().map(strict) {
                        if !options.contains(&item) {
                            options.push(item);
                        }
                    }
                    if options.len() == 1 {
                        options.remove(0)
                    } else {
                        json!({"anyOf": options})
                    }
                }
                None => map.get("items").map_or_else(|| strict(&json!({})), strict),
            };
            out.insert("items".into(), items);
            for bound in ["minItems", "maxItems"] {
                if let Some(n) = map.get(bound) {
                    out.insert(bound.into(), n.clone());
                }
            }
        }
        _ => {
            for (key, value) in map {
                if key == "$ref" || (STRICT_KEYWORDS.contains(&key.as_str()) && key != "$defs") {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
    }
    Json::Object(out)
}
