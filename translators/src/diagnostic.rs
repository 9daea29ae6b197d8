//! Diagnostics: what the translators noticed in a text, pointing at the exact bytes.
//!
//! Translators never fail: they return what they could read plus diagnostics. A diagnostic has a
//! [`DiagnosticKind`] whose stable snake_case code (`trailing_comma`, `mvu_missing_semicolon`) is what
//! JSON output and scenario files carry, a byte span into the original text, the 1-based line and
//! column of the span's start, and a message for people. This module owns the list of kinds and what
//! each one advises a model to write instead; it must not decide when a kind is reported (the
//! translators do) or render diagnostics (the command line does).

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::{Serialize, Serializer};

use crate::repair::RepairKind;

statecraft_engine::registry! {
    /// What a diagnostic is about. [`DiagnosticKind::code`] is the stable name in JSON output.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum DiagnosticKind {
        /// A `<think>` section was skipped.
        ThinkIgnored = "think_ignored",
        /// Text after a complete value (closers, quotes, words) was ignored.
        TrailingGarbage = "trailing_garbage",
        /// A tag was never closed; it was read to the end of the text.
        UnclosedTag = "unclosed_tag",
        /// A fence was never closed; it was read to the end of the text.
        UnclosedFence = "unclosed_fence",
        /// A JSON value without `op` was skipped.
        NotAnInstruction = "not_an_instruction",
        /// Instructions were read from inside a wrapper object (`{"updates": [...]}`, a tool call).
        WrapperUnwrapped = "wrapper_unwrapped",
        /// A block had more repairs than are listed one by one.
        RepairsElided = "repairs_elided",
        /// More diagnostics of one kind than are listed one by one; this one counts the rest.
        DiagnosticsElided = "diagnostics_elided",
        /// One block mixed JSON Patch ops with instruction ops.
        MixedBatch = "mixed_batch",
        /// Tool-call arguments sent as a JSON string needed repairs.
        ArgumentsRepaired = "arguments_repaired",
        /// The text ended inside an instruction, which was dropped.
        TruncatedInstruction = "truncated_instruction",
        /// A string path was read into its list form.
        PathNormalised = "path_normalised",
        /// A string path could not be read.
        InvalidPath = "invalid_path",
        /// A member that no instruction has was ignored.
        UnknownMember = "unknown_member",
        /// A JSON Patch pointer without its leading `/` was read with it.
        PointerRepaired = "pointer_repaired",
        /// A value with `op` could not be decoded as an instruction.
        InvalidInstruction = "invalid_instruction",
        /// The text held no instructions.
        NoInstructions = "no_instructions",
        /// A JSON Patch document's text is not JSON.
        JsonPatchNotJson = "json_patch_not_json",
        /// A JSON Patch document is not a valid document.
        JsonPatchInvalid = "json_patch_invalid",
        /// A JSON Patch document needed a repair (a pointer without its `/`).
        JsonPatchRepaired = "json_patch_repaired",
        /// An instruction's MVU text leaves something out (a multi-line reason).
        MvuEmitLossy = "mvu_emit_lossy",
        /// An instruction has no MVU form and was left out.
        MvuEmitUnsupported = "mvu_emit_unsupported",
        /// MVU's `undefined` was read as null.
        MvuUndefined = "mvu_undefined",
        /// MVU would evaluate the text as arithmetic (a date, a percentage); it was kept as text.
        MvuArithmeticDifference = "mvu_arithmetic_difference",
        /// Arithmetic was evaluated, as MVU does.
        MvuArithmetic = "mvu_arithmetic",
        /// An argument is not one quoted string; it was read as MVU reads it.
        MvuUnbalancedQuotes = "mvu_unbalanced_quotes",
        /// An expression MVU would evaluate with math.js was kept as text.
        MvuExpressionKeptAsText = "mvu_expression_kept_as_text",
        /// An unquoted word was read as a string.
        MvuBareText = "mvu_bare_text",
        /// A command's path is not quoted.
        MvuUnquotedPath = "mvu_unquoted_path",
        /// A comment on a later line was taken as the command's reason.
        MvuReasonOnNextLine = "mvu_reason_on_next_line",
        /// A path starting with `/` was read as a JSON Pointer.
        MvuPointerPath = "mvu_pointer_path",
        /// A command's path could not be read; the command was skipped.
        MvuInvalidPath = "mvu_invalid_path",
        /// A command had more arguments than it uses.
        MvuExtraArguments = "mvu_extra_arguments",
        /// An `_.add` delta is not a number; the command was skipped.
        MvuAddNotANumber = "mvu_add_not_a_number",
        /// Without a state, a type-dependent command was resolved by a guess.
        MvuGuessed = "mvu_guessed",
        /// A command's target is absent; MVU skips it, and so was it.
        MvuMissingTarget = "mvu_missing_target",
        /// `_.insert`/`_.assign` met a target of the wrong type; the command was skipped.
        MvuInsertType = "mvu_insert_type",
        /// `_.name (` with a space before the parenthesis, which MVU does not read.
        MvuSpaceBeforeParen = "mvu_space_before_paren",
        /// Too many unclosed commands; the rest of the text was not searched.
        MvuScanStopped = "mvu_scan_stopped",
        /// A command has no closing parenthesis; it was skipped.
        MvuUnclosedCommand = "mvu_unclosed_command",
        /// A command is not followed by `;`; it was skipped.
        MvuMissingSemicolon = "mvu_missing_semicolon",
        /// A command has the wrong number of arguments; it was skipped.
        MvuWrongArgumentCount = "mvu_wrong_argument_count",
        /// A value was read as MVU's YAML fallback reads it (`True`, `[x, y]`).
        MvuYamlValue = "mvu_yaml_value",
        /// MVU's YAML fallback would read a value as structure (a mapping, a comment); it was kept
        /// as text.
        MvuYamlDifference = "mvu_yaml_difference",
        /// MVU text gave no instruction and nothing else says why.
        MvuNoCommands = "mvu_no_commands",
        /// A value written over a number was made a number, as MVU's `Number()` makes it (`mvu`
        /// profile).
        MvuCoerced = "mvu_coerced",
        /// `_.set` or `_.add` named a path that does not exist; MVU checks first and skips it, and
        /// so was it (`mvu` profile).
        MvuMissingPath = "mvu_missing_path",
    }
    wrapping {
        /// A repair the tolerant JSON parser made, with the repair's own code (`trailing_comma`,
        /// …).
        Repair(RepairKind),
    }
    impl {
        /// Every kind that is not a repair, in declaration order; [`DiagnosticKind::all`] adds the
        /// repairs.
        const NOT_REPAIRS;
        /// The stable snake_case code that JSON output and scenario files use.
        pub fn code;
    }
}

