//! The tailored JSON Schema (draft 2020-12) for one instruction batch, written from an
//! [`InstructionSpec`].
//!
//! This module owns the JSON Schema spelling of the language: every shape becomes a `$defs` entry named
//! `s<id>`, every (target, op group) pair one `anyOf` branch of the instruction schema. It must not
//! decide what the language is ([`crate::prompt::spec`] does), so the grammar written from the same
//! spec cannot say something else.

use serde_json::{Map, Value as Json, json};

use crate::prompt::spec::{InstructionSpec, SegmentPattern, Shape, ShapeId, Target};

/// The JSON Schema for one batch: an array of instructions in the spec's language.
///
/// Time: O(shapes + targets).
pub fn batch_schema(spec: &InstructionSpec) -> Json {
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
            properties.insert(
                "old".into(),
                json!({"anyOf": [reference(target.shape), {"type": "null"}]}),
            );
            properties.insert("reason".into(), json!({"type": "string"}));
            branches.push(json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            }));
        }
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "statecraft instruction batch",
        "description": "a JSON array of state-update instructions; each names an op, a path (a list of keys and indexes) and, when the op takes one, a value",
        "type": "array",
        "items": {"anyOf": branches},
        "$defs": defs,
    })
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
        Shape::Any => Json::Bool(true),
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
        schema["items"] = Json::Bool(false);
        schema["minItems"] = json!(fixed);
    }
    schema
}
