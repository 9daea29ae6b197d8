//! Grading a reply the way a structured-output benchmark would, so front ends and benchmarks can
//! compare models.
//!
//! This module owns the grade and its score formula. It must not change the caller's state: the batch
//! runs on a throwaway copy (see [`crate::review`]).
//!
//! # Score
//!
//! `score` is 0 when the reply is invalid (an instruction with an `op` could not be read) or its batch
//! would be rejected; otherwise the repair report's cleanliness score (100 only for exactly one clean
//! JSON batch) times the fraction of expected-state checks that pass, rounded. Without checks the
//! fraction is 1. A reply whose only JSON is `[]` ("nothing changed", as the rules ask) is an empty
//! batch to the repair report: it scores 100 when bare and loses the report's penalties for any
//! wrapping.

use serde::Serialize;
use serde_json::Value as Json;
use statecraft_engine::{BatchError, Path, PointerError, StateSchema, Value};
use statecraft_translators::{Extraction, RepairReport, Severity};

use crate::review::{Trial, extract_for, run, trial_store};
use crate::spec::InstructionSpec;

/// One expected value in the state after the reply: a JSON Pointer and the value it should hold.
/// An absent value counts as `null`, as for `old` checks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expectation {
    /// Where, as a JSON Pointer (`/player/hp`).
    pub pointer: String,
    /// What it should be (numbers compare by value).
    pub value: Json,
}

/// Why expectations could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpectationError {
    /// The expectations are not a JSON object.
    #[error("expectations must be a json object mapping json pointers to values")]
    NotAnObject,
    /// A key is not a JSON Pointer.
    #[error("{pointer:?} is not a json pointer: {problem}")]
    NotAPointer {
        /// The key as written.
        pointer: String,
        /// What is wrong with it.
        problem: PointerError,
    },
}

impl Expectation {
    /// Reads expectations from a JSON object mapping pointers to values: `{"/player/hp": 25}`.
    pub fn from_map(json: &Json) -> Result<Vec<Expectation>, ExpectationError> {
        let map = json.as_object().ok_or(ExpectationError::NotAnObject)?;
        map.iter()
            .map(|(pointer, value)| {
                Path::from_pointer(pointer)
                    .map(|_| Expectation {
                        pointer: pointer.clone(),
                        value: value.clone(),
                    })
                    .map_err(|problem| ExpectationError::NotAPointer {
                        pointer: pointer.clone(),
                        problem,
                    })
            })
            .collect()
    }

    /// Checks the expectation against `state`: numbers compare by value, and an absent value counts
    /// as `null`. Time: O(depth × log n) plus the size of the values compared.
    pub fn check(&self, state: &Value) -> CheckOutcome {
        let found = Path::from_pointer(&self.pointer)
            .ok()
            .and_then(|path| state.lookup(path.segments()));
        let passed = *found.unwrap_or(&Value::Null) == Value::from_json(&self.value);
        CheckOutcome {
            pointer: self.pointer.clone(),
            expected: self.value.clone(),
            actual: found.map(Value::to_json),
            passed,
        }
    }
}

/// The outcome of one expectation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckOutcome {
    /// Where.
    pub pointer: String,
    /// What was expected.
    pub expected: Json,
    /// What the state held after the reply; `None` when absent (serialised as `null`).
    pub actual: Option<Json>,
    /// Whether they are equal.
    pub passed: bool,
}

/// How a reply did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Grade {
    /// The overall score, 0 to 100 (see the module documentation).
    pub score: u8,
    /// The repair report's cleanliness score.
    pub cleanliness: u8,
    /// Whether every instruction with an `op` could be read.
    pub valid: bool,
    /// Whether the engine would commit the batch on the state (`callback`s are skipped: no scripts
    /// are loaded for grading).
    pub applies: bool,
    /// Whether every instruction is in the tailored language of the state schema (what a
    /// structured-output API constrained by `statecraft schema` would have produced).
    pub in_schema: bool,
    /// Instructions read.
    pub instructions: usize,
    /// Why the reply would not be committed: the errors read in the text when it is invalid (each with
    /// its line and column), else the engine's reasons when it would reject the batch.
    pub errors: Vec<String>,
    /// Expected-state checks, in the order given.
    pub checks: Vec<CheckOutcome>,
    /// How many checks passed.
    pub checks_passed: usize,
    /// What was cleaned in the reply.
    pub report: RepairReport,
}

