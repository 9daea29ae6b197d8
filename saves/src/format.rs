//! The on-disk format: the file header, checksummed record frames and the record payloads.
//!
//! A save file is a 20-byte header (the magic `statecraft save\n` and the format version as a
//! little-endian `u32`) followed by records. Each record is framed as its payload length (`u32` LE), a
//! CRC-32 of those four length bytes, a CRC-32 of the payload, then the payload: one JSON document.
//! The first record is always the base (the state before the oldest retained step, the schema, the
//! scripts reference, the history bounds and the metadata); the others are steps (a label and the
//! change log the engine committed), undos and redos. `saves/FORMAT.md` is the full description.
//!
//! The frame is built so that a torn append, which can only leave a prefix of the last record (or, after
//! a power loss, zeros), is told apart from damage: a record that is complete but fails its checksum is
//! damage, never a torn tail. This module decodes and encodes; it must not touch files or the engine's
//! store.

use std::sync::Arc;

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use statecraft_engine::{Array, Change, HistoryLimits, Key, Object, Op, Path, Value};

/// The first bytes of every save file.
pub(crate) const MAGIC: &[u8; 16] = b"statecraft save\n";
/// The format version this build writes. Readers for every older version stay (see [`crate::Game::open`]).
pub(crate) const FORMAT_VERSION: u32 = 1;
/// The oldest format version this build reads.
pub(crate) const OLDEST_VERSION: u32 = 1;
/// Magic plus version.
pub(crate) const FILE_HEADER_LEN: usize = 20;
/// Length, length checksum, payload checksum.
pub(crate) const FRAME_HEADER_LEN: usize = 12;
/// No honest record comes near this; a larger length is damage, not a reason to allocate.
const MAX_PAYLOAD: u32 = 1 << 31;

/// The file header for the current version.
pub(crate) fn file_header() -> [u8; FILE_HEADER_LEN] {
    let mut header = [0; FILE_HEADER_LEN];
    header[..16].copy_from_slice(MAGIC);
    header[16..].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header
}

/// What the file header says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Header {
    /// A save of this format version.
    Version(u32),
    /// Not a save: where reading stopped, and the problem.
    NotASave(usize, String),
}

/// Reads the file header.
pub(crate) fn read_header(bytes: &[u8]) -> Header {
    if bytes.starts_with(MAGIC) {
        let Some(version) = bytes.get(16..FILE_HEADER_LEN) else {
            return Header::NotASave(
                bytes.len(),
                format!(
                    "the file ends at byte {} inside the format version",
                    bytes.len()
                ),
            );
        };
        return Header::Version(u32::from_le_bytes([
            version[0], version[1], version[2], version[3],
        ]));
    }
    if bytes.is_empty() {
        return Header::NotASave(0, "the file is empty, not a statecraft save".to_owned());
    }
    if bytes.len() < MAGIC.len() && MAGIC.starts_with(bytes) {
        return Header::NotASave(
            bytes.len(),
            format!(
                "the file ends at byte {} inside the statecraft save header",
                bytes.len()
            ),
        );
    }
    Header::NotASave(
        0,
        "the file does not start with the statecraft save magic".to_owned(),
    )
}

/// One step of scanning the records.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Scan<'a> {
    /// A whole, checksummed record: its payload and where the next one starts.
    Record { payload: &'a [u8], next: usize },
    /// The file ends here, cleanly.
    End,
    /// The rest of the file is an unfinished append: a prefix of a record, or zeros.
    Torn,
    /// The record at this offset is damaged.
    Damaged(String),
}

/// Reads the record frame at `offset`.
pub(crate) fn scan(bytes: &[u8], offset: usize) -> Scan<'_> {
    let rest = &bytes[offset.min(bytes.len())..];
    if rest.is_empty() {
        return Scan::End;
    }
    if rest.len() < FRAME_HEADER_LEN {
        return Scan::Torn;
    }
    let word = |at: usize| u32::from_le_bytes([rest[at], rest[at + 1], rest[at + 2], rest[at + 3]]);
    let (len, len_check, payload_check) = (word(0), word(4), word(8));
    if crc32fast::hash(&rest[..4]) != len_check {
        // A torn write leaves a prefix of correct bytes, so a complete but wrong header is damage;
        // only a zero-filled tail (a power loss after the file grew) is also unfinished.
        if rest.iter().all(|&b| b == 0) {
            return Scan::Torn;
        }
        return Scan::Damaged("the record header fails its checksum".to_owned());
    }
    if len > MAX_PAYLOAD {
        return Scan::Damaged(format!(
            "the record claims {len} bytes, more than any save record holds"
        ));
    }
    let len = len as usize;
    let Some(payload) = rest.get(FRAME_HEADER_LEN..FRAME_HEADER_LEN + len) else {
        return Scan::Torn;
    };
    if crc32fast::hash(payload) != payload_check {
        let last = FRAME_HEADER_LEN + len == rest.len();
        if last && payload.iter().all(|&b| b == 0) {
            return Scan::Torn;
        }
        return Scan::Damaged("the record fails its checksum".to_owned());
    }
    Scan::Record {
        payload,
        next: offset + FRAME_HEADER_LEN + len,
    }
}

