//! Running one instruction on a working root, recording primitive changes.
//!
//! The batch runner hands this module the state a batch writes, in place, and undoes a failure by
//! replaying the change log backwards (`run.rs`), so a failing instruction may leave the state
//! half-changed but never with a write the log does not hold: each op appends every primitive change
//! to the log as it makes it, in the order they happen, before anything that can fail comes after it.
//! Each op returns its result value. Callbacks are not run here: the runner dispatches them. This
//! module must not validate shapes that validation already checked beyond what it needs to avoid
//! panics.

use std::sync::Arc;

use crate::number::Number;

use crate::change::Change;
use crate::error::ErrorKind;
use crate::instruction::{Instruction, Op};
use crate::limits::{MissingParent, MissingTarget, OldMismatch, Policies};
use crate::path::{Path, Segment, pointer_of};
use crate::value::{Key, Probe, Value, is_integer};

/// Why an instruction could not run: a kind, the state pointer of the failing segment, and a message.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) kind: ErrorKind,
    pub(crate) path: String,
    pub(crate) message: String,
}

fn failure(kind: ErrorKind, segments: &[Segment], message: impl Into<String>) -> Failure {
    Failure {
        kind,
        path: pointer_of(segments),
        message: message.into(),
    }
}

/// The most bytes of a value's JSON a message quotes.
const QUOTED_BYTES: usize = 200;

/// A value's JSON for a message, cut after [`QUOTED_BYTES`] with `…`: a mismatch on a large part of the
/// state must not copy that part into the message (and so into every answer and warning that carries
/// it). Time: O(QUOTED_BYTES), whatever the value's size, since writing stops once the cut is reached.
pub(crate) fn brief(value: &Value) -> String {
    struct Capped(Vec<u8>);
    impl std::io::Write for Capped {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = (QUOTED_BYTES + 1).saturating_sub(self.0.len());
            if room == 0 {
                return Err(std::io::Error::other("enough for a message"));
            }
            let take = buf.len().min(room);
            self.0.extend_from_slice(&buf[..take]);
            Ok(take)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Capped(Vec::new());
    let _ = serde_json::to_writer(&mut out, value);
    let bytes = &out.0[..out.0.len().min(QUOTED_BYTES)];
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        // The cut fell inside a character: keep what precedes it.
        Err(error) => std::str::from_utf8(&bytes[..error.valid_up_to()]).unwrap_or_default(),
    };
    if out.0.len() > QUOTED_BYTES {
        format!("{text}…")
    } else {
        text.to_owned()
    }
}

/// What running an instruction produced besides changes: its result and warnings.
#[derive(Debug, Default)]
pub(crate) struct Output {
    /// The op's result (docs/instructions.md "returns"), `None` for absent.
    pub(crate) result: Option<Value>,
    /// Soft problems that policies turned into warnings (an old mismatch under `warn`, a skipped target).
    pub(crate) warnings: Vec<Failure>,
}

