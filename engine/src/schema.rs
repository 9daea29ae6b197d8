//! The state's JSON Schema, checked on the would-be state before a batch commits.
//!
//! A full check converts the whole state and validates it. The incremental check, used for every batch,
//! validates only what the batch touched: it follows each change's path down through the schema while
//! the schema at that level is a plain object schema (`type: object`, `properties`,
//! `additionalProperties`, `required`, size and name keywords, annotations; a lone local `$ref` is
//! followed), and validates the deepest touched subtree with the subschema compiled for it. Where a
//! change adds or removes a key, the object holding it gets a shallow check of its own keywords (its
//! members stand for `true`). Anything else (`allOf`, `if`, arrays, `patternProperties`...) stops the
//! descent, and the whole subtree at that level is validated. The result is the same set of
//! violations a full check would find for the touched parts, at a cost that follows the change, not
//! the state.
//!
//! Under `schema_violation = repair` the store asks [`StateSchema::mends`] for the values that mend
//! the violations a check found, where the schema says how (coercion, clamping, defaults, enum case),
//! and records each as a change of the same step; the check then runs again. This module must not
//! know about instructions.

use std::collections::HashMap;
use std::sync::Arc;

use jsonschema::{Draft, Validator, ValidatorMap};
use serde_json::{Map, Value as Json};

use crate::change::Change;
use crate::error::{BatchError, ErrorKind};
use crate::path::{Path, Segment, pointer_of};
use crate::value::Value;

/// Why a schema could not be compiled: the schema itself is unusable, whatever the state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the schema itself is unusable, at {}: {message}", if .location.is_empty() { "(root)" } else { .location })]
pub struct SchemaError {
    /// JSON Pointer into the schema document to the part that is wrong (empty for the whole schema).
    pub location: String,
    /// What is wrong there, as the validator library says it.
    pub message: String,
}

impl From<jsonschema::ValidationError<'_>> for SchemaError {
    fn from(error: jsonschema::ValidationError<'_>) -> SchemaError {
        SchemaError {
            location: error.instance_path().to_string(),
            message: error.to_string(),
        }
    }
}

/// A compiled JSON Schema for the state (draft 2020-12 unless `$schema` names another). Clone: O(1),
/// the compiled validators are shared.
#[derive(Clone)]
pub struct StateSchema {
    compiled: Arc<Compiled>,
}

struct Compiled {
    source: Json,
    validators: ValidatorMap,
    /// Shallow validators for plain object schemas, by schema location (`#/properties/player`).
    shallow: HashMap<String, Validator>,
}

impl std::fmt::Debug for StateSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSchema")
            .field("source", self.source())
            .finish_non_exhaustive()
    }
}

/// Keywords of a plain object schema: the ones the incremental check understands.
const OBJECT_KEYWORDS: [&str; 7] = [
    "type",
    "properties",
    "additionalProperties",
    "required",
    "minProperties",
    "maxProperties",
    "propertyNames",
];
/// Keywords that do not constrain the instance.
const ANNOTATIONS: [&str; 13] = [
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
    "$id",
    "$defs",
    "definitions",
    "$anchor",
];

impl StateSchema {
    /// Compiles a schema.
    pub fn new(source: Json) -> Result<StateSchema, SchemaError> {
        let draft = match source.get("$schema").and_then(Json::as_str) {
            Some(uri) if uri.contains("draft-07") => Draft::Draft7,
            Some(uri) if uri.contains("draft-06") => Draft::Draft6,
            Some(uri) if uri.contains("draft-04") => Draft::Draft4,
            Some(uri) if uri.contains("2019-09") => Draft::Draft201909,
            _ => Draft::Draft202012,
        };
        let options = jsonschema::options().with_draft(draft);
        let validators = options.build_map(&source)?;
        if !validators.contains_key("#") {
            // The map leaves out what does not compile (a `$ref` to nowhere, a `pattern` that is no
            // regex) instead of failing; compiling the whole schema on its own says what and where.
            return Err(match options.build(&source) {
                Err(error) => SchemaError::from(error),
                Ok(_) => SchemaError {
                    location: String::new(),
                    message: "no validator could be built for the whole schema".to_owned(),
                },
            });
        }
        let mut shallow = HashMap::new();
        for location in validators.keys() {
            let Some(node) = resolve(&source, location) else {
                continue;
            };
            if is_plain_object(node) {
                let validator = options.build(&shallow_schema(node))?;
                shallow.insert(location.to_owned(), validator);
            }
        }
        Ok(StateSchema {
            compiled: Arc::new(Compiled {
                source,
                validators,
                shallow,
            }),
        })
    }

    /// The schema as given.
    pub fn source(&self) -> &Json {
        &self.compiled.source
    }

