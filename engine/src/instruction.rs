//! Instructions and batches, and their decoding from JSON.
//!
//! A batch is a list of instructions that runs atomically. Instruction ops follow docs/instructions.md; RFC 6902 ops
//! (`add`, `remove`, `replace`, `move`, `copy`, `test`) appear only in batches decoded from a JSON Patch
//! document and run with RFC semantics. Decoding reports every problem with the instruction index and a
//! JSON Pointer into it. Strict decoding refuses unknown members; lenient decoding (for the text layer)
//! reports and ignores them. This module must not guess: string path spellings such as `"player.hp"` are
//! normalised by the translators before they reach it.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};
use serde_json::Value as Json;

use crate::error::{BatchError, BatchErrors, ErrorKind, Trail};
use crate::limits::Limits;
use crate::path::{Path, Segment, path_from_json};
use crate::tree::{JsonTree, NodeKind, type_name};
use crate::value::{Value, json_depth};

registry! {
    /// An operation.
    ///
    /// Unlike the other public enums, `Op` is exhaustive on purpose: the ops are the contract, and
    /// a new one must be handled by every `match` over them (the prompt kit's rules, MVU text,
    /// ...), which the compiler can only enforce across crates when no match needs a wildcard arm.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Op {
        /// Set `value` at `path`, creating missing parents.
        Assign = "assign",
        /// Read the value at `path`.
        Get = "get",
        /// Remove a key or an array element.
        Delete = "delete",
        /// Deep-merge an object into the object at `path`.
        Merge = "merge",
        /// Append to the array at `path`.
        Push = "push",
        /// Remove the last element of the array at `path`.
        Pop = "pop",
        /// JavaScript `Array.prototype.splice` on the array at `path`.
        Splice = "splice",
        /// Call the handler named by `path[0]`.
        Callback = "callback",
        /// Add a number to the number at `path`.
        Increment = "increment",
        /// RFC 6902 `add`.
        Add = "add",
        /// RFC 6902 `remove`.
        Remove = "remove",
        /// RFC 6902 `replace`.
        Replace = "replace",
        /// RFC 6902 `move`.
        Move = "move",
        /// RFC 6902 `copy`.
        Copy = "copy",
        /// RFC 6902 `test`.
        Test = "test",
    }
    impl {
        /// Every op, instruction ops first.
        pub const ALL;
        /// The name used in JSON.
        pub fn name;
    }
}

impl Op {
    /// The names of the instruction ops (`json_patch` false) or of the RFC 6902 ops (true), in the
    /// order of [`Op::ALL`], joined by ", ": the "expected one of" lists of every message, so that
    /// a new op is named in them without anyone editing a message.
    pub fn names(json_patch: bool) -> String {
        let names: Vec<&str> = Op::ALL
            .into_iter()
            .filter(|op| op.is_json_patch() == json_patch)
            .map(Op::name)
            .collect();
        names.join(", ")
    }

    /// Whether this is an RFC 6902 op, which runs with JSON Patch semantics.
    pub fn is_json_patch(self) -> bool {
        match self {
            Op::Assign
            | Op::Get
            | Op::Delete
            | Op::Merge
            | Op::Push
            | Op::Pop
            | Op::Splice
            | Op::Callback
            | Op::Increment => false,
            Op::Add | Op::Remove | Op::Replace | Op::Move | Op::Copy | Op::Test => true,
        }
    }

    /// Whether the op takes a `value`: `Some(true)` required, `Some(false)` optional, `None` refused.
    fn value_rule(self) -> Option<bool> {
        match self {
            Op::Assign
            | Op::Merge
            | Op::Push
            | Op::Splice
            | Op::Increment
            | Op::Add
            | Op::Replace
            | Op::Test => Some(true),
            Op::Callback => Some(false),
            Op::Get | Op::Delete | Op::Pop | Op::Remove | Op::Move | Op::Copy => None,
        }
    }

    /// Whether the op accepts an `old` value check: every instruction op that writes. A read or a call
    /// writes nothing to check, and an RFC 6902 op checks with `test`.
    fn takes_old(self) -> bool {
        match self {
            Op::Assign
            | Op::Delete
            | Op::Merge
            | Op::Push
            | Op::Pop
            | Op::Splice
            | Op::Increment => true,
            Op::Get | Op::Callback => false,
            Op::Add | Op::Remove | Op::Replace | Op::Move | Op::Copy | Op::Test => false,
        }
    }