/// Grades `text` as a reply for `state`.
///
/// Time: extraction (linear in the reply) plus one trial run of the batch.
pub fn grade(
    text: &str,
    state: &Value,
    schema: Option<&StateSchema>,
    expected: &[Expectation],
) -> Grade {
    let extraction = extract_for(text, state);
    // The language `statecraft schema` prints for the same schema (the free one without).
    let spec = InstructionSpec::from_schema(schema.map(StateSchema::source));
    let batch_json = extraction.batch.to_json();
    let (applies, errors, store) = match trial_store(state, schema) {
        Ok(mut store) => match extraction.applicable() {
            Some((batch, options)) => match run(&mut store, batch, &options) {
                Trial::Committed => (true, Vec::new(), Some(store)),
                Trial::Rejected(errors) => (false, to_strings(&errors), Some(store)),
            },
            // An invalid reply never runs: its reasons are the errors read in the text.
            None => (false, reply_errors(&extraction), Some(store)),
        },
        Err(errors) => (false, to_strings(&errors.0), None),
    };
    let after = store.as_ref().map_or(state, |s| s.state());
    let checks: Vec<CheckOutcome> = expected.iter().map(|e| e.check(after)).collect();
    let checks_passed = checks.iter().filter(|c| c.passed).count();
    let cleanliness = extraction.report.score;
    let score = if extraction.valid && applies {
        let fraction = if checks.is_empty() {
            1.0
        } else {
            checks_passed as f64 / checks.len() as f64
        };
        (f64::from(cleanliness) * fraction).round() as u8
    } else {
        0
    };
    Grade {
        score,
        cleanliness,
        valid: extraction.valid,
        applies,
        in_schema: spec.accepts_batch(&batch_json),
        instructions: extraction.batch.len(),
        errors,
        checks,
        checks_passed,
        report: extraction.report,
    }
}

fn to_strings(errors: &[BatchError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

/// Why an invalid reply was refused: each error diagnostic, with where it is in the reply.
fn reply_errors(extraction: &Extraction) -> Vec<String> {
    extraction
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| {
            format!(
                "line {}, column {}: {} [{}]",
                d.line, d.column, d.message, d.kind
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state() -> Value {
        Value::from_json(&json!({"hp": 30, "bag": []}))
    }

    #[test]
    fn clean_correct_replies_score_100() {
        let expected = Expectation::from_map(&json!({"/hp": 25, "/bag/0": "rope"}));
        let grade = grade(
            r#"[{"op":"increment","path":["hp"],"value":-5},{"op":"push","path":["bag"],"value":"rope"}]"#,
            &state(),
            None,
            &expected.unwrap_or_default(),
        );
        assert_eq!(
            (grade.score, grade.checks_passed, grade.applies),
            (100, 2, true)
        );
        assert!(grade.in_schema);
    }

    #[test]
    fn fenced_replies_lose_cleanliness_and_wrong_values_lose_checks() {
        let expected = Expectation::from_map(&json!({"/hp": 20, "/bag": []}));
        let grade = grade(
            "ok\n```json\n[{\"op\":\"increment\",\"path\":[\"hp\"],\"value\":-5}]\n```",
            &state(),
            None,
            &expected.unwrap_or_default(),
        );
        assert_eq!(grade.cleanliness, 100 - 2 - 3);
        assert_eq!(grade.checks_passed, 1);
        assert_eq!(grade.score, 48);
    }

    #[test]
    fn rejected_batches_score_zero() {
        let grade = grade(r#"[{"op":"pop","path":["bag"]}]"#, &state(), None, &[]);
        assert!(!grade.applies);
        assert_eq!(grade.score, 0);
        assert_eq!(grade.errors.len(), 1, "{:?}", grade.errors);
    }

    #[test]
    fn nothing_changed_is_a_clean_answer() {
        let expected = Expectation::from_map(&json!({"/hp": 30})).unwrap_or_default();
        let bare = grade("[]", &state(), None, &expected);
        assert_eq!(
            (bare.score, bare.applies, bare.checks_passed),
            (100, true, 1)
        );
        let fenced = grade(
            "Nothing changes.\n```json\n[]\n```",
            &state(),
            None,
            &expected,
        );
        assert_eq!(fenced.cleanliness, 100 - 2 - 3);
        assert_eq!(grade("The hero rests.", &state(), None, &[]).score, 0);
    }

    #[test]
    fn expectations_need_pointers() {
        assert!(Expectation::from_map(&json!({"hp": 1})).is_err());
        assert!(Expectation::from_map(&json!([1])).is_err());
    }
}
