//! One game in memory: its store (with its Lua VM) rebuilt from the database, and what each request
//! does to it.
//!
//! A game is rebuilt from its stored base and records with `TimelineRecord::replay`, the function the
//! save files use, and kept in step with the database by replaying the records other processes
//! added. Each operation runs on the store and returns its answer with the records it made, which the
//! caller must make durable before it sends the answer. A rejected batch makes no record; a batch runs
//! under its request's deadline, and one stopped there answers 503 `timeout`. A dry run
//! runs on a throwaway store built from the state and a fresh VM from the game's scripts, so it
//! changes neither the game nor its scripts' globals. This module must not talk to the database or to
//! HTTP: `active_games.rs` does.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value as Json};
use statecraft_engine::{
    ApplyOptions, Batch, BatchError, CallbackSignature, CardUpdateOptions, ChatReply, Commit,
    Condition, ErrorKind, Limits, Outcome, Policies, StateSchema, StepId, StepRef, Store,
    StructureSchema, SyncError, SyncOptions, SyncReply, TimelineError, Value, plan_card_update,
};
use statecraft_saves::{BaseRecord, CheckoutRecord, Head, StepRecord, StoredGame, TimelineRecord};
use statecraft_scripts::LuaHandlers;
use statecraft_translators::mvu::MvuOptions;
use statecraft_translators::{Diagnostic, ExtractOptions, ExtractReader, Severity, card, extract};

use crate::answer::Answer;
use crate::error::{ApiError, Kind};
use crate::prompting;
use crate::requests::{
    ApplyRequest, CardUpdateRequest, CheckoutRequest, EvaluateRequest, GamePromptRequest, StepName,
    check_macros,
};
use crate::wire::{
    Applied, AppliedOutcome, CardUpdated, Changes, ConditionResult, Evaluated, Event, GameCard,
    GameSchemas, Log, LogStep, MvuView, Position, Problem, Report, StepState, SyncApplied, Synced,
    Trimmed, WireDiagnostic, WirePath,
};

/// What a request does to a game.
#[derive(Clone, Debug)]
pub(crate) enum Operation {
    /// `GET /v1/games/{id}`.
    Show,
    /// `GET /v1/games/{id}?view=mvu`: MVU's views of the current step.
    MvuView,
    /// `GET /v1/games/{id}/state?at=`: the state at a step and that step's own change log.
    StateAt(StepRef),
    /// `GET /v1/games/{id}/log`.
    Log,
    /// `POST /v1/games/{id}/apply`.
    Apply(Box<ApplyRequest>),
    /// `POST /v1/games/{id}/checkout`.
    Checkout(CheckoutRequest),
    /// `POST /v1/games/{id}/sync`.
    Sync(Box<SyncJob>),
    /// `POST /v1/games/{id}/undo`.
    Undo,
    /// `POST /v1/games/{id}/redo`.
    Redo,
    /// `GET /v1/games/{id}/card`.
    Card,
    /// `POST /v1/games/{id}/card`.
    UpdateCard(Box<CardUpdateRequest>),
    /// `POST /v1/games/{id}/prompt`.
    Prompt(Box<GamePromptRequest>),
    /// `GET /v1/games/{id}/schema`.
    Schema,
    /// `POST /v1/games/{id}/evaluate`.
    Evaluate(Box<EvaluateRequest>),
    /// `DELETE /v1/games/{id}`.
    Delete,
}

impl Operation {
    /// Whether it may change the game (and so takes an `Idempotency-Key`).
    pub(crate) fn changes(&self) -> bool {
        match self {
            Operation::Apply(request) => !request.dry_run,
            Operation::UpdateCard(request) => !request.dry_run,
            Operation::Checkout(_)
            | Operation::Sync(_)
            | Operation::Undo
            | Operation::Redo
            | Operation::Delete => true,
            Operation::Show
            | Operation::MvuView
            | Operation::StateAt(_)
            | Operation::Log
            | Operation::Card
            | Operation::Prompt(_)
            | Operation::Schema
            | Operation::Evaluate(_) => false,
        }
    }
}

/// A sync as the game runs it: the replies read, and the request's options.
#[derive(Clone, Debug)]
pub(crate) struct SyncJob {
    pub(crate) replies: Vec<ChatReply>,
    pub(crate) move_to_end: bool,
    pub(crate) macros: BTreeMap<String, String>,
}

/// What an operation did: the answer, and the records that must be durable before it is sent.
#[derive(Debug)]
pub(crate) struct Done {
    pub(crate) answer: Answer,
    pub(crate) records: Vec<TimelineRecord>,
}

impl Done {
    fn read(body: &impl serde::Serialize) -> Done {
        Done {
            answer: Answer::ok(body),
            records: Vec::new(),
        }
    }
}