/// Runs a non-callback instruction on `root`.
pub(crate) fn run(
    root: &mut Value,
    instruction: &Instruction,
    policies: &Policies,
    log: &mut Vec<Change>,
) -> Result<Output, Failure> {
    let mut ran = Output::default();
    let mut recorder = Recorder {
        log,
        reason: instruction.reason.as_deref().map(Arc::from),
        op: instruction.op,
    };
    let segments = instruction.path.segments();
    if let Some(old) = &instruction.old {
        let current = lookup(root, segments)?;
        let current = current.unwrap_or(&Value::Null);
        if current != old {
            let mismatch = failure(
                ErrorKind::OldMismatch,
                segments,
                format!(
                    "expected old value {}, found {}",
                    brief(old),
                    brief(current)
                ),
            );
            match policies.old_mismatch {
                OldMismatch::Reject => return Err(mismatch),
                OldMismatch::Warn => ran.warnings.push(mismatch),
                OldMismatch::Ignore => {}
            }
        }
    }
    let value = || instruction.value.clone().unwrap_or_default();
    let outcome = match instruction.op {
        Op::Get => Ok(lookup(root, segments)?.cloned()),
        Op::Assign => assign(root, segments, value(), policies, &mut recorder),
        Op::Delete => delete(root, segments, &mut recorder),
        Op::Merge => merge(root, segments, value(), policies, &mut recorder),
        Op::Push => push(root, segments, value(), policies, &mut recorder),
        Op::Pop => pop(root, segments, &mut recorder),
        Op::Splice => splice(root, segments, instruction.value.as_ref(), &mut recorder),
        Op::Increment => increment(root, segments, instruction.value.as_ref(), &mut recorder),
        Op::Add => rfc_add(root, segments, value(), &mut recorder),
        Op::Remove => rfc_remove(root, segments, &mut recorder).map(Some),
        Op::Replace => rfc_replace(root, segments, value(), &mut recorder).map(Some),
        Op::Move | Op::Copy => rfc_move_or_copy(root, instruction, &mut recorder),
        Op::Test => rfc_test(root, segments, instruction.value.as_ref()),
        Op::Callback => Err(failure(
            ErrorKind::CallbackFailed,
            segments,
            "callbacks are dispatched by the store",
        )),
    };
    match outcome {
        Ok(result) => {
            ran.result = result;
            Ok(ran)
        }
        Err(missing)
            if missing.kind == ErrorKind::MissingTarget
                && policies.missing_target == MissingTarget::Skip =>
        {
            ran.warnings.push(missing);
            Ok(ran)
        }
        Err(failure) => Err(failure),
    }
}

struct Recorder<'a> {
    log: &'a mut Vec<Change>,
    reason: Option<Arc<str>>,
    op: Op,
}

impl Recorder<'_> {
    fn record(&mut self, path: Path, old: Option<Value>, new: Option<Value>) {
        self.log.push(Change {
            path,
            old,
            new,
            reason: self.reason.clone(),
            op: self.op,
        });
    }
}

/// Reads the value at `segments`; absent is `Ok(None)`, a path through a scalar is an error.
/// Time: O(depth × log n).
pub(crate) fn lookup<'v>(
    root: &'v Value,
    segments: &[Segment],
) -> Result<Option<&'v Value>, Failure> {
    let mut cursor = root;
    for (depth, segment) in segments.iter().enumerate() {
        let child = match cursor {
            Value::Object(map) => map.get(&Probe(&key_str(segment))),
            Value::Array(items) => match segment.as_index() {
                Some(index) => items.get(index),
                None => return Err(not_an_index(&segments[..=depth], segment)),
            },
            Value::Null => None,
            other => return Err(through_scalar(&segments[..=depth], other)),
        };
        match child {
            Some(child) => cursor = child,
            None => return Ok(None),
        }
    }
    Ok(Some(cursor))
}

/// The object key a segment names, borrowed where possible: lookups must not touch reference counts.
fn key_str(segment: &Segment) -> std::borrow::Cow<'_, str> {
    match segment {
        Segment::Key(key) => std::borrow::Cow::Borrowed(key),
        Segment::Index(index) => std::borrow::Cow::Owned(index.to_string()),
    }
}

/// The object key a segment names: an integer on an object is its decimal key, as in lodash.
fn key_of(segment: &Segment) -> Key {
    match segment {
        Segment::Key(key) => Key::clone(key),
        Segment::Index(index) => Key::from(index.to_string()),
    }
}

fn not_an_index(at: &[Segment], segment: &Segment) -> Failure {
    failure(
        ErrorKind::TypeMismatch,
        at,
        format!(
            "found an array, which has no key {segment:?}; array segments are indexes like 0 or \"0\""
        ),
    )
}

/// The op needs another type than the one found: "push needs an array, found a string".
fn wrong_type(at: &[Segment], needs: &str, found: &Value) -> Failure {
    failure(
        ErrorKind::TypeMismatch,
        at,
        format!("{needs}, found {}", found.value_type()),
    )
}

fn cannot_merge_into(at: &[Segment], found: &Value) -> Failure {
    failure(
        ErrorKind::TypeMismatch,
        at,
        format!("cannot merge an object into {}", found.value_type()),
    )
}

fn through_scalar(at: &[Segment], found: &Value) -> Failure {
    let parent = &at[..at.len() - 1];
    failure(
        ErrorKind::TypeMismatch,
        parent,
        format!(
            "the path continues through {}, which has no members",
            found.value_type()
        ),
    )
}

