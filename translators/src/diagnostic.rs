//! Diagnostics: what the translators noticed in a text, pointing at the exact bytes.
//!
//! Translators never fail: they return what they could read plus diagnostics. A diagnostic has a stable
//! snake_case `kind` (`trailing_comma`, `mvu_missing_semicolon`), a byte span into the original text, the
//! 1-based line and column of the span's start, and a message for people. Rendering with the source line
//! and a caret is the command line's job.

use std::borrow::Cow;
use std::ops::Range;

use serde::Serialize;

/// How much a diagnostic matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Something was cleaned or normalised; the result is what the text meant.
    Note,
    /// Something was guessed, skipped or dropped; the result may differ from what the author meant.
    Warning,
    /// Something could not be read; it contributed nothing to the batch.
    Error,
}

/// One observation about a text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// A stable snake_case code.
    pub kind: &'static str,
    /// How much it matters.
    pub severity: Severity,
    /// Byte range in the original text.
    pub span: Range<usize>,
    /// 1-based line of `span.start`.
    pub line: usize,
    /// 1-based column of `span.start`, in characters.
    pub column: usize,
    /// What happened, for people. Most messages are fixed texts, borrowed rather than allocated.
    pub message: Cow<'static, str>,
}

impl Diagnostic {
    /// A diagnostic at `span` of `text`; line and column are computed from `text`.
    pub fn new(
        text: &str,
        kind: &'static str,
        severity: Severity,
        span: Range<usize>,
        message: impl Into<Cow<'static, str>>,
    ) -> Diagnostic {
        let (line, column) = line_column(text, span.start);
        Diagnostic {
            kind,
            severity,
            span,
            line,
            column,
            message: message.into(),
        }
    }

    /// The same diagnostic moved by `offset` bytes, for a text that was a slice of a larger one.
    pub fn shifted(mut self, whole: &str, offset: usize) -> Diagnostic {
        self.span = self.span.start + offset..self.span.end + offset;
        (self.line, self.column) = line_column(whole, self.span.start);
        self
    }
}

/// The 1-based line and character column of byte `offset` in `text` (clamped to the text).
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// A diagnostic whose line and column are filled in later by [`place`].
pub(crate) fn unplaced(
    kind: &'static str,
    severity: Severity,
    span: Range<usize>,
    message: impl Into<Cow<'static, str>>,
) -> Diagnostic {
    Diagnostic {
        kind,
        severity,
        span,
        line: 0,
        column: 0,
        message: message.into(),
    }
}

/// Sorts diagnostics by position and fills every line and column in one pass over `text`.
/// [`Diagnostic::new`] scans from the start of the text for each diagnostic, which is quadratic for a
/// long text with many diagnostics; translators that report many build them unplaced and call this.
/// Time: O(n + d log d).
pub(crate) fn place(text: &str, diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by_key(|d| d.span.start);
    let (mut pos, mut line, mut column) = (0usize, 1usize, 1usize);
    for diagnostic in diagnostics {
        let mut target = diagnostic.span.start.min(text.len());
        while !text.is_char_boundary(target) {
            target -= 1;
        }
        // Sorted starts only move forward; equal starts share the position.
        let segment = &text.as_bytes()[pos.min(target)..target];
        let last_line = match memchr::memrchr(b'\n', segment) {
            Some(last) => {
                line += bytecount::count(segment, b'\n');
                column = 1;
                &segment[last + 1..]
            }
            None => segment,
        };
        column += bytecount::num_chars(last_line);
        pos = pos.max(target);
        (diagnostic.line, diagnostic.column) = (line, column);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn place_agrees_with_line_column() {
        let text = "ab\n好感度x\n\nz";
        let mut diagnostics: Vec<Diagnostic> = [12, 0, 3, 13, 3, 99]
            .into_iter()
            .map(|at| Diagnostic {
                kind: "k",
                severity: Severity::Note,
                span: at..at,
                line: 0,
                column: 0,
                message: Cow::Borrowed(""),
            })
            .collect();
        place(text, &mut diagnostics);
        for d in &diagnostics {
            assert_eq!(
                (d.line, d.column),
                line_column(text, d.span.start),
                "{:?}",
                d.span
            );
        }
        assert!(diagnostics.is_sorted_by_key(|d| d.span.start));
    }

    #[test]
    fn line_and_column_count_characters() {
        assert_eq!(line_column("ab\n好感度x", 0), (1, 1));
        assert_eq!(line_column("ab\n好感度x", 3), (2, 1));
        assert_eq!(line_column("ab\n好感度x", 12), (2, 4));
        assert_eq!(line_column("ab", 99), (1, 3));
    }
}
