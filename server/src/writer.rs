//! Group commit: a writer thread makes its games' writes durable, many at a time.
//!
//! Games hand their writes to the one writer and wait. The writer takes every write that is waiting,
//! makes them durable in one database transaction (one sync of the disk for all of them), and
//! answers each game with what became of its own write. While one transaction is being synced, the
//! next writes gather, so the more games write at once the more each transaction carries: this is
//! what lets many games commit durably at a rate one sync per change could not reach. A group the
//! database refused (and so made none of) is tried again write by write, so that only the write at
//! fault fails. This module must not look into writes: the storage does.

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use statecraft_saves::{Storage, StorageError, Write, Written};

/// The most writes one transaction carries.
const MAX_GROUP: usize = 512;

/// How long receipts are kept for retries with the same `Idempotency-Key`.
pub(crate) const RECEIPT_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// How often old receipts are dropped.
const RECEIPT_SWEEP: Duration = Duration::from_secs(10 * 60);

/// What a waiting game hears back.
pub(crate) type Reply = Result<Written, Arc<StorageError>>;

struct Request {
    write: Write,
    reply: SyncSender<Reply>,
}

/// The handle games write through. Cloning it is cheap; the writer stops once every handle is dropped
/// and the writes already sent are done. One queue, so a game's writes are made in the order the game
/// sent them.
#[derive(Clone, Debug)]
pub(crate) struct Writer {
    sender: Sender<Request>,
}

impl Writer {
    /// Starts the writer thread over `storage`; it also drops old receipts. One thread: a second
    /// only splits the waiting writes into smaller transactions, and a transaction costs the database
    /// about the same whatever it carries (one writer gave the most applies per second of one to eight
    /// on PostgreSQL, BENCHMARKS.md).
    pub(crate) fn start(storage: Arc<dyn Storage>) -> (Writer, JoinHandle<()>) {
        let (sender, receiver) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("statecraft-writer".to_owned())
            .spawn(move || run(&*storage, &receiver))
            .expect("the writer thread starts");
        (Writer { sender }, thread)
    }

    /// Makes one write durable with whatever else is waiting, and says what became of it.
    pub(crate) fn write(&self, write: Write) -> Reply {
        let (reply, answer) = mpsc::sync_channel(1);
        let gone = || {
            Arc::new(StorageError::Database(
                "the writer has stopped (the server is shutting down)".to_owned(),
            ))
        };
        self.sender
            .send(Request { write, reply })
            .map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }
}

fn run(storage: &dyn Storage, receiver: &Receiver<Request>) {
    let mut last_sweep = Instant::now();
    while let Ok(first) = receiver.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match receiver.try_recv() {
                Ok(request) => group.push(request),
                Err(_) => break,
            }
        }
        let (writes, replies): (Vec<Write>, Vec<SyncSender<Reply>>) = group
            .into_iter()
            .map(|request| (request.write, request.reply))
            .unzip();
        for (reply, result) in replies.into_iter().zip(commit(storage, &writes)) {
            let _ = reply.send(result);
        }
        if last_sweep.elapsed() > RECEIPT_SWEEP {
            last_sweep = Instant::now();
            let before = crate::db::now() - RECEIPT_LIFETIME.as_secs() as i64;
            match storage.forget_receipts(before) {
                Ok(dropped) => tracing::debug!(dropped, "old receipts dropped"),
                Err(error) => tracing::warn!(%error, "old receipts could not be dropped"),
            }
        }
    }
}

/// Makes a group of writes durable in one transaction, and says what became of each. When the
/// database refused the group, and so made none of it, each write is tried again in a transaction of
/// its own: one write the database refuses (a value it cannot store) must fail alone, not take the
/// writes of every other game that shared its transaction with it.
fn commit(storage: &dyn Storage, writes: &[Write]) -> Vec<Reply> {
    let started = Instant::now();
    match storage.write(writes) {
        Ok(results) => {
            tracing::debug!(
                writes = writes.len(),
                micros = started.elapsed().as_micros() as u64,
                "group committed"
            );
            results.into_iter().map(Ok).collect()
        }
        Err(error @ StorageError::Refused(_)) if writes.len() > 1 => {
            tracing::warn!(
                writes = writes.len(),
                %error,
                "a group commit was refused; trying its writes one by one"
            );
            writes
                .iter()
                .map(|write| match storage.write(std::slice::from_ref(write)) {
                    Ok(mut results) => Ok(results.pop().unwrap_or(Written::Missing)),
                    Err(error) => {
                        tracing::error!(game = write.game(), %error, "a write failed");
                        Err(Arc::new(error))
                    }
                })
                .collect()
        }
        Err(error) => {
            tracing::error!(writes = writes.len(), %error, "a group commit failed");
            let error = Arc::new(error);
            writes.iter().map(|_| Err(Arc::clone(&error))).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use statecraft_engine::{HistoryLimits, StepId};
    use statecraft_saves::{BaseRecord, Head};

    use super::*;
    use crate::db::Database;

    fn create(id: &str, label: Option<&str>) -> Write {
        Write::Create {
            id: id.to_owned(),
            base: BaseRecord {
                state: statecraft_engine::Value::from(serde_json::json!({"n": 0})),
                schema: None,
                scripts: None,
                history: HistoryLimits::default(),
                metadata: serde_json::Map::new(),
                seed: None,
                root_keys: Vec::new(),
                profile: None,
                automatic_schema: None,
                card_fingerprint: None,
                macros: BTreeMap::new(),
            },
            scripts: BTreeMap::new(),
            head: Head {
                seq: 0,
                base_seq: 0,
                step: StepId::ROOT,
                label: label.map(str::to_owned),
            },
            receipt: None,
            max_games: None,
        }
    }

    /// Commits `a`, the write the database refuses, and `c` as one group: only the refused one
    /// fails, and the others are made.
    fn only_the_refused_write_fails(storage: &dyn Storage, refused: Write) {
        let writes = vec![create("a", None), refused, create("c", None)];
        let results = commit(storage, &writes);
        assert!(matches!(results[0], Ok(Written::Done)), "{results:?}");
        assert!(results[1].is_err(), "{results:?}");
        assert!(matches!(results[2], Ok(Written::Done)), "{results:?}");
        let listed: Vec<String> = storage
            .list(None, 10)
            .expect("a listing")
            .into_iter()
            .map(|game| game.id)
            .collect();
        assert_eq!(listed, ["a", "c"]);
    }

    #[test]
    fn a_group_the_database_refuses_is_tried_again_write_by_write_on_sqlite() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("games.db");
        let storage = Database::Sqlite(path.clone()).open().expect("it opens");
        // A write that passes every check of the server and fails in the database.
        rusqlite::Connection::open(&path)
            .expect("a second connection")
            .execute_batch(
                "CREATE TRIGGER poison BEFORE INSERT ON games WHEN NEW.id = 'bad'
                 BEGIN SELECT RAISE(ABORT, 'poisoned'); END;",
            )
            .expect("the trigger");
        only_the_refused_write_fails(&*storage, create("bad", None));
    }

    #[test]
    fn a_group_the_database_refuses_is_tried_again_write_by_write_on_postgresql() {
        let Some(schema) = crate::http::tests::PgSchema::new("refused_group") else {
            return;
        };
        let storage = Database::Postgres(schema.url.clone())
            .open()
            .expect("it opens");
        // PostgreSQL cannot store NUL in text: the request checks keep it from a label, this write
        // goes around them.
        only_the_refused_write_fails(&*storage, create("bad", Some("a\u{0}b")));
    }
}
