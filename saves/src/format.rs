//! The on-disk format: the file header, checksummed record frames and the record payloads.
//!
//! A save file is a 20-byte header (the magic `statecraft save\n` and the format version as a
//! little-endian `u32`) followed by records. Each record is framed as its payload length (`u32` LE), a
//! CRC-32 of those four length bytes, a CRC-32 of the payload, then the payload: one JSON document.
//! The first record is always the base; the others are the timeline records of `records.rs` (steps,
//! checkouts, positions) in versions 2 to 5 (3 adds the base's seed, 4 its profile and automatic
//! schema, 5 the card's fingerprint and the macros in the base and card updates in steps), and
//! steps, undos and redos in version 1, which is only read.
//! `saves/FORMAT.md` is the full description.
//!
//! The frame is built so that a torn append, which can only leave a prefix of the last record (or, after
//! a power loss, zeros), is told apart from damage: a record that is complete but fails its checksum is
//! damage, never a torn tail. This module decodes and encodes; it must not touch files or the engine's
//! store.

use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};
use statecraft_engine::Change;

use crate::records::{
    BaseRecord, CheckoutRecord, PositionRecord, StepRecord, TimelineRecord, change_log,
};

/// The first bytes of every save file.
pub(crate) const MAGIC: &[u8; 16] = b"statecraft save\n";
/// The format version this build writes. Readers for every older version stay (see [`crate::Game::open`]).
pub(crate) const FORMAT_VERSION: u32 = 5;
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
        return Header::NotASave(0, "the file is empty".to_owned());
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

/// A record of a version 2 file, as read: the base (only ever first), or a timeline record.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Record {
    Base(Box<BaseRecord>),
    Step(StepRecord),
    Checkout(CheckoutRecord),
    Position(PositionRecord),
}

impl Record {
    /// The timeline record, or the base.
    pub(crate) fn timeline(self) -> Result<TimelineRecord, Box<BaseRecord>> {
        match self {
            Record::Base(base) => Err(base),
            Record::Step(step) => Ok(TimelineRecord::Step(step)),
            Record::Checkout(checkout) => Ok(TimelineRecord::Checkout(checkout)),
            Record::Position(position) => Ok(TimelineRecord::Position(position)),
        }
    }
}

/// A record of a version 2 file, as written.
#[derive(Debug)]
pub(crate) enum RecordRef<'a> {
    Base(&'a BaseRecord),
    Timeline(&'a TimelineRecord),
}

impl Serialize for RecordRef<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RecordRef::Base(base) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("base", base)?;
                map.end()
            }
            RecordRef::Timeline(record) => record.serialize(serializer),
        }
    }
}

/// A record of a version 1 file: its history was a line of steps with undo and redo markers.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum RecordV1 {
    /// The base; only ever first.
    Base(Box<BaseRecord>),
    /// A committed step, on top of the applied ones.
    Step(StepV1),
    /// `steps` undos in a row.
    Undo { steps: usize },
    /// `steps` redos in a row.
    Redo { steps: usize },
}

/// A committed step of a version 1 file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepV1 {
    /// The label given at commit.
    #[serde(default)]
    pub(crate) label: Option<String>,
    /// The change log, in order.
    #[serde(with = "change_log")]
    pub(crate) changes: Arc<[Change]>,
}

/// Decodes a record payload of the given format version's kind.
pub(crate) fn decode<'a, T: Deserialize<'a>>(payload: &'a [u8]) -> Result<T, String> {
    serde_json::from_slice(payload)
        .map_err(|error| format!("the record is not a valid save record: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use statecraft_engine::StepId;

    fn framed(record: &TimelineRecord) -> Vec<u8> {
        let mut out = Vec::new();
        push_record(&mut out, &RecordRef::Timeline(record)).unwrap();
        out
    }

    fn checkout(to: u64) -> TimelineRecord {
        TimelineRecord::Checkout(CheckoutRecord {
            to: StepId::new(to),
        })
    }

    #[test]
    fn a_record_round_trips_and_every_prefix_is_torn() {
        let bytes = framed(&checkout(3));
        let Scan::Record { payload, next } = scan(&bytes, 0) else {
            panic!("not a record")
        };
        assert_eq!(next, bytes.len());
        let record: Record = decode(payload).unwrap();
        assert_eq!(record.timeline().unwrap(), checkout(3));
        assert_eq!(scan(&bytes, next), Scan::End);
        for cut in 1..bytes.len() {
            assert_eq!(scan(&bytes[..cut], 0), Scan::Torn, "cut at {cut}");
        }
    }

    #[test]
    fn a_flipped_byte_is_damage_not_a_torn_tail() {
        let bytes = framed(&checkout(1));
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            assert!(matches!(scan(&bad, 0), Scan::Damaged(_)), "flip at {at}");
        }
    }

    #[test]
    fn zeros_after_a_record_are_a_torn_tail() {
        let mut bytes = framed(&checkout(1));
        let end = bytes.len();
        bytes.extend_from_slice(&[0; 40]);
        assert_eq!(scan(&bytes, end), Scan::Torn);
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
