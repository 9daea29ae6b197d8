//! A game: a store whose every commit and every move on its timeline is on disk before it is
//! acknowledged.
//!
//! `Game` owns the save file, its lock and the engine's store. Each change to the store (a commit, on
//! the current step or on another one; an undo, a redo, a checkout) is appended to the file as one
//! checksummed timeline record (`records.rs`) and fsynced before the call returns; opening a save replays
//! the base and the records into a fresh store, so the whole tree of swipes and branches, the labels,
//! the current step and the visit order survive a restart. When the dead records (trimmed steps,
//! checkouts) outnumber the retained steps, the file is rewritten from the retained tree alone, every
//! branch kept: a new file is written beside it, fsynced, renamed over it and the folder fsynced, so a
//! crash leaves either the old file or the new one, never a mix. This module must not interpret
//! instructions: it records what the engine committed.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions as FileOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use statecraft_engine::{
    ApplyOptions, Batch, BatchErrors, CardUpdate, CardVersion, HistoryLimits, Outcome, Profile,
    ReplyReader, Resolve, StateSchema, StepId, StepRef, Store, StoreBuilder, StructureSchema,
    SyncError, SyncOptions, SyncReply, Synced, TimelineError, Value,
};

use crate::error::SaveError;
use crate::files::{self, resolve_links};
use crate::format::{
    self, FILE_HEADER_LEN, FORMAT_VERSION, Header, OLDEST_VERSION, Record, RecordRef, Scan,
};
use crate::lock::{self, Lock};
use crate::records::{BaseRecord, CheckoutRecord, StepRecord, TimelineRecord};
use crate::v1;

/// Dead records tolerated beyond the number of retained steps before the file is compacted. Small,
/// so that small histories compact too; large enough that a short history does not rewrite the file at
/// every step.
const SLACK_RECORDS: usize = 16;

/// Whether writes wait for the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// Every acknowledged change is fsynced first, and compaction fsyncs the new file and its folder.
    #[default]
    Synced,
    /// No fsync: a crash of the machine (not of the process) may lose acknowledged changes. For
    /// benchmarks and tests that measure everything but the disk.
    Unsynced,
}

/// Sets up the store of a game once its scripts folder is known: handlers, policies, limits. It runs
/// before the save applies its own history bounds and schema, which the save owns and this cannot
/// change. An error fails the open with [`SaveError::Setup`].
pub type Setup = Box<dyn FnOnce(StoreBuilder, Option<&Path>) -> Result<StoreBuilder, SetupError>>;

/// What a [`Setup`] fails with: the caller's own error (loading a scripts folder, for example).
pub type SetupError = Box<dyn std::error::Error + Send + Sync>;

/// How to open a save.
#[non_exhaustive]
pub struct OpenOptions {
    /// How long to wait for another process to release the save. Default: 10 s.
    pub lock_timeout: Duration,
    /// Open only to read: nothing is written, not even a torn tail cut, no lock file is created, and
    /// every change is refused with [`SaveError::ReadOnly`]. Needs only read access to the save and its
    /// folder. Default: false.
    pub read_only: bool,
    /// Whether writes wait for the disk. Default: [`Durability::Synced`].
    pub durability: Durability,
    /// Sets up the store from the game's scripts folder (the Lua handlers for `callback`). Default:
    /// none, so callbacks find no handler.
    pub setup: Option<Setup>,
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("lock_timeout", &self.lock_timeout)
            .field("read_only", &self.read_only)
            .field("durability", &self.durability)
            .field("setup", &self.setup.is_some())
            .finish()
    }
}

impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions {
            lock_timeout: Duration::from_secs(10),
            read_only: false,
            durability: Durability::Synced,
            setup: None,
        }
    }
}

impl OpenOptions {
    /// Sets how long to wait for the lock.
    pub fn lock_timeout(mut self, timeout: Duration) -> OpenOptions {
        self.lock_timeout = timeout;
        self
    }

    /// Opens only to read (see [`OpenOptions::read_only`]).
    pub fn read_only(mut self) -> OpenOptions {
        self.read_only = true;
        self
    }

    /// Sets whether writes wait for the disk.
    pub fn durability(mut self, durability: Durability) -> OpenOptions {
        self.durability = durability;
        self
    }

    /// Sets the store set-up (see [`Setup`]).
    pub fn setup(
        mut self,
        setup: impl FnOnce(StoreBuilder, Option<&Path>) -> Result<StoreBuilder, SetupError> + 'static,
    ) -> OpenOptions {
        self.setup = Some(Box::new(setup));
        self
    }
}

