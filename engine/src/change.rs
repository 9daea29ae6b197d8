//! The change log: what a committed batch did, one primitive change at a time.
//!
//! Every op is recorded as primitive changes with canonical paths (array positions as indexes, object
//! keys as keys). A primitive change is exactly invertible: on an object, an absent `old` means the key
//! was created and an absent `new` that it was removed; on an array, they mean an element was inserted
//! or removed (later elements shift). History undoes a step by replaying its changes backwards with
//! `old` and `new` swapped, so undo costs the size of the step, not of the state.

use std::sync::Arc;

use serde::Serialize;

use crate::instruction::Op;
use crate::path::{Path, Segment};
use crate::value::{Key, Probe, Value};

/// One primitive change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// Where, canonical.
    pub path: Path,
    /// The value before, or absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    /// The value after, or absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Value>,
    /// The instruction's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Arc<str>>,
    /// The op of the instruction that made it.
    pub op: Op,
}

impl Change {
    /// A rough count of the heap bytes this change keeps alive in history.
    pub fn estimated_bytes(&self) -> usize {
        const CAP: usize = 1 << 20;
        std::mem::size_of::<Change>()
            + self.path.len() * std::mem::size_of::<Segment>()
            + self
                .path
                .segments()
                .iter()
                .map(|s| match s {
                    // Short keys live inside the segment; only long ones own heap text.
                    Segment::Key(k) if k.is_heap_allocated() => k.len() + 16,
                    _ => 0,
                })
                .sum::<usize>()
            + self.old.as_ref().map_or(0, |v| v.estimated_bytes(CAP))
            + self.new.as_ref().map_or(0, |v| v.estimated_bytes(CAP))
    }
}

/// A change log could not be replayed on this state: it was not made from it. Only reachable with a
/// history rebuilt from a damaged save.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the change at {path} does not fit the state: {problem}")]
pub struct ReplayError {
    /// JSON Pointer of the change.
    pub path: String,
    /// What did not fit.
    pub problem: String,
}

/// Replays `changes` forwards (redo) on `root`, in place. All or nothing: if a change does not fit,
/// the ones already replayed are reverted before the error is returned.
pub fn replay_forward(root: &mut Value, changes: &[Change]) -> Result<(), ReplayError> {
    for (done, change) in changes.iter().enumerate() {
        if let Err(error) = put(root, &change.path, change.old.is_some(), change.new.clone()) {
            // The prefix was just replayed on this very root, so reverting it cannot fail.
            let _ = replay_backward(root, &changes[..done]);
            return Err(error);
        }
    }
    Ok(())
}

/// Replays `changes` backwards (undo) on `root`, in place. All or nothing, like [`replay_forward`].
pub fn replay_backward(root: &mut Value, changes: &[Change]) -> Result<(), ReplayError> {
    for (done, change) in changes.iter().rev().enumerate() {
        if let Err(error) = put(root, &change.path, change.new.is_some(), change.old.clone()) {
            let _ = replay_forward(root, &changes[changes.len() - done..]);
            return Err(error);
        }
    }
    Ok(())
}

/// Makes the slot at `path` hold `value` (or removes it), following the primitive-change rules:
/// `occupied` says whether the slot exists now, which on an array tells a replacement from an insert.
/// Time: O(depth × log n), no copying where `root` is not shared.
fn put(
    root: &mut Value,
    path: &Path,
    occupied: bool,
    value: Option<Value>,
) -> Result<(), ReplayError> {
    let fail = |problem: &str| ReplayError {
        path: path.to_pointer(),
        problem: problem.to_owned(),
    };
    let Some((parents, last)) = path.split_last() else {
        *root = value.ok_or_else(|| fail("the root cannot be removed"))?;
        return Ok(());
    };
    let mut cursor = root;
    for segment in parents {
        cursor = match (cursor, segment) {
            (Value::Object(map), Segment::Key(key)) => map
                .get_mut(key)
                .ok_or_else(|| fail("a parent key is missing"))?,
            (Value::Array(items), Segment::Index(index)) => items
                .get_mut(*index)
                .ok_or_else(|| fail("a parent index is out of range"))?,
            _ => return Err(fail("a parent has the wrong type")),
        };
    }
    match (cursor, last) {
        (Value::Object(map), Segment::Key(key)) => match value {
            // Replacing is one search that writes the slot in place.
            Some(value) => match map.get_mut(&Probe(key)) {
                Some(slot) => *slot = value,
                None => {
                    map.insert(Key::clone(key), value);
                }
            },
            None => {
                map.remove(&Probe(key));
            }
        },
        (Value::Array(items), Segment::Index(index)) => {
            let index = *index;
            match (occupied, value) {
                (true, Some(value)) if index < items.len() => {
                    items.set(index, value);
                }
                (false, Some(value)) if index <= items.len() => items.insert(index, value),
                (true, None) if index < items.len() => {
                    items.remove(index);
                }
                _ => return Err(fail("the index is out of range")),
            }
        }
        _ => return Err(fail("the parent has the wrong type")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path;
    use serde_json::json;

    fn change(path: Path, old: Option<i64>, new: Option<i64>) -> Change {
        Change {
            path,
            old: old.map(Value::from),
            new: new.map(Value::from),
            reason: None,
            op: Op::Assign,
        }
    }

    #[test]
    fn a_replay_that_does_not_fit_changes_nothing() {
        let mut root = Value::from(json!({"a": 1}));
        let changes = [
            change(path!["a"], Some(1), Some(2)),
            change(path!["missing", "x"], None, Some(3)),
        ];
        let error = replay_forward(&mut root, &changes).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the change at /missing/x does not fit the state: a parent key is missing"
        );
        assert_eq!(root, Value::from(json!({"a": 1})));
        let changes = [
            change(path!["missing", "x"], Some(3), None),
            change(path!["a"], Some(0), Some(1)),
        ];
        assert!(replay_backward(&mut root, &changes).is_err());
        assert_eq!(root, Value::from(json!({"a": 1})));
    }
}