    /// Whether the op may target the root (an empty path): a read of the whole state, a merge into it,
    /// and the RFC 6902 ops, whose rules for the root are RFC 6902's.
    pub(crate) fn takes_root(self) -> bool {
        match self {
            Op::Get | Op::Merge => true,
            Op::Assign
            | Op::Delete
            | Op::Push
            | Op::Pop
            | Op::Splice
            | Op::Callback
            | Op::Increment => false,
            Op::Add | Op::Remove | Op::Replace | Op::Move | Op::Copy | Op::Test => true,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = ();

    /// Reads an op name. MVU's JSON Patch extensions `delta` and `insert` read as `increment` and `add`.
    fn from_str(name: &str) -> Result<Op, ()> {
        match name {
            "delta" => Ok(Op::Increment),
            "insert" => Ok(Op::Add),
            _ => Op::ALL.into_iter().find(|op| op.name() == name).ok_or(()),
        }
    }
}

impl Serialize for Op {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// One instruction. Build with [`Instruction::new`] and the `with_*` methods, or decode from JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Instruction {
    /// The operation.
    pub op: Op,
    /// Where it acts.
    pub path: Path,
    /// RFC 6902 `move`/`copy` source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<Path>,
    /// The operand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// The value expected at `path` before the instruction runs (absent counts as `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    /// Why, for the change log (MVU's `//reason`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Opaque data the caller attaches; carried to the change log untouched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl Instruction {
    /// An instruction with no operand.
    pub fn new(op: Op, path: Path) -> Instruction {
        Instruction {
            op,
            path,
            from: None,
            value: None,
            old: None,
            reason: None,
            metadata: None,
        }
    }

    /// `assign` of `value` at `path`.
    pub fn assign(path: Path, value: impl Into<Value>) -> Instruction {
        Instruction::new(Op::Assign, path).with_value(value)
    }

    /// Sets the operand.
    pub fn with_value(mut self, value: impl Into<Value>) -> Instruction {
        self.value = Some(value.into());
        self
    }

    /// Sets the expected old value.
    pub fn with_old(mut self, old: impl Into<Value>) -> Instruction {
        self.old = Some(old.into());
        self
    }

    /// Sets the reason.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Instruction {
        self.reason = Some(reason.into());
        self
    }

    /// Decodes one instruction from JSON (strict: unknown members are errors).
    pub fn from_json<'a>(json: impl JsonTree<'a>) -> Result<Instruction, BatchErrors> {
        let mut report = Vec::new();
        let decoded = decode_instruction(json, 0, &Limits::default(), &mut report);
        match decoded {
            Some((instruction, _)) if report.is_empty() => Ok(instruction),
            _ => Err(BatchErrors(report)),
        }
    }

    /// Decodes one instruction leniently, as [`Batch::from_json_lenient`] decodes each of a batch's:
    /// the instruction and the warnings for what was tolerated, or every problem.
    pub fn from_json_lenient<'a>(
        json: impl JsonTree<'a>,
        limits: &Limits,
    ) -> Result<(Instruction, Vec<BatchError>), BatchErrors> {
        let mut report = Vec::new();
        match decode_instruction(json, 0, limits, &mut report) {
            Some((instruction, _)) if report.iter().all(is_tolerable) => Ok((instruction, report)),
            _ => Err(BatchErrors(
                report.into_iter().filter(|e| !is_tolerable(e)).collect(),
            )),
        }
    }

    /// The canonical JSON form (paths as lists).
    pub fn to_json(&self) -> Json {
        serde_json::to_value(self).unwrap_or(Json::Null)
    }

    /// The canonical JSON form as compact text: the same bytes as `to_json().to_string()`, written
    /// straight from the instruction (a quarter of the work: no owned key, segment or number).
    pub fn to_json_text(&self) -> String {
        let mut text = Vec::new();
        let written = serde_json::to_writer(&mut text, &Canonical(self));
        // Writing to a vector cannot fail, every key is a string, and serde_json writes UTF-8.
        debug_assert!(written.is_ok());
        String::from_utf8(text).unwrap_or_default()
    }
}

/// A list of instructions that runs atomically.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Batch {
    /// The instructions, in order.
    pub instructions: Vec<Instruction>,
}