/// What a new game holds besides its initial state.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct NewGame {
    /// A JSON Schema every state of the game must satisfy.
    pub schema: Option<serde_json::Value>,
    /// The scripts folder the game uses, recorded as given (the save keeps a reference, not the files).
    pub scripts: Option<PathBuf>,
    /// History bounds; trimming drops the least recently visited branches first, and so does the file.
    pub history: HistoryLimits,
    /// Free-form metadata kept in the save (front end, card name, creation time).
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The seed of scripts' `ctx.random` (default 0): the same seed and the same turns draw the same
    /// numbers.
    pub seed: u64,
    /// The profile the game's replies follow (default `strict`; docs/mvu.md, "Profiles").
    pub profile: Profile,
    /// MVU's automatic schema of the game's card, in MVU's shape (what `card::read` gives), which the
    /// `mvu` profile enforces.
    pub automatic_schema: Option<serde_json::Value>,
    /// The fingerprint of the game's card, by which a front end notices that the card changed.
    pub card_fingerprint: Option<String>,
    /// The SillyTavern macros the game was made with, which every later reply is read with.
    pub macros: BTreeMap<String, String>,
}

impl NewGame {
    /// Sets the schema.
    pub fn schema(mut self, schema: serde_json::Value) -> NewGame {
        self.schema = Some(schema);
        self
    }

    /// Sets the scripts folder.
    pub fn scripts(mut self, scripts: impl Into<PathBuf>) -> NewGame {
        self.scripts = Some(scripts.into());
        self
    }

    /// Sets the history bounds.
    pub fn history(mut self, history: HistoryLimits) -> NewGame {
        self.history = history;
        self
    }

    /// Sets the seed of scripts' `ctx.random`.
    pub fn seed(mut self, seed: u64) -> NewGame {
        self.seed = seed;
        self
    }

    /// Sets the profile.
    pub fn profile(mut self, profile: Profile) -> NewGame {
        self.profile = profile;
        self
    }

    /// Sets MVU's automatic schema.
    pub fn automatic_schema(mut self, schema: serde_json::Value) -> NewGame {
        self.automatic_schema = Some(schema);
        self
    }

    /// Sets the card's fingerprint.
    pub fn card_fingerprint(mut self, fingerprint: impl Into<String>) -> NewGame {
        self.card_fingerprint = Some(fingerprint.into());
        self
    }

    /// Sets the macros the game keeps.
    pub fn macros(mut self, macros: BTreeMap<String, String>) -> NewGame {
        self.macros = macros;
        self
    }

    /// Adds a metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: serde_json::Value) -> NewGame {
        self.metadata.insert(key.into(), value);
        self
    }
}

/// What opening a save found after its last whole record and dropped: an append that a crash cut short,
/// which was therefore never acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TornTail {
    /// Where the last whole record ends.
    pub offset: u64,
    /// How many bytes after it were dropped.
    pub bytes: u64,
    /// Whether they were also cut from the file (not when the save was opened read-only).
    pub cut: bool,
}

/// `7 bytes after byte 1234 were an unfinished append, never acknowledged, and were cut from the file`.
impl std::fmt::Display for TornTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes after byte {} were an unfinished append, never acknowledged, and {}",
            self.bytes,
            self.offset,
            if self.cut {
                "were cut from the file"
            } else {
                "were ignored (the next write cuts them)"
            }
        )
    }
}

/// Damage a read-only opening found and stopped at: a record whose frame fails its checksum or whose
/// payload is not a record. Everything before it loaded; nothing from it on did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Damage {
    /// Where the damaged record starts: the whole records before it are what loaded.
    pub offset: u64,
    /// What is wrong with it.
    pub problem: String,
    /// How many records after the base loaded.
    pub records: usize,
}

/// `the record at byte 1234 is damaged (the record fails its checksum): this is the game as of the 12
/// records before it, ...`.
impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the record at byte {} is damaged ({}): this is the game as of the {} record{} before \
             it, not necessarily its current step; the file is left as it is and refuses changes (to \
             go on from here, keep a copy and cut the file to its first {} bytes)",
            self.offset,
            self.problem,
            self.records,
            if self.records == 1 { "" } else { "s" },
            self.offset
        )
    }
}

