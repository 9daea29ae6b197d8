//! Games in PostgreSQL (`--db postgres://...`), for many server processes sharing one database.
//!
//! The tables live in the connection's first schema (`search_path`; a URL may set it with
//! `?options=-csearch_path%3Dname`). Every write batch is one transaction, committed with the
//! server's default `synchronous_commit = on`, so a commit is durable when it returns. A batch of
//! appends alone, what applying replies makes, is one statement and one round trip: its writes are
//! decided beforehand as if every game's head were still the one its first append was made on, and
//! the statement sets a game's head only where it is (`UPDATE ... WHERE seq = on`, which waits for
//! another process's commit on the row and checks again) and inserts that game's records and
//! receipts only then, so the decisions hold for every game it wrote; the others' appends are made
//! again in a transaction. Should the statement fail as a whole (a deadlock with another process's
//! statement that locks the same rows in another order, say), the batch goes in a transaction
//! instead. Any other batch first locks the rows of its games (`SELECT ... FOR UPDATE`, in id
//! order, so two processes' batches never deadlock) and reads their heads; each write's
//! compare-and-set is decided against the head read under that lock (by `rows::decide`, the
//! decision SQLite's writes take too), and the winners' heads, records and receipts are written
//! together by one statement. When two processes race on one game, the second waits for the first's
//! lock, then reads the moved head and changes nothing of that game. A create under `--max-games`
//! counts the games while it holds a transaction lock of its own, so creates in several processes
//! take turns. This module must not know what a record means (it stores JSON text), nor decide what
//! a write does.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use postgres::types::ToSql;
use postgres::{Client, NoTls, Statement, Transaction};
use statecraft_engine::StepId;
use statecraft_saves::{
    Head, Listing, Receipt, Spent, Storage, StorageError, StoredGame, Tail, Write, Written,
};

use super::rows;

/// A lock number of this program's own, held while the tables are created.
const SCHEMA_LOCK: i64 = 0x5374_6174_6563;

/// Another, held by a transaction from the count of games to its commit when it creates a game under
/// a limit: creates in several processes take turns, so no two pass the limit together.
const CREATE_LOCK: i64 = 0x5374_6174_6564;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS statecraft_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    base TEXT NOT NULL,
    scripts TEXT NOT NULL,
    seq BIGINT NOT NULL,
    base_seq BIGINT NOT NULL,
    step BIGINT NOT NULL,
    label TEXT
);
CREATE TABLE IF NOT EXISTS records (
    game TEXT NOT NULL,
    seq BIGINT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (game, seq)
);
CREATE TABLE IF NOT EXISTS receipts (
    game TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status INTEGER NOT NULL,
    body TEXT NOT NULL,
    created BIGINT NOT NULL,
    PRIMARY KEY (game, key)
);
CREATE INDEX IF NOT EXISTS receipts_created ON receipts (created);
CREATE TABLE IF NOT EXISTS deleted_games (
    id TEXT PRIMARY KEY,
    seq BIGINT NOT NULL
);
";

/// A connection with its statements prepared once.
struct Connection {
    client: Client,
    head: Statement,
    game: Statement,
    records_after: Statement,
    receipt: Statement,
}

/// A new client.
fn connect(url: &str) -> Result<Client, StorageError> {
    Client::connect(url, NoTls).map_err(|error| {
        StorageError::Database(format!(
            "cannot connect to {}: {error}",
            without_password(url)
        ))
    })
}

impl Connection {
    fn open(url: &str) -> Result<Connection, StorageError> {
        let mut client = connect(url)?;
        let head = client
            .prepare("SELECT seq, base_seq, step, label FROM games WHERE id = $1")
            .map_err(failed)?;
        let game = client
            .prepare("SELECT seq, base_seq, step, label, base, scripts FROM games WHERE id = $1")
            .map_err(failed)?;
        let records_after = client
            .prepare("SELECT seq, record FROM records WHERE game = $1 AND seq > $2 ORDER BY seq")
            .map_err(failed)?;
        let receipt = client
            .prepare("SELECT fingerprint, status, body FROM receipts WHERE game = $1 AND key = $2")
            .map_err(failed)?;
        Ok(Connection {
            client,
            head,
            game,
            records_after,
            receipt,
        })
    }
}

