//! Paths into a state: lists of key and index segments.
//!
//! The canonical path is a list (`["player", "hp"]`, `["inventory", 0]`). This module owns that form,
//! JSON Pointer rendering and strict JSON Pointer parsing (RFC 6901, used by JSON Patch). The lenient
//! spellings of model output (`"player.hp"`, `"a[0]"`) are text heuristics and live in the translators.

use std::borrow::Cow;
use std::fmt;

use crate::tree::{JsonTree, NodeKind, type_name};
use crate::value::Key;

/// One step of a path: an object key or an array index.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    /// An object key. On an existing array, a canonical decimal key (`"12"`) is read as an index.
    Key(Key),
    /// An array index. On a missing container, it creates an array.
    Index(usize),
}

impl Segment {
    /// A key segment.
    pub fn key(key: &str) -> Segment {
        Segment::Key(Key::from(key))
    }

    /// The index this segment names on an existing array: an integer, or a decimal key with no sign
    /// and no leading zeros (docs/instructions.md).
    pub fn as_index(&self) -> Option<usize> {
        match self {
            Segment::Index(i) => Some(*i),
            Segment::Key(key) => decimal_index(key),
        }
    }
}

/// Reads `"0"`, `"12"` as indexes; refuses `"-1"`, `"01"`, `"+1"`, `""`.
pub fn decimal_index(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.is_empty()
        || !bytes.iter().all(u8::is_ascii_digit)
        || (bytes.len() > 1 && bytes[0] == b'0')
    {
        return None;
    }
    text.parse().ok()
}

impl fmt::Debug for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Segment::Key(key) => write!(f, "{key:?}"),
            Segment::Index(index) => write!(f, "{index}"),
        }
    }
}

impl From<&str> for Segment {
    fn from(key: &str) -> Segment {
        Segment::key(key)
    }
}

impl From<usize> for Segment {
    fn from(index: usize) -> Segment {
        Segment::Index(index)
    }
}

/// A list of segments from the root. The empty path is the root itself.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Path(Vec<Segment>);

impl Path {
    /// The root.
    pub fn root() -> Path {
        Path(Vec::new())
    }

    /// The segments, root first.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// How many segments.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether this is the root.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// This path with one more segment.
    pub fn child(&self, segment: impl Into<Segment>) -> Path {
        let mut segments = Vec::with_capacity(self.0.len() + 1);
        segments.extend_from_slice(&self.0);
        segments.push(segment.into());
        Path(segments)
    }

    /// Appends a segment in place.
    pub fn push(&mut self, segment: impl Into<Segment>) {
        self.0.push(segment.into());
    }

    /// The parent and last segment, or `None` for the root.
    pub fn split_last(&self) -> Option<(&[Segment], &Segment)> {
        self.0.split_last().map(|(last, parent)| (parent, last))
    }

    /// Whether `self` is `other` or lies under it.
    pub fn starts_with(&self, other: &Path) -> bool {
        self.0.starts_with(&other.0)
    }

    /// The RFC 6901 JSON Pointer (`/player/hp`, `""` for the root).
    pub fn to_pointer(&self) -> String {
        pointer_of(&self.0)
    }

    /// Parses an RFC 6901 JSON Pointer strictly: `""` is the root, every other pointer starts with
    /// `/`, `~0` is `~` and `~1` is `/`. Every segment is a key; array access reads decimal keys as
    /// indexes (docs/instructions.md).
    pub fn from_pointer(pointer: &str) -> Result<Path, PointerError> {
        if pointer.is_empty() {
            return Ok(Path::root());
        }
        let Some(rest) = pointer.strip_prefix('/') else {
            return Err(PointerError::MissingSlash);
        };
        let mut segments = Vec::new();
        for raw in rest.split('/') {
            segments.push(Segment::key(&unescape_pointer_token(raw)?));
        }
        Ok(Path(segments))
    }
}

/// Why a JSON Pointer did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PointerError {
    /// A non-empty pointer must start with `/`.
    #[error("a JSON Pointer must be empty or start with '/'")]
    MissingSlash,
    /// `~` must be followed by `0` or `1`.
    #[error("'~' must be followed by '0' or '1' in a JSON Pointer")]
    BadEscape,
}

/// Reads one RFC 6901 reference token into the key it names: `~0` is `~` and `~1` is `/`. The one
/// place pointer tokens are read; every crate calls it.
pub fn unescape_pointer_token(raw: &str) -> Result<Cow<'_, str>, PointerError> {
    if !raw.contains('~') {
        return Ok(Cow::Borrowed(raw));
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return Err(PointerError::BadEscape),
            }
        } else {
            out.push(c);
        }
    }
    Ok(Cow::Owned(out))
}