impl Batch {
    /// A batch of these instructions.
    pub fn new(instructions: Vec<Instruction>) -> Batch {
        Batch { instructions }
    }

    /// Parses JSON text strictly. Text that is not JSON is reported as one `InvalidField` error with
    /// serde_json's line and column, and so is a member given twice in one object (which a parsed
    /// value could no longer show), at its instruction.
    pub fn parse(text: &str) -> Result<Batch, BatchErrors> {
        let json: Json = serde_json::from_str(text).map_err(|error| {
            BatchErrors(vec![BatchError::whole_batch(
                ErrorKind::InvalidField,
                None,
                format!("not valid JSON: {error}"),
            )])
        })?;
        Batch::from_json_text(&json, text)
    }

    /// Decodes `json`, the value parsed from `text`, strictly, as [`Batch::from_json`] does, after
    /// refusing a member that `text` gives twice in one object: the parsed value kept only the last,
    /// so only the text can show it. For hosts that parse the text themselves (to report text that
    /// is not JSON in their own way).
    pub fn from_json_text(json: &Json, text: &str) -> Result<Batch, BatchErrors> {
        if let Ok(Some(duplicate)) = crate::duplicate_member(text) {
            return Err(BatchErrors(vec![duplicate.in_batch(json.is_array())]));
        }
        Batch::from_json(json)
    }

    /// Decodes a batch strictly: one instruction object or an array of them, or a JSON Patch document.
    /// Every problem is reported. `json` is a `&serde_json::Value` or any other [`JsonTree`].
    pub fn from_json<'a>(json: impl JsonTree<'a>) -> Result<Batch, BatchErrors> {
        let decoded = decode_batch(json, Mode::Strict, &Limits::default());
        if decoded.problems.is_empty() {
            Ok(decoded.batch)
        } else {
            Err(BatchErrors(decoded.problems))
        }
    }

    /// Decodes a batch leniently: unknown members and pointers without a leading `/` are accepted,
    /// each reported in `warnings`. Real problems are still errors.
    pub fn from_json_lenient<'a>(
        json: impl JsonTree<'a>,
        limits: &Limits,
    ) -> Result<Lenient, BatchErrors> {
        let decoded = decode_batch(json, Mode::Lenient, limits);
        if decoded.problems.is_empty() {
            Ok(Lenient {
                batch: decoded.batch,
                warnings: decoded.warnings,
            })
        } else {
            Err(BatchErrors(decoded.problems))
        }
    }

    /// The number of instructions.
    pub fn len(&self) -> usize {
        self.instructions.len()
    }

    /// Whether the batch has no instructions.
    pub fn is_empty(&self) -> bool {
        self.instructions.is_empty()
    }

    /// The canonical JSON form.
    pub fn to_json(&self) -> Json {
        Json::Array(self.instructions.iter().map(Instruction::to_json).collect())
    }

    /// The canonical JSON form as indented text: the same bytes as `serde_json::to_string_pretty` of
    /// [`Batch::to_json`], written straight from the instructions. Building the `serde_json::Value`
    /// first cost an owned string for every key, path segment and number, most of the time it took
    /// to print a large batch.
    pub fn to_json_pretty(&self) -> String {
        let canonical: Vec<Canonical<'_>> = self.instructions.iter().map(Canonical).collect();
        let mut text = Vec::new();
        let written = serde_json::to_writer_pretty(&mut text, &canonical);
        // Writing to a vector cannot fail, every key is a string, and serde_json writes UTF-8.
        debug_assert!(written.is_ok());
        String::from_utf8(text).unwrap_or_default()
    }
}

/// An instruction serialized in its canonical form: the members of [`Instruction::to_json`], in its
/// order (a `serde_json::Map` sorts its keys).
struct Canonical<'a>(&'a Instruction);

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Instruction {
            op,
            path,
            from,
            value,
            old,
            reason,
            metadata,
        } = self.0;
        let mut map = serializer.serialize_map(None)?;
        if let Some(from) = from {
            map.serialize_entry("from", from)?;
        }
        if let Some(metadata) = metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        if let Some(old) = old {
            map.serialize_entry("old", old)?;
        }
        map.serialize_entry("op", op)?;
        map.serialize_entry("path", path)?;
        if let Some(reason) = reason {
            map.serialize_entry("reason", reason)?;
        }
        if let Some(value) = value {
            map.serialize_entry("value", value)?;
        }
        map.end()
    }
}