/// Games in a PostgreSQL database.
pub(crate) struct Postgres {
    url: String,
    /// The writer's connection (`server/src/writer.rs`), opened when first used.
    writer: Mutex<Option<WriterConnection>>,
    readers: Mutex<Vec<Connection>>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("url", &without_password(&self.url))
            .finish_non_exhaustive()
    }
}

fn failed(error: postgres::Error) -> StorageError {
    // The client's own text for a server error is only "db error"; the server's message says why.
    match error.as_db_error() {
        Some(db) => StorageError::Database(format!(
            "postgres: {} {}: {}",
            db.severity(),
            db.code().code(),
            db.message()
        )),
        None => StorageError::Database(format!("postgres: {error}")),
    }
}

/// Whether a statement or transaction that failed with `error` made nothing: an error the server
/// answered with aborts it. Without an answer (the connection broke, perhaps during the commit) the
/// outcome is unknown, and so is any retry's.
fn made_nothing(error: &postgres::Error) -> bool {
    error
        .as_db_error()
        .is_some_and(|db| db.parsed_severity() == Some(postgres::error::Severity::Error))
}

/// The connection string with its password replaced, for messages and logs.
pub(crate) fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.split_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or_default();
            format!("{scheme}://{name}:***@{host}")
        }
        _ => url.to_owned(),
    }
}

impl Postgres {
    /// Connects and creates the tables when they are missing.
    pub(crate) fn open(url: &str) -> Result<Postgres, StorageError> {
        let mut client = connect(url)?;
        let mut tx = client.transaction().map_err(failed)?;
        // Two processes starting at once would otherwise race to create the same tables.
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .map_err(failed)?;
        tx.batch_execute(SCHEMA).map_err(failed)?;
        // A new database is of this version; an existing one keeps the version it was written with.
        tx.execute(
            "INSERT INTO statecraft_meta (key, value) VALUES ('schema_version', $1) \
             ON CONFLICT DO NOTHING",
            &[&rows::SCHEMA_VERSION],
        )
        .map_err(failed)?;
        let version: String = tx
            .query_one(
                "SELECT value FROM statecraft_meta WHERE key = 'schema_version'",
                &[],
            )
            .map_err(failed)?
            .get(0);
        if rows::check_schema_version(version)? {
            tx.execute(rows::UPGRADE_SCHEMA_VERSION, &[])
                .map_err(failed)?;
        }
        tx.commit().map_err(failed)?;
        Ok(Postgres {
            url: url.to_owned(),
            writer: Mutex::new(None),
            readers: Mutex::new(Vec::new()),
        })
    }

    /// Runs `read` on a pooled connection; a connection that failed is not put back.
    fn read<T>(
        &self,
        read: impl FnOnce(&mut Connection) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let pooled = self.readers.lock().expect("pool lock").pop();
        let mut connection = match pooled {
            Some(connection) => connection,
            None => Connection::open(&self.url)?,
        };
        let result = read(&mut connection);
        if result.is_ok() || !connection.client.is_closed() {
            self.readers.lock().expect("pool lock").push(connection);
        }
        result
    }
}

fn head_of(row: &postgres::Row) -> Head {
    Head {
        seq: row.get::<_, i64>(0) as u64,
        base_seq: row.get::<_, i64>(1) as u64,
        step: StepId::new(row.get::<_, i64>(2) as u64),
        label: row.get(3),
    }
}

fn records_after(
    connection: &mut Connection,
    id: &str,
    seq: u64,
) -> Result<Vec<(u64, String)>, StorageError> {
    Ok(connection
        .client
        .query(&connection.records_after, &[&id, &(seq as i64)])
        .map_err(failed)?
        .iter()
        .map(|row| (row.get::<_, i64>(0) as u64, row.get::<_, String>(1)))
        .collect())
}

