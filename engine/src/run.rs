//! The batch runner: one batch, from the `before` hooks to the schema check, in place on the state it
//! starts from.
//!
//! [`batch`] hands the batch to the `before` hooks (which may return another), validates it and runs
//! it: each instruction (`exec.rs`) with its callbacks' emitted instructions right after it, or, for
//! the profiles that apply commands one by one, each command decided again on the state it meets and
//! skipped alone when it fails. Then the watchers, the `after` hooks and the incremental schema check
//! (mending under `schema_violation = repair`), reading the clock against the deadline as it goes. It
//! returns what the batch made ([`Finished`]) or every error that rejects it; the store (`store.rs`) decides
//! what a commit is. This module must not touch the history.
//!
//! The batch writes the state it is given in place, so that the nodes it alone holds are changed
//! without a copy (persistent nodes shared with anything else, a checkpoint or a reader's snapshot,
//! are still copied on write and never change). Every write is in the change log as it happens, so a
//! batch that fails, and a command or a best-effort instruction that fails alone, is undone by
//! replaying the log backwards from where it stood: the state is then equal to what it was, though
//! the nodes written are new ones.

use std::borrow::Cow;
use std::ops::Range;
use std::time::Instant;

use crate::budget;
use crate::callback::{
    AfterCall, BatchContext, BeforeCall, CallbackCall, CallbackHandler, HandlerError, HostEvent,
    Response, Rewrite, RewriteNote, WatchCall,
};
use crate::change::{self, Change};
use crate::error::{BatchError, ErrorKind, Trail};
use crate::exec::{self, Failure};
use crate::instruction::{Instruction, Op};
use crate::limits::{Policies, SchemaViolation, UnknownCallback};
use crate::random::Random;
use crate::schema::StateSchema;
use crate::store::{ApplyOptions, Resolve};
use crate::structure::StructureSchema;
use crate::validate::Rules;
use crate::value::Value;

/// How many instructions run between two readings of the clock against [`ApplyOptions::deadline`]: an
/// instruction takes well under a microsecond, a reading of the clock some tens of nanoseconds.
const DEADLINE_CHECK_EVERY: u32 = 64;

/// What a batch runs with, borrowed from its store.
pub(crate) struct Setting<'s> {
    pub(crate) rules: Rules<'s>,
    pub(crate) handler: &'s mut dyn CallbackHandler,
    pub(crate) schema: Option<&'s StateSchema>,
    /// MVU's automatic schema, when the batch's profile enforces it.
    pub(crate) structure: Option<&'s StructureSchema>,
    /// The batch's policies ([`ApplyOptions::policies`], its profile's or the store's).
    pub(crate) policies: Policies,
    /// How the batch's commands run, by its profile.
    pub(crate) mode: Mode,
}

/// How a batch's commands run: all of them or none, or (the `mvu` profiles) one at a time, each
/// decided on the state the ones before it left and a refused one skipped alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// All or nothing (best effort aside): `strict`.
    Whole,
    /// One command at a time, as MVU applies them.
    OneByOne,
}

/// One batch where it starts, for [`batch`]: what it runs, on which state, with what.
pub(crate) struct Start<'b, 'r> {
    /// The batch's instructions, before the `before` hooks.
    pub(crate) instructions: &'b [Instruction],
    pub(crate) options: &'b ApplyOptions,
    /// The state it starts from, written in place.
    pub(crate) root: &'b mut Value,
    /// `root` as the batch began, for the `after` hooks; without it (the handler has none) they are
    /// not called.
    pub(crate) before: Option<&'b Value>,
    /// The estimated size of `root`.
    pub(crate) size: usize,
    /// The generator every handler call draws from.
    pub(crate) random: Random,
    /// What decides each command again when the batch runs one by one (MVU's commands).
    pub(crate) resolver: Option<&'b mut (dyn Resolve + 'r)>,
}

/// What a batch that ran to its end made, besides the new state: the parts of its commit.
pub(crate) struct Finished {
    /// The estimated size of the new state.
    pub(crate) size: usize,
    pub(crate) changes: Vec<Change>,
    /// One per instruction of the batch that ran (the one the `before` hooks returned).
    pub(crate) results: Vec<Option<Value>>,
    pub(crate) events: Vec<HostEvent>,
    pub(crate) warnings: Vec<BatchError>,
    /// The generator as the batch's handlers left it.
    pub(crate) random: Random,
}