    /// Validates the whole state. Time: O(state).
    pub fn check_full(&self, state: &Value) -> Vec<BatchError> {
        self.validate_at("#", &Path::root(), state)
    }

    /// Validates what `changes` touched in `state` (the state after them). Time: O(touched subtrees).
    pub fn check_changes(&self, state: &Value, changes: &[Change]) -> Vec<BatchError> {
        let mut full: Vec<(Path, String)> = Vec::new();
        let mut shallow: Vec<(Path, String)> = Vec::new();
        for change in changes {
            self.plan(state, change, &mut full, &mut shallow);
        }
        // A subtree validated in full covers every check beneath it. Sorted, a path comes right after
        // its prefixes and everything between them shares the prefix, so one pass finds the covered.
        full.sort_by(|a, b| a.0.cmp(&b.0));
        full.dedup();
        let mut full_kept: Vec<(Path, String)> = Vec::with_capacity(full.len());
        for (path, location) in full {
            let covered = full_kept
                .last()
                .is_some_and(|(kept, _)| path.starts_with(kept) && *kept != path);
            if !covered {
                full_kept.push((path, location));
            }
        }
        shallow.sort_by(|a, b| a.0.cmp(&b.0));
        shallow.dedup();
        let mut errors = Vec::new();
        for (path, location) in &full_kept {
            if let Ok(Some(node)) = crate::exec::lookup(state, path.segments()) {
                errors.extend(self.validate_at(location, path, node));
            }
        }
        for (path, location) in &shallow {
            // The kept paths are sorted and disjoint: only the last one not after `path` can cover it.
            let before = full_kept.partition_point(|(kept, _)| kept <= path);
            if before > 0 && path.starts_with(&full_kept[before - 1].0) {
                continue;
            }
            if let (Ok(Some(Value::Object(map))), Some(validator)) = (
                crate::exec::lookup(state, path.segments()),
                self.compiled.shallow.get(location),
            ) {
                let keys: Map<String, Json> =
                    map.keys().map(|k| (k.to_string(), Json::Null)).collect();
                let instance = Json::Object(keys);
                errors.extend(report(validator, &instance, path));
            }
        }
        errors
    }

    /// Decides what one change needs checked: full subtrees by schema location, shallow objects.
    fn plan(
        &self,
        state: &Value,
        change: &Change,
        full: &mut Vec<(Path, String)>,
        shallow: &mut Vec<(Path, String)>,
    ) {
        let segments = change.path.segments();
        let mut location = String::from("#");
        let mut node = Some(state);
        for depth in 0..=segments.len() {
            let here = Path::from(segments[..depth].to_vec());
            if depth == segments.len() {
                if node.is_some() {
                    full.push((here, location));
                }
                return;
            }
            let schema = resolve(self.source(), &location);
            let plain = schema.is_some_and(is_plain_object);
            let Some(Value::Object(map)) = node else {
                if node.is_some() || !plain {
                    full.push((here, location));
                }
                return;
            };
            if !plain {
                full.push((here, location));
                return;
            }
            let schema = schema.expect("plain implies present");
            let Segment::Key(key) = &segments[depth] else {
                full.push((here, location));
                return;
            };
            if depth + 1 == segments.len() && change.old.is_some() != change.new.is_some() {
                shallow.push((here.clone(), location.clone()));
            }
            let child = if schema
                .get("properties")
                .and_then(|p| p.get(&**key))
                .is_some()
            {
                format!("{location}/properties/{}", escape(key))
            } else {
                match schema.get("additionalProperties") {
                    Some(Json::Object(_)) => format!("{location}/additionalProperties"),
                    // `false` is the shallow check's business; `true` or absent leaves the child free.
                    _ => return,
                }
            };
            let child = follow_ref(self.source(), child);
            if !self.compiled.validators.contains_key(&child) {
                // Not compiled on its own: validate this level whole instead.
                full.push((here, location));
                return;
            }
            location = child;
            node = map.get(&**key);
        }
    }

    fn validate_at(&self, location: &str, path: &Path, node: &Value) -> Vec<BatchError> {
        let Some(validator) = self.compiled.validators.get(location) else {
            return vec![BatchError::whole_batch(
                ErrorKind::SchemaViolation,
                Some(path.to_pointer()),
                format!("no compiled schema at {location}"),
            )];
        };
        report(validator, &node.to_json(), path)
    }
}

/// One value the schema says how to mend: the store writes `value` at `path`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Mend {
    /// Where.
    pub path: Path,
    /// The mended value.
    pub value: Value,
    /// The rule that mended it: `coerce_type`, `clamp_minimum`, `clamp_maximum`, `default`,
    /// `enum_case`.
    pub rule: &'static str,
    /// What was there and what it became, in words.
    pub message: String,
}