/// Writes `key` as one RFC 6901 reference token: `~` as `~0` and `/` as `~1`. The one place pointer
/// tokens are written; every crate calls it.
pub fn escape_pointer_token(key: &str) -> Cow<'_, str> {
    if !key.contains(['~', '/']) {
        return Cow::Borrowed(key);
    }
    let mut out = String::with_capacity(key.len() + 2);
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Renders segments as an RFC 6901 JSON Pointer.
pub(crate) fn pointer_of(segments: &[Segment]) -> String {
    let mut out = String::new();
    for segment in segments {
        out.push('/');
        match segment {
            Segment::Key(key) => out.push_str(&escape_pointer_token(key)),
            Segment::Index(index) => out.push_str(&index.to_string()),
        }
    }
    out
}

impl fmt::Debug for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.0).finish()
    }
}

/// The JSON Pointer form, which is unambiguous and what error messages quote.
impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_pointer())
    }
}

impl From<Vec<Segment>> for Path {
    fn from(segments: Vec<Segment>) -> Path {
        Path(segments)
    }
}

impl<const N: usize> From<[Segment; N]> for Path {
    fn from(segments: [Segment; N]) -> Path {
        Path(segments.into())
    }
}

impl FromIterator<Segment> for Path {
    fn from_iter<I: IntoIterator<Item = Segment>>(iter: I) -> Path {
        Path(iter.into_iter().collect())
    }
}

/// Builds a path from keys and indexes: `path!["player", "hp"]`, `path!["inventory", 0]`.
#[macro_export]
macro_rules! path {
    ($($segment:expr),* $(,)?) => {
        $crate::Path::from(vec![$($crate::Segment::from($segment)),*])
    };
}

/// Serialized as the canonical list: strings and non-negative integers.
impl serde::Serialize for Path {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for segment in &self.0 {
            match segment {
                Segment::Key(key) => seq.serialize_element(&**key)?,
                Segment::Index(index) => seq.serialize_element(index)?,
            }
        }
        seq.end()
    }
}

/// Read straight from the deserializer, without building a JSON value first: a save's change logs hold
/// one path per change, so this is on the path of loading every save.
impl<'de> serde::Deserialize<'de> for Path {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Path, D::Error> {
        deserializer.deserialize_any(PathVisitor)
    }
}

/// The canonical list form, with the messages of [`path_from_json`].
struct PathVisitor;

