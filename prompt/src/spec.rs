//! The instruction language for one state schema: which paths exist, what type each holds, which ops
//! each allows and what operand each op takes.
//!
//! This module owns the single intermediate description that both the tailored JSON Schema
//! ([`crate::batch_schema`]) and the GBNF grammar ([`crate::gbnf`]) are written from, so
//! the two cannot drift, plus a direct matcher ([`InstructionSpec::accepts`]) that the feedback and the
//! grader use without compiling a schema. It must not emit text and must not run instructions.
//!
//! # What the language is
//!
//! - Paths are the paths the state schema declares: `properties` keys, any index into an array (an
//!   integer, or a decimal string such as `"0"`, which the engine also reads as an index), and any key
//!   of an object whose `additionalProperties` is a schema. Below a node the schema leaves free (`{}`,
//!   `true`, no schema at all) any further path is allowed. Descent stops at [`MAX_DESCRIBED_SEGMENTS`]
//!   segments and after [`MAX_TARGETS`] targets ([`InstructionSpec::is_partial`] says so).
//! - A batch is a JSON array (the engine also takes one bare instruction; the language does not, so a
//!   model always writes the same shape). Instructions carry no `metadata`: that is the host's.
//! - `anyOf` and `oneOf` both read as "any of" (a value matching two `oneOf` branches is left to the
//!   engine's schema check).
//! - Ops follow the target's type: `assign` everywhere, `delete` where the key is not `required` (and on
//!   array items and free keys), `increment` on numbers (integer deltas on integers), `push`, `pop` and
//!   `splice` on arrays, `merge` on objects (the root allows only `merge`). `get`, `callback` and RFC
//!   6902 ops are not part of the language: a model writing state updates needs none of them.
//! - Values are typed by the schema at the path: `type` (one or a list), `enum`, `const`, `properties`,
//!   `required`, `additionalProperties`, `items`, integer and number bounds, local `$ref`, `anyOf` and
//!   `oneOf`. Other keywords (`pattern`, `minLength`, `allOf`, `if`, ...) are not carried over, so the
//!   language is wider than the state schema there and the engine's own schema check still has the last
//!   word. An object value may carry keys the schema does not declare unless `additionalProperties` is
//!   `false`, as JSON Schema itself allows; paths to such keys are not offered.
//! - A `merge` operand is the target's object shape made deeply optional, because merge recurses.
//! - Instructions are objects with `op`, `path`, `value` when the op takes one, then optionally `old`
//!   (the target's shape or `null`) and `reason` (a string). Members come in one order in the grammar
//!   and in the written JSON Schema (decoders such as xgrammar and Outlines follow a schema's member
//!   order): the instruction's members in that natural order, an object value's declared keys in
//!   alphabetical order (the order `serde_json` writes them, so examples match), then undeclared keys.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;

use serde_json::{Map, Value as Json};
use statecraft_engine::{CallbackSignature, Op, Value, escape_pointer_token};

/// How many path segments a target may have before descent stops (recursive schemas end here).
pub const MAX_DESCRIBED_SEGMENTS: usize = 8;
/// How many targets one spec may hold; a state schema larger than this is described in part.
pub const MAX_TARGETS: usize = 512;

/// An index into [`InstructionSpec::shapes`].
pub type ShapeId = usize;

/// The type of a value, as far as the language constrains it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Shape {
    /// Any JSON value.
    Any,
    /// `null`.
    Null,
    /// `true` or `false`.
    Boolean,
    /// An integer within inclusive bounds.
    Integer {
        /// The smallest allowed value.
        min: Option<i64>,
        /// The largest allowed value.
        max: Option<i64>,
    },
    /// A number within bounds.
    Number {
        /// The lower bound.
        min: Option<f64>,
        /// Whether `min` itself is excluded.
        exclusive_min: bool,
        /// The upper bound.
        max: Option<f64>,
        /// Whether `max` itself is excluded.
        exclusive_max: bool,
    },
    /// Any string.
    String,
    /// One of these values.
    Enum(Vec<Json>),
    /// An array whose items all have one shape.
    Array {
        /// The shape of every item.
        items: ShapeId,
    },
    /// An object.
    Object {
        /// Declared members, in alphabetical order.
        properties: Vec<Property>,
        /// The shape of undeclared members, or `None` when they are refused.
        extra: Option<ShapeId>,
        /// Whether undeclared keys are paths of the language (`additionalProperties` was a schema).
        free_keys: bool,
    },
    /// Any of these shapes.
    Union(Vec<ShapeId>),
    /// A list of positional values (a callback's arguments): the first `required` must be there, the
    /// others may be left out from the end.
    Tuple {
        /// The shape of each position.
        items: Vec<ShapeId>,
        /// How many positions, from the start, must be present.
        required: usize,
    },
}

/// A declared object member.
#[derive(Clone, Debug, PartialEq)]
pub struct Property {
    /// The key.
    pub name: String,
    /// Its shape.
    pub shape: ShapeId,
    /// Whether the object must have it.
    pub required: bool,
}

/// One segment of a target path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum SegmentPattern {
    /// Exactly this key.
    Key(String),
    /// Any key (an object with a schema for `additionalProperties`).
    AnyKey,
    /// Any array index: a non-negative integer, or the same number as a decimal string.
    AnyIndex,
}

/// Ops that take the same operand at the same target.
#[derive(Clone, Debug, PartialEq)]
pub struct OpGroup {
    /// The ops, in the order the language lists them.
    pub ops: Vec<Op>,
    /// The shape of `value`, or `None` when these ops take no value.
    pub operand: Option<ShapeId>,
}