impl Storage for Postgres {
    fn load(&self, id: &str) -> Result<Option<StoredGame>, StorageError> {
        self.read(|connection| {
            // One snapshot for the game row and its records.
            connection
                .client
                .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .map_err(failed)?;
            let loaded = (|| {
                let Some(row) = connection
                    .client
                    .query_opt(&connection.game, &[&id])
                    .map_err(failed)?
                else {
                    return Ok(None);
                };
                let base: String = row.get(4);
                let scripts: String = row.get(5);
                let records = records_after(connection, id, 0)?;
                rows::game(id, head_of(&row), &base, &scripts, &records).map(Some)
            })();
            connection.client.batch_execute("COMMIT").map_err(failed)?;
            loaded
        })
    }

    fn tail(&self, id: &str, seq: u64) -> Result<Option<Tail>, StorageError> {
        self.read(|connection| {
            let Some(row) = connection
                .client
                .query_opt(&connection.head, &[&id])
                .map_err(failed)?
            else {
                return Ok(None);
            };
            let head = head_of(&row);
            if seq < head.base_seq || seq > head.seq {
                return Ok(Some(Tail::Reload));
            }
            if seq == head.seq {
                return rows::tail(id, head, Some(Vec::new())).map(Some);
            }
            // Records only ever grow at the end, so rows read after the head are a superset of what
            // it announced; keep exactly the ones up to it. A compaction in between shows as a gap.
            let rows = records_after(connection, id, seq)?;
            let rows: Vec<_> = rows.into_iter().filter(|(n, _)| *n <= head.seq).collect();
            if rows.len() as u64 != head.seq - seq {
                return Ok(Some(Tail::Reload));
            }
            rows::tail(id, head, Some(rows)).map(Some)
        })
    }

    fn receipt(&self, id: &str, key: &str) -> Result<Option<Receipt>, StorageError> {
        self.read(|connection| {
            Ok(connection
                .client
                .query_opt(&connection.receipt, &[&id, &key])
                .map_err(failed)?
                .map(|row| Receipt {
                    key: key.to_owned(),
                    fingerprint: row.get(0),
                    status: row.get::<_, i32>(1) as u16,
                    body: row.get(2),
                }))
        })
    }

    fn list(&self, after: Option<&str>, limit: usize) -> Result<Vec<Listing>, StorageError> {
        self.read(|connection| {
            Ok(connection
                .client
                .query(
                    "SELECT id, step, label FROM games WHERE id > $1 ORDER BY id LIMIT $2",
                    &[&after.unwrap_or(""), &(limit as i64)],
                )
                .map_err(failed)?
                .iter()
                .map(|row| Listing {
                    id: row.get(0),
                    step: StepId::new(row.get::<_, i64>(1) as u64),
                    label: row.get(2),
                })
                .collect())
        })
    }

    fn count(&self) -> Result<u64, StorageError> {
        self.read(|connection| {
            let row = connection
                .client
                .query_one("SELECT count(*) FROM games", &[])
                .map_err(failed)?;
            Ok(row.get::<_, i64>(0) as u64)
        })
    }

    fn write(&self, writes: &[Write]) -> Result<Vec<Written>, StorageError> {
        let encoded = writes
            .iter()
            .map(rows::encode)
            .collect::<Result<Vec<_>, _>>()?;
        let mut writer = self.writer.lock().expect("writer lock");
        let connection = match writer.as_mut() {
            Some(connection) if !connection.client.is_closed() => connection,
            _ => writer.insert(WriterConnection::open(&self.url)?),
        };
        connection.write(writes, &encoded).map_err(|error| {
            match (made_nothing(&error), failed(error)) {
                // Its writes may be tried again.
                (true, StorageError::Database(message)) => StorageError::Refused(message),
                (_, failed) => failed,
            }
        })
    }

