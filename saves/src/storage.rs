//! Games kept in a database: the one storage interface every database backend implements.
//!
//! A stored game is what a save file holds, as rows: its [`BaseRecord`] (the state at the root, the
//! schema, the history bounds), its scripts as text, and its [`TimelineRecord`]s in order, numbered by
//! a sequence that only grows. The game's head (the number of its last record, the current step and
//! that step's label) is what writers compare and set: a write says which head it was made on, and
//! the database applies it only if the head is still that one, so several processes sharing one
//! database never lose an update. A compaction replaces the base and every record by the retained
//! timeline alone, as a save file's compaction does. Rebuilding a store from a stored game replays its
//! records with [`TimelineRecord::replay`], the same function the save files use.
//!
//! The trait is synchronous on purpose: the engine's store is synchronous and not `Send` once it holds
//! a Lua VM, so a game lives on a thread of its own and calls its database from there; SQLite's
//! client is synchronous too, and PostgreSQL's synchronous client runs its protocol on a small
//! runtime of its own. Backends live with the program that needs them (the HTTP server), so this
//! crate, the file saves and the engine never link a database client. This module must not interpret
//! instructions: it moves records.

use std::collections::BTreeMap;

use statecraft_engine::StepId;

use crate::records::{BaseRecord, TimelineRecord};

/// Where a stored game stands: what a writer compares and sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// The number of the game's last record (0 before any, or for a game made again under the id of
    /// a deleted one, the deleted game's last number plus one); it grows with every write,
    /// compactions included, so two different histories never share a head.
    pub seq: u64,
    /// The number of the last record written before the base was last replaced (a compaction): a
    /// reader holding records up to an older number than this must load the game again.
    pub base_seq: u64,
    /// The current step.
    pub step: StepId,
    /// The current step's label.
    pub label: Option<String>,
}

/// A whole stored game, as loaded.
#[derive(Clone, Debug)]
pub struct StoredGame {
    /// Its id.
    pub id: String,
    /// The state at the root and what the store is built with.
    pub base: BaseRecord,
    /// Its Lua scripts, by file name; loaded in file-name order.
    pub scripts: BTreeMap<String, String>,
    /// Every record after the base, oldest first.
    pub records: Vec<TimelineRecord>,
    /// Where it stands.
    pub head: Head,
}

/// The records written after a given one, for a reader that already holds the game up to it.
#[derive(Clone, Debug)]
pub enum Tail {
    /// Replay these on the game as held; they bring it to `head`.
    Records {
        /// The records after the one asked about, oldest first (empty when nothing changed).
        records: Vec<TimelineRecord>,
        /// Where the game stands after them.
        head: Head,
    },
    /// The base was replaced since: load the whole game again.
    Reload,
}

/// The answer a request got, kept with its idempotency key so that a retry gets the same answer,
/// after a restart too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// The key the client sent.
    pub key: String,
    /// A digest of the request, so that a key reused for another request is told apart from a retry.
    pub fingerprint: String,
    /// The answer's status code.
    pub status: u16,
    /// The answer's body (JSON text).
    pub body: String,
}

/// One change to the database; a batch of them is made durable in one transaction. Not
/// `#[non_exhaustive]`: a new kind of write must break every backend until it stores it.
#[derive(Clone, Debug)]
pub enum Write {
    /// A new game with no records. Refused with [`Written::Exists`] if the id is taken, or if its
    /// receipt's key has a receipt already (another request under the key made its game first).
    Create {
        /// Its id.
        id: String,
        /// Its base.
        base: BaseRecord,
        /// Its scripts.
        scripts: BTreeMap<String, String>,
        /// The head it starts at (sequence 0; the database starts a game made again under a deleted
        /// game's id after that game's last number instead).
        head: Head,
        /// The answer to keep for the creating request.
        receipt: Option<Receipt>,
        /// The most games the database may hold: with that many already, the create is refused with
        /// [`Written::Full`]. Decided inside the transaction that inserts the game, so creates racing
        /// (in one process or several) never pass the limit together.
        max_games: Option<u64>,
    },
    /// Records appended to a game whose head is still `on`.
    Append {
        /// The game.
        id: String,
        /// The head sequence the records were made on.
        on: u64,
        /// The records, in order.
        records: Vec<TimelineRecord>,
        /// The head after them (its `seq` is `on` plus the number of records).
        head: Head,
        /// The answer to keep for the request that made them.
        receipt: Option<Receipt>,
    },
    /// The game's base and records replaced by a shorter equivalent, if its head is still `on`.
    Compact {
        /// The game.
        id: String,
        /// The head sequence the compaction was made on.
        on: u64,
        /// The new base.
        base: BaseRecord,
        /// The records that rebuild the retained timeline on it.
        records: Vec<TimelineRecord>,
        /// The head after them (`seq` and `base_seq` move past `on`; the step stays).
        head: Head,
    },
    /// Only an answer to keep, for a request that changed nothing (a rejected batch).
    Receipt {
        /// The game.
        id: String,
        /// The answer.
        receipt: Receipt,
    },
    /// The game, its records and its receipts removed. [`Written::Missing`] if there is no such game.
    Delete {
        /// The game.
        id: String,
        /// What becomes of the receipts of the requests that made the game, which are kept under no
        /// game: a receipt must not go on acknowledging a game that is gone.
        spent: Option<Spent>,
    },
}

