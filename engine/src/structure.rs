//! MVU's automatic schema, enforced: which containers take new members, which keys must stay, and
//! what template a value added to a container takes (docs/mvu.md, "The automatic schema").
//!
//! A card's `$meta` markers become a schema in MVU's own shape (`type`, `extensible`,
//! `recursiveExtensible`, `required`, `properties`, `elementType`, `template`, and at the top
//! `strictTemplate` and `concatTemplateArray`); the card reader writes it, this module reads it and
//! enforces it the way MVU's commands do, op by op, before an instruction runs: a new key goes into an
//! object only when the object is extensible or already lists the key, an element is added to or
//! removed from an array only when the array is extensible, a merge goes only into an extensible
//! object, a required key is never deleted, and replacing a value that exists (MVU's `_.set`) is always
//! allowed. A value added to a container with a template has the template merged into it (MVU's
//! `applyTemplate`). A refusal is a `schema_violation`, like any schema error.
//!
//! MVU keeps its schema beside the data and reconciles it after every reply; here the schema is the
//! card's, and whatever the data grew since is judged as MVU's reconciliation would judge it: a value
//! the schema does not describe is closed unless an ancestor is recursively extensible, and its keys
//! are required unless its container is extensible. This module must not run instructions or know
//! about MVU's text.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value as Json};

use crate::error::ErrorKind;
use crate::exec::{Failure, lookup, splice_args};
use crate::instruction::{Instruction, Op};
use crate::path::{Segment, pointer_of};
use crate::schema::SchemaError;
use crate::value::{Key, Value};

/// How deep a schema may nest; deeper is refused as unusable (a state is at most 64 levels).
const MAX_DEPTH: usize = 128;

/// MVU's automatic schema of a card, compiled. Clone: O(1).
#[derive(Clone)]
pub struct StructureSchema {
    compiled: Arc<Compiled>,
}

struct Compiled {
    source: Json,
    root: Node,
    /// MVU's `strictTemplate`: a template that is an array is not merged into a scalar.
    strict_template: bool,
    /// MVU's `concatTemplateArray` (default true): an array template is appended, not merged by index.
    concat_template_array: bool,
}

impl std::fmt::Debug for StructureSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructureSchema")
            .field("source", &self.compiled.source)
            .finish_non_exhaustive()
    }
}

enum Node {
    Object {
        extensible: bool,
        recursive: bool,
        properties: BTreeMap<String, Member>,
        template: Option<Json>,
    },
    Array {
        extensible: bool,
        recursive: bool,
        element: Box<Node>,
        template: Option<Json>,
    },
    /// A string, number, boolean or anything.
    Leaf,
}

struct Member {
    node: Node,
    required: bool,
}

impl Node {
    fn fits(&self, value: &Value) -> bool {
        match self {
            Node::Object { .. } => matches!(value, Value::Object(_)),
            Node::Array { .. } => matches!(value, Value::Array(_)),
            Node::Leaf => true,
        }
    }
}

/// What the schema says of one value of the state.
#[derive(Clone, Copy)]
struct Place<'s> {
    /// Its node, or `None` when the schema does not describe it (it was added since).
    node: Option<&'s Node>,
    /// Whether it takes new members or elements.
    extensible: bool,
    /// Whether what it holds is extensible by inheritance (MVU's `recursiveExtensible`).
    child_recursive: bool,
}

impl<'s> Place<'s> {
    fn of(node: &'s Node, inherited: bool) -> Place<'s> {
        let (extensible, recursive) = match node {
            Node::Object {
                extensible,
                recursive,
                ..
            }
            | Node::Array {
                extensible,
                recursive,
                ..
            } => (*extensible || inherited, *recursive || inherited),
            Node::Leaf => (inherited, inherited),
        };
        Place {
            node: Some(node),
            extensible,
            child_recursive: extensible && recursive,
        }
    }

    fn template(&self) -> Option<&'s Json> {
        match self.node? {
            Node::Object { template, .. } | Node::Array { template, .. } => template.as_ref(),
            Node::Leaf => None,
        }
    }

