//! What a batch may build: the state's depth and estimated size, kept within [`Limits`] as it runs, and
//! what its commit carries (the old and new values of its changes, counted in full).
//!
//! Instructions are small, but what they build need not be: a JSON Patch `copy` of `/x` into `/x/y`
//! doubles the state in O(1), because the copy shares its parts, while every written form of the
//! state (a state file, a save record, the output) spells each part out. So the store measures what
//! each instruction writes from its primitive changes: a change's `new` value lands at its path, which
//! gives the depth there, and the state's estimated size moves by what the changes put in minus what
//! they took out (the estimate is additive, see [`Value::measure`]). Nothing here walks the state
//! itself, except [`state_bytes`] for a state the store has not measured yet. This module must not run
//! instructions or look at anything but the change log and the limits.

use crate::change::Change;
use crate::error::{BatchError, ErrorKind};
use crate::exec::Failure;
use crate::limits::Limits;
use crate::path::{Segment, pointer_of};
use crate::value::{Value, entry_bytes};

/// The estimated size of a whole state. Time: O(n).
pub(crate) fn state_bytes(state: &Value) -> usize {
    state.estimated_bytes(usize::MAX)
}

/// The estimated size of a state of estimated size `size` once `changes` are replayed on it: what
/// [`check`] keeps, without the limits, for a change log recorded earlier (a step rebuilt from a save).
/// Time: O(size of the values the changes hold).
pub(crate) fn size_after(size: usize, changes: &[Change]) -> usize {
    let mut added = 0usize;
    let mut removed = 0usize;
    for change in changes {
        let key = match change.path.segments().last() {
            Some(Segment::Key(key)) => entry_bytes(key),
            _ => 0,
        };
        if let Some(new) = &change.new {
            added = added.saturating_add(new.estimated_bytes(usize::MAX));
            if change.old.is_none() {
                added = added.saturating_add(key);
            }
        }
        if let Some(old) = &change.old {
            removed = removed.saturating_add(old.estimated_bytes(usize::MAX));
            if change.new.is_none() {
                removed = removed.saturating_add(key);
            }
        }
    }
    size.saturating_add(added).saturating_sub(removed)
}

/// Why a commit carries too much, for [`ErrorKind::CommitTooLarge`].
pub(crate) fn commit_too_large(limits: &Limits) -> String {
    format!(
        "this batch's changes (old and new values) and events would carry more than the {} bytes \
         (estimated) one commit may carry; split it, or change smaller parts",
        limits.max_commit_bytes
    )
}

/// Checks the changes one instruction made against the limits and moves `size` (the state's estimated
/// size before them) to the size after them, and `commit` (what the batch's changes carry so far, old
/// and new values in full) by what these carry. Time: O(size of the values the changes hold), with
/// the walk of what is written stopped at `max_op_bytes`.
pub(crate) fn check(
    changes: &[Change],
    limits: &Limits,
    size: &mut usize,
    commit: &mut usize,
) -> Result<(), Failure> {
    let mut written = 0usize;
    let mut removed = 0usize;
    for change in changes {
        let path = change.path.segments();
        // A key that appears or disappears takes its own bytes with it; array slots have no key.
        let key = match path.last() {
            Some(Segment::Key(key)) => entry_bytes(key),
            _ => 0,
        };
        if let Some(new) = &change.new {
            // One byte past the allowance is enough to know the instruction writes too much.
            let allowance = limits
                .max_op_bytes
                .saturating_sub(written)
                .saturating_add(1);
            let measure = new.measure(allowance);
            written = written.saturating_add(measure.bytes);
            if change.old.is_none() {
                written = written.saturating_add(key);
            }
            if written > limits.max_op_bytes {
                return Err(Failure {
                    kind: ErrorKind::OpTooLarge,
                    path: pointer_of(path),
                    message: format!(
                        "this instruction writes more than the {} bytes (estimated) one instruction may write into the state",
                        limits.max_op_bytes
                    ),
                });
            }
            let depth = path.len() + measure.depth;
            if depth > limits.max_state_depth {
                return Err(Failure {
                    kind: ErrorKind::StateTooDeep,
                    path: pointer_of(path),
                    message: format!(
                        "this would nest the state {depth} levels deep; the limit is {}",
                        limits.max_state_depth
                    ),
                });
            }
        }
        if let Some(old) = &change.old {
            removed = removed.saturating_add(old.estimated_bytes(usize::MAX));
            if change.new.is_none() {
                removed = removed.saturating_add(key);
            }
        }
    }
    // A change log spells out what it removed as well as what it wrote: a `copy` onto a large part
    // records the part it replaced in full, though nothing grew.
    let carried = commit.saturating_add(written).saturating_add(removed);
    if carried > limits.max_commit_bytes {
        return Err(Failure {
            kind: ErrorKind::CommitTooLarge,
            path: changes
                .first()
                .map(|c| c.path.to_pointer())
                .unwrap_or_default(),
            message: commit_too_large(limits),
        });
    }
    *commit = carried;
    let after = size.saturating_add(written).saturating_sub(removed);
    if after > limits.max_state_bytes && after > *size {
        let at = changes
            .first()
            .map(|c| c.path.to_pointer())
            .unwrap_or_default();
        return Err(Failure {
            kind: ErrorKind::StateTooLarge,
            path: at,
            message: format!(
                "this would grow the state to {after} bytes (estimated); the limit is {}",
                limits.max_state_bytes
            ),
        });
    }
    *size = after;
    Ok(())
}