/// The canonical segment for a slot in `container`: indexes on arrays, keys on objects.
fn canonical(container: &Value, segment: &Segment) -> Segment {
    match container {
        Value::Array(_) => segment
            .as_index()
            .map_or_else(|| segment.clone(), Segment::Index),
        _ => Segment::Key(key_of(segment)),
    }
}

/// Runs `then` on the container that holds the last segment, with the canonical path of the slot,
/// creating missing (or `null`) parents first when the policy allows: an integer segment creates an
/// array, a string segment an object. Most writes go where every parent exists, and find it with one
/// search a level; only a missing parent takes the walk that looks before it writes. (The parent is
/// handed to a closure, not returned: a reference returned from the first walk would keep the state
/// borrowed for the second.)
fn with_parent<R>(
    root: &mut Value,
    segments: &[Segment],
    create: Option<MissingParent>,
    recorder: &mut Recorder<'_>,
    then: impl FnOnce(&mut Value, Path, &mut Recorder<'_>) -> Result<R, Failure>,
) -> Result<R, Failure> {
    if let Some((parent, path)) = existing_parent(root, segments) {
        return then(parent, path, recorder);
    }
    let (parent, path) = parent_mut(root, segments, create, recorder)?;
    then(parent, path, recorder)
}

/// The container that holds the last segment and the canonical path of the slot, when every parent
/// on the way exists and is not `null`; `None` otherwise, for [`parent_mut`] to create or report.
fn existing_parent<'v>(root: &'v mut Value, segments: &[Segment]) -> Option<(&'v mut Value, Path)> {
    let (last, parents) = segments
        .split_last()
        .expect("callers pass a non-empty path");
    let mut canonical_path = Path::from(Vec::with_capacity(segments.len()));
    let mut cursor = root;
    for segment in parents {
        canonical_path.push(canonical(cursor, segment));
        let child = match cursor {
            Value::Object(map) => map.get_mut(&Probe(&key_str(segment)))?,
            Value::Array(items) => items.get_mut(segment.as_index()?)?,
            _ => return None,
        };
        if matches!(child, Value::Null) {
            return None;
        }
        cursor = child;
    }
    canonical_path.push(canonical(cursor, last));
    Some((cursor, canonical_path))
}

/// Walks to the container that holds the last segment, creating missing (or `null`) parents when the
/// policy allows, as [`with_parent`] says. Returns the parent and the canonical path of the slot.
fn parent_mut<'v>(
    root: &'v mut Value,
    segments: &[Segment],
    create: Option<MissingParent>,
    recorder: &mut Recorder<'_>,
) -> Result<(&'v mut Value, Path), Failure> {
    let (_, parents) = segments
        .split_last()
        .expect("callers pass a non-empty path");
    let mut canonical_path = Path::from(Vec::with_capacity(segments.len()));
    let mut cursor = root;
    for (depth, segment) in parents.iter().enumerate() {
        let next_is_index = matches!(segments[depth + 1], Segment::Index(_));
        let fresh = || {
            if next_is_index {
                Value::Array(Default::default())
            } else {
                Value::object()
            }
        };
        let slot = canonical(cursor, segment);
        canonical_path.push(slot.clone());
        let creating = create == Some(MissingParent::Create);
        cursor = match cursor {
            Value::Object(map) => {
                let key = key_str(segment);
                let needs = map
                    .get(&Probe(&key))
                    .is_none_or(|child| matches!(child, Value::Null));
                if needs {
                    if !creating {
                        return Err(missing_parent(&segments[..=depth], create));
                    }
                    let old = map.insert(key_of(segment), fresh());
                    recorder.record(canonical_path.clone(), old, Some(fresh()));
                }
                map.get_mut(&Probe(&key)).expect("present or just inserted")
            }
            Value::Array(items) => {
                let Some(index) = segment.as_index() else {
                    return Err(not_an_index(&segments[..=depth], segment));
                };
                let len = items.len();
                if index > len || (index == len && !creating) {
                    return Err(if index == len {
                        missing_parent(&segments[..=depth], create)
                    } else {
                        out_of_range(&segments[..=depth], index, len)
                    });
                }
                if index == len {
                    items.push_back(fresh());
                    recorder.record(canonical_path.clone(), None, Some(fresh()));
                } else if matches!(items[index], Value::Null) {
                    if !creating {
                        return Err(missing_parent(&segments[..=depth], create));
                    }
                    items.set(index, fresh());
                    recorder.record(canonical_path.clone(), Some(Value::Null), Some(fresh()));
                }
                items.get_mut(index).expect("in range")
            }
            other => return Err(through_scalar(&segments[..=depth], other)),
        };
    }
    let last = canonical(cursor, &segments[segments.len() - 1]);
    canonical_path.push(last);
    Ok((cursor, canonical_path))
}

