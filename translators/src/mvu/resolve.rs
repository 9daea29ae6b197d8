//! Deciding what an MVU command does: which instruction ops, at which paths (docs/mvu.md).
//!
//! `set` is an `assign` (with `old` when given) and `add` an `increment`. `insert`/`assign` and
//! `remove`/`unset`/`delete` depend on the target's type in MVU; with a state they resolve exactly as
//! MVU would, without one they are guessed from arity and literal types and a diagnostic says so. This
//! module owns those rules and MVU's `[value, "description"]` convention. It must not read text (the
//! command arrives parsed) and must not run anything: looking at the state is its only contact with it.

use std::borrow::Cow;

use statecraft_engine::{Instruction, Key, Object, Op, Path, Segment, Value};

use super::{Command, CommandName, MvuOptions};
use crate::diagnostic::unplaced;
use crate::diagnostic::{Diagnostic, DiagnosticKind, Severity};
use statecraft_engine::{PathSpelling, parse_path};

/// A `no state given: guessed that …` message for the command `name`, written without formatting for
/// the command names that reach it: every command resolved without a state reports one.
macro_rules! guessed {
    ($name:expr, $before:literal, $after:literal) => {
        match $name {
            "insert" => Cow::Borrowed(concat!(
                "no state given: guessed that ",
                $before,
                "insert",
                $after
            )),
            "assign" => Cow::Borrowed(concat!(
                "no state given: guessed that ",
                $before,
                "assign",
                $after
            )),
            "remove" => Cow::Borrowed(concat!(
                "no state given: guessed that ",
                $before,
                "remove",
                $after
            )),
            "unset" => Cow::Borrowed(concat!(
                "no state given: guessed that ",
                $before,
                "unset",
                $after
            )),
            "delete" => Cow::Borrowed(concat!(
                "no state given: guessed that ",
                $before,
                "delete",
                $after
            )),
            other => Cow::Owned(format!(
                "no state given: guessed that {}{other}{}",
                $before, $after
            )),
        }
    };
}

/// A diagnostic about the command being resolved: its kind, severity and message.
type Report<'r> = dyn FnMut(DiagnosticKind, Severity, Cow<'static, str>) + 'r;

/// Appends the instructions `command` stands for, with `args` the values of its arguments after the
/// path. It takes the command, and the values out of `args`, so that its reason and values move into
/// the instruction instead of being copied.
pub(crate) fn resolve(
    command: Command<'_>,
    args: &mut [Value],
    options: &MvuOptions,
    out: &mut Vec<Instruction>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut report = |kind: DiagnosticKind, severity: Severity, message: Cow<'static, str>| {
        diagnostics.push(unplaced(kind, severity, command.span.clone(), message));
    };
    let name = command.name.name();
    let Some(path) = command_path(&command, options, &mut report) else {
        return;
    };
    let count = args.len();
    let extra = |used: usize, report: &mut Report<'_>| {
        if count > used {
            report(
                DiagnosticKind::MvuExtraArguments,
                Severity::Warning,
                format!(
                    "`_.{name}` uses {used} argument(s) after the path; mvu ignores the other {}",
                    count - used
                )
                .into(),
            );
        }
    };
    let instruction = match command.name {
        CommandName::Set => {
            extra(2, &mut report);
            set(path, args, options, &mut report)
        }
        CommandName::Add => add(path, args, options, &mut report),
        CommandName::Insert | CommandName::Assign => {
            extra(2, &mut report);
            insert(path, args, options, name, &mut report)
        }
        CommandName::Remove | CommandName::Unset | CommandName::Delete => {
            extra(1, &mut report);
            remove(path, args, options, name, &mut report)
        }
    };
    out.extend(instruction.map(|instruction| match command.reason {
        Some(reason) => instruction.with_reason(reason),
        None => instruction,
    }));
}

