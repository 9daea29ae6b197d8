//! The HTTP API's answers, as the wire carries them (docs/http.md).
//!
//! Every answer the server sends, success or error, is one of the types here, serialized straight
//! to its text. They are the server's own: what the engine and the text layer hand back (changes,
//! events, batch errors, diagnostics, the repair report) is copied into these types member by member,
//! so a refactor of those crates cannot change the API unseen; a new member there stays off the
//! wire until it is added here. Two things go out in the engine's own JSON form because that form is
//! the API's input language as well: a state (`Value`, plain JSON) and a batch of instructions
//! (`Batch::to_json`, the canonical instructions of docs/instructions.md), and the
//! prompt kit's JSON Schema of a batch, a document of its own.
//!
//! The golden files of `server/tests/wire/` pin each answer's JSON, and `cli/tests/js_types.rs` has
//! tsc check each of them against `clients/js/statecraft.d.ts`. This module must not decide what a
//! request answers: it only writes what was decided.

use std::borrow::Cow;

use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};
use serde_json::Value as Json;
use statecraft_engine::{BatchError, Change, HostEvent, Path, Segment, TrimmedStep, Value};
use statecraft_translators::{Diagnostic, RepairReport, Severity};

/// `GET /v1/health`.
#[derive(Serialize)]
pub(crate) struct Health {
    pub(crate) ok: bool,
    /// The binary's version.
    pub(crate) version: &'static str,
    /// [`crate::API_VERSION`].
    pub(crate) api: u32,
}

/// `POST /v1/games` (201), and the receipt of every request that made a game.
#[derive(Serialize)]
pub(crate) struct Created<'a> {
    pub(crate) id: &'a str,
    pub(crate) step: u64,
}

/// `GET /v1/games`: one page of games, and the id to ask the next page `after`.
#[derive(Serialize)]
pub(crate) struct GameList<'a> {
    pub(crate) games: Vec<GameListing<'a>>,
    pub(crate) next: Option<&'a str>,
}

/// A game in a list.
#[derive(Serialize)]
pub(crate) struct GameListing<'a> {
    pub(crate) id: &'a str,
    pub(crate) step: u64,
    pub(crate) label: Option<&'a str>,
}

/// `DELETE /v1/games/{id}`.
#[derive(Serialize)]
pub(crate) struct Deleted<'a> {
    pub(crate) id: &'a str,
    pub(crate) deleted: bool,
}

/// `GET /v1/games/{id}`, and after undo, redo and checkout (with `moved`): where a game stands.
#[derive(Serialize)]
pub(crate) struct Position<'a> {
    pub(crate) state: &'a Value,
    pub(crate) step: u64,
    pub(crate) label: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) moved: Option<bool>,
}

/// `GET /v1/games/{id}/state?at=…`: a step's state and its own change log (none for the root).
#[derive(Serialize)]
pub(crate) struct StepState<'a> {
    pub(crate) state: &'a Value,
    pub(crate) step: u64,
    pub(crate) label: Option<&'a str>,
    pub(crate) changes: Changes<'a>,
}

/// `GET /v1/games/{id}?view=mvu`: MVU's views of the current step.
#[derive(Serialize)]
pub(crate) struct MvuView<'a> {
    pub(crate) stat_data: &'a Json,
    pub(crate) display_data: &'a Json,
    pub(crate) delta_data: &'a Json,
    pub(crate) step: u64,
    pub(crate) label: Option<&'a str>,
}

/// `GET /v1/games/{id}/log`: the history tree.
#[derive(Serialize)]
pub(crate) struct Log<'a> {
    pub(crate) current: u64,
    pub(crate) roots: Vec<u64>,
    pub(crate) steps: Vec<LogStep<'a>>,
}

/// One step of the log.
#[derive(Serialize)]
pub(crate) struct LogStep<'a> {
    pub(crate) id: u64,
    pub(crate) parent: u64,
    pub(crate) label: Option<&'a str>,
    /// How many primitive changes it made.
    pub(crate) changes: usize,
    pub(crate) children: Vec<u64>,
    /// On the path from the root to the current step.
    pub(crate) applied: bool,
    pub(crate) current: bool,
    /// For a step made by sync: its reply's key (SHA-256, hex).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<String>,
    /// For a refused reply's step: why, as the model is told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) refusal: Option<&'a str>,
}

