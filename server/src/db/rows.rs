//! The text form of stored rows, shared by both backends: a base, scripts and each record as JSON.
//!
//! A record's JSON is the one save files use (`statecraft_saves::TimelineRecord`), so a game moves
//! between a database and a file without translation. This module must not talk to a database.

use std::collections::BTreeMap;

use statecraft_saves::{BaseRecord, Head, StorageError, StoredGame, Tail, TimelineRecord, Write};

/// The receipt scope of requests that create games (their answer names a game that did not exist).
pub(crate) const CREATE_SCOPE: &str = "";

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