fn missing_parent(at: &[Segment], create: Option<MissingParent>) -> Failure {
    match create {
        Some(MissingParent::Reject) => failure(
            ErrorKind::MissingParent,
            at,
            "this parent does not exist and the missing_parent policy is reject",
        ),
        _ => failure(ErrorKind::MissingTarget, at, "nothing exists at this path"),
    }
}

fn out_of_range(at: &[Segment], index: usize, len: usize) -> Failure {
    failure(
        ErrorKind::IndexOutOfRange,
        at,
        format!("index {index} is past the end of an array of length {len} (arrays have no holes)"),
    )
}

fn assign(
    root: &mut Value,
    segments: &[Segment],
    value: Value,
    policies: &Policies,
    recorder: &mut Recorder<'_>,
) -> Result<Option<Value>, Failure> {
    let create = Some(policies.missing_parent);
    with_parent(
        root,
        segments,
        create,
        recorder,
        |parent, path, recorder| {
            let old = set_slot(parent, segments, value.clone(), false)?;
            recorder.record(path, old.clone(), Some(value));
            Ok(old)
        },
    )
}

/// Puts `value` in the last segment's slot of `parent`: replaces an existing key or element, appends
/// at index == length, and with `insert` shifts array elements (RFC 6902 `add`). Returns the previous
/// value at that slot when it was replaced.
fn set_slot(
    parent: &mut Value,
    segments: &[Segment],
    value: Value,
    insert: bool,
) -> Result<Option<Value>, Failure> {
    let last = &segments[segments.len() - 1];
    match parent {
        // Replacing is one search that writes the slot in place; only a new key is inserted.
        Value::Object(map) => match map.get_mut(&Probe(&key_str(last))) {
            Some(slot) => Ok(Some(std::mem::replace(slot, value))),
            None => Ok(map.insert(key_of(last), value)),
        },
        Value::Array(items) => {
            let Some(index) = last.as_index() else {
                return Err(not_an_index(segments, last));
            };
            let len = items.len();
            if index > len {
                return Err(out_of_range(segments, index, len));
            }
            if index == len || insert {
                items.insert(index, value);
                Ok(None)
            } else {
                Ok(Some(items.set(index, value)))
            }
        }
        other => Err(through_scalar(segments, other)),
    }
}

fn delete(
    root: &mut Value,
    segments: &[Segment],
    recorder: &mut Recorder<'_>,
) -> Result<Option<Value>, Failure> {
    with_parent(root, segments, None, recorder, |parent, path, recorder| {
        let removed = remove_slot(parent, segments)?;
        recorder.record(path, Some(removed.clone()), None);
        Ok(Some(removed))
    })
}

/// Removes the last segment's slot from `parent`; absent is `MissingTarget`.
fn remove_slot(parent: &mut Value, segments: &[Segment]) -> Result<Value, Failure> {
    let last = &segments[segments.len() - 1];
    let missing = || {
        failure(
            ErrorKind::MissingTarget,
            segments,
            "nothing exists at this path",
        )
    };
    match parent {
        Value::Object(map) => map.remove(&Probe(&key_str(last))).ok_or_else(missing),
        Value::Array(items) => match last.as_index() {
            Some(index) if index < items.len() => Ok(items.remove(index)),
            Some(_) => Err(missing()),
            None => Err(not_an_index(segments, last)),
        },
        Value::Null => Err(missing()),
        other => Err(through_scalar(segments, other)),
    }
}

