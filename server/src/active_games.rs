//! Active games: each on a thread of its own, cached with a bound on count and memory.
//!
//! A game's store holds a Lua VM, which is not `Send`, so a game lives on one thread for as long as it
//! is active and requests reach it as jobs on a channel. That thread runs one job at a time (requests
//! to one game are serialized) while other games' threads run beside it. A job that changes the game
//! runs on it as it is in memory, hands the records to the group-commit writer and answers only once
//! they are durable; when the database says another process moved the game's head first, the game
//! reloads and runs the job again on the new state (with `expect_step`, that run answers 409). Before
//! any other answer (a read, a rejection, a change that wrote nothing), and before every job once
//! another process has changed the game, the game asks the database for records newer than its own
//! and replays them, so no answer comes from a stale copy.
//! A write that failed leaves memory ahead of the database, so the game is dropped and reloaded. A
//! delete turns the receipts of the requests that made the game into a 409 `game_deleted`, so that a
//! retried create never acknowledges a game that is gone.
//!
//! A job runs under its request's deadline: a batch still running when the time is up stops and is
//! rolled back (the engine and the scripts read the deadline), so the game takes its next job at once,
//! and the request waits a little past its deadline ([`ANSWER_GRACE`]) to give that definite answer.
//! A step whose record would be larger than `max_record_bytes` is refused before it reaches the
//! writer, and the game, which holds the step in memory, is dropped and reloaded.
//!
//! The cache keeps at most `max_active` games and about `max_memory` bytes; beyond that, the game used
//! least recently that has no job waiting is dropped (its thread ends), and it loads from the database
//! again when asked for. This module must not parse HTTP.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use statecraft_engine::Limits;
use statecraft_saves::{Receipt, Spent, Storage, StorageError, Tail, Write, Written};
use tokio::sync::oneshot;

use crate::answer::Answer;
use crate::error::{ApiError, Kind};
use crate::ids;
use crate::loaded_game::{Done, LoadedGame, Operation};
use crate::wire::{Created, Deleted, Problem};
use crate::writer::Writer;

/// How often a game runs a job again after losing its head to another writer.
const MAX_ATTEMPTS: usize = 8;

/// How long past its deadline a request waits for its game's own answer: a batch stops within
/// milliseconds of the deadline and says that nothing of it was applied, which is worth more to a
/// client than the bare timeout sent when the game is still busy after this (in a database write).
pub(crate) const ANSWER_GRACE: Duration = Duration::from_millis(250);

/// An `Idempotency-Key` with the digest of the request it came with.
#[derive(Clone, Debug)]
pub(crate) struct Idempotency {
    pub(crate) key: String,
    pub(crate) fingerprint: String,
}

/// One request for a game.
struct Job {
    operation: Operation,
    idempotency: Option<Idempotency>,
    deadline: Instant,
    reply: oneshot::Sender<Result<Answer, ApiError>>,
}

/// Bounds on the cache of active games.
#[derive(Clone, Copy, Debug)]
pub struct CacheBounds {
    /// Most games in memory at once.
    pub max_active: usize,
    /// About how many bytes they may hold together.
    pub max_memory: usize,
}

struct Handle {
    sender: Sender<Job>,
    /// Jobs sent and not yet answered: a game with any is never dropped.
    pending: Arc<AtomicUsize>,
    memory: Arc<AtomicUsize>,
    last_used: u64,
}

#[derive(Default)]
struct Active {
    games: HashMap<String, Handle>,
    clock: u64,
}

/// Every active game of this process.
pub(crate) struct ActiveGames {
    active: Mutex<Active>,
    storage: Arc<dyn Storage>,
    writer: Writer,
    limits: Limits,
    bounds: CacheBounds,
    max_record_bytes: usize,
}

impl std::fmt::Debug for ActiveGames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveGames")
            .field("bounds", &self.bounds)
            .finish_non_exhaustive()
    }
}