/// A game loaded from the database into memory, in step with its rows up to `head`. Unlike a save
/// file's `statecraft_saves::Game`, it writes nothing itself: each operation returns its records,
/// which the caller makes durable.
pub(crate) struct LoadedGame {
    pub(crate) store: Store,
    /// What the store was built from, for compaction and dry runs.
    base: BaseRecord,
    schema: Option<StateSchema>,
    scripts: Arc<BTreeMap<String, String>>,
    limits: Limits,
    /// Where the database stood at the last record this game holds.
    pub(crate) head: Head,
    /// Records since the base, to decide when to compact.
    pub(crate) records: usize,
    /// Bytes the state, the VM, the scripts' text and the schema held when the game was loaded.
    loaded_bytes: usize,
    /// What the scripts' handlers say about themselves, once a prompt or schema asked.
    signatures: Option<Vec<CallbackSignature>>,
}

impl std::fmt::Debug for LoadedGame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedGame")
            .field("head", &self.head)
            .finish_non_exhaustive()
    }
}

/// A store for `state` with the schema, the history bounds and the scripts' handlers, under `limits`.
/// Returns the store and the bytes its VM holds.
pub(crate) fn build_store(
    state: Value,
    schema: Option<&StateSchema>,
    base: &BaseRecord,
    scripts: &BTreeMap<String, String>,
    limits: &Limits,
) -> Result<(Store, usize), ApiError> {
    let mut builder = Store::builder(state)
        .profile(base.profile())
        .limits(limits.clone())
        .history_limits(base.history)
        .seed(base.seed.unwrap_or(0))
        .root_keys(base.root_keys.clone());
    if let Some(schema) = schema {
        builder = builder.schema(schema.clone());
    }
    let card = base.card().map_err(|error| {
        ApiError::new(
            Kind::InvalidGame,
            format!("the card's automatic schema is unusable: {error}"),
        )
    })?;
    builder = builder.card(card);
    let mut vm_bytes = 0;
    if !scripts.is_empty() {
        let handlers = load_scripts(scripts, limits)?;
        vm_bytes = handlers.used_memory();
        builder = builder.handler(handlers);
    }
    let store = builder.build().map_err(|errors| {
        ApiError::new(
            Kind::InvalidGame,
            format!("the state does not satisfy the schema: {errors}"),
        )
        .with_errors(Problem::batch(&errors))
    })?;
    Ok((store, vm_bytes))
}

/// Loads scripts given as text, in file-name order, into a new sandboxed VM under `limits`.
pub(crate) fn load_scripts(
    scripts: &BTreeMap<String, String>,
    limits: &Limits,
) -> Result<LuaHandlers, ApiError> {
    LuaHandlers::from_sources(scripts, limits).map_err(|error| {
        ApiError::new(
            Kind::InvalidGame,
            format!("a script does not load: {error}"),
        )
    })
}

/// Compiles a game's schema.
pub(crate) fn compile_schema(schema: Option<&Json>) -> Result<Option<StateSchema>, ApiError> {
    schema
        .cloned()
        .map(StateSchema::new)
        .transpose()
        .map_err(|error| ApiError::new(Kind::InvalidGame, error.to_string()))
}

impl LoadedGame {
    /// Rebuilds a stored game.
    pub(crate) fn load(stored: StoredGame, limits: &Limits) -> Result<LoadedGame, ApiError> {
        let damaged = |problem: String| {
            ApiError::new(Kind::Damaged, format!("game {}: {problem}", stored.id))
        };
        let schema = compile_schema(stored.base.schema.as_ref())
            .map_err(|error| damaged(format!("its schema: {}", error.message)))?;
        // What the game keeps besides its store's history: the state, the scripts' text (kept for dry
        // runs and compaction) and the schema, whose compiled form is of the order of its text.
        let state_bytes = stored.base.state.estimated_bytes(usize::MAX)
            + stored
                .scripts
                .iter()
                .map(|(name, text)| name.len() + text.len())
                .sum::<usize>()
            + stored
                .base
                .schema
                .as_ref()
                .map_or(0, |schema| 2 * schema.to_string().len());
        let (mut store, vm_bytes) = build_store(
            stored.base.state.clone(),
            schema.as_ref(),
            &stored.base,
            &stored.scripts,
            limits,
        )
        .map_err(|error| damaged(error.message))?;
        for (index, record) in stored.records.iter().enumerate() {
            record.replay(&mut store).map_err(|error| {
                damaged(format!("record {} does not replay: {error}", index + 1))
            })?;
        }
        Ok(LoadedGame {
            store,
            base: stored.base,
            schema,
            scripts: Arc::new(stored.scripts),
            limits: limits.clone(),
            head: stored.head,
            records: stored.records.len(),
            loaded_bytes: state_bytes + vm_bytes,
            signatures: None,
        })
    }