/// Appends one framed record holding `record` as JSON.
pub(crate) fn push_record(
    out: &mut Vec<u8>,
    record: &impl Serialize,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER_LEN]);
    serde_json::to_writer(&mut *out, record)?;
    let len = out.len() - start - FRAME_HEADER_LEN;
    let len = u32::try_from(len)
        .ok()
        .filter(|&len| len <= MAX_PAYLOAD)
        .ok_or_else(|| {
            out.truncate(start);
            <serde_json::Error as serde::ser::Error>::custom(format!(
                "a record of {len} bytes is too large to save"
            ))
        })?;
    let len_bytes = len.to_le_bytes();
    let payload_check = crc32fast::hash(&out[start + FRAME_HEADER_LEN..]);
    out[start..start + 4].copy_from_slice(&len_bytes);
    out[start + 4..start + 8].copy_from_slice(&crc32fast::hash(&len_bytes).to_le_bytes());
    out[start + 8..start + 12].copy_from_slice(&payload_check.to_le_bytes());
    Ok(())
}

/// The first record: everything needed to rebuild the store before the retained steps.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Base {
    /// The state before the oldest retained step.
    #[serde(deserialize_with = "direct")]
    pub(crate) state: Value,
    /// The state's JSON Schema, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) schema: Option<serde_json::Value>,
    /// The scripts folder, as given at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scripts: Option<String>,
    /// The history bounds the game keeps.
    pub(crate) history: HistoryLimits,
    /// Free-form metadata (creation time, front end, card name).
    #[serde(default)]
    pub(crate) metadata: serde_json::Map<String, serde_json::Value>,
}

/// A base record as written, borrowing from the game.
#[derive(Serialize)]
pub(crate) struct BaseRef<'a> {
    pub(crate) state: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) schema: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) scripts: Option<&'a str>,
    pub(crate) history: HistoryLimits,
    pub(crate) metadata: &'a serde_json::Map<String, serde_json::Value>,
}

/// Every record, as read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Record {
    /// The base; only ever first.
    Base(Box<Base>),
    /// A committed step.
    Step(StepRecord),
    /// `steps` undos in a row.
    Undo { steps: usize },
    /// `steps` redos in a row.
    Redo { steps: usize },
}

/// Every record, as written. Externally tagged (`{"step": {...}}`) so that reading never buffers.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RecordRef<'a> {
    Base(BaseRef<'a>),
    Step {
        label: Option<&'a str>,
        changes: ChangesRef<'a>,
    },
    Undo {
        steps: usize,
    },
    Redo {
        steps: usize,
    },
}

/// A committed step as read.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepRecord {
    /// The label given at commit.
    #[serde(default)]
    pub(crate) label: Option<String>,
    /// The change log, in order.
    pub(crate) changes: Vec<DiskChange>,
}

/// A change log as written.
pub(crate) struct ChangesRef<'a>(pub(crate) &'a [Change]);

impl Serialize for ChangesRef<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|change| DiskChangeRef {
            path: &change.path,
            old: change.old.as_ref(),
            new: change.new.as_ref(),
            reason: change.reason.as_deref(),
            op: change.op.name(),
        }))
    }
}

/// One primitive change as written. An absent `old` or `new` is left out; JSON `null` is a value.
#[derive(Serialize)]
struct DiskChangeRef<'a> {
    path: &'a Path,
    #[serde(skip_serializing_if = "Option::is_none")]
    old: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    op: &'a str,
}

/// One primitive change as read.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DiskChange {
    path: Path,
    #[serde(default, deserialize_with = "present")]
    old: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    new: Option<Value>,
    #[serde(default)]
    reason: Option<String>,
    op: String,
}

/// A member that is there is a value, `null` included; serde's default would read `null` as absent.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    direct(deserializer).map(Some)
}

/// Reads an engine value straight from the JSON text. The engine's own `Deserialize` goes through a
/// `serde_json::Value` first, which for a large state costs as much as the rest of loading again (the
/// intermediate tree is built, converted and dropped); this builds the persistent tree in one pass.
/// serde_json's nesting limit still applies.
fn direct<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    deserializer.deserialize_any(ValueVisitor)
}

