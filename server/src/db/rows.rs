//! What both backends share: the rows' text form and the one decision of what each write does.
//!
//! A base, scripts and each record are stored as JSON. A record's JSON is the one save files use
//! (`statecraft_saves::TimelineRecord`), so a game moves between a database and a file without
//! translation; [`fits`] measures a record's text before it is handed to the writer. [`decide`] is
//! the compare-and-set of every write (which head it must find, what it changes when it does, what it
//! answers when it does not), over the row operations of [`Tables`] that each backend implements in
//! its SQL. This module must not talk to a database.

use std::collections::BTreeMap;

use statecraft_saves::{
    BaseRecord, Head, Receipt, Spent, StorageError, StoredGame, Tail, TimelineRecord, Write,
    Written,
};

/// The receipt scope of the requests that create the game whose key is `game` (their answer names a
/// game that did not exist): its owner's `OWNER/`, or `""` for a game without owner (`ids.rs`). No
/// game's key is a scope: every key has an id after its `/`.
pub(crate) fn create_scope(game: &str) -> &str {
    game.rfind('/').map_or("", |slash| &game[..=slash])
}

/// The layout of the tables, kept in `statecraft_meta` under `schema_version`: written when the
/// tables are made, read at every open, and raised only with a migration that reads the versions
/// before it. Version 2: a base row may name the game's profile and hold its automatic schema
/// (`BaseRecord::profile`, `BaseRecord::automatic_schema`), which version 1 never wrote. Version 3:
/// a base row may hold the card's fingerprint and the game's macros (`BaseRecord::card_fingerprint`,
/// `BaseRecord::macros`) and a step record a card update (`StepRecord::card`).
pub(crate) const SCHEMA_VERSION: &str = "3";

/// The older layouts this version reads: version 1's and 2's rows are version 3's without the
/// members added since, read as they are, so opening one only raises the recorded version (a
/// server of an older version then refuses the database, whose rows it could misread).
const UPGRADABLE: [&str; 2] = ["1", "2"];

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
    "UPDATE statecraft_meta SET value = '3' WHERE key = 'schema_version'";

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

/// The row operations a write is made of, inside the transaction of one batch of writes. Each is
/// one statement (or a few) of the backend's SQL and decides nothing: [`decide`] does. Every call
/// sees the effect of the calls before it in the same batch; a backend may hold back what the
/// deciding never reads again (a head, records, a receipt whose answer is not needed) and write it in
/// bulk, as long as it writes it before a later call touches the same game.
pub(crate) trait Tables {
    /// The backend's error; any error aborts the whole batch.
    type Error;

    /// The number of the game's last record, or `None` when no game has the id.
    fn head_seq(&mut self, id: &str) -> Result<Option<u64>, Self::Error>;
    /// How many games there are, counted so that no create in any process can pass the count before
    /// this transaction ends.
    fn count_games(&mut self) -> Result<u64, Self::Error>;
    /// Inserts a game's row at `head`; `false`, with nothing changed, when the id is taken.
    fn insert_game(
        &mut self,
        id: &str,
        base: &str,
        scripts: &str,
        head: &Head,
    ) -> Result<bool, Self::Error>;
    /// Removes a game's row alone (a create taken back before anything else of it was written).
    fn remove_game(&mut self, id: &str) -> Result<(), Self::Error>;
    /// The last record number of the game deleted under `id`, if one was.
    fn deleted_seq(&mut self, id: &str) -> Result<Option<u64>, Self::Error>;
    /// Raises a game's `seq` and `base_seq` by `by`.
    fn renumber(&mut self, id: &str, by: u64) -> Result<(), Self::Error>;
    /// Keeps a receipt under `game` now; `false`, with nothing changed, when its key has one there.
    fn insert_receipt(&mut self, game: &str, receipt: &Receipt) -> Result<bool, Self::Error>;
    /// Keeps a receipt under `game` unless its key has one there; the outcome is not needed, so the
    /// backend may write it later in the batch.
    fn add_receipt(&mut self, game: &str, receipt: &Receipt) -> Result<(), Self::Error>;
    /// Sets a game's `seq`, `step` and `label` to `head`'s.
    fn set_head(&mut self, id: &str, head: &Head) -> Result<(), Self::Error>;
    /// Inserts records numbered from `after + 1` on.
    fn insert_records(
        &mut self,
        id: &str,
        after: u64,
        records: &[String],
    ) -> Result<(), Self::Error>;
    /// Replaces a game's base and whole head (`base_seq` too) and removes every record of it.
    fn replace_base(&mut self, id: &str, base: &str, head: &Head) -> Result<(), Self::Error>;
    /// Removes a game's row, records and receipts, and keeps `seq`, its last record number, for a
    /// game made again under the id.
    fn delete_game(&mut self, id: &str, seq: u64) -> Result<(), Self::Error>;
    /// Gives the receipts of the create scope `scope` whose body is `spent.made` the answer `spent`
    /// holds.
    fn spend_receipts(&mut self, scope: &str, spent: &Spent) -> Result<(), Self::Error>;
}