    /// Replays records another process wrote, bringing the game to `head`.
    pub(crate) fn catch_up(
        &mut self,
        records: &[TimelineRecord],
        head: Head,
    ) -> Result<(), TimelineError> {
        for record in records {
            record.replay(&mut self.store)?;
        }
        self.records += records.len();
        self.head = head;
        Ok(())
    }

    /// The memory this game holds, roughly: the state, VM, scripts and schema as loaded plus the
    /// history since (its change logs, labels and checkpoints).
    pub(crate) fn memory(&self) -> usize {
        self.loaded_bytes + self.store.history_bytes()
    }

    /// The head after `records` more, at the store's current step.
    pub(crate) fn head_after(&self, records: usize) -> Head {
        Head {
            seq: self.head.seq + records as u64,
            base_seq: self.head.base_seq,
            step: self.store.current_step(),
            label: self.label_of(self.store.current_step()).map(str::to_owned),
        }
    }

    fn label_of(&self, step: StepId) -> Option<&str> {
        self.store.step(step).and_then(|info| info.label)
    }

    /// Whether the records since the base outnumber what they rebuild, as save files judge it.
    pub(crate) fn wants_compaction(&self) -> bool {
        self.records > 2 * self.store.history_len() + 16
    }

    /// The base and records that rebuild this game's retained timeline alone.
    pub(crate) fn compacted(&self) -> Result<(BaseRecord, Vec<TimelineRecord>), ApiError> {
        let root = self
            .store
            .state_at(StepId::ROOT)
            .map_err(|error| ApiError::new(Kind::Damaged, error.to_string()))?;
        let mut base = BaseRecord {
            state: root.value().clone(),
            root_keys: self.store.root_keys().to_vec(),
            ..self.base.clone()
        };
        // The card at the root, which trimming may have moved past a card update.
        let root_card = self
            .store
            .card_at(StepId::ROOT)
            .map_err(|error| ApiError::new(Kind::Damaged, error.to_string()))?;
        base.set_card(root_card);
        Ok((base, TimelineRecord::all_of(&self.store)))
    }

    /// `{"state", "step", "label"}` now, and `moved` after a move; written straight to text, as a
    /// JSON tree of a large state on the way would cost ten times the writing.
    fn position(&self, moved: Option<bool>) -> Answer {
        let step = self.store.current_step();
        Answer::ok(&Position {
            state: self.store.state(),
            step: step.get(),
            label: self.label_of(step),
            moved,
        })
    }

    /// `{"stat_data", "display_data", "delta_data", "step", "label"}`: MVU's views of the current
    /// step (docs/mvu.md, "MVU's views"); at the root, nothing changed.
    fn mvu_view(&self) -> Result<Done, ApiError> {
        let step = self.store.current_step();
        let views = statecraft_translators::mvu::current_views(&self.store)
            .map_err(|error| ApiError::new(Kind::Damaged, error.to_string()))?;
        Ok(Done::read(&MvuView {
            stat_data: &views.stat_data,
            display_data: &views.display_data,
            delta_data: &views.delta_data,
            step: step.get(),
            label: self.label_of(step),
        }))
    }

    /// Runs an operation; a batch stops at `deadline`. `Delete` is the caller's: it only writes.
    pub(crate) fn run(
        &mut self,
        operation: &Operation,
        deadline: Instant,
    ) -> Result<Done, ApiError> {
        match operation {
            Operation::Show => Ok(Done {
                answer: self.position(None),
                records: Vec::new(),
            }),
            Operation::MvuView => self.mvu_view(),
            Operation::StateAt(at) => {
                let id = self.find(at)?;
                let state = self.store.state_at(id).map_err(timeline_error)?;
                // The root is not a step: it changed nothing.
                let changes = self
                    .store
                    .step(id)
                    .map_or(&[][..], |step| &step.changes[..]);
                Ok(Done::read(&StepState {
                    state: state.value(),
                    step: id.get(),
                    label: self.label_of(id),
                    changes: Changes(changes),
                }))
            }
            Operation::Log => Ok(self.log()),
            Operation::Apply(request) => self.apply(request, deadline),
            Operation::Sync(job) => self.sync(job, deadline),
            Operation::Checkout(request) => {
                let id = self.find(&request.to.to_ref())?;
                self.move_to(|store| store.checkout(id).map_err(timeline_error).map(|_| ()))
            }
            Operation::Undo => self.move_to(|store| {
                store
                    .undo()
                    .map(|_| ())
                    .map_err(|error| ApiError::new(Kind::Damaged, error.to_string()))
            }),
            Operation::Redo => self.move_to(|store| {
                store
                    .redo()
                    .map(|_| ())
                    .map_err(|error| ApiError::new(Kind::Damaged, error.to_string()))
            }),
            Operation::Card => Ok(self.card()),
            Operation::UpdateCard(request) => self.update_card(request, deadline),
            Operation::Prompt(request) => self.prompt(request),
            Operation::Schema => self.schemas(),
            Operation::Evaluate(request) => self.evaluate(request),
            Operation::Delete => Err(ApiError::new(
                Kind::BadRequest,
                "deleting a game is not an operation on its store",
            )),
        }
    }

