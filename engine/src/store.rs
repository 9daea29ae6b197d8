//! The store: the mutable host that owns the current state, its history and its rules.
//!
//! `apply` runs a batch in place on the root (or on the state rebuilt at the step named by `at`, which
//! becomes the root on commit) through the batch runner (`run.rs`: hooks, validation, callbacks,
//! watchers, the schema check), which undoes a failing batch by replaying its changes backwards: a
//! rejected batch leaves the state equal to what it was (the nodes it wrote are new ones), the
//! history and the current step as they were, and delivers no event. Every commit becomes a step of
//! the history tree (`history.rs`); undo, redo and checkout move along the tree by replaying change
//! logs on the root in place. Writing in place is safe for everything else that holds the state:
//! readers' [`Snapshot`]s, the history's checkpoints and the state a batch began with are O(1) clones
//! whose nodes the root shares, and a shared node is copied before it is written, so they never see
//! later changes. A batch given a deadline reads the clock as it runs and, past it, is rejected like
//! any failing batch. This module must not do IO or parse text.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::budget;
use crate::callback::{CallbackHandler, HostEvent, NoHandlers};
use crate::card::{CardUpdate, CardVersion};
use crate::change::{Change, ReplayError, replay_forward};
use crate::error::{BatchError, BatchErrors, ErrorKind};
use crate::history::{
    DEFAULT_CHECKPOINT_EVERY, History, HistoryLimits, Step, StepId, StepMarks, StepRef,
    TimelineError, TrimmedStep,
};
use crate::instruction::{Batch, Instruction};
use crate::limits::{Limits, Policies};
use crate::path::Path;
use crate::profile::Profile;
use crate::random::Random;
use crate::run::{self, Finished, Mode, Setting, Start};
use crate::schema::StateSchema;
use crate::structure::StructureSchema;
use crate::sync::ContentKey;
use crate::validate::{DEFAULT_FORBIDDEN, Rules};
use crate::value::Value as StateValue;
use crate::value::Value;

/// Per-batch options.
#[derive(Clone, Debug, Default)]
pub struct ApplyOptions {
    /// A label for the history step (a chat message or swipe id). Labels are unique: a label already in
    /// use moves to the new step, and [`Commit::label_moved_from`] says which step lost it.
    pub label: Option<String>,
    /// Commit on this step instead of the current one (a swipe or an edit): the batch runs on the state
    /// there, and on commit the new step, a child of that one, becomes current. Atomic like any batch:
    /// rejected, nothing moves. An unknown step rejects the batch with [`ErrorKind::UnknownStep`].
    pub at: Option<StepRef>,
    /// Policies for this batch instead of the store's (or, when only `profile` is given, instead of
    /// that profile's).
    pub policies: Option<Policies>,
    /// The profile for this batch instead of the store's: under `mvu` and `mvu-zod` the batch's
    /// commands apply one by one, a refused one skipped with a warning, and under `mvu` the store's
    /// automatic schema ([`StoreBuilder::structure`]) applies (docs/mvu.md, "Profiles").
    pub profile: Option<Profile>,
    /// Apply the instructions that succeed and report the others, instead of all-or-nothing. A failing
    /// instruction's own partial effects (and those of what its callbacks emitted) are rolled back.
    pub best_effort: bool,
    /// The byte span in the reply of each instruction, when the batch came from a reply (one per
    /// instruction, or empty). Only `before` hooks read them, to show and report where an instruction
    /// they edit came from.
    pub spans: Vec<Range<usize>>,
    /// When the batch's time is up: past it the batch stops and is rejected whole with
    /// [`ErrorKind::DeadlineExceeded`], best effort or not, so nothing of it commits. The store reads
    /// the clock before every handler call and every 64 other instructions, and hands
    /// the deadline to handlers, which stop a running script at it (the Lua host does). `None`: no
    /// deadline, only the limits bound the batch.
    pub deadline: Option<Instant>,
    /// The content key of the chat reply this batch comes from (sync, `docs/timeline.md`): the step
    /// carries it, so that a later sync finds the reply's step instead of applying it again, and a
    /// keyed batch makes a step even when it changes nothing. Scripts' draws are keyed by it and the
    /// step's depth instead of the step id, so the same reply at the same place draws the same again.
    pub key: Option<ContentKey>,
    /// A new version of the game's card that the step takes (a card update, see
    /// [`Store::take_card`]): it holds from the new step down, and the step is made even when the
    /// batch changes nothing. Such a batch runs as the card's own change: all or nothing under the
    /// store's JSON Schema and limits, without the automatic schema (the card is what changes) and
    /// without the handlers' hooks and watchers (it is no reply).
    pub card: Option<Arc<CardVersion>>,
}

