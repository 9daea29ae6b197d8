//! Text in, instructions and diagnostics out.
//!
//! This crate owns every text heuristic: finding and repairing instructions in raw model output (the
//! lenient layer of docs/lenient-layer.md), MVU command text (docs/mvu.md) and JSON Patch documents. Translators never
//! fail: they return what they could read plus [`Diagnostic`]s. This crate must not run instructions
//! or hold state: it hands canonical [`statecraft_engine::Batch`]es to the engine, and reads a state
//! only to resolve MVU's type-dependent commands.
//!
//! Entry points: [`extract`] reads a raw model reply. Each notation is a module whose functions are
//! named for what they read or write: [`mvu::from_text`] reads MVU text and [`mvu::to_text`] writes
//! it; [`jsonpatch::from_text`] and [`jsonpatch::from_value`] read a JSON Patch document, and
//! [`jsonpatch::from_batch`] and [`jsonpatch::from_changes`] write one. [`card::read`] reads a
//! character card (PNG or JSON), a world book or InitVar text into an MVU card's initial state and
//! automatic schema.

pub mod card;
mod diagnostic;
mod document;
mod extract;
mod feedback;
pub mod jsonpatch;
pub mod mvu;
mod repair;
mod report;

pub use diagnostic::{Diagnostic, DiagnosticKind, Severity, diagnostics_json, line_column};
pub use extract::{ExtractOptions, ExtractReader, Extraction, ReplyResolver, extract, json_values};
pub use feedback::{feedback, feedback_for_errors};
pub use repair::RepairKind;
pub use report::RepairReport;

/// The tolerant JSON parser's own types, for this crate's tests, benches and the fuzz targets. Not part
/// of the API: they change whenever the parser does.
#[doc(hidden)]
pub mod internals {
    pub use crate::document::{Document, NodeId, NodeRef};
    pub use crate::repair::{
        Child, MAX_PARSE_NESTING, Parsed, Repair, RepairedDocument, parse_value, repair_json,
    };
}