/// A set of paths that share a shape and the ops allowed on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The path, segment by segment.
    pub path: Vec<SegmentPattern>,
    /// Whether one or more further segments (keys or indexes) follow `path`: the paths below a node
    /// the schema leaves free.
    pub open_tail: bool,
    /// The shape of the value at these paths (what `old` is checked against).
    pub shape: ShapeId,
    /// The ops allowed here, grouped by operand.
    pub groups: Vec<OpGroup>,
    /// Whether instructions here may carry `old`: state paths may, callbacks may not.
    pub takes_old: bool,
}

/// The instruction language for one state schema. Build with [`InstructionSpec::from_schema`] or
/// [`InstructionSpec::from_state`].
#[derive(Clone, Debug, PartialEq)]
pub struct InstructionSpec {
    /// Every shape, referred to by index. Only this module builds specs, so every id inside is valid.
    pub(crate) shapes: Vec<Shape>,
    /// Every target, in schema order (depth first).
    pub(crate) targets: Vec<Target>,
    /// Whether descent stopped at [`MAX_DESCRIBED_SEGMENTS`] or [`MAX_TARGETS`] with more schema below.
    pub(crate) partial: bool,
    /// The targets by their literal path and by their first segment, kept beside `targets`.
    index: TargetIndex,
}

/// The targets by their literal path, so that finding a path's target is one hash lookup for the
/// usual target (every segment a fixed key, no open tail) instead of a scan of the targets that share
/// its first key: the prompt looks up every node of the state, and in a typical state every target
/// starts with the same key.
#[derive(Clone, Debug, Default, PartialEq)]
struct TargetIndex {
    /// The literal targets by [`literal_hash`] of their keys, in target order (a hash may collide, so
    /// a hit is still checked).
    by_path: HashMap<u64, Vec<usize>>,
    /// The other targets (with any key, any index or an open tail) whose first segment is this key,
    /// in target order.
    by_key: HashMap<String, Vec<usize>>,
    /// Every other target (paths that start with any key or any index, or the root's open tail), in
    /// order.
    rest: Vec<usize>,
}

impl TargetIndex {
    fn of(targets: &[Target]) -> TargetIndex {
        let mut index = TargetIndex::default();
        for (id, target) in targets.iter().enumerate() {
            index.add(id, target);
        }
        index
    }

    fn add(&mut self, id: usize, target: &Target) {
        let keys: Option<Vec<&str>> = target
            .path
            .iter()
            .map(|segment| match segment {
                SegmentPattern::Key(key) => Some(key.as_str()),
                _ => None,
            })
            .collect();
        match (keys, target.open_tail, target.path.first()) {
            (Some(keys), false, _) => self
                .by_path
                .entry(literal_hash(keys.into_iter()))
                .or_default()
                .push(id),
            (_, _, Some(SegmentPattern::Key(key))) => {
                self.by_key.entry(key.clone()).or_default().push(id)
            }
            _ => self.rest.push(id),
        }
    }
}

/// A hash of a path of keys, the same for a target's keys and for the JSON strings of a state path.
fn literal_hash<'a>(keys: impl Iterator<Item = &'a str>) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    for key in keys {
        hasher.write(key.as_bytes());
        hasher.write_u8(0xff);
    }
    hasher.finish()
}

/// Why an instruction is outside the language, for feedback.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Mismatch {
    /// The instruction is not an object with a string `op` and a list `path`, or has other members.
    Malformed(String),
    /// No target has this path.
    UnknownPath,
    /// The path exists but the op is not allowed there; the allowed ops follow.
    OpNotAllowed(Vec<Op>),
    /// The op needs a value shaped like this (a description), or takes none.
    BadValue(String),
    /// `old` does not fit the target.
    BadOld(String),
}

/// What an id that names no shape stands for: nothing is known, so anything goes.
static UNKNOWN: Shape = Shape::Any;

impl InstructionSpec {
    /// Every shape; [`ShapeId`]s index into it.
    pub fn shapes(&self) -> &[Shape] {
        &self.shapes
    }

    /// Every target, in schema order (depth first).
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// Whether the schema declares more paths than the spec holds: descent stopped at
    /// [`MAX_DESCRIBED_SEGMENTS`] segments (a recursive schema) or after [`MAX_TARGETS`] targets. Batches that
    /// use the missing paths are outside the language though the engine may accept them.
    pub fn is_partial(&self) -> bool {
        self.partial
    }

    /// The shape with this id ([`Shape::Any`] for an id this spec did not make).
    pub fn shape(&self, id: ShapeId) -> &Shape {
        self.shapes.get(id).unwrap_or(&UNKNOWN)
    }

    /// The language for a state schema (JSON Schema, draft 2020-12 keywords), or the free language
    /// (any path, any value, every op) when `schema` is `None`.
    ///
    /// Time: O(schema size × [`MAX_DESCRIBED_SEGMENTS`]), bounded by [`MAX_TARGETS`].
    pub fn from_schema(schema: Option<&Json>) -> InstructionSpec {
        let mut builder = Builder::new(schema.unwrap_or(&Json::Bool(true)));
        let root = match schema {
            Some(schema) => builder.shape(schema, "#".to_owned(), 0),
            None => builder.push(Shape::Any),
        };
        builder.finish(root)
    }

    /// The language the current state implies when there is no schema: every path that exists, typed
    /// by its current value (arrays by their first item). Used for prompt examples and feedback.
    pub fn from_state(state: &Value) -> InstructionSpec {
        let mut builder = Builder::new(&Json::Bool(true));
        let root = builder.infer(&state.to_json(), 0);
        builder.finish(root)
    }