impl DiagnosticKind {
    /// Every kind: the repair parser's ([`RepairKind::ALL`]) first, then the others in declaration
    /// order (docs/codes.md lists them from here).
    pub fn all() -> impl Iterator<Item = DiagnosticKind> {
        RepairKind::ALL
            .into_iter()
            .map(DiagnosticKind::Repair)
            .chain(DiagnosticKind::NOT_REPAIRS)
    }

    /// How to write it right, for a model correcting its output, when this kind calls for a
    /// correction. `None` means the feedback names the problem without advice (when it is an error) or
    /// leaves it to [`DiagnosticKind::preferred_form`] (when it is cleaning).
    pub fn advice(self) -> Option<&'static str> {
        match self.guidance() {
            Guidance::Advice(advice) => Some(advice),
            Guidance::PreferredForm(_) | Guidance::Nothing => None,
        }
    }

    /// For cleaning notes, the strict form to prefer next time, summed up in one line of feedback
    /// (`no trailing or doubled commas`). `None` for kinds that are not about the form of the JSON.
    pub fn preferred_form(self) -> Option<&'static str> {
        match self.guidance() {
            Guidance::PreferredForm(form) => Some(form),
            Guidance::Advice(_) | Guidance::Nothing => None,
        }
    }

    /// What feedback tells a model about this kind: one decision per kind, in one exhaustive match, so
    /// that a new kind cannot be added without deciding it.
    fn guidance(self) -> Guidance {
        use Guidance::{Advice, Nothing, PreferredForm};
        match self {
            DiagnosticKind::TruncatedInstruction => Advice(
                "your reply ended inside this instruction, so it was not applied; write every instruction completely and close every string, array and object",
            ),
            DiagnosticKind::InvalidInstruction => Advice(
                "this instruction is invalid; every instruction is an object with \"op\", \"path\" as a list of keys and indexes, and \"value\" where the op needs one",
            ),
            DiagnosticKind::InvalidPath => Advice(
                "this path could not be read; write paths as a list, like [\"player\", \"hp\"] or [\"inventory\", 0, \"name\"]",
            ),
            DiagnosticKind::MixedBatch => Advice(
                "JSON Patch ops (add, remove, replace, move, copy, test) and instruction ops (assign, merge, push, …) cannot share one array; send them as separate blocks",
            ),
            DiagnosticKind::NotAnInstruction => Advice(
                "this JSON value has no \"op\" and was skipped; if it was meant as an update, give it an \"op\"",
            ),
            DiagnosticKind::UnknownMember => Advice(
                "this member is not part of an instruction and was ignored; use only op, path, value, old, reason and metadata",
            ),
            DiagnosticKind::NoInstructions => Advice(
                "no instructions were found; write them as a JSON array of instructions in a ```json fence",
            ),
            DiagnosticKind::MvuNoCommands => Advice(
                "no update was found; write each one as a command on its own line, like _.set('player.hp', 80, 75);//why",
            ),
            DiagnosticKind::MvuYamlDifference => {
                Advice("put text values in quotes, like '状态: 良好', so that they stay text")
            }
            // Text MVU would not run is skipped with a warning and the rest applies, so the model is
            // told how to write the command it lost.
            DiagnosticKind::MvuMissingSemicolon => Advice(
                "end every command with ); and nothing between, like _.set('player.hp', 80, 75);",
            ),
            DiagnosticKind::MvuUnclosedCommand => Advice(
                "close every quote and parenthesis of a command; a command cut off by the end of the reply is not applied",
            ),
            DiagnosticKind::MvuWrongArgumentCount => Advice(
                "_.set takes a path and a value, or a path, the old value and the new value; _.add takes a path and one number",
            ),
            DiagnosticKind::MvuSpaceBeforeParen => {
                Advice("write the command name and ( with no space between, like _.set(")
            }
            DiagnosticKind::MvuInvalidPath => Advice(
                "write the path as quoted keys joined by dots, like 'player.hp' or 'inventory[0].name'",
            ),
            DiagnosticKind::MvuAddNotANumber => {
                Advice("_.add takes the number to add, like _.add('player.gold', -5);")
            }
            DiagnosticKind::MvuMissingPath => Advice(
                "this path does not exist in the state; use the paths the state has, spelled exactly",
            ),
            DiagnosticKind::MvuYamlValue => {
                PreferredForm("JSON values in mvu commands (true, quoted strings, [\"a\", \"b\"])")
            }
            DiagnosticKind::PathNormalised => {
                PreferredForm("paths as lists, like [\"player\", \"hp\"]")
            }
            DiagnosticKind::TrailingGarbage => PreferredForm("nothing after the closing bracket"),
            DiagnosticKind::WrapperUnwrapped => {
                PreferredForm("the instruction array on its own, not wrapped in another object")
            }
            DiagnosticKind::ArgumentsRepaired => {
                PreferredForm("valid JSON inside tool-call arguments")
            }
            DiagnosticKind::Repair(repair) => match repair {
                RepairKind::TooDeep => {
                    Advice("this value nests too deeply to be read; keep values shallow")
                }
                RepairKind::UnclosedString => {
                    Advice("a string was not closed; close every string with a double quote")
                }
                RepairKind::UnclosedContainer => Advice(
                    "an array or object was not closed; close every [ with ] and every { with }",
                ),
                RepairKind::MissingCloser | RepairKind::StrayCloser => Advice(
                    "brackets did not match; close every [ with ] and every { with } in order",
                ),
                RepairKind::UnescapedQuote => {
                    Advice("a double quote inside a string was not escaped; write it as \\\"")
                }
                RepairKind::Garbage => Advice(
                    "text that is not JSON appeared inside a value; write only JSON inside the block",
                ),
                RepairKind::MissingValue => Advice("a key had no value; give every key a value"),
                RepairKind::TrailingComma | RepairKind::ExtraComma => {
                    PreferredForm("no trailing or doubled commas")
                }
                RepairKind::MissingComma => PreferredForm("commas between all items"),
                RepairKind::MissingColon => PreferredForm("a colon after every key"),
                RepairKind::SingleQuotes | RepairKind::SmartQuotes | RepairKind::EscapedQuotes => {
                    PreferredForm("plain double quotes around strings")
                }
                RepairKind::UnquotedKey | RepairKind::UnquotedString => {
                    PreferredForm("double quotes around every key and string")
                }
                RepairKind::PythonLiteral | RepairKind::JsLiteral => {
                    PreferredForm("JSON literals true, false and null")
                }
                RepairKind::Comment => PreferredForm("no comments"),
                RepairKind::ControlCharacter => {
                    PreferredForm("escaped newlines and tabs (\\n, \\t) inside strings")
                }
                RepairKind::InvalidEscape => PreferredForm("only JSON escapes inside strings"),
                RepairKind::LoneSurrogate => {
                    PreferredForm("\\u escapes of whole characters (surrogates only in pairs)")
                }
                RepairKind::NumberFixed => PreferredForm("plain JSON numbers"),
                RepairKind::Ellipsis => PreferredForm("every item written out, no ellipses"),
                // Harmless, or nothing a model writes on purpose.
                RepairKind::UnusualWhitespace | RepairKind::JsonpWrapper => Nothing,
            },
            // Reading choices the model cannot act on, and problems whose message already says what
            // to change.
            DiagnosticKind::ThinkIgnored
            | DiagnosticKind::UnclosedTag
            | DiagnosticKind::UnclosedFence
            | DiagnosticKind::RepairsElided
            | DiagnosticKind::DiagnosticsElided
            | DiagnosticKind::PointerRepaired
            | DiagnosticKind::JsonPatchNotJson
            | DiagnosticKind::JsonPatchInvalid
            | DiagnosticKind::JsonPatchRepaired
            | DiagnosticKind::MvuEmitLossy
            | DiagnosticKind::MvuEmitUnsupported
            | DiagnosticKind::MvuUndefined
            | DiagnosticKind::MvuArithmeticDifference
            | DiagnosticKind::MvuArithmetic
            | DiagnosticKind::MvuUnbalancedQuotes
            | DiagnosticKind::MvuExpressionKeptAsText
            | DiagnosticKind::MvuBareText
            | DiagnosticKind::MvuUnquotedPath
            | DiagnosticKind::MvuReasonOnNextLine
            | DiagnosticKind::MvuPointerPath
            | DiagnosticKind::MvuExtraArguments
            | DiagnosticKind::MvuGuessed
            | DiagnosticKind::MvuMissingTarget
            | DiagnosticKind::MvuInsertType
            | DiagnosticKind::MvuCoerced
            | DiagnosticKind::MvuScanStopped => Nothing,
        }
    }
}

