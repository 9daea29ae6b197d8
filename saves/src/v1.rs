//! The reader of format version 1, whose history was a line: kept so that those saves load forever.
//!
//! Version 1 recorded steps, undos and redos. Its rules differ from today's tree: a commit after an
//! undo dropped the undone steps, and trimming dropped the oldest steps while more than one was left
//! and either bound was exceeded, counting each step as its changes plus 56 bytes. Its records are
//! replayed by exactly those rules, on today's store (dropped steps are forgotten as they go), so a
//! version 1 save loads as the game it was; opening it then rewrites it in the current version. A label
//! that several version 1 steps shared names the newest of them, since labels are now unique. This
//! module must not write anything.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use statecraft_engine::{Change, HistoryLimits, StepId, StepMarks, Store, TimelineError};

use crate::error::SaveError;
use crate::format::{self, RecordV1, Scan};
use crate::game::{Loaded, Setup, corrupt, load_base, read_base};

/// Reads a format version 1 file.
pub(crate) fn read(path: &Path, bytes: &[u8], setup: Option<Setup>) -> Result<Loaded, SaveError> {
    let (base, mut offset) = read_base(path, bytes, |record: RecordV1| match record {
        RecordV1::Base(base) => Some(base),
        _ => None,
    })?;
    if base.seed.is_some()
        || base.profile.is_some()
        || base.automatic_schema.is_some()
        || base.card_fingerprint.is_some()
        || !base.macros.is_empty()
    {
        return Err(corrupt(
            path,
            crate::format::FILE_HEADER_LEN,
            "a version 1 base snapshot cannot hold a seed, a profile, an automatic schema, a card's \
             fingerprint or macros",
        ));
    }
    let mut line = Line::new(base.history);
    let mut loaded = load_base(path, *base, setup)?;
    let store = &mut loaded.store;
    loop {
        let (payload, next) = match format::scan(bytes, offset) {
            Scan::Record { payload, next } => (payload, next),
            Scan::End | Scan::Torn => break,
            Scan::Damaged(problem) => return Err(corrupt(path, offset, problem)),
        };
        let record: RecordV1 =
            format::decode(payload).map_err(|problem| corrupt(path, offset, problem))?;
        match record {
            RecordV1::Base(_) => {
                return Err(corrupt(
                    path,
                    offset,
                    "a second base snapshot after the first",
                ));
            }
            RecordV1::Step(step) => {
                line.commit(store, step.label, &step.changes)
                    .map_err(|error| {
                        corrupt(
                            path,
                            offset,
                            format!("the step does not replay on the state: {error}"),
                        )
                    })?;
            }
            RecordV1::Undo { steps } => {
                for _ in 0..steps {
                    match store.undo() {
                        Ok(Some(_)) => line.applied -= 1,
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
            RecordV1::Redo { steps } => {
                for _ in 0..steps {
                    match store.redo() {
                        Ok(Some(_)) => line.applied += 1,
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
        loaded.records += 1;
        offset = next;
    }
    loaded.good = offset;
    Ok(loaded)
}

/// The line of steps version 1 kept, beside the store that holds them.
struct Line {
    limits: HistoryLimits,
    /// The steps of the line, oldest first, with version 1's estimate of each one's bytes.
    steps: VecDeque<(StepId, usize)>,
    bytes: usize,
    /// How many steps of the line are applied.
    applied: usize,
}

impl Line {
    /// What version 1 counted for a step besides its changes (`size_of` of its step on 64-bit targets).
    const STEP_BYTES: usize = 56;

    fn new(limits: HistoryLimits) -> Line {
        Line {
            limits,
            steps: VecDeque::new(),
            bytes: 0,
            applied: 0,
        }
    }

    /// A step record: the undone steps go, the step is recorded on the applied ones, the oldest go
    /// while the bounds are exceeded.
    fn commit(
        &mut self,
        store: &mut Store,
        label: Option<String>,
        changes: &Arc<[Change]>,
    ) -> Result<(), TimelineError> {
        while self.steps.len() > self.applied {
            let (undone, bytes) = self.steps.pop_back().expect("more steps than applied");
            store.forget(undone)?;
            self.bytes -= bytes;
        }
        let bytes = changes.iter().map(Change::estimated_bytes).sum::<usize>() + Self::STEP_BYTES;
        let id = store.next_step_id();
        store.replay_step(
            id,
            store.current_step(),
            StepMarks {
                label,
                ..StepMarks::default()
            },
            Arc::clone(changes),
        )?;
        self.steps.push_back((id, bytes));
        self.bytes += bytes;
        self.applied += 1;
        while self.steps.len() > 1
            && (self.steps.len() > self.limits.max_steps || self.bytes > self.limits.max_bytes)
        {
            let (oldest, bytes) = self.steps.pop_front().expect("more than one step");
            store.forget(oldest)?;
            self.bytes -= bytes;
            self.applied -= 1;
        }
        Ok(())
    }
}