/// `GET /v1/games/{id}/card`: the version of the card the game holds at its current step, and the
/// macros it reads replies with.
#[derive(Serialize)]
pub(crate) struct GameCard<'a> {
    /// The card's fingerprint (SHA-256 of its `[InitVar]` text or settings); `null` for a game made
    /// without a card.
    pub(crate) fingerprint: Option<&'a str>,
    /// MVU's automatic schema of that card, in MVU's shape; `null` when it has none.
    pub(crate) automatic_schema: Option<&'a Json>,
    pub(crate) macros: &'a std::collections::BTreeMap<String, String>,
    pub(crate) profile: &'a str,
    pub(crate) step: u64,
    pub(crate) label: Option<&'a str>,
}

/// `POST /v1/games/{id}/card` (200): what a new version of the card does, or for a dry run (or the
/// same card) would do.
#[derive(Serialize)]
pub(crate) struct CardUpdated<'a> {
    /// Whether the card differs from the one the game holds (its fingerprint).
    pub(crate) changed: bool,
    /// Whether a step was made.
    pub(crate) committed: bool,
    /// The current step after the request.
    pub(crate) step: u64,
    pub(crate) label: Option<&'a str>,
    /// The keys added, each the topmost one the game lacked.
    pub(crate) added: Vec<WirePath<'a>>,
    /// The keys the old card had, the new one lacks and the game holds.
    pub(crate) dropped: Vec<WirePath<'a>>,
    /// The dropped keys removed (only when asked).
    pub(crate) removed: Vec<WirePath<'a>>,
    /// The descriptions brought up to the new card.
    pub(crate) descriptions: Vec<WirePath<'a>>,
    pub(crate) changes: Changes<'a>,
    pub(crate) fingerprint: &'a str,
    /// The fingerprint the game held before.
    pub(crate) previous: Option<&'a str>,
}

/// `POST /v1/games/{id}/apply` (200): what a batch did, or for a dry run would do.
#[derive(Serialize)]
pub(crate) struct Applied<'a> {
    pub(crate) committed: bool,
    #[serde(flatten)]
    pub(crate) outcome: AppliedOutcome<'a>,
    pub(crate) changes: Changes<'a>,
    pub(crate) events: Vec<Event<'a>>,
    pub(crate) warnings: Vec<Problem>,
    pub(crate) trimmed: Vec<Trimmed<'a>>,
    pub(crate) diagnostics: Vec<WireDiagnostic>,
    /// What was cleaned in the reply; `null` for a batch sent as JSON.
    pub(crate) report: Option<Report>,
}

/// Where an applied batch left the game.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum AppliedOutcome<'a> {
    /// Committed: the current step now.
    Committed { step: u64, label: Option<&'a str> },
    /// A dry run: nothing was kept; the state the batch would make.
    DryRun { dry_run: bool, state: &'a Value },
}

/// `POST /v1/games/{id}/sync` (200).
#[derive(Serialize)]
pub(crate) struct Synced<'a> {
    /// The state at the end of the path.
    pub(crate) state: &'a Value,
    pub(crate) step: u64,
    pub(crate) label: Option<&'a str>,
    /// The current step after the sync.
    pub(crate) current: u64,
    pub(crate) applied: Vec<SyncApplied<'a>>,
    /// How many replies were found as steps already.
    pub(crate) reused: usize,
}

/// A reply a sync applied.
#[derive(Serialize)]
pub(crate) struct SyncApplied<'a> {
    pub(crate) index: usize,
    pub(crate) step: u64,
    pub(crate) committed: bool,
    /// For a refused reply: the text to hand back to the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) feedback: Option<&'a str>,
}