/// What feedback says about a kind: advice for a problem, a preferred form for cleaning, or nothing.
enum Guidance {
    Advice(&'static str),
    PreferredForm(&'static str),
    Nothing,
}

impl From<RepairKind> for DiagnosticKind {
    fn from(repair: RepairKind) -> DiagnosticKind {
        DiagnosticKind::Repair(repair)
    }
}

/// The code, as in JSON output.
impl fmt::Display for DiagnosticKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Serialised as its code, so JSON output keeps the snake_case strings.
impl Serialize for DiagnosticKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

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
    /// What it is about; serialised as its stable snake_case code.
    pub kind: DiagnosticKind,
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
        kind: DiagnosticKind,
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
    let mut position = Position::start(text);
    position.advance(text, offset)
}

/// A place in a text reached by reading forward: the byte offset, with its line and column. The one
/// computation of line and column, for one offset ([`line_column`]) and for many in order ([`place`]).
#[derive(Clone, Copy)]
struct Position {
    at: usize,
    line: usize,
    column: usize,
}

impl Position {
    /// The start of `text`: line 1, column 1, after a byte-order mark, which no editor counts as a
    /// column of the first line.
    fn start(text: &str) -> Position {
        let mark = if text.starts_with('\u{feff}') {
            '\u{feff}'.len_utf8()
        } else {
            0
        };
        Position {
            at: mark,
            line: 1,
            column: 1,
        }
    }

