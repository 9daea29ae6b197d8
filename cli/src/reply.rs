//! From the text the user gives to one batch, through the translators' extractor.
//!
//! A JSON batch, a raw model reply (fences, tags, prose, broken JSON, `<think>` sections) and MVU
//! command text all go through `statecraft_translators::extract`, which finds every block, repairs what
//! can be repaired and scores how clean the text was. This module only gathers what it says; every text
//! heuristic lives in the translators. It never invents an instruction.

use std::collections::BTreeMap;

use statecraft_engine::{ApplyOptions, Batch, BatchError, Outcome, Profile, Store, Value};
use statecraft_saves::{Game, SaveError};
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

    /// Applies `batch` (this reading's) to `store` with `options`: under a profile that applies
    /// commands one by one, each MVU command is decided again on the state it meets, and the
    /// diagnostics become those of the commands as decided (docs/mvu.md, "Profiles"). `text` is the
    /// reply.
    pub(crate) fn apply(
        &mut self,
        store: &mut Store,
        batch: &Batch,
        options: &ApplyOptions,
        text: &str,
    ) -> Outcome {
        self.extraction.apply_resolved(text, |resolver| {
            store.apply_resolved(batch, options, resolver)
        })
    }

    /// [`Reading::apply`] on a save, durably.
    pub(crate) fn apply_saved(
        &mut self,
        game: &mut Game,
        batch: &Batch,
        options: &ApplyOptions,
        text: &str,
    ) -> Result<Outcome, SaveError> {
        self.extraction.apply_resolved(text, |resolver| {
            game.apply_resolved(batch, options, resolver)
        })
    }
}

/// How to read a reply besides its text: the state MVU's commands resolve on, SillyTavern's macros,
/// what MVU text MVU would not run does, and the game's profile (with its card's `strictSet`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadOptions<'a> {
    pub(crate) state: Option<&'a Value>,
    pub(crate) macros: &'a BTreeMap<String, String>,
    pub(crate) unrunnable: Unrunnable,
    pub(crate) profile: Profile,
    pub(crate) strict_set: bool,
}

impl<'a> ReadOptions<'a> {
    /// The options of a store's game: its state, profile and card.
    pub(crate) fn of(
        store: &'a Store,
        macros: &'a BTreeMap<String, String>,
        unrunnable: Unrunnable,
    ) -> ReadOptions<'a> {
        ReadOptions {
            state: Some(store.state()),
            macros,
            unrunnable,
            profile: store.profile(),
            strict_set: store
                .structure()
                .is_some_and(statecraft_engine::StructureSchema::strict_set),
        }
    }
}

/// Reads `text` as instructions. The state lets MVU's type-dependent commands resolve exactly;
/// macros are SillyTavern's (`user` replaces `<user>` and `{{user}}` in MVU text), `unrunnable` says
/// what MVU text MVU would not run does to the reply, and the profile whose rules MVU text follows.
pub(crate) fn read(text: &str, options: ReadOptions<'_>) -> Reading {
    let options = ExtractOptions {
        mvu: MvuOptions {
            state: options.state.cloned(),
            macros: options.macros.clone(),
            unrunnable: options.unrunnable,
            profile: options.profile,
            strict_set: options.strict_set,
            ..MvuOptions::default()
        },
        ..ExtractOptions::default()
    };
    Reading {
        extraction: extract(text, &options),
    }
}
