//! Feedback for a reply before anything is applied: every problem, where it is, and the corrected
//! instruction when it can be inferred.
//!
//! This module owns the self-correction loop's checks: extraction (through
//! [`statecraft_translators::extract`]), a trial run of the batch on a throwaway copy of the state (an
//! O(1) clone; the caller's state never changes), the tailored language of [`crate::spec`] to say
//! which instruction broke the schema, and the inference of corrections (a misspelt key, a stale `old`,
//! a value of the wrong JSON type, a `merge` onto a non-object). No scripts run here: `callback`
//! instructions are skipped in the trial. The message wording is
//! [`statecraft_translators::feedback`]'s; this module only adds the corrected batch. A correction is
//! offered only when the engine accepts the corrected batch on a copy, so the model is never told to
//! send something that would fail.

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::{Value as Json, json};
use statecraft_engine::{
    ApplyOptions, Batch, BatchError, BatchErrors, ErrorKind, Instruction, Op, Outcome, Path,
    Policies, Segment, StateSchema, Store, Trail, UnknownCallback, Value,
};
use statecraft_translators::mvu::MvuOptions;
use statecraft_translators::{
    DiagnosticKind, ExtractOptions, Extraction, Severity, extract, feedback,
};

use crate::rules::canonical;
use crate::spec::{InstructionSpec, Mismatch, Shape, ShapeId};

/// What a [`Problem`] is about. [`ProblemKind::code`] is the stable name in JSON output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// Something extraction noticed in the reply's text.
    Diagnostic(DiagnosticKind),
    /// Something the engine refused when the batch was tried on a copy of the state.
    Batch(ErrorKind),
    /// An instruction outside the language the state's schema allows.
    OutsideSchema,
}

impl ProblemKind {
    /// The stable snake_case code: the diagnostic's or the engine error's own, or `outside_schema`.
    pub fn code(self) -> &'static str {
        match self {
            ProblemKind::Diagnostic(kind) => kind.code(),
            ProblemKind::Batch(kind) => kind.code(),
            ProblemKind::OutsideSchema => "outside_schema",
        }
    }
}

/// The code, as in JSON output.
impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Serialised as its code.
impl Serialize for ProblemKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

/// One thing the model should correct.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Problem {
    /// What it is about; serialised as its stable snake_case code.
    pub kind: ProblemKind,
    /// The instruction's index in the batch, when the problem is about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<usize>,
    /// Where: `line 3, column 2` in the reply, or `instruction 1` with a JSON Pointer.
    pub location: String,
    /// What is wrong.
    pub message: String,
    /// The instruction written correctly, when it can be inferred.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrected: Option<Json>,
}

/// What [`review`] found.
#[derive(Clone, Debug, Serialize)]
pub struct Review {
    /// Every problem, reply problems first, then the batch's.
    pub problems: Vec<Problem>,
    /// The message to send back to the model; empty when there is nothing to correct or suggest.
    pub message: String,
    /// The whole batch with every inferable correction made, when the engine accepts it on a copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrected_batch: Option<Json>,
    /// The reply's cleanliness score (the repair report's; `[]` alone scores 100).
    pub score: u8,
    /// The batch read from the reply, canonical.
    pub batch: Json,
    /// The engine's errors from the trial run (empty when it would commit or never ran).
    #[serde(skip)]
    pub errors: Vec<BatchError>,
    /// What extraction found.
    #[serde(skip)]
    pub extraction: Extraction,
}

