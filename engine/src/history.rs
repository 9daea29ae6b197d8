//! History: every committed batch is a step that can be undone and redone.
//!
//! A step keeps only its change log (old and new value of every primitive change), not a snapshot of
//! the state, so retained memory follows what changed, not the size of the state. Undo replays a
//! step's changes backwards on the live root and redo replays them forwards: both cost the size of the
//! step, whatever the size of the state. Steps have stable ids (`slotmap`) that survive trimming, and
//! optional labels (a chat message id) for `undo_to`. History is bounded by a step count and by an
//! estimate of retained bytes; trimming drops the oldest steps. This module must not run instructions.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use slotmap::{SlotMap, new_key_type};

use crate::change::Change;

new_key_type! {
    /// A stable id for a history step. Valid until the step is trimmed or dropped with a redo branch.
    pub struct StepId;
}

/// Bounds on retained history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HistoryLimits {
    /// Most steps kept (undoable plus redoable).
    pub max_steps: usize,
    /// Most bytes kept, by [`Change::estimated_bytes`]. The newest step is kept even if it alone is
    /// larger.
    pub max_bytes: usize,
}

impl Default for HistoryLimits {
    fn default() -> HistoryLimits {
        HistoryLimits {
            max_steps: 1_000,
            max_bytes: 64 << 20,
        }
    }
}

/// One committed batch.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// The label given at commit, if any.
    pub(crate) label: Option<String>,
    /// The primitive changes, in the order they happened.
    pub(crate) changes: Arc<[Change]>,
    /// The estimate of the bytes this step keeps alive.
    pub(crate) bytes: usize,
    /// Commit sequence number: positions in the order follow from it in O(1).
    seq: u64,
}

/// The list of steps and the position of the present among them.
#[derive(Debug)]
pub(crate) struct History {
    steps: SlotMap<StepId, Step>,
    /// Oldest first.
    order: VecDeque<StepId>,
    /// How many steps of `order` are applied: `order[..applied]` are undoable, the rest redoable.
    applied: usize,
    bytes: usize,
    next_seq: u64,
    limits: HistoryLimits,
}

impl History {
    pub(crate) fn new(limits: HistoryLimits) -> History {
        History {
            steps: SlotMap::with_key(),
            order: VecDeque::new(),
            applied: 0,
            bytes: 0,
            next_seq: 0,
            limits,
        }
    }

    /// Records a new step after the applied ones, dropping the redo branch, then trims.
    pub(crate) fn push(&mut self, label: Option<String>, changes: Arc<[Change]>) -> StepId {
        while self.order.len() > self.applied {
            if let Some(dropped) = self.order.pop_back() {
                self.forget(dropped);
            }
        }
        let bytes = changes.iter().map(Change::estimated_bytes).sum::<usize>()
            + std::mem::size_of::<Step>();
        // Consecutive after the newest kept step, so a dropped redo branch leaves no gap.
        let seq = self
            .order
            .back()
            .map_or(self.next_seq, |&id| self.steps[id].seq + 1);
        self.next_seq = seq + 1;
        let id = self.steps.insert(Step {
            label,
            changes,
            bytes,
            seq,
        });
        self.order.push_back(id);
        self.applied += 1;
        self.bytes += bytes;
        self.trim();
        id
    }

    fn forget(&mut self, id: StepId) {
        if let Some(step) = self.steps.remove(id) {
            self.bytes -= step.bytes;
        }
    }

    /// Drops the oldest steps until both bounds hold; the newest step always stays.
    fn trim(&mut self) {
        while self.order.len() > 1
            && (self.order.len() > self.limits.max_steps || self.bytes > self.limits.max_bytes)
        {
            if let Some(oldest) = self.order.pop_front() {
                self.forget(oldest);
                self.applied = self.applied.saturating_sub(1);
            }
        }
    }

    pub(crate) fn set_limits(&mut self, limits: HistoryLimits) {
        self.limits = limits;
        self.trim();
    }

    pub(crate) fn limits(&self) -> HistoryLimits {
        self.limits
    }

    /// The step that undo would revert.
    pub(crate) fn undoable(&self) -> Option<StepId> {
        self.applied.checked_sub(1).map(|i| self.order[i])
    }

    /// The step that redo would re-apply.
    pub(crate) fn redoable(&self) -> Option<StepId> {
        self.order.get(self.applied).copied()
    }

    pub(crate) fn step(&self, id: StepId) -> Option<&Step> {
        self.steps.get(id)
    }

    pub(crate) fn moved_back(&mut self) {
        self.applied -= 1;
    }

    pub(crate) fn moved_forward(&mut self) {
        self.applied += 1;
    }

    /// The position of a step in the order (steps before `applied` are undoable). Time: O(1): the
    /// order holds consecutive sequence numbers.
    pub(crate) fn position(&self, id: StepId) -> Option<usize> {
        let step = self.steps.get(id)?;
        let first = self.steps[*self.order.front()?].seq;
        usize::try_from(step.seq - first).ok()
    }

    pub(crate) fn applied(&self) -> usize {
        self.applied
    }

    /// The newest applied step with this label.
    pub(crate) fn find_label(&self, label: &str) -> Option<StepId> {
        self.order
            .iter()
            .take(self.applied)
            .rev()
            .copied()
            .find(|&id| self.steps[id].label.as_deref() == Some(label))
    }

    /// Every retained step, oldest first, with whether it is applied.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (StepId, &Step, bool)> + '_ {
        self.order
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, &self.steps[id], i < self.applied))
    }

    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}