    /// The step a request names, or the current one.
    fn step_or_current(&self, step: Option<&StepName>) -> Result<StepId, ApiError> {
        match step {
            Some(step) => self.find(&step.to_ref()),
            None => Ok(self.store.current_step()),
        }
    }

    /// What the game's scripts' handlers say about themselves, read once.
    fn callbacks(&mut self) -> Result<Vec<CallbackSignature>, ApiError> {
        if self.scripts.is_empty() {
            return Ok(Vec::new());
        }
        if self.signatures.is_none() {
            let handlers = load_scripts(&self.scripts, &self.limits)?;
            self.signatures = Some(handlers.signatures().to_vec());
        }
        Ok(self.signatures.clone().unwrap_or_default())
    }

    /// The prompt at a step (docs/state-view.md): its state, viewed with the paths the last
    /// steps on its path changed ranked first (`statecraft_prompt::recent_changes`).
    fn prompt(&mut self, request: &GamePromptRequest) -> Result<Done, ApiError> {
        let id = self.step_or_current(request.step.as_ref())?;
        let state = self.store.state_at(id).map_err(timeline_error)?;
        let recent = statecraft_prompt::recent_changes(&self.store, id);
        let callbacks = self.callbacks()?;
        let asked = prompting::Asked {
            lang: request.lang,
            budget: request.budget,
            format: request.format,
            mode: request.mode,
            messages: &request.messages,
            reply: request.reply.as_deref(),
        };
        let schema = self.schema.as_ref().map(StateSchema::source);
        let made = prompting::make(state.value(), schema, &callbacks, &recent, &asked)?;
        Ok(Done {
            answer: prompting::game_answer(&made, id.get(), self.label_of(id)),
            records: Vec::new(),
        })
    }

    /// The game's batch schema, as `POST /v1/schema` gives it for the game's schema and scripts, and
    /// its update pass's strict schema.
    fn schemas(&mut self) -> Result<Done, ApiError> {
        let callbacks = self.callbacks()?;
        let spec = statecraft_prompt::InstructionSpec::from_schema(
            self.schema.as_ref().map(StateSchema::source),
        )
        .with_callbacks(&callbacks);
        let schema = statecraft_prompt::batch_schema(&spec);
        let pass = statecraft_prompt::pass_schema(&spec);
        Ok(Done::read(&GameSchemas {
            schema: &schema,
            pass: &pass,
            name: "statecraft_update",
            partial: spec.is_partial(),
        }))
    }

    /// Each condition on the state at a step: whether it holds, or where its text is wrong.
    fn evaluate(&self, request: &EvaluateRequest) -> Result<Done, ApiError> {
        let id = self.step_or_current(request.step.as_ref())?;
        let state = self.store.state_at(id).map_err(timeline_error)?;
        let results = request
            .conditions
            .iter()
            .map(|text| ConditionResult::of(Condition::parse(text).map(|c| c.holds(state.value()))))
            .collect();
        Ok(Done::read(&Evaluated {
            step: id.get(),
            label: self.label_of(id),
            results,
        }))
    }

    fn find(&self, step: &StepRef) -> Result<StepId, ApiError> {
        self.store.find(step).map_err(timeline_error)
    }

    /// Undo, redo or checkout: the answer says where the game is, and a move is recorded.
    fn move_to(
        &mut self,
        action: impl FnOnce(&mut Store) -> Result<(), ApiError>,
    ) -> Result<Done, ApiError> {
        let from = self.store.current_step();
        action(&mut self.store)?;
        let to = self.store.current_step();
        Ok(Done {
            answer: self.position(Some(from != to)),
            records: checkout_record(from, to),
        })
    }