/// The command's path, read in any spelling (a JSON Pointer is noted), or `None` with the command
/// skipped when it cannot be read.
fn command_path(
    command: &Command<'_>,
    options: &MvuOptions,
    report: &mut Report<'_>,
) -> Option<Path> {
    match parse_path(&command.path) {
        Ok((path, spelling)) => {
            if spelling == PathSpelling::Pointer {
                report(
                    DiagnosticKind::MvuPointerPath,
                    Severity::Note,
                    format!(
                        "the path \"{}\" starts with '/' and was read as a json pointer",
                        command.path
                    )
                    .into(),
                );
            }
            Some(path)
        }
        Err(message) => {
            report(
                DiagnosticKind::MvuInvalidPath,
                options.unrunnable.severity(),
                format!("`_.{}` skipped: {message}", command.name.name()).into(),
            );
            None
        }
    }
}

/// `_.set(path, new)` or `_.set(path, old, new)`: an `assign`, with `old` when given; on a
/// `[value, "description"]` pair (when the convention is on) both go to element 0. Under the `mvu`
/// profile a path that does not exist is skipped, and a value written over a number is made one.
fn set(
    path: Path,
    args: &mut [Value],
    options: &MvuOptions,
    report: &mut Report<'_>,
) -> Option<Instruction> {
    let count = args.len();
    let target = options
        .state
        .as_ref()
        .and_then(|state| state.lookup(path.segments()));
    let mvu = options.profile.is_mvu() && options.state.is_some();
    if mvu && target.is_none() && !path.is_empty() && !options.profile.set_creates() {
        report(
            DiagnosticKind::MvuMissingPath,
            Severity::Warning,
            format!("`_.set` skipped: nothing at {path}; mvu checks that the path exists first")
                .into(),
        );
        return None;
    }
    let new_at = usize::from(count >= 2);
    let pair = pair_target(options, target, &args[new_at]);
    let mut new = std::mem::take(&mut args[new_at]);
    if mvu {
        // MVU's `Number()`: over a pair's number anything but null, over a number a string.
        let over = if pair {
            target.and_then(|pair| pair.lookup(&[Segment::Index(0)]))
        } else {
            target
        };
        let coerce = matches!(over, Some(Value::Number(_)))
            && !matches!(new, Value::Null | Value::Number(_))
            && (pair || matches!(new, Value::String(_)));
        if coerce {
            let number = js_number(&new);
            let message = match &number {
                Some(number) => format!(
                    "{new} written over a number became {number}, as mvu's Number() makes it"
                ),
                None => format!(
                    "{new} written over a number is NaN in mvu's Number(), which mvu saves as null"
                ),
            };
            report(DiagnosticKind::MvuCoerced, Severity::Note, message.into());
            new = number.unwrap_or(Value::Null);
        }
    }
    let old = (count >= 2).then(|| {
        let old = std::mem::take(&mut args[0]);
        match pair.then(|| pair_value(&old)).flatten() {
            Some(value) => value.clone(),
            None => old,
        }
    });
    let path = if pair { path.child(0usize) } else { path };
    let instruction = Instruction::assign(path, new);
    Some(match old {
        Some(old) => instruction.with_old(old),
        None => instruction,
    })
}

/// JavaScript's `Number(value)` for what MVU coerces: booleans, and strings in JavaScript's decimal,
/// hexadecimal, octal and binary forms (blank is 0). `None` is NaN, and so is an infinity, which
/// JSON cannot hold.
fn js_number(value: &Value) -> Option<Value> {
    let number = match value {
        Value::Bool(flag) => return Some(Value::from(i64::from(*flag))),
        Value::Number(_) => return Some(value.clone()),
        Value::String(text) => {
            let text = text.trim();
            let radix = |prefix: [&str; 2], radix: u32| {
                prefix
                    .iter()
                    .find_map(|p| text.strip_prefix(p))
                    .map(|digits| u64::from_str_radix(digits, radix).ok().map(|n| n as f64))
            };
            if text.is_empty() {
                0.0
            } else if let Some(n) = radix(["0x", "0X"], 16)
                .or_else(|| radix(["0o", "0O"], 8))
                .or_else(|| radix(["0b", "0B"], 2))
            {
                n?
            } else if text
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
            {
                text.parse::<f64>().ok()?
            } else {
                return None;
            }
        }
        _ => return None,
    };
    if !number.is_finite() {
        return None;
    }
    if number.fract() == 0.0 && number.abs() < 9.0e15 {
        return Some(Value::from(number as i64));
    }
    statecraft_engine::Number::from_f64(number).map(Value::Number)
}

