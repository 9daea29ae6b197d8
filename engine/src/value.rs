//! The persistent value tree that holds a state.
//!
//! Objects are `imbl::OrdMap`s (deterministic key order, O(1) clones, path copying on write) and arrays
//! are `imbl::Vector`s. Numbers keep their exact text (`number.rs`), so their JSON kind too: `5` stays
//! an integer, `5.0` stays a float. This
//! module owns conversion to and from `serde_json::Value` and the numeric equality used by old-value
//! checks. It must not know about instructions or paths.

use std::fmt;
use std::sync::Arc;

use imbl::{OrdMap, Vector};

use crate::number::Number;

use crate::path::Segment;
use crate::tree::{JsonTree, NodeKind};

/// An object key: short keys are stored inline (no allocation, no reference count to touch when a map
/// node is copied), longer ones are shared.
pub type Key = smol_str::SmolStr;
/// An object: keys in sorted order. Clone: O(1).
pub type Object = OrdMap<Key, Value>;

/// A key to search an object for: `map.get(&Probe(key))` finds what `map.get(key)` finds, comparing
/// bytes inline where `str`'s comparison calls `memcmp`. Keys are short and a search compares a few
/// in every node it passes, so the call is most of a comparison's cost.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe<'a>(pub(crate) &'a str);

impl equivalent::Equivalent<Key> for Probe<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.0 == key.as_str()
    }
}

impl equivalent::Comparable<Key> for Probe<'_> {
    #[inline]
    fn compare(&self, key: &Key) -> std::cmp::Ordering {
        let (a, b) = (self.0.as_bytes(), key.as_bytes());
        // Long keys are left to `memcmp`, which is faster past a few words.
        if a.len().min(b.len()) > 16 {
            return a.cmp(b);
        }
        for (x, y) in a.iter().zip(b) {
            if x != y {
                return x.cmp(y);
            }
        }
        a.len().cmp(&b.len())
    }
}
/// An array: an `imbl::Vector` behind one shared pointer, so that a `Value` stays 24 bytes (a vector
/// stored inline makes every map entry 80 bytes, and map nodes are copied on write; at 24 bytes the
/// vector keeps two elements inline, without a 64-slot chunk). Reads go through
/// `Deref`; writes through `DerefMut` copy the vector's spine only when it is shared. Clone: O(1).
#[derive(Clone, Default)]
pub struct Array(Arc<Vector<Value>>);

impl Array {
    /// An empty array.
    pub fn new() -> Array {
        Array::default()
    }

    /// Whether two arrays share their storage. Time: O(1).
    pub fn ptr_eq(&self, other: &Array) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.ptr_eq(&other.0)
    }
}

impl std::ops::Deref for Array {
    type Target = Vector<Value>;

    fn deref(&self) -> &Vector<Value> {
        &self.0
    }
}

impl std::ops::DerefMut for Array {
    fn deref_mut(&mut self) -> &mut Vector<Value> {
        Arc::make_mut(&mut self.0)
    }
}

impl FromIterator<Value> for Array {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> Array {
        Array(Arc::new(iter.into_iter().collect()))
    }
}

impl<'a> IntoIterator for &'a Array {
    type Item = &'a Value;
    type IntoIter = imbl::vector::Iter<'a, Value, imbl::shared_ptr::DefaultSharedPtr>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

/// One JSON value in a state, on persistent data structures.
#[derive(Clone, Default)]
pub enum Value {
    /// `null`.
    #[default]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number; integers and floats stay apart.
    Number(Number),
    /// A string.
    String(Arc<str>),
    /// An array.
    Array(Array),
    /// An object.
    Object(Object),
}

// The figure ARCHITECTURE.md, docs/numbers-and-keys.md and the history's byte estimate
// (`retained.rs`) rely on: a value is three words, so a map or vector node copied on write is small.
const _: () = assert!(std::mem::size_of::<Value>() == 24);

/// The JSON type of a value, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// `null`
    Null,
    /// `true`/`false`
    Bool,
    /// an integer or float
    Number,
    /// a string
    String,
    /// an array
    Array,
    /// an object
    Object,
}

