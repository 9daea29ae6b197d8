//! The embedded default: games in one SQLite file (`--db sqlite:PATH`).
//!
//! The file runs in WAL mode with `synchronous = FULL`, so a committed transaction is on disk before
//! the commit returns: a batch of writes is one transaction and one WAL sync. Writes go through one
//! connection (the server's group-commit writer calls [`Storage::write`] from one thread); reads take a
//! connection of their own from a small pool, and WAL lets them run beside a write. Several processes
//! may share the file: SQLite serializes their transactions and the head compare-and-set keeps their
//! games correct. This module must not know what a record means (it stores JSON text), nor decide
//! what a write does: `rows::decide` does, over the statements of its `Tables` here.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use statecraft_saves::{
    Head, Listing, Receipt, Spent, Storage, StorageError, StoredGame, Tail, Write, Written,
};

use super::rows;

/// How long a statement waits for another process's transaction before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS statecraft_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    base TEXT NOT NULL,
    scripts TEXT NOT NULL,
    seq INTEGER NOT NULL,
    base_seq INTEGER NOT NULL,
    step INTEGER NOT NULL,
    label TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records (
    game TEXT NOT NULL,
    seq INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (game, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS receipts (
    game TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status INTEGER NOT NULL,
    body TEXT NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (game, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS receipts_created ON receipts (created);
CREATE TABLE IF NOT EXISTS deleted_games (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Games in a SQLite file.
#[derive(Debug)]
pub(crate) struct Sqlite {
    path: std::path::PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
}

fn failed(error: rusqlite::Error) -> StorageError {
    StorageError::Database(format!("sqlite: {error}"))
}

fn refused(error: rusqlite::Error) -> StorageError {
    StorageError::Refused(format!("sqlite: {error}"))
}

impl Sqlite {
    /// Opens (or creates) the database file and its tables.
    pub(crate) fn open(path: &Path) -> Result<Sqlite, StorageError> {
        let writer = Connection::open(path).map_err(|error| {
            StorageError::Database(format!("cannot open {}: {error}", path.display()))
        })?;
        writer.busy_timeout(BUSY_TIMEOUT).map_err(failed)?;
        let mode: String = writer
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(failed)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StorageError::Database(format!(
                "{} cannot use write-ahead logging (journal mode {mode})",
                path.display()
            )));
        }
        // FULL syncs the WAL at every commit: an acknowledged change survives a power loss.
        writer
            .execute_batch("PRAGMA synchronous = FULL;")
            .map_err(failed)?;
        writer.execute_batch(SCHEMA).map_err(failed)?;
        // A new database is of this version; an existing one keeps the version it was written with.
        writer
            .execute(
                "INSERT OR IGNORE INTO statecraft_meta (key, value) VALUES ('schema_version', ?1)",
                [rows::SCHEMA_VERSION],
            )
            .map_err(failed)?;
        let version: String = writer
            .query_row(
                "SELECT value FROM statecraft_meta WHERE key = 'schema_version'",
                [],
                |row| row.get(0),
            )
            .map_err(failed)?;
        if rows::check_schema_version(version)? {
            writer
                .execute(rows::UPGRADE_SCHEMA_VERSION, [])
                .map_err(failed)?;
        }
        Ok(Sqlite {
            path: path.to_owned(),
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
        })
    }

    /// Runs `read` on a pooled read connection.
    fn read<T>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, rusqlite::Error>,
    ) -> Result<T, StorageError> {
        let pooled = self.readers.lock().expect("pool lock").pop();
        let connection = match pooled {
            Some(connection) => connection,
            None => {
                let connection = Connection::open_with_flags(
                    &self.path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(failed)?;
                connection.busy_timeout(BUSY_TIMEOUT).map_err(failed)?;
                connection
            }
        };
        let result = read(&connection).map_err(failed);
        self.readers.lock().expect("pool lock").push(connection);
        result
    }
}

fn head_of(row: &rusqlite::Row<'_>) -> Result<Head, rusqlite::Error> {
    Ok(Head {
        seq: row.get::<_, i64>(0)? as u64,
        base_seq: row.get::<_, i64>(1)? as u64,
        step: statecraft_engine::StepId::new(row.get::<_, i64>(2)? as u64),
        label: row.get(3)?,
    })
}

fn records_after(
    connection: &Connection,
    id: &str,
    seq: u64,
) -> Result<Vec<(u64, String)>, rusqlite::Error> {
    let mut statement = connection.prepare_cached(
        "SELECT seq, record FROM records WHERE game = ?1 AND seq > ?2 ORDER BY seq",
    )?;
    let rows = statement.query_map(params![id, seq as i64], |row| {
        Ok((row.get::<_, i64>(0)? as u64, row.get::<_, String>(1)?))
    })?;
    rows.collect()
}

impl Storage for Sqlite {
    fn load(&self, id: &str) -> Result<Option<StoredGame>, StorageError> {
        let found = self.read(|connection| {
            let tx = connection.unchecked_transaction()?;
            let game = tx
                .prepare_cached(
                    "SELECT seq, base_seq, step, label, base, scripts FROM games WHERE id = ?1",
                )?
                .query_row(params![id], |row| {
                    Ok((
                        head_of(row)?,
                        row.get::<_, String>(4)?,
                        row.get::<_, String>(5)?,
                    ))
                })
                .optional()?;
            let Some((head, base, scripts)) = game else {
                return Ok(None);
            };
            let records = records_after(&tx, id, 0)?;
            tx.commit()?;
            Ok(Some((head, base, scripts, records)))
        })?;
        found
            .map(|(head, base, scripts, records)| rows::game(id, head, &base, &scripts, &records))
            .transpose()
    }

    fn tail(&self, id: &str, seq: u64) -> Result<Option<Tail>, StorageError> {
        let found = self.read(|connection| {
            let tx = connection.unchecked_transaction()?;
            let head = tx
                .prepare_cached("SELECT seq, base_seq, step, label FROM games WHERE id = ?1")?
                .query_row(params![id], head_of)
                .optional()?;
            let Some(head) = head else {
                return Ok(None);
            };
            if seq < head.base_seq || seq > head.seq {
                return Ok(Some((head, None)));
            }
            let records = if seq == head.seq {
                Vec::new()
            } else {
                records_after(&tx, id, seq)?
            };
            tx.commit()?;
            Ok(Some((head, Some(records))))
        })?;
        found
            .map(|(head, records)| rows::tail(id, head, records))
            .transpose()
    }

    fn receipt(&self, id: &str, key: &str) -> Result<Option<Receipt>, StorageError> {
        self.read(|connection| {
            connection
                .prepare_cached(
                    "SELECT fingerprint, status, body FROM receipts WHERE game = ?1 AND key = ?2",
                )?
                .query_row(params![id, key], |row| {
                    Ok(Receipt {
                        key: key.to_owned(),
                        fingerprint: row.get(0)?,
                        status: row.get::<_, i64>(1)? as u16,
                        body: row.get(2)?,
                    })
                })
                .optional()
        })
    }

    fn list(&self, after: Option<&str>, limit: usize) -> Result<Vec<Listing>, StorageError> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT id, step, label FROM games WHERE id > ?1 ORDER BY id LIMIT ?2",
            )?;
            let rows = statement.query_map(params![after.unwrap_or(""), limit as i64], |row| {
                Ok(Listing {
                    id: row.get(0)?,
                    step: statecraft_engine::StepId::new(row.get::<_, i64>(1)? as u64),
                    label: row.get(2)?,
                })
            })?;
            rows.collect()
        })
    }

    fn count(&self) -> Result<u64, StorageError> {
        self.read(|connection| {
            connection.query_row("SELECT count(*) FROM games", [], |row| {
                Ok(row.get::<_, i64>(0)? as u64)
            })
        })
    }

    fn write(&self, writes: &[Write]) -> Result<Vec<Written>, StorageError> {
        let encoded = writes
            .iter()
            .map(rows::encode)
            .collect::<Result<Vec<_>, _>>()?;
        let mut connection = self.writer.lock().expect("writer lock");
        let tx = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(failed)?;
        let mut results = Vec::with_capacity(writes.len());
        let mut tables = Tables { tx: &tx };
        for (write, encoded) in writes.iter().zip(&encoded) {
            // A statement refused inside the transaction: dropping it rolls everything back, so
            // nothing was made, for certain. A failed commit is left as it is: a failure to sync the
            // log may leave the transaction on disk all the same.
            results.push(rows::decide(&mut tables, write, encoded).map_err(refused)?);
        }
        tx.commit().map_err(failed)?;
        Ok(results)
    }

    fn forget_receipts(&self, before: i64) -> Result<u64, StorageError> {
        let connection = self.writer.lock().expect("writer lock");
        connection
            .execute("DELETE FROM receipts WHERE created < ?1", params![before])
            .map(|deleted| deleted as u64)
            .map_err(failed)
    }
}

