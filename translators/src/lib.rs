//! Text in, instructions and diagnostics out.
//!
//! This crate owns every text heuristic: finding and repairing instructions in raw model output (the
//! lenient layer of SPEC §4), the lenient path spellings of SPEC §1, MVU command text (SPEC §6) and JSON
//! Patch documents. Translators never fail: they return what they could read plus [`Diagnostic`]s. This
//! crate must not run instructions or hold state: it hands canonical [`statecraft_engine::Batch`]es to
//! the engine, and reads a state only to resolve MVU's type-dependent commands.

mod diagnostic;
mod document;
mod extract;
mod feedback;
mod jsonpatch;
mod mvu;
mod pathtext;
mod prompt;
mod repair;
mod report;

pub use diagnostic::{Diagnostic, Severity, line_column};
pub use document::{Document, NodeId, NodeRef};
pub use extract::{ExtractOptions, Extraction, extract, json_values};
pub use feedback::feedback;
pub use jsonpatch::{JsonPatchTranslation, changes_to_patch, patch_from_text, patch_from_value};
pub use mvu::{
    CommandName, MvuCommand, MvuOptions, MvuTranslation, parse_commands, to_mvu, translate,
};
pub use pathtext::{PathSpelling, parse_path};
pub use prompt::{
    CheckOutcome, Expectation, Grade, InstructionSpec, Lang, MAX_PATH_DEPTH, MAX_TARGETS, Mismatch,
    OpGroup, Problem, Prompt, Property, Review, SegmentPattern, Shape, ShapeId, Target,
    VISIBLE_KEYWORD, batch_gbnf, batch_schema, grade, prompt, review, visible_state,
};
pub use repair::{
    Child, MAX_DEPTH, Parsed, Repair, RepairKind, RepairedDocument, parse_value, repair_json,
};
pub use report::RepairReport;