    /// Moves forward to byte `offset` (clamped to the text and to a character boundary; an offset
    /// behind the position stays where it is) and returns the line and column there.
    fn advance(&mut self, text: &str, offset: usize) -> (usize, usize) {
        let mut target = offset.min(text.len());
        while !text.is_char_boundary(target) {
            target -= 1;
        }
        let segment = &text.as_bytes()[self.at.min(target)..target];
        let last_line = match memchr::memrchr(b'\n', segment) {
            Some(last) => {
                self.line += bytecount::count(segment, b'\n');
                self.column = 1;
                &segment[last + 1..]
            }
            None => segment,
        };
        self.column += bytecount::num_chars(last_line);
        self.at = self.at.max(target);
        (self.line, self.column)
    }
}

/// A diagnostic whose line and column are filled in later by [`place`].
pub(crate) fn unplaced(
    kind: DiagnosticKind,
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

/// How many diagnostics of one kind a translation lists one by one. The rest are counted by one
/// [`DiagnosticKind::DiagnosticsElided`] diagnostic per kind, so that what a reply's diagnostics cost
/// to print, store or send stays bounded however many times it repeats a mistake.
pub(crate) const MAX_DIAGNOSTICS_PER_KIND: usize = 100;

/// Sorts diagnostics by position, keeps the first [`MAX_DIAGNOSTICS_PER_KIND`] of each kind (the rest
/// become one summary per kind, at the first one left out), and fills every line and column in one
/// pass over `text`. [`Diagnostic::new`] scans from the start of the text for each diagnostic, which
/// is quadratic for a long text with many diagnostics; translators that report many build them
/// unplaced and call this, once, as their last step. Time: O(n + d log d).
pub(crate) fn place(text: &str, diagnostics: &mut Vec<Diagnostic>) {
    summarise(diagnostics);
    for diagnostic in diagnostics.iter_mut() {
        cap_message(&mut diagnostic.message);
    }
    // Translators push most diagnostics in text order; a stable sort would still allocate a buffer.
    if !diagnostics.is_sorted_by_key(|d| d.span.start) {
        diagnostics.sort_by_key(|d| d.span.start);
    }
    // Sorted starts only move forward; equal starts share the position.
    let mut position = Position::start(text);
    for diagnostic in diagnostics {
        (diagnostic.line, diagnostic.column) = position.advance(text, diagnostic.span.start);
    }
}

/// Fills the line and column of every diagnostic in one pass over `text`, leaving their order, their
/// number and their messages as they are (for a translator whose list is its answer as it stands).
/// Time: O(n + d log d).
pub(crate) fn place_in_order(text: &str, diagnostics: &mut [Diagnostic]) {
    let mut order: Vec<usize> = (0..diagnostics.len()).collect();
    order.sort_by_key(|&i| diagnostics[i].span.start);
    let mut position = Position::start(text);
    for i in order {
        let diagnostic = &mut diagnostics[i];
        (diagnostic.line, diagnostic.column) = position.advance(text, diagnostic.span.start);
    }
}

/// The longest message a diagnostic keeps, in bytes. Messages that quote the text (a skipped `{word}`)
/// are cut here, so a diagnostic's size does not grow with what it quotes.
pub(crate) const MAX_MESSAGE_BYTES: usize = 300;

/// Cuts a message longer than [`MAX_MESSAGE_BYTES`] at a character boundary and marks the cut with `…`.
fn cap_message(message: &mut Cow<'static, str>) {
    if message.len() <= MAX_MESSAGE_BYTES {
        return;
    }
    let mut cut = MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut short = message[..cut].to_owned();
    short.push('…');
    *message = Cow::Owned(short);
}

/// Keeps the first [`MAX_DIAGNOSTICS_PER_KIND`] diagnostics of each kind, in text order, and replaces
/// the rest of each kind by one summary that says how many were left out and is as severe as the
/// worst of them. Time: O(d log d).
fn summarise(diagnostics: &mut Vec<Diagnostic>) {
    if diagnostics.len() <= MAX_DIAGNOSTICS_PER_KIND {
        return;
    }
    if !diagnostics.is_sorted_by_key(|d| d.span.start) {
        diagnostics.sort_by_key(|d| d.span.start);
    }
    /// How many of a kind were seen, and for those left out the first one's span and the worst severity.
    type Seen = (usize, Option<(Range<usize>, Severity)>);
    // There are a few dozen kinds, and runs of one kind are the common case: a short list searched
    // from the last kind seen costs less than hashing every diagnostic.
    let mut kinds: Vec<(DiagnosticKind, Seen)> = Vec::new();
    let mut last = 0;
    diagnostics.retain(|d| {
        if kinds.get(last).is_none_or(|(kind, _)| *kind != d.kind) {
            last = match kinds.iter().position(|(kind, _)| *kind == d.kind) {
                Some(index) => index,
                None => {
                    kinds.push((d.kind, (0, None)));
                    kinds.len() - 1
                }
            };
        }
        let (_, (seen, left_out)) = &mut kinds[last];
        *seen += 1;
        if *seen <= MAX_DIAGNOSTICS_PER_KIND {
            return true;
        }
        let (_, worst) = left_out.get_or_insert((d.span.clone(), d.severity));
        *worst = (*worst).max(d.severity);
        false
    });
    let mut summaries: Vec<Diagnostic> = kinds
        .into_iter()
        .filter_map(|(kind, (seen, left_out))| {
            let (span, severity) = left_out?;
            let more = seen - MAX_DIAGNOSTICS_PER_KIND;
            Some(unplaced(
                DiagnosticKind::DiagnosticsElided,
                severity,
                span,
                format!("and {more} more {kind} diagnostics from here on, not listed one by one"),
            ))
        })
        .collect();
    if summaries.is_empty() {
        return;
    }
    summaries.sort_by_key(|d| d.span.start);
    diagnostics.extend(summaries);
    diagnostics.sort_by_key(|d| d.span.start);
}

/// Diagnostics as one JSON value, the form every JSON output uses:
/// `[{kind, severity, span: [start, end], line, column, message}]`. Time: O(d).
pub fn diagnostics_json(diagnostics: &[Diagnostic]) -> serde_json::Value {
    serde_json::Value::Array(
        diagnostics
            .iter()
            .map(|d| {
                serde_json::json!({
                    "kind": d.kind,
                    "severity": d.severity,
                    "span": [d.span.start, d.span.end],
                    "line": d.line,
                    "column": d.column,
                    "message": d.message,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `DiagnosticKind::all` holds every kind once: the enum, `NOT_REPAIRS` and the codes are one
    /// table (`registry!`), and the repairs are `RepairKind`'s; no two kinds share a code.
    #[test]
    fn all_lists_every_kind_once() {
        let codes: std::collections::BTreeSet<&str> =
            DiagnosticKind::all().map(DiagnosticKind::code).collect();
        assert_eq!(
            codes.len(),
            DiagnosticKind::all().count(),
            "two kinds share a code"
        );
    }

    #[test]
    fn a_byte_order_mark_is_no_column() {
        let text = "\u{feff}ab\ncd";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 3), (1, 1));
        assert_eq!(line_column(text, 4), (1, 2));
        assert_eq!(line_column(text, 7), (2, 2));
        assert_eq!(
            line_column("ab\u{feff}c", 5),
            (1, 4),
            "only a leading mark is skipped"
        );
    }

    #[test]
    fn place_agrees_with_line_column() {
        let text = "ab\n好感度x\n\nz";
        let mut diagnostics: Vec<Diagnostic> = [12, 0, 3, 13, 3, 99]
            .into_iter()
            .map(|at| Diagnostic {
                kind: DiagnosticKind::ThinkIgnored,
                severity: Severity::Note,
                span: at..at,
                line: 0,
                column: 0,
                message: Cow::Borrowed(""),
            })
            .collect();
        place(text, &mut diagnostics);
        assert_placed_as_line_column_says(text, &diagnostics);
        assert!(diagnostics.is_sorted_by_key(|d| d.span.start));
    }

    /// Every diagnostic's line and column are what [`line_column`] gives for its start.
    fn assert_placed_as_line_column_says(text: &str, diagnostics: &[Diagnostic]) {
        for d in diagnostics {
            assert_eq!(
                (d.line, d.column),
                line_column(text, d.span.start),
                "{:?}",
                d.span
            );
        }
    }

    #[test]
    fn place_in_order_agrees_with_line_column_and_keeps_the_order() {
        let text = "\u{feff}ab\n好感度x\n\nz";
        let starts = [15, 0, 6, 16, 3, 99, 6, 1];
        let mut diagnostics: Vec<Diagnostic> = starts
            .into_iter()
            .map(|at| unplaced(DiagnosticKind::ThinkIgnored, Severity::Note, at..at, ""))
            .collect();
        place_in_order(text, &mut diagnostics);
        let placed: Vec<usize> = diagnostics.iter().map(|d| d.span.start).collect();
        assert_eq!(placed, starts);
        assert_placed_as_line_column_says(text, &diagnostics);
    }

    #[test]
    fn line_and_column_count_characters() {
        assert_eq!(line_column("ab\n好感度x", 0), (1, 1));
        assert_eq!(line_column("ab\n好感度x", 3), (2, 1));
        assert_eq!(line_column("ab\n好感度x", 12), (2, 4));
        assert_eq!(line_column("ab", 99), (1, 3));
    }
}