/// `_.add(path, delta)`: an `increment` (of element 0 of a pair), or nothing when the delta is not a
/// number.
fn add(
    path: Path,
    args: &mut [Value],
    options: &MvuOptions,
    report: &mut Report<'_>,
) -> Option<Instruction> {
    let delta = &args[0];
    if !matches!(delta, Value::Number(_)) {
        report(
            DiagnosticKind::MvuAddNotANumber,
            options.unrunnable.severity(),
            format!("`_.add` skipped: the delta {delta} is not a number").into(),
        );
        return None;
    }
    let target = options
        .state
        .as_ref()
        .and_then(|state| state.lookup(path.segments()));
    if options.profile.is_mvu() && options.state.is_some() && target.is_none() {
        report(
            DiagnosticKind::MvuMissingPath,
            Severity::Warning,
            format!("`_.add` skipped: nothing at {path}; mvu checks that the path exists first")
                .into(),
        );
        return None;
    }
    let path = if pair_target(options, target, delta) {
        path.child(0usize)
    } else {
        path
    };
    let delta = std::mem::take(&mut args[0]);
    Some(Instruction::new(Op::Increment, path).with_value(delta))
}

/// `_.insert`/`_.assign` with one value (append, or merge into an object) or two (at an index or a
/// key): exact with a state, guessed without.
fn insert(
    path: Path,
    args: &mut [Value],
    options: &MvuOptions,
    name: &str,
    report: &mut Report<'_>,
) -> Option<Instruction> {
    let state = options.state.as_ref();
    let target = state.and_then(|state| state.lookup(path.segments()));
    if let (Some(state), None, Some((parent, _))) = (state, target, path.split_last())
        && options.profile.is_mvu()
        && state.lookup(parent).is_none()
    {
        report(
            DiagnosticKind::MvuMissingTarget,
            Severity::Warning,
            format!("`_.{name}` skipped: neither {path} nor its parent exists; mvu skips it too")
                .into(),
        );
        return None;
    }
    match (args.len(), state) {
        (1, Some(_)) => {
            insert_value_exact(&path, target, std::mem::take(&mut args[0]), name, report)
        }
        (1, None) => {
            report(
                DiagnosticKind::MvuGuessed,
                Severity::Warning,
                guessed!(name, "`_.", "` with one value appends to an array (push)"),
            );
            Some(Instruction::new(Op::Push, path).with_value(std::mem::take(&mut args[0])))
        }
        (_, _) => {
            let operand = std::mem::take(&mut args[1]);
            insert_at(
                &path,
                target,
                state.is_some(),
                &args[0],
                operand,
                name,
                report,
            )
        }
    }
}

/// `_.remove`/`_.unset`/`_.delete` of the path itself, or of an element or key named by the
/// argument.
fn remove(
    path: Path,
    args: &[Value],
    options: &MvuOptions,
    name: &str,
    report: &mut Report<'_>,
) -> Option<Instruction> {
    let state = options.state.as_ref();
    let target = state.and_then(|state| state.lookup(path.segments()));
    match args.first() {
        None if state.is_some() && target.is_none() => {
            report(
                DiagnosticKind::MvuMissingTarget,
                Severity::Warning,
                format!("`_.{name}` skipped: nothing at {path}, mvu skips it too").into(),
            );
            None
        }
        None => Some(Instruction::new(Op::Delete, path)),
        Some(which) => remove_from(
            &path,
            target,
            state.is_some(),
            options.profile.is_mvu(),
            which,
            name,
            report,
        ),
    }
}