/// Strict decoding through [`Batch::from_json`]; every problem is joined into the error's message.
impl<'de> serde::Deserialize<'de> for Batch {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Batch, D::Error> {
        let json = Json::deserialize(deserializer)?;
        Batch::from_json(&json).map_err(|errors| serde::de::Error::custom(joined(&errors)))
    }
}

/// Strict decoding through [`Instruction::from_json`].
impl<'de> serde::Deserialize<'de> for Instruction {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Instruction, D::Error> {
        let json = Json::deserialize(deserializer)?;
        Instruction::from_json(&json).map_err(|errors| serde::de::Error::custom(joined(&errors)))
    }
}

fn joined(errors: &[BatchError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl From<Vec<Instruction>> for Batch {
    fn from(instructions: Vec<Instruction>) -> Batch {
        Batch { instructions }
    }
}

/// A leniently decoded batch and what was tolerated on the way.
#[derive(Clone, Debug)]
pub struct Lenient {
    /// The batch.
    pub batch: Batch,
    /// Unknown members ignored, pointers repaired.
    pub warnings: Vec<BatchError>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Strict,
    Lenient,
}

struct Decoded {
    batch: Batch,
    problems: Vec<BatchError>,
    warnings: Vec<BatchError>,
}

/// The members an instruction may have, in one pass over an object (a repeated key is an error).
struct Fields<T> {
    op: Option<T>,
    path: Option<T>,
    from: Option<T>,
    value: Option<T>,
    old: Option<T>,
    reason: Option<T>,
    metadata: Option<T>,
}

impl<'a, T: JsonTree<'a>> Fields<T> {
    /// The members of instruction `index` (an object), each unknown or repeated one reported.
    fn gather(json: T, index: usize, report: &mut Vec<BatchError>) -> Fields<T> {
        let mut fields = Fields {
            op: None,
            path: None,
            from: None,
            value: None,
            old: None,
            reason: None,
            metadata: None,
        };
        for (key, member) in json.members() {
            let slot = match key {
                "op" => &mut fields.op,
                "path" => &mut fields.path,
                "from" => &mut fields.from,
                "value" => &mut fields.value,
                "old" => &mut fields.old,
                "reason" => &mut fields.reason,
                "metadata" => &mut fields.metadata,
                _ => {
                    report.push(field_error(
                        index,
                        ErrorKind::UnknownMember,
                        crate::path::pointer_of(&[crate::Segment::key(key)]),
                        // Joined rather than formatted: a reply can hold thousands of these.
                        [
                            "unknown member \"",
                            key,
                            "\"; an instruction has only ",
                            KNOWN_FIELDS,
                        ]
                        .concat(),
                    ));
                    continue;
                }
            };
            if slot.is_some() {
                // A tree that keeps both (a translator's document) shows them: which one was meant is
                // unknowable, so neither is taken.
                report.push(field_error(
                    index,
                    ErrorKind::InvalidField,
                    crate::path::pointer_of(&[crate::Segment::key(key)]),
                    [
                        "the member \"",
                        key,
                        "\" is given twice; give it once, as no reader can tell which one was meant",
                    ]
                    .concat(),
                ));
            }
            *slot = Some(member);
        }
        fields
    }
}

const KNOWN_FIELDS: &str = "op, path, from, value, old, reason, metadata";

/// A problem with `field` of instruction `index`. The trail is built only when there is a problem.
fn field_error(
    index: usize,
    kind: ErrorKind,
    field: impl Into<String>,
    message: impl Into<String>,
) -> BatchError {
    BatchError::in_field(kind, &Trail(vec![index]), field, message)
}

fn decode_batch<'a, T: JsonTree<'a>>(json: T, mode: Mode, limits: &Limits) -> Decoded {
    // An array of instructions, or one instruction on its own.
    let is_array = json.kind() == NodeKind::Array;
    let count = if is_array { json.items().count() } else { 1 };
    let items = json.items().chain((!is_array).then_some(json));
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut instructions = Vec::with_capacity(count);
    let mut patch_forms = Vec::with_capacity(count);
    if count > limits.max_batch_len {
        problems.push(BatchError::whole_batch(
            ErrorKind::BatchTooLong,
            None,
            format!(
                "the batch has {} instructions; the limit is {}",
                count, limits.max_batch_len
            ),
        ));
        return Decoded {
            batch: Batch::default(),
            problems,
            warnings,
        };
    }
    for (index, item) in items.enumerate() {
        let mut report = Vec::new();
        if let Some((instruction, patch_form)) =
            decode_instruction(item, index, limits, &mut report)
        {
            patch_forms.push(patch_form);
            instructions.push(instruction);
        }
        for error in report {
            if mode == Mode::Lenient && is_tolerable(&error) {
                warnings.push(error)
            } else {
                problems.push(error)
            }
        }
    }
    // One block is either instructions or a JSON Patch document (docs/instructions.md).
    if let Some(odd) = patch_forms.iter().position(|form| *form != patch_forms[0]) {
        problems.push(BatchError::whole_batch(
            ErrorKind::MixedBatch,
            None,
            format!(
                "this array mixes JSON Patch ops ({}, delta) with instruction ops ({} and {}); send \
                 them as separate blocks",
                Op::names(true),
                instructions[0].op,
                instructions[odd].op
            ),
        ));
    }
    Decoded {
        batch: Batch { instructions },
        problems,
        warnings,
    }
}

const MISSING_SLASH: &str = "a JSON Pointer must start with '/'";

/// What lenient decoding accepts with a warning: unknown members (ignored) and JSON Pointers without
/// their leading `/` (repaired). Strict decoding refuses both.
fn is_tolerable(error: &BatchError) -> bool {
    matches!(
        error.kind,
        ErrorKind::UnknownMember | ErrorKind::PointerWithoutSlash
    )
}

fn decode_instruction<'a>(
    json: impl JsonTree<'a>,
    index: usize,
    limits: &Limits,
    report: &mut Vec<BatchError>,
) -> Option<(Instruction, bool)> {
    if json.kind() != NodeKind::Object {
        report.push(field_error(
            index,
            ErrorKind::NotAnInstruction,
            "",
            format!(
                "an instruction must be an object with \"op\" and \"path\", not {}",
                type_name(json)
            ),
        ));
        return None;
    }
    let before = report.len();
    let fields = Fields::gather(json, index, report);
    let (op, patch_form) = decode_op(fields.op, index, report)?;
    let path = decode_path(fields.path, "/path", patch_form, index, report);
    let from = match op {
        Op::Move | Op::Copy => decode_path(fields.from, "/from", patch_form, index, report),
        _ => {
            if fields.from.is_some() {
                report.push(field_error(
                    index,
                    ErrorKind::UnexpectedField,
                    "/from",
                    format!("\"from\" is only for move and copy, not {op}"),
                ));
            }
            None
        }
    };
    let value = match (op.value_rule(), fields.value) {
        (Some(true), None) => {
            report.push(field_error(
                index,
                ErrorKind::MissingField,
                "/value",
                format!("{op} needs a \"value\""),
            ));
            None
        }
        (None, Some(_)) => {
            report.push(field_error(
                index,
                ErrorKind::UnexpectedField,
                "/value",
                format!("{op} takes no \"value\""),
            ));
            None
        }
        (_, Some(json)) => decode_value(json, "/value", index, limits, report),
        (_, None) => None,
    };
    let old = match fields.old {
        Some(json) if op.takes_old() => decode_value(json, "/old", index, limits, report),
        Some(_) => {
            report.push(field_error(
                index,
                ErrorKind::UnexpectedField,
                "/old",
                format!("{op} takes no \"old\" check"),
            ));
            None
        }
        None => None,
    };
    let reason = match fields.reason.map(|reason| (reason, reason.kind())) {
        None | Some((_, NodeKind::Null)) => None,
        Some((_, NodeKind::String(text))) => Some(text.to_owned()),
        Some((other, _)) => {
            report.push(field_error(
                index,
                ErrorKind::InvalidField,
                "/reason",
                format!("\"reason\" must be a string, not {}", type_name(other)),
            ));
            None
        }
    };
    let metadata = fields
        .metadata
        .and_then(|json| decode_value(json, "/metadata", index, limits, report));
    let fatal = report[before..].iter().any(|e| !is_tolerable(e));
    if fatal {
        return None;
    }
    let from = if matches!(op, Op::Move | Op::Copy) {
        Some(from?)
    } else {
        None
    };
    Some((
        Instruction {
            op,
            path: path?,
            from,
            value,
            old,
            reason,
            metadata,
        },
        patch_form,
    ))
}

/// Instruction `index`'s op, and whether the instruction is in JSON Patch form (its paths are
/// pointers): the RFC 6902 ops and MVU's `delta`.
fn decode_op<'a>(
    json: Option<impl JsonTree<'a>>,
    index: usize,
    report: &mut Vec<BatchError>,
) -> Option<(Op, bool)> {
    let mut patch_form = false;
    let op = match json.map(|op| (op, op.kind())) {
        None => {
            report.push(field_error(
                index,
                ErrorKind::MissingField,
                "/op",
                "missing \"op\"",
            ));
            None
        }
        Some((_, NodeKind::String(name))) => match name.parse::<Op>() {
            Ok(op) => {
                // MVU's `delta` is a JSON Patch document member: its path is a pointer.
                patch_form = op.is_json_patch() || name == "delta";
                Some(op)
            }
            Err(()) => {
                report.push(field_error(
                    index,
                    ErrorKind::UnknownOp,
                    "/op",
                    format!(
                        "unknown op \"{name}\"; expected one of {} (or a JSON Patch document's {})",
                        Op::names(false),
                        Op::names(true)
                    ),
                ));
                None
            }
        },
        Some((other, _)) => {
            report.push(field_error(
                index,
                ErrorKind::InvalidField,
                "/op",
                format!("\"op\" must be a string, not {}", type_name(other)),
            ));
            None
        }
    };
    Some((op?, patch_form))
}