impl Limits {
    /// Checks a whole state against the limits on what a batch may build, for a state that is about to
    /// become a new game's starting point: every problem, as whole-batch errors. A store itself accepts
    /// any state it is given, so that nothing already saved ever becomes unreadable; a new save must
    /// not start from a state its readers would refuse. Time: O(n).
    pub fn check_state(&self, state: &Value) -> Vec<BatchError> {
        let mut errors = Vec::new();
        let measure = state.measure(usize::MAX);
        if measure.depth > self.max_state_depth {
            errors.push(BatchError::whole_batch(
                ErrorKind::StateTooDeep,
                Some(String::new()),
                format!(
                    "the state nests {} levels deep; the limit is {}",
                    measure.depth, self.max_state_depth
                ),
            ));
        }
        if measure.bytes > self.max_state_bytes {
            errors.push(BatchError::whole_batch(
                ErrorKind::StateTooLarge,
                Some(String::new()),
                format!(
                    "the state holds {} bytes (estimated); the limit is {}",
                    measure.bytes, self.max_state_bytes
                ),
            ));
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec;
    use crate::instruction::Batch;
    use crate::limits::Policies;
    use serde_json::json;

    /// The size kept from the change log is exactly the size measured afresh, op after op, for every
    /// kind of change: keys created and removed, array slots inserted and removed, values replaced,
    /// parents created, the root replaced.
    #[test]
    fn the_size_kept_from_changes_is_the_size_measured() {
        let mut root = Value::from(json!({"a": {"b": [1, 2, 3]}, "n": null, "text": "hello"}));
        let steps = [
            json!({"op": "assign", "path": ["a", "c"], "value": {"deep": ["x", "y"]}}),
            json!({"op": "assign", "path": ["n", "created", 0, "k"], "value": "a long enough key value"}),
            json!({"op": "assign", "path": ["a long key that is not stored inline"], "value": 1}),
            json!({"op": "delete", "path": ["a long key that is not stored inline"]}),
            json!({"op": "merge", "path": ["a"], "value": {"c": {"more": 1}, "d": [true]}}),
            json!({"op": "merge", "path": [], "value": {"top": {"x": 1}}}),
            json!({"op": "push", "path": ["a", "b"], "value": {"pushed": 1}}),
            json!({"op": "push", "path": ["fresh"], "value": 1}),
            json!({"op": "pop", "path": ["a", "b"]}),
            json!({"op": "splice", "path": ["a", "b"], "value": {"start": 1, "deleteCount": 1, "items": ["s", "t"]}}),
            json!({"op": "increment", "path": ["top", "x"], "value": 2.5}),
            json!({"op": "delete", "path": ["a", "b", 0]}),
            json!([{"op": "copy", "from": "/a", "path": "/copied"}]),
            json!([{"op": "move", "from": "/copied/c", "path": "/moved"}]),
            json!([{"op": "add", "path": "/a/b/0", "value": "inserted"}]),
            json!([{"op": "replace", "path": "/text", "value": {"now": "an object"}}]),
            json!([{"op": "remove", "path": "/a"}]),
            json!([{"op": "replace", "path": "", "value": {"all": ["new"]}}]),
        ];
        let limits = Limits::default();
        let mut size = state_bytes(&root);
        let mut commit = 0;
        for step in steps {
            let batch = Batch::from_json(&step).unwrap();
            for instruction in &batch.instructions {
                let mut changes = Vec::new();
                exec::run(&mut root, instruction, &Policies::default(), &mut changes).unwrap();
                check(&changes, &limits, &mut size, &mut commit).unwrap();
                assert_eq!(size, state_bytes(&root), "after {step}");
            }
        }
    }
}
