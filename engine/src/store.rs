//! The store: the mutable host that owns the current state, its history and its rules.
//!
//! `apply` validates a batch, runs it on an O(1) clone of the root, dispatches callbacks and watchers,
//! checks the schema on the would-be state and commits by swapping the root. Any failure drops the
//! clone, so a rejected batch leaves the root exactly as it was (`Value::ptr_eq`). Undo and redo replay
//! a step's change log on the root in place. Readers keep [`Snapshot`]s, which are O(1) clones and never
//! see later changes. This module must not do IO or parse text.

use std::sync::Arc;

use serde::Serialize;

use crate::callback::{
    CallbackCall, CallbackHandler, HandlerError, HostEvent, NoHandlers, Response, WatchCall,
};
use crate::change::{Change, ReplayError, replay_backward, replay_forward};
use crate::error::{BatchError, ErrorKind, Trail};
use crate::exec::{self, Failure};
use crate::history::{History, HistoryLimits, Step, StepId};
use crate::instruction::{Batch, Instruction, Op};
use crate::limits::{Limits, Policies, UnknownCallback};
use crate::path::Path;
use crate::schema::StateSchema;
use crate::validate::{DEFAULT_FORBIDDEN, Rules};
use crate::value::Value;

/// Per-batch options.
#[derive(Clone, Debug, Default)]
pub struct ApplyOptions {
    /// A label for the history step (a chat message id), for `undo_to`.
    pub label: Option<String>,
    /// Policies for this batch instead of the store's.
    pub policies: Option<Policies>,
    /// Apply the instructions that succeed and report the others, instead of all-or-nothing. A failing
    /// instruction's own partial effects (and those of what its callbacks emitted) are rolled back.
    pub best_effort: bool,
}

/// What a committed batch did.
#[derive(Clone, Debug, Serialize)]
pub struct Commit {
    /// The history step, or `None` when history is off (`max_steps == 0`) or the batch changed nothing.
    #[serde(skip)]
    pub step: Option<StepId>,
    /// Every primitive change, in order. Shared with the history step.
    pub changes: Arc<[Change]>,
    /// One entry per instruction of the batch: what the op returns (SPEC §2), `None` for absent.
    pub results: Vec<Option<Value>>,
    /// Host events queued by handlers, delivered now that the batch committed.
    pub events: Vec<HostEvent>,
    /// Soft problems the policies allowed (old mismatches under `warn`, skipped targets), and in
    /// best-effort mode the instructions that failed.
    pub warnings: Vec<BatchError>,
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
        exec::lookup(&self.root, path.segments()).ok().flatten()
    }
}

/// A step as listed by [`Store::history`].
#[derive(Debug)]
pub struct StepInfo<'a> {
    /// Its id.
    pub id: StepId,
    /// Its label.
    pub label: Option<&'a str>,
    /// Its changes.
    pub changes: &'a [Change],
    /// Whether it is applied (undoable) rather than undone (redoable).
    pub applied: bool,
}

/// Builds a [`Store`].
pub struct StoreBuilder {
    state: Value,
    policies: Policies,
    limits: Limits,
    history: HistoryLimits,
    schema: Option<StateSchema>,
    handler: Box<dyn CallbackHandler>,
    forbidden: Vec<String>,
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

    /// Bounds on history.
    pub fn history_limits(mut self, history: HistoryLimits) -> StoreBuilder {
        self.history = history;
        self
    }