fn merge(
    root: &mut Value,
    segments: &[Segment],
    value: Value,
    policies: &Policies,
    recorder: &mut Recorder<'_>,
) -> Result<Option<Value>, Failure> {
    let Value::Object(patch) = value else {
        return Err(failure(
            ErrorKind::TypeMismatch,
            segments,
            "merge needs an object value",
        ));
    };
    if segments.is_empty() {
        let previous = root.clone();
        return match root {
            Value::Object(_) => {
                merge_into(root, Path::root(), patch, recorder);
                Ok(Some(previous))
            }
            other => Err(cannot_merge_into(segments, other)),
        };
    }
    let create = Some(policies.missing_parent);
    with_parent(
        root,
        segments,
        create,
        recorder,
        |parent, path, recorder| match slot_mut(parent, segments)?.cloned() {
            None | Some(Value::Null) => {
                let new = Value::Object(patch);
                let old = set_slot(parent, segments, new.clone(), false)?;
                recorder.record(path, old.clone(), Some(new));
                Ok(old)
            }
            Some(previous @ Value::Object(_)) => {
                if let Some(slot) = slot_mut(parent, segments)? {
                    merge_into(slot, path, patch, recorder);
                }
                Ok(Some(previous))
            }
            Some(other) => Err(cannot_merge_into(segments, &other)),
        },
    )
}

/// The existing child of `parent` at the last segment, if any.
fn slot_mut<'v>(
    parent: &'v mut Value,
    segments: &[Segment],
) -> Result<Option<&'v mut Value>, Failure> {
    let last = &segments[segments.len() - 1];
    match parent {
        Value::Object(map) => Ok(map.get_mut(&Probe(&key_str(last)))),
        Value::Array(items) => match last.as_index() {
            Some(index) => Ok(items.get_mut(index)),
            None => Err(not_an_index(segments, last)),
        },
        other => Err(through_scalar(segments, other)),
    }
}

/// Deep-merges `patch` into the object `target`, whose canonical path is `base`: objects merge key by
/// key, anything else replaces. Iterative so that a deep patch cannot exhaust the stack.
fn merge_into(
    target: &mut Value,
    base: Path,
    patch: crate::value::Object,
    recorder: &mut Recorder<'_>,
) {
    let mut work: Vec<(Vec<Segment>, crate::value::Object)> = vec![(Vec::new(), patch)];
    while let Some((relative, patch)) = work.pop() {
        // Re-walk from the target each time: a borrow of one level cannot outlive the loop.
        let Some(Value::Object(map)) = walk_mut(target, &relative) else {
            continue;
        };
        let mut nested = Vec::new();
        for (key, incoming) in patch {
            let mut child = relative.clone();
            child.push(Segment::Key(Key::clone(&key)));
            match (map.get(&key), incoming) {
                (Some(Value::Object(_)), Value::Object(inner)) => nested.push((child, inner)),
                (_, incoming) => {
                    let old = map.insert(key, incoming.clone());
                    let path = base.segments().iter().cloned().chain(child).collect();
                    recorder.record(path, old, Some(incoming));
                }
            }
        }
        // Merge nested objects in key order: the last pushed is taken first.
        work.extend(nested.into_iter().rev());
    }
}

fn walk_mut<'v>(root: &'v mut Value, segments: &[Segment]) -> Option<&'v mut Value> {
    let mut cursor = root;
    for segment in segments {
        cursor = match cursor {
            Value::Object(map) => map.get_mut(&Probe(&key_str(segment)))?,
            Value::Array(items) => items.get_mut(segment.as_index()?)?,
            _ => return None,
        };
    }
    Some(cursor)
}

fn push(
    root: &mut Value,
    segments: &[Segment],
    value: Value,
    policies: &Policies,
    recorder: &mut Recorder<'_>,
) -> Result<Option<Value>, Failure> {
    let create = Some(policies.missing_parent);
    with_parent(
        root,
        segments,
        create,
        recorder,
        |parent, path, recorder| match slot_mut(parent, segments)? {
            None | Some(Value::Null) => {
                let new = Value::Array(std::iter::once(value).collect());
                let old = set_slot(parent, segments, new.clone(), false)?;
                recorder.record(path, old, Some(new));
                Ok(Some(Value::from(1)))
            }
            Some(Value::Array(items)) => {
                let index = items.len();
                items.push_back(value.clone());
                recorder.record(path.child(Segment::Index(index)), None, Some(value));
                Ok(Some(Value::Number(Number::from(index + 1))))
            }
            Some(other) => Err(wrong_type(segments, "push needs an array", other)),
        },
    )
}