fn decode_path<'a>(
    json: Option<impl JsonTree<'a>>,
    field: &str,
    pointer_form: bool,
    index: usize,
    report: &mut Vec<BatchError>,
) -> Option<Path> {
    let Some(json) = json else {
        report.push(field_error(
            index,
            ErrorKind::MissingField,
            field,
            format!("missing \"{}\"", &field[1..]),
        ));
        return None;
    };
    if pointer_form {
        // JSON Patch documents address by JSON Pointer.
        if let NodeKind::String(pointer) = json.kind() {
            let repaired;
            let mut pointer = pointer;
            if !pointer.is_empty() && !pointer.starts_with('/') {
                // Reported as a repair; lenient decoding keeps the path, strict decoding refuses it.
                report.push(field_error(
                    index,
                    ErrorKind::PointerWithoutSlash,
                    field,
                    format!("{MISSING_SLASH}; read \"{pointer}\" as \"/{pointer}\""),
                ));
                repaired = format!("/{pointer}");
                pointer = &repaired;
            }
            // A repaired pointer can still be invalid (`a~2`): that is an error of its own, so that
            // the instruction is never dropped with only a warning.
            return match Path::from_pointer(pointer) {
                Ok(path) => Some(path),
                Err(error) => {
                    report.push(field_error(
                        index,
                        ErrorKind::InvalidPath,
                        field,
                        format!("{error}: \"{pointer}\""),
                    ));
                    None
                }
            };
        }
        if json.kind() == NodeKind::Array {
            // The canonical form (`extract`, `convert --to json`) writes every path as a list, a
            // patch's too, so that it reads back: each segment is the reference token it spells.
            return match path_from_json(json) {
                Ok(path) => Some(
                    path.segments()
                        .iter()
                        .map(|segment| match segment {
                            Segment::Index(index) => Segment::key(&index.to_string()),
                            Segment::Key(_) => segment.clone(),
                        })
                        .collect(),
                ),
                Err(message) => {
                    report.push(field_error(index, ErrorKind::InvalidPath, field, message));
                    None
                }
            };
        }
        report.push(field_error(
            index,
            ErrorKind::InvalidPath,
            field,
            format!(
                "a JSON Patch \"{}\" must be a JSON Pointer string or a list of keys, not {}",
                &field[1..],
                type_name(json)
            ),
        ));
        return None;
    }
    match path_from_json(json) {
        Ok(path) => Some(path),
        Err(message) => {
            report.push(field_error(index, ErrorKind::InvalidPath, field, message));
            None
        }
    }
}