    /// This language and a `callback` instruction for each of `callbacks`: its path is `[name]`, its
    /// `value` the argument list the signature describes (any list when it describes none, no `value`
    /// when it takes no argument), and it takes no `old`. Without callbacks the language has no
    /// `callback` op: a model can only call what the host registered.
    ///
    /// Time: O(callbacks × the size of their argument schemas).
    pub fn with_callbacks(mut self, callbacks: &[CallbackSignature]) -> InstructionSpec {
        for callback in callbacks {
            let operand = match &callback.args {
                None => {
                    let any = self.add_shape(Shape::Any);
                    Some(self.add_shape(Shape::Array { items: any }))
                }
                Some(args) if args.is_empty() => None,
                Some(args) => {
                    let items = args
                        .iter()
                        .map(|arg| self.add_schema(&arg.schema))
                        .collect();
                    let required = args.iter().filter(|arg| !arg.optional).count();
                    Some(self.add_shape(Shape::Tuple { items, required }))
                }
            };
            let shape = self.add_shape(Shape::Any);
            self.push_target(Target {
                path: vec![SegmentPattern::Key(callback.name.clone())],
                open_tail: false,
                shape,
                groups: vec![OpGroup {
                    ops: vec![Op::Callback],
                    operand,
                }],
                takes_old: false,
            });
        }
        self
    }

    fn push_target(&mut self, target: Target) {
        self.index.add(self.targets.len(), &target);
        self.targets.push(target);
    }

    fn add_shape(&mut self, shape: Shape) -> ShapeId {
        self.shapes.push(shape);
        self.shapes.len() - 1
    }

    /// The shapes of a self-contained JSON Schema (a callback argument's), added to this spec's.
    fn add_schema(&mut self, schema: &Json) -> ShapeId {
        let mut builder = Builder::new(schema);
        builder.shapes = std::mem::take(&mut self.shapes);
        let id = builder.shape(schema, "#".to_owned(), 0);
        self.shapes = builder.shapes;
        id
    }

    /// The target whose path pattern matches `path` (a JSON array of segments), if any.
    ///
    /// Time: O(path length + the targets with a pattern segment or an open tail that start with the
    /// path's first key or with no fixed key), not O(targets).
    pub fn target_for(&self, path: &[Json]) -> Option<&Target> {
        let first = |ids: &[usize]| {
            ids.iter()
                .copied()
                .find(|&id| path_matches(&self.targets[id], path))
        };
        // Only a path of strings can match a literal target (a key never matches an index).
        let literal = path
            .iter()
            .all(Json::is_string)
            .then(|| literal_hash(path.iter().filter_map(Json::as_str)))
            .and_then(|hash| self.index.by_path.get(&hash))
            .and_then(|ids| first(ids));
        let keyed = path
            .first()
            .and_then(Json::as_str)
            .and_then(|key| self.index.by_key.get(key))
            .and_then(|ids| first(ids));
        // The first matching target in target order, as if every target were tried in turn.
        let id = [literal, keyed, first(&self.index.rest)]
            .into_iter()
            .flatten()
            .min()?;
        self.targets.get(id)
    }

    /// Whether a batch (a JSON array of instructions) is in the language. Agrees with the tailored JSON
    /// Schema and the grammar (up to member order and the number bounds the grammar approximates).
    pub fn accepts_batch(&self, batch: &Json) -> bool {
        batch
            .as_array()
            .is_some_and(|items| items.iter().all(|i| self.check(i).is_ok()))
    }

    /// Whether one instruction is in the language.
    pub fn accepts(&self, instruction: &Json) -> bool {
        self.check(instruction).is_ok()
    }

    /// Checks one instruction and says why it is outside the language.
    pub fn check(&self, instruction: &Json) -> Result<(), Mismatch> {
        let Some(map) = instruction.as_object() else {
            return Err(Mismatch::Malformed(
                "an instruction must be an object".into(),
            ));
        };
        if let Some(key) = map
            .keys()
            .find(|k| !matches!(k.as_str(), "op" | "path" | "value" | "old" | "reason"))
        {
            return Err(Mismatch::Malformed(format!(
                "\"{key}\" is not an instruction member"
            )));
        }
        // `from_str` also reads MVU's aliases (`delta`, `insert`); the language takes only the names.
        let op = map
            .get("op")
            .and_then(Json::as_str)
            .and_then(|name| name.parse::<Op>().ok().filter(|op| op.name() == name))
            .ok_or_else(|| Mismatch::Malformed("\"op\" must name an op".into()))?;
        let path = map
            .get("path")
            .and_then(Json::as_array)
            .ok_or_else(|| Mismatch::Malformed("\"path\" must be a list".into()))?;
        if map.get("reason").is_some_and(|r| !r.is_string()) {
            return Err(Mismatch::Malformed("\"reason\" must be a string".into()));
        }
        let matching: Vec<&Target> = self
            .targets
            .iter()
            .filter(|t| path_matches(t, path))
            .collect();
        if matching.is_empty() {
            return Err(Mismatch::UnknownPath);
        }
        let mut allowed = Vec::new();
        let mut last = Mismatch::UnknownPath;
        for target in matching {
            for group in &target.groups {
                allowed.extend(group.ops.iter().copied());
                if !group.ops.contains(&op) {
                    continue;
                }
                match (group.operand, map.get("value")) {
                    (None, Some(_)) => {
                        last = Mismatch::BadValue(format!("{op} takes no value"));
                        continue;
                    }
                    (Some(shape), None) => {
                        last = Mismatch::BadValue(format!("{op} needs {}", self.describe(shape)));
                        continue;
                    }
                    (Some(shape), Some(value)) if !self.shape_accepts(shape, value) => {
                        last = Mismatch::BadValue(format!("{op} needs {}", self.describe(shape)));
                        continue;
                    }
                    _ => {}
                }
                if !target.takes_old && map.contains_key("old") {
                    last = Mismatch::BadOld(format!("{op} takes no \"old\""));
                    continue;
                }
                let old_fits = map
                    .get("old")
                    .is_none_or(|old| old.is_null() || self.shape_accepts(target.shape, old));
                if !old_fits {
                    last = Mismatch::BadOld(format!(
                        "\"old\" must be null or {}",
                        self.describe(target.shape)
                    ));
                    continue;
                }
                return Ok(());
            }
        }
        if matches!(last, Mismatch::UnknownPath) {
            allowed.sort_by_key(|op| Op::ALL.iter().position(|o| o == op));
            allowed.dedup();
            return Err(Mismatch::OpNotAllowed(allowed));
        }
        Err(last)
    }

