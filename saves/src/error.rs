//! What can go wrong with a save: IO, a file that is not a readable save, a lock held too long.
//!
//! Every error names the file; every error about a file's contents also names the byte offset where
//! reading stopped and what was wrong there. An underlying error (the operating system's) is the
//! error's `source`, never repeated in its message, so a chain printed whole says it once. A rejected batch is not an error here either: it comes back
//! as the engine's [`statecraft_engine::Outcome`]. This module must not do IO.

use std::path::PathBuf;
use std::time::Duration;

use statecraft_engine::{BatchErrors, SchemaError};

/// Why a save could not be created, opened or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SaveError {
    /// The operating system refused a read, a write, an fsync or a rename.
    #[error("{}: {action}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What was being done (`cannot read`, `cannot fsync`).
        action: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start like a statecraft save.
    #[error("{} at byte {offset}: not a statecraft save: {problem}", path.display())]
    NotASave {
        /// The file.
        path: PathBuf,
        /// Where reading stopped.
        offset: u64,
        /// What was found.
        problem: String,
    },
    /// The file is a save of a format version this build cannot read.
    #[error(
        "{} at byte 16: save format version {found} is not supported; this build reads versions {oldest} to {newest}",
        path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version the file declares.
        found: u32,
        /// The oldest version this build reads.
        oldest: u32,
        /// The newest version this build reads (and the one it writes).
        newest: u32,
    },
    /// A record of the file is damaged, truncated before the base snapshot ends, or does not fit the
    /// records before it. The file is left as it is.
    #[error("{} at byte {offset}: {problem}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The offset of the record that could not be read.
        offset: u64,
        /// What was wrong.
        problem: String,
    },
    /// Another process holds the save's lock and did not release it in time.
    #[error(
        "{} is in use by another process (lock {}); gave up after {} ms",
        path.display(),
        lock.display(),
        waited.as_millis()
    )]
    Locked {
        /// The save.
        path: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// How long this process waited.
        waited: Duration,
    },
    /// `create` found a file at the path; a save is never overwritten by a new game.
    #[error("{}: a file already exists there; a new game never overwrites one", path.display())]
    Exists {
        /// The path.
        path: PathBuf,
    },
    /// The initial state violates the schema, or nests deeper or weighs more than the store's limits
    /// let a batch build (each error says which).
    #[error("the initial state is refused: {0}")]
    InvalidState(BatchErrors),
    /// The schema does not compile.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The game's history does not replay on its state (in an undo, a redo or a compaction): the
    /// history was not made from this state, a bug reported rather than written. The game refuses
    /// further work; the file holds what was acknowledged before.
    #[error("{}: the history does not replay on the state", path.display())]
    Replay {
        /// The save.
        path: PathBuf,
        /// What did not fit.
        #[source]
        source: statecraft_engine::ReplayError,
    },
    /// The caller's store set-up (loading the scripts folder) failed.
    #[error("{}: cannot set up the game: {error}", path.display())]
    Setup {
        /// The save.
        path: PathBuf,
        /// The set-up's own error, quoted in this one's message.
        error: crate::SetupError,
    },
    /// The game was opened read-only, and a change was asked of it.
    #[error("{}: opened read-only; nothing was changed", path.display())]
    ReadOnly {
        /// The save.
        path: PathBuf,
    },
    /// An earlier write failed after the change was made in memory, so memory and disk may differ.
    #[error("{}: an earlier write failed; open the save again to continue from what is on disk", path.display())]
    Poisoned {
        /// The save.
        path: PathBuf,
    },
}