/// `POST /v1/extract`.
#[derive(Serialize)]
pub(crate) struct Extracted<'a> {
    /// The instructions read, canonical.
    pub(crate) batch: Json,
    pub(crate) valid: bool,
    pub(crate) diagnostics: Vec<WireDiagnostic>,
    pub(crate) report: Report,
    pub(crate) feedback: &'a str,
}

/// `POST /v1/convert`.
#[derive(Serialize)]
pub(crate) struct Converted {
    /// The batch in the asked notation; `null` when JSON Patch cannot express it (see `errors`).
    pub(crate) output: Json,
    pub(crate) diagnostics: Vec<WireDiagnostic>,
    pub(crate) errors: Vec<Problem>,
}

/// `POST /v1/prompt`: the text to inject, its rules, the state view alone, their token counts by
/// the prompt kit's estimator and what the view leaves out.
#[derive(Serialize)]
pub(crate) struct Prompted<'a> {
    pub(crate) text: &'a str,
    pub(crate) rules: &'a str,
    pub(crate) state: &'a str,
    pub(crate) tokens: PromptTokens,
    pub(crate) elided: Vec<WireElided<'a>>,
}

/// `POST /v1/games/{id}/prompt`: [`Prompted`] and the step it shows.
#[derive(Serialize)]
pub(crate) struct GamePrompted<'a> {
    #[serde(flatten)]
    pub(crate) prompt: Prompted<'a>,
    pub(crate) step: u64,
    pub(crate) label: Option<&'a str>,
}

/// A prompt's token counts.
#[derive(Serialize)]
pub(crate) struct PromptTokens {
    /// The whole text.
    pub(crate) text: usize,
    /// The state view.
    pub(crate) state: usize,
    /// The whole state in the same format.
    pub(crate) full_state: usize,
}

/// A part of the state the view leaves out.
#[derive(Serialize)]
pub(crate) struct WireElided<'a> {
    pub(crate) path: &'a str,
    pub(crate) tokens: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) members: Option<usize>,
}

impl<'a> WireElided<'a> {
    pub(crate) fn all(elided: &'a [statecraft_prompt::Elided]) -> Vec<WireElided<'a>> {
        elided
            .iter()
            .map(
                |statecraft_prompt::Elided {
                     path,
                     tokens,
                     members,
                     ..
                 }| WireElided {
                    path,
                    tokens: *tokens,
                    members: *members,
                },
            )
            .collect()
    }
}

/// `GET /v1/games/{id}/schema`: the game's batch schema, the pass schema and the name to give it.
#[derive(Serialize)]
pub(crate) struct GameSchemas<'a> {
    pub(crate) schema: &'a statecraft_prompt::BatchSchema,
    pub(crate) pass: &'a statecraft_prompt::BatchSchema,
    pub(crate) name: &'static str,
    /// Some part of the state's schema could not be expressed, so the schemas accept more.
    pub(crate) partial: bool,
}

/// `POST /v1/games/{id}/evaluate`.
#[derive(Serialize)]
pub(crate) struct Evaluated<'a> {
    pub(crate) step: u64,
    pub(crate) label: Option<&'a str>,
    pub(crate) results: Vec<ConditionResult>,
}

/// One condition's result: whether it holds, or why its text cannot be read.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum ConditionResult {
    Holds { holds: bool },
    Error { error: ConditionProblem },
}

/// A condition's error, with the byte span in its text.
#[derive(Serialize)]
pub(crate) struct ConditionProblem {
    pub(crate) code: &'static str,
    pub(crate) message: String,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl ConditionResult {
    pub(crate) fn of(result: Result<bool, statecraft_engine::ConditionError>) -> ConditionResult {
        match result {
            Ok(holds) => ConditionResult::Holds { holds },
            Err(statecraft_engine::ConditionError {
                code,
                message,
                start,
                end,
                ..
            }) => ConditionResult::Error {
                error: ConditionProblem {
                    code,
                    message,
                    start,
                    end,
                },
            },
        }
    }
}

/// `POST /v1/schema`: the batch's JSON Schema, or with `gbnf` its grammar.
#[derive(Serialize)]
pub(crate) struct Schemas<'a> {
    /// A JSON Schema document, written by the prompt kit with each instruction's members in the
    /// order decoders should generate them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) schema: Option<&'a statecraft_prompt::BatchSchema>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gbnf: Option<&'a str>,
    /// Some part of the state's schema could not be expressed, so the schema accepts more.
    pub(crate) partial: bool,
}