impl StateSchema {
    /// The mends of the violations `errors` reported for `state`, where the schema says how (the
    /// `schema_violation = repair` policy; "repair" in code is the text layer's).
    /// Each violating place is looked at once; a place whose schema is not reached through
    /// `properties`, `additionalProperties`, `items`, `prefixItems` and local `$ref`s, or whose value
    /// no rule mends, gets no mend (its violation stays and rejects the batch).
    /// Time: O(errors × path depth), independent of the state's size.
    pub(crate) fn mends(&self, state: &Value, errors: &[BatchError]) -> Vec<Mend> {
        let mut places: Vec<&str> = errors
            .iter()
            .filter(|e| e.kind == ErrorKind::SchemaViolation)
            .filter_map(|e| e.path.as_deref())
            .collect();
        places.sort_unstable();
        places.dedup();
        let mut out = Vec::new();
        for pointer in places {
            let Ok(path) = Path::from_pointer(pointer) else {
                continue;
            };
            let (Some(schema), Some(value)) = (
                self.schema_at(state, path.segments()),
                state.lookup(path.segments()),
            ) else {
                continue;
            };
            if let Some((value, rule, message)) = mend(schema, value) {
                out.push(Mend {
                    path: path.clone(),
                    value,
                    rule,
                    message,
                });
            }
            if let Value::Object(map) = value {
                self.defaults(schema, map, &path, &mut out);
            }
        }
        out
    }

    /// The subschema that applies at `segments` of `state` when it is reached through plain structure:
    /// an object's member through `properties` or `additionalProperties`, an array's element through
    /// `prefixItems` or `items` (a pointer's decimal token names an element when the value there is
    /// an array).
    fn schema_at(&self, state: &Value, segments: &[Segment]) -> Option<&Json> {
        let source = self.source();
        let mut node = deref(source, source)?;
        let mut value = Some(state);
        for segment in segments {
            let next = match (value, segment.as_index()) {
                (Some(Value::Array(_)), Some(index)) => node
                    .get("prefixItems")
                    .and_then(|p| p.get(index))
                    .or_else(|| node.get("items").filter(|i| i.is_object())),
                _ => {
                    let key = match segment {
                        Segment::Key(key) => key.to_string(),
                        Segment::Index(index) => index.to_string(),
                    };
                    node.get("properties")
                        .and_then(|p| p.get(&key))
                        .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))
                }
            }?;
            node = deref(source, next)?;
            value = value.and_then(|v| v.lookup(std::slice::from_ref(segment)));
        }
        Some(node)
    }

    /// Missing required members whose schema has a `default`.
    fn defaults(&self, schema: &Json, map: &crate::value::Object, at: &Path, out: &mut Vec<Mend>) {
        let Some(Json::Array(required)) = schema.get("required") else {
            return;
        };
        for name in required.iter().filter_map(Json::as_str) {
            if map.contains_key(name) {
                continue;
            }
            let default = schema
                .get("properties")
                .and_then(|p| p.get(name))
                .and_then(|member| deref(self.source(), member))
                .and_then(|member| member.get("default"));
            if let Some(default) = default {
                out.push(Mend {
                    path: at.child(Segment::key(name)),
                    value: Value::from_json(default),
                    rule: "default",
                    message: format!(
                        "the missing required member \"{name}\" took its default {default}"
                    ),
                });
            }
        }
    }
}

/// A schema with its lone local `$ref` followed (bounded, like [`follow_ref`]).
fn deref<'s>(source: &'s Json, mut node: &'s Json) -> Option<&'s Json> {
    for _ in 0..16 {
        match node.get("$ref").and_then(Json::as_str) {
            Some(target) => node = resolve(source, target)?,
            None => return Some(node),
        }
    }
    None
}