fn pair_target(options: &MvuOptions, target: Option<&Value>, new: &Value) -> bool {
    let Some(Value::Array(items)) = target else {
        return false;
    };
    options.pairs()
        && !matches!(new, Value::Array(_))
        && items.len() == 2
        && matches!(items.get(1), Some(Value::String(_)))
        && !matches!(items.get(0), Some(Value::Array(_)))
}

/// The value of a `[value, "description"]` literal.
fn pair_value(value: &Value) -> Option<&Value> {
    let items = value.as_array()?;
    match (items.len(), items.get(1)) {
        (2, Some(Value::String(_))) => items.get(0),
        _ => None,
    }
}

/// `_.insert(path, value)` against a known state: push to an array, merge into an object.
fn insert_value_exact(
    path: &Path,
    target: Option<&Value>,
    operand: Value,
    name: &str,
    report: &mut Report<'_>,
) -> Option<Instruction> {
    match target {
        Some(Value::Array(_)) => Some(Instruction::new(Op::Push, path.clone()).with_value(operand)),
        Some(Value::Object(_)) | None | Some(Value::Null)
            if matches!(operand, Value::Object(_)) =>
        {
            Some(Instruction::new(Op::Merge, path.clone()).with_value(operand))
        }
        None | Some(Value::Null) => {
            // MVU creates an empty collection and appends to it when it can.
            Some(Instruction::new(Op::Push, path.clone()).with_value(operand))
        }
        Some(Value::Object(_)) => {
            report(
                DiagnosticKind::MvuInsertType,
                Severity::Warning,
                format!(
                    "`_.{name}` skipped: only an object can be merged into the object at {path}, as in mvu"
                ).into(),
            );
            None
        }
        Some(other) => {
            report(
                DiagnosticKind::MvuInsertType,
                Severity::Warning,
                not_a_collection(name, path, other).into(),
            );
            None
        }
    }
}

/// Why `_.insert` skips a target that is neither an array nor an object (MVU skips it too).
fn not_a_collection(name: &str, path: &Path, target: &Value) -> String {
    format!(
        "`_.{name}` skipped: the target at {path} is {}, not an array or object; mvu skips it too",
        target.value_type()
    )
}

/// `_.insert(path, key_or_index, value)`.
fn insert_at(
    path: &Path,
    target: Option<&Value>,
    known: bool,
    key: &Value,
    operand: Value,
    name: &str,
    report: &mut Report<'_>,
) -> Option<Instruction> {
    let index = key.as_number().and_then(statecraft_engine::Number::as_i64);
    let dash = key.as_str() == Some("-");
    let is_array = match (known, target) {
        (true, Some(Value::Array(_))) => true,
        (true, Some(Value::Object(_)) | Some(Value::Null) | None) => false,
        (true, Some(other)) => {
            report(
                DiagnosticKind::MvuInsertType,
                Severity::Warning,
                not_a_collection(name, path, other).into(),
            );
            return None;
        }
        (false, _) => {
            let guess = if index.is_some() || dash {
                guessed!(name, "the target of `_.", "` is an array (splice)")
            } else {
                guessed!(name, "the target of `_.", "` is an object (assign a key)")
            };
            report(DiagnosticKind::MvuGuessed, Severity::Warning, guess);
            index.is_some() || dash
        }
    };
    if is_array && dash {
        return Some(Instruction::new(Op::Push, path.clone()).with_value(operand));
    }
    if let (true, Some(start)) = (is_array, index) {
        return Some(
            Instruction::new(Op::Splice, path.clone()).with_value(Value::Object(
                Object::from_iter([
                    (Key::from("start"), Value::from(start)),
                    (Key::from("deleteCount"), Value::from(0)),
                    (
                        Key::from("items"),
                        Value::Array([operand].into_iter().collect()),
                    ),
                ]),
            )),
        );
    }
    Some(Instruction::assign(
        path.child(Segment::Key(key_text(key))),
        operand,
    ))
}

/// `String(key)` as MVU computes it.
fn key_text(key: &Value) -> Key {
    match key {
        Value::String(text) => Key::from(&**text),
        other => Key::from(other.to_string()),
    }
}