    /// Whether the schema lists `key` in this object.
    fn lists(&self, key: &str) -> bool {
        matches!(self.node, Some(Node::Object { properties, .. }) if properties.contains_key(key))
    }

    /// Whether `key` of this object must stay: as the schema says, or, for a key it does not list,
    /// unless the object is extensible.
    fn requires(&self, key: &str) -> bool {
        match self.node {
            Some(Node::Object { properties, .. }) => properties
                .get(key)
                .map_or(!self.extensible, |member| member.required),
            _ => !self.extensible,
        }
    }
}

impl StructureSchema {
    /// Reads a schema in MVU's shape. Time: O(size of the schema).
    pub fn new(source: Json) -> Result<StructureSchema, SchemaError> {
        let root = node(&source, "", 0)?;
        let flag = |name: &str, default: bool| match source.get(name) {
            None | Some(Json::Null) => Ok(default),
            Some(Json::Bool(value)) => Ok(*value),
            Some(other) => Err(SchemaError {
                location: format!("/{name}"),
                message: format!("\"{name}\" must be true or false, not {other}"),
            }),
        };
        let strict_template = flag("strictTemplate", false)?;
        let concat_template_array = flag("concatTemplateArray", true)?;
        // `strictSet` is the translators' (it turns pairs off); it is read here only to be checked.
        flag("strictSet", false)?;
        Ok(StructureSchema {
            compiled: Arc::new(Compiled {
                source,
                root,
                strict_template,
                concat_template_array,
            }),
        })
    }

    /// The schema as given.
    pub fn source(&self) -> &Json {
        &self.compiled.source
    }

    /// Whether the card turned `[value, "description"]` pairs off (MVU's `strictSet`).
    pub fn strict_set(&self) -> bool {
        self.compiled.source.get("strictSet") == Some(&Json::Bool(true))
    }