/// A durable game: a [`Store`] whose changes are on disk before they are acknowledged.
///
/// The save stays locked against other processes for as long as the `Game` lives (a read-only game holds
/// a shared lock, if the save has a lock file, and lets no change through).
pub struct Game {
    /// The save file, symbolic links followed.
    path: PathBuf,
    /// Opened for appending, or only for reading.
    file: File,
    _lock: Option<Lock>,
    read_only: bool,
    torn: Option<TornTail>,
    /// Damage a read-only opening stopped at.
    damage: Option<Damage>,
    store: Store,
    schema: Option<serde_json::Value>,
    scripts: Option<PathBuf>,
    metadata: serde_json::Map<String, serde_json::Value>,
    macros: BTreeMap<String, String>,
    /// Bytes of the file that hold whole records.
    len: u64,
    /// Records after the base.
    records: usize,
    durability: Durability,
    poisoned: bool,
    /// Reused for every record, so an append allocates nothing once warm.
    buf: Vec<u8>,
}

impl std::fmt::Debug for Game {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Game")
            .field("path", &self.path)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

fn io<'p>(path: &'p Path, action: &'static str) -> impl FnOnce(std::io::Error) -> SaveError + 'p {
    move |source| SaveError::Io {
        path: path.to_owned(),
        action,
        source,
    }
}

pub(crate) fn corrupt(path: &Path, offset: usize, problem: impl Into<String>) -> SaveError {
    SaveError::Corrupt {
        path: path.to_owned(),
        offset: offset as u64,
        problem: problem.into(),
    }
}

impl Game {
    /// Creates a save at `path` holding `state`, with default options. Fails if a file is there already.
    pub fn create(path: impl AsRef<Path>, state: Value, setup: NewGame) -> Result<Game, SaveError> {
        Game::create_with(path, state, setup, OpenOptions::default())
    }

    /// Creates a save at `path` holding `state`. The file appears whole or not at all: it is written
    /// beside the target, fsynced and renamed into place.
    pub fn create_with(
        path: impl AsRef<Path>,
        state: Value,
        setup: NewGame,
        options: OpenOptions,
    ) -> Result<Game, SaveError> {
        let given = path.as_ref();
        // Anything at the path, a dangling link included, is an existing file that is never replaced.
        let exists = |path: &Path| {
            path.symlink_metadata().is_ok().then(|| SaveError::Exists {
                path: given.to_owned(),
            })
        };
        if let Some(error) = exists(given) {
            return Err(error);
        }
        let path = &resolve_links(given).map_err(io(given, "cannot follow the symbolic link"))?;
        let lock = lock::acquire(path, options.lock_timeout)?;
        if let Some(error) = exists(given) {
            return Err(error);
        }
        let compiled = setup.schema.clone().map(StateSchema::new).transpose()?;
        let structure = setup
            .automatic_schema
            .clone()
            .map(StructureSchema::new)
            .transpose()?;
        let scripts = setup.scripts.as_deref().map(path_text);
        let mut buf = file_header().to_vec();
        let base = BaseRecord {
            state: state.clone(),
            schema: setup.schema.clone(),
            scripts,
            history: setup.history,
            metadata: setup.metadata.clone(),
            seed: Some(setup.seed),
            root_keys: Vec::new(),
            profile: (setup.profile != Profile::Strict).then_some(setup.profile),
            automatic_schema: setup.automatic_schema.clone(),
            card_fingerprint: setup.card_fingerprint.clone(),
            macros: setup.macros.clone(),
        };
        format::push_record(&mut buf, &RecordRef::Base(&base))
            .map_err(|e| encode_error(path, e))?;
        let store = store_builder(
            path,
            state,
            Schemas {
                schema: compiled,
                card: CardVersion {
                    structure,
                    fingerprint: setup.card_fingerprint,
                },
                profile: setup.profile,
            },
            setup.history,
            setup.seed,
            options.setup,
            setup.scripts.as_deref(),
        )?
        .build()
        .map_err(SaveError::InvalidState)?;
        // A save must be readable back: its first state may not nest deeper or weigh more than what
        // a batch may build.
        let refused = store.limits().check_state(store.state());
        if !refused.is_empty() {
            return Err(SaveError::InvalidState(BatchErrors(refused)));
        }
        write_atomically(path, &buf, options.durability)?;
        let file = open_append(path)?;
        Ok(Game {
            path: path.to_owned(),
            file,
            _lock: Some(lock),
            read_only: false,
            torn: None,
            damage: None,
            store,
            schema: setup.schema,
            scripts: setup.scripts,
            metadata: setup.metadata,
            macros: setup.macros,
            len: buf.len() as u64,
            records: 0,
            durability: options.durability,
            poisoned: false,
            buf,
        })
    }

    /// Opens a save with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Game, SaveError> {
        Game::open_with(path, OpenOptions::default())
    }