/// Decides a batch's commands again against the state each will run on, for the profiles that apply
/// commands one by one (docs/mvu.md): an MVU command's meaning depends on the state (whether its path
/// exists, whether it names a `[value, "description"]` pair, whether its target is an array or an
/// object), and in MVU each command sees what the commands before it did. The translators implement
/// it; the engine calls it and never reads text.
pub trait Resolve {
    /// The batch's commands, in order: consecutive ranges of instruction indexes that cover the
    /// batch, one per command. A range may be empty: a command that stood for nothing on the state
    /// before the batch, which the commands before it may change.
    fn units(&self) -> &[Range<usize>];

    /// The instructions command `unit` stands for on `state`, the working state after the commands
    /// before it; `None` keeps the batch's own.
    fn resolve(&mut self, unit: usize, state: &StateValue) -> Option<Vec<Instruction>>;

    /// The command as warnings name it (its text in the reply), if known.
    fn describe(&self, unit: usize) -> Option<String>;
}

/// What a committed batch did.
#[derive(Clone, Debug, Serialize)]
pub struct Commit {
    /// The history step, or `None` when history is off (`max_steps == 0`) or the batch changed nothing,
    /// has no label and drew no random number.
    #[serde(skip)]
    pub step: Option<StepId>,
    /// The step the batch was committed on: the current step before it, or the one `at` named. The new
    /// step is its child (until trimming makes the root its parent).
    #[serde(skip)]
    pub parent: StepId,
    /// Every primitive change, in order. Shared with the history step.
    pub changes: Arc<[Change]>,
    /// One entry per instruction of the batch: what the op returns (docs/instructions.md), `None` for absent.
    pub results: Vec<Option<Value>>,
    /// Host events queued by handlers, delivered now that the batch committed.
    pub events: Vec<HostEvent>,
    /// Soft problems the policies allowed (old mismatches under `warn`, skipped targets), and in
    /// best-effort mode the instructions that failed.
    pub warnings: Vec<BatchError>,
    /// The step that had this batch's label before it: labels are unique, so the label moved to the new
    /// step and that step is now unlabelled (still in the history, by id).
    #[serde(skip)]
    pub label_moved_from: Option<StepId>,
    /// The steps the history bounds made this commit drop, in the order dropped: branch tips visited
    /// least recently, then, only when nothing else is left, the oldest steps of the current line. Their
    /// ids and labels no longer resolve and their states cannot be reached again.
    pub trimmed: Vec<TrimmedStep>,
}

/// Why a batch was refused. The state is unchanged and no event was delivered.
#[derive(Clone, Debug, Serialize)]
pub struct Rejection {
    /// Every problem found.
    pub errors: Vec<BatchError>,
}

/// The result of `apply`: a rejected batch is an expected outcome, not a Rust error.
#[derive(Clone, Debug)]
#[must_use]
pub enum Outcome {
    /// The batch was applied and recorded.
    Committed(Commit),
    /// Nothing changed.
    Rejected(Rejection),
}

impl Outcome {
    fn rejected_by(errors: Vec<BatchError>) -> Outcome {
        Outcome::Rejected(Rejection { errors })
    }

    /// The commit, if the batch committed.
    pub fn committed(self) -> Option<Commit> {
        match self {
            Outcome::Committed(commit) => Some(commit),
            Outcome::Rejected(_) => None,
        }
    }

    /// The errors, if the batch was rejected.
    pub fn rejected(self) -> Option<Vec<BatchError>> {
        match self {
            Outcome::Committed(_) => None,
            Outcome::Rejected(rejection) => Some(rejection.errors),
        }
    }

    /// Whether the batch committed.
    pub fn is_committed(&self) -> bool {
        matches!(self, Outcome::Committed(_))
    }
}

/// A read-only view of a state at one moment. Clone: O(1); it never sees later changes.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    root: Value,
}

impl Snapshot {
    /// The whole state.
    pub fn value(&self) -> &Value {
        &self.root
    }

    /// The value at `path`, or `None` if absent or unreachable. Time: O(depth × log n).
    pub fn get(&self, path: &Path) -> Option<&Value> {
        self.root.lookup(path.segments())
    }
}