/// A value read by [`direct`], for sequences and maps.
struct Direct(Value);

impl<'de> Deserialize<'de> for Direct {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Direct, D::Error> {
        direct(deserializer).map(Direct)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a json value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        direct(deserializer)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(n)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(Arc::from(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Array::new();
        while let Some(Direct(item)) = seq.next_element()? {
            items.push_back(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Object::new();
        // A repeated key keeps its last value, as serde_json's own reading does.
        while let Some((key, Direct(item))) = map.next_entry::<Key, Direct>()? {
            object.insert(key, item);
        }
        Ok(Value::Object(object))
    }
}

impl DiskChange {
    /// The engine's change, or what is wrong with this one.
    pub(crate) fn into_change(self) -> Result<Change, String> {
        let op: Op = self
            .op
            .parse()
            .map_err(|()| format!("unknown op \"{}\" in a change", self.op))?;
        Ok(Change {
            path: self.path,
            old: self.old,
            new: self.new,
            reason: self.reason.map(Arc::from),
            op,
        })
    }
}

/// Decodes a record payload.
pub(crate) fn decode(payload: &[u8]) -> Result<Record, String> {
    serde_json::from_slice(payload)
        .map_err(|error| format!("the record is not a valid save record: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(record: &RecordRef<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        push_record(&mut out, record).unwrap();
        out
    }

    #[test]
    fn a_record_round_trips_and_every_prefix_is_torn() {
        let bytes = framed(&RecordRef::Undo { steps: 3 });
        let Scan::Record { payload, next } = scan(&bytes, 0) else {
            panic!("not a record")
        };
        assert_eq!(next, bytes.len());
        assert!(matches!(decode(payload), Ok(Record::Undo { steps: 3 })));
        assert_eq!(scan(&bytes, next), Scan::End);
        for cut in 1..bytes.len() {
            assert_eq!(scan(&bytes[..cut], 0), Scan::Torn, "cut at {cut}");
        }
    }

    #[test]
    fn a_flipped_byte_is_damage_not_a_torn_tail() {
        let bytes = framed(&RecordRef::Redo { steps: 1 });
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            assert!(matches!(scan(&bad, 0), Scan::Damaged(_)), "flip at {at}");
        }
    }

    #[test]
    fn zeros_after_a_record_are_a_torn_tail() {
        let mut bytes = framed(&RecordRef::Redo { steps: 1 });
        let end = bytes.len();
        bytes.extend_from_slice(&[0; 40]);
        assert_eq!(scan(&bytes, end), Scan::Torn);
    }

    #[test]
    fn null_stays_a_value_and_absence_stays_absence() {
        let change = Change {
            path: Path::from(vec!["a".into()]),
            old: Some(Value::Null),
            new: None,
            reason: Some(Arc::from("why")),
            op: Op::Delete,
        };
        let changes = [change.clone()];
        let bytes = framed(&RecordRef::Step {
            label: Some("m1"),
            changes: ChangesRef(&changes),
        });
        let Scan::Record { payload, .. } = scan(&bytes, 0) else {
            panic!("not a record")
        };
        let Ok(Record::Step(step)) = decode(payload) else {
            panic!("not a step")
        };
        let back: Vec<Change> = step
            .changes
            .into_iter()
            .map(|c| c.into_change().unwrap())
            .collect();
        assert_eq!(back, changes);
        assert_eq!(step.label.as_deref(), Some("m1"));
    }

    #[test]
    fn the_direct_reader_agrees_with_the_engine() {
        let text = r#"{"i": 5, "f": 5.0, "neg": -3, "big": 18446744073709551615, "e": 1e300, "s": "a\"\u00e9b",
            "n": null, "t": true, "list": [[], {}, [1, [2, {"deep": "x"}]]], "dup": 1, "dup": 2}"#;
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let read = direct(&mut deserializer).unwrap();
        let engine: Value = serde_json::from_str(text).unwrap();
        assert_eq!(read, engine);
        assert_eq!(
            read.to_string(),
            engine.to_string(),
            "integers and floats keep their kind"
        );
        assert_eq!(read.to_json()["dup"], serde_json::json!(2));
    }

    #[test]
    fn headers_are_recognised() {
        assert_eq!(read_header(&file_header()), Header::Version(FORMAT_VERSION));
        assert!(matches!(read_header(b""), Header::NotASave(0, _)));
        assert!(matches!(
            read_header(b"{\"hp\": 1}"),
            Header::NotASave(0, _)
        ));
        assert!(
            matches!(read_header(b"statecraft sa"), Header::NotASave(13, m) if m.contains("inside"))
        );
    }
}