impl Review {
    /// Whether there is nothing to correct.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Reads `text` as instructions for `state` and checks them without changing anything.
///
/// Time: O(reply) for extraction plus the trial run, which costs what applying the batch costs.
pub fn review(text: &str, state: &Value, schema: Option<&StateSchema>) -> Review {
    let extraction = extract_for(text, state);
    let spec = spec_for(state, schema);
    let mut problems: Vec<Problem> = extraction
        .diagnostics
        .iter()
        .filter(|d| d.severity >= Severity::Warning)
        .map(|d| Problem {
            kind: ProblemKind::Diagnostic(d.kind),
            instruction: None,
            location: format!("line {}, column {}", d.line, d.column),
            message: d.message.to_string(),
            corrected: None,
        })
        .collect();
    let mut errors = Vec::new();
    let mut corrected_batch = None;
    // The options the reply calls for; `None` when it is invalid and must not run at all.
    let options = extraction.applicable().map(|(_, options)| options);
    if let Some(options) = &options {
        match trial(state, schema, &extraction.batch, options) {
            Trial::Committed => {}
            Trial::Rejected(found) => errors = found,
        }
    }
    if let (false, Some(options)) = (errors.is_empty(), &options) {
        let mut corrections: Vec<Option<Json>> = extraction
            .batch
            .instructions
            .iter()
            .map(|i| correct(&spec, state, i))
            .collect();
        for error in &errors {
            let index = error
                .instruction
                .as_ref()
                .and_then(|t| t.0.first().copied());
            // Only errors about the model's own instruction (not what a callback emitted) get its fix.
            let own = error.instruction.as_ref().is_some_and(|t| t.0.len() == 1);
            problems.push(Problem {
                kind: ProblemKind::Batch(error.kind),
                instruction: index,
                location: location(error),
                message: error.message.clone(),
                corrected: index
                    .filter(|_| own)
                    .and_then(|i| corrections.get(i).cloned().flatten()),
            });
        }
        if schema.is_some() {
            // The engine stops at the first instruction that fails to run; the schema's language
            // names the later ones too, so the model can fix them all in one round.
            let mut extra = Vec::new();
            for (index, instruction) in extraction.batch.instructions.iter().enumerate() {
                let Err(mismatch) = spec.check(&without_extras(&instruction.to_json())) else {
                    continue;
                };
                let corrected = corrections.get(index).cloned().flatten();
                problems.push(Problem {
                    kind: ProblemKind::OutsideSchema,
                    instruction: Some(index),
                    location: format!("instruction {index}"),
                    message: mismatch_text(&mismatch),
                    corrected,
                });
                let reported = errors
                    .iter()
                    .any(|e| e.instruction.as_ref().and_then(|t| t.0.first()) == Some(&index));
                if !reported {
                    extra.push(BatchError::at_path(
                        ErrorKind::SchemaViolation,
                        &Trail(vec![index]),
                        instruction.path.to_pointer(),
                        mismatch_text(&mismatch),
                    ));
                }
            }
            errors.extend(extra);
        }
        if corrections.iter().any(Option::is_some) {
            let fixed: Vec<Instruction> = extraction
                .batch
                .instructions
                .iter()
                .zip(corrections.iter_mut())
                .map(|(original, fix)| {
                    fix.take()
                        .and_then(|json| Instruction::from_json(&json).ok())
                        .unwrap_or_else(|| original.clone())
                })
                .collect();
            let batch = Batch::new(fixed);
            if let Trial::Committed = trial(state, schema, &batch, options) {
                corrected_batch = Some(batch.to_json());
            }
        }
    }
    let mut message = feedback(&extraction, &errors);
    match &corrected_batch {
        Some(batch) => {
            let lines: Vec<String> = batch.as_array().map_or(Vec::new(), |items| {
                items.iter().map(instruction_text).collect()
            });
            message.push_str("This corrected update would apply:\n```json\n[");
            message.push_str(&lines.join(",\n "));
            message.push_str("]\n```\n");
        }
        None => {
            // The whole batch cannot be fixed, but single instructions can still be shown corrected.
            let mut fixes: Vec<(usize, &Json)> = problems
                .iter()
                .filter_map(|p| Some((p.instruction?, p.corrected.as_ref()?)))
                .collect();
            fixes.sort_by_key(|(index, _)| *index);
            fixes.dedup_by_key(|(index, _)| *index);
            for (index, fix) in fixes {
                message.push_str(&format!(
                    "Instruction {index} written correctly: {}\n",
                    instruction_text(fix)
                ));
            }
        }
    }
    Review {
        problems,
        message,
        corrected_batch,
        score: extraction.report.score,
        batch: extraction.batch.to_json(),
        errors,
        extraction,
    }
}

/// Extraction with the state at hand, so MVU's type-dependent commands resolve exactly.
pub(crate) fn extract_for(text: &str, state: &Value) -> Extraction {
    let options = ExtractOptions {
        mvu: MvuOptions {
            state: Some(state.clone()),
            ..MvuOptions::default()
        },
        ..ExtractOptions::default()
    };
    extract(text, &options)
}

/// The language to check against: the schema's, or the one the state implies.
pub(crate) fn spec_for(state: &Value, schema: Option<&StateSchema>) -> InstructionSpec {
    match schema {
        Some(schema) => InstructionSpec::from_schema(Some(schema.source())),
        None => InstructionSpec::from_state(state),
    }
}

pub(crate) enum Trial {
    Committed,
    Rejected(Vec<BatchError>),
}

/// Runs `batch` on a copy of `state`. The store is built here and dropped, so nothing escapes.
pub(crate) fn trial(
    state: &Value,
    schema: Option<&StateSchema>,
    batch: &Batch,
    options: &ApplyOptions,
) -> Trial {
    match trial_store(state, schema) {
        Ok(mut store) => run(&mut store, batch, options),
        Err(errors) => Trial::Rejected(errors.0),
    }
}

/// A throwaway store for `state`; errors when the state itself breaks the schema.
pub(crate) fn trial_store(
    state: &Value,
    schema: Option<&StateSchema>,
) -> Result<Store, BatchErrors> {
    let mut builder = Store::builder(state.clone());
    if let Some(schema) = schema {
        // `StateSchema` is not `Clone`; compiling its source again cannot fail where it once succeeded,
        // and if it ever did the message says so instead of checking without the schema.
        match StateSchema::new(schema.source().clone()) {
            Ok(copy) => builder = builder.schema(copy),
            Err(error) => {
                return Err(BatchErrors(vec![BatchError::whole_batch(
                    ErrorKind::SchemaViolation,
                    None,
                    error.to_string(),
                )]));
            }
        }
    }
    builder.build()
}

/// Applies on `store` with `options`, the reply's (see [`Extraction::applicable`]).
///
/// No script handlers are loaded here, so a `callback` is skipped rather than refused: whether its
/// name is registered is the host's business, and the rest of the batch still gets checked.
pub(crate) fn run(store: &mut Store, batch: &Batch, options: &ApplyOptions) -> Trial {
    // Trial stores run with the default policies, so a reply's options without policies mean those.
    let policies = Policies {
        unknown_callback: UnknownCallback::Skip,
        ..options.policies.unwrap_or_default()
    };
    let options = ApplyOptions {
        policies: Some(policies),
        ..options.clone()
    };
    match store.apply_with(batch, &options) {
        Outcome::Committed(_) => Trial::Committed,
        Outcome::Rejected(rejection) => Trial::Rejected(rejection.errors),
    }
}

/// An instruction's compact text in the grammar's member order.
fn instruction_text(instruction: &Json) -> String {
    match instruction.as_object() {
        Some(map) => canonical(map),
        None => instruction.to_string(),
    }
}

fn location(error: &BatchError) -> String {
    let mut out = match &error.instruction {
        Some(trail) => trail.to_string(),
        None => "the batch".to_owned(),
    };
    if let Some(field) = &error.field {
        out.push_str(&format!(", field {field}"));
    }
    if let Some(path) = &error.path {
        out.push_str(&format!(
            ", state {}",
            if path.is_empty() { "/" } else { path }
        ));
    }
    out
}

/// A sentence for a mismatch with the tailored language.
pub(crate) fn mismatch_text(mismatch: &Mismatch) -> String {
    match mismatch {
        Mismatch::Malformed(why) => why.clone(),
        Mismatch::UnknownPath => "this path is not in the state schema".into(),
        Mismatch::OpNotAllowed(ops) => {
            let names: Vec<&str> = ops.iter().map(|op| op.name()).collect();
            format!("this op is not allowed here; allowed: {}", names.join(", "))
        }
        Mismatch::BadValue(why) | Mismatch::BadOld(why) => why.clone(),
    }
}

/// The instruction written correctly, when that can be inferred and the language accepts it.
fn correct(spec: &InstructionSpec, state: &Value, instruction: &Instruction) -> Option<Json> {
    let original = instruction.to_json();
    let mut fixed = original.clone();
    // A stale old value: the current one is what the model meant to confirm.
    if instruction.old.is_some() {
        let current = state
            .lookup(instruction.path.segments())
            .map_or(Json::Null, Value::to_json);
        fixed["old"] = current;
    }
    if fixed["path"]
        .as_array()
        .is_some_and(|p| spec.ops_at(p).is_empty())
    {
        if let Some(path) = nearest_path(state, &instruction.path) {
            fixed["path"] = Json::Array(path);
        }
    }
    let path = fixed["path"].as_array().cloned().unwrap_or_default();
    let ops = spec.ops_at(&path);
    if instruction.op == Op::Merge && !ops.contains(&Op::Merge) && ops.contains(&Op::Assign) {
        fixed["op"] = json!("assign");
    }
    if let Some(value) = fixed.get("value").cloned() {
        let op_name = fixed["op"].as_str().unwrap_or_default().to_owned();
        let operand = spec.target_for(&path).and_then(|target| {
            target
                .groups
                .iter()
                .find(|g| g.ops.iter().any(|op| op.name() == op_name))
                .and_then(|g| g.operand)
        });
        if let Some(shape) = operand {
            if !spec.shape_accepts(shape, &value) {
                if let Some(coerced) = coerce(spec, shape, &value) {
                    fixed["value"] = coerced;
                }
            }
        }
    }
    (fixed != original && spec.accepts(&without_extras(&fixed))).then_some(fixed)
}

/// The instruction without members the language does not speak (`metadata`, `from`), for checking.
fn without_extras(instruction: &Json) -> Json {
    let mut copy = instruction.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        map.remove("from");
    }
    copy
}