    /// The history tree, as `statecraft log` prints it.
    fn log(&self) -> Done {
        let steps: Vec<LogStep<'_>> = self
            .store
            .history()
            .map(|step| LogStep {
                id: step.id.get(),
                parent: step.parent.get(),
                label: step.label,
                changes: step.changes.len(),
                children: step.children.iter().map(|id| id.get()).collect(),
                applied: step.applied,
                current: step.current,
                // A step made by sync: its reply's key, and why the reply was refused.
                key: step.key.map(|key| key.to_string()),
                refusal: step.refusal,
            })
            .collect();
        let roots = self
            .store
            .children(StepId::ROOT)
            .map(|ids| ids.iter().map(|id| id.get()).collect())
            .unwrap_or_default();
        Done::read(&Log {
            current: self.store.current_step().get(),
            roots,
            steps,
        })
    }

    /// A 409 `step_conflict` unless the current step is `expected` (when a request names one).
    fn expect_step(&self, expected: Option<u64>) -> Result<(), ApiError> {
        let current = self.store.current_step();
        match expected {
            Some(expected) if current.get() != expected => Err(ApiError::new(
                Kind::StepConflict,
                format!("the current step is {current}, not {expected}: the game changed since"),
            )
            .with_step(current.get())),
            _ => Ok(()),
        }
    }

    fn apply(&mut self, request: &ApplyRequest, deadline: Instant) -> Result<Done, ApiError> {
        self.expect_step(request.expect_step)?;
        let at = request
            .at
            .as_ref()
            .map(|at| self.find(&at.to_ref()))
            .transpose()?;
        let macros = self.macros_with(&request.macros);
        if let Some(input) = &request.input {
            check_macros(Some(input), &macros)?;
        }
        let mut reading = read_batch(request, &self.store, at, macros)?;
        let options = ApplyOptions {
            label: request.label.clone(),
            at: at.map(StepRef::Id),
            policies: Some(policies(reading.policies, request.policies.as_ref())?),
            profile: None,
            best_effort: request.best_effort,
            spans: reading.spans(),
            deadline: Some(deadline),
            key: None,
            card: None,
        };
        if request.dry_run {
            return self.dry_run(&mut reading, options, request);
        }
        let from = self.store.current_step();
        let outcome = reading.apply(&mut self.store, &options, request);
        match outcome {
            Outcome::Rejected(rejection) => Err(rejected(&reading, &rejection.errors)),
            Outcome::Committed(commit) => {
                let records = match StepRecord::of_commit(&commit, request.label.as_deref()) {
                    Some(step) => vec![TimelineRecord::Step(step)],
                    // An empty, unlabelled batch makes no step, but `at` still moved the game.
                    None => checkout_record(from, self.store.current_step()),
                };
                let step = self.store.current_step();
                let outcome = AppliedOutcome::Committed {
                    step: step.get(),
                    label: self.label_of(step),
                };
                Ok(Done {
                    answer: committed(&commit, &reading, outcome),
                    records,
                })
            }
        }
    }

    /// Syncs a chat path. A sync stopped at its deadline still hands back the steps it made (they
    /// are right, and a retry reuses them) with a 503 `timeout` answer; the current step is back where
    /// it was.
    fn sync(&mut self, job: &SyncJob, deadline: Instant) -> Result<Done, ApiError> {
        let replies: Vec<SyncReply<'_>> = job.replies.iter().map(ChatReply::as_sync).collect();
        let macros = self.macros_with(&job.macros);
        for reply in &job.replies {
            if let ChatReply::Text(text) = reply {
                check_macros(Some(text), &macros)?;
            }
        }
        let mut reader = ExtractReader::new(ExtractOptions {
            limits: self.store.limits().clone(),
            mvu: MvuOptions {
                macros,
                profile: self.store.profile(),
                strict_set: self
                    .store
                    .structure()
                    .is_some_and(StructureSchema::strict_set),
                ..MvuOptions::default()
            },
        });
        let options = SyncOptions {
            move_to_end: job.move_to_end,
            deadline: Some(deadline),
        };
        let from = self.store.current_step();
        let synced = self
            .store
            .sync(&replies, &options, &mut reader)
            .map_err(sync_error)?;
        let records = TimelineRecord::of_sync(from, &synced, self.store.current_step());
        if let Some(errors) = &synced.stopped {
            let error = if errors
                .iter()
                .any(|error| error.kind == ErrorKind::DeadlineExceeded)
            {
                ApiError::new(
                    Kind::Timeout,
                    format!(
                        "the sync ran past the request's time limit (--request-timeout) at reply \
                         {}; the replies before it are kept, and a retry goes on from there",
                        synced.reused + synced.applied.len(),
                    ),
                )
            } else {
                ApiError::new(Kind::Damaged, "the game's history could not be walked")
            };
            let error = error.with_errors(Problem::batch(errors));
            return Ok(Done {
                answer: Answer::json(error.status(), &error.body()),
                records,
            });
        }
        let state = if self.store.current_step() == synced.end {
            self.store.state().clone()
        } else {
            self.store
                .state_at(synced.end)
                .map_err(timeline_error)?
                .value()
                .clone()
        };
        let applied: Vec<SyncApplied<'_>> = synced
            .applied
            .iter()
            .map(|reply| SyncApplied {
                index: reply.index,
                step: reply.step().get(),
                committed: reply.refusal.is_none(),
                feedback: reply.refusal.as_deref(),
            })
            .collect();
        Ok(Done {
            answer: Answer::ok(&Synced {
                state: &state,
                step: synced.end.get(),
                label: self.label_of(synced.end),
                current: self.store.current_step().get(),
                applied,
                reused: synced.reused,
            }),
            records,
        })
    }