    /// A JSON Schema every committed state must satisfy.
    pub fn schema(mut self, schema: StateSchema) -> StoreBuilder {
        self.schema = Some(schema);
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

    /// Builds the store. Fails with every violation if the initial state does not satisfy the schema.
    pub fn build(self) -> Result<Store, Vec<BatchError>> {
        if let Some(schema) = &self.schema {
            let errors = schema.check_full(&self.state);
            if !errors.is_empty() {
                return Err(errors);
            }
        }
        Ok(Store {
            root: self.state,
            policies: self.policies,
            limits: self.limits,
            history: History::new(self.history),
            schema: self.schema,
            handler: self.handler,
            forbidden: self.forbidden,
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
    handler: Box<dyn CallbackHandler>,
    forbidden: Vec<String>,
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
            schema: None,
            handler: Box::new(NoHandlers),
            forbidden: DEFAULT_FORBIDDEN.iter().map(|s| (*s).to_owned()).collect(),
        }
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
        exec::lookup(&self.root, path.segments()).ok().flatten()
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

    /// The history bounds.
    pub fn history_limits(&self) -> HistoryLimits {
        self.history.limits()
    }

    /// Changes the history bounds; trims at once if needed.
    pub fn set_history_limits(&mut self, limits: HistoryLimits) {
        self.history.set_limits(limits);
    }

    /// Applies a batch atomically with the store's policies.
    pub fn apply(&mut self, batch: &Batch) -> Outcome {
        self.apply_with(batch, &ApplyOptions::default())
    }

    /// Applies a batch with per-batch options.
    pub fn apply_with(&mut self, batch: &Batch, options: &ApplyOptions) -> Outcome {
        let rules = Rules {
            limits: &self.limits,
            forbidden: &self.forbidden,
        };
        let errors = rules.batch(&batch.instructions);
        // Best effort skips invalid instructions, but a problem with the batch as a whole still rejects.
        let tolerable = options.best_effort && errors.iter().all(|e| e.instruction.is_some());
        if !errors.is_empty() && !tolerable {
            return Outcome::Rejected(Rejection { errors });
        }
        let policies = options.policies.unwrap_or(self.policies);
        let mut run = Run {
            root: self.root.clone(),
            policies,
            rules,
            handler: &mut *self.handler,
            changes: Vec::new(),
            events: Vec::new(),
            warnings: Vec::new(),
            emitted: 0,
        };
        // In best-effort mode, instructions that failed validation are skipped (a flag per instruction,
        // so a long batch with many invalid instructions stays linear).
        let mut invalid = vec![false; batch.len()];
        for index in errors
            .iter()
            .filter_map(|e| e.instruction.as_ref()?.0.first())
        {
            invalid[*index] = true;
        }
        run.warnings.extend(errors);
        let mut results = Vec::with_capacity(batch.len());
        for (index, instruction) in batch.instructions.iter().enumerate() {
            if invalid[index] {
                results.push(None);
                continue;
            }
            // Only best effort needs a way back from a failing instruction; the clone is O(1) anyway.
            let checkpoint = options
                .best_effort
                .then(|| (run.root.clone(), run.changes.len(), run.events.len()));
            match run.one(instruction, &Trail(vec![index]), 0) {
                Ok(result) => results.push(result),
                Err(errors) if options.best_effort => {
                    let (root, changes, events) = checkpoint.expect("taken in best-effort mode");
                    run.root = root;
                    run.changes.truncate(changes);
                    run.events.truncate(events);
                    run.warnings.extend(errors);
                    results.push(None);
                }
                Err(errors) => return Outcome::Rejected(Rejection { errors }),
            }
        }
        if let Err(errors) = run.watch() {
            return Outcome::Rejected(Rejection { errors });
        }
        if let Some(schema) = &self.schema {
            let errors = schema.check_changes(&run.root, &run.changes);
            if !errors.is_empty() {
                return Outcome::Rejected(Rejection { errors });
            }
        }
        let Run {
            root,
            changes,
            events,
            warnings,
            ..
        } = run;
        self.root = root;
        let changes: Arc<[Change]> = Arc::from(changes);
        let step = (!changes.is_empty() && self.history.limits().max_steps > 0).then(|| {
            self.history
                .push(options.label.clone(), Arc::clone(&changes))
        });
        Outcome::Committed(Commit {
            step,
            changes,
            results,
            events,
            warnings,
        })
    }

    /// Reverts the newest applied step. Returns its id, or `None` if there is nothing to undo. A step
    /// that does not fit the state (only possible with a history rebuilt from damaged data) leaves the
    /// state and the history as they were and returns the error.
    /// Time: O(size of the step × depth × log n), independent of the state's size.
    pub fn undo(&mut self) -> Result<Option<StepId>, ReplayError> {
        let Some(id) = self.history.undoable() else {
            return Ok(None);
        };
        let changes = Arc::clone(&self.history.step(id).expect("listed step exists").changes);
        replay_backward(&mut self.root, &changes)?;
        self.history.moved_back();
        Ok(Some(id))
    }

    /// Re-applies the oldest undone step. Returns its id, or `None` if there is nothing to redo.
    /// Time: O(size of the step × depth × log n).
    pub fn redo(&mut self) -> Result<Option<StepId>, ReplayError> {
        let Some(id) = self.history.redoable() else {
            return Ok(None);
        };
        let changes = Arc::clone(&self.history.step(id).expect("listed step exists").changes);
        replay_forward(&mut self.root, &changes)?;
        self.history.moved_forward();
        Ok(Some(id))
    }

    /// Rolls back every step after the newest applied step labelled `label`, which stays applied (the
    /// "swipe" case: undo to the message before the regenerated one). Returns how many steps were
    /// undone, or `None` if no applied step has that label.
    pub fn undo_to(&mut self, label: &str) -> Result<Option<usize>, ReplayError> {
        let Some(id) = self.history.find_label(label) else {
            return Ok(None);
        };
        let target = self.history.position(id).expect("found step is listed") + 1;
        self.jump_to_position(target).map(Some)
    }

    /// Moves to just after step `id` (undoing or redoing every step in between). Locating the step is
    /// O(1); the cost is that of the steps crossed, independent of the state's size. Returns how many
    /// steps were crossed, or `None` if the id is no longer retained.
    pub fn jump_to(&mut self, id: StepId) -> Result<Option<usize>, ReplayError> {
        let Some(position) = self.history.position(id) else {
            return Ok(None);
        };
        self.jump_to_position(position + 1).map(Some)
    }

    fn jump_to_position(&mut self, target: usize) -> Result<usize, ReplayError> {
        let mut crossed = 0;
        while self.history.applied() > target {
            self.undo()?;
            crossed += 1;
        }
        while self.history.applied() < target {
            self.redo()?;
            crossed += 1;
        }
        Ok(crossed)
    }

    /// The retained steps, oldest first.
    pub fn history(&self) -> impl Iterator<Item = StepInfo<'_>> + '_ {
        self.history
            .iter()
            .map(|(id, step, applied): (StepId, &Step, bool)| StepInfo {
                id,
                label: step.label.as_deref(),
                changes: &step.changes,
                applied,
            })
    }

    /// How many steps history retains (undoable plus redoable). Time: O(1).
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// The estimate of the bytes history keeps alive.
    pub fn history_bytes(&self) -> usize {
        self.history.bytes()
    }

    /// Rebuilds a step from a saved change log, as if `changes` had just been committed on the current
    /// state: they are replayed on the root and recorded. Used by saves to restore history.
    pub fn replay_step(
        &mut self,
        label: Option<String>,
        changes: Vec<Change>,
    ) -> Result<StepId, ReplayError> {
        let mut root = self.root.clone();
        replay_forward(&mut root, &changes)?;
        self.root = root;
        Ok(self.history.push(label, Arc::from(changes)))
    }
}

/// The working state of one `apply`.
struct Run<'s> {
    root: Value,
    policies: Policies,
    rules: Rules<'s>,
    handler: &'s mut dyn CallbackHandler,
    changes: Vec<Change>,
    events: Vec<HostEvent>,
    warnings: Vec<BatchError>,
    emitted: usize,
}

impl Run<'_> {
    /// Runs an instruction at cascade `depth`; callbacks run their emitted instructions right after.
    fn one(
        &mut self,
        instruction: &Instruction,
        trail: &Trail,
        depth: usize,
    ) -> Result<Option<Value>, Vec<BatchError>> {
        if instruction.op != Op::Callback {
            return match exec::run(
                &mut self.root,
                instruction,
                &self.policies,
                &mut self.changes,
            ) {
                Ok(ran) => {
                    self.warnings
                        .extend(ran.warnings.into_iter().map(|w| to_error(w, trail)));
                    Ok(ran.result)
                }
                Err(failure) => Err(vec![to_error(failure, trail)]),
            };
        }
        let name = match instruction.path.segments().first() {
            Some(crate::path::Segment::Key(name)) => name.clone(),
            _ => {
                return Err(vec![BatchError::in_field(
                    ErrorKind::InvalidPath,
                    trail,
                    "/path/0",
                    "a callback needs a name",
                )]);
            }
        };
        let args: Vec<Value> = match &instruction.value {
            None => Vec::new(),
            Some(Value::Array(items)) => items.iter().cloned().collect(),
            Some(one) => vec![one.clone()],
        };
        let call = CallbackCall {
            name: &name,
            args: &args,
            state: &self.root,
            depth,
            limits: self.rules.limits,
        };
        let response = match self.handler.call(call) {
            Ok(response) => response,
            Err(HandlerError::Unknown)
                if self.policies.unknown_callback == UnknownCallback::Skip =>
            {
                self.warnings.push(BatchError::in_field(
                    ErrorKind::UnknownCallback,
                    trail,
                    "/path/0",
                    format!("no handler named \"{name}\"; skipped"),
                ));
                return Ok(None);
            }
            Err(HandlerError::Unknown) => {
                return Err(vec![BatchError::in_field(
                    ErrorKind::UnknownCallback,
                    trail,
                    "/path/0",
                    format!("no handler named \"{name}\""),
                )]);
            }
            Err(HandlerError::Failed(message)) => {
                return Err(vec![BatchError::in_field(
                    ErrorKind::CallbackFailed,
                    trail,
                    "",
                    format!("callback \"{name}\" failed: {message}"),
                )]);
            }
        };
        let mut errors = Vec::new();
        if let Some(value) = &response.value {
            self.rules
                .handler_output(value, "/result", trail, &mut errors);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let value = response.value.clone();
        self.follow(response, trail, depth)?;
        Ok(value)
    }

    /// Queues a handler's events and runs its emitted instructions, validated, at `depth + 1`.
    fn follow(
        &mut self,
        response: Response,
        trail: &Trail,
        depth: usize,
    ) -> Result<(), Vec<BatchError>> {
        let mut errors = Vec::new();
        for (i, event) in response.events.iter().enumerate() {
            let field = format!("/events/{i}/payload");
            self.rules
                .handler_output(&event.payload, &field, trail, &mut errors);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        self.events.extend(response.events);
        if response.instructions.is_empty() {
            return Ok(());
        }
        if depth + 1 > self.rules.limits.max_cascade_depth {
            return Err(vec![BatchError::in_field(
                ErrorKind::CascadeTooDeep,
                trail,
                "",
                format!(
                    "callbacks emitted instructions {} levels deep; the limit is {}",
                    depth + 1,
                    self.rules.limits.max_cascade_depth
                ),
            )]);
        }
        self.emitted += response.instructions.len();
        if self.emitted > self.rules.limits.max_emitted {
            return Err(vec![BatchError::in_field(
                ErrorKind::TooManyEmitted,
                trail,
                "",
                format!(
                    "callbacks emitted {} instructions in this batch; the limit is {}",
                    self.emitted, self.rules.limits.max_emitted
                ),
            )]);
        }
        let mut errors = Vec::new();
        for (i, emitted) in response.instructions.iter().enumerate() {
            self.rules
                .instruction(emitted, &child(trail, i), &mut errors);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        for (i, emitted) in response.instructions.iter().enumerate() {
            self.one(emitted, &child(trail, i), depth + 1)?;
        }
        Ok(())
    }

    /// Offers the batch's changes to watchers, and then the changes their instructions made, up to the
    /// cascade limit.
    fn watch(&mut self) -> Result<(), Vec<BatchError>> {
        let mut seen = 0;
        for depth in 0.. {
            if seen == self.changes.len() {
                return Ok(());
            }
            let fresh: Vec<Change> = self.changes[seen..].to_vec();
            seen = self.changes.len();
            let call = WatchCall {
                changes: &fresh,
                state: &self.root,
                depth,
                limits: self.rules.limits,
            };
            let response = self.handler.watch(call).map_err(|error| {
                vec![BatchError::whole_batch(
                    ErrorKind::CallbackFailed,
                    None,
                    format!("a watcher failed: {error}"),
                )]
            })?;
            // Watcher output has no instruction of the batch to point at: its errors say so instead.
            self.follow(response, &Trail(Vec::new()), depth)
                .map_err(|errors| {
                    errors
                        .into_iter()
                        .map(|mut error| {
                            error.message = format!(
                                "emitted by a watcher ({}): {}",
                                error.instruction.take().unwrap_or_default(),
                                error.message
                            );
                            error
                        })
                        .collect::<Vec<_>>()
                })?;
        }
        Ok(())
    }
}

fn child(trail: &Trail, index: usize) -> Trail {
    let mut out = trail.clone();
    out.0.push(index);
    out
}

fn to_error(failure: Failure, trail: &Trail) -> BatchError {
    BatchError::at_path(failure.kind, trail, failure.path, failure.message)
}