/// A step as listed by [`Store::history`] and [`Store::step`].
#[derive(Debug)]
pub struct StepInfo<'a> {
    /// Its id.
    pub id: StepId,
    /// The step it was committed on; [`StepId::ROOT`] for the root.
    pub parent: StepId,
    /// Its label.
    pub label: Option<&'a str>,
    /// The content key of the chat reply a sync made it from.
    pub key: Option<ContentKey>,
    /// Why that reply was refused, when it was (the step then changes nothing).
    pub refusal: Option<&'a str>,
    /// Its changes (shared: cloning the `Arc` copies nothing).
    pub changes: &'a Arc<[Change]>,
    /// The new version of the card it took, when it is a card update.
    pub card_update: Option<&'a CardVersion>,
    /// Whether it is on the current line (the current step or one of its ancestors), so its changes
    /// are in the current state.
    pub applied: bool,
    /// Whether it is the current step.
    pub current: bool,
    /// The steps committed on it, oldest first.
    pub children: &'a [StepId],
}

/// Builds a [`Store`].
pub struct StoreBuilder {
    state: Value,
    policies: Policies,
    limits: Limits,
    history: HistoryLimits,
    checkpoint_every: u64,
    schema: Option<StateSchema>,
    card: CardVersion,
    profile: Profile,
    handler: Box<dyn CallbackHandler>,
    forbidden: Vec<String>,
    seed: u64,
    root_keys: Vec<ContentKey>,
}

impl std::fmt::Debug for StoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreBuilder")
            .field("policies", &self.policies)
            .finish_non_exhaustive()
    }
}

impl StoreBuilder {
    /// Default policies for every batch.
    pub fn policies(mut self, policies: Policies) -> StoreBuilder {
        self.policies = policies;
        self
    }

    /// Limits on batches.
    pub fn limits(mut self, limits: Limits) -> StoreBuilder {
        self.limits = limits;
        self
    }

    /// The limits the store will enforce (the defaults unless [`StoreBuilder::limits`] set others),
    /// for set-up that must agree with them, such as loading scripts under the same limits.
    pub fn configured_limits(&self) -> &Limits {
        &self.limits
    }

    /// Bounds on history.
    pub fn history_limits(mut self, history: HistoryLimits) -> StoreBuilder {
        self.history = history;
        self
    }

    /// How many steps a read or a checkout may replay from the nearest kept state (default 32, at least
    /// 1): a step that lies that many steps below the nearest checkpoint (or the root) keeps its state
    /// as a checkpoint when a step is committed on it. Fewer checkpoints keep less memory alive (every
    /// checkpoint is counted in the byte bound); more make long jumps cheaper.
    pub fn checkpoint_every(mut self, steps: u64) -> StoreBuilder {
        self.checkpoint_every = steps;
        self
    }

    /// A JSON Schema every committed state must satisfy.
    pub fn schema(mut self, schema: StateSchema) -> StoreBuilder {
        self.schema = Some(schema);
        self
    }

    /// MVU's automatic schema of the game's card, which batches run under the `mvu` profile obey
    /// (locked containers, required keys, templates); `strict` and `mvu-zod` (whose JSON Schema
    /// decides instead) ignore it.
    pub fn structure(mut self, structure: StructureSchema) -> StoreBuilder {
        self.card.structure = Some(structure);
        self
    }

    /// The version of the game's card at the root: its automatic schema ([`StoreBuilder::structure`])
    /// and its fingerprint. Card updates ([`Store::take_card`]) replace it from their step down.
    pub fn card(mut self, card: CardVersion) -> StoreBuilder {
        self.card = card;
        self
    }

    /// The profile batches follow unless one names another (default `strict`), and the policies
    /// that profile calls for ([`Profile::policies`]); a later [`StoreBuilder::policies`] overrides
    /// them.
    pub fn profile(mut self, profile: Profile) -> StoreBuilder {
        self.profile = profile;
        self.policies = profile.policies();
        self
    }

    /// The handler for `callback` instructions and watchers.
    pub fn handler(mut self, handler: impl CallbackHandler + 'static) -> StoreBuilder {
        self.handler = Box::new(handler);
        self
    }

    /// Replaces the forbidden segments (default `__proto__`, `constructor`, `prototype`).
    pub fn forbidden_segments(
        mut self,
        segments: impl IntoIterator<Item = impl Into<String>>,
    ) -> StoreBuilder {
        self.forbidden = segments.into_iter().map(Into::into).collect();
        self
    }

    /// The game's seed for scripts' random draws (default 0): a batch draws from
    /// [`Random::for_step`] with this seed and the id its step will get, so the same seed replays the
    /// same rolls.
    pub fn seed(mut self, seed: u64) -> StoreBuilder {
        self.seed = seed;
        self
    }

