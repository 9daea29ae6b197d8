//! Writing instructions as MVU command text: one command per line, values as JSON (docs/mvu.md).
//!
//! `assign` becomes `_.set('path', old, new);//reason` (or `_.set('path', new);` without `old`),
//! `increment` `_.add`, `delete` a one-argument `_.remove`, `push` a two-argument `_.insert`, a
//! one-item insertion `splice` a three-argument `_.insert`, and `merge` a two-argument `_.insert` (which
//! MVU reads as a merge only on an object target, so it is reported). This module owns that mapping and
//! refuses, with a diagnostic, whatever MVU text cannot say: keys holding `.`, `[`, `]`, quotes,
//! backslashes or nothing, and ops with no MVU form. It must not mangle a path to make it fit.

use std::fmt::Write as _;

use statecraft_engine::{Batch, Instruction, Op, Path, Segment, Value};

use crate::diagnostic::{Diagnostic, DiagnosticKind, Severity};

/// Writes `batch` as MVU text, one command per line. Instructions MVU cannot express are left out and
/// reported; each diagnostic's span is the empty range where the command would have been, and its
/// message names the instruction index.
pub fn to_text(batch: &Batch) -> (String, Vec<Diagnostic>) {
    let mut out = String::new();
    // Problems are collected with their offsets and turned into diagnostics once the text is complete,
    // because a diagnostic's line and column are computed from the final text.
    let mut problems: Vec<(usize, DiagnosticKind, Severity, String)> = Vec::new();
    for (index, instruction) in batch.instructions.iter().enumerate() {
        let at = out.len();
        match command(instruction) {
            Ok((line, warning)) => {
                if let Some(message) = warning {
                    problems.push((
                        at,
                        DiagnosticKind::MvuEmitLossy,
                        Severity::Warning,
                        format!("instruction {index}: {message}"),
                    ));
                }
                out.push_str(&line);
                if let Some(reason) = &instruction.reason {
                    if !reason.is_empty() {
                        let single = reason.replace(['\r', '\n'], " ");
                        if single != *reason {
                            problems.push((
                                at,
                                DiagnosticKind::MvuEmitLossy,
                                Severity::Warning,
                                format!("instruction {index}: the reason spans lines; mvu reasons end at the line, so they were joined"),
                            ));
                        }
                        out.push_str("//");
                        out.push_str(single.trim());
                    }
                }
                out.push('\n');
            }
            Err(message) => problems.push((
                at,
                DiagnosticKind::MvuEmitUnsupported,
                Severity::Error,
                format!("instruction {index}: {message}"),
            )),
        }
    }
    let mut diagnostics: Vec<Diagnostic> = problems
        .into_iter()
        .map(|(at, kind, severity, message)| {
            crate::diagnostic::unplaced(kind, severity, at..at, message)
        })
        .collect();
    crate::diagnostic::place(&out, &mut diagnostics);
    (out, diagnostics)
}

/// One command without its reason, and a warning when MVU may read it differently.
fn command(instruction: &Instruction) -> Result<(String, Option<String>), String> {
    let path = path_text(&instruction.path)?;
    let value = || {
        instruction
            .value
            .as_ref()
            .map_or_else(|| "null".to_owned(), json)
    };
    let mut warning = None;
    let line = match instruction.op {
        Op::Assign => match &instruction.old {
            Some(old) => format!("_.set({path}, {}, {});", json(old), value()),
            None => format!("_.set({path}, {});", value()),
        },
        Op::Increment => format!("_.add({path}, {});", value()),
        Op::Delete => format!("_.remove({path});"),
        Op::Push => format!("_.insert({path}, {});", value()),
        Op::Merge => {
            warning =
                Some("mvu merges with `_.insert` only when the target is an object".to_owned());
            format!("_.insert({path}, {});", value())
        }
        Op::Splice => {
            let (start, item) = one_item_insertion(instruction.value.as_ref()).ok_or(
                "splice has an mvu form only as the insertion of one item (deleteCount 0)",
            )?;
            format!("_.insert({path}, {start}, {});", json(item))
        }
        Op::Pop
        | Op::Get
        | Op::Callback
        | Op::Add
        | Op::Remove
        | Op::Replace
        | Op::Move
        | Op::Copy
        | Op::Test => return Err(format!("{} has no mvu command", instruction.op)),
    };
    if instruction.old.is_some() && instruction.op != Op::Assign {
        warning = Some(format!(
            "mvu has no old-value check for {}; the old value was left out",
            instruction.op
        ));
    }
    Ok((line, warning))
}

/// `{start, deleteCount: 0, items: [item]}` as `(start, item)`.
fn one_item_insertion(value: Option<&Value>) -> Option<(i64, &Value)> {
    let map = value?.as_object()?;
    if map
        .keys()
        .any(|k| !matches!(&**k, "start" | "deleteCount" | "items"))
    {
        return None;
    }
    let start = map.get("start")?.as_number()?.as_i64()?;
    let zero = map.get("deleteCount")?.as_number()?.as_u64()? == 0;
    let items = map.get("items")?.as_array()?;
    (zero && items.len() == 1).then(|| (start, &items[0]))
}

fn json(value: &Value) -> String {
    value.to_json().to_string()
}

/// The path as a single-quoted MVU path: keys joined by `.`, indexes as `[n]`.
fn path_text(path: &Path) -> Result<String, String> {
    let mut text = String::from("'");
    for (i, segment) in path.segments().iter().enumerate() {
        match segment {
            Segment::Index(index) => {
                let _ = write!(text, "[{index}]");
            }
            Segment::Key(key) => {
                if key.is_empty()
                    || key.contains(['.', '[', ']', '\'', '"', '`', '\\'])
                    || key.starts_with('/') && i == 0
                {
                    return Err(format!(
                        "the key {:?} cannot be written in an mvu path (empty, or holding '.', '[', ']', quotes or '\\', or a leading '/')",
                        &**key
                    ));
                }
                if key.contains(['\n', '\r']) {
                    return Err(format!(
                        "the key {:?} holds a line break, which an mvu path cannot",
                        &**key
                    ));
                }
                if i > 0 {
                    text.push('.');
                }
                text.push_str(key);
            }
        }
    }
    text.push('\'');
    Ok(text)
}
