//! The text form of stored rows, shared by both backends: a base, scripts and each record as JSON.
//!
//! A record's JSON is the one save files use (`statecraft_saves::TimelineRecord`), so a game moves
//! between a database and a file without translation; [`fits`] measures a record's text before it is
//! handed to the writer. This module must not talk to a database.

use std::collections::BTreeMap;

use statecraft_saves::{BaseRecord, Head, StorageError, StoredGame, Tail, TimelineRecord, Write};

/// The receipt scope of requests that create games (their answer names a game that did not exist).
pub(crate) const CREATE_SCOPE: &str = "";

/// The layout of the tables, kept in `statecraft_meta` under `schema_version`: written when the
/// tables are made, read at every open, and raised only with a migration that reads the versions
/// before it. Version 2: a base row may name the game's profile and hold its automatic schema
/// (`BaseRecord::profile`, `BaseRecord::automatic_schema`), which version 1 never wrote.
pub(crate) const SCHEMA_VERSION: &str = "2";

/// The older layouts this version reads: version 1's rows are version 2's without the two base
/// members, read as they are, so opening one only raises the recorded version (a server of
/// version 1 then refuses the database, whose base rows it could misread).
const UPGRADABLE: [&str; 1] = ["1"];

/// What opening a database of the recorded version `found` needs: nothing (`Ok(false)`), the
/// recorded version raised to [`SCHEMA_VERSION`] (`Ok(true)`), or a refusal when the tables are of
/// a layout this version does not know, as redb's `UpgradeRequired` does: reading them as this
/// version would misread them.
pub(crate) fn check_schema_version(found: String) -> Result<bool, StorageError> {
    if found == SCHEMA_VERSION {
        Ok(false)
    } else if UPGRADABLE.contains(&found.as_str()) {
        Ok(true)
    } else {
        Err(StorageError::UnknownSchemaVersion {
            found,
            supported: SCHEMA_VERSION,
        })
    }
}

/// The statement that records the upgrade to [`SCHEMA_VERSION`] (the same text on both backends).
pub(crate) const UPGRADE_SCHEMA_VERSION: &str =
    "UPDATE statecraft_meta SET value = '2' WHERE key = 'schema_version'";

/// A write's JSON text, made before the transaction starts so that no encoding runs inside it.
#[derive(Debug, Default)]
pub(crate) struct Encoded {
    pub(crate) base: String,
    pub(crate) scripts: String,
    pub(crate) records: Vec<String>,
}

fn encoding(error: serde_json::Error) -> StorageError {
    // Nothing reached the database: the write may be tried again on its own.
    StorageError::Refused(format!("cannot encode a row: {error}"))
}

/// Encodes what a write stores.
pub(crate) fn encode(write: &Write) -> Result<Encoded, StorageError> {
    let records = |records: &[TimelineRecord]| {
        records
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<_>, _>>()
            .map_err(encoding)
    };
    Ok(match write {
        Write::Create { base, scripts, .. } => Encoded {
            base: serde_json::to_string(base).map_err(encoding)?,
            scripts: serde_json::to_string(scripts).map_err(encoding)?,
            records: Vec::new(),
        },
        Write::Append { records: list, .. } => Encoded {
            records: records(list)?,
            ..Encoded::default()
        },
        Write::Compact {
            base,
            records: list,
            ..
        } => Encoded {
            base: serde_json::to_string(base).map_err(encoding)?,
            records: records(list)?,
            ..Encoded::default()
        },
        Write::Receipt { .. } | Write::Delete { .. } => Encoded::default(),
    })
}

/// The length of a record's JSON text if it is at most `max` bytes; `Err` with a lower bound of its
/// length when it is not. The text is counted as it is written and the count stops past `max`, so a record too
/// big for the database is refused before any of it is kept: a database refuses a text over 1 GB
/// ("string or blob too big"), and failing inside a group commit would fail every game's write in
/// that transaction.
pub(crate) fn fits(record: &TimelineRecord, max: usize) -> Result<usize, usize> {
    struct Count {
        bytes: usize,
        max: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes = self.bytes.saturating_add(buf.len());
            if self.bytes > self.max {
                return Err(std::io::Error::other("longer than the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count { bytes: 0, max };
    match serde_json::to_writer(&mut count, record) {
        Ok(()) if count.bytes <= max => Ok(count.bytes),
        _ => Err(count.bytes),
    }
}

fn damaged(id: &str, what: String) -> StorageError {
    StorageError::Damaged {
        game: id.to_owned(),
        problem: what,
    }
}

fn records(id: &str, rows: &[(u64, String)]) -> Result<Vec<TimelineRecord>, StorageError> {
    rows.iter()
        .map(|(seq, text)| {
            serde_json::from_str(text)
                .map_err(|error| damaged(id, format!("record {seq} cannot be read: {error}")))
        })
        .collect()
}

/// A whole game from its rows.
pub(crate) fn game(
    id: &str,
    head: Head,
    base: &str,
    scripts: &str,
    rows: &[(u64, String)],
) -> Result<StoredGame, StorageError> {
    let base: BaseRecord = serde_json::from_str(base)
        .map_err(|error| damaged(id, format!("the base cannot be read: {error}")))?;
    let scripts: BTreeMap<String, String> = serde_json::from_str(scripts)
        .map_err(|error| damaged(id, format!("the scripts cannot be read: {error}")))?;
    Ok(StoredGame {
        id: id.to_owned(),
        base,
        scripts,
        records: records(id, rows)?,
        head,
    })
}

/// A tail from its rows; `None` rows mean the reader must load the game again.
pub(crate) fn tail(
    id: &str,
    head: Head,
    rows: Option<Vec<(u64, String)>>,
) -> Result<Tail, StorageError> {
    match rows {
        None => Ok(Tail::Reload),
        Some(rows) => Ok(Tail::Records {
            records: records(id, &rows)?,
            head,
        }),
    }
}

/// Seconds since the Unix epoch, for receipts' age.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use statecraft_engine::StepId;
    use statecraft_saves::CheckoutRecord;

    /// The count is the length of the text the database would get, to the byte, and stops past `max`.
    #[test]
    fn a_record_fits_up_to_its_exact_length() {
        let record = TimelineRecord::Checkout(CheckoutRecord {
            to: StepId::new(12345),
        });
        let text = serde_json::to_string(&record).unwrap();
        assert_eq!(fits(&record, text.len()), Ok(text.len()));
        assert_eq!(fits(&record, usize::MAX), Ok(text.len()));
        let short = fits(&record, text.len() - 1).unwrap_err();
        assert!(short >= text.len(), "{short}");
        assert!(fits(&record, 0).is_err());
    }
}