    /// Whether `value` has the shape. Mirrors the JSON Schema written for the shape: integers accept
    /// floats with no fraction, enums compare numbers by value.
    pub fn shape_accepts(&self, shape: ShapeId, value: &Json) -> bool {
        match self.shape(shape) {
            Shape::Any => true,
            Shape::Null => value.is_null(),
            Shape::Boolean => value.is_boolean(),
            Shape::String => value.is_string(),
            Shape::Integer { min, max } => {
                let Some(x) = value.as_f64() else {
                    return false;
                };
                let exact = value
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| value.as_u64().map(i128::from));
                if exact.is_none() && x.fract() != 0.0 {
                    return false;
                }
                // Exact integers compare exactly; integral floats (JSON Schema's `2.0`) as floats.
                let within = |bound: i64, lower: bool| match exact {
                    Some(v) if lower => v >= i128::from(bound),
                    Some(v) => v <= i128::from(bound),
                    None if lower => x >= bound as f64,
                    None => x <= bound as f64,
                };
                min.is_none_or(|m| within(m, true)) && max.is_none_or(|m| within(m, false))
            }
            Shape::Number {
                min,
                exclusive_min,
                max,
                exclusive_max,
            } => value.as_f64().is_some_and(|x| {
                let above = min.is_none_or(|m| if *exclusive_min { x > m } else { x >= m });
                let below = max.is_none_or(|m| if *exclusive_max { x < m } else { x <= m });
                above && below
            }),
            Shape::Enum(options) => {
                let value = Value::from_json(value);
                options.iter().any(|o| Value::from_json(o) == value)
            }
            Shape::Array { items } => value
                .as_array()
                .is_some_and(|list| list.iter().all(|item| self.shape_accepts(*items, item))),
            Shape::Object {
                properties, extra, ..
            } => value.as_object().is_some_and(|map| {
                properties
                    .iter()
                    .all(|p| !p.required || map.contains_key(&p.name))
                    && map.iter().all(|(key, member)| {
                        match properties.iter().find(|p| &p.name == key) {
                            Some(p) => self.shape_accepts(p.shape, member),
                            None => extra.is_some_and(|e| self.shape_accepts(e, member)),
                        }
                    })
            }),
            Shape::Union(options) => options.iter().any(|o| self.shape_accepts(*o, value)),
            Shape::Tuple { items, required } => value.as_array().is_some_and(|list| {
                (*required..=items.len()).contains(&list.len())
                    && list
                        .iter()
                        .zip(items)
                        .all(|(item, shape)| self.shape_accepts(*shape, item))
            }),
        }
    }

    /// A short description of a shape for people and models: `an integer from 0 to 100`.
    pub fn describe(&self, shape: ShapeId) -> String {
        match self.shape(shape) {
            Shape::Any => "any value".into(),
            Shape::Null => "null".into(),
            Shape::Boolean => "true or false".into(),
            Shape::String => "a string".into(),
            Shape::Integer { min, max } => match (min, max) {
                (Some(a), Some(b)) => format!("an integer from {a} to {b}"),
                (Some(a), None) => format!("an integer of at least {a}"),
                (None, Some(b)) => format!("an integer of at most {b}"),
                (None, None) => "an integer".into(),
            },
            Shape::Number {
                min,
                exclusive_min,
                max,
                exclusive_max,
            } => {
                let lower = min.map(|a| match exclusive_min {
                    true => format!("greater than {a}"),
                    false => format!("at least {a}"),
                });
                let upper = max.map(|b| match exclusive_max {
                    true => format!("less than {b}"),
                    false => format!("at most {b}"),
                });
                let bounds: Vec<String> = lower.into_iter().chain(upper).collect();
                if bounds.is_empty() {
                    "a number".into()
                } else {
                    format!("a number {}", bounds.join(" and "))
                }
            }
            Shape::Enum(options) => {
                let texts: Vec<String> = options.iter().map(Json::to_string).collect();
                format!("one of {}", texts.join(", "))
            }
            Shape::Array { items } => format!("an array of {}", self.describe_short(*items)),
            Shape::Object { properties, .. } if properties.is_empty() => "an object".into(),
            Shape::Object { properties, .. } => {
                let keys: Vec<&str> = properties.iter().map(|p| p.name.as_str()).collect();
                format!("an object with keys {}", keys.join(", "))
            }
            Shape::Union(options) => {
                let texts: Vec<String> = options.iter().map(|o| self.describe_short(*o)).collect();
                texts.join(" or ")
            }
            Shape::Tuple { items, required } => {
                let describe = |ids: &[ShapeId]| {
                    ids.iter()
                        .map(|id| self.describe_short(*id))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let (first, rest) = items.split_at(*required);
                match (first.is_empty(), rest.is_empty()) {
                    (true, true) => "an empty list".into(),
                    (false, true) => format!("a list of {}", describe(first)),
                    (true, false) => format!("a list of optionally {}", describe(rest)),
                    (false, false) => format!(
                        "a list of {}, then optionally {}",
                        describe(first),
                        describe(rest)
                    ),
                }
            }
        }
    }

    /// One level of description, so nested shapes stay short.
    fn describe_short(&self, shape: ShapeId) -> String {
        match self.shape(shape) {
            Shape::Array { .. } => "arrays".into(),
            Shape::Object { .. } => "objects".into(),
            _ => self.describe(shape),
        }
    }

    /// The ops allowed at `path` (empty when the path is not in the language).
    pub fn ops_at(&self, path: &[Json]) -> Vec<Op> {
        let mut ops: Vec<Op> = self
            .targets
            .iter()
            .filter(|t| path_matches(t, path))
            .flat_map(|t| t.groups.iter().flat_map(|g| g.ops.iter().copied()))
            .collect();
        ops.sort_by_key(|op| Op::ALL.iter().position(|o| o == op));
        ops.dedup();
        ops
    }
}