    fn forget_receipts(&self, before: i64) -> Result<u64, StorageError> {
        self.read(|connection| {
            connection
                .client
                .execute("DELETE FROM receipts WHERE created < $1", &[&before])
                .map_err(failed)
        })
    }
}

/// The writer's connection, with the statements of a batch prepared once.
struct WriterConnection {
    client: Client,
    lock_heads: Statement,
    /// Writes what a batch held back: heads, records and receipts in one statement (and so one
    /// round trip) whatever the number of games.
    write_bulk: Statement,
    /// A batch of appends alone in one statement, outside any transaction of ours: each game's head
    /// is set where it is still the one its first append was made on, and its records and receipts
    /// are inserted where it was; answers the ids of those games. Its parameters are
    /// [`Bulk::parameters`], then the head each game's first append was made on as `$14`.
    write_appends: Statement,
}

/// What a batch holds back to write in bulk: heads, records and receipts of appends, so that a batch
/// costs a few round trips rather than a few per game. Each field but the last two is a column.
#[derive(Default)]
struct Bulk {
    head_ids: Vec<String>,
    head_seqs: Vec<i64>,
    head_steps: Vec<i64>,
    head_labels: Vec<Option<String>>,
    record_games: Vec<String>,
    record_seqs: Vec<i64>,
    record_texts: Vec<String>,
    receipt_games: Vec<String>,
    receipt_keys: Vec<String>,
    receipt_fingerprints: Vec<String>,
    receipt_statuses: Vec<i32>,
    receipt_bodies: Vec<String>,
    /// Where each game's head is in the head columns: a later head of the same game replaces it
    /// (one `UPDATE ... FROM` row per game, or PostgreSQL would pick one of them).
    head_rows: HashMap<String, usize>,
    /// The games with rows held here.
    games: HashSet<String>,
}

impl Bulk {
    /// The columns as a statement's parameters `$1` to `$12`, in the order of the fields, then the
    /// receipts' time `now` as `$13`.
    fn parameters<'a>(&'a self, now: &'a i64) -> Vec<&'a (dyn ToSql + Sync)> {
        vec![
            &self.head_ids,
            &self.head_seqs,
            &self.head_steps,
            &self.head_labels,
            &self.record_games,
            &self.record_seqs,
            &self.record_texts,
            &self.receipt_games,
            &self.receipt_keys,
            &self.receipt_fingerprints,
            &self.receipt_statuses,
            &self.receipt_bodies,
            now,
        ]
    }

    fn head(&mut self, id: &str, head: &Head) {
        if let Some(&row) = self.head_rows.get(id) {
            self.head_seqs[row] = head.seq as i64;
            self.head_steps[row] = head.step.get() as i64;
            self.head_labels[row].clone_from(&head.label);
            return;
        }
        self.head_rows.insert(id.to_owned(), self.head_ids.len());
        self.head_ids.push(id.to_owned());
        self.head_seqs.push(head.seq as i64);
        self.head_steps.push(head.step.get() as i64);
        self.head_labels.push(head.label.clone());
        self.games.insert(id.to_owned());
    }

    fn records(&mut self, id: &str, after: u64, records: &[String]) {
        for (offset, record) in records.iter().enumerate() {
            self.record_games.push(id.to_owned());
            self.record_seqs.push((after + 1 + offset as u64) as i64);
            self.record_texts.push(record.clone());
        }
        if !records.is_empty() {
            self.games.insert(id.to_owned());
        }
    }

    fn receipt(&mut self, game: &str, receipt: &Receipt) {
        self.receipt_games.push(game.to_owned());
        self.receipt_keys.push(receipt.key.clone());
        self.receipt_fingerprints.push(receipt.fingerprint.clone());
        self.receipt_statuses.push(i32::from(receipt.status));
        self.receipt_bodies.push(receipt.body.clone());
        self.games.insert(game.to_owned());
    }
}

