//! The repair report: what the lenient layer cleaned in a reply, and a cleanliness score.
//!
//! This module owns the counts and the score formula. It must not find blocks or decide what is an
//! instruction: [`crate::extract`] fills the counts as it walks the reply.
//!
//! # Score
//!
//! The cleanliness score runs from 0 to 100:
//!
//! - **100** only when the reply, apart from surrounding whitespace, was exactly one valid JSON batch:
//!   one bare value, no fence, tag, prose or `<think>`, no repair, no path normalised, no unknown member,
//!   no skipped value, and every instruction valid.
//! - **0** when no instruction at all could be read from the reply, and it held no empty batch `[]`
//!   (the batch the rules ask for when nothing changed, which scores like any other batch).
//! - Otherwise `100` minus penalties, clamped to `1..=99`:
//!   - 2 for each fence, tag and `<think>` section, and 3 each for prose before and after the blocks;
//!   - 5 for each MVU command block (it is not JSON);
//!   - per repair: 1 for each removed comment or unusual space, 8 for each structural repair (an unclosed
//!     string or container, a missing or stray closer, a missing value, skipped garbage, a value too
//!     deep), 3 for every other repair (commas, quotes, literals, keys, escapes, numbers, ellipses);
//!   - 4 for each trailing garbage run, 1 for each path normalised, 2 for each unknown member, 3 for each
//!     skipped value without `op`;
//!   - 20 for each instruction dropped because the text cut it, 25 for each invalid instruction.

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

use crate::repair::RepairKind;

/// What was cleaned in one reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RepairReport {
    /// Blocks that held instructions (JSON values and MVU command runs).
    pub blocks: usize,
    /// Instructions read.
    pub instructions: usize,
    /// Empty batches (`[]`, "nothing changed"), which are blocks without instructions.
    pub empty_batches: usize,
    /// Markdown fences opened.
    pub fences: usize,
    /// Tags opened (`<UpdateVariable>`, `<tool_call>`, `<JSONPatch>`).
    pub tags: usize,
    /// `<think>` sections ignored.
    pub think_sections: usize,
    /// MVU command runs translated.
    pub mvu_blocks: usize,
    /// Bytes of prose before the first block.
    pub prose_before_bytes: usize,
    /// Bytes of prose between and after blocks.
    pub prose_after_bytes: usize,
    /// Runs of trailing garbage ignored after complete values.
    pub trailing_garbage: usize,
    /// Repairs made inside JSON, by kind; serialised as an object keyed by code (`trailing_comma`,
    /// `single_quotes`, …) in the codes' alphabetical order.
    #[serde(serialize_with = "by_code")]
    pub repairs: BTreeMap<RepairKind, usize>,
    /// String paths normalised to lists.
    pub normalised_paths: usize,
    /// Unknown instruction members reported and ignored.
    pub unknown_members: usize,
    /// JSON values without `op` skipped.
    pub skipped_values: usize,
    /// Instructions dropped because the end of the text cut them.
    pub dropped_truncated: usize,
    /// Invalid instructions (which make the batch invalid).
    pub invalid_instructions: usize,
    /// The cleanliness score, 0 to 100 (see the module documentation for the formula).
    pub score: u8,
}

impl RepairReport {
    /// Computes the score from the counts. `exact` says the reply was exactly one valid JSON batch;
    /// `valid` that no instruction was invalid.
    pub fn cleanliness(&self, exact: bool, valid: bool) -> u8 {
        if exact && valid {
            return 100;
        }
        if self.instructions == 0 && self.invalid_instructions == 0 && self.empty_batches == 0 {
            return 0;
        }
        let mut penalty = 2 * (self.fences + self.tags + self.think_sections) + 5 * self.mvu_blocks;
        penalty += 3 * usize::from(self.prose_before_bytes > 0)
            + 3 * usize::from(self.prose_after_bytes > 0);
        for (&kind, count) in &self.repairs {
            penalty += repair_penalty(kind) * count;
        }
        penalty += 4 * self.trailing_garbage
            + self.normalised_paths
            + 2 * self.unknown_members
            + 3 * self.skipped_values;
        penalty += 20 * self.dropped_truncated + 25 * self.invalid_instructions;
        let score = 100usize.saturating_sub(penalty).clamp(1, 99);
        u8::try_from(score).unwrap_or(1)
    }

    /// Total repairs made inside JSON.
    pub fn repair_count(&self) -> usize {
        self.repairs.values().sum()
    }
}

fn by_code<S: Serializer>(
    repairs: &BTreeMap<RepairKind, usize>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let by_code: BTreeMap<&str, usize> = repairs.iter().map(|(k, &n)| (k.code(), n)).collect();
    by_code.serialize(serializer)
}

/// The penalty for one repair: 1 for harmless cleaning, 8 for a structural repair (where the result
/// may differ from what was meant), 3 for everything else.
fn repair_penalty(kind: RepairKind) -> usize {
    match kind {
        RepairKind::Comment | RepairKind::UnusualWhitespace => 1,
        RepairKind::UnclosedString
        | RepairKind::UnclosedContainer
        | RepairKind::MissingCloser
        | RepairKind::StrayCloser
        | RepairKind::MissingValue
        | RepairKind::Garbage
        | RepairKind::TooDeep => 8,
        RepairKind::TrailingComma
        | RepairKind::MissingComma
        | RepairKind::ExtraComma
        | RepairKind::MissingColon
        | RepairKind::SingleQuotes
        | RepairKind::SmartQuotes
        | RepairKind::EscapedQuotes
        | RepairKind::UnescapedQuote
        | RepairKind::UnquotedKey
        | RepairKind::UnquotedString
        | RepairKind::PythonLiteral
        | RepairKind::JsLiteral
        | RepairKind::ControlCharacter
        | RepairKind::InvalidEscape
        | RepairKind::LoneSurrogate
        | RepairKind::NumberFixed
        | RepairKind::Ellipsis
        | RepairKind::JsonpWrapper => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_is_100_only_when_exact() {
        let report = RepairReport {
            blocks: 1,
            instructions: 1,
            ..RepairReport::default()
        };
        assert_eq!(report.cleanliness(true, true), 100);
        assert_eq!(report.cleanliness(false, true), 99);
        assert_eq!(RepairReport::default().cleanliness(false, true), 0);
    }

    #[test]
    fn penalties_add_up_and_clamp() {
        let mut report = RepairReport {
            blocks: 1,
            instructions: 2,
            fences: 1,
            prose_before_bytes: 10,
            ..RepairReport::default()
        };
        report.repairs.insert(RepairKind::TrailingComma, 2);
        report.repairs.insert(RepairKind::Comment, 1);
        assert_eq!(report.cleanliness(false, true), 100 - 2 - 3 - 6 - 1);
        report.dropped_truncated = 10;
        assert_eq!(report.cleanliness(false, true), 1);
    }
}