/// Runs a batch ([`Start`]) in place on its state: what it made, or every error that rejects it, and
/// then the state equals what it was.
/// Time: the batch's own work (its instructions, handlers and schema check), plus the resolver's;
/// a rejected batch adds the replay of the changes it had made.
pub(crate) fn batch(
    setting: Setting<'_>,
    start: Start<'_, '_>,
) -> Result<Finished, Vec<BatchError>> {
    let Setting {
        rules,
        handler,
        schema,
        structure,
        policies,
        mode,
    } = setting;
    let Start {
        instructions,
        options,
        root,
        before,
        size,
        mut random,
        resolver,
    } = start;
    // The same resolver, its trait object's lifetime shortened to the borrow's.
    let mut resolver = resolver.map(|resolver| resolver as &mut dyn Resolve);
    let (instructions, notes) = before_hooks(
        &mut *handler,
        &rules,
        instructions,
        options,
        root,
        &mut random,
    )
    .map_err(|error| vec![error])?;
    // Once hooks rewrote the batch, instruction numbers are those of the batch they returned; a
    // rejection says so and lists the edits, so that it can be read against the reply.
    let reject = |mut errors: Vec<BatchError>| {
        if !notes.is_empty() {
            for error in &mut errors {
                if error.instruction.is_some() {
                    error.message = format!(
                        "{} (instruction numbers are those of the batch the before hooks returned)",
                        error.message
                    );
                }
            }
            errors.extend(notes.iter().cloned());
        }
        errors
    };
    let errors = rules.batch(&instructions);
    // Best effort and one-by-one skip invalid instructions, but a problem with the batch as a
    // whole still rejects.
    let tolerable = (options.best_effort || mode == Mode::OneByOne)
        && errors.iter().all(|e| e.instruction.is_some());
    if !errors.is_empty() && !tolerable {
        return Err(reject(errors));
    }
    // The commands are the resolver's while the batch is the one it was made for.
    if !(mode == Mode::OneByOne && notes.is_empty()) {
        resolver = None;
    }
    if let Some(resolver) = &resolver
        && !covers(resolver.units(), instructions.len())
    {
        return Err(reject(vec![BatchError::whole_batch(
            ErrorKind::InvalidField,
            None,
            "the resolver's commands do not cover the batch's instructions in order",
        )]));
    }
    let mut run = Run {
        root,
        size,
        policies,
        rules,
        structure,
        handler,
        // Most instructions make one change: room for that many spares the growing.
        changes: Vec::with_capacity(instructions.len()),
        events: Vec::new(),
        warnings: notes.clone(),
        emitted: 0,
        random,
        commit_bytes: 0,
        deadline: options.deadline,
        ticks: 0,
        mode,
    };
    let ran = run.whole(&instructions, errors, options, before, resolver, schema);
    match ran {
        Ok(results) => Ok(Finished {
            size: run.size,
            changes: run.changes,
            results,
            events: run.events,
            warnings: run.warnings,
            random: run.random,
        }),
        Err(errors) => {
            run.roll_back(0);
            Err(reject(errors))
        }
    }
}

impl Run<'_> {
    /// Everything of the batch after validation: its instructions (or commands), the watchers, the
    /// `after` hooks and the schema check. Returns the results, one per instruction; on an error the
    /// caller rolls the changes back.
    fn whole(
        &mut self,
        instructions: &[Instruction],
        errors: Vec<BatchError>,
        options: &ApplyOptions,
        before: Option<&Value>,
        resolver: Option<&mut dyn Resolve>,
        schema: Option<&StateSchema>,
    ) -> Result<Vec<Option<Value>>, Vec<BatchError>> {
        let (results, units_end) = match self.mode {
            Mode::OneByOne => self.one_by_one(instructions, errors, resolver, schema)?,
            Mode::Whole => (self.all(instructions, errors, options.best_effort)?, 0),
        };
        self.watch()?;
        if let Some(before) = before {
            self.after(before)?;
        }
        // One by one, every command's changes were checked as it ran; what watchers and hooks did
        // after them is checked here.
        if let Some(schema) = schema
            && (self.mode == Mode::Whole || self.changes.len() > units_end)
        {
            self.schema(schema, units_end)?;
        }
        // The last reading: a batch that ran out of time in its schema check commits nothing either.
        if let Some(late) = late(options.deadline) {
            return Err(vec![late]);
        }
        Ok(results)
    }
}