/// A value of the wrong JSON type read as the shape's type: `"80"` as 80, `"true"` as true, 5 as
/// `"5"`, `"Forest"` as the enum member `"forest"`.
fn coerce(spec: &InstructionSpec, shape: ShapeId, value: &Json) -> Option<Json> {
    let text = value.as_str().map(str::trim);
    let candidate = match spec.shape(shape) {
        Shape::Integer { .. } => text
            .and_then(|t| t.parse::<i64>().ok())
            .map(|n| json!(n))
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|x| x.fract() == 0.0 && x.abs() < 9.0e15)
                    .map(|x| json!(x as i64))
            }),
        Shape::Number { .. } => text
            .and_then(|t| t.parse::<f64>().ok())
            .filter(|x| x.is_finite())
            .map(|x| json!(x)),
        Shape::Boolean => match text {
            Some("true" | "True" | "yes") => Some(json!(true)),
            Some("false" | "False" | "no") => Some(json!(false)),
            _ => None,
        },
        Shape::String => match value {
            Json::Number(n) => Some(json!(n.to_string())),
            Json::Bool(b) => Some(json!(b.to_string())),
            _ => None,
        },
        Shape::Enum(options) => {
            let wanted = text.map(str::to_lowercase)?;
            options
                .iter()
                .find(|o| o.as_str().is_some_and(|s| s.to_lowercase() == wanted))
                .cloned()
        }
        _ => None,
    }?;
    spec.shape_accepts(shape, &candidate).then_some(candidate)
}