    /// The macros the game keeps, with a request's own over them.
    fn macros_with(&self, given: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut macros = self.base.macros.clone();
        macros.extend(
            given
                .iter()
                .map(|(name, value)| (name.clone(), value.clone())),
        );
        macros
    }

    /// `{"fingerprint", "automatic_schema", "macros", "profile", "step", "label"}`: the card the
    /// game holds at its current step.
    fn card(&self) -> Done {
        let card = self.store.card();
        let step = self.store.current_step();
        Done::read(&GameCard {
            fingerprint: card.fingerprint.as_deref(),
            automatic_schema: card.structure.as_ref().map(StructureSchema::source),
            macros: &self.base.macros,
            profile: self.store.profile().name(),
            step: step.get(),
            label: self.label_of(step),
        })
    }

    /// A new version of the game's card (docs/mvu.md, "Card updates"): read with the game's macros
    /// and the request's, planned on the current state, and taken as one step unless it is a dry
    /// run or the same card.
    fn update_card(
        &mut self,
        request: &CardUpdateRequest,
        deadline: Instant,
    ) -> Result<Done, ApiError> {
        self.expect_step(request.expect_step)?;
        if Instant::now() >= deadline {
            return Err(ApiError::new(
                Kind::Timeout,
                "the request's time limit (--request-timeout) passed before the card was read",
            ));
        }
        let macros = self.macros_with(&request.macros);
        let made = card::read_value(&request.card, &macros).map_err(|error| {
            ApiError::new(
                Kind::BadRequest,
                format!("the card cannot be read: {error}"),
            )
        })?;
        let version = made.version().map_err(|error| {
            ApiError::new(
                Kind::BadRequest,
                format!("the card's automatic schema is unusable: {error}"),
            )
        })?;
        let previous = self.store.card().fingerprint.clone();
        let changed = previous.as_deref() != Some(made.fingerprint.as_str());
        let update = plan_card_update(
            self.store.state(),
            &Value::from(made.state),
            self.store.card(),
            &version,
            CardUpdateOptions {
                remove_dropped: request.remove_dropped,
                descriptions: self.store.profile().is_mvu(),
            },
        );
        let label = request.label.as_deref().unwrap_or("card update");
        let mut records = Vec::new();
        let mut commit = None;
        if changed && !request.dry_run {
            match self
                .store
                .take_card(&update, version, Some(label.to_owned()))
            {
                Outcome::Committed(made) => {
                    let card = self.store.card().clone();
                    records.extend(
                        StepRecord::of_card_update(&made, Some(label), &card)
                            .map(TimelineRecord::Step),
                    );
                    commit = Some(made);
                }
                Outcome::Rejected(rejection) => {
                    return Err(ApiError::new(
                        Kind::Rejected,
                        format!(
                            "the game refuses the new card ({} problem{}); nothing changed",
                            rejection.errors.len(),
                            if rejection.errors.len() == 1 { "" } else { "s" }
                        ),
                    )
                    .with_errors(Problem::batch(&rejection.errors)));
                }
            }
        }
        let step = self.store.current_step();
        let answer = Answer::ok(&CardUpdated {
            changed,
            committed: commit.is_some(),
            step: step.get(),
            label: self.label_of(step),
            added: wire_paths(&update.added),
            dropped: wire_paths(&update.dropped),
            removed: if update.removes_dropped {
                wire_paths(&update.dropped)
            } else {
                Vec::new()
            },
            descriptions: wire_paths(&update.descriptions),
            changes: Changes(
                commit
                    .as_ref()
                    .map_or(&[][..], |commit| &commit.changes[..]),
            ),
            fingerprint: &made.fingerprint,
            previous: previous.as_deref(),
        });
        Ok(Done { answer, records })
    }