    /// The keys of the chat replies the initial state already holds (see [`Store::root_keys`]), for a
    /// store rebuilt from a compacted save.
    pub fn root_keys(mut self, keys: Vec<ContentKey>) -> StoreBuilder {
        self.root_keys = keys;
        self
    }

    /// Builds the store. Fails with every violation if the initial state does not satisfy the schema.
    pub fn build(self) -> Result<Store, BatchErrors> {
        if let Some(schema) = &self.schema {
            let errors = schema.check_full(&self.state);
            if !errors.is_empty() {
                return Err(BatchErrors(errors));
            }
        }
        let mut history = History::new(self.state.clone(), self.history, self.checkpoint_every);
        history.set_root_keys(self.root_keys);
        history.set_root_card(Arc::new(self.card));
        Ok(Store {
            history,
            root: self.state,
            policies: self.policies,
            limits: self.limits,
            schema: self.schema,
            profile: self.profile,
            handler: self.handler,
            forbidden: self.forbidden,
            seed: self.seed,
        })
    }
}

/// The mutable host of one state.
pub struct Store {
    root: Value,
    policies: Policies,
    limits: Limits,
    history: History,
    schema: Option<StateSchema>,
    profile: Profile,
    handler: Box<dyn CallbackHandler>,
    forbidden: Vec<String>,
    seed: u64,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("root", &self.root)
            .field("policies", &self.policies)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// A store with default policies, limits and history, no schema and no handlers.
    pub fn new(state: Value) -> Store {
        Store::builder(state).build().expect("no schema to violate")
    }

    /// A builder starting from `state`.
    pub fn builder(state: Value) -> StoreBuilder {
        StoreBuilder {
            state,
            policies: Policies::default(),
            limits: Limits::default(),
            history: HistoryLimits::default(),
            checkpoint_every: DEFAULT_CHECKPOINT_EVERY,
            schema: None,
            card: CardVersion::default(),
            profile: Profile::Strict,
            handler: Box::new(NoHandlers),
            forbidden: DEFAULT_FORBIDDEN.iter().map(|s| (*s).to_owned()).collect(),
            seed: 0,
            root_keys: Vec::new(),
        }
    }

    /// The game's seed for scripts' random draws ([`StoreBuilder::seed`]).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The current state. Time: O(1).
    pub fn state(&self) -> &Value {
        &self.root
    }