/// The batch the `before` hooks hand back (`instructions` when they changed nothing) and their edits,
/// as warnings; or the error of a failing hook, which rejects the batch.
fn before_hooks<'i>(
    handler: &mut dyn CallbackHandler,
    rules: &Rules<'_>,
    instructions: &'i [Instruction],
    options: &ApplyOptions,
    start: &Value,
    random: &mut Random,
) -> Result<(Cow<'i, [Instruction]>, Vec<BatchError>), BatchError> {
    let rewrite = handler.before(BeforeCall {
        instructions,
        spans: &options.spans,
        state: start,
        batch: batch_context(rules, random, options.deadline),
    });
    match rewrite {
        Ok(None) => Ok((Cow::Borrowed(instructions), Vec::new())),
        Ok(Some(Rewrite {
            instructions,
            notes,
        })) => Ok((
            Cow::Owned(instructions),
            notes.iter().map(rewritten).collect(),
        )),
        Err(error) => Err(hook_failed(options.deadline, "a before hook", error)),
    }
}

/// The working state of one `apply`.
struct Run<'s> {
    /// The state being written, in place.
    root: &'s mut Value,
    /// The estimated size of `root`, kept by [`budget::check`] after every instruction.
    size: usize,
    policies: Policies,
    rules: Rules<'s>,
    /// MVU's automatic schema, when the batch's profile enforces it.
    structure: Option<&'s StructureSchema>,
    handler: &'s mut dyn CallbackHandler,
    changes: Vec<Change>,
    events: Vec<HostEvent>,
    warnings: Vec<BatchError>,
    emitted: usize,
    /// The batch's generator, handed to every handler call.
    random: Random,
    /// What the changes and events so far carry, by [`budget::check`] and [`Run::follow`], against
    /// `Limits::max_commit_bytes`.
    commit_bytes: usize,
    /// [`ApplyOptions::deadline`].
    deadline: Option<Instant>,
    /// Instructions run since the clock was last read.
    ticks: u32,
    mode: Mode,
}

/// What every handler call of the batch carries.
fn batch_context<'c>(
    rules: &Rules<'c>,
    random: &'c mut Random,
    deadline: Option<Instant>,
) -> BatchContext<'c> {
    BatchContext {
        limits: rules.limits,
        forbidden: rules.forbidden,
        random,
        deadline,
    }
}

/// The error of a batch whose deadline has passed, if it has. Reads the clock.
fn late(deadline: Option<Instant>) -> Option<BatchError> {
    let deadline = deadline?;
    (Instant::now() >= deadline).then(|| {
        BatchError::whole_batch(
            ErrorKind::DeadlineExceeded,
            None,
            "the batch ran past its deadline and was stopped; nothing of it was applied",
        )
    })
}

/// The error of a hook or watcher (`what`) that failed: the deadline's when the batch's time ran out
/// (the limiter stopped it), else `callback_failed` with the failure.
fn hook_failed(deadline: Option<Instant>, what: &str, error: impl std::fmt::Display) -> BatchError {
    late(deadline).unwrap_or_else(|| {
        BatchError::whole_batch(
            ErrorKind::CallbackFailed,
            None,
            format!("{what} failed: {error}"),
        )
    })
}

/// The errors of instructions a hook or watcher (`what`) emitted. They have no instruction of the
/// batch to point at, so each message names `what` and the emitted instruction's trail instead.
fn emitted_by(what: &str, errors: Vec<BatchError>) -> Vec<BatchError> {
    errors
        .into_iter()
        .map(|mut error| {
            error.message = format!(
                "emitted by {what} ({}): {}",
                error.instruction.take().unwrap_or_default(),
                error.message
            );
            error
        })
        .collect()
}

/// A `before` hook's edit, as the warning a commit or a rejection reports.
fn rewritten(note: &RewriteNote) -> BatchError {
    BatchError {
        kind: ErrorKind::RewrittenByScript,
        instruction: note.instruction.map(|index| Trail(vec![index])),
        field: None,
        path: None,
        message: format!(
            "rewritten by the before hook at {}: {}",
            note.origin, note.message
        ),
    }
}

/// How many rounds of repairs one batch may take: a repair (a default) can bring a value whose own
/// schema another round mends, and a bound keeps a schema that keeps asking from looping.
const MEND_ROUNDS: usize = 4;

/// Where a run stood, to go back to when a command (or, in best effort, an instruction) fails on its
/// own: the budget, and how many changes (the state goes back by replaying the later ones backwards),
/// events and emitted instructions there were.
struct Checkpoint {
    size: usize,
    commit_bytes: usize,
    changes: usize,
    events: usize,
    emitted: usize,
}

