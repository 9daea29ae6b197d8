//! A game: a store whose every commit, undo and redo is on disk before it is acknowledged.
//!
//! `Game` owns the save file, its lock and the engine's store. Each change to the store is appended to
//! the file as one checksummed record and fsynced before the call returns; opening a save replays the
//! base snapshot and the records into a fresh store, so undo, redo and `undo_to` work after a restart as
//! they did before it. When the dead records (trimmed steps, dropped redo branches, undo and redo
//! markers) outnumber the retained steps, the file is rewritten from the retained history alone: a
//! new file is written beside it, fsynced, renamed over it and the folder fsynced, so a crash leaves
//! either the old file or the new one, never a mix. This module must not interpret instructions: it
//! records what the engine committed.

use std::fs::{File, OpenOptions as FileOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use statecraft_engine::{
    ApplyOptions, Batch, Change, HistoryLimits, Outcome, StateSchema, StepId, Store, StoreBuilder,
    Value,
};

use crate::error::SaveError;
use crate::format::{
    self, BaseRef, ChangesRef, FILE_HEADER_LEN, FORMAT_VERSION, Header, OLDEST_VERSION, Record,
    RecordRef, Scan,
};
use crate::lock::{self, Lock};

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
/// change. An `Err` message fails the open with [`SaveError::Setup`].
pub type Setup = Box<dyn FnOnce(StoreBuilder, Option<&Path>) -> Result<StoreBuilder, String>>;

/// How to open a save.
#[non_exhaustive]
pub struct OpenOptions {
    /// How long to wait for another process to release the save. Default: 10 s.
    pub lock_timeout: Duration,
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
            .field("durability", &self.durability)
            .field("setup", &self.setup.is_some())
            .finish()
    }
}

impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions {
            lock_timeout: Duration::from_secs(10),
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

    /// Sets whether writes wait for the disk.
    pub fn durability(mut self, durability: Durability) -> OpenOptions {
        self.durability = durability;
        self
    }

    /// Sets the store set-up (see [`Setup`]).
    pub fn setup(
        mut self,
        setup: impl FnOnce(StoreBuilder, Option<&Path>) -> Result<StoreBuilder, String> + 'static,
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
    /// History bounds; trimming keeps the newest steps, and so does the file.
    pub history: HistoryLimits,
    /// Free-form metadata kept in the save (front end, card name, creation time).
    pub metadata: serde_json::Map<String, serde_json::Value>,
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

    /// Adds a metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: serde_json::Value) -> NewGame {
        self.metadata.insert(key.into(), value);
        self
    }
}