/// Every error answer's body: `error`, and beside it what the kind of error brings.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct ErrorDetails {
    /// What was wrong with a batch or a reply, each problem once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) errors: Option<Vec<Problem>>,
    /// Everything the text layer noticed in the reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) diagnostics: Option<Vec<WireDiagnostic>>,
    /// What was cleaned in the reply (for a reply, not a JSON batch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) report: Option<Report>,
    /// The text to hand back to the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) feedback: Option<String>,
    /// `need_text`: the indices of the replies whose text a sync needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) need: Option<Vec<usize>>,
    /// `path_trimmed` and a sync's 400: the index of the reply concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) index: Option<usize>,
    /// `step_conflict`: the current step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) step: Option<u64>,
}

/// An error body as sent.
#[derive(Serialize)]
pub(crate) struct ErrorBody<'a> {
    pub(crate) error: ErrorHead<'a>,
    #[serde(flatten)]
    pub(crate) details: &'a ErrorDetails,
}

/// `error` of an error body.
#[derive(Serialize)]
pub(crate) struct ErrorHead<'a> {
    pub(crate) kind: &'static str,
    pub(crate) message: &'a str,
}

/// A list of changes, written without copying them.
pub(crate) struct Changes<'a>(pub(crate) &'a [Change]);

impl Serialize for Changes<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for change in self.0 {
            // Taken apart whole: a member added to `Change` stops the build here until it is decided
            // whether the wire carries it.
            let Change {
                path,
                old,
                new,
                reason,
                op,
            } = change;
            seq.serialize_element(&WireChange {
                path: WirePath(path),
                old: old.as_ref(),
                new: new.as_ref(),
                reason: reason.as_deref(),
                op: op.name(),
            })?;
        }
        seq.end()
    }
}

/// One primitive change: absent `old` (created) or `new` (removed) are left out; `null` is a value.
#[derive(Serialize)]
struct WireChange<'a> {
    path: WirePath<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    old: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    op: &'static str,
}

/// A canonical path: keys as strings, indices as numbers.
pub(crate) struct WirePath<'a>(pub(crate) &'a Path);

impl Serialize for WirePath<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let segments = self.0.segments();
        let mut seq = serializer.serialize_seq(Some(segments.len()))?;
        for segment in segments {
            match segment {
                Segment::Key(key) => seq.serialize_element(key.as_str())?,
                Segment::Index(index) => seq.serialize_element(index)?,
            }
        }
        seq.end()
    }
}

/// A host event a committed batch delivers.
#[derive(Serialize)]
pub(crate) struct Event<'a> {
    name: &'a str,
    payload: &'a Value,
}

impl<'a> Event<'a> {
    pub(crate) fn all(events: &'a [HostEvent]) -> Vec<Event<'a>> {
        events
            .iter()
            .map(|HostEvent { name, payload }| Event { name, payload })
            .collect()
    }
}

/// A step trimming removed.
#[derive(Serialize)]
pub(crate) struct Trimmed<'a> {
    id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<&'a str>,
}

impl<'a> Trimmed<'a> {
    pub(crate) fn all(trimmed: &'a [TrimmedStep]) -> Vec<Trimmed<'a>> {
        trimmed
            .iter()
            .map(|TrimmedStep { id, label }| Trimmed {
                id: id.get(),
                label: label.as_deref(),
            })
            .collect()
    }
}

/// One problem in `errors` or `warnings`: a batch error, or a diagnostic for a reply that could not
/// be read.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Problem {
    Batch(WireBatchError),
    Text(WireDiagnostic),
}