/// Runs `then` on the existing array at `segments`, with its canonical path.
fn with_array<R>(
    root: &mut Value,
    segments: &[Segment],
    op: Op,
    recorder: &mut Recorder<'_>,
    then: impl FnOnce(&mut crate::value::Array, Path, &mut Recorder<'_>) -> Result<R, Failure>,
) -> Result<R, Failure> {
    with_parent(
        root,
        segments,
        None,
        recorder,
        |parent, path, recorder| match slot_mut(parent, segments)? {
            Some(Value::Array(items)) => then(items, path, recorder),
            None | Some(Value::Null) => Err(failure(
                ErrorKind::MissingTarget,
                segments,
                "nothing exists at this path",
            )),
            Some(other) => Err(wrong_type(segments, &format!("{op} needs an array"), other)),
        },
    )
}

fn pop(
    root: &mut Value,
    segments: &[Segment],
    recorder: &mut Recorder<'_>,
) -> Result<Option<Value>, Failure> {
    with_array(
        root,
        segments,
        Op::Pop,
        recorder,
        |items, path, recorder| {
            let Some(last) = items.pop_back() else {
                return Err(failure(
                    ErrorKind::MissingTarget,
                    segments,
                    "the array is empty",
                ));
            };
            let index = items.len();
            recorder.record(path.child(Segment::Index(index)), Some(last.clone()), None);
            Ok(Some(last))
        },
    )
}

/// The arguments of `splice`, checked by validation.
pub(crate) struct SpliceArgs {
    pub(crate) start: i64,
    pub(crate) delete_count: Option<i64>,
    pub(crate) items: Vec<Value>,
}

/// Reads `{start, deleteCount?, items?}`; the message says what is wrong.
pub(crate) fn splice_args(value: Option<&Value>) -> Result<SpliceArgs, String> {
    let Some(Value::Object(map)) = value else {
        return Err(
            "splice needs a value like {\"start\": 0, \"deleteCount\": 1, \"items\": []}".into(),
        );
    };
    let integer = |name: &str| -> Result<Option<i64>, String> {
        let out_of_range = |n: &Number| {
            format!(
                "splice \"{name}\" is out of range: {n} is not between {} and {}",
                i64::MIN,
                i64::MAX
            )
        };
        match map.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) => Ok(Some(i)),
                None if is_integer(n) => Err(out_of_range(n)),
                None => match n.as_f64() {
                    // A float with no fraction is the integer it spells (`2.0`, `1e3`).
                    Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
                    Some(f) if f.fract() == 0.0 => Err(out_of_range(n)),
                    _ => Err(format!("splice \"{name}\" must be an integer, not {n}")),
                },
            },
            Some(other) => Err(format!(
                "splice \"{name}\" must be an integer, not {}",
                other.value_type()
            )),
        }
    };
    for key in map.keys() {
        if !matches!(&**key, "start" | "deleteCount" | "items") {
            return Err(format!(
                "splice takes start, deleteCount and items, not \"{key}\""
            ));
        }
    }
    let start = integer("start")?.ok_or("splice needs \"start\"")?;
    let delete_count = integer("deleteCount")?;
    let items = match map.get("items") {
        None => Vec::new(),
        Some(Value::Array(items)) => items.iter().cloned().collect(),
        Some(other) => {
            return Err(format!(
                "splice \"items\" must be an array, not {}",
                other.value_type()
            ));
        }
    };
    Ok(SpliceArgs {
        start,
        delete_count,
        items,
    })
}