/// Whether `path` (JSON segments) matches a target's pattern.
fn path_matches(target: &Target, path: &[Json]) -> bool {
    let fixed = target.path.len();
    if path.len() < fixed || (path.len() > fixed) != target.open_tail {
        return false;
    }
    let segment_ok = |pattern: &SegmentPattern, segment: &Json| match pattern {
        SegmentPattern::Key(key) => segment.as_str() == Some(key),
        SegmentPattern::AnyKey => segment.is_string(),
        SegmentPattern::AnyIndex => is_index(segment),
    };
    target
        .path
        .iter()
        .zip(path)
        .all(|(pattern, segment)| segment_ok(pattern, segment))
        && path[fixed..]
            .iter()
            .all(|segment| segment.is_string() || is_index(segment))
}

/// A JSON value the tailored schema reads as an array index: a non-negative integer (JSON Schema's
/// `integer` also takes `2.0`), or a decimal string such as `"0"`, which the engine reads as an index
/// on an existing array (docs/instructions.md).
fn is_index(segment: &Json) -> bool {
    segment.is_u64()
        || segment
            .as_f64()
            .is_some_and(|x| x >= 0.0 && x.fract() == 0.0)
        || segment
            .as_str()
            .is_some_and(|s| s.len() <= 16 && statecraft_engine::decimal_index(s).is_some())
}

/// Builds shapes and targets.
struct Builder<'a> {
    root: &'a Json,
    shapes: Vec<Shape>,
    /// Shapes already built, by schema location, so `$ref` cycles end.
    by_location: HashMap<String, ShapeId>,
    partials: HashMap<ShapeId, ShapeId>,
    /// Set when a limit stopped the walk with more below.
    partial: bool,
    any: Option<ShapeId>,
}

