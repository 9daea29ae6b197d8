//! JSON text whose objects name each member once.
//!
//! JSON leaves an object that names a member twice to the reader, and `serde_json` keeps the last one
//! silently: `{"op": "increment", "path": ["n"], "value": 1, "value": 1000}` would add 1000, though
//! whoever wrote it may have meant 1. Every host that reads batches (or any request) as JSON text
//! refuses such text instead, with [`duplicate_member`], before the text becomes a value and the
//! first of the two is gone. This module must not build values: it only reads the text through.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::error::{BatchError, ErrorKind, Trail};

/// A member named twice in one object of a JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateMember {
    /// The path from the top of the text to the object, as keys and indexes.
    pub object: Vec<String>,
    /// The member's name.
    pub member: String,
    /// The line of its second occurrence (from 1).
    pub line: usize,
    /// The column just past that occurrence's name (from 1), as `serde_json` counts.
    pub column: usize,
}

impl DuplicateMember {
    /// The JSON Pointer of the object holding the member (`""` for the top).
    pub fn pointer(&self) -> String {
        self.object
            .iter()
            .map(|segment| format!("/{}", crate::escape_pointer_token(segment)))
            .collect()
    }

    /// The error a batch's text gets: in the instruction the object is part of (the text is an array
    /// of instructions when `array`, else one instruction), at the member.
    pub fn in_batch(&self, array: bool) -> BatchError {
        let (index, inside) = match self.object.split_first() {
            Some((first, rest)) if array => (first.parse().unwrap_or(0), rest),
            _ => (0, &self.object[..]),
        };
        let field: String = inside
            .iter()
            .chain(std::iter::once(&self.member))
            .map(|segment| format!("/{}", crate::escape_pointer_token(segment)))
            .collect();
        BatchError::in_field(
            ErrorKind::InvalidField,
            &Trail(vec![index]),
            field,
            format!(
                "the member \"{}\" is given twice in one object (line {}, column {}); give it \
                 once, as no reader can tell which one was meant",
                self.member, self.line, self.column
            ),
        )
    }
}

/// `the member "value" is given twice in the object at /batch/0 (line 1, column 60)`.
impl fmt::Display for DuplicateMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pointer = self.pointer();
        write!(f, "the member \"{}\" is given twice in ", self.member)?;
        if pointer.is_empty() {
            f.write_str("the top object")?;
        } else {
            write!(f, "the object at {pointer}")?;
        }
        write!(f, " (line {}, column {})", self.line, self.column)
    }
}

/// The first member that an object of `text` names twice, if any. Text that is not JSON is the
/// parser's error (the same one `serde_json::from_str` gives).
pub fn duplicate_member(text: &str) -> Result<Option<DuplicateMember>, serde_json::Error> {
    let mut walk = Walk {
        path: Vec::new(),
        found: None,
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let read = Node(&mut walk)
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end());
    match (read, walk.found) {
        // The walk stopped at the second name with an error, which knows where it stopped.
        (Err(error), Some((object, member))) => Ok(Some(DuplicateMember {
            object,
            member,
            line: error.line(),
            column: error.column(),
        })),
        (Err(error), None) => Err(error),
        (Ok(()), _) => Ok(None),
    }
}

/// The state of one walk: the path to the node being read, and the duplicate once found.
struct Walk<'de> {
    path: Vec<Segment<'de>>,
    found: Option<(Vec<String>, String)>,
}

/// A step of the path: a member's name, or an item's index (written out only for a duplicate, so
/// that a long list costs no text per item).
enum Segment<'de> {
    Member(Cow<'de, str>),
    Item(usize),
}

impl fmt::Display for Segment<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Segment::Member(name) => f.write_str(name),
            Segment::Item(index) => write!(f, "{index}"),
        }
    }
}

/// A node to read, anywhere in the text.
struct Node<'w, 'de>(&'w mut Walk<'de>);