fn splice(
    root: &mut Value,
    segments: &[Segment],
    value: Option<&Value>,
    recorder: &mut Recorder<'_>,
) -> Result<Option<Value>, Failure> {
    let args = splice_args(value)
        .map_err(|message| failure(ErrorKind::InvalidField, segments, message))?;
    with_array(
        root,
        segments,
        Op::Splice,
        recorder,
        |items, path, recorder| {
            // JavaScript semantics: a negative start counts from the end; both ends clamp.
            let len = items.len() as i64;
            let start = if args.start < 0 {
                (len + args.start).max(0)
            } else {
                args.start.min(len)
            };
            let delete_count = args
                .delete_count
                .map_or(len - start, |count| count.clamp(0, len - start));
            let start = start as usize;
            let mut removed = crate::value::Array::new();
            for _ in 0..delete_count {
                let gone = items.remove(start);
                recorder.record(path.child(Segment::Index(start)), Some(gone.clone()), None);
                removed.push_back(gone);
            }
            for (offset, item) in args.items.into_iter().enumerate() {
                items.insert(start + offset, item.clone());
                recorder.record(path.child(Segment::Index(start + offset)), None, Some(item));
            }
            Ok(Some(Value::Array(removed)))
        },
    )
}

fn increment(
    root: &mut Value,
    segments: &[Segment],
    delta: Option<&Value>,
    recorder: &mut Recorder<'_>,
) -> Result<Option<Value>, Failure> {
    let Some(Value::Number(delta)) = delta else {
        return Err(failure(
            ErrorKind::InvalidField,
            segments,
            "increment needs a number value",
        ));
    };
    with_parent(root, segments, None, recorder, |parent, path, recorder| {
        let current = match slot_mut(parent, segments)? {
            Some(Value::Number(n)) => n.clone(),
            None => {
                return Err(failure(
                    ErrorKind::MissingTarget,
                    segments,
                    "nothing exists at this path to increment",
                ));
            }
            Some(other) => return Err(wrong_type(segments, "increment needs a number", other)),
        };
        let sum = add_numbers(&current, delta).ok_or_else(|| {
            failure(
                ErrorKind::Overflow,
                segments,
                format!("{current} + {delta} overflows"),
            )
        })?;
        let new = Value::Number(sum);
        set_slot(parent, segments, new.clone(), false)?;
        recorder.record(path, Some(Value::Number(current)), Some(new.clone()));
        Ok(Some(new))
    })
}

/// Integer + integer stays an integer within 64 bits (beyond, at any size, is `None`: an overflow,
/// never a rounded float); otherwise a finite float.
fn add_numbers(a: &Number, b: &Number) -> Option<Number> {
    if is_integer(a) && is_integer(b) {
        let sum = a.as_i128()?.checked_add(b.as_i128()?)?;
        return i64::try_from(sum)
            .map(Number::from)
            .or_else(|_| u64::try_from(sum).map(Number::from))
            .ok();
    }
    let sum = a.as_f64()? + b.as_f64()?;
    Number::from_f64(sum)
}

// RFC 6902 semantics: parents must exist, `add` inserts into arrays, "-" appends, `replace` and
// `remove` need an existing target.