    /// Runs the batch on a throwaway store with the state it would run on and a fresh VM.
    fn dry_run(
        &self,
        reading: &mut Reading,
        options: ApplyOptions,
        request: &ApplyRequest,
    ) -> Result<Done, ApiError> {
        let (state, card) = match &options.at {
            Some(at) => (
                self.store
                    .state_at(at)
                    .map_err(timeline_error)?
                    .value()
                    .clone(),
                self.store.card_at(at).map_err(timeline_error)?,
            ),
            None => (self.store.state().clone(), self.store.card()),
        };
        // The card the batch would run under: the one its step holds, which a card update may have
        // changed since the game was made.
        let mut base = self.base.clone();
        base.set_card(card);
        let (mut trial, _) = build_store(
            state,
            self.schema.as_ref(),
            &base,
            &self.scripts,
            &self.limits,
        )?;
        let options = ApplyOptions {
            at: None,
            ..options
        };
        match reading.apply(&mut trial, &options, request) {
            Outcome::Rejected(rejection) => Err(rejected(reading, &rejection.errors)),
            Outcome::Committed(commit) => {
                let outcome = AppliedOutcome::DryRun {
                    dry_run: true,
                    state: trial.state(),
                };
                Ok(Done {
                    answer: committed(&commit, reading, outcome),
                    records: Vec::new(),
                })
            }
        }
    }
}

impl Reading {
    /// Applies the batch to `store`: under a profile that applies commands one by one, each MVU
    /// command is decided again on the state it meets, and the diagnostics say what it was decided
    /// as (docs/mvu.md, "Profiles").
    fn apply(
        &mut self,
        store: &mut Store,
        options: &ApplyOptions,
        request: &ApplyRequest,
    ) -> Outcome {
        let batch = &self.batch;
        match (self.extraction.as_mut(), request.input.as_deref()) {
            (Some(extraction), Some(text)) => extraction.apply_resolved(text, |resolver| {
                store.apply_resolved(batch, options, resolver)
            }),
            _ => store.apply_resolved(batch, options, None),
        }
    }

    /// What the reader noticed in the reply, as decided (none for a JSON batch).
    fn diagnostics(&self) -> &[Diagnostic] {
        self.extraction
            .as_ref()
            .map_or(&[][..], |extraction| &extraction.diagnostics[..])
    }

    /// What was cleaned in the reply; `None` for a JSON batch.
    fn report(&self) -> Option<Report> {
        self.extraction
            .as_ref()
            .map(|extraction| Report::of(&extraction.report))
    }

    /// The byte span of each instruction in the reply, for `before` hooks (none for a JSON batch).
    fn spans(&self) -> Vec<std::ops::Range<usize>> {
        self.extraction
            .as_ref()
            .map(|extraction| extraction.spans.clone())
            .unwrap_or_default()
    }
}

/// What was read from a request: the batch, the policies it calls for, and what the reader noticed.
pub(crate) struct Reading {
    pub(crate) batch: Batch,
    pub(crate) policies: Policies,
    /// The extraction: its diagnostics, report and feedback text; `None` for a JSON batch.
    extraction: Option<statecraft_translators::Extraction>,
}

/// Reads the request's `input` (a raw reply, with the state at `at` for MVU) or `batch` (strictly).
fn read_batch(
    request: &ApplyRequest,
    store: &Store,
    at: Option<StepId>,
    macros: BTreeMap<String, String>,
) -> Result<Reading, ApiError> {
    match (&request.input, &request.batch) {
        (Some(text), None) => {
            let state = match at {
                Some(at) => store.state_at(at).map_err(timeline_error)?.value().clone(),
                None => store.state().clone(),
            };
            let options = ExtractOptions {
                limits: store.limits().clone(),
                mvu: MvuOptions {
                    state: Some(state),
                    macros,
                    profile: store.profile(),
                    strict_set: store.structure().is_some_and(StructureSchema::strict_set),
                    ..MvuOptions::default()
                },
            };
            let extraction = extract(text, &options);
            let Some((batch, options)) = extraction.applicable() else {
                let errors: Vec<Diagnostic> = extraction
                    .diagnostics
                    .iter()
                    .filter(|d| d.severity == Severity::Error)
                    .cloned()
                    .collect();
                return Err(ApiError::new(
                    Kind::Rejected,
                    format!(
                        "the reply holds invalid instructions ({} problem{}); nothing changed",
                        errors.len(),
                        if errors.len() == 1 { "" } else { "s" }
                    ),
                )
                .with_errors(Problem::text(&errors))
                .with_diagnostics(WireDiagnostic::all(&extraction.diagnostics))
                .with_report(Some(Report::of(&extraction.report)))
                .with_feedback(statecraft_translators::feedback(&extraction, &[])));
            };
            let batch = batch.clone();
            let policies = options.policies.unwrap_or_default();
            Ok(Reading {
                batch,
                policies,
                extraction: Some(extraction),
            })
        }
        (None, Some(json)) => match Batch::from_json(json) {
            Ok(batch) => Ok(Reading {
                batch,
                // A batch follows the game's profile, and so the policies it calls for.
                policies: store.policies(),
                extraction: None,
            }),
            Err(errors) => Err(ApiError::new(
                Kind::Rejected,
                format!("the batch is not valid: {errors}"),
            )
            .with_errors(Problem::batch(&errors))
            .with_diagnostics(Vec::new())
            .with_feedback(statecraft_translators::feedback_for_errors(&errors))),
        },
        _ => Err(ApiError::new(
            Kind::BadRequest,
            "give exactly one of `input` (a model reply) and `batch` (instructions)",
        )),
    }
}