/// The existing path closest to `path`: each key matched to an existing key that differs only in case,
/// separators or one edit. `None` when some segment has no single close match.
fn nearest_path(state: &Value, path: &Path) -> Option<Vec<Json>> {
    let mut here = state;
    let mut out = Vec::new();
    for segment in path.segments() {
        match (here, segment) {
            (Value::Object(map), Segment::Key(key)) => {
                let (found, next) = match map.get(&**key) {
                    Some(next) => (key.to_string(), next),
                    None => {
                        let close: Vec<_> = map.iter().filter(|(k, _)| near(k, key)).collect();
                        let [(k, next)] = close.as_slice() else {
                            return None;
                        };
                        (k.to_string(), *next)
                    }
                };
                out.push(json!(found));
                here = next;
            }
            (Value::Array(items), Segment::Index(index)) => {
                here = items.get(*index)?;
                out.push(json!(index));
            }
            (Value::Array(items), Segment::Key(key)) => {
                let index = statecraft_engine::decimal_index(key)?;
                here = items.get(index)?;
                out.push(json!(index));
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Whether two keys differ only in case and separators, or by one edit in keys of four or more.
fn near(a: &str, b: &str) -> bool {
    let fold = |s: &str| -> String {
        s.chars()
            .filter(|c| !matches!(c, '_' | '-' | ' '))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let (a, b) = (fold(a), fold(b));
    if a == b {
        return true;
    }
    a.chars().count() >= 4 && b.chars().count() >= 4 && edit_distance(&a, &b) <= 1
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> Value {
        Value::from_json(&json!({"player": {"hp": 30, "mood": "calm"}}))
    }

    fn schema() -> StateSchema {
        let source = json!({
            "type": "object",
            "properties": {"player": {"type": "object", "properties": {
                "hp": {"type": "integer", "minimum": 0},
                "mood": {"enum": ["calm", "angry"]}
            }}}
        });
        match StateSchema::new(source) {
            Ok(schema) => schema,
            Err(error) => panic!("{error}"),
        }
    }

    #[test]
    fn clean_replies_have_no_problems() {
        let review = review(
            r#"[{"op": "increment", "path": ["player", "hp"], "value": -5}]"#,
            &state(),
            Some(&schema()),
        );
        assert!(review.is_clean(), "{:?}", review.problems);
        assert_eq!(review.message, "");
    }

    #[test]
    fn misspelt_keys_and_string_numbers_are_corrected() {
        let review = review(
            r#"[{"op": "assign", "path": ["player", "HP"], "value": "25"}, {"op": "assign", "path": ["player", "mood"], "value": "Angry"}]"#,
            &state(),
            Some(&schema()),
        );
        assert!(!review.is_clean());
        assert_eq!(
            review.corrected_batch,
            Some(json!([
                {"op": "assign", "path": ["player", "hp"], "value": 25},
                {"op": "assign", "path": ["player", "mood"], "value": "angry"}
            ]))
        );
        assert!(
            review.message.contains("This corrected update would apply"),
            "{}",
            review.message
        );
    }

    #[test]
    fn stale_old_values_are_replaced_by_the_current_one() {
        let review = review(
            r#"[{"op": "assign", "path": ["player", "hp"], "value": 20, "old": 99}]"#,
            &state(),
            None,
        );
        let problem = review
            .problems
            .iter()
            .find(|p| p.kind == ProblemKind::Batch(ErrorKind::OldMismatch))
            .cloned();
        assert_eq!(
            problem.and_then(|p| p.corrected),
            Some(json!({"op": "assign", "path": ["player", "hp"], "value": 20, "old": 30}))
        );
    }

    #[test]
    fn every_instruction_outside_the_schema_is_named_with_its_fix() {
        let review = review(
            r#"[{"op": "merge", "path": ["player", "hp"], "value": 5}, {"op": "push", "path": ["player", "hp"], "value": 1}]"#,
            &state(),
            Some(&schema()),
        );
        // The engine refuses the first instruction only; the second is named from the schema.
        assert!(
            review
                .message
                .contains("instruction 1, at /player/hp: this op is not allowed here; allowed: assign, delete, increment"),
            "{}",
            review.message
        );
        assert!(
            review.message.contains(
                "Instruction 0 written correctly: {\"op\":\"assign\",\"path\":[\"player\",\"hp\"],\"value\":5}"
            ),
            "{}",
            review.message
        );
        assert_eq!(
            review.corrected_batch, None,
            "push onto a number has no inferable fix"
        );
    }

    #[test]
    fn an_empty_array_means_nothing_changed() {
        for text in ["[]", "Nothing changes.\n```json\n[]\n```"] {
            let review = review(text, &state(), Some(&schema()));
            assert!(review.is_clean(), "{text}: {:?}", review.problems);
        }
        let review = review("The hero rests.", &state(), None);
        assert_eq!(review.problems.len(), 1, "{:?}", review.problems);
        assert_eq!(
            review.problems[0].kind,
            ProblemKind::Diagnostic(DiagnosticKind::NoInstructions)
        );
    }

    #[test]
    fn callbacks_are_the_hosts_business() {
        let review = review(
            r#"[{"op": "callback", "path": ["level_up"]}, {"op": "increment", "path": ["player", "hp"], "value": 1}]"#,
            &state(),
            None,
        );
        assert!(review.is_clean(), "{:?}", review.problems);
    }

    #[test]
    fn keys_near_each_other() {
        assert!(near("max_hp", "maxHP"));
        assert!(near("inventory", "inventry"));
        assert_eq!(edit_distance("inventory", "inventroy"), 2);
        assert!(near("stage", "stages"));
        assert!(!near("hp", "xp"));
    }
}