impl ActiveGames {
    pub(crate) fn new(
        storage: Arc<dyn Storage>,
        writer: Writer,
        limits: Limits,
        bounds: CacheBounds,
        max_record_bytes: usize,
    ) -> ActiveGames {
        ActiveGames {
            active: Mutex::new(Active::default()),
            storage,
            writer,
            limits,
            bounds,
            max_record_bytes,
        }
    }

    /// Runs an operation on game `id` and waits for its answer until `deadline`.
    pub(crate) async fn run(
        &self,
        id: &str,
        operation: Operation,
        idempotency: Option<Idempotency>,
        deadline: Instant,
    ) -> Result<Answer, ApiError> {
        let (reply, answer) = oneshot::channel();
        self.send(
            id,
            Job {
                operation,
                idempotency,
                deadline,
                reply,
            },
        )?;
        match tokio::time::timeout_at((deadline + ANSWER_GRACE).into(), answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(ApiError::new(
                Kind::ShuttingDown,
                "the game stopped before answering; retry the request",
            )),
            Err(_) => Err(ApiError::new(
                Kind::Timeout,
                "the request took longer than the server's time limit; a change may still \
                 commit: retry with the same Idempotency-Key to learn its outcome",
            )),
        }
    }

    /// Hands a job to the game's thread, starting one if the game is not active.
    fn send(&self, id: &str, job: Job) -> Result<(), ApiError> {
        let mut active = self.active.lock().expect("games lock");
        active.clock += 1;
        let now = active.clock;
        if !active.games.contains_key(id) {
            let handle = self.spawn(id)?;
            active.games.insert(id.to_owned(), handle);
        }
        let handle = active.games.get_mut(id).expect("inserted above");
        handle.last_used = now;
        handle.pending.fetch_add(1, Ordering::SeqCst);
        if handle.sender.send(job).is_err() {
            active.games.remove(id);
            return Err(ApiError::new(
                Kind::ShuttingDown,
                "the game's thread stopped; retry the request",
            ));
        }
        self.evict(&mut active, id);
        Ok(())
    }

    /// Drops the least recently used idle games while the cache is over its bounds.
    fn evict(&self, active: &mut Active, keep: &str) {
        loop {
            let memory: usize = active
                .games
                .values()
                .map(|handle| handle.memory.load(Ordering::Relaxed))
                .sum();
            if active.games.len() <= self.bounds.max_active && memory <= self.bounds.max_memory {
                return;
            }
            let idle = active
                .games
                .iter()
                .filter(|(id, handle)| {
                    id.as_str() != keep && handle.pending.load(Ordering::SeqCst) == 0
                })
                .min_by_key(|(_, handle)| handle.last_used)
                .map(|(id, _)| id.clone());
            match idle {
                // Dropping the handle drops the only sender: the game's thread ends.
                Some(id) => {
                    active.games.remove(&id);
                }
                None => return,
            }
        }
    }

    /// How many games are in memory.
    pub(crate) fn active_count(&self) -> usize {
        self.active.lock().expect("games lock").games.len()
    }

    fn spawn(&self, id: &str) -> Result<Handle, ApiError> {
        let (sender, receiver) = mpsc::channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let memory = Arc::new(AtomicUsize::new(0));
        let (name, storage, writer, limits) = (
            id.to_owned(),
            Arc::clone(&self.storage),
            self.writer.clone(),
            self.limits.clone(),
        );
        let (worker_pending, worker_memory) = (Arc::clone(&pending), Arc::clone(&memory));
        let max_record_bytes = self.max_record_bytes;
        std::thread::Builder::new()
            .name(format!("game {id}"))
            .spawn(move || {
                // The game, once loaded, is not `Send`: it is made on this thread and never leaves it.
                let mut worker = Worker {
                    id: name,
                    game: None,
                    storage,
                    writer,
                    limits,
                    pending: worker_pending,
                    memory: worker_memory,
                    max_record_bytes,
                    shared: false,
                };
                worker.serve(&receiver);
            })
            .map_err(|error| {
                ApiError::new(
                    Kind::ShuttingDown,
                    format!("cannot start a thread for the game: {error}"),
                )
            })?;
        Ok(Handle {
            sender,
            pending,
            memory,
            last_used: 0,
        })
    }