impl WriterConnection {
    fn open(url: &str) -> Result<WriterConnection, StorageError> {
        let mut client = connect(url)?;
        let mut prepare = |sql: &str| client.prepare(sql).map_err(failed);
        // Games are locked in id order, so two processes' batches never deadlock.
        let lock_heads =
            prepare("SELECT id, seq FROM games WHERE id = ANY($1) ORDER BY id FOR UPDATE")?;
        // Data-modifying parts of one statement all run to their end; empty columns write nothing.
        let write_bulk = prepare(
            "WITH set_heads AS (
                 UPDATE games AS g SET seq = v.seq, step = v.step, label = v.label
                 FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::text[]) AS v(id, seq, step, label)
                 WHERE g.id = v.id
             ), add_records AS (
                 INSERT INTO records (game, seq, record)
                 SELECT * FROM UNNEST($5::text[], $6::bigint[], $7::text[])
             )
             INSERT INTO receipts (game, key, fingerprint, status, body, created)
             SELECT v.*, $13::bigint FROM UNNEST($8::text[], $9::text[], $10::text[], $11::int[], $12::text[])
             AS v(game, key, fingerprint, status, body)
             ON CONFLICT DO NOTHING",
        )?;
        // Under read committed, an update that finds a row another transaction changed waits for
        // its commit and checks `g.seq = v.on` again on the row as committed: a compare-and-set.
        let write_appends = prepare(
            "WITH set_heads AS (
                 UPDATE games AS g SET seq = v.seq, step = v.step, label = v.label
                 FROM (SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::text[], $14::bigint[])
                       AS u(id, seq, step, label, on_seq) ORDER BY id) AS v
                 WHERE g.id = v.id AND g.seq = v.on_seq
                 RETURNING g.id
             ), add_records AS (
                 INSERT INTO records (game, seq, record)
                 SELECT * FROM UNNEST($5::text[], $6::bigint[], $7::text[]) AS r(game, seq, record)
                 WHERE r.game IN (SELECT id FROM set_heads)
             ), add_receipts AS (
                 INSERT INTO receipts (game, key, fingerprint, status, body, created)
                 SELECT v.*, $13::bigint FROM UNNEST($8::text[], $9::text[], $10::text[], $11::int[], $12::text[])
                 AS v(game, key, fingerprint, status, body)
                 WHERE v.game IN (SELECT id FROM set_heads)
                 ON CONFLICT DO NOTHING
             )
             SELECT id FROM set_heads",
        )?;
        Ok(WriterConnection {
            client,
            lock_heads,
            write_bulk,
            write_appends,
        })
    }

    /// Makes a batch of writes: in one statement when it is appends alone ([`Self::appends`]),
    /// otherwise, or when that statement fails, in one transaction ([`Self::transaction`]).
    fn write(
        &mut self,
        writes: &[Write],
        encoded: &[rows::Encoded],
    ) -> Result<Vec<Written>, postgres::Error> {
        let batch: Vec<(&Write, &rows::Encoded)> = writes.iter().zip(encoded).collect();
        let Some(predicted) = Predicted::of(&batch) else {
            return self.transaction(&batch);
        };
        let won = match self.appends(&predicted) {
            Ok(won) => won,
            // The statement failed as a whole (a deadlock with another process, say): nothing of it
            // was made, and the transaction decides every write again.
            Err(error) if made_nothing(&error) => return self.transaction(&batch),
            Err(error) => return Err(error),
        };
        // Nothing of a game whose head was not the predicted one was written: its appends are made
        // again in a transaction, which decides them on the head there is. The statement is
        // committed, so that transaction being refused must not fail the batch (the server would
        // try its writes again one by one, the statement's too): those appends then answer
        // `Conflict`, and their games' threads load them again and run the changes anew.
        let again: Vec<(&Write, &rows::Encoded)> = batch
            .iter()
            .filter(|(write, _)| !won.contains(write.game()))
            .copied()
            .collect();
        let mut made_again = match self.transaction(&again) {
            Ok(results) => results,
            Err(error) if made_nothing(&error) => vec![Written::Conflict; again.len()],
            // Without an answer the outcome is unknown, as when a commit's answer is lost.
            Err(error) => return Err(error),
        }
        .into_iter();
        Ok(batch
            .iter()
            .zip(predicted.results)
            .map(|((write, _), result)| match won.contains(write.game()) {
                true => result,
                false => made_again.next().unwrap_or(Written::Conflict),
            })
            .collect())
    }

    /// Writes a batch of appends decided on the heads they were made on ([`Predicted`]), in one
    /// statement and one round trip: a game's rows go in only where its head is still the one its
    /// first append was made on, and then every decision about it holds. Answers those games.
    fn appends(&mut self, predicted: &Predicted) -> Result<HashSet<String>, postgres::Error> {
        let bulk = &predicted.bulk;
        let ons: Vec<i64> = bulk
            .head_ids
            .iter()
            .map(|id| predicted.made_on[id] as i64)
            .collect();
        let now = rows::now();
        let mut parameters = bulk.parameters(&now);
        parameters.push(&ons);
        Ok(self
            .client
            .query(&self.write_appends, &parameters)?
            .iter()
            .map(|row| row.get::<_, String>(0))
            .collect())
    }

    /// One transaction: lock the games' rows and read their heads, decide every write in order
    /// ([`rows::decide`]) against the heads as the earlier writes left them, then write what was held
    /// back.
    fn transaction(
        &mut self,
        batch: &[(&Write, &rows::Encoded)],
    ) -> Result<Vec<Written>, postgres::Error> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.client.transaction()?;
        let mut ids: Vec<&str> = batch.iter().map(|(write, _)| write.game()).collect();
        ids.sort_unstable();
        ids.dedup();
        let heads: HashMap<String, u64> = tx
            .query(&self.lock_heads, &[&ids])?
            .iter()
            .map(|row| (row.get::<_, String>(0), row.get::<_, i64>(1) as u64))
            .collect();
        let mut tables = Tables {
            tx: &mut tx,
            write_bulk: &self.write_bulk,
            heads,
            bulk: Bulk::default(),
        };
        let mut results = Vec::with_capacity(batch.len());
        for (write, encoded) in batch {
            results.push(rows::decide(&mut tables, write, encoded)?);
        }
        tables.flush()?;
        tx.commit()?;
        Ok(results)
    }
}

