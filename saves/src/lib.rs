//! Durable games on disk: a statecraft store whose every commit and every move on its history tree
//! survives a crash.
//!
//! A [`Game`] owns one save file and the engine's [`statecraft_engine::Store`]. Every change is
//! appended to the file as a checksummed record and fsynced before the call returns; opening the save
//! replays the base snapshot and the records, so the whole timeline (every branch, labels, the current
//! step) survives restarts. The records themselves ([`BaseRecord`], [`TimelineRecord`]) know nothing of
//! files, so another store (a database) can keep a game as the same records, one row each. A
//! torn tail left by a crash is dropped; any other damage is an error that names the file, the byte
//! offset and the problem, and the file is then left alone. An exclusive lock keeps two processes
//! from interleaving, and compaction (write beside, fsync, rename, fsync the folder) keeps the file
//! proportional to the retained history. The format is described in `saves/FORMAT.md`.
//!
//! This crate is the only one with file IO and on-disk types. It must not interpret instructions
//! itself: it records what the engine committed and rebuilds a store from it.

mod error;
mod files;
mod format;
mod game;
mod lock;
mod records;
mod storage;
mod v1;

pub use error::SaveError;
pub use files::{replace_file, resolve_links};
pub use game::{Damage, Durability, Game, NewGame, OpenOptions, Setup, SetupError, TornTail};
pub use lock::{Lock, acquire as lock_exclusive};
pub use records::{
    BaseRecord, CardRecord, CheckoutRecord, PositionRecord, StepRecord, TimelineRecord,
};
pub use storage::{
    Head, Listing, Receipt, Spent, Storage, StorageError, StoredGame, Tail, Write, Written,
};

/// The save format version this build writes; it reads every version from 1 up to this one.
pub const FORMAT_VERSION: u32 = format::FORMAT_VERSION;