fn decode_value<'a>(
    json: impl JsonTree<'a>,
    field: &str,
    index: usize,
    limits: &Limits,
    report: &mut Vec<BatchError>,
) -> Option<Value> {
    // Measured before conversion, so a hostile depth never reaches recursive code.
    let depth = json_depth(json);
    if depth > limits.max_value_depth {
        report.push(field_error(
            index,
            ErrorKind::ValueTooDeep,
            field,
            format!(
                "the value nests {depth} levels deep; the limit is {}",
                limits.max_value_depth
            ),
        ));
        return None;
    }
    Some(Value::from_json(json))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `Op::ALL` lists every op once, in the order of this match. The match is exhaustive, so a new
    /// variant fails to compile here until it has a position; `Op::name` is exhaustive too, and the
    /// count of its arms (read from this file) must be the length of `Op::ALL`.
    #[test]
    fn all_lists_every_op_once_in_order() {
        // `Op::ALL`, the names and the enum are one table (`registry!`): each op reads back.
        for op in Op::ALL {
            assert_eq!(op.name().parse::<Op>(), Ok(op), "{op} does not read back");
        }
        let names: std::collections::BTreeSet<&str> = Op::ALL.into_iter().map(Op::name).collect();
        assert_eq!(names.len(), Op::ALL.len(), "two ops share a name");
        // Every op is named in the messages that list what is expected.
        let listed = format!("{}, {}", Op::names(false), Op::names(true));
        for op in Op::ALL {
            assert!(
                listed.split(", ").any(|name| name == op.name()),
                "{op} is not listed"
            );
        }
    }

    #[test]
    fn decodes_every_instruction_op() {
        let batch = Batch::from_json(&json!([
            {"op": "assign", "path": ["player", "hp"], "value": 80, "old": 100, "reason": "hit"},
            {"op": "get", "path": []},
            {"op": "delete", "path": ["a", 0]},
            {"op": "merge", "path": [], "value": {"a": 1}},
            {"op": "push", "path": ["bag"], "value": "rope"},
            {"op": "pop", "path": ["bag"]},
            {"op": "splice", "path": ["bag"], "value": {"start": 0}},
            {"op": "callback", "path": ["levelUp"], "value": [2]},
            {"op": "increment", "path": ["gold"], "value": -5}
        ]))
        .unwrap();
        assert_eq!(batch.len(), 9);
        assert_eq!(batch.instructions[0].old, Some(Value::from(100)));
        assert_eq!(batch.to_json()[2]["path"], json!(["a", 0]));
    }

    #[test]
    fn text_forms_are_the_canonical_json_printed() {
        let batch = Batch::from_json(&json!([
            {"op": "assign", "path": ["player", "hp"], "value": 80, "old": 100, "reason": "a \"hit\"\n\u{1} é 🐉"},
            {"op": "get", "path": []},
            {"op": "delete", "path": ["a", 0, "b", 12345678901234567890_u64]},
            {"op": "merge", "path": [], "value": {"z": 1, "a": [1.5, -0.0, 1e300, 2E-3], "é": {}, "": []}},
            {"op": "push", "path": ["bag"], "value": null, "metadata": {"turn": 3, "by": ["gm", true]}},
            {"op": "callback", "path": ["levelUp"]},
            {"op": "increment", "path": ["gold"], "value": 123456789012345678901234567890_f64}
        ]))
        .unwrap();
        let patch = Batch::from_json(&json!([
            {"op": "move", "from": "/a/0", "path": "/b"},
            {"op": "test", "path": "/c", "value": false}
        ]))
        .unwrap();
        for batch in [batch, patch, Batch::default()] {
            let expected = serde_json::to_string_pretty(&batch.to_json()).unwrap();
            assert_eq!(batch.to_json_pretty(), expected);
            for instruction in &batch.instructions {
                assert_eq!(
                    instruction.to_json_text(),
                    instruction.to_json().to_string()
                );
            }
        }
        let big: Json = serde_json::from_str(
            r#"[{"op": "assign", "path": ["n"], "value": 123456789012345678901234567890, "old": 1.0e-7}]"#,
        )
        .unwrap();
        let big = Batch::from_json(&big).unwrap();
        let expected = serde_json::to_string_pretty(&big.to_json()).unwrap();
        assert_eq!(big.to_json_pretty(), expected);
        assert!(expected.contains("123456789012345678901234567890"));
        let one = &big.instructions[0];
        assert_eq!(one.to_json_text(), one.to_json().to_string());
    }

    #[test]
    fn reports_every_problem_with_index_and_pointer() {
        let errors = Batch::from_json(&json!([
            {"op": "assign", "path": "player.hp", "value": 1},
            {"op": "jump", "path": []},
            {"op": "push", "path": ["a"], "colour": 1},
        ]))
        .unwrap_err();
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "instruction 0, field /path: a path must be a list of keys and indexes, like [\"player\", \"hp\"], not a string",
                "instruction 1, field /op: unknown op \"jump\"; expected one of assign, get, delete, merge, push, pop, splice, callback, increment (or a JSON Patch document's add, remove, replace, move, copy, test)",
                "instruction 2, field /colour: unknown member \"colour\"; an instruction has only op, path, from, value, old, reason, metadata",
                "instruction 2, field /value: push needs a \"value\"",
            ]
        );
    }

    #[test]
    fn serde_round_trip_is_strict() {
        let batch: Batch =
            serde_json::from_str(r#"[{"op": "push", "path": ["bag", 0], "value": "rope"}]"#)
                .unwrap();
        assert_eq!(
            serde_json::to_string(&batch).unwrap(),
            r#"[{"op":"push","path":["bag",0],"value":"rope"}]"#
        );
        let error =
            serde_json::from_str::<Instruction>(r#"{"op": "pop", "path": ["bag"], "value": 1}"#)
                .unwrap_err();
        assert_eq!(
            error.to_string(),
            "instruction 0, field /value: pop takes no \"value\""
        );
    }

    #[test]
    fn lenient_decoding_reports_and_ignores_unknown_members() {
        let lenient = Batch::from_json_lenient(
            &json!({"op": "delete", "path": ["a"], "note": "x"}),
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(lenient.batch.len(), 1);
        assert_eq!(lenient.warnings[0].field.as_deref(), Some("/note"));
        assert_eq!(lenient.warnings[0].kind, ErrorKind::UnknownMember);
    }

    #[test]
    fn one_instruction_decodes_leniently_like_a_batch_of_one() {
        let limits = Limits::default();
        let json = json!({"op": "assign", "path": ["a"], "value": 1, "mood": "x"});
        let (instruction, warnings) = Instruction::from_json_lenient(&json, &limits).unwrap();
        let batch = Batch::from_json_lenient(&json, &limits).unwrap();
        assert_eq!(batch.batch.instructions, [instruction]);
        assert_eq!(batch.warnings, warnings);
        assert_eq!(warnings[0].kind, ErrorKind::UnknownMember);
        let bad = json!({"op": "assign", "value": 1, "mood": "x"});
        let errors = Instruction::from_json_lenient(&bad, &limits).unwrap_err();
        assert_eq!(errors, Batch::from_json_lenient(&bad, &limits).unwrap_err());
        assert_eq!(errors.len(), 1, "{errors:?}");
    }

    #[test]
    fn a_repaired_pointer_that_is_still_invalid_is_an_error() {
        let json = json!([{"op": "add", "path": "a~2", "value": 1}]);
        let errors = Batch::from_json_lenient(&json, &Limits::default()).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].kind, ErrorKind::InvalidPath);
        let errors = Instruction::from_json_lenient(&json[0], &Limits::default()).unwrap_err();
        assert_eq!(errors[0].kind, ErrorKind::InvalidPath);
    }

    #[test]
    fn json_patch_documents_use_pointers_and_cannot_mix() {
        let mixed = Batch::from_json(&json!([{"op": "add", "path": "/a/0", "value": 1}, {"op": "increment", "path": ["n"], "value": 2}])).unwrap_err();
        assert_eq!(mixed[0].kind, ErrorKind::MixedBatch);
        let delta = Batch::from_json(&json!([{"op": "add", "path": "/a/0", "value": 1}, {"op": "delta", "path": "/n", "value": 2}])).unwrap();
        assert_eq!(delta.instructions[1].op, Op::Increment);
        let ok = Batch::from_json(&json!([{"op": "move", "from": "/a", "path": "/b"}])).unwrap();
        assert_eq!(ok.instructions[0].from, Some(crate::path!["a"]));
        let repaired = Batch::from_json_lenient(
            &json!([{"op": "replace", "path": "a/b", "value": 1}]),
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(repaired.batch.instructions[0].path, crate::path!["a", "b"]);
        assert_eq!(repaired.warnings.len(), 1);
        assert_eq!(repaired.warnings[0].kind, ErrorKind::PointerWithoutSlash);
        assert!(Batch::from_json(&json!([{"op": "replace", "path": "a/b", "value": 1}])).is_err());
    }
}