/// A batch of appends decided as if every game's head were still the one its first append was made
/// on: the answers and rows it would get, which hold for every game where that is so.
struct Predicted {
    /// The head each game's first append was made on.
    made_on: HashMap<String, u64>,
    /// Each game's head as the batch's writes move it.
    heads: HashMap<String, u64>,
    bulk: Bulk,
    results: Vec<Written>,
}

/// A write that is not an append, which only a transaction decides.
struct NotAnAppend;

impl Predicted {
    /// The prediction of a batch of appends alone; `None` for any other batch.
    fn of(batch: &[(&Write, &rows::Encoded)]) -> Option<Predicted> {
        let mut made_on = HashMap::new();
        for (write, _) in batch {
            let Write::Append { id, on, .. } = write else {
                return None;
            };
            made_on.entry(id.clone()).or_insert(*on);
        }
        let mut predicted = Predicted {
            heads: made_on.clone(),
            made_on,
            bulk: Bulk::default(),
            results: Vec::with_capacity(batch.len()),
        };
        for (write, encoded) in batch {
            let result = rows::decide(&mut predicted, write, encoded).ok()?;
            predicted.results.push(result);
        }
        Some(predicted)
    }
}

impl rows::Tables for Predicted {
    type Error = NotAnAppend;

    fn head_seq(&mut self, id: &str) -> Result<Option<u64>, NotAnAppend> {
        Ok(self.heads.get(id).copied())
    }

    fn count_games(&mut self) -> Result<u64, NotAnAppend> {
        Err(NotAnAppend)
    }