/// `_.remove(path, key_index_or_value)`. A number names an element of an array by its index, as in
/// MVU (never an element equal to it); under the `mvu` profiles it names an object's key by its
/// position too ([`nth_key`]), where `strict` reads it as the key's text.
fn remove_from(
    path: &Path,
    target: Option<&Value>,
    known: bool,
    mvu: bool,
    which: &Value,
    name: &str,
    report: &mut Report<'_>,
) -> Option<Instruction> {
    let index = which
        .as_number()
        .and_then(statecraft_engine::Number::as_u64)
        .and_then(|i| usize::try_from(i).ok());
    if !known {
        let guess = if index.is_some() {
            guessed!(
                name,
                "the target of `_.",
                "` is an array (delete the element at that index)"
            )
        } else {
            guessed!(
                name,
                "the target of `_.",
                "` is an object (delete that key)"
            )
        };
        report(DiagnosticKind::MvuGuessed, Severity::Warning, guess);
        return Some(match index {
            Some(index) => Instruction::new(Op::Delete, path.child(index)),
            None => Instruction::new(Op::Delete, path.child(Segment::Key(key_text(which)))),
        });
    }
    let mut skip = |why: String| {
        report(
            DiagnosticKind::MvuMissingTarget,
            Severity::Warning,
            format!("`_.{name}` skipped: {why}").into(),
        );
        None
    };
    match target {
        Some(Value::Array(items)) => {
            let position = if which.as_number().is_some() {
                index.filter(|&i| i < items.len())
            } else {
                items.iter().position(|item| item == which)
            };
            match position {
                Some(position) => Some(Instruction::new(Op::Delete, path.child(position))),
                None if which.as_number().is_some() => skip(format!(
                    "the array at {path} has {} element{}, so no index {which}; mvu skips it too",
                    items.len(),
                    if items.len() == 1 { "" } else { "s" }
                )),
                None => skip(format!("the array at {path} holds no {which}")),
            }
        }
        Some(Value::Object(map)) if mvu && which.as_number().is_some() => {
            match index.and_then(|index| nth_key(map, index)) {
                Some(key) => Some(Instruction::new(Op::Delete, path.child(Segment::Key(key)))),
                None => skip(format!(
                    "the object at {path} has {} key{}, so no key at position {which}; mvu skips \
                     it too",
                    map.len(),
                    if map.len() == 1 { "" } else { "s" }
                )),
            }
        }
        Some(Value::Object(map)) => {
            let key = key_text(which);
            if map.contains_key(&key) {
                Some(Instruction::new(Op::Delete, path.child(Segment::Key(key))))
            } else {
                skip(format!("the object at {path} has no key {which}"))
            }
        }
        _ => skip(format!("no array or object at {path}, mvu skips it too")),
    }
}

/// The key at `index` (from 0) in an object's order as MVU counts it with `Object.keys`: keys that
/// are array indexes in JavaScript (`"0"` to `"4294967294"`, written without a sign or leading zero)
/// first, in numeric order, then the others. JavaScript keeps those others in the order they were
/// added, which a state does not keep: statecraft counts them in its own order, by bytes
/// (docs/numbers-and-keys.md), which is the same whenever they were added in that order.
/// Time: O(n) in the object's keys.
fn nth_key(map: &Object, index: usize) -> Option<Key> {
    let mut indexes: Vec<(u32, &Key)> = map
        .keys()
        .filter_map(|key| array_index(key).map(|number| (number, key)))
        .collect();
    if index < indexes.len() {
        indexes.sort_unstable_by_key(|(number, _)| *number);
        return Some(indexes[index].1.clone());
    }
    map.keys()
        .filter(|key| array_index(key).is_none())
        .nth(index - indexes.len())
        .cloned()
}

/// The number a key stands for when JavaScript takes it for an array index: `0` to `2^32 - 2`,
/// written as JavaScript writes the number.
fn array_index(key: &str) -> Option<u32> {
    let number: u32 = key.parse().ok()?;
    (number != u32::MAX && number.to_string() == key).then_some(number)
}