/// The row operations of [`rows::decide`] on a SQLite write transaction. The transaction is
/// `IMMEDIATE`: it holds the file's write lock from its start, so what a statement reads stays true
/// until the commit, in every process sharing the file.
struct Tables<'t, 'c> {
    tx: &'t rusqlite::Transaction<'c>,
}

impl rows::Tables for Tables<'_, '_> {
    type Error = rusqlite::Error;

    fn head_seq(&mut self, id: &str) -> Result<Option<u64>, rusqlite::Error> {
        self.tx
            .prepare_cached("SELECT seq FROM games WHERE id = ?1")?
            .query_row(params![id], |row| Ok(row.get::<_, i64>(0)? as u64))
            .optional()
    }

    fn count_games(&mut self) -> Result<u64, rusqlite::Error> {
        // Inside the write transaction, which SQLite runs one at a time across processes: no other
        // create can pass the count before this one commits.
        self.tx
            .prepare_cached("SELECT count(*) FROM games")?
            .query_row([], |row| Ok(row.get::<_, i64>(0)? as u64))
    }

    fn insert_game(
        &mut self,
        id: &str,
        base: &str,
        scripts: &str,
        head: &Head,
    ) -> Result<bool, rusqlite::Error> {
        let inserted = self
            .tx
            .prepare_cached(
                "INSERT OR IGNORE INTO games (id, base, scripts, seq, base_seq, step, label)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                id,
                base,
                scripts,
                head.seq as i64,
                head.base_seq as i64,
                head.step.get() as i64,
                head.label
            ])?;
        Ok(inserted == 1)
    }

    fn remove_game(&mut self, id: &str) -> Result<(), rusqlite::Error> {
        self.tx
            .prepare_cached("DELETE FROM games WHERE id = ?1")?
            .execute(params![id])?;
        Ok(())
    }

    fn deleted_seq(&mut self, id: &str) -> Result<Option<u64>, rusqlite::Error> {
        self.tx
            .prepare_cached("SELECT seq FROM deleted_games WHERE id = ?1")?
            .query_row(params![id], |row| Ok(row.get::<_, i64>(0)? as u64))
            .optional()
    }

    fn renumber(&mut self, id: &str, by: u64) -> Result<(), rusqlite::Error> {
        self.tx
            .prepare_cached(
                "UPDATE games SET seq = seq + ?1, base_seq = base_seq + ?1 WHERE id = ?2",
            )?
            .execute(params![by as i64, id])?;
        Ok(())
    }

    fn insert_receipt(&mut self, game: &str, receipt: &Receipt) -> Result<bool, rusqlite::Error> {
        let inserted = self
            .tx
            .prepare_cached(
                "INSERT OR IGNORE INTO receipts (game, key, fingerprint, status, body, created)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                game,
                receipt.key,
                receipt.fingerprint,
                receipt.status,
                receipt.body,
                rows::now()
            ])?;
        Ok(inserted == 1)
    }

    fn add_receipt(&mut self, game: &str, receipt: &Receipt) -> Result<(), rusqlite::Error> {
        self.insert_receipt(game, receipt).map(drop)
    }

    fn set_head(&mut self, id: &str, head: &Head) -> Result<(), rusqlite::Error> {
        self.tx
            .prepare_cached("UPDATE games SET seq = ?1, step = ?2, label = ?3 WHERE id = ?4")?
            .execute(params![
                head.seq as i64,
                head.step.get() as i64,
                head.label,
                id
            ])?;
        Ok(())
    }

    fn insert_records(
        &mut self,
        id: &str,
        after: u64,
        records: &[String],
    ) -> Result<(), rusqlite::Error> {
        let mut statement = self
            .tx
            .prepare_cached("INSERT INTO records (game, seq, record) VALUES (?1, ?2, ?3)")?;
        for (offset, record) in records.iter().enumerate() {
            statement.execute(params![id, (after + 1 + offset as u64) as i64, record])?;
        }
        Ok(())
    }

    fn replace_base(&mut self, id: &str, base: &str, head: &Head) -> Result<(), rusqlite::Error> {
        self.tx
            .prepare_cached(
                "UPDATE games SET base = ?1, seq = ?2, base_seq = ?3, step = ?4, label = ?5
                 WHERE id = ?6",
            )?
            .execute(params![
                base,
                head.seq as i64,
                head.base_seq as i64,
                head.step.get() as i64,
                head.label,
                id
            ])?;
        self.tx
            .prepare_cached("DELETE FROM records WHERE game = ?1")?
            .execute(params![id])?;
        Ok(())
    }

    fn delete_game(&mut self, id: &str, seq: u64) -> Result<(), rusqlite::Error> {
        self.tx
            .prepare_cached("INSERT OR REPLACE INTO deleted_games (id, seq) VALUES (?1, ?2)")?
            .execute(params![id, seq as i64])?;
        for statement in [
            "DELETE FROM games WHERE id = ?1",
            "DELETE FROM records WHERE game = ?1",
            "DELETE FROM receipts WHERE game = ?1",
        ] {
            self.tx.prepare_cached(statement)?.execute(params![id])?;
        }
        Ok(())
    }

    fn spend_receipts(&mut self, scope: &str, spent: &Spent) -> Result<(), rusqlite::Error> {
        self.tx
            .prepare_cached(
                "UPDATE receipts SET status = ?1, body = ?2 WHERE game = ?3 AND body = ?4",
            )?
            .execute(params![spent.status, spent.body, scope, spent.made])?;
        Ok(())
    }
}