impl<'a> Builder<'a> {
    fn new(root: &'a Json) -> Builder<'a> {
        Builder {
            root,
            shapes: Vec::new(),
            by_location: HashMap::new(),
            partials: HashMap::new(),
            partial: false,
            any: None,
        }
    }

    fn push(&mut self, shape: Shape) -> ShapeId {
        self.shapes.push(shape);
        self.shapes.len() - 1
    }

    fn any(&mut self) -> ShapeId {
        match self.any {
            Some(id) => id,
            None => {
                let id = self.push(Shape::Any);
                self.any = Some(id);
                id
            }
        }
    }

    /// The shape of the schema `node` found at `location`.
    fn shape(&mut self, node: &'a Json, location: String, depth: usize) -> ShapeId {
        if let Some(id) = self.by_location.get(&location) {
            return *id;
        }
        let Some(map) = node.as_object() else {
            // `true`, `false` and non-schemas: `false` would refuse everything, which the language
            // cannot spell for a path it offers, so it stays free and the engine's check decides.
            return self.any();
        };
        if depth > 4 * MAX_DESCRIBED_SEGMENTS {
            return self.any();
        }
        let root = self.root;
        let referenced = map
            .get("$ref")
            .and_then(Json::as_str)
            .and_then(|reference| Some((reference, root.pointer(reference.strip_prefix('#')?)?)));
        if let Some((reference, target)) = referenced {
            let id = self.shape(target, reference.to_owned(), depth + 1);
            self.by_location.insert(location, id);
            return id;
        }
        // Reserve the id first so recursive references find it.
        let id = self.push(Shape::Any);
        self.by_location.insert(location.clone(), id);
        let shape = self.shape_of_map(map, &location, depth);
        self.shapes[id] = shape;
        id
    }

    fn shape_of_map(&mut self, map: &'a Map<String, Json>, location: &str, depth: usize) -> Shape {
        if let Some(value) = map.get("const") {
            return Shape::Enum(vec![value.clone()]);
        }
        if let Some(Json::Array(options)) = map.get("enum") {
            return Shape::Enum(options.clone());
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Json::Array(options)) = map.get(keyword) {
                let ids = options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| self.shape(o, format!("{location}/{keyword}/{i}"), depth + 1))
                    .collect();
                return Shape::Union(ids);
            }
        }
        let types: Vec<&str> = match map.get("type") {
            Some(Json::String(t)) => vec![t.as_str()],
            Some(Json::Array(list)) => list.iter().filter_map(Json::as_str).collect(),
            _ if map.contains_key("properties") || map.contains_key("additionalProperties") => {
                vec!["object"]
            }
            _ if map.contains_key("items") => vec!["array"],
            _ => return Shape::Any,
        };
        let mut variants: Vec<Shape> = types
            .iter()
            .filter_map(|t| self.typed(t, map, location, depth))
            .collect();
        match variants.len() {
            0 => Shape::Any,
            1 => variants.remove(0),
            _ => Shape::Union(variants.into_iter().map(|v| self.push(v)).collect()),
        }
    }

    fn typed(
        &mut self,
        name: &str,
        map: &'a Map<String, Json>,
        location: &str,
        depth: usize,
    ) -> Option<Shape> {
        Some(match name {
            "null" => Shape::Null,
            "boolean" => Shape::Boolean,
            "string" => Shape::String,
            "integer" => {
                let min = bound(map, "minimum", "exclusiveMinimum", true);
                let max = bound(map, "maximum", "exclusiveMaximum", false);
                Shape::Integer { min, max }
            }
            "number" => {
                let (min, exclusive_min) = float_bound(map, "minimum", "exclusiveMinimum", true);
                let (max, exclusive_max) = float_bound(map, "maximum", "exclusiveMaximum", false);
                Shape::Number {
                    min,
                    exclusive_min,
                    max,
                    exclusive_max,
                }
            }
            "array" => {
                let items = match map.get("items") {
                    Some(items) => self.shape(items, format!("{location}/items"), depth + 1),
                    None => self.any(),
                };
                Shape::Array { items }
            }
            "object" => {
                let required: Vec<&str> = match map.get("required") {
                    Some(Json::Array(list)) => list.iter().filter_map(Json::as_str).collect(),
                    _ => Vec::new(),
                };
                let mut properties = Vec::new();
                if let Some(Json::Object(props)) = map.get("properties") {
                    let mut names: Vec<&String> = props.keys().collect();
                    names.sort();
                    for name in names {
                        let shape = self.shape(
                            &props[name],
                            format!("{location}/properties/{}", escape_pointer_token(name)),
                            depth + 1,
                        );
                        properties.push(Property {
                            name: name.clone(),
                            shape,
                            required: required.contains(&name.as_str()),
                        });
                    }
                }
                let (extra, free_keys) = match map.get("additionalProperties") {
                    Some(Json::Bool(false)) => (None, false),
                    Some(schema @ Json::Object(_)) => (
                        Some(self.shape(
                            schema,
                            format!("{location}/additionalProperties"),
                            depth + 1,
                        )),
                        true,
                    ),
                    _ => (Some(self.any()), properties.is_empty()),
                };
                Shape::Object {
                    properties,
                    extra,
                    free_keys,
                }
            }
            _ => return None,
        })
    }

    /// Shapes for a state value when there is no schema.
    fn infer(&mut self, value: &Json, depth: usize) -> ShapeId {
        if depth > MAX_DESCRIBED_SEGMENTS {
            return self.any();
        }
        let shape = match value {
            Json::Null => Shape::Any,
            Json::Bool(_) => Shape::Boolean,
            Json::Number(n) if n.is_f64() => Shape::Number {
                min: None,
                exclusive_min: false,
                max: None,
                exclusive_max: false,
            },
            Json::Number(_) => Shape::Integer {
                min: None,
                max: None,
            },
            Json::String(_) => Shape::String,
            Json::Array(items) => {
                let items = match items.first() {
                    Some(first) => self.infer(first, depth + 1),
                    None => self.any(),
                };
                Shape::Array { items }
            }
            Json::Object(map) => {
                let properties = map
                    .iter()
                    .map(|(name, member)| Property {
                        name: name.clone(),
                        shape: self.infer(member, depth + 1),
                        required: false,
                    })
                    .collect();
                let extra = Some(self.any());
                Shape::Object {
                    properties,
                    extra,
                    free_keys: false,
                }
            }
        };
        self.push(shape)
    }

    /// The object shape with every member optional, recursively: what a `merge` may carry.
    fn partial(&mut self, shape: ShapeId) -> ShapeId {
        if let Some(id) = self.partials.get(&shape) {
            return *id;
        }
        let Shape::Object {
            properties,
            extra,
            free_keys,
        } = self.shapes[shape].clone()
        else {
            return shape;
        };
        let id = self.push(Shape::Any);
        self.partials.insert(shape, id);
        let properties = properties
            .into_iter()
            .map(|p| Property {
                name: p.name,
                shape: self.partial(p.shape),
                required: false,
            })
            .collect();
        self.shapes[id] = Shape::Object {
            properties,
            extra,
            free_keys,
        };
        id
    }

    fn finish(mut self, root: ShapeId) -> InstructionSpec {
        let mut targets = Vec::new();
        let mut operands = Operands::default();
        self.walk(root, &mut Vec::new(), false, &mut targets, &mut operands);
        InstructionSpec {
            shapes: self.shapes,
            index: TargetIndex::of(&targets),
            targets,
            partial: self.partial,
        }
    }

    /// Adds the targets at `path` and below.
    fn walk(
        &mut self,
        shape: ShapeId,
        path: &mut Vec<SegmentPattern>,
        deletable: bool,
        targets: &mut Vec<Target>,
        operands: &mut Operands,
    ) {
        if targets.len() >= MAX_TARGETS {
            self.partial = true;
            return;
        }
        let root = path.is_empty();
        let node = self.shapes[shape].clone();
        if let Shape::Any = node {
            // The node itself (not at the root, where only merge is allowed) and every path below it.
            let groups = self.groups(shape, &node, deletable, operands);
            if root {
                let merge = groups
                    .iter()
                    .filter(|g| g.ops == [Op::Merge])
                    .cloned()
                    .collect();
                targets.push(target(path, false, shape, merge));
            } else {
                targets.push(target(path, false, shape, groups.clone()));
            }
            // Below a free node every key may be deleted, so the no-value group is rebuilt.
            let mut below: Vec<OpGroup> =
                groups.into_iter().filter(|g| g.operand.is_some()).collect();
            below.push(OpGroup {
                ops: vec![Op::Delete, Op::Pop],
                operand: None,
            });
            targets.push(target(path, true, shape, below));
            return;
        }
        let mut groups = self.groups(shape, &node, deletable, operands);
        if root {
            groups.retain(|g| g.ops == [Op::Merge]);
        }
        if !groups.is_empty() {
            targets.push(target(path, false, shape, groups));
        }
        if path.len() >= MAX_DESCRIBED_SEGMENTS {
            let more = match &node {
                Shape::Object {
                    properties,
                    free_keys,
                    ..
                } => !properties.is_empty() || *free_keys,
                Shape::Array { .. } => true,
                _ => false,
            };
            self.partial |= more;
            return;
        }
        match node {
            Shape::Object {
                properties,
                extra,
                free_keys,
            } => {
                for property in properties {
                    path.push(SegmentPattern::Key(property.name));
                    self.walk(property.shape, path, !property.required, targets, operands);
                    path.pop();
                }
                if let (true, Some(extra)) = (free_keys, extra) {
                    path.push(SegmentPattern::AnyKey);
                    self.walk(extra, path, true, targets, operands);
                    path.pop();
                }
            }
            Shape::Array { items } => {
                path.push(SegmentPattern::AnyIndex);
                self.walk(items, path, true, targets, operands);
                path.pop();
            }
            _ => {}
        }
    }

    /// The op groups a node of this shape allows.
    fn groups(
        &mut self,
        id: ShapeId,
        node: &Shape,
        deletable: bool,
        operands: &mut Operands,
    ) -> Vec<OpGroup> {
        let mut groups = vec![OpGroup {
            ops: vec![Op::Assign],
            operand: Some(id),
        }];
        let numeric = |shapes: &[Shape], s: ShapeId| match &shapes[s] {
            Shape::Integer { .. } => Some(true),
            Shape::Number { .. } => Some(false),
            _ => None,
        };
        let delta = match node {
            Shape::Any => Some(false),
            Shape::Union(options) => {
                let kinds: Option<Vec<bool>> =
                    options.iter().map(|o| numeric(&self.shapes, *o)).collect();
                kinds.map(|k| k.iter().all(|integer| *integer))
            }
            _ => numeric(&self.shapes, id),
        };
        if let Some(integer) = delta {
            groups.push(OpGroup {
                ops: vec![Op::Increment],
                operand: Some(operands.delta(self, integer)),
            });
        }
        let items = match node {
            Shape::Array { items } => Some(*items),
            Shape::Any => Some(self.any()),
            _ => None,
        };
        if let Some(items) = items {
            groups.push(OpGroup {
                ops: vec![Op::Push],
                operand: Some(items),
            });
            groups.push(OpGroup {
                ops: vec![Op::Splice],
                operand: Some(operands.splice(self, items)),
            });
        }
        match node {
            Shape::Object { .. } => {
                let partial = self.partial(id);
                groups.push(OpGroup {
                    ops: vec![Op::Merge],
                    operand: Some(partial),
                });
            }
            Shape::Any => {
                let object = operands.any_object(self);
                groups.push(OpGroup {
                    ops: vec![Op::Merge],
                    operand: Some(object),
                });
            }
            _ => {}
        }
        let mut bare = Vec::new();
        if deletable {
            bare.push(Op::Delete);
        }
        if items.is_some() {
            bare.push(Op::Pop);
        }
        if !bare.is_empty() {
            groups.push(OpGroup {
                ops: bare,
                operand: None,
            });
        }
        groups
    }
}