/// The type with its article, as messages use it: "an object", "a string", "null".
impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ValueType::Null => "null",
            ValueType::Bool => "a boolean",
            ValueType::Number => "a number",
            ValueType::String => "a string",
            ValueType::Array => "an array",
            ValueType::Object => "an object",
        })
    }
}

impl Value {
    /// An empty object.
    pub fn object() -> Value {
        Value::Object(Object::new())
    }

    /// The JSON type of this value.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Null => ValueType::Null,
            Value::Bool(_) => ValueType::Bool,
            Value::Number(_) => ValueType::Number,
            Value::String(_) => ValueType::String,
            Value::Array(_) => ValueType::Array,
            Value::Object(_) => ValueType::Object,
        }
    }

    /// The object inside, if this is one.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// The array inside, if this is one.
    pub fn as_array(&self) -> Option<&Array> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The string inside, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(text) => Some(text),
            _ => None,
        }
    }

    /// The number inside, if this is one.
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Value::Number(number) => Some(number),
            _ => None,
        }
    }

    /// Whether two values share their storage (same allocation for containers and strings, equal
    /// scalars). Time: O(1).
    pub fn ptr_eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(a), Value::Number(b)) => a == b,
            (Value::String(a), Value::String(b)) => Arc::ptr_eq(a, b),
            (Value::Array(a), Value::Array(b)) => a.ptr_eq(b),
            (Value::Object(a), Value::Object(b)) => a.ptr_eq(b),
            _ => false,
        }
    }

    /// How deeply containers nest in this value: 0 for a scalar, 1 for `[]` or `[1]`, 2 for `[[1]]`.
    /// Iterative, so it is safe on any value. Time: O(n).
    pub fn depth(&self) -> usize {
        self.measure(usize::MAX).depth
    }

    /// A rough estimate of the heap bytes this value holds, counting shared parts as if they were
    /// not shared. Stops counting once `cap` is reached. Time: O(min(n, cap)).
    pub fn estimated_bytes(&self, cap: usize) -> usize {
        self.measure(cap).bytes
    }

    /// The estimated bytes (as [`Value::estimated_bytes`]) and the nesting depth (as [`Value::depth`])
    /// in one iterative walk, which stops once `cap` bytes are counted: the depth then covers only
    /// what was walked. The estimate is additive, which is what lets a store keep its state's size from
    /// its change log: a value placed in an array adds its own estimate, and one placed under a new
    /// object key adds its estimate plus [`entry_bytes`] of the key. Time: O(min(n, cap)).
    pub(crate) fn measure(&self, cap: usize) -> Measure {
        match self {
            Value::Null | Value::Bool(_) | Value::Number(_) => {
                return Measure {
                    bytes: SLOT.min(cap),
                    depth: 0,
                };
            }
            Value::String(text) => {
                return Measure {
                    bytes: (SLOT + text.len() + 16).min(cap),
                    depth: 0,
                };
            }
            Value::Array(_) | Value::Object(_) => {}
        }
        let mut measure = Measure {
            bytes: SLOT,
            depth: 0,
        };
        let mut stack = vec![(self, 0)];
        while let Some((value, depth)) = stack.pop() {
            if measure.bytes >= cap {
                measure.bytes = cap;
                return measure;
            }
            match value {
                Value::String(text) => measure.bytes += text.len() + 16,
                Value::Array(items) => {
                    measure.depth = measure.depth.max(depth + 1);
                    measure.bytes += items.len() * SLOT;
                    stack.extend(items.iter().map(|item| (item, depth + 1)));
                }
                Value::Object(map) => {
                    measure.depth = measure.depth.max(depth + 1);
                    for (key, item) in map {
                        measure.bytes += entry_bytes(key) + SLOT;
                        stack.push((item, depth + 1));
                    }
                }
                _ => {}
            }
        }
        measure.bytes = measure.bytes.min(cap);
        measure
    }

    /// The value at `segments` under this one, read as the engine reads it: keys in objects, indexes
    /// (and decimal keys, docs/instructions.md) in arrays; `None` when absent or when the path runs through a
    /// scalar. The one read-only lookup every crate uses. Time: O(depth × log n).
    pub fn lookup(&self, segments: &[Segment]) -> Option<&Value> {
        crate::exec::lookup(self, segments).ok().flatten()
    }

    /// Converts to a `serde_json::Value`. Time: O(n).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => serde_json::Value::Number(n.to_json()),
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(Value::to_json).collect())
            }
            Value::Object(map) => serde_json::Value::Object(
                map.iter()
                    .map(|(k, v)| (k.to_string(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// Converts from JSON: a `serde_json::Value` or any other [`JsonTree`]. Recursive: callers that
    /// take values from outside check the depth first (see [`json_depth`]); serde_json's own parser
    /// stops at 128 levels. Time: O(n).
    pub fn from_json<'a>(json: impl JsonTree<'a>) -> Value {
        match json.kind() {
            NodeKind::Null => Value::Null,
            NodeKind::Bool(b) => Value::Bool(b),
            NodeKind::Number(n) => Value::Number(Number::from(n)),
            NodeKind::String(s) => Value::String(Arc::from(s)),
            NodeKind::Array => Value::Array(json.items().map(Value::from_json).collect()),
            NodeKind::Object => Value::Object(
                json.members()
                    .map(|(key, value)| (Key::from(key), Value::from_json(value)))
                    .collect(),
            ),
        }
    }
}

/// The bytes one value takes in its parent besides the value itself: the slot that holds it.
const SLOT: usize = std::mem::size_of::<Value>();

/// What [`Value::measure`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Measure {
    /// The estimated heap bytes, at most the cap.
    pub(crate) bytes: usize,
    /// How deeply containers nest (0 for a scalar).
    pub(crate) depth: usize,
}

/// The bytes an object entry takes besides its value's own estimate: the key, inline or shared.
pub(crate) fn entry_bytes(key: &Key) -> usize {
    let heap = if key.is_heap_allocated() {
        key.len() + 16
    } else {
        0
    };
    std::mem::size_of::<Key>() + heap
}

/// How deeply containers nest in JSON (0 for a scalar), computed without recursion.
pub fn json_depth<'a, T: JsonTree<'a>>(json: T) -> usize {
    let is_container = |node: T| matches!(node.kind(), NodeKind::Array | NodeKind::Object);
    if !is_container(json) {
        // Scalars are most values: they need no stack.
        return 0;
    }
    let mut deepest = 0;
    let mut stack = vec![(json, 1usize)];
    while let Some((node, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        let children = node.items().chain(node.members().map(|(_, value)| value));
        stack.extend(
            children
                .filter(|&child| is_container(child))
                .map(|child| (child, depth + 1)),
        );
    }
    deepest
}

/// Numeric equality: `100 == 100.0`, and integers compare exactly at any size (numbers keep their
/// exact text, so `123456789012345678901234567890` is that integer, not the nearest float).
pub fn numbers_equal(a: &Number, b: &Number) -> bool {
    // Equal texts (and so two equal inline integers) are equal numbers.
    if a == b {
        return true;
    }
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64())
        && a.is_integer()
        && b.is_integer()
    {
        return x == y;
    }
    match (exact_integer(a), exact_integer(b)) {
        (Some(x), Some(y)) => x == y,
        // Integers beyond 128 bits have one spelling each (JSON allows no leading zeros or plus sign),
        // so different texts are different integers.
        _ if is_integer(a) && is_integer(b) => false,
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
    }
}

/// Whether a number is written as an integer (no fraction, no exponent), whatever its size.
pub(crate) fn is_integer(n: &Number) -> bool {
    n.is_integer()
}

/// The exact integer value of a number written as an integer, or of a float with no fraction, when
/// it fits 128 bits.
fn exact_integer(n: &Number) -> Option<i128> {
    if is_integer(n) {
        return n.as_i128();
    }
    let float = n.as_f64()?;
    // Every float of magnitude below 2^127 with no fraction is an exact i128.
    (float.fract() == 0.0 && float.abs() < 1.7e38).then_some(float as i128)
}

/// Deep equality with numeric comparison of numbers (`{"hp": 100}` equals `{"hp": 100.0}`).
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(a), Value::Number(b)) => numbers_equal(a, b),
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => {
                a.ptr_eq(b) || (a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x == y))
            }
            (Value::Object(a), Value::Object(b)) => {
                a.ptr_eq(b)
                    || (a.len() == b.len()
                        && a.iter()
                            .zip(b.iter())
                            .all(|((ka, va), (kb, vb))| ka == kb && va == vb))
            }
            _ => false,
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Compact JSON text.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&serde_json::to_string(self).map_err(|_| fmt::Error)?)
    }
}