    fn insert_game(&mut self, _: &str, _: &str, _: &str, _: &Head) -> Result<bool, NotAnAppend> {
        Err(NotAnAppend)
    }

    fn remove_game(&mut self, _: &str) -> Result<(), NotAnAppend> {
        Err(NotAnAppend)
    }

    fn deleted_seq(&mut self, _: &str) -> Result<Option<u64>, NotAnAppend> {
        Err(NotAnAppend)
    }

    fn renumber(&mut self, _: &str, _: u64) -> Result<(), NotAnAppend> {
        Err(NotAnAppend)
    }

    fn insert_receipt(&mut self, _: &str, _: &Receipt) -> Result<bool, NotAnAppend> {
        Err(NotAnAppend)
    }

    fn add_receipt(&mut self, game: &str, receipt: &Receipt) -> Result<(), NotAnAppend> {
        self.bulk.receipt(game, receipt);
        Ok(())
    }

    fn set_head(&mut self, id: &str, head: &Head) -> Result<(), NotAnAppend> {
        self.heads.insert(id.to_owned(), head.seq);
        self.bulk.head(id, head);
        Ok(())
    }

    fn insert_records(
        &mut self,
        id: &str,
        after: u64,
        records: &[String],
    ) -> Result<(), NotAnAppend> {
        self.bulk.records(id, after, records);
        Ok(())
    }

    fn replace_base(&mut self, _: &str, _: &str, _: &Head) -> Result<(), NotAnAppend> {
        Err(NotAnAppend)
    }

    fn delete_game(&mut self, _: &str, _: u64) -> Result<(), NotAnAppend> {
        Err(NotAnAppend)
    }

    fn spend_receipts(&mut self, _: &str, _: &Spent) -> Result<(), NotAnAppend> {
        Err(NotAnAppend)
    }
}

/// The row operations of [`rows::decide`] inside one batch's transaction. Heads are the ones read
/// under the batch's row locks, kept as the batch's writes move them; appends' rows are held in a
/// [`Bulk`], and a statement about a game writes that game's held rows first.
struct Tables<'a, 't> {
    tx: &'a mut Transaction<'t>,
    write_bulk: &'a Statement,
    heads: HashMap<String, u64>,
    bulk: Bulk,
}