/// The answer that replaces, once a game is deleted, the receipts of the requests that made it: a
/// retry of one of them hears that the game is gone rather than that it was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spent {
    /// The body the making requests were answered (how their receipts are found).
    pub made: String,
    /// The status to answer their retries with.
    pub status: u16,
    /// The body to answer their retries with.
    pub body: String,
}

impl Write {
    /// The game this write is about.
    pub fn game(&self) -> &str {
        match self {
            Write::Create { id, .. }
            | Write::Append { id, .. }
            | Write::Compact { id, .. }
            | Write::Receipt { id, .. }
            | Write::Delete { id, .. } => id,
        }
    }
}

/// What became of one write of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// Durable.
    Done,
    /// The game's head had moved on (another writer won): nothing of this write was made.
    Conflict,
    /// A game with this id exists already.
    Exists,
    /// There is no such game (any more).
    Missing,
    /// The database holds a create's `max_games` already: nothing was made.
    Full,
}

/// A game as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// Its id.
    pub id: String,
    /// Its current step.
    pub step: StepId,
    /// That step's label.
    pub label: Option<String>,
}

/// Why the database could not answer. Nothing of a failed write was made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The database could not be reached, or failed in a way that leaves unknown whether a
    /// transaction committed (the connection broke during it).
    #[error("the database failed: {0}")]
    Database(String),
    /// The database's tables are of a layout this program does not know (written by a newer
    /// statecraft): nothing is read or written, so nothing of them is misread or overwritten.
    #[error(
        "the database's tables are schema version {found}, and this statecraft reads version \
         {supported} only: upgrade statecraft to open it, or point --db at another database"
    )]
    UnknownSchemaVersion {
        /// The version the database says it holds.
        found: String,
        /// The version this program reads and writes.
        supported: &'static str,
    },
    /// The database refused a statement or a value and rolled the transaction back: nothing of it
    /// was made, for certain, so its writes may be tried again (one by one, to find the one at fault).
    #[error("the database refused the write: {0}")]
    Refused(String),
    /// A stored row could not be read back: its game is damaged.
    #[error("game {game}: {problem}")]
    Damaged {
        /// The game.
        game: String,
        /// What is wrong.
        problem: String,
    },
}

/// A database of games. Every method is a complete, synchronous exchange with the database, safe to
/// call from many threads at once.
pub trait Storage: Send + Sync {
    /// The whole game, or `None` if there is no such game.
    fn load(&self, id: &str) -> Result<Option<StoredGame>, StorageError>;

    /// The records after record `seq` and the head they lead to, or `None` if the game is gone. This is
    /// how a process that holds a game in memory learns whether another process changed it.
    fn tail(&self, id: &str, seq: u64) -> Result<Option<Tail>, StorageError>;

    /// The receipt kept for `key` on game `id`, if any.
    fn receipt(&self, id: &str, key: &str) -> Result<Option<Receipt>, StorageError>;

    /// Up to `limit` games whose id comes after `after`, in id order.
    fn list(&self, after: Option<&str>, limit: usize) -> Result<Vec<Listing>, StorageError>;

    /// How many games there are.
    fn count(&self) -> Result<u64, StorageError>;

    /// Makes `writes` durable in one transaction and says, for each in order, what became of it. A
    /// write that finds a moved head ([`Written::Conflict`]), a taken id, a missing game or a full
    /// database changes nothing and does not stop the others. An error means none of them was made
    /// ([`StorageError::Refused`]) or, only when the connection broke, that it is not known.
    fn write(&self, writes: &[Write]) -> Result<Vec<Written>, StorageError>;

    /// Drops the receipts kept before `before` (seconds since the Unix epoch) and says how many.
    fn forget_receipts(&self, before: i64) -> Result<u64, StorageError>;
}