    /// A snapshot of the current state. Time: O(1).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            root: self.root.clone(),
        }
    }

    /// The value at `path` now. Time: O(depth × log n).
    pub fn get(&self, path: &Path) -> Option<&Value> {
        self.root.lookup(path.segments())
    }

    /// The store's default policies.
    pub fn policies(&self) -> Policies {
        self.policies
    }

    /// The store's limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The schema, if any.
    pub fn schema(&self) -> Option<&StateSchema> {
        self.schema.as_ref()
    }

    /// MVU's automatic schema at the current step, if any ([`StoreBuilder::structure`], or the last
    /// card update above it).
    pub fn structure(&self) -> Option<&StructureSchema> {
        self.card().structure.as_ref()
    }

    /// The version of the game's card at the current step: the one it was made with, or the one the
    /// last card update above the step took. Time: O(log n).
    pub fn card(&self) -> &CardVersion {
        self.history.card_at(self.history.current())
    }

    /// The version of the game's card at a retained step (or the root). Time: O(log n).
    pub fn card_at(&self, at: impl Into<StepRef>) -> Result<&CardVersion, TimelineError> {
        let id = self.history.resolve(&at.into())?;
        Ok(self.history.card_at(id))
    }

    /// The profile batches follow unless one names another.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The history bounds.
    pub fn history_limits(&self) -> HistoryLimits {
        self.history.limits()
    }

    /// Changes the history bounds and trims at once if needed, returning the steps dropped. `max_steps
    /// == 0` turns history off: every step is dropped and the current state becomes the root.
    /// Time: O(log n) per dropped step.
    pub fn set_history_limits(&mut self, limits: HistoryLimits) -> Vec<TrimmedStep> {
        self.history.set_limits(limits, &self.root)
    }

    /// Applies a batch atomically with the store's policies.
    pub fn apply(&mut self, batch: &Batch) -> Outcome {
        self.apply_with(batch, &ApplyOptions::default())
    }

    /// Applies a batch with per-batch options.
    /// Time: the batch's own work, plus with `at` the cost of [`Store::state_at`] and a walk of the tree
    /// path from the current step to `at`; plus O(log n) per step trimmed.
    pub fn apply_with(&mut self, batch: &Batch, options: &ApplyOptions) -> Outcome {
        self.apply_resolved(batch, options, None)
    }

    /// Applies a batch whose commands `resolver` decides again, one by one, against the state each
    /// runs on, when the batch's profile applies commands one by one (`mvu`, `mvu-zod`); under
    /// `strict` the resolver is not used and this is [`Store::apply_with`]. A `before` hook that
    /// rewrites the batch turns re-resolution off: its instructions stand as they are, one command
    /// each.
    /// Time: that of [`Store::apply_with`], plus the resolver's work per command.
    pub fn apply_resolved(
        &mut self,
        batch: &Batch,
        options: &ApplyOptions,
        resolver: Option<&mut dyn Resolve>,
    ) -> Outcome {
        // The state at `at`, when the batch runs elsewhere than on the current step.
        let mut elsewhere = match self.start_at(options.at.as_ref()) {
            Ok(elsewhere) => elsewhere,
            Err(error) => return Outcome::rejected_by(vec![error]),
        };
        let at = elsewhere.as_ref().map(|(id, _)| *id);
        if let Some(label) = &options.label
            && label.len() > self.limits.max_label_bytes
        {
            return Outcome::rejected_by(vec![BatchError::whole_batch(
                ErrorKind::LabelTooLong,
                None,
                format!(
                    "the step's label is {} bytes long; the limit is {}",
                    label.len(),
                    self.limits.max_label_bytes
                ),
            )]);
        }
        let taking_card = options.card.is_some();
        let profile = if taking_card {
            Profile::Strict
        } else {
            options.profile.unwrap_or(self.profile)
        };
        let parent = at.unwrap_or(self.history.current());
        let card = Arc::clone(self.history.card_at(parent));
        let mut no_hooks = NoHandlers;
        let unused_random = match options.key {
            Some(key) => Random::for_reply(
                self.seed,
                key.bytes(),
                self.history
                    .key_of(at.unwrap_or(self.history.current()))
                    .as_ref()
                    .map(ContentKey::bytes),
            ),
            None => Random::for_step(self.seed, self.history.next_id().get()),
        };
        let setting = Setting {
            rules: Rules {
                limits: &self.limits,
                forbidden: &self.forbidden,
            },
            handler: if taking_card {
                &mut no_hooks
            } else {
                &mut *self.handler
            },
            schema: self.schema.as_ref(),
            structure: if profile.uses_automatic_schema() {
                card.structure.as_ref()
            } else {
                None
            },
            policies: options
                .policies
                .unwrap_or_else(|| options.profile.map_or(self.policies, Profile::policies)),
            mode: if profile.one_by_one() {
                Mode::OneByOne
            } else {
                Mode::Whole
            },
        };
        // Every step knows its state's estimated size, so the budget starts from it without a walk.
        let size = self.history.size_at(parent);
        // The batch writes its state in place (the root, or the state rebuilt at `at`), and keeps
        // the state as it began only when something will read it: the `after` hooks, or the history
        // when the new step makes its parent a checkpoint. Only then do the batch's writes copy the
        // nodes they touch.
        let state = match &mut elsewhere {
            Some((_, state)) => state,
            None => &mut self.root,
        };
        let keeps = self.history.limits().max_steps > 0 && self.history.takes_checkpoint(parent);
        let before = (keeps || setting.handler.has_after_hooks()).then(|| state.clone());
        let ran = run::batch(
            setting,
            Start {
                instructions: &batch.instructions,
                options,
                root: state,
                before: before.as_ref(),
                size,
                random: unused_random,
                resolver,
            },
        );
        match ran {
            Ok(ran) => {
                if let Some((_, state)) = elsewhere {
                    self.root = state;
                }
                let before = if keeps { before.as_ref() } else { None };
                Outcome::Committed(self.commit(at, before, ran, options, unused_random))
            }
            Err(errors) => Outcome::rejected_by(errors),
        }
    }

    /// Records what a batch made, now the current state, as a step of the history on `at` (or on the
    /// current step) unless it left no trace. `before` is the state it started from, which the
    /// history needs when the step makes its parent a checkpoint. `unused_random` is the generator
    /// the batch started with.
    fn commit(
        &mut self,
        at: Option<StepId>,
        before: Option<&Value>,
        ran: Finished,
        options: &ApplyOptions,
        unused_random: Random,
    ) -> Commit {
        // The batch ran on the state at `at`, which the new root now continues from.
        if let Some(at) = at {
            self.history.move_to(at);
        }
        let changes: Arc<[Change]> = Arc::from(ran.changes);
        let mut commit = Commit {
            step: None,
            parent: self.history.current(),
            changes,
            results: ran.results,
            events: ran.events,
            warnings: ran.warnings,
            label_moved_from: None,
            trimmed: Vec::new(),
        };
        // Every commit is a step (docs/timeline.md), but one that changed nothing and has no label would be an
        // invisible step that undo crosses without a trace; a labelled one is how a front end marks a
        // message that changed nothing, so that `undo_to` finds it and a swipe can commit on it. A batch
        // whose scripts drew random numbers is a step too, even if nothing changed (a missed roll):
        // otherwise the next batch would get the same id, so the same draws, and miss again.
        let drew = ran.random != unused_random;
        let recorded = !commit.changes.is_empty()
            || options.label.is_some()
            || options.key.is_some()
            || options.card.is_some()
            || drew;
        if self.history.limits().max_steps == 0 {
            self.history.rebase(&self.root, ran.size);
            if recorded {
                self.history.skip_id();
            }
        } else if recorded {
            let id = self.history.next_id();
            commit.label_moved_from = self.history.push(
                id,
                StepMarks {
                    label: options.label.clone(),
                    key: options.key,
                    refusal: None,
                    card: options.card.clone(),
                },
                Arc::clone(&commit.changes),
                before,
                ran.size,
            );
            commit.step = Some(id);
            commit.trimmed = self.history.trim();
        }
        commit
    }

    /// The step `at` names and its state, when it is not the current step (the batch then runs on
    /// that state, and the commit moves there); `None` for the current step, whose state is the root.
    fn start_at(&self, at: Option<&StepRef>) -> Result<Option<(StepId, Value)>, BatchError> {
        let Some(at) = at else {
            return Ok(None);
        };
        let id = self.history.resolve(at).map_err(|error| {
            BatchError::whole_batch(
                ErrorKind::UnknownStep,
                None,
                format!("cannot commit on {at}: {error}"),
            )
        })?;
        if id == self.history.current() {
            return Ok(None);
        }
        let state = self.history.state_at(&self.root, id).map_err(|error| {
            BatchError::whole_batch(
                ErrorKind::HistoryDamaged,
                None,
                format!("cannot rebuild the state at {at}: {error}"),
            )
        })?;
        Ok(Some((id, state)))
    }

    /// The current step; [`StepId::ROOT`] before the first commit or after undoing every step.
    /// Time: O(1).
    pub fn current_step(&self) -> StepId {
        self.history.current()
    }

    /// Moves to the parent of the current step, reverting its changes. Returns the step undone, or
    /// `None` at the root. A step that does not fit the state (only possible with a history rebuilt
    /// from damaged data) leaves the state and the history as they were and returns the error.
    /// Time: O(size of the step × depth × log n), independent of the state's size.
    pub fn undo(&mut self) -> Result<Option<StepId>, ReplayError> {
        let from = self.history.current();
        let Some(parent) = self.history.step(from).map(|step| step.parent) else {
            return Ok(None);
        };
        self.history.checkout(&mut self.root, parent)?;
        Ok(Some(from))
    }

    /// Moves to the child of the current step that was on the current line most recently (after an
    /// undo, the step undone), replaying its changes. Returns it, or `None` if the current step has no
    /// children. Time: O(size of the step × depth × log n + children).
    pub fn redo(&mut self) -> Result<Option<StepId>, ReplayError> {
        let Some(child) = self.history.redo_target() else {
            return Ok(None);
        };
        self.history.checkout(&mut self.root, child)?;
        Ok(Some(child))
    }

    /// Moves back to the step labelled `label` on the current line (the current step or one of its
    /// ancestors), which stays applied: the "regenerate" case, undoing the turns after that message.
    /// Returns how many steps were undone, or `None` if no step on the current line has that label
    /// (use [`Store::checkout`] to go to a step on another branch).
    /// Time: O(steps undone), like that many undos.
    pub fn undo_to(&mut self, label: &str) -> Result<Option<usize>, ReplayError> {
        match self.history.find_label(label) {
            Some(id) if self.history.on_current_line(id) => {
                self.history.checkout(&mut self.root, id).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Makes any retained step (or the root) current; the state becomes exactly the state committed
    /// there. Returns the length of the tree path crossed. An unknown step changes nothing.
    /// Time: O(path length) to walk the tree path from the current step, plus replaying the changes on
    /// it or, when that spares at least two steps or the path is longer than the checkpoint spacing,
    /// those between the target and the nearest checkpoint above it (at most the checkpoint spacing);
    /// independent of the state's size.
    pub fn checkout(&mut self, to: impl Into<StepRef>) -> Result<usize, TimelineError> {
        let id = self.history.resolve(&to.into())?;
        Ok(self.history.checkout(&mut self.root, id)?)
    }

    /// The state at a retained step (or the root) without moving: a snapshot, as cheap to keep as any.
    /// Time: replays the changes between the step and the current step or the nearest checkpoint above
    /// it, whichever is closer: at most the checkpoint spacing in steps, independent of the state's
    /// size; O(1) at the current step or a checkpoint.
    pub fn state_at(&self, at: impl Into<StepRef>) -> Result<Snapshot, TimelineError> {
        let id = self.history.resolve(&at.into())?;
        if id == self.history.current() {
            return Ok(self.snapshot());
        }
        let root = self.history.state_at(&self.root, id)?;
        Ok(Snapshot { root })
    }

    /// The id of the step a reference names, if it is retained. Time: O(log n).
    pub fn find(&self, step: impl Into<StepRef>) -> Result<StepId, TimelineError> {
        self.history.resolve(&step.into())
    }

    /// One retained step (not the root, which is not a step). Time: O(log n).
    pub fn step(&self, id: StepId) -> Option<StepInfo<'_>> {
        let step = self.history.step(id)?;
        let current = self.history.current() == id;
        Some(info(
            id,
            step,
            current || self.history.on_current_line(id),
            current,
        ))
    }

    /// The steps committed on a step (or on the root), oldest first. Time: O(log n).
    pub fn children(&self, of: impl Into<StepRef>) -> Result<&[StepId], TimelineError> {
        let id = self.history.resolve(&of.into())?;
        Ok(self.history.children(id))
    }

    /// The steps from the root down to a step, the root excluded and the step included: the line whose
    /// changes make its state. Time: O(depth).
    pub fn path_to(&self, to: impl Into<StepRef>) -> Result<Vec<StepId>, TimelineError> {
        let id = self.history.resolve(&to.into())?;
        Ok(self.history.path_from_root(id))
    }

    /// Every retained step, the whole tree, in id order (a step always comes after its parent), each
    /// with its parent, children, and whether it is current or on the current line. Time: O(n + depth).
    pub fn history(&self) -> impl Iterator<Item = StepInfo<'_>> + '_ {
        let current = self.history.current();
        self.history
            .iter()
            .map(move |(id, step, applied)| info(id, step, applied, id == current))
    }

    /// How many steps history retains, on every branch. Time: O(1).
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// The estimate of the bytes history keeps alive, as the byte bound counts them: change logs, a fixed
    /// cost per step, and the nodes checkpoints keep alive. Time: O(1).
    pub fn history_bytes(&self) -> usize {
        self.history.bytes()
    }

    /// The id the next step will get. Ids only grow, so one a host kept never names another step. With
    /// history off, every commit that would have made a step still uses up an id (the step is dropped
    /// at once), so that each batch's `ctx.random` draws differ.
    pub fn next_step_id(&self) -> StepId {
        self.history.next_id()
    }

    /// The retained steps off the current line, least recently visited first: the order in which
    /// trimming would drop their branches. Saves keep it to rebuild the same tree. Time: O(n log n).
    pub fn recency(&self) -> Vec<StepId> {
        self.history.recency()
    }

    // Rebuilding a history from a save: these replay what a game recorded, exactly as it happened.

    /// Rebuilds a saved step: moves to `parent` as a checkout would, checks that `changes` replay on
    /// its state and records them as step `id` there, which becomes current. Like a commit, a label in
    /// use moves to it; unlike a commit, nothing is trimmed, because a save records its trims
    /// ([`Store::forget`]). `id` must be at least [`Store::next_step_id`]. If the changes do not fit,
    /// the store is left at `parent` with the state there, and nothing is recorded.
    /// Time: that of the checkout plus the changes.
    pub fn replay_step(
        &mut self,
        id: StepId,
        parent: StepId,
        marks: StepMarks,
        changes: Arc<[Change]>,
    ) -> Result<(), TimelineError> {
        let next = self.history.next_id();
        if id < next {
            return Err(TimelineError::StepIdTaken { id, next });
        }
        if !self.history.contains(parent) {
            return Err(TimelineError::UnknownStep(parent));
        }
        self.history.checkout(&mut self.root, parent)?;
        // The changes replay in place; the state before them is kept only for a checkpoint.
        let parent_state = self
            .history
            .takes_checkpoint(parent)
            .then(|| self.root.clone());
        replay_forward(&mut self.root, &changes)?;
        let size = budget::size_after(self.history.size_at(parent), &changes);
        let _ = self
            .history
            .push(id, marks, changes, parent_state.as_ref(), size);
        Ok(())
    }

    /// The child of a step (or of the root) that a sync made from the reply with this key.
    /// Time: O(1).
    pub fn child_by_key(&self, parent: StepId, key: ContentKey) -> Option<StepId> {
        self.history.child_by_key(parent, key)
    }

    /// The latest card update committed on a step (or on the root), which a sync walks through.
    /// Time: O(1).
    pub(crate) fn history_card_update_on(&self, parent: StepId) -> Option<StepId> {
        self.history.card_update_on(parent)
    }

    /// The keys of the replies whose steps trimming folded into the root, oldest first: a synced chat
    /// path must start with them. Saves keep them with a compacted root ([`StoreBuilder::root_keys`]).
    pub fn root_keys(&self) -> &[ContentKey] {
        self.history.root_keys()
    }

    /// Records a refused reply as sync does: an empty step on `at` with the reply's key and the
    /// refusal's feedback, made current. Time: that of a checkout to `at`, plus trimming.
    pub fn commit_refusal(
        &mut self,
        at: StepId,
        key: ContentKey,
        refusal: Arc<str>,
    ) -> Result<Commit, TimelineError> {
        if self.history.limits().max_steps == 0 {
            return Err(TimelineError::UnknownStep(at));
        }
        if !self.history.contains(at) {
            return Err(TimelineError::UnknownStep(at));
        }
        self.history.checkout(&mut self.root, at)?;
        let state = self.root.clone();
        let size = self.history.size_at(at);
        let id = self.history.next_id();
        let changes: Arc<[Change]> = Arc::from(Vec::new());
        let label_moved_from = self.history.push(
            id,
            StepMarks {
                label: None,
                key: Some(key),
                refusal: Some(refusal),
                card: None,
            },
            Arc::clone(&changes),
            Some(&state),
            size,
        );
        Ok(Commit {
            step: Some(id),
            parent: at,
            changes,
            results: Vec::new(),
            events: Vec::new(),
            warnings: Vec::new(),
            label_moved_from,
            trimmed: self.history.trim(),
        })
    }

    /// Takes a new version of the game's card as one step on the current step (docs/mvu.md, "Card
    /// updates"): `update`'s batch ([`crate::plan_card_update`], made on the current state) runs all
    /// or nothing under the store's JSON Schema and limits, without the automatic schema and the
    /// handlers' hooks, and the step, labelled `label`, holds `card` from there down. Undo takes the
    /// state and the card back together. With history off the card is taken all the same, at the
    /// root. Time: the batch's own work.
    pub fn take_card(
        &mut self,
        update: &CardUpdate,
        card: CardVersion,
        label: Option<String>,
    ) -> Outcome {
        let card = Arc::new(card);
        let outcome = self.apply_with(
            &update.batch,
            &ApplyOptions {
                label,
                policies: Some(Policies::default()),
                card: Some(Arc::clone(&card)),
                ..ApplyOptions::default()
            },
        );
        if outcome.is_committed() && self.history.limits().max_steps == 0 {
            self.history.set_root_card(card);
        }
        outcome
    }

    /// Drops one step as trimming did when a save recorded it: a branch tip other than the current
    /// step, or the root's only child (whose state becomes the root's). Time: O(log n).
    pub fn forget(&mut self, id: StepId) -> Result<TrimmedStep, TimelineError> {
        self.history.forget(id)
    }

    /// Restores the visit order saved by [`Store::recency`] (least recent first) and the next free id
    /// saved by [`Store::next_step_id`], so that redo and trimming go on as before the save.
    /// Time: O(n log n).
    pub fn restore_recency(
        &mut self,
        recency: &[StepId],
        next_id: StepId,
    ) -> Result<(), TimelineError> {
        self.history.restore_recency(recency, next_id)
    }
}

fn info(id: StepId, step: &Step, applied: bool, current: bool) -> StepInfo<'_> {
    StepInfo {
        id,
        parent: step.parent,
        label: step.label.as_deref(),
        key: step.key,
        refusal: step.refusal.as_deref(),
        changes: &step.changes,
        card_update: step.card_update.then_some(&*step.card),
        applied,
        current,
        children: &step.children,
    }
}