impl<'de> DeserializeSeed<'de> for Node<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        let walk = self.0;
        let mut index = 0usize;
        loop {
            walk.path.push(Segment::Item(index));
            let more = items.next_element_seed(Node(walk))?;
            walk.path.pop();
            if more.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<(), A::Error> {
        let walk = self.0;
        let mut seen: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(key) = members.next_key_seed(Key)? {
            if seen.contains(&key) {
                walk.found = Some((
                    walk.path
                        .iter()
                        .map(|segment| segment.to_string())
                        .collect(),
                    key.into_owned(),
                ));
                return Err(de::Error::custom("a member is given twice"));
            }
            walk.path.push(Segment::Member(key.clone()));
            members.next_value_seed(Node(walk))?;
            walk.path.pop();
            seen.insert(key);
        }
        Ok(())
    }
}

/// A member's name, borrowed from the text when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Cow<'de, str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(name))
    }

    fn visit_str<E>(self, name: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Batch;

    #[test]
    fn a_member_given_twice_is_found_with_its_object_and_place() {
        let text = r#"[{"op": "assign", "path": ["a"], "value": 1},
 {"op": "increment", "path": ["n"], "value": 1, "value": 1000}]"#;
        let duplicate = duplicate_member(text).unwrap().expect("a duplicate");
        assert_eq!(duplicate.object, vec!["1".to_owned()]);
        assert_eq!(duplicate.member, "value");
        assert_eq!((duplicate.line, duplicate.column), (2, 55));
        assert_eq!(
            duplicate.to_string(),
            "the member \"value\" is given twice in the object at /1 (line 2, column 55)"
        );
        let error = duplicate.in_batch(true);
        assert_eq!(error.instruction, Some(Trail(vec![1])));
        assert_eq!(error.field.as_deref(), Some("/value"));
    }

    #[test]
    fn duplicates_are_found_at_any_depth_and_through_escapes() {
        let nested = r#"{"op": "assign", "path": ["a"], "value": {"x/y": {"b": 1, "b": 2}}}"#;
        let duplicate = duplicate_member(nested).unwrap().expect("a duplicate");
        assert_eq!(duplicate.pointer(), "/value/x~1y");
        assert_eq!(
            duplicate.in_batch(false).field.as_deref(),
            Some("/value/x~1y/b")
        );
        // `\u0061` is `a`: the same member, however it is spelled.
        let escaped = r#"{"a": 1, "\u0061": 2}"#;
        assert_eq!(
            duplicate_member(escaped)
                .unwrap()
                .expect("a duplicate")
                .member,
            "a"
        );
        let top = duplicate_member(r#"{"a": 1, "a": 2}"#)
            .unwrap()
            .expect("a duplicate");
        assert!(top.to_string().contains("the top object"), "{top}");
    }

    #[test]
    fn text_without_duplicates_passes_and_text_that_is_not_json_is_an_error() {
        for text in [
            r#"[{"a": 1, "b": 2}, {"a": 1, "b": 2}]"#,
            r#"{"a": {"a": {"a": 1}}, "n": 123456789012345678901234567890.5e-3}"#,
            "[]",
            "\"text\"",
        ] {
            assert_eq!(duplicate_member(text).unwrap(), None, "{text}");
        }
        assert!(duplicate_member(r#"{"a": 1,"#).is_err());
        assert!(duplicate_member(r#"{"a": 1} x"#).is_err());
    }

    #[test]
    fn a_batch_with_a_member_given_twice_is_refused_at_the_member() {
        let errors =
            Batch::parse(r#"{"op": "increment", "path": ["n"], "value": 1, "value": 1000}"#)
                .expect_err("refused");
        assert_eq!(errors.0.len(), 1);
        assert_eq!(errors.0[0].kind, ErrorKind::InvalidField);
        assert_eq!(errors.0[0].instruction, Some(Trail(vec![0])));
        assert_eq!(errors.0[0].field.as_deref(), Some("/value"));
        assert!(
            errors.0[0].message.contains("\"value\" is given twice"),
            "{}",
            errors.0[0].message
        );
    }
}