    /// Opens a save: takes its lock, reads and checks every record, and rebuilds the store with its
    /// history. A torn tail (an append that a crash cut short, never acknowledged) is dropped and cut
    /// from the file; any other damage is an error naming the file and the offset, and then nothing is
    /// written. A save of an older format version is read by that version's reader and rewritten in the
    /// current version at once (by the same atomic rename as compaction), so appends never mix versions.
    /// Time: O(file size).
    pub fn open_with(path: impl AsRef<Path>, options: OpenOptions) -> Result<Game, SaveError> {
        let given = path.as_ref();
        let path = &resolve_links(given).map_err(io(given, "cannot follow the symbolic link"))?;
        // No lock file is made for a save that is not there: the command fails without a trace.
        if let Err(error) = std::fs::metadata(path) {
            return Err(io(path, "cannot read")(error));
        }
        let lock = if options.read_only {
            lock::acquire_shared(path, options.lock_timeout)?
        } else {
            Some(lock::acquire(path, options.lock_timeout)?)
        };
        let bytes = std::fs::read(path).map_err(io(path, "cannot read"))?;
        let version = match format::read_header(&bytes) {
            Header::NotASave(offset, problem) => {
                return Err(SaveError::NotASave {
                    path: path.to_owned(),
                    offset: offset as u64,
                    problem,
                });
            }
            Header::Version(version) => version,
        };
        if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(SaveError::Version {
                path: path.to_owned(),
                found: version,
                oldest: OLDEST_VERSION,
                newest: FORMAT_VERSION,
            });
        }
        // Every reader produces the current in-memory form, and each version keeps its reader for the
        // files already out there.
        let mut loaded = match version {
            1 => v1::read(path, &bytes, options.setup)?,
            _ => read_v2(path, &bytes, version, options.setup, options.read_only)?,
        };
        let damage = loaded.damage.take();
        let torn = (damage.is_none() && loaded.good < bytes.len()).then(|| TornTail {
            offset: loaded.good as u64,
            bytes: (bytes.len() - loaded.good) as u64,
            cut: !options.read_only,
        });
        let file = if options.read_only {
            File::open(path).map_err(io(path, "cannot read"))?
        } else {
            // A compaction that a crash interrupted leaves its new file beside the save, never renamed
            // in: the save itself is whole, and the leftover is only a partial copy.
            match std::fs::remove_file(temp_path(path)) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io(path, "cannot remove a leftover compaction file")(error));
                }
                _ => {}
            }
            open_append(path)?
        };
        let mut game = Game {
            path: path.to_owned(),
            file,
            _lock: lock,
            read_only: options.read_only,
            torn,
            damage,
            store: loaded.store,
            schema: loaded.schema,
            scripts: loaded.scripts,
            metadata: loaded.metadata,
            macros: loaded.macros,
            len: loaded.good as u64,
            records: loaded.records,
            durability: options.durability,
            poisoned: false,
            buf: Vec::new(),
        };
        if options.read_only {
            return Ok(game);
        }
        if game.torn.is_some() {
            // The torn tail must go before anything is appended after it.
            game.file
                .set_len(game.len)
                .map_err(io(path, "cannot cut a torn tail"))?;
            game.fsync()?;
        }
        if version != FORMAT_VERSION {
            game.compact()?;
        }
        Ok(game)
    }

    /// Opens a save only to read it (see [`OpenOptions::read_only`]).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Game, SaveError> {
        Game::open_with(path, OpenOptions::default().read_only())
    }

    /// The damage a read-only opening stopped at, if any: callers show it, since the game is then
    /// only what the records before it hold.
    pub fn damage(&self) -> Option<&Damage> {
        self.damage.as_ref()
    }

    /// What opening the save found after its last whole record and dropped, if anything: callers show
    /// it, since it means a crash interrupted a write.
    pub fn torn_tail(&self) -> Option<TornTail> {
        self.torn
    }

    /// The store: state, history, schema. Time: O(1).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The current state. Time: O(1).
    pub fn state(&self) -> &Value {
        self.store.state()
    }

    /// The save file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The state's JSON Schema as given at creation.
    pub fn schema(&self) -> Option<&serde_json::Value> {
        self.schema.as_ref()
    }

    /// The scripts folder as given at creation.
    pub fn scripts(&self) -> Option<&Path> {
        self.scripts.as_deref()
    }

    /// The metadata kept in the save.
    pub fn metadata(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.metadata
    }

    /// The SillyTavern macros the game was made with (docs/mvu.md, "Character cards").
    pub fn macros(&self) -> &BTreeMap<String, String> {
        &self.macros
    }

    /// The size of the save file in bytes.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// Applies a batch with the store's policies and records the step under `label`. Returns once the
    /// step is on disk; a rejected batch changes nothing and writes nothing.
    pub fn apply(&mut self, batch: &Batch, label: Option<&str>) -> Result<Outcome, SaveError> {
        self.apply_with(
            batch,
            &ApplyOptions {
                label: label.map(str::to_owned),
                ..ApplyOptions::default()
            },
        )
    }

    /// Applies a batch with per-batch options (a label, the step to commit on); see [`Game::apply`]. The
    /// commit lists the steps its history bounds trimmed; the file records them too.
    pub fn apply_with(
        &mut self,
        batch: &Batch,
        options: &ApplyOptions,
    ) -> Result<Outcome, SaveError> {
        self.apply_resolved(batch, options, None)
    }

    /// Applies a batch whose commands `resolver` decides again one by one, under a profile that
    /// applies commands one by one (`Store::apply_resolved`); otherwise as [`Game::apply_with`].
    pub fn apply_resolved(
        &mut self,
        batch: &Batch,
        options: &ApplyOptions,
        resolver: Option<&mut dyn Resolve>,
    ) -> Result<Outcome, SaveError> {
        self.check()?;
        let before = self.store.current_step();
        let next_id = self.store.next_step_id();
        let outcome = self.store.apply_resolved(batch, options, resolver);
        if let Outcome::Committed(commit) = &outcome {
            if let Some(step) = StepRecord::of_commit(commit, options.label.as_deref()) {
                self.append(&TimelineRecord::Step(step))?;
            } else if self.store.history_limits().max_steps == 0 {
                // History is off: there is no step to record, so the new state itself becomes the base.
                // A commit may use up a step id even if it changed nothing (see
                // `Store::next_step_id`), and the rewrite records the next id with the state.
                if self.store.next_step_id() != next_id {
                    self.guard(Game::compact)?;
                }
            } else if commit.parent != before {
                // A batch that changed nothing, committed on another step, still moved there.
                self.append(&TimelineRecord::Checkout(CheckoutRecord {
                    to: commit.parent,
                }))?;
            }
        }
        Ok(outcome)
    }

    /// Takes a new version of the game's card as one step (see [`Store::take_card`]), on disk before
    /// it returns; a refused update changes nothing and writes nothing.
    pub fn take_card(
        &mut self,
        update: &CardUpdate,
        card: CardVersion,
        label: Option<&str>,
    ) -> Result<Outcome, SaveError> {
        self.check()?;
        let outcome = self.store.take_card(update, card, label.map(str::to_owned));
        if let Outcome::Committed(commit) = &outcome {
            let card = self.store.card().clone();
            match StepRecord::of_card_update(commit, label, &card) {
                Some(step) => self.append(&TimelineRecord::Step(step))?,
                // History is off: the new state and card become the base.
                None => self.guard(Game::compact)?,
            }
        }
        Ok(outcome)
    }

    /// Syncs a chat path (see [`Store::sync`]), on disk before it returns: the steps it made and where
    /// it ended go to the file in one write and one fsync. The inner result is the sync's own: a
    /// [`SyncError`] changed nothing.
    pub fn sync(
        &mut self,
        replies: &[SyncReply<'_>],
        options: &SyncOptions,
        reader: &mut dyn ReplyReader,
    ) -> Result<Result<Synced, SyncError>, SaveError> {
        self.check()?;
        let from = self.store.current_step();
        let synced = match self.store.sync(replies, options, reader) {
            Ok(synced) => synced,
            Err(error) => return Ok(Err(error)),
        };
        let records = TimelineRecord::of_sync(from, &synced, self.store.current_step());
        self.append_all(&records)?;
        Ok(Ok(synced))
    }

    /// Moves to the parent of the current step, on disk before it returns. Returns the step undone, or
    /// `None` at the root.
    pub fn undo(&mut self) -> Result<Option<StepId>, SaveError> {
        self.check()?;
        let undone = self
            .store
            .undo()
            .map_err(|source| self.replay_error(source))?;
        self.record_move(undone.is_some())?;
        Ok(undone)
    }

    /// Moves to the child of the current step that was current most recently, on disk before it
    /// returns. Returns it, or `None` if the current step has no children.
    pub fn redo(&mut self) -> Result<Option<StepId>, SaveError> {
        self.check()?;
        let redone = self
            .store
            .redo()
            .map_err(|source| self.replay_error(source))?;
        self.record_move(redone.is_some())?;
        Ok(redone)
    }

    /// Moves back to the step labelled `label` on the current line (see [`Store::undo_to`]), on disk
    /// before it returns. Returns how many steps were undone, or `None` if no step on the current line
    /// has that label.
    pub fn undo_to(&mut self, label: &str) -> Result<Option<usize>, SaveError> {
        self.check()?;
        let undone = self
            .store
            .undo_to(label)
            .map_err(|source| self.replay_error(source))?;
        self.record_move(matches!(undone, Some(1..)))?;
        Ok(undone)
    }

    /// Makes any retained step (or the root) current (see [`Store::checkout`]), on disk before it
    /// returns. Returns the length of the tree path crossed, or `None` if no retained step is named so
    /// (nothing changes then).
    pub fn checkout(&mut self, to: impl Into<StepRef>) -> Result<Option<usize>, SaveError> {
        self.check()?;
        let crossed = match self.store.checkout(to) {
            Ok(crossed) => crossed,
            Err(TimelineError::UnknownLabel(_) | TimelineError::UnknownStep(_)) => return Ok(None),
            Err(TimelineError::Replay(source)) => return Err(self.replay_error(source)),
            Err(other) => {
                return Err(self.replay_error(statecraft_engine::ReplayError {
                    path: String::new(),
                    problem: other.to_string(),
                }));
            }
        };
        self.record_move(crossed > 0)?;
        Ok(Some(crossed))
    }

    /// Records that the current step moved, if it did.
    fn record_move(&mut self, moved: bool) -> Result<(), SaveError> {
        if !moved {
            return Ok(());
        }
        let to = self.store.current_step();
        self.append(&TimelineRecord::Checkout(CheckoutRecord { to }))
    }

    /// Rewrites the file from the retained history alone (see the module docs). Done automatically when
    /// dead records outnumber retained steps; exposed for tools that want a minimal file now.
    /// Time: O(state + retained history).
    pub fn compact(&mut self) -> Result<(), SaveError> {
        self.check()?;
        self.guard(Game::rewrite)
    }

    fn rewrite(&mut self) -> Result<(), SaveError> {
        let mut base = BaseRecord {
            state: self
                .store
                .state_at(StepId::ROOT)
                .map_err(|error| self.timeline_error(error))?
                .value()
                .clone(),
            schema: self.schema.clone(),
            scripts: self.scripts.as_deref().map(path_text),
            history: self.store.history_limits(),
            metadata: self.metadata.clone(),
            seed: Some(self.store.seed()),
            root_keys: self.store.root_keys().to_vec(),
            profile: (self.store.profile() != Profile::Strict).then_some(self.store.profile()),
            automatic_schema: None,
            card_fingerprint: None,
            macros: self.macros.clone(),
        };
        // The card at the root, which trimming may have moved past a card update.
        let root_card = self
            .store
            .card_at(StepId::ROOT)
            .map_err(|error| self.timeline_error(error))?;
        base.set_card(root_card);
        let records = TimelineRecord::all_of(&self.store);
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.extend_from_slice(&file_header());
        format::push_record(&mut buf, &RecordRef::Base(&base))
            .map_err(|e| encode_error(&self.path, e))?;
        for record in &records {
            format::push_record(&mut buf, &RecordRef::Timeline(record))
                .map_err(|e| encode_error(&self.path, e))?;
        }
        write_atomically(&self.path, &buf, self.durability)?;
        self.file = open_append(&self.path)?;
        self.len = buf.len() as u64;
        self.records = records.len();
        buf.clear();
        self.buf = buf;
        Ok(())
    }

    /// Appends one record and waits for the disk; compacts when the dead records call for it.
    fn append(&mut self, record: &TimelineRecord) -> Result<(), SaveError> {
        self.append_all(std::slice::from_ref(record))
    }

    /// Appends records with one write and one fsync.
    fn append_all(&mut self, records: &[TimelineRecord]) -> Result<(), SaveError> {
        if records.is_empty() {
            return Ok(());
        }
        // The change is already in memory: any failure from here on, encoding included, poisons.
        self.guard(|game| {
            game.buf.clear();
            for record in records {
                format::push_record(&mut game.buf, &RecordRef::Timeline(record))
                    .map_err(|e| encode_error(&game.path, e))?;
            }
            game.file
                .write_all(&game.buf)
                .map_err(io(&game.path, "cannot append"))?;
            game.fsync()?;
            game.len += game.buf.len() as u64;
            game.records += records.len();
            Ok(())
        })?;
        let retained = self.store.history_len();
        if self.records > 2 * retained + SLACK_RECORDS {
            self.guard(Game::rewrite)?;
        }
        Ok(())
    }

    fn fsync(&self) -> Result<(), SaveError> {
        if self.durability == Durability::Synced {
            self.file
                .sync_data()
                .map_err(io(&self.path, "cannot fsync"))?;
        }
        Ok(())
    }

    /// Runs a write; if it fails, memory may be ahead of the disk, so the game refuses further work.
    fn guard(
        &mut self,
        write: impl FnOnce(&mut Game) -> Result<(), SaveError>,
    ) -> Result<(), SaveError> {
        let result = write(self);
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    fn check(&self) -> Result<(), SaveError> {
        if self.read_only {
            return Err(SaveError::ReadOnly {
                path: self.path.clone(),
            });
        }
        if self.poisoned {
            return Err(SaveError::Poisoned {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    /// The root's state always resolves, so only a replay can fail there; this keeps the error's words.
    fn timeline_error(&self, error: TimelineError) -> SaveError {
        SaveError::Replay {
            path: self.path.clone(),
            source: match error {
                TimelineError::Replay(source) => source,
                other => statecraft_engine::ReplayError {
                    path: String::new(),
                    problem: other.to_string(),
                },
            },
        }
    }

    /// A replay that failed may have stopped halfway through the live state, so the game poisons.
    fn replay_error(&mut self, source: statecraft_engine::ReplayError) -> SaveError {
        self.poisoned = true;
        SaveError::Replay {
            path: self.path.clone(),
            source,
        }
    }
}

/// What a reader produced.
pub(crate) struct Loaded {
    pub(crate) store: Store,
    pub(crate) schema: Option<serde_json::Value>,
    pub(crate) scripts: Option<PathBuf>,
    pub(crate) metadata: serde_json::Map<String, serde_json::Value>,
    pub(crate) macros: BTreeMap<String, String>,
    /// Where the whole records end.
    pub(crate) good: usize,
    pub(crate) records: usize,
    /// Damage that reading stopped at instead of failing (read-only openings only).
    pub(crate) damage: Option<Damage>,
}

/// Reads a format version 2 to 5 file: the base, then every timeline record replayed in order. The
/// versions differ only in what records may hold: version 3 always holds the seed and version 2
/// never does; only version 4 and later may hold a profile and an automatic schema; only version 5
/// a card's fingerprint and macros in the base and a card update in a step.
fn read_v2(
    path: &Path,
    bytes: &[u8],
    version: u32,
    setup: Option<Setup>,
    read_only: bool,
) -> Result<Loaded, SaveError> {
    let (base, mut offset) = read_base(path, bytes, |record: Record| record.timeline().err())?;
    if base.seed.is_some() != (version >= 3) {
        let problem = if version >= 3 {
            format!("a version {version} base snapshot must hold the game's seed")
        } else {
            format!("a version {version} base snapshot cannot hold a seed")
        };
        return Err(corrupt(path, FILE_HEADER_LEN, problem));
    }
    if version < 4 && (base.profile.is_some() || base.automatic_schema.is_some()) {
        return Err(corrupt(
            path,
            FILE_HEADER_LEN,
            format!(
                "a version {version} base snapshot cannot hold a profile or an automatic schema"
            ),
        ));
    }
    if version < 5 && (base.card_fingerprint.is_some() || !base.macros.is_empty()) {
        return Err(corrupt(
            path,
            FILE_HEADER_LEN,
            format!("a version {version} base snapshot cannot hold a card's fingerprint or macros"),
        ));
    }
    let mut loaded = load_base(path, *base, setup)?;
    loop {
        // A read-only opening stops at a damaged record and keeps what came before it, so that the
        // game up to the damage can still be read; a record that does not replay is not salvaged,
        // since a failed replay may leave the store anywhere.
        let damaged = |problem: String, loaded: &mut Loaded| {
            if read_only {
                loaded.damage = Some(Damage {
                    offset: offset as u64,
                    problem,
                    records: loaded.records,
                });
                Ok(())
            } else {
                Err(corrupt(path, offset, problem))
            }
        };
        let (payload, next) = match format::scan(bytes, offset) {
            Scan::Record { payload, next } => (payload, next),
            Scan::End | Scan::Torn => break,
            Scan::Damaged(problem) => {
                damaged(problem, &mut loaded)?;
                break;
            }
        };
        let record: Record = match format::decode(payload) {
            Ok(record) => record,
            Err(problem) => {
                damaged(problem, &mut loaded)?;
                break;
            }
        };
        let Ok(record) = record.timeline() else {
            damaged(
                "a second base snapshot after the first".to_owned(),
                &mut loaded,
            )?;
            break;
        };
        if version < 5 && matches!(&record, TimelineRecord::Step(step) if step.card.is_some()) {
            damaged(
                format!("a version {version} step cannot take a new version of the card"),
                &mut loaded,
            )?;
            break;
        }
        record.replay(&mut loaded.store).map_err(|error| {
            corrupt(
                path,
                offset,
                format!("the record does not replay on the timeline before it: {error}"),
            )
        })?;
        loaded.records += 1;
        offset = next;
    }
    loaded.good = offset;
    Ok(loaded)
}

/// Reads the first record, which must be the base, and returns it with the offset after it.
pub(crate) fn read_base<R: DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
    base_of: impl Fn(R) -> Option<Box<BaseRecord>>,
) -> Result<(Box<BaseRecord>, usize), SaveError> {
    let offset = FILE_HEADER_LEN;
    match format::scan(bytes, offset) {
        Scan::Record { payload, next } => {
            let record: R =
                format::decode(payload).map_err(|problem| corrupt(path, offset, problem))?;
            match base_of(record) {
                Some(base) => Ok((base, next)),
                None => Err(corrupt(
                    path,
                    offset,
                    "the first record is not the base snapshot",
                )),
            }
        }
        Scan::End | Scan::Torn => Err(corrupt(
            path,
            offset,
            format!(
                "the file ends at byte {} inside the base snapshot",
                bytes.len()
            ),
        )),
        Scan::Damaged(problem) => Err(corrupt(path, offset, problem)),
    }
}

/// The store a base describes, with no records yet: the schema compiled, the caller's set-up run, the
/// state checked against the schema. Problems are damage at the base's offset.
pub(crate) fn load_base(
    path: &Path,
    base: BaseRecord,
    setup: Option<Setup>,
) -> Result<Loaded, SaveError> {
    let base_offset = FILE_HEADER_LEN;
    let compiled = base
        .schema
        .clone()
        .map(StateSchema::new)
        .transpose()
        .map_err(|error| {
            corrupt(
                path,
                base_offset,
                format!("the saved schema does not compile: {error}"),
            )
        })?;
    let card = base.card().map_err(|error| {
        corrupt(
            path,
            base_offset,
            format!("the saved automatic schema is unusable: {error}"),
        )
    })?;
    let profile = base.profile();
    let scripts = base.scripts.map(PathBuf::from);
    let store = store_builder(
        path,
        base.state,
        Schemas {
            schema: compiled,
            card,
            profile,
        },
        base.history,
        base.seed.unwrap_or(0),
        setup,
        scripts.as_deref(),
    )?
    .root_keys(base.root_keys)
    .build()
    .map_err(|errors| {
        corrupt(
            path,
            base_offset,
            format!("the saved state violates the saved schema: {errors}"),
        )
    })?;
    Ok(Loaded {
        store,
        schema: base.schema,
        scripts,
        metadata: base.metadata,
        macros: base.macros,
        good: base_offset,
        records: 0,
        damage: None,
    })
}

/// What a game's states must obey, and whose rules its replies follow.
struct Schemas {
    schema: Option<StateSchema>,
    card: CardVersion,
    profile: Profile,
}

/// The store builder for a game: its profile (and the policies it calls for), the caller's set-up,
/// then the save's own bounds and schemas. Building it checks the state against the schema, which
/// each caller reports in its own terms (a new game's invalid state, an opened save's corruption).
fn store_builder(
    path: &Path,
    state: Value,
    schemas: Schemas,
    history: HistoryLimits,
    seed: u64,
    setup: Option<Setup>,
    scripts: Option<&Path>,
) -> Result<StoreBuilder, SaveError> {
    let Schemas {
        schema,
        card,
        profile,
    } = schemas;
    let mut builder = Store::builder(state).profile(profile).card(card);
    if let Some(setup) = setup {
        builder = setup(builder, scripts).map_err(|error| SaveError::Setup {
            path: path.to_owned(),
            error,
        })?;
    }
    builder = builder.history_limits(history).seed(seed);
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    Ok(builder)
}

fn file_header() -> [u8; FILE_HEADER_LEN] {
    format::file_header()
}

/// Paths are recorded as text; a path that is not valid UTF-8 is kept lossily, which only matters for
/// display, since the save never opens the scripts folder itself.
fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn encode_error(path: &Path, error: serde_json::Error) -> SaveError {
    SaveError::Io {
        path: path.to_owned(),
        action: "cannot encode a record",
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, error),
    }
}

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

fn open_append(path: &Path) -> Result<File, SaveError> {
    FileOptions::new()
        .append(true)
        .open(path)
        .map_err(io(path, "cannot open for writing"))
}

/// Writes `bytes` to `path` so that a crash leaves the old file or the new one (see
/// [`files::replace`]), by way of the save's own temporary file, which only the lock holder writes.
fn write_atomically(path: &Path, bytes: &[u8], durability: Durability) -> Result<(), SaveError> {
    files::replace(path, &temp_path(path), bytes, durability)
}