    /// Drops every game; each thread ends once its waiting jobs are done.
    pub(crate) fn close(&self) {
        self.active.lock().expect("games lock").games.clear();
    }
}

/// The thread of one active game.
struct Worker {
    id: String,
    game: Option<LoadedGame>,
    storage: Arc<dyn Storage>,
    writer: Writer,
    limits: Limits,
    pending: Arc<AtomicUsize>,
    memory: Arc<AtomicUsize>,
    max_record_bytes: usize,
    /// Whether another process has changed the game since this thread started: from then on every
    /// job reads the head before it runs, since a change run on a stale copy costs a reload.
    shared: bool,
}

impl Worker {
    fn serve(&mut self, jobs: &Receiver<Job>) {
        while let Ok(job) = jobs.recv() {
            let answer = if Instant::now() >= job.deadline {
                Err(ApiError::new(
                    Kind::Timeout,
                    "the request waited longer than the server's time limit; nothing was done",
                ))
            } else {
                let answer = self.job(&job.operation, job.idempotency.as_ref(), job.deadline);
                if let Err(error) = &answer {
                    tracing::debug!(game = %self.id, kind = error.kind.code(), "{}", error.message);
                }
                answer
            };
            let _ = job.reply.send(answer);
            let memory = self.game.as_ref().map_or(0, LoadedGame::memory);
            self.memory.store(memory, Ordering::Relaxed);
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn job(
        &mut self,
        operation: &Operation,
        idempotency: Option<&Idempotency>,
        deadline: Instant,
    ) -> Result<Answer, ApiError> {
        let idempotency = idempotency.filter(|_| operation.changes());
        if let Operation::Delete = operation {
            return self.delete();
        }
        let id = self.id.clone();
        // A change runs first on the game as this process last left it, without asking the database
        // for its head: its write's compare-and-set says whether another process moved the head
        // meanwhile, and an answer that writes nothing is checked against the head before it goes
        // out. One round trip less per change where no other process changes the game; once one
        // has, the head is read first again.
        let mut unchecked = operation.changes() && self.game.is_some() && !self.shared;
        let mut attempts = 0;
        while attempts < MAX_ATTEMPTS {
            if unchecked {
                unchecked = false;
            } else {
                attempts += 1;
                self.fresh()?;
            }
            let checked = attempts > 0;
            // The receipt is read after the head, and written with the head it moves: a request
            // under this key that another process commits is either seen here, or commits after the
            // head was read, so this attempt's write loses the compare-and-set and the next attempt
            // sees the receipt. Read before the head, the key would commit twice.
            if let Some(idempotency) = idempotency
                && let Some(receipt) = self.storage.receipt(&self.id, &idempotency.key)?
            {
                return replayed(&receipt, idempotency);
            }
            let game = self.game.as_mut().expect("loaded by fresh");
            let done = match game.run(operation, deadline) {
                Ok(done) => done,
                // An answer to keep for a retry (a rejection, a conflict) changed nothing in memory.
                Err(error) => {
                    if !checked && self.moved()? {
                        continue;
                    }
                    return self.keep(idempotency, Err(error));
                }
            };
            let Done { answer, records } = done;
            if records.is_empty() {
                if !checked && self.moved()? {
                    continue;
                }
                return self.keep(idempotency, Ok(answer));
            }
            if let Some(error) = too_large(&records, self.max_record_bytes) {
                // The store holds the step the database will not: drop it, and reload at the next job.
                self.game = None;
                return self.keep(idempotency, Err(error));
            }
            let head = game.head_after(records.len());
            let count = records.len();
            let write = Write::Append {
                id: id.clone(),
                on: game.head.seq,
                records,
                head: head.clone(),
                // A server failure (a sync stopped at its deadline) is not an answer to keep: a retry
                // must run again, and goes on from the steps written here.
                receipt: idempotency
                    .filter(|_| !answer.status.is_server_error())
                    .map(|idempotency| receipt(idempotency, &answer)),
            };
            match self.durable(write)? {
                Written::Done => {
                    let game = self.game.as_mut().expect("still loaded");
                    game.head = head;
                    game.records += count;
                    self.compact_if_due();
                    return Ok(answer);
                }
                Written::Conflict => {
                    tracing::debug!(game = %self.id, "another writer moved the head; running again");
                    self.shared = true;
                    self.game = None;
                }
                Written::Missing | Written::Exists | Written::Full => {
                    self.game = None;
                    return Err(unknown_game(ids::shown(&self.id)));
                }
            }
        }
        Err(ApiError::new(
            Kind::Contention,
            format!(
                "other writers changed the game {MAX_ATTEMPTS} times while this request ran; nothing \
                 was done"
            ),
        ))
    }

    /// Whether another process moved the game's head since it was loaded or last checked (the
    /// game is then brought up to it, or dropped to load again).
    fn moved(&mut self) -> Result<bool, ApiError> {
        let before = self.game.as_ref().map(|game| game.head.clone());
        let after = self.fresh()?.head.clone();
        Ok(before != Some(after))
    }

    /// The game, loaded or brought up to the database's head.
    fn fresh(&mut self) -> Result<&mut LoadedGame, ApiError> {
        if let Some(game) = self.game.as_mut() {
            match self.storage.tail(&self.id, game.head.seq)? {
                None => {
                    self.game = None;
                    return Err(unknown_game(ids::shown(&self.id)));
                }
                Some(Tail::Records { records, head }) => {
                    if records.is_empty() && head == game.head {
                        return Ok(self.game.as_mut().expect("checked"));
                    }
                    self.shared = true;
                    if game.catch_up(&records, head).is_ok() {
                        return Ok(self.game.as_mut().expect("checked"));
                    }
                    self.game = None;
                }
                Some(Tail::Reload) => {
                    self.shared = true;
                    self.game = None;
                }
            }
        }
        let stored = self
            .storage
            .load(&self.id)?
            .ok_or_else(|| unknown_game(ids::shown(&self.id)))?;
        let game = LoadedGame::load(stored, &self.limits)?;
        Ok(self.game.insert(game))
    }

    /// Hands a write to the writer; a failed write leaves memory ahead of the database, so the game
    /// is dropped and loads again at the next job.
    fn durable(&mut self, write: Write) -> Result<Written, ApiError> {
        match self.writer.write(write) {
            Ok(written) => Ok(written),
            Err(error) => {
                self.game = None;
                Err(storage_error(&error))
            }
        }
    }

    /// Keeps the answer to a request that changed nothing, when it came with a key.
    fn keep(
        &mut self,
        idempotency: Option<&Idempotency>,
        answer: Result<Answer, ApiError>,
    ) -> Result<Answer, ApiError> {
        let Some(idempotency) = idempotency else {
            return answer;
        };
        let sent = match &answer {
            Ok(answer) => answer.clone(),
            // A server failure is not an answer to the request: a retry must try again.
            Err(error) if error.status().is_server_error() => return answer,
            Err(error) => Answer::json(error.status(), &error.body()),
        };
        let write = Write::Receipt {
            id: self.id.clone(),
            receipt: receipt(idempotency, &sent),
        };
        match self.writer.write(write) {
            Ok(_) => answer,
            Err(error) => Err(storage_error(&error)),
        }
    }

    fn delete(&mut self) -> Result<Answer, ApiError> {
        self.game = None;
        // A create retried under its key after this must not hear that the game was made.
        let gone = ApiError::new(
            Kind::GameDeleted,
            format!(
                "the game \"{}\" that this Idempotency-Key made has since been deleted; send a new \
                 key to make another",
                ids::shown(&self.id)
            ),
        );
        let spent = Spent {
            made: created(&self.id).body,
            status: gone.status().as_u16(),
            body: gone.body_text(),
        };
        match self.durable(Write::Delete {
            id: self.id.clone(),
            spent: Some(spent),
        })? {
            Written::Done => Ok(Answer::ok(&Deleted {
                id: ids::shown(&self.id),
                deleted: true,
            })),
            _ => Err(unknown_game(ids::shown(&self.id))),
        }
    }

    /// Rewrites the game's rows from its retained timeline when dead records outnumber it. A failure
    /// here loses nothing (the records stay as they were), so it is only logged.
    fn compact_if_due(&mut self) {
        let Some(game) = self.game.as_ref().filter(|game| game.wants_compaction()) else {
            return;
        };
        let (base, records) = match game.compacted() {
            Ok(compacted) => compacted,
            Err(error) => {
                tracing::warn!(game = %self.id, %error, "cannot compact");
                return;
            }
        };
        let count = records.len();
        let mut head = game.head_after(count);
        head.base_seq = head.seq;
        let write = Write::Compact {
            id: self.id.clone(),
            on: game.head.seq,
            base,
            records,
            head: head.clone(),
        };
        match self.writer.write(write) {
            Ok(Written::Done) => {
                let game = self.game.as_mut().expect("still loaded");
                game.head = head;
                game.records = count;
                tracing::debug!(game = %self.id, records = count, "compacted");
            }
            Ok(_) => self.game = None,
            Err(error) => tracing::warn!(game = %self.id, %error, "cannot compact"),
        }
    }
}

/// What a kept answer says to a retry: the same answer, or 409 for a key reused on another request.
pub(crate) fn replayed(receipt: &Receipt, idempotency: &Idempotency) -> Result<Answer, ApiError> {
    if receipt.fingerprint != idempotency.fingerprint {
        return Err(ApiError::new(
            Kind::IdempotencyKeyReused,
            format!(
                "the Idempotency-Key \"{}\" was used before with a different request",
                idempotency.key
            ),
        ));
    }
    let status =
        axum::http::StatusCode::from_u16(receipt.status).unwrap_or(axum::http::StatusCode::OK);
    Ok(Answer {
        status,
        body: receipt.body.clone(),
    })
}

pub(crate) fn receipt(idempotency: &Idempotency, answer: &Answer) -> Receipt {
    Receipt {
        key: idempotency.key.clone(),
        fingerprint: idempotency.fingerprint.clone(),
        status: answer.status.as_u16(),
        body: answer.body.clone(),
    }
}

/// The 422 for records whose JSON would be longer than `max` bytes together, if they would.
fn too_large(records: &[statecraft_saves::TimelineRecord], max: usize) -> Option<ApiError> {
    let mut room = max;
    for record in records {
        match crate::db::fits(record, room) {
            Ok(len) => room -= len,
            Err(_) => {
                let message = format!(
                    "this step's record would be more than {max} bytes of JSON, the most this \
                     server stores for one request (--max-record-bytes); nothing changed"
                );
                return Some(
                    ApiError::new(Kind::Rejected, message.clone())
                        .with_errors(vec![Problem::server("record_too_large", message)]),
                );
            }
        }
    }
    None
}

/// The answer to a request that made the game `id`: the same for every request that makes a game,
/// so that a delete finds the receipts that acknowledge it.
/// `key` is the game's storage key; the answer names the id its owner knows it by.
pub(crate) fn created(key: &str) -> Answer {
    Answer::json(
        axum::http::StatusCode::CREATED,
        &Created {
            id: ids::shown(key),
            step: 0,
        },
    )
}

/// `id` is the id as the client knows it (`ids::shown` of a storage key).
pub(crate) fn unknown_game(id: &str) -> ApiError {
    ApiError::new(Kind::UnknownGame, format!("no game has the id \"{id}\""))
}

pub(crate) fn storage_error(error: &StorageError) -> ApiError {
    ApiError::new(
        Kind::Storage,
        format!("{error}; nothing of this request was saved"),
    )
}

/// The digest of a request, to tell a retry from another request under the same key: FNV-1a over
/// the operation's name and body, stable across builds and platforms.
pub(crate) fn fingerprint(parts: &[&[u8]]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in (part.len() as u64).to_le_bytes().iter().chain(part.iter()) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}