/// Runs `then` on the parent of the slot at `segments`, which must exist (RFC 6902 creates none).
fn with_rfc_slot<R>(
    root: &mut Value,
    segments: &[Segment],
    recorder: &mut Recorder<'_>,
    then: impl FnOnce(&mut Value, Path, &mut Recorder<'_>) -> Result<R, Failure>,
) -> Result<R, Failure> {
    if let Some((parent, path)) = existing_parent(root, segments) {
        return then(parent, path, recorder);
    }
    let (parent, path) = parent_mut(root, segments, None, recorder).map_err(|mut failure| {
        if failure.kind == ErrorKind::MissingTarget {
            failure.message = "the parent of this location does not exist".into();
        }
        failure
    })?;
    then(parent, path, recorder)
}

/// Reads a JSON Pointer array token strictly: `-` means the end only where `allow_end` is set.
fn rfc_index(segments: &[Segment], len: usize, allow_end: bool) -> Result<usize, Failure> {
    let last = &segments[segments.len() - 1];
    match last {
        Segment::Key(key) if allow_end && &**key == "-" => Ok(len),
        other => match other.as_index() {
            Some(index) => Ok(index),
            None => Err(failure(
                ErrorKind::InvalidPath,
                segments,
                format!("{other:?} is not an array index (a decimal number without leading zeros)"),
            )),
        },
    }
}

fn rfc_add(
    root: &mut Value,
    segments: &[Segment],
    value: Value,
    recorder: &mut Recorder<'_>,
) -> Result<Option<Value>, Failure> {
    if segments.is_empty() {
        let old = std::mem::replace(root, value.clone());
        recorder.record(Path::root(), Some(old.clone()), Some(value));
        return Ok(Some(old));
    }
    with_rfc_slot(
        root,
        segments,
        recorder,
        |parent, path, recorder| match parent {
            Value::Array(items) => {
                let index = rfc_index(segments, items.len(), true)?;
                if index > items.len() {
                    return Err(out_of_range(segments, index, items.len()));
                }
                items.insert(index, value.clone());
                let mut canonical: Vec<Segment> = path.segments().to_vec();
                *canonical.last_mut().expect("non-empty") = Segment::Index(index);
                recorder.record(Path::from(canonical), None, Some(value));
                Ok(None)
            }
            parent => {
                let old = set_slot(parent, segments, value.clone(), false)?;
                recorder.record(path, old.clone(), Some(value));
                Ok(old)
            }
        },
    )
}

fn rfc_remove(
    root: &mut Value,
    segments: &[Segment],
    recorder: &mut Recorder<'_>,
) -> Result<Value, Failure> {
    if segments.is_empty() {
        return Err(failure(
            ErrorKind::EmptyPath,
            segments,
            "the whole document cannot be removed",
        ));
    }
    with_rfc_slot(root, segments, recorder, |parent, path, recorder| {
        if let Value::Array(items) = parent {
            let index = rfc_index(segments, items.len(), false)?;
            if index >= items.len() {
                return Err(failure(
                    ErrorKind::MissingTarget,
                    segments,
                    "nothing exists at this path",
                ));
            }
        }
        let removed = remove_slot(parent, segments)?;
        recorder.record(path, Some(removed.clone()), None);
        Ok(removed)
    })
}

fn rfc_replace(
    root: &mut Value,
    segments: &[Segment],
    value: Value,
    recorder: &mut Recorder<'_>,
) -> Result<Value, Failure> {
    if segments.is_empty() {
        let old = std::mem::replace(root, value.clone());
        recorder.record(Path::root(), Some(old.clone()), Some(value));
        return Ok(old);
    }
    with_rfc_slot(root, segments, recorder, |parent, path, recorder| {
        if let Value::Array(items) = parent {
            rfc_index(segments, items.len(), false)?;
        }
        if slot_mut(parent, segments)?.is_none() {
            return Err(failure(
                ErrorKind::MissingTarget,
                segments,
                "nothing exists at this path to replace",
            ));
        }
        let old = set_slot(parent, segments, value.clone(), false)?.expect("checked present");
        recorder.record(path, Some(old.clone()), Some(value));
        Ok(old)
    })
}

fn rfc_move_or_copy(
    root: &mut Value,
    instruction: &Instruction,
    recorder: &mut Recorder<'_>,
) -> Result<Option<Value>, Failure> {
    let from = instruction
        .from
        .as_ref()
        .map(Path::segments)
        .unwrap_or_default();
    let to = instruction.path.segments();
    let value = match lookup(root, from)? {
        Some(value) => value.clone(),
        None => {
            return Err(failure(
                ErrorKind::MissingTarget,
                from,
                "nothing exists at \"from\"",
            ));
        }
    };
    if instruction.op == Op::Move {
        if from == to {
            return Ok(None);
        }
        if to.len() > from.len() && to.starts_with(from) {
            return Err(failure(
                ErrorKind::InvalidPath,
                to,
                "a value cannot be moved into one of its own children",
            ));
        }
        rfc_remove(root, from, recorder)?;
    }
    rfc_add(root, to, value, recorder)
}

fn rfc_test(
    root: &Value,
    segments: &[Segment],
    expected: Option<&Value>,
) -> Result<Option<Value>, Failure> {
    let found = lookup(root, segments)?;
    let expected = expected.unwrap_or(&Value::Null);
    match found {
        Some(found) if found == expected => Ok(None),
        Some(found) => Err(failure(
            ErrorKind::TestFailed,
            segments,
            format!("test expected {}, found {}", brief(expected), brief(found)),
        )),
        None => Err(failure(
            ErrorKind::TestFailed,
            segments,
            format!("test expected {}, found nothing", brief(expected)),
        )),
    }
}