/// A durable game: a [`Store`] whose changes are on disk before they are acknowledged.
///
/// The save stays locked against other processes for as long as the `Game` lives.
pub struct Game {
    path: PathBuf,
    file: File,
    _lock: Lock,
    store: Store,
    schema: Option<serde_json::Value>,
    scripts: Option<PathBuf>,
    metadata: serde_json::Map<String, serde_json::Value>,
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

fn corrupt(path: &Path, offset: usize, problem: impl Into<String>) -> SaveError {
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
        let path = path.as_ref();
        let lock = lock::acquire(path, options.lock_timeout)?;
        if path.symlink_metadata().is_ok() {
            return Err(SaveError::Exists {
                path: path.to_owned(),
            });
        }
        let compiled = setup.schema.clone().map(StateSchema::new).transpose()?;
        let scripts = setup.scripts.as_deref().map(path_text);
        let mut buf = file_header().to_vec();
        let base = BaseRef {
            state: &state,
            schema: setup.schema.as_ref(),
            scripts: scripts.as_deref(),
            history: setup.history,
            metadata: &setup.metadata,
        };
        format::push_record(&mut buf, &RecordRef::Base(base)).map_err(|e| encode_error(path, e))?;
        let store = build_store(
            path,
            state,
            compiled,
            setup.history,
            options.setup,
            setup.scripts.as_deref(),
        )?
        .map_err(SaveError::InvalidState)?;
        write_atomically(path, &buf, options.durability)?;
        let file = open_append(path)?;
        Ok(Game {
            path: path.to_owned(),
            file,
            _lock: lock,
            store,
            schema: setup.schema,
            scripts: setup.scripts,
            metadata: setup.metadata,
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
        let path = path.as_ref();
        let lock = lock::acquire(path, options.lock_timeout)?;
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
        // Every reader produces the current in-memory form; version 1 is the only one so far, and a
        // future version 2 adds its reader here and keeps this one for the files already out there.
        let loaded = read_v1(path, &bytes, options.setup)?;
        // A compaction that a crash interrupted leaves its new file beside the save, never renamed in:
        // the save itself is whole, and the leftover is only a partial copy.
        match std::fs::remove_file(temp_path(path)) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(io(path, "cannot remove a leftover compaction file")(error));
            }
            _ => {}
        }
        let file = open_append(path)?;
        let mut game = Game {
            path: path.to_owned(),
            file,
            _lock: lock,
            store: loaded.store,
            schema: loaded.schema,
            scripts: loaded.scripts,
            metadata: loaded.metadata,
            len: loaded.good as u64,
            records: loaded.records,
            durability: options.durability,
            poisoned: false,
            buf: Vec::new(),
        };
        if loaded.good < bytes.len() {
            // The torn tail must go before anything is appended after it.
            game.file
                .set_len(game.len)
                .map_err(io(path, "cannot cut a torn tail"))?;
            game.sync()?;
        }
        if version != FORMAT_VERSION {
            game.compact()?;
        }
        Ok(game)
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

    /// Applies a batch with per-batch options; see [`Game::apply`].
    pub fn apply_with(
        &mut self,
        batch: &Batch,
        options: &ApplyOptions,
    ) -> Result<Outcome, SaveError> {
        self.check()?;
        let outcome = self.store.apply_with(batch, options);
        if let Outcome::Committed(commit) = &outcome
            && !commit.changes.is_empty()
        {
            if commit.step.is_some() {
                let record = RecordRef::Step {
                    label: options.label.as_deref(),
                    changes: ChangesRef(&commit.changes),
                };
                self.append(&record)?;
            } else {
                // History is off (`max_steps == 0`): there is no step to record, so the new state itself
                // becomes the base.
                self.guard(Game::compact)?;
            }
        }
        Ok(outcome)
    }

    /// Reverts the newest applied step, on disk before it returns. `None` if there is nothing to undo.
    pub fn undo(&mut self) -> Result<Option<StepId>, SaveError> {
        self.check()?;
        let undone = self
            .store
            .undo()
            .map_err(|source| self.replay_error(source))?;
        if undone.is_some() {
            self.append(&RecordRef::Undo { steps: 1 })?;
        }
        Ok(undone)
    }

    /// Re-applies the oldest undone step, on disk before it returns. `None` if there is nothing to redo.
    pub fn redo(&mut self) -> Result<Option<StepId>, SaveError> {
        self.check()?;
        let redone = self
            .store
            .redo()
            .map_err(|source| self.replay_error(source))?;
        if redone.is_some() {
            self.append(&RecordRef::Redo { steps: 1 })?;
        }
        Ok(redone)
    }

    /// Rolls back every step after the newest applied step labelled `label` (see
    /// [`Store::undo_to`]), on disk before it returns. Returns how many steps were undone, or `None` if
    /// no applied step has that label.
    pub fn undo_to(&mut self, label: &str) -> Result<Option<usize>, SaveError> {
        self.check()?;
        let undone = self
            .store
            .undo_to(label)
            .map_err(|source| self.replay_error(source))?;
        if let Some(steps @ 1..) = undone {
            self.append(&RecordRef::Undo { steps })?;
        }
        Ok(undone)
    }

    /// Rewrites the file from the retained history alone (see the module docs). Done automatically when
    /// dead records outnumber retained steps; exposed for tools that want a minimal file now.
    /// Time: O(state + retained history).
    pub fn compact(&mut self) -> Result<(), SaveError> {
        self.check()?;
        self.guard(Game::rewrite)
    }

    fn rewrite(&mut self) -> Result<(), SaveError> {
        let steps: Vec<_> = self.store.history().collect();
        let applied: Vec<&[Change]> = steps
            .iter()
            .filter(|s| s.applied)
            .map(|s| s.changes)
            .collect();
        let base =
            base_state(self.store.state(), &applied).map_err(|source| SaveError::Replay {
                path: self.path.clone(),
                source,
            })?;
        let scripts = self.scripts.as_deref().map(path_text);
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.extend_from_slice(&file_header());
        let record = RecordRef::Base(BaseRef {
            state: &base,
            schema: self.schema.as_ref(),
            scripts: scripts.as_deref(),
            history: self.store.history_limits(),
            metadata: &self.metadata,
        });
        format::push_record(&mut buf, &record).map_err(|e| encode_error(&self.path, e))?;
        for step in &steps {
            let record = RecordRef::Step {
                label: step.label,
                changes: ChangesRef(step.changes),
            };
            format::push_record(&mut buf, &record).map_err(|e| encode_error(&self.path, e))?;
        }
        let undone = steps.iter().filter(|s| !s.applied).count();
        if undone > 0 {
            format::push_record(&mut buf, &RecordRef::Undo { steps: undone })
                .map_err(|e| encode_error(&self.path, e))?;
        }
        let records = steps.len() + usize::from(undone > 0);
        drop(steps);
        write_atomically(&self.path, &buf, self.durability)?;
        self.file = open_append(&self.path)?;
        self.len = buf.len() as u64;
        self.records = records;
        buf.clear();
        self.buf = buf;
        Ok(())
    }

    /// Appends one record and waits for the disk; compacts when the dead records call for it.
    fn append(&mut self, record: &RecordRef<'_>) -> Result<(), SaveError> {
        // The change is already in memory: any failure from here on, encoding included, poisons.
        self.guard(|game| {
            game.buf.clear();
            format::push_record(&mut game.buf, record).map_err(|e| encode_error(&game.path, e))?;
            game.file
                .write_all(&game.buf)
                .map_err(io(&game.path, "cannot append"))?;
            game.sync()?;
            game.len += game.buf.len() as u64;
            game.records += 1;
            Ok(())
        })?;
        let retained = self.store.history_len();
        if self.records > 2 * retained + SLACK_RECORDS {
            self.guard(Game::rewrite)?;
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), SaveError> {
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
        if self.poisoned {
            return Err(SaveError::Poisoned {
                path: self.path.clone(),
            });
        }
        Ok(())
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
struct Loaded {
    store: Store,
    schema: Option<serde_json::Value>,
    scripts: Option<PathBuf>,
    metadata: serde_json::Map<String, serde_json::Value>,
    /// Where the whole records end.
    good: usize,
    records: usize,
}

/// Reads a format version 1 file.
fn read_v1(path: &Path, bytes: &[u8], setup: Option<Setup>) -> Result<Loaded, SaveError> {
    let mut offset = FILE_HEADER_LEN;
    let base = match format::scan(bytes, offset) {
        Scan::Record { payload, next } => match format::decode(payload) {
            Ok(Record::Base(base)) => {
                offset = next;
                base
            }
            Ok(_) => {
                return Err(corrupt(
                    path,
                    offset,
                    "the first record is not the base snapshot",
                ));
            }
            Err(problem) => return Err(corrupt(path, offset, problem)),
        },
        Scan::End | Scan::Torn => {
            return Err(corrupt(
                path,
                offset,
                format!(
                    "the file ends at byte {} inside the base snapshot",
                    bytes.len()
                ),
            ));
        }
        Scan::Damaged(problem) => return Err(corrupt(path, offset, problem)),
    };
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
    let scripts = base.scripts.map(PathBuf::from);
    let mut store = build_store(
        path,
        base.state,
        compiled,
        base.history,
        setup,
        scripts.as_deref(),
    )?
    .map_err(|errors| {
        let list = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        corrupt(
            path,
            base_offset,
            format!("the saved state violates the saved schema: {list}"),
        )
    })?;
    let mut records = 0;
    loop {
        let (payload, next) = match format::scan(bytes, offset) {
            Scan::Record { payload, next } => (payload, next),
            Scan::End | Scan::Torn => break,
            Scan::Damaged(problem) => return Err(corrupt(path, offset, problem)),
        };
        let record = format::decode(payload).map_err(|problem| corrupt(path, offset, problem))?;
        match record {
            Record::Base(_) => {
                return Err(corrupt(
                    path,
                    offset,
                    "a second base snapshot after the first",
                ));
            }
            Record::Step(step) => {
                let changes = step
                    .changes
                    .into_iter()
                    .map(format::DiskChange::into_change)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|problem| corrupt(path, offset, problem))?;
                store.replay_step(step.label, changes).map_err(|error| {
                    corrupt(
                        path,
                        offset,
                        format!("the step does not replay on the state: {error}"),
                    )
                })?;
            }
            Record::Undo { steps } => {
                for _ in 0..steps {
                    match store.undo() {
                        Ok(Some(_)) => {}
                        Ok(None) => {
                            return Err(corrupt(
                                path,
                                offset,
                                "an undo record with no step left to undo",
                            ));
                        }
                        Err(error) => {
                            return Err(corrupt(
                                path,
                                offset,
                                format!("the undo does not replay: {error}"),
                            ));
                        }
                    }
                }
            }
            Record::Redo { steps } => {
                for _ in 0..steps {
                    match store.redo() {
                        Ok(Some(_)) => {}
                        Ok(None) => {
                            return Err(corrupt(
                                path,
                                offset,
                                "a redo record with no step left to redo",
                            ));
                        }
                        Err(error) => {
                            return Err(corrupt(
                                path,
                                offset,
                                format!("the redo does not replay: {error}"),
                            ));
                        }
                    }
                }
            }
        }
        records += 1;
        offset = next;
    }
    Ok(Loaded {
        store,
        schema: base.schema,
        scripts,
        metadata: base.metadata,
        good: offset,
        records,
    })
}

/// The store for a game: the caller's set-up first, then the save's own bounds and schema. The outer
/// error is the set-up's; the inner one lists the state's schema violations.
fn build_store(
    path: &Path,
    state: Value,
    schema: Option<StateSchema>,
    history: HistoryLimits,
    setup: Option<Setup>,
    scripts: Option<&Path>,
) -> Result<Result<Store, Vec<statecraft_engine::BatchError>>, SaveError> {
    let mut builder = Store::builder(state);
    if let Some(setup) = setup {
        builder = setup(builder, scripts).map_err(|message| SaveError::Setup {
            path: path.to_owned(),
            message,
        })?;
    }
    builder = builder.history_limits(history);
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    Ok(builder.build())
}

/// The state before the applied steps: each step's changes inverted and replayed newest first, on a
/// scratch store, so the live store is never touched. Time: O(retained changes × depth × log n).
fn base_state(
    state: &Value,
    applied: &[&[Change]],
) -> Result<Value, statecraft_engine::ReplayError> {
    let mut scratch = Store::builder(state.clone())
        .history_limits(HistoryLimits {
            max_steps: 1,
            max_bytes: usize::MAX,
        })
        .build()
        .map_err(|_| statecraft_engine::ReplayError {
            path: String::new(),
            problem: "a store without a schema refused its state".to_owned(),
        })?;
    for changes in applied.iter().rev() {
        // Replaying a change forwards with `old` and `new` swapped, in reverse order, is exactly the
        // engine's backward replay.
        let inverse = changes
            .iter()
            .rev()
            .map(|c| Change {
                path: c.path.clone(),
                old: c.new.clone(),
                new: c.old.clone(),
                reason: None,
                op: c.op,
            })
            .collect();
        scratch.replay_step(None, inverse)?;
    }
    Ok(scratch.state().clone())
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

/// Writes `bytes` to `path` so that a crash leaves the old file or the new one: write beside it, fsync,
/// rename over it, fsync the folder (without which the rename itself may not survive a power loss).
fn write_atomically(path: &Path, bytes: &[u8], durability: Durability) -> Result<(), SaveError> {
    let temp = temp_path(path);
    let mut file = File::create(&temp).map_err(io(&temp, "cannot create"))?;
    file.write_all(bytes).map_err(io(&temp, "cannot write"))?;
    if durability == Durability::Synced {
        file.sync_all().map_err(io(&temp, "cannot fsync"))?;
    }
    drop(file);
    std::fs::rename(&temp, path)
        .map_err(io(path, "cannot rename the compacted file into place"))?;
    if durability == Durability::Synced {
        let folder = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        File::open(folder)
            .and_then(|dir| dir.sync_all())
            .map_err(io(folder, "cannot fsync the folder"))?;
    }
    Ok(())
}