impl<'de> serde::de::Visitor<'de> for PathVisitor {
    type Value = Path;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a path: a list of keys and indexes, like [\"player\", \"hp\"]")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Path, A::Error> {
        let mut segments = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(segment) = seq.next_element_seed(SegmentSeed(segments.len()))? {
            segments.push(segment);
        }
        Ok(Path(segments))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Path, A::Error> {
        Err(not_a_list(map_kind(map)?))
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Path, E> {
        Err(not_a_list("a string"))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Path, E> {
        Err(not_a_list("a boolean"))
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Path, E> {
        Err(not_a_list("a number"))
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Path, E> {
        Err(not_a_list("a number"))
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Path, E> {
        Err(not_a_list("a number"))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Path, E> {
        Err(not_a_list("null"))
    }
}

/// What a map the reader hands over is: serde_json's arbitrary precision hands numbers it does not
/// keep as `u64`, `i64` or `f64` (every float, here) over as a map of their own.
fn map_kind<'de, A: serde::de::MapAccess<'de>>(map: A) -> Result<&'static str, A::Error> {
    let value = <serde_json::Value as serde::Deserialize>::deserialize(
        serde::de::value::MapAccessDeserializer::new(map),
    )?;
    Ok(if value.is_number() {
        "a number"
    } else {
        "an object"
    })
}

fn not_a_list<E: serde::de::Error>(found: &str) -> E {
    E::custom(format!(
        "a path must be a list of keys and indexes, like [\"player\", \"hp\"], not {found}"
    ))
}

/// Segment `.0` of a path: a string key or a non-negative integer index.
struct SegmentSeed(usize);

impl<'de> serde::de::DeserializeSeed<'de> for SegmentSeed {
    type Value = Segment;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Segment, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl SegmentSeed {
    fn not_a_segment<E: serde::de::Error>(&self, found: &str) -> E {
        E::custom(format!(
            "segment {} must be a string key or an integer index, not {found}",
            self.0
        ))
    }

    fn not_an_index<E: serde::de::Error>(&self, n: impl fmt::Display) -> E {
        E::custom(format!(
            "segment {} must be a non-negative integer index, not {n}",
            self.0
        ))
    }
}

impl<'de> serde::de::Visitor<'de> for SegmentSeed {
    type Value = Segment;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key or a non-negative integer index")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Segment, E> {
        Ok(Segment::key(key))
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Segment, E> {
        usize::try_from(n)
            .map(Segment::Index)
            .map_err(|_| self.not_an_index(n))
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Segment, E> {
        match u64::try_from(n) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Err(self.not_an_index(n)),
        }
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Segment, E> {
        Err(self.not_an_index(n))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Segment, E> {
        Err(self.not_a_segment("a boolean"))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Segment, E> {
        Err(self.not_a_segment("null"))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<Segment, A::Error> {
        Err(self.not_a_segment("an array"))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Segment, A::Error> {
        let value = <serde_json::Value as serde::Deserialize>::deserialize(
            serde::de::value::MapAccessDeserializer::new(map),
        )?;
        match value {
            serde_json::Value::Number(n) => Err(self.not_an_index(n)),
            _ => Err(self.not_a_segment("an object")),
        }
    }
}

/// Reads the canonical list form. The string spellings are the lenient layer's job.
pub(crate) fn path_from_json<'a>(json: impl JsonTree<'a>) -> Result<Path, String> {
    if json.kind() != NodeKind::Array {
        return Err(format!(
            "a path must be a list of keys and indexes, like [\"player\", \"hp\"], not {}",
            type_name(json)
        ));
    }
    let mut segments = Vec::new();
    for (i, item) in json.items().enumerate() {
        match item.kind() {
            NodeKind::String(key) => segments.push(Segment::key(key)),
            NodeKind::Number(n) => match n.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(index) => segments.push(Segment::Index(index)),
                None => {
                    return Err(format!(
                        "segment {i} must be a non-negative integer index, not {n}"
                    ));
                }
            },
            _ => {
                return Err(format!(
                    "segment {i} must be a string key or an integer index, not {}",
                    type_name(item)
                ));
            }
        }
    }
    Ok(Path(segments))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_round_trip_escapes() {
        let path = path!["a/b", "c~d", 3];
        assert_eq!(path.to_pointer(), "/a~1b/c~0d/3");
        assert_eq!(
            Path::from_pointer("/a~1b/c~0d/3").unwrap(),
            path!["a/b", "c~d", "3"]
        );
        assert_eq!(Path::from_pointer("").unwrap(), Path::root());
        assert_eq!(Path::from_pointer("/").unwrap(), path![""]);
        assert_eq!(Path::from_pointer("a"), Err(PointerError::MissingSlash));
        assert_eq!(Path::from_pointer("/~2"), Err(PointerError::BadEscape));
    }

    #[test]
    fn pointer_tokens_escape_and_read_back() {
        for key in ["hp", "", "a/b", "c~d", "~01/", "好感度/~"] {
            let token = escape_pointer_token(key);
            assert!(!token.contains('/'), "{token}");
            assert_eq!(unescape_pointer_token(&token).unwrap(), key);
        }
        assert!(matches!(escape_pointer_token("hp"), Cow::Borrowed("hp")));
        assert_eq!(escape_pointer_token("~1"), "~01");
        assert_eq!(unescape_pointer_token("~01").unwrap(), "~1");
        assert_eq!(unescape_pointer_token("~"), Err(PointerError::BadEscape));
    }

    #[test]
    fn decimal_keys_read_as_indexes_only_when_canonical() {
        assert_eq!(decimal_index("0"), Some(0));
        assert_eq!(decimal_index("12"), Some(12));
        for bad in ["", "01", "-1", "+1", "1a", "99999999999999999999999"] {
            assert_eq!(decimal_index(bad), None, "{bad}");
        }
    }

    #[test]
    fn deserializing_reads_what_path_from_json_reads_and_says_the_same() {
        for text in [
            r#"["a", 0, "b~/c", 18446744073709551615]"#,
            "[]",
            r#""a""#,
            "{}",
            "null",
            "3",
            r#"["a", -1]"#,
            r#"["a", 1.5]"#,
            "1.5",
            r#"["a", 100000000000000000000000]"#,
            r#"["a", true]"#,
            r#"["a", null]"#,
            r#"["a", [0]]"#,
            r#"["a", {}]"#,
        ] {
            let json: serde_json::Value = serde_json::from_str(text).unwrap();
            let read = serde_json::from_str::<Path>(text).map_err(|e| e.to_string());
            match (read, path_from_json(&json)) {
                (Ok(read), Ok(expected)) => assert_eq!(read, expected, "{text}"),
                (Err(read), Err(expected)) => {
                    assert!(read.starts_with(&expected), "{text}: {read} / {expected}")
                }
                (read, expected) => panic!("{text}: {read:?} / {expected:?}"),
            }
        }
    }
}