/// Operand shapes shared by every target: deltas, splice arguments, free objects.
#[derive(Default)]
struct Operands {
    integer_delta: Option<ShapeId>,
    number_delta: Option<ShapeId>,
    splices: BTreeMap<ShapeId, ShapeId>,
    any_object: Option<ShapeId>,
}

impl Operands {
    fn delta(&mut self, builder: &mut Builder<'_>, integer: bool) -> ShapeId {
        let slot = if integer {
            &mut self.integer_delta
        } else {
            &mut self.number_delta
        };
        *slot.get_or_insert_with(|| {
            builder.push(if integer {
                Shape::Integer {
                    min: None,
                    max: None,
                }
            } else {
                Shape::Number {
                    min: None,
                    exclusive_min: false,
                    max: None,
                    exclusive_max: false,
                }
            })
        })
    }

    /// `{deleteCount?, items?, start}` for arrays of `items`.
    fn splice(&mut self, builder: &mut Builder<'_>, items: ShapeId) -> ShapeId {
        if let Some(id) = self.splices.get(&items) {
            return *id;
        }
        let integer = self.delta(builder, true);
        let list = builder.push(Shape::Array { items });
        let id = builder.push(Shape::Object {
            properties: vec![
                Property {
                    name: "deleteCount".into(),
                    shape: integer,
                    required: false,
                },
                Property {
                    name: "items".into(),
                    shape: list,
                    required: false,
                },
                Property {
                    name: "start".into(),
                    shape: integer,
                    required: true,
                },
            ],
            extra: None,
            free_keys: false,
        });
        self.splices.insert(items, id);
        id
    }