/// What one write does, on either database, inside its batch's transaction: the compare-and-set of
/// the head it was made on, and the rows it changes when it wins. `encoded` is the write's text
/// ([`encode`]).
///
/// Time: a few statements of the backend, each one game's rows.
pub(crate) fn decide<T: Tables + ?Sized>(
    tables: &mut T,
    write: &Write,
    encoded: &Encoded,
) -> Result<Written, T::Error> {
    // Where the head is not the one the write was made on: another writer won, or there is no game.
    let lost = |found: Option<u64>, on: u64| match found {
        None => Some(Written::Missing),
        Some(seq) if seq != on => Some(Written::Conflict),
        Some(_) => None,
    };
    match write {
        Write::Create {
            id,
            head,
            receipt,
            max_games,
            ..
        } => {
            if let Some(max) = max_games {
                if tables.count_games()? >= *max {
                    return Ok(Written::Full);
                }
            }
            if !tables.insert_game(id, &encoded.base, &encoded.scripts, head)? {
                return Ok(Written::Exists);
            }
            if let Some(receipt) = receipt {
                if !tables.insert_receipt(create_scope(id), receipt)? {
                    // Another request under the same key made its game first: this one makes none.
                    tables.remove_game(id)?;
                    return Ok(Written::Exists);
                }
            }
            // A game made again under the id of a deleted one numbers its records after the old
            // one's, so that a process still holding the old game finds its head gone. Asked after
            // the insert, which waits for another process's delete of the id in flight.
            if let Some(last) = tables.deleted_seq(id)? {
                tables.renumber(id, last + 1)?;
            }
            Ok(Written::Done)
        }
        Write::Append {
            id,
            on,
            head,
            receipt,
            ..
        } => {
            if let Some(lost) = lost(tables.head_seq(id)?, *on) {
                return Ok(lost);
            }
            tables.set_head(id, head)?;
            tables.insert_records(id, *on, &encoded.records)?;
            if let Some(receipt) = receipt {
                tables.add_receipt(id, receipt)?;
            }
            Ok(Written::Done)
        }
        Write::Compact { id, on, head, .. } => {
            if let Some(lost) = lost(tables.head_seq(id)?, *on) {
                return Ok(lost);
            }
            tables.replace_base(id, &encoded.base, head)?;
            tables.insert_records(id, *on, &encoded.records)?;
            Ok(Written::Done)
        }
        Write::Receipt { id, receipt } => {
            tables.add_receipt(id, receipt)?;
            Ok(Written::Done)
        }
        Write::Delete { id, spent } => {
            let Some(seq) = tables.head_seq(id)? else {
                return Ok(Written::Missing);
            };
            tables.delete_game(id, seq)?;
            if let Some(spent) = spent {
                tables.spend_receipts(create_scope(id), spent)?;
            }
            Ok(Written::Done)
        }
    }
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