    /// What the schema says of the value at `segments` of `root`, or `None` when nothing is there.
    /// Time: O(depth × log n).
    fn place(&self, root: &Value, segments: &[Segment]) -> Option<Place<'_>> {
        let mut place = Place::of(&self.compiled.root, false);
        let mut value = root;
        for segment in segments {
            let child = value.lookup(std::slice::from_ref(segment))?;
            let described = match (place.node, value) {
                (Some(Node::Object { properties, .. }), Value::Object(_)) => {
                    let key = match segment {
                        Segment::Key(key) => key.to_string(),
                        Segment::Index(index) => index.to_string(),
                    };
                    properties.get(&key).map(|member| &member.node)
                }
                (Some(Node::Array { element, .. }), Value::Array(_)) => Some(&**element),
                _ => None,
            };
            place = match described.filter(|node| node.fits(child)) {
                Some(node) => Place::of(node, place.child_recursive),
                // What MVU's reconciliation makes of a value it has no schema for.
                None => Place {
                    node: None,
                    extensible: place.child_recursive,
                    child_recursive: place.child_recursive,
                },
            };
            value = child;
        }
        Some(place)
    }

    /// Checks `instruction` against the schema on `root`, the state it is about to run on. `Ok(None)`:
    /// run it as it is; `Ok(Some(..))`: run this one instead, whose value has the container's template
    /// merged in; `Err`: the schema refuses it.
    /// Time: O(depth × log n), plus the size of a value a template is merged into.
    pub(crate) fn admit(
        &self,
        root: &Value,
        instruction: &Instruction,
    ) -> Result<Option<Instruction>, Failure> {
        let segments = instruction.path.segments();
        match instruction.op {
            Op::Assign | Op::Add => self.admit_add(root, instruction, segments),
            Op::Copy => self.admit_add(root, instruction, segments).map(|_| None),
            Op::Move => {
                let from = instruction
                    .from
                    .as_ref()
                    .map(|from| from.segments())
                    .unwrap_or_default();
                self.admit_remove(root, from)?;
                self.admit_add(root, instruction, segments).map(|_| None)
            }
            Op::Merge => {
                match present(root, segments) {
                    Some(Value::Object(_)) => {
                        let place = self.place(root, segments).expect("present");
                        if !place.extensible {
                            return Err(locked(
                                segments,
                                "the object is locked: mvu merges nothing into it",
                            ));
                        }
                    }
                    Some(_) => {}
                    None => self.admit_creation(root, segments)?,
                }
                Ok(None)
            }
            Op::Push => match present(root, segments) {
                Some(Value::Array(_)) => {
                    let place = self.place(root, segments).expect("present");
                    if !place.extensible {
                        return Err(locked(
                            segments,
                            "the array is locked: mvu adds no element to it",
                        ));
                    }
                    Ok(self.templated(place, instruction, |value| {
                        value.map(|value| self.apply(value, place))
                    }))
                }
                Some(_) => Ok(None),
                None => self.admit_creation(root, segments).map(|()| None),
            },
            Op::Splice => {
                let (Some(Value::Array(items)), Ok(args)) = (
                    present(root, segments),
                    splice_args(instruction.value.as_ref()),
                ) else {
                    return Ok(None);
                };
                let place = self.place(root, segments).expect("present");
                let len = items.len() as i64;
                let start = if args.start < 0 {
                    (len + args.start).max(0)
                } else {
                    args.start.min(len)
                };
                let deletes = args
                    .delete_count
                    .map_or(len - start, |count| count.clamp(0, len - start));
                if deletes == 0 && args.items.is_empty() {
                    return Ok(None);
                }
                if !place.extensible {
                    return Err(locked(
                        segments,
                        "the array is locked: mvu adds and removes no element",
                    ));
                }
                if args.items.is_empty() || place.template().is_none() {
                    return Ok(None);
                }
                Ok(self.templated(place, instruction, |value| {
                    let Some(Value::Object(mut map)) = value.cloned() else {
                        return None;
                    };
                    let items: crate::value::Array = args
                        .items
                        .iter()
                        .map(|item| self.apply(item, place))
                        .collect();
                    map.insert(Key::from("items"), Value::Array(items));
                    Some(Value::Object(map))
                }))
            }
            Op::Pop => {
                if let Some(Value::Array(items)) = present(root, segments) {
                    let place = self.place(root, segments).expect("present");
                    if !place.extensible && !items.is_empty() {
                        return Err(locked(
                            segments,
                            "the array is locked: mvu removes no element from it",
                        ));
                    }
                }
                Ok(None)
            }
            Op::Delete | Op::Remove => self.admit_remove(root, segments).map(|()| None),
            Op::Get | Op::Increment | Op::Replace | Op::Test | Op::Callback => Ok(None),
        }
    }

    /// A value put at `segments`: replacing one that exists is MVU's `_.set` and always allowed; a
    /// new key or element is an addition to its container, which must take it, and takes the
    /// container's template.
    fn admit_add(
        &self,
        root: &Value,
        instruction: &Instruction,
        segments: &[Segment],
    ) -> Result<Option<Instruction>, Failure> {
        let Some((last, parents)) = segments.split_last() else {
            return Ok(None);
        };
        let inserts = instruction.op == Op::Add;
        let (parent, exists) = match present(root, parents) {
            Some(parent) => (parent, present(root, segments).is_some()),
            None => return self.admit_creation(root, segments).map(|()| None),
        };
        let place = self.place(root, parents).expect("present");
        match parent {
            Value::Object(_) => {
                if exists && !inserts {
                    return Ok(None);
                }
                let key = key_text(last);
                if !exists && !place.extensible && !place.lists(&key) {
                    return Err(locked(
                        parents,
                        format!("the object is locked: mvu adds no key \"{key}\" to it"),
                    ));
                }
            }
            Value::Array(items) => {
                let appends = last.as_index() == Some(items.len());
                if !inserts && !appends {
                    return Ok(None);
                }
                if !place.extensible {
                    return Err(locked(
                        parents,
                        "the array is locked: mvu adds no element to it",
                    ));
                }
            }
            _ => return Ok(None),
        }
        Ok(self.templated(place, instruction, |value| {
            value.map(|value| self.apply(value, place))
        }))
    }

    /// A value put where nothing is, below a missing parent: the deepest container that exists takes a
    /// new member, which it must allow. No template: MVU applies one only to a value added straight
    /// into its container.
    fn admit_creation(&self, root: &Value, segments: &[Segment]) -> Result<(), Failure> {
        let mut depth = segments.len();
        while depth > 0 && present(root, &segments[..depth - 1]).is_none() {
            depth -= 1;
        }
        if depth == 0 {
            return Ok(());
        }
        let parents = &segments[..depth - 1];
        let Some(place) = self.place(root, parents) else {
            return Ok(());
        };
        match present(root, parents) {
            Some(Value::Object(_)) => {
                let key = key_text(&segments[depth - 1]);
                if !place.extensible && !place.lists(&key) {
                    return Err(locked(
                        parents,
                        format!("the object is locked: mvu adds no key \"{key}\" to it"),
                    ));
                }
            }
            Some(Value::Array(_)) if !place.extensible => {
                return Err(locked(
                    parents,
                    "the array is locked: mvu adds no element to it",
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// A key or element removed: a locked array loses no element, and a required key stays.
    fn admit_remove(&self, root: &Value, segments: &[Segment]) -> Result<(), Failure> {
        let Some((last, parents)) = segments.split_last() else {
            return Ok(());
        };
        if present(root, segments).is_none() {
            return Ok(());
        }
        let Some(place) = self.place(root, parents) else {
            return Ok(());
        };
        match present(root, parents) {
            Some(Value::Array(_)) if !place.extensible => Err(locked(
                parents,
                "the array is locked: mvu removes no element from it",
            )),
            Some(Value::Object(_)) => {
                let key = key_text(last);
                if place.requires(&key) {
                    Err(locked(
                        parents,
                        format!("the key \"{key}\" is required: mvu does not remove it"),
                    ))
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }

    /// `instruction` with its value rewritten by `rewrite` when the container has a template and the
    /// rewrite changed something.
    fn templated(
        &self,
        place: Place<'_>,
        instruction: &Instruction,
        rewrite: impl FnOnce(Option<&Value>) -> Option<Value>,
    ) -> Option<Instruction> {
        place.template()?;
        let value = rewrite(instruction.value.as_ref())?;
        if instruction.value.as_ref() == Some(&value) {
            return None;
        }
        let mut out = instruction.clone();
        out.value = Some(value);
        Some(out)
    }

    /// `value` as MVU adds it to the container at `container` of `root` (which exists): with the
    /// container's template merged in, when it has one. Time: O(depth × log n), plus the value's size
    /// when a template is merged.
    pub(crate) fn added_value(&self, root: &Value, container: &[Segment], value: &Value) -> Value {
        match self.place(root, container) {
            Some(place) => self.apply(value, place),
            None => value.clone(),
        }
    }

    /// MVU's `applyTemplate` of the container at `place` on a value added to it.
    fn apply(&self, value: &Value, place: Place<'_>) -> Value {
        match place.template() {
            Some(template) => Value::from_json(&apply_template(
                &value.to_json(),
                template,
                self.compiled.strict_template,
                self.compiled.concat_template_array,
            )),
            None => value.clone(),
        }
    }
}

/// The value at `segments`, when there is one (a path through a scalar has none).
fn present<'v>(root: &'v Value, segments: &[Segment]) -> Option<&'v Value> {
    lookup(root, segments).ok().flatten()
}

fn key_text(segment: &Segment) -> String {
    match segment {
        Segment::Key(key) => key.to_string(),
        Segment::Index(index) => index.to_string(),
    }
}

fn locked(container: &[Segment], why: impl Into<String>) -> Failure {
    Failure {
        kind: ErrorKind::SchemaViolation,
        path: pointer_of(container),
        message: format!(
            "schema violation (the card's automatic schema): {}",
            why.into()
        ),
    }
}

/// MVU's `applyTemplate(value, template, strictTemplate, concatTemplateArray)`: an object takes the
/// template's members it lacks (lodash `merge`, the value winning); an array has an array template
/// appended (or merged by index); a scalar becomes `[scalar, ...template]` under an array template
/// unless `strict`; a value whose kind does not fit the template is left as it is.
pub fn apply_template(value: &Json, template: &Json, strict: bool, concat: bool) -> Json {
    if template_is_empty(template) {
        return value.clone();
    }
    let template_is_array = template.is_array();
    match value {
        Json::Object(_) if !template_is_array => {
            let base = lodash_merge(Json::Object(Map::new()), template);
            lodash_merge(base, value)
        }
        Json::Array(items) if template_is_array => {
            if concat {
                let mut out = items.clone();
                out.extend(template.as_array().into_iter().flatten().cloned());
                Json::Array(out)
            } else {
                lodash_merge(lodash_merge(Json::Array(Vec::new()), template), value)
            }
        }
        Json::Object(_) | Json::Array(_) => value.clone(),
        _ if template_is_array && !strict => {
            if concat {
                let mut out = vec![value.clone()];
                out.extend(template.as_array().into_iter().flatten().cloned());
                Json::Array(out)
            } else {
                let single = Json::Array(vec![value.clone()]);
                lodash_merge(lodash_merge(Json::Array(Vec::new()), template), &single)
            }
        }
        _ => value.clone(),
    }
}

/// JavaScript's falsiness of a template: MVU applies none when the template is falsy.
fn template_is_empty(template: &Json) -> bool {
    match template {
        Json::Null => true,
        Json::Bool(flag) => !flag,
        Json::Number(number) => number.as_f64() == Some(0.0),
        Json::String(text) => text.is_empty(),
        _ => false,
    }
}

/// lodash's `merge(destination, source)`: objects merge key by key and arrays index by index, deeply;
/// any other source value replaces what was there.
fn lodash_merge(destination: Json, source: &Json) -> Json {
    match (destination, source) {
        (Json::Object(mut into), Json::Object(from)) => {
            for (key, incoming) in from {
                let current = into.remove(key);
                into.insert(key.clone(), merge_member(current, incoming));
            }
            Json::Object(into)
        }
        (Json::Array(mut into), Json::Array(from)) => {
            for (index, incoming) in from.iter().enumerate() {
                if index < into.len() {
                    let current = std::mem::take(&mut into[index]);
                    into[index] = merge_member(Some(current), incoming);
                } else {
                    into.push(merge_member(None, incoming));
                }
            }
            Json::Array(into)
        }
        (_, source) => fresh(source),
    }
}

fn merge_member(current: Option<Json>, incoming: &Json) -> Json {
    match (current, incoming) {
        (Some(current @ Json::Object(_)), Json::Object(_))
        | (Some(current @ Json::Array(_)), Json::Array(_)) => lodash_merge(current, incoming),
        (_, incoming) => fresh(incoming),
    }
}

/// A deep copy of `source` as lodash's merge builds it into an empty container.
fn fresh(source: &Json) -> Json {
    match source {
        Json::Object(_) => lodash_merge(Json::Object(Map::new()), source),
        Json::Array(_) => lodash_merge(Json::Array(Vec::new()), source),
        other => other.clone(),
    }
}

/// One node of a schema in MVU's shape, checked.
fn node(json: &Json, location: &str, depth: usize) -> Result<Node, SchemaError> {
    let bad = |message: String| SchemaError {
        location: location.to_owned(),
        message,
    };
    if depth > MAX_DEPTH {
        return Err(bad(format!(
            "the automatic schema nests deeper than {MAX_DEPTH} levels"
        )));
    }
    let Json::Object(fields) = json else {
        return Err(bad(format!(
            "a node of the automatic schema is an object with \"type\", not {json}"
        )));
    };
    let flag = |name: &str| match fields.get(name) {
        None | Some(Json::Null) => Ok(false),
        Some(Json::Bool(value)) => Ok(*value),
        Some(other) => Err(bad(format!(
            "\"{name}\" must be true or false, not {other}"
        ))),
    };
    let template = fields.get("template").filter(|t| !t.is_null()).cloned();
    match fields.get("type").and_then(Json::as_str) {
        Some("object") => {
            let mut properties = BTreeMap::new();
            match fields.get("properties") {
                None => {}
                Some(Json::Object(members)) => {
                    for (key, member) in members {
                        let at = format!(
                            "{location}/properties/{}",
                            crate::path::escape_pointer_token(key)
                        );
                        let required = match member.get("required") {
                            None | Some(Json::Null) => false,
                            Some(Json::Bool(value)) => *value,
                            Some(other) => {
                                return Err(SchemaError {
                                    location: at,
                                    message: format!(
                                        "\"required\" must be true or false, not {other}"
                                    ),
                                });
                            }
                        };
                        properties.insert(
                            key.clone(),
                            Member {
                                node: node(member, &at, depth + 1)?,
                                required,
                            },
                        );
                    }
                }
                Some(other) => {
                    return Err(bad(format!(
                        "\"properties\" must be an object, not {other}"
                    )));
                }
            }
            Ok(Node::Object {
                extensible: flag("extensible")?,
                recursive: flag("recursiveExtensible")?,
                properties,
                template,
            })
        }
        Some("array") => {
            let element = match fields.get("elementType") {
                None | Some(Json::Null) => Node::Leaf,
                Some(element) => node(element, &format!("{location}/elementType"), depth + 1)?,
            };
            Ok(Node::Array {
                extensible: flag("extensible")?,
                recursive: flag("recursiveExtensible")?,
                element: Box::new(element),
                template,
            })
        }
        Some("string" | "number" | "boolean" | "any") => Ok(Node::Leaf),
        _ => Err(bad(format!(
            "\"type\" must be object, array, string, number, boolean or any, not {}",
            fields
                .get("type")
                .map_or("absent".to_owned(), Json::to_string)
        ))),
    }
}

/// An object's members, for tests.
#[cfg(test)]
fn object(value: Json) -> crate::value::Object {
    match Value::from_json(&value) {
        Value::Object(map) => map,
        _ => unreachable!("an object"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::Path;
    use serde_json::json;

    fn schema() -> StructureSchema {
        StructureSchema::new(json!({
            "type": "object", "extensible": false, "recursiveExtensible": false,
            "properties": {
                "player": {"type": "object", "required": true, "extensible": false, "recursiveExtensible": false,
                    "properties": {"hp": {"type": "number", "required": true},
                                   "bag": {"type": "array", "required": true, "extensible": true, "recursiveExtensible": false,
                                           "elementType": {"type": "string"}, "template": ["new"]}}},
                "npcs": {"type": "object", "required": true, "extensible": true, "recursiveExtensible": false,
                    "template": {"mood": "calm", "tags": []},
                    "properties": {"alice": {"type": "object", "required": true, "extensible": false,
                        "properties": {"mood": {"type": "string", "required": true}}}}},
                "fixed": {"type": "array", "required": true, "extensible": false, "elementType": {"type": "number"}}
            }
        }))
        .unwrap()
    }

    fn state() -> Value {
        Value::Object(object(json!({
            "player": {"hp": 10, "bag": ["rope"]},
            "npcs": {"alice": {"mood": "happy"}},
            "fixed": [1, 2]
        })))
    }

    fn path(text: &str) -> Path {
        Path::from_pointer(text).unwrap()
    }

    fn admit(instruction: Instruction) -> Result<Option<Instruction>, Failure> {
        schema().admit(&state(), &instruction)
    }

    #[test]
    fn replacing_what_exists_is_always_allowed() {
        assert!(matches!(
            admit(Instruction::assign(path("/player/hp"), 5)),
            Ok(None)
        ));
        assert!(matches!(
            admit(Instruction::assign(path("/fixed/0"), 5)),
            Ok(None)
        ));
        assert!(matches!(
            admit(Instruction::assign(path("/player"), json!({"x": 1}))),
            Ok(None)
        ));
    }

    #[test]
    fn locked_containers_take_nothing_new() {
        let refused = admit(Instruction::assign(path("/player/mana"), 5)).unwrap_err();
        assert_eq!(refused.kind, ErrorKind::SchemaViolation);
        assert_eq!(refused.path, "/player");
        assert!(refused.message.contains("\"mana\""), "{}", refused.message);
        assert!(admit(Instruction::new(Op::Push, path("/fixed")).with_value(3)).is_err());
        assert!(admit(Instruction::assign(path("/fixed/2"), 3)).is_err());
        assert!(admit(Instruction::new(Op::Pop, path("/fixed"))).is_err());
        assert!(admit(Instruction::new(Op::Delete, path("/fixed/0"))).is_err());
        assert!(
            admit(Instruction::new(Op::Merge, path("/player")).with_value(json!({"hp": 1})))
                .is_err()
        );
        // Deeper creation is judged where it enters the state.
        assert!(admit(Instruction::assign(path("/player/stats/str"), 5)).is_err());
        assert!(admit(Instruction::assign(path("/npcs/bob/stats/str"), 5)).is_ok());
    }

    #[test]
    fn required_keys_stay() {
        let refused = admit(Instruction::new(Op::Delete, path("/player/hp"))).unwrap_err();
        assert!(refused.message.contains("required"), "{}", refused.message);
        // Alice is required by the card; a key added to an extensible object later is not.
        assert!(admit(Instruction::new(Op::Delete, path("/npcs/alice"))).is_err());
        let mut grown = state();
        if let Value::Object(root) = &mut grown
            && let Some(Value::Object(npcs)) = root.get_mut("npcs")
        {
            npcs.insert(
                Key::from("bob"),
                Value::Object(object(json!({"mood": "x"}))),
            );
        }
        let bob = Instruction::new(Op::Delete, path("/npcs/bob"));
        assert!(matches!(schema().admit(&grown, &bob), Ok(None)));
        // Bob, added since, is locked as MVU's reconciliation makes him: his keys are required.
        let mood = Instruction::new(Op::Delete, path("/npcs/bob/mood"));
        assert!(schema().admit(&grown, &mood).is_err());
    }

    #[test]
    fn templates_merge_into_added_values() {
        let added = admit(Instruction::assign(
            path("/npcs/bob"),
            json!({"mood": "angry"}),
        ))
        .unwrap()
        .expect("templated");
        assert_eq!(
            added.value.unwrap().to_json(),
            json!({"mood": "angry", "tags": []})
        );
        let pushed = admit(Instruction::new(Op::Push, path("/player/bag")).with_value("lamp"))
            .unwrap()
            .expect("templated");
        assert_eq!(pushed.value.unwrap().to_json(), json!(["lamp", "new"]));
        // Replacing an existing member takes no template.
        assert!(matches!(
            admit(Instruction::assign(
                path("/npcs/alice"),
                json!({"mood": "x"})
            )),
            Ok(None)
        ));
    }

    #[test]
    fn apply_template_follows_mvu() {
        let t = json!({"a": 1, "deep": {"x": 1, "list": [1, 2]}});
        assert_eq!(
            apply_template(&json!({"deep": {"list": [9]}, "b": 2}), &t, false, true),
            json!({"a": 1, "b": 2, "deep": {"x": 1, "list": [9, 2]}})
        );
        assert_eq!(
            apply_template(&json!([1]), &json!([2, 3]), false, true),
            json!([1, 2, 3])
        );
        assert_eq!(
            apply_template(&json!([1]), &json!([2, 3]), false, false),
            json!([1, 3])
        );
        assert_eq!(
            apply_template(&json!("x"), &json!(["y"]), false, true),
            json!(["x", "y"])
        );
        assert_eq!(
            apply_template(&json!("x"), &json!(["y"]), true, true),
            json!("x")
        );
        assert_eq!(
            apply_template(&json!([1]), &json!({"a": 1}), false, true),
            json!([1])
        );
        assert_eq!(
            apply_template(&json!(5), &json!({"a": 1}), false, true),
            json!(5)
        );
        assert_eq!(
            apply_template(&json!({"a": 2}), &json!(null), false, true),
            json!({"a": 2})
        );
    }

    #[test]
    fn malformed_schemas_are_refused_with_a_location() {
        let error =
            StructureSchema::new(json!({"type": "object", "properties": {"a": {"type": "thing"}}}))
                .unwrap_err();
        assert_eq!(error.location, "/properties/a");
        assert!(StructureSchema::new(json!({"type": "object", "extensible": "yes"})).is_err());
        assert!(StructureSchema::new(json!([1])).is_err());
    }
}
