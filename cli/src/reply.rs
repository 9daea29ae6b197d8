//! From the text the user gives to one batch, through the translators' extractor.
//!
//! A JSON batch, a raw model reply (fences, tags, prose, broken JSON, `<think>` sections) and MVU
//! command text all go through `statecraft_translators::extract`, which finds every block, repairs what
//! can be repaired and scores how clean the text was. This module only gathers what it says; every text
//! heuristic lives in the translators. It never invents an instruction.

use std::collections::BTreeMap;

use statecraft_engine::{Batch, BatchError, Value};
use statecraft_translators::mvu::{MvuOptions, Unrunnable};
use statecraft_translators::{Diagnostic, ExtractOptions, Extraction, Severity, extract, feedback};

/// What was read from a text.
#[derive(Debug)]
pub(crate) struct Reading {
    /// What the extractor returned.
    pub(crate) extraction: Extraction,
}

impl Reading {
    /// The batch read. To apply it, take it with its options from [`Extraction::applicable`].
    pub(crate) fn batch(&self) -> &Batch {
        &self.extraction.batch
    }

    /// What the extractor noticed, with spans into the text.
    pub(crate) fn diagnostics(&self) -> &[Diagnostic] {
        &self.extraction.diagnostics
    }

    /// The repair report's cleanliness score: 100 when the text was exactly one valid JSON batch.
    pub(crate) fn score(&self) -> u8 {
        self.extraction.report.score
    }

    /// Whether the batch may be applied: an instruction with an `op` that is invalid makes the whole
    /// reply invalid (docs/lenient-layer.md), and the error diagnostics say why.
    pub(crate) fn valid(&self) -> bool {
        self.extraction.valid
    }

    /// The diagnostics that made the reply invalid.
    pub(crate) fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.extraction
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
    }

    /// A message for the model naming each problem and how to write it right (empty when none).
    pub(crate) fn feedback(&self, validation_errors: &[BatchError]) -> String {
        feedback(&self.extraction, validation_errors)
    }
}

/// Reads `text` as instructions. `state` lets MVU's type-dependent commands resolve exactly;
/// `macros` are SillyTavern's (`user` replaces `<user>` and `{{user}}` in MVU text), and `unrunnable`
/// says what MVU text MVU would not run does to the reply.
pub(crate) fn read(
    text: &str,
    state: Option<&Value>,
    macros: &BTreeMap<String, String>,
    unrunnable: Unrunnable,
) -> Reading {
    let options = ExtractOptions {
        mvu: MvuOptions {
            state: state.cloned(),
            macros: macros.clone(),
            unrunnable,
            ..MvuOptions::default()
        },
        ..ExtractOptions::default()
    };
    Reading {
        extraction: extract(text, &options),
    }
}