impl From<serde_json::Value> for Value {
    fn from(json: serde_json::Value) -> Value {
        Value::from_json(&json)
    }
}

impl From<&serde_json::Value> for Value {
    fn from(json: &serde_json::Value) -> Value {
        Value::from_json(json)
    }
}

impl From<&Value> for serde_json::Value {
    fn from(value: &Value) -> serde_json::Value {
        value.to_json()
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Number(n.into())
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(Arc::from(s))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Value::Null => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::Number(n) => n.serialize(serializer),
            Value::String(s) => serializer.serialize_str(s),
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (key, item) in map {
                    out.serialize_entry(&**key, item)?;
                }
                out.end()
            }
        }
    }
}

/// Deserializes through `serde_json::Value`, so serde_json's nesting limit applies.
impl<'de> serde::Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
        let json = serde_json::Value::deserialize(deserializer)?;
        Ok(Value::from_json(&json))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_and_floats_keep_their_kind() {
        let value = Value::from(json!({"a": 5, "b": 5.0}));
        assert_eq!(value.to_string(), r#"{"a":5,"b":5.0}"#);
    }

    #[test]
    fn equality_is_numeric() {
        assert_eq!(
            Value::from(json!({"hp": 100})),
            Value::from(json!({"hp": 100.0}))
        );
        assert_ne!(
            Value::from(json!(u64::MAX)),
            Value::from(json!(u64::MAX - 1))
        );
        assert_ne!(Value::from(json!("1")), Value::from(json!(1)));
    }

    #[test]
    fn integers_beyond_64_bits_stay_exact_and_compare_exactly() {
        let text = r#"{"big":123456789012345678901234567890,"huge":1234567890123456789012345678901234567890123,"neg":-98765432109876543210}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            value.to_string(),
            text,
            "every integer keeps its exact text"
        );
        let number = |text: &str| text.parse::<Number>().unwrap();
        assert!(numbers_equal(
            &number("123456789012345678901234567890"),
            &number("123456789012345678901234567890")
        ));
        // The nearest floats of these are equal; the integers are not.
        assert!(!numbers_equal(
            &number("123456789012345678901234567890"),
            &number("123456789012345678901234567891")
        ));
        assert!(!numbers_equal(
            &number("1234567890123456789012345678901234567890123"),
            &number("1234567890123456789012345678901234567890124")
        ));
        assert!(numbers_equal(&number("-0"), &number("0")));
        assert!(numbers_equal(&number("100"), &number("1e2")));
        assert!(numbers_equal(
            &number("1e20"),
            &number("100000000000000000000")
        ));
    }

    #[test]
    fn depth_counts_container_levels() {
        assert_eq!(Value::from(json!(1)).depth(), 0);
        assert_eq!(Value::from(json!([[1], {"a": {}}])).depth(), 3);
    }
}