/// What the rules make of one value under `schema`: coerce a string to the type the schema asks for,
/// then clamp a number to `minimum`/`maximum`, then match a string to an `enum` member up to case and
/// surrounding spaces. `None` when no rule changed it.
fn mend(schema: &Json, value: &Value) -> Option<(Value, &'static str, String)> {
    let original = value.to_json();
    let mut json = original.clone();
    let mut rules: Vec<&'static str> = Vec::new();
    if let (Json::String(text), Some(types)) = (&json, schema.get("type")) {
        let allows = |name: &str| match types {
            Json::String(t) => t == name,
            Json::Array(list) => list.iter().any(|t| t == name),
            _ => false,
        };
        if !allows("string") {
            let trimmed = text.trim();
            let coerced = if allows("integer") || allows("number") {
                trimmed.parse::<i64>().ok().map(Json::from).or_else(|| {
                    trimmed
                        .parse::<f64>()
                        .ok()
                        .filter(|n| n.is_finite() && (allows("number") || n.fract() == 0.0))
                        .and_then(|n| {
                            if n.fract() == 0.0 && n.abs() < 9.0e15 {
                                Some(Json::from(n as i64))
                            } else {
                                serde_json::Number::from_f64(n).map(Json::Number)
                            }
                        })
                })
            } else {
                None
            };
            let coerced = coerced.or_else(|| {
                allows("boolean")
                    .then(|| match trimmed.to_ascii_lowercase().as_str() {
                        "true" => Some(Json::Bool(true)),
                        "false" => Some(Json::Bool(false)),
                        _ => None,
                    })
                    .flatten()
            });
            if let Some(coerced) = coerced {
                json = coerced;
                rules.push("coerce_type");
            }
        }
    }
    if let Json::Number(number) = &json {
        let n = number.as_f64().unwrap_or(0.0);
        if let Some(min) = schema.get("minimum").filter(|m| m.is_number()) {
            if n < min.as_f64().unwrap_or(n) {
                json = min.clone();
                rules.push("clamp_minimum");
            }
        }
        if let Some(max) = schema.get("maximum").filter(|m| m.is_number()) {
            if n > max.as_f64().unwrap_or(n) {
                json = max.clone();
                rules.push("clamp_maximum");
            }
        }
    }
    if let (Json::String(text), Some(Json::Array(members))) = (&json, schema.get("enum")) {
        if !members.contains(&json) {
            let wanted = text.trim();
            let mut matches = members.iter().filter(|m| {
                m.as_str().is_some_and(|m| {
                    m.eq_ignore_ascii_case(wanted) || m.to_lowercase() == wanted.to_lowercase()
                })
            });
            if let (Some(member), None) = (matches.next(), matches.next()) {
                json = member.clone();
                rules.push("enum_case");
            }
        }
    }
    let rule = *rules.last()?;
    let message = format!("{original} became {json} ({})", rules.join(", then "));
    Some((Value::from_json(&json), rule, message))
}

fn report(validator: &Validator, instance: &Json, at: &Path) -> Vec<BatchError> {
    let prefix = at.to_pointer();
    validator
        .iter_errors(instance)
        .map(|error| {
            // The error's own `path` carries the location; the message says what is wrong there.
            let pointer = format!("{prefix}{}", error.instance_path());
            BatchError::whole_batch(
                ErrorKind::SchemaViolation,
                Some(pointer),
                format!("schema violation: {error}"),
            )
        })
        .collect()
}

/// `#/properties/a` of a schema document.
fn resolve<'s>(source: &'s Json, location: &str) -> Option<&'s Json> {
    let pointer = location.strip_prefix('#')?;
    source.pointer(pointer)
}

/// A subschema that is only `{"$ref": "#/..."}` (plus annotations) stands for its target.
fn follow_ref(source: &Json, mut location: String) -> String {
    for _ in 0..16 {
        let Some(Json::Object(schema)) = resolve(source, &location) else {
            break;
        };
        let Some(Json::String(target)) = schema.get("$ref") else {
            break;
        };
        let only_ref = schema
            .keys()
            .all(|k| k == "$ref" || ANNOTATIONS.contains(&k.as_str()));
        if !only_ref || !target.starts_with("#/") || resolve(source, target).is_none() {
            break;
        }
        location = target.clone();
    }
    location
}

/// Whether the incremental check may descend through this schema.
fn is_plain_object(schema: &Json) -> bool {
    let Json::Object(map) = schema else {
        return false;
    };
    map.get("type") == Some(&Json::String("object".into()))
        && map
            .keys()
            .all(|k| OBJECT_KEYWORDS.contains(&k.as_str()) || ANNOTATIONS.contains(&k.as_str()))
        && map.get("properties").is_none_or(Json::is_object)
}

/// The same object schema with every member schema replaced by `true`, so that it checks only the
/// object's own keywords (type, required, additionalProperties: false, sizes, names).
fn shallow_schema(schema: &Json) -> Json {
    let mut out = Map::new();
    for (key, value) in schema.as_object().into_iter().flatten() {
        match key.as_str() {
            "properties" => {
                let names = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| (k.clone(), Json::Bool(true)));
                out.insert(key.clone(), Json::Object(names.collect()));
            }
            "additionalProperties" if value.is_object() => {
                out.insert(key.clone(), Json::Bool(true));
            }
            "$defs" | "definitions" | "$id" | "$schema" | "$anchor" => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if let Some(draft) = schema.get("$schema") {
        out.insert("$schema".into(), draft.clone());
    }
    Json::Object(out)
}

fn escape(key: &str) -> String {
    pointer_of(&[Segment::key(key)])[1..].to_owned()
}