/// Whether `units` are consecutive ranges from 0 that end at `len`.
fn covers(units: &[Range<usize>], len: usize) -> bool {
    let mut next = 0;
    for unit in units {
        if unit.start != next || unit.end < unit.start {
            return false;
        }
        next = unit.end;
    }
    next == len
}

impl Run<'_> {
    fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            size: self.size,
            commit_bytes: self.commit_bytes,
            changes: self.changes.len(),
            events: self.events.len(),
            emitted: self.emitted,
        }
    }

    fn restore(&mut self, checkpoint: Checkpoint) {
        self.roll_back(checkpoint.changes);
        self.size = checkpoint.size;
        self.commit_bytes = checkpoint.commit_bytes;
        self.events.truncate(checkpoint.events);
        self.emitted = checkpoint.emitted;
    }

    /// Undoes the changes after the first `keep` by replaying them backwards, and drops them from the
    /// log. Time: O(changes undone × depth × log n).
    fn roll_back(&mut self, keep: usize) {
        let undone = change::replay_backward(self.root, &self.changes[keep..]);
        // Every change in the log was made on this very state, in this order (`exec.rs` records a
        // write before anything can fail), so replaying it backwards always fits: an error here is
        // a bug in the recording, and going on would commit a state that is not what it says.
        if let Err(error) = undone {
            panic!("a batch's own changes do not roll back: {error}");
        }
        self.changes.truncate(keep);
    }

    /// Runs the batch's instructions in order, one result each. `errors` are validation's: in best
    /// effort the instructions they name are skipped, as is any instruction that fails on its own
    /// (its changes and events undone), each reported as a warning, in the order validation found
    /// them.
    fn all(
        &mut self,
        instructions: &[Instruction],
        errors: Vec<BatchError>,
        best_effort: bool,
    ) -> Result<Vec<Option<Value>>, Vec<BatchError>> {
        // A flag per instruction, so a long batch with many invalid instructions stays linear.
        let mut invalid = vec![false; instructions.len()];
        for error in &errors {
            if let Some(&index) = error.instruction.as_ref().and_then(|trail| trail.0.first())
                && index < invalid.len()
            {
                invalid[index] = true;
            }
        }
        self.warnings.extend(errors);
        let mut results = Vec::with_capacity(instructions.len());
        // One trail for the whole batch, its index set per instruction: no allocation each.
        let mut trail = Trail(vec![0]);
        for (index, instruction) in instructions.iter().enumerate() {
            if invalid[index] {
                results.push(None);
                continue;
            }
            trail.0[0] = index;
            // Only best effort needs a way back from a failing instruction.
            let checkpoint = best_effort.then(|| self.checkpoint());
            match self.one(instruction, &trail, 0) {
                Ok(result) => results.push(result),
                // A batch out of time stops whole: best effort only skips what fails on its own.
                Err(errors)
                    if best_effort
                        && !errors.iter().any(|e| e.kind == ErrorKind::DeadlineExceeded) =>
                {
                    self.restore(checkpoint.expect("taken in best-effort mode"));
                    self.warnings.extend(errors);
                    results.push(None);
                }
                Err(errors) => return Err(errors),
            }
        }
        Ok(results)
    }

    /// Runs the batch one command at a time ([`Run::units`]): the commands `resolver` gives, or one
    /// per instruction. `errors` are validation's; each instruction's are reported when its command
    /// is skipped, and those of the batch as a whole at once. Returns the results, one per
    /// instruction, and how many changes the commands made.
    fn one_by_one(
        &mut self,
        instructions: &[Instruction],
        errors: Vec<BatchError>,
        resolver: Option<&mut dyn Resolve>,
        schema: Option<&StateSchema>,
    ) -> Result<(Vec<Option<Value>>, usize), Vec<BatchError>> {
        let mut invalid: Vec<Vec<BatchError>> = Vec::new();
        if !errors.is_empty() {
            invalid = vec![Vec::new(); instructions.len()];
        }
        for error in errors {
            match error.instruction.as_ref().and_then(|trail| trail.0.first()) {
                Some(&index) if index < invalid.len() => invalid[index].push(error),
                _ => self.warnings.push(error),
            }
        }
        let units = match &resolver {
            Some(resolver) => resolver.units().to_vec(),
            None => (0..instructions.len()).map(|i| i..i + 1).collect(),
        };
        let mut results = vec![None; instructions.len()];
        self.units(
            instructions,
            &units,
            &mut invalid,
            resolver,
            schema,
            &mut results,
        )?;
        Ok((results, self.changes.len()))
    }

    /// Runs the batch one command at a time, as MVU does: each command (decided again by `resolver`
    /// on the state the commands before it left) runs and has its changes checked against the schema
    /// on its own; one that fails is rolled back and skipped with a warning that names it and says
    /// why, and the rest go on. Only running out of time stops the whole batch.
    fn units(
        &mut self,
        instructions: &[Instruction],
        units: &[Range<usize>],
        invalid: &mut [Vec<BatchError>],
        mut resolver: Option<&mut dyn Resolve>,
        schema: Option<&StateSchema>,
        results: &mut [Option<Value>],
    ) -> Result<(), Vec<BatchError>> {
        for (unit, range) in units.iter().enumerate() {
            let checkpoint = self.checkpoint();
            let resolved = resolver
                .as_mut()
                .and_then(|resolver| resolver.resolve(unit, self.root));
            let trail = |j: usize| match range.len() {
                0 => Trail(vec![range.start]),
                len => Trail(vec![range.start + j.min(len - 1)]),
            };
            let ran = match &resolved {
                Some(list) => {
                    let mut errors = Vec::new();
                    for (j, instruction) in list.iter().enumerate() {
                        self.rules.instruction(instruction, &trail(j), &mut errors);
                    }
                    if errors.is_empty() {
                        self.run_all(list.iter().enumerate().map(|(j, i)| (i, trail(j))))
                    } else {
                        Err(errors)
                    }
                }
                None => {
                    let errors: Vec<BatchError> = invalid
                        .get_mut(range.clone())
                        .into_iter()
                        .flatten()
                        .flat_map(std::mem::take)
                        .collect();
                    if errors.is_empty() {
                        self.run_all(range.clone().map(|i| (&instructions[i], Trail(vec![i]))))
                    } else {
                        Err(errors)
                    }
                }
            };
            let ran = ran.and_then(|ran| match schema {
                Some(schema) if self.changes.len() > checkpoint.changes => {
                    self.schema(schema, checkpoint.changes).map(|()| ran)
                }
                _ => Ok(ran),
            });
            match ran {
                Ok(ran) => {
                    for (slot, result) in results[range.clone()].iter_mut().zip(ran) {
                        *slot = result;
                    }
                }
                Err(errors) if errors.iter().any(|e| e.kind == ErrorKind::DeadlineExceeded) => {
                    return Err(errors);
                }
                Err(errors) => {
                    self.restore(checkpoint);
                    let name = resolver
                        .as_ref()
                        .and_then(|resolver| resolver.describe(unit))
                        .unwrap_or_else(|| match range.len() {
                            1 => format!("instruction {}", range.start),
                            _ => format!("command {unit}"),
                        });
                    for mut error in errors {
                        error.message = format!("skipped {name}: {}", error.message);
                        if range.is_empty() {
                            // The command has no instruction in the batch to point at.
                            error.instruction = None;
                        }
                        self.warnings.push(error);
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs instructions in order at cascade depth 0, with their results.
    fn run_all<'i>(
        &mut self,
        list: impl Iterator<Item = (&'i Instruction, Trail)>,
    ) -> Result<Vec<Option<Value>>, Vec<BatchError>> {
        list.map(|(instruction, trail)| self.one(instruction, &trail, 0))
            .collect()
    }
}

impl Run<'_> {
    /// Runs an instruction at cascade `depth`; callbacks run their emitted instructions right after.
    fn one(
        &mut self,
        instruction: &Instruction,
        trail: &Trail,
        depth: usize,
    ) -> Result<Option<Value>, Vec<BatchError>> {
        if self.deadline.is_some() {
            // Every handler call may be long, so the clock is read before each; plain instructions are
            // short, so only every so many of them.
            self.ticks += 1;
            if instruction.op == Op::Callback || self.ticks >= DEADLINE_CHECK_EVERY {
                self.ticks = 0;
                if let Some(late) = late(self.deadline) {
                    return Err(vec![late]);
                }
            }
        }
        if instruction.op != Op::Callback {
            let admitted;
            let instruction = match self.structure.map(|s| s.admit(self.root, instruction)) {
                None | Some(Ok(None)) => instruction,
                Some(Ok(Some(templated))) => {
                    admitted = templated;
                    &admitted
                }
                Some(Err(failure)) => return Err(vec![to_error(failure, trail)]),
            };
            let start = self.changes.len();
            let ran = exec::run(self.root, instruction, &self.policies, &mut self.changes)
                .and_then(|ran| {
                    budget::check(
                        &self.changes[start..],
                        self.rules.limits,
                        &mut self.size,
                        &mut self.commit_bytes,
                    )?;
                    Ok(ran)
                });
            return match ran {
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
            state: self.root,
            depth,
            batch: batch_context(&self.rules, &mut self.random, self.deadline),
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
            // A script stopped at the deadline failed because the batch's time is up, not by itself.
            Err(HandlerError::Failed(_)) if late(self.deadline).is_some() => {
                return Err(late(self.deadline).into_iter().collect());
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
        for event in &response.events {
            let allowance = self
                .rules
                .limits
                .max_commit_bytes
                .saturating_sub(self.commit_bytes)
                .saturating_add(1);
            self.commit_bytes = self
                .commit_bytes
                .saturating_add(event.payload.estimated_bytes(allowance));
            if self.commit_bytes > self.rules.limits.max_commit_bytes {
                return Err(vec![BatchError::in_field(
                    ErrorKind::CommitTooLarge,
                    trail,
                    "",
                    budget::commit_too_large(self.rules.limits),
                )]);
            }
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
            // The fresh changes are lent, not copied: watchers cannot change the log while they read it.
            let fresh = seen..self.changes.len();
            seen = self.changes.len();
            let call = WatchCall {
                changes: &self.changes[fresh],
                state: self.root,
                depth,
                batch: batch_context(&self.rules, &mut self.random, self.deadline),
            };
            let response = self
                .handler
                .watch(call)
                .map_err(|error| vec![hook_failed(self.deadline, "a watcher", error)])?;
            self.follow(response, &Trail(Vec::new()), depth)
                .map_err(|errors| emitted_by("a watcher", errors))?;
        }
        Ok(())
    }
}

impl Run<'_> {
    /// Offers the whole batch to `after` hooks, once, and runs what they emit (at cascade depth 0, so
    /// callbacks they emit are bounded like any). Watchers do not see these changes: the hooks have
    /// the last word before the schema check.
    fn after(&mut self, before: &Value) -> Result<(), Vec<BatchError>> {
        let call = AfterCall {
            changes: &self.changes,
            before,
            state: self.root,
            batch: batch_context(&self.rules, &mut self.random, self.deadline),
        };
        let response = self
            .handler
            .after(call)
            .map_err(|error| vec![hook_failed(self.deadline, "an after hook", error)])?;
        self.follow(response, &Trail(Vec::new()), 0)
            .map_err(|errors| emitted_by("an after hook", errors))
    }

    /// The incremental schema check; under `schema_violation = repair`, the violations the schema
    /// says how to mend are repaired (each a change of this batch and a `schema_repaired` warning)
    /// and the check runs again on what changed, up to [`MEND_ROUNDS`] times.
    fn schema(&mut self, schema: &StateSchema, from: usize) -> Result<(), Vec<BatchError>> {
        let mut errors = schema.check_changes(self.root, &self.changes[from..]);
        if self.policies.schema_violation == SchemaViolation::Reject {
            return if errors.is_empty() {
                Ok(())
            } else {
                Err(errors)
            };
        }
        for _ in 0..MEND_ROUNDS {
            if errors.is_empty() {
                return Ok(());
            }
            let mends = schema.mends(self.root, &errors);
            if mends.is_empty() {
                return Err(errors);
            }
            for mend in mends {
                let reason = format!("schema repair: {}", mend.rule);
                let instruction =
                    Instruction::assign(mend.path.clone(), mend.value).with_reason(reason);
                let ran = exec::run(
                    self.root,
                    &instruction,
                    &Policies::default(),
                    &mut self.changes,
                )
                .and_then(|_| {
                    let from = self.changes.len() - 1;
                    budget::check(
                        &self.changes[from..],
                        self.rules.limits,
                        &mut self.size,
                        &mut self.commit_bytes,
                    )
                });
                if let Err(failure) = ran {
                    return Err(vec![to_error(failure, &Trail(Vec::new()))]);
                }
                self.warnings.push(BatchError::whole_batch(
                    ErrorKind::SchemaRepaired,
                    Some(mend.path.to_pointer()),
                    format!("repaired to the schema ({}): {}", mend.rule, mend.message),
                ));
            }
            errors = schema.check_changes(self.root, &self.changes[from..]);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
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