/// The reply's policies with the request's laid over them, member by member.
fn policies(base: Policies, given: Option<&Map<String, Json>>) -> Result<Policies, ApiError> {
    let Some(given) = given else {
        return Ok(base);
    };
    let mut merged = match serde_json::to_value(base) {
        Ok(Json::Object(map)) => map,
        _ => Map::new(),
    };
    merged.extend(given.clone());
    serde_json::from_value(Json::Object(merged))
        .map_err(|error| ApiError::new(Kind::BadRequest, format!("policies: {error}")))
}

/// A 422 for a batch the engine refused; a 503 `timeout` for one stopped at its deadline, which a retry
/// may pass.
fn rejected(reading: &Reading, errors: &[BatchError]) -> ApiError {
    if errors
        .iter()
        .any(|error| error.kind == ErrorKind::DeadlineExceeded)
    {
        return ApiError::new(
            Kind::Timeout,
            "the batch ran past the request's time limit (--request-timeout) and was stopped; \
             nothing changed",
        )
        .with_errors(Problem::batch(errors));
    }
    let feedback = match &reading.extraction {
        Some(extraction) => statecraft_translators::feedback(extraction, errors),
        None => statecraft_translators::feedback_for_errors(errors),
    };
    ApiError::new(
        Kind::Rejected,
        format!(
            "the batch was rejected ({} problem{}); nothing changed",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" }
        ),
    )
    .with_errors(Problem::batch(errors))
    .with_diagnostics(WireDiagnostic::all(reading.diagnostics()))
    .with_report(reading.report())
    .with_feedback(feedback)
}

/// A commit's 200 answer, or a dry run's, written straight to its text: the changes may carry up to
/// `max_commit_bytes`, and a JSON tree of them on the way would hold several times that.
fn committed(commit: &Commit, reading: &Reading, outcome: AppliedOutcome<'_>) -> Answer {
    Answer::ok(&Applied {
        committed: matches!(outcome, AppliedOutcome::Committed { .. }),
        outcome,
        changes: Changes(&commit.changes),
        events: Event::all(&commit.events),
        warnings: Problem::batch(&commit.warnings),
        trimmed: Trimmed::all(&commit.trimmed),
        diagnostics: WireDiagnostic::all(reading.diagnostics()),
        report: reading.report(),
    })
}

/// Paths as the wire writes them.
fn wire_paths(paths: &[statecraft_engine::Path]) -> Vec<WirePath<'_>> {
    paths.iter().map(WirePath).collect()
}

/// A move of the current step, if it moved.
fn checkout_record(from: StepId, to: StepId) -> Vec<TimelineRecord> {
    if from == to {
        Vec::new()
    } else {
        vec![TimelineRecord::Checkout(CheckoutRecord { to })]
    }
}

/// A sync that changed nothing, as the API answers it: 409 `need_text` with the indices, 409
/// `path_trimmed`, 400 for a path longer than the history keeps.
fn sync_error(error: SyncError) -> ApiError {
    match error {
        SyncError::NeedText(ref need) => {
            ApiError::new(Kind::NeedText, error.to_string()).with_need(need.clone())
        }
        SyncError::Trimmed { index, .. } => {
            ApiError::new(Kind::PathTrimmed, error.to_string()).with_index(index)
        }
        SyncError::TooLong { index, .. } => {
            ApiError::new(Kind::BadRequest, error.to_string()).with_index(index)
        }
        SyncError::HistoryOff => ApiError::new(Kind::BadRequest, error.to_string()),
        SyncError::Timeline(error) => timeline_error(error),
    }
}

/// A timeline error as the API answers it.
pub(crate) fn timeline_error(error: TimelineError) -> ApiError {
    match error {
        TimelineError::UnknownLabel(_) => ApiError::new(Kind::UnknownLabel, error.to_string()),
        TimelineError::UnknownStep(_) => ApiError::new(Kind::UnknownStep, error.to_string()),
        other => ApiError::new(Kind::Damaged, other.to_string()),
    }
}