impl Tables<'_, '_> {
    /// Writes what is held back, if any of it is `game`'s.
    fn flush_for(&mut self, game: &str) -> Result<(), postgres::Error> {
        if self.bulk.games.contains(game) {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes everything held back, in one statement.
    fn flush(&mut self) -> Result<(), postgres::Error> {
        let bulk = std::mem::take(&mut self.bulk);
        if bulk.games.is_empty() {
            return Ok(());
        }
        let now = rows::now();
        self.tx.execute(self.write_bulk, &bulk.parameters(&now))?;
        Ok(())
    }
}

impl rows::Tables for Tables<'_, '_> {
    type Error = postgres::Error;

    fn head_seq(&mut self, id: &str) -> Result<Option<u64>, postgres::Error> {
        Ok(self.heads.get(id).copied())
    }

    fn count_games(&mut self) -> Result<u64, postgres::Error> {
        // Read committed: once the lock is held, the count sees every game that creates holding it
        // before made.
        self.tx
            .execute("SELECT pg_advisory_xact_lock($1)", &[&CREATE_LOCK])?;
        let count: i64 = self.tx.query_one("SELECT count(*) FROM games", &[])?.get(0);
        Ok(count as u64)
    }

    fn insert_game(
        &mut self,
        id: &str,
        base: &str,
        scripts: &str,
        head: &Head,
    ) -> Result<bool, postgres::Error> {
        self.flush_for(id)?;
        let inserted = self.tx.execute(
            "INSERT INTO games (id, base, scripts, seq, base_seq, step, label)
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            &[
                &id,
                &base,
                &scripts,
                &(head.seq as i64),
                &(head.base_seq as i64),
                &(head.step.get() as i64),
                &head.label,
            ],
        )?;
        if inserted == 1 {
            self.heads.insert(id.to_owned(), head.seq);
        }
        Ok(inserted == 1)
    }

    fn remove_game(&mut self, id: &str) -> Result<(), postgres::Error> {
        self.flush_for(id)?;
        self.tx.execute("DELETE FROM games WHERE id = $1", &[&id])?;
        self.heads.remove(id);
        Ok(())
    }

    fn deleted_seq(&mut self, id: &str) -> Result<Option<u64>, postgres::Error> {
        Ok(self
            .tx
            .query_opt("SELECT seq FROM deleted_games WHERE id = $1", &[&id])?
            .map(|row| row.get::<_, i64>(0) as u64))
    }

    fn renumber(&mut self, id: &str, by: u64) -> Result<(), postgres::Error> {
        self.flush_for(id)?;
        self.tx.execute(
            "UPDATE games SET seq = seq + $1, base_seq = base_seq + $1 WHERE id = $2",
            &[&(by as i64), &id],
        )?;
        if let Some(seq) = self.heads.get_mut(id) {
            *seq += by;
        }
        Ok(())
    }

    fn insert_receipt(&mut self, game: &str, receipt: &Receipt) -> Result<bool, postgres::Error> {
        // At once, not in bulk: the answer decides the write. A receipt under the same key from
        // another process's transaction makes this insert wait for its commit.
        self.flush_for(game)?;
        let kept = self.tx.execute(
            "INSERT INTO receipts (game, key, fingerprint, status, body, created)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
            &[
                &game,
                &receipt.key,
                &receipt.fingerprint,
                &i32::from(receipt.status),
                &receipt.body,
                &rows::now(),
            ],
        )?;
        Ok(kept == 1)
    }

    fn add_receipt(&mut self, game: &str, receipt: &Receipt) -> Result<(), postgres::Error> {
        self.bulk.receipt(game, receipt);
        Ok(())
    }

    fn set_head(&mut self, id: &str, head: &Head) -> Result<(), postgres::Error> {
        self.heads.insert(id.to_owned(), head.seq);
        self.bulk.head(id, head);
        Ok(())
    }

    fn insert_records(
        &mut self,
        id: &str,
        after: u64,
        records: &[String],
    ) -> Result<(), postgres::Error> {
        self.bulk.records(id, after, records);
        Ok(())
    }

    fn replace_base(&mut self, id: &str, base: &str, head: &Head) -> Result<(), postgres::Error> {
        self.flush_for(id)?;
        self.tx.execute(
            "UPDATE games SET base = $1, seq = $2, base_seq = $3, step = $4, label = $5
             WHERE id = $6",
            &[
                &base,
                &(head.seq as i64),
                &(head.base_seq as i64),
                &(head.step.get() as i64),
                &head.label,
                &id,
            ],
        )?;
        self.tx
            .execute("DELETE FROM records WHERE game = $1", &[&id])?;
        self.heads.insert(id.to_owned(), head.seq);
        Ok(())
    }

    fn delete_game(&mut self, id: &str, seq: u64) -> Result<(), postgres::Error> {
        self.flush_for(id)?;
        self.tx.execute(
            "INSERT INTO deleted_games (id, seq) VALUES ($1, $2)
             ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq",
            &[&id, &(seq as i64)],
        )?;
        self.tx.execute("DELETE FROM games WHERE id = $1", &[&id])?;
        self.tx
            .execute("DELETE FROM records WHERE game = $1", &[&id])?;
        self.tx
            .execute("DELETE FROM receipts WHERE game = $1", &[&id])?;
        self.heads.remove(id);
        Ok(())
    }

    fn spend_receipts(&mut self, scope: &str, spent: &Spent) -> Result<(), postgres::Error> {
        self.flush_for(scope)?;
        self.tx.execute(
            "UPDATE receipts SET status = $1, body = $2 WHERE game = $3 AND body = $4",
            &[&i32::from(spent.status), &spent.body, &scope, &spent.made],
        )?;
        Ok(())
    }
}