    fn any_object(&mut self, builder: &mut Builder<'_>) -> ShapeId {
        if let Some(id) = self.any_object {
            return id;
        }
        let any = builder.any();
        let id = builder.push(Shape::Object {
            properties: Vec::new(),
            extra: Some(any),
            free_keys: true,
        });
        self.any_object = Some(id);
        id
    }
}

fn target(
    path: &[SegmentPattern],
    open_tail: bool,
    shape: ShapeId,
    groups: Vec<OpGroup>,
) -> Target {
    Target {
        path: path.to_vec(),
        open_tail,
        shape,
        groups,
        takes_old: true,
    }
}

/// An inclusive integer bound from `minimum`/`maximum` and their exclusive forms.
fn bound(map: &Map<String, Json>, inclusive: &str, exclusive: &str, lower: bool) -> Option<i64> {
    let from_inclusive = map
        .get(inclusive)
        .and_then(Json::as_f64)
        .map(|x| if lower { x.ceil() } else { x.floor() });
    let from_exclusive = map.get(exclusive).and_then(Json::as_f64).map(|x| {
        if lower {
            x.floor() + 1.0
        } else {
            x.ceil() - 1.0
        }
    });
    let pick = match (from_inclusive, from_exclusive) {
        (Some(a), Some(b)) => Some(if lower { a.max(b) } else { a.min(b) }),
        (a, b) => a.or(b),
    }?;
    // Bounds beyond what an i64 holds constrain nothing an instruction can write.
    (pick.abs() < 9.0e15).then_some(pick as i64)
}

/// A number bound and whether it is exclusive.
fn float_bound(
    map: &Map<String, Json>,
    inclusive: &str,
    exclusive: &str,
    lower: bool,
) -> (Option<f64>, bool) {
    let a = map.get(inclusive).and_then(Json::as_f64);
    let b = map.get(exclusive).and_then(Json::as_f64);
    match (a, b) {
        (Some(a), Some(b)) => {
            let exclusive_wins = if lower { b >= a } else { b <= a };
            if exclusive_wins {
                (Some(b), true)
            } else {
                (Some(a), false)
            }
        }
        (Some(a), None) => (Some(a), false),
        (None, Some(b)) => (Some(b), true),
        (None, None) => (None, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> InstructionSpec {
        InstructionSpec::from_schema(Some(&json!({
            "type": "object",
            "required": ["hp"],
            "properties": {
                "hp": {"type": "integer", "minimum": 0, "maximum": 100},
                "bag": {"type": "array", "items": {"type": "string"}},
                "mood": {"enum": ["calm", "angry"]}
            },
            "additionalProperties": false
        })))
    }

    #[test]
    fn ops_follow_the_target_type() {
        let spec = spec();
        assert_eq!(spec.ops_at(&[json!("hp")]), [Op::Assign, Op::Increment]);
        assert_eq!(
            spec.ops_at(&[json!("bag")]),
            [Op::Assign, Op::Delete, Op::Push, Op::Pop, Op::Splice]
        );
        assert_eq!(
            spec.ops_at(&[json!("bag"), json!(3)]),
            [Op::Assign, Op::Delete]
        );
        assert_eq!(spec.ops_at(&[]), [Op::Merge]);
        assert!(spec.ops_at(&[json!("nope")]).is_empty());
    }

    #[test]
    fn check_says_why() {
        let spec = spec();
        assert_eq!(
            spec.check(&json!({"op": "push", "path": ["hp"], "value": 1})),
            Err(Mismatch::OpNotAllowed(vec![Op::Assign, Op::Increment]))
        );
        assert_eq!(
            spec.check(&json!({"op": "assign", "path": ["hp"], "value": 101})),
            Err(Mismatch::BadValue(
                "assign needs an integer from 0 to 100".into()
            ))
        );
        assert!(
            spec.accepts(&json!({"op": "assign", "path": ["mood"], "value": "calm", "old": null}))
        );
        assert!(spec.accepts(&json!({"op": "merge", "path": [], "value": {"mood": "angry"}})));
        assert_eq!(
            spec.check(&json!({"op": "assign", "path": ["x"], "value": 1})),
            Err(Mismatch::UnknownPath)
        );
    }

    #[test]
    fn descriptions_name_the_bounds() {
        let spec = InstructionSpec::from_schema(Some(&json!({"properties": {
            "w": {"type": "number", "exclusiveMinimum": 0, "maximum": 5}
        }})));
        assert_eq!(
            spec.check(&json!({"op": "assign", "path": ["w"], "value": 0})),
            Err(Mismatch::BadValue(
                "assign needs a number greater than 0 and at most 5".into()
            ))
        );
    }

    #[test]
    fn free_schemas_allow_every_path_below() {
        let spec = InstructionSpec::from_schema(None);
        assert!(spec.accepts(&json!({"op": "push", "path": ["a", 0, "b"], "value": 1})));
        assert!(spec.accepts(&json!({"op": "merge", "path": [], "value": {"a": 1}})));
        assert!(!spec.accepts(&json!({"op": "assign", "path": [], "value": 1})));
        assert!(!spec.accepts(&json!({"op": "increment", "path": ["a"], "value": "1"})));
    }

    #[test]
    fn recursive_references_end() {
        let spec = InstructionSpec::from_schema(Some(&json!({
            "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
            "$ref": "#/$defs/node"
        })));
        let deepest = spec.targets.iter().map(|t| t.path.len()).max();
        assert_eq!(deepest, Some(MAX_DESCRIBED_SEGMENTS));
        assert!(spec.is_partial());
        assert!(!InstructionSpec::from_schema(None).is_partial());
    }
}