impl Problem {
    pub(crate) fn batch(errors: &[BatchError]) -> Vec<Problem> {
        errors
            .iter()
            .map(|error| {
                let BatchError {
                    kind,
                    instruction,
                    field,
                    path,
                    message,
                } = error;
                Problem::Batch(WireBatchError {
                    kind: kind.code(),
                    instruction: instruction.as_ref().map(|trail| trail.0.clone()),
                    field: field.clone(),
                    path: path.clone(),
                    message: message.clone(),
                })
            })
            .collect()
    }

    pub(crate) fn text(diagnostics: &[Diagnostic]) -> Vec<Problem> {
        diagnostics
            .iter()
            .map(|d| Problem::Text(WireDiagnostic::of(d)))
            .collect()
    }

    /// A problem the server itself found, with its own kind (`record_too_large`).
    pub(crate) fn server(kind: &'static str, message: String) -> Problem {
        Problem::Batch(WireBatchError {
            kind,
            instruction: None,
            field: None,
            path: None,
            message,
        })
    }
}

/// A batch error (docs/codes.md lists the kinds).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct WireBatchError {
    kind: &'static str,
    /// The instruction's index, followed by the indices of the callbacks it went through.
    #[serde(skip_serializing_if = "Option::is_none")]
    instruction: Option<Vec<usize>>,
    /// A JSON Pointer into the instruction.
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<String>,
    /// A JSON Pointer into the state.
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    message: String,
}

/// A diagnostic: what the text layer noticed, at which bytes of the reply.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct WireDiagnostic {
    kind: &'static str,
    severity: &'static str,
    span: [usize; 2],
    line: usize,
    column: usize,
    message: Cow<'static, str>,
}

impl WireDiagnostic {
    fn of(diagnostic: &Diagnostic) -> WireDiagnostic {
        let Diagnostic {
            kind,
            severity,
            span,
            line,
            column,
            message,
        } = diagnostic;
        WireDiagnostic {
            kind: kind.code(),
            severity: match severity {
                Severity::Note => "note",
                Severity::Warning => "warning",
                Severity::Error => "error",
            },
            span: [span.start, span.end],
            line: *line,
            column: *column,
            message: message.clone(),
        }
    }

    pub(crate) fn all(diagnostics: &[Diagnostic]) -> Vec<WireDiagnostic> {
        diagnostics.iter().map(WireDiagnostic::of).collect()
    }
}

/// What the lenient layer cleaned in a reply (docs/lenient-layer.md, "The report").
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Report {
    blocks: usize,
    instructions: usize,
    empty_batches: usize,
    fences: usize,
    tags: usize,
    think_sections: usize,
    mvu_blocks: usize,
    prose_before_bytes: usize,
    prose_after_bytes: usize,
    trailing_garbage: usize,
    /// Repairs by code, in the codes' alphabetical order.
    repairs: std::collections::BTreeMap<&'static str, usize>,
    normalised_paths: usize,
    unknown_members: usize,
    skipped_values: usize,
    dropped_truncated: usize,
    invalid_instructions: usize,
    score: u8,
}

impl Report {
    pub(crate) fn of(report: &RepairReport) -> Report {
        let RepairReport {
            blocks,
            instructions,
            empty_batches,
            fences,
            tags,
            think_sections,
            mvu_blocks,
            prose_before_bytes,
            prose_after_bytes,
            trailing_garbage,
            repairs,
            normalised_paths,
            unknown_members,
            skipped_values,
            dropped_truncated,
            invalid_instructions,
            score,
        } = report;
        Report {
            blocks: *blocks,
            instructions: *instructions,
            empty_batches: *empty_batches,
            fences: *fences,
            tags: *tags,
            think_sections: *think_sections,
            mvu_blocks: *mvu_blocks,
            prose_before_bytes: *prose_before_bytes,
            prose_after_bytes: *prose_after_bytes,
            trailing_garbage: *trailing_garbage,
            repairs: repairs
                .iter()
                .map(|(kind, &count)| (kind.code(), count))
                .collect(),
            normalised_paths: *normalised_paths,
            unknown_members: *unknown_members,
            skipped_values: *skipped_values,
            dropped_truncated: *dropped_truncated,
            invalid_instructions: *invalid_instructions,
            score: *score,
        }
    }
}
