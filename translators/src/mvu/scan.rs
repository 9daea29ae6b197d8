//! Finding MVU commands in text: `_.name(args);//reason`, the way MVU's own extractor finds them.
//!
//! This module owns the command grammar at the character level: the command names, the rule that `(`
//! follows the name directly and `;` follows the closing `)` directly, quote tracking (`'`, `"`,
//! backticks, backslash escapes; as in MVU, a quote right after a backslash opens nothing, so
//! `_.set(\"a.b\", 1);` has the path argument `\"a.b\"`) while looking for the closing parenthesis,
//! splitting the arguments at top-level commas, and the `//reason` comment (on the same line, or on a
//! later line as MVU's `^\s*//` match allows). It reports every command it must drop with its span,
//! at the severity the caller's [`super::Unrunnable`] policy gives. It must not interpret argument
//! text (that is `literal`) or decide what a command does (that is `resolve`).

use std::ops::Range;

use crate::diagnostic::unplaced;
use crate::diagnostic::{Diagnostic, DiagnosticKind, Severity};

/// The commands MVU's extractor recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CommandName {
    /// `_.set(path, new)` or `_.set(path, old, new)`.
    Set,
    /// `_.insert(...)`, an alias of `assign`.
    Insert,
    /// `_.assign(path, value)` or `_.assign(path, key_or_index, value)`.
    Assign,
    /// `_.remove(path)` or `_.remove(path, key_index_or_value)`.
    Remove,
    /// `_.unset(...)`, an alias of `remove`.
    Unset,
    /// `_.delete(...)`, an alias of `remove`.
    Delete,
    /// `_.add(path, delta)`.
    Add,
}

impl CommandName {
    const ALL: [CommandName; 7] = [
        CommandName::Set,
        CommandName::Insert,
        CommandName::Assign,
        CommandName::Remove,
        CommandName::Unset,
        CommandName::Delete,
        CommandName::Add,
    ];

    /// The name as written after `_.`.
    pub fn name(self) -> &'static str {
        match self {
            CommandName::Set => "set",
            CommandName::Insert => "insert",
            CommandName::Assign => "assign",
            CommandName::Remove => "remove",
            CommandName::Unset => "unset",
            CommandName::Delete => "delete",
            CommandName::Add => "add",
        }
    }

    /// The fewest and most arguments MVU accepts (`None`: no upper bound; MVU ignores extras).
    fn arity(self) -> (usize, Option<usize>) {
        match self {
            CommandName::Set | CommandName::Insert | CommandName::Assign => (2, None),
            CommandName::Remove | CommandName::Unset | CommandName::Delete => (1, None),
            CommandName::Add => (2, Some(2)),
        }
    }
}

/// One command as found in the text, before its arguments are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawCommand {
    pub(crate) name: CommandName,
    /// From `_` to the `;`, or to the end of the reason comment when there is one.
    pub(crate) span: Range<usize>,
    /// Where its arguments' trimmed byte ranges sit in [`Scan::args`]: the path, then the rest.
    pub(crate) args: Range<usize>,
    /// The trimmed reason text and its range.
    pub(crate) reason: Option<Range<usize>>,
    /// Whether the reason comment sat on a later line (MVU's quirk).
    pub(crate) reason_on_later_line: bool,
}

/// How many bytes the close-parenthesis searches may read in total, as a multiple of the text length.
/// MVU restarts its search right after the `(` of a command it could not close, which is quadratic on
/// text such as a megabyte of `_.set(`; this budget keeps the scan linear while behaving like MVU on any
/// text with a handful of unclosed commands.
const SCAN_BUDGET_FACTOR: usize = 4;

/// The commands found in a text.
pub(crate) struct Scan {
    pub(crate) commands: Vec<RawCommand>,
    /// The trimmed byte ranges of every command's arguments, in text order: one vector for the whole
    /// text rather than one per command.
    pub(crate) args: Vec<Range<usize>>,
}

/// Finds every command in `text`, reporting the ones MVU would drop at `skipped` severity.
pub(crate) fn scan(text: &str, skipped: Severity, diagnostics: &mut Vec<Diagnostic>) -> Scan {
    let bytes = text.as_bytes();
    let mut commands = Vec::new();
    let mut args = Vec::new();
    let mut budget = text
        .len()
        .saturating_mul(SCAN_BUDGET_FACTOR)
        .saturating_add(4096);
    let mut at = 0;
    let finder = memchr::memmem::Finder::new("_.");
    while let Some(found) = finder.find(&bytes[at..]).map(|i| i + at) {
        let start = found;
        let after_dot = start + 2;
        let Some((name, name_end)) = command_name(bytes, after_dot) else {
            at = after_dot;
            continue;
        };
        if bytes.get(name_end) != Some(&b'(') {
            // `_.set (` with a space: MVU's pattern needs the parenthesis right after the name.
            let gap_end = skip_spaces(bytes, name_end);
            if bytes.get(gap_end) == Some(&b'(') {
                diagnostics.push(unplaced(DiagnosticKind::MvuSpaceBeforeParen,
                    skipped,
                    start..gap_end + 1,
                    format!("`_.{}` is followed by a space before `(`; mvu does not read it, so neither does this", name.name()),
                ));
            }
            at = name_end;
            continue;
        }
        let open = name_end + 1;
        let Some(scanned) = close_paren(bytes, open, &mut budget, &mut args) else {
            if budget == 0 {
                diagnostics.push(unplaced(DiagnosticKind::MvuScanStopped,
                    Severity::Error,
                    start..text.len(),
                    "too many commands without a closing `)`; the rest of the text was not searched for commands",
                ));
                break;
            }
            diagnostics.push(unplaced(DiagnosticKind::MvuUnclosedCommand,
                skipped,
                start..line_end(bytes, start),
                format!(
                    "`_.{}(` has no closing `)` (an unclosed quote or parenthesis); mvu drops it, so it was skipped",
                    name.name()
                ),
            ));
            // Like MVU, look for the next command right after the `(`.
            at = open;
            continue;
        };
        let close = scanned.close;
        if bytes.get(close + 1) != Some(&b';') {
            let what = if bytes.get(skip_spaces(bytes, close + 1)) == Some(&b';') {
                "has a space between `)` and `;`"
            } else {
                "has no `;` right after `)`"
            };
            diagnostics.push(unplaced(
                DiagnosticKind::MvuMissingSemicolon,
                skipped,
                start..close + 1,
                format!(
                    "`_.{}(...)` {what}; mvu drops such a command, so it was skipped",
                    name.name()
                ),
            ));
            args.truncate(scanned.args.start);
            at = close + 1;
            continue;
        }
        let mut end = close + 2;
        let (reason, reason_on_later_line) = match reason_comment(bytes, end) {
            Some((comment, later, comment_end)) => {
                end = comment_end;
                (Some(comment), later)
            }
            None => (None, false),
        };
        let (min, max) = name.arity();
        let count = scanned.args.len();
        if count < min || max.is_some_and(|max| count > max) {
            args.truncate(scanned.args.start);
            let wanted = match max {
                Some(max) if max == min => format!("exactly {min}"),
                _ => format!("at least {min}"),
            };
            diagnostics.push(unplaced(
                DiagnosticKind::MvuWrongArgumentCount,
                skipped,
                start..end,
                format!(
                    "`_.{}` takes {wanted} arguments, not {count}; mvu drops it, so it was skipped",
                    name.name()
                ),
            ));
        } else {
            commands.push(RawCommand {
                name,
                span: start..end,
                args: scanned.args,
                reason,
                reason_on_later_line,
            });
        }
        at = end;
    }
    Scan { commands, args }
}

fn command_name(bytes: &[u8], at: usize) -> Option<(CommandName, usize)> {
    let rest = bytes.get(at..)?;
    CommandName::ALL
        .into_iter()
        .find(|name| rest.starts_with(name.name().as_bytes()))
        .map(|name| (name, at + name.name().len()))
}

fn skip_spaces(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t')) {
        at += 1;
    }
    at
}

fn line_end(bytes: &[u8], from: usize) -> usize {
    memchr::memchr(b'\n', &bytes[from..]).map_or(bytes.len(), |i| from + i)
}

struct Scanned {
    close: usize,
    /// Where the command's arguments were pushed in the caller's vector.
    args: Range<usize>,
}

/// Whether a byte matters to [`walk`] outside a string: quotes, parentheses, brackets, braces and
/// commas. Every other byte is passed over without a look at the state of the walk.
const STRUCTURAL: [bool; 256] = {
    let mut table = [false; 256];
    let structural = b"'\"`()[]{},";
    let mut i = 0;
    while i < structural.len() {
        table[structural[i] as usize] = true;
        i += 1;
    }
    table
};

/// Finds the `)` that closes the `(` before `open` and splits the arguments at top-level commas.
/// Parentheses inside quotes do not count; brackets and braces only matter for splitting, as in MVU.
/// Every byte read is taken from `budget` (a character escaped inside a string is passed over free);
/// `None` when the text ends first or the budget runs out, and then `budget` is 0 only if the budget
/// was what stopped the search (or ran out exactly at the end of the text).
/// The arguments' ranges are pushed onto `args`, and taken off again when there is no close.
fn close_paren(
    bytes: &[u8],
    open: usize,
    budget: &mut usize,
    args: &mut Vec<Range<usize>>,
) -> Option<Scanned> {
    let first = args.len();
    let walk = walk(bytes, open, *budget, args);
    if walk.scanned.is_none() {
        args.truncate(first);
    }
    match walk.scanned {
        Some(_) => *budget -= walk.read,
        None if walk.out_of_budget => *budget = 0,
        None => *budget = budget.saturating_sub(walk.read),
    }
    walk.scanned
}

/// What [`walk`] found, and how many bytes it read.
struct Walk {
    scanned: Option<Scanned>,
    /// Bytes read, escaped characters inside strings not counted.
    read: usize,
    /// Whether the walk stopped because `budget` bytes were read, before the end of the text.
    out_of_budget: bool,
}

/// [`close_paren`]'s walk from `open`, reading at most `budget` bytes. Outside strings it passes over
/// every byte that is not [`STRUCTURAL`] in a tight loop; inside a string it jumps with `memchr`.
fn walk(bytes: &[u8], open: usize, budget: usize, args: &mut Vec<Range<usize>>) -> Walk {
    let end = bytes.len();
    // Bytes `open..limit` may be read; each escaped character passed over free moves `limit` by one.
    let mut limit = open.saturating_add(budget).min(end);
    let mut free = 0usize;
    let mut parens = 1usize;
    let mut nesting = 0isize;
    let first = args.len();
    let mut arg_start = open;
    let mut i = open;
    let stopped = |i: usize, limit: usize, free: usize| Walk {
        scanned: None,
        read: i.min(end) - open - free,
        out_of_budget: limit < end,
    };
    loop {
        i += bytes[i..limit]
            .iter()
            .position(|&b| STRUCTURAL[usize::from(b)])
            .unwrap_or(limit - i);
        if i >= limit {
            return stopped(limit, limit, free);
        }
        match bytes[i] {
            // As in MVU, a quote after a backslash does not open a string: `\"a.b\"` is a path
            // written by a model that thinks in JSON strings.
            b'\'' | b'"' | b'`' if i > 0 && bytes[i - 1] == b'\\' => {}
            quote @ (b'\'' | b'"' | b'`') => {
                // Inside a string only its quote and backslashes matter: jump to the next one.
                i += 1;
                loop {
                    let Some(skip) = memchr::memchr2(quote, b'\\', &bytes[i.min(limit)..limit])
                    else {
                        return stopped(limit, limit, free);
                    };
                    i += skip;
                    if bytes[i] == quote {
                        break;
                    }
                    // An escaped character never ends the string, and is not charged.
                    i += 2;
                    if i <= end {
                        free += 1;
                        limit = (limit + 1).min(end);
                    }
                }
            }
            b'(' => parens += 1,
            b')' => {
                parens -= 1;
                if parens == 0 {
                    push_arg(bytes, arg_start..i, args, true);
                    return Walk {
                        scanned: Some(Scanned {
                            close: i,
                            args: first..args.len(),
                        }),
                        read: i + 1 - open - free,
                        out_of_budget: false,
                    };
                }
            }
            b'[' | b'{' => nesting += 1,
            b']' | b'}' => nesting -= 1,
            b',' if parens == 1 && nesting == 0 => {
                push_arg(bytes, arg_start..i, args, false);
                arg_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
}

/// Records an argument, trimmed. MVU drops an empty last argument (`_.set('a', 1, )`), but keeps empty
/// ones before a comma.
fn push_arg(bytes: &[u8], range: Range<usize>, args: &mut Vec<Range<usize>>, last: bool) {
    let mut start = range.start;
    let mut end = range.end;
    while start < end && bytes[start].is_ascii_whitespace() {
        start += 1;
    }
    while end > start && bytes[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    if last && start == end {
        return;
    }
    args.push(start..end);
}

/// MVU's `^\s*//(.*)`: a comment after the `;`, possibly on a later line. Returns the trimmed text
/// range, whether it was on a later line, and where the comment ends.
fn reason_comment(bytes: &[u8], from: usize) -> Option<(Range<usize>, bool, usize)> {
    let mut at = from;
    let mut later_line = false;
    while let Some(&b) = bytes.get(at) {
        match b {
            b'\n' => later_line = true,
            b if b.is_ascii_whitespace() => {}
            _ => break,
        }
        at += 1;
    }
    if !bytes.get(at..)?.starts_with(b"//") {
        return None;
    }
    let text_start = at + 2;
    let comment_end = line_end(bytes, text_start);
    // `.` in MVU's pattern stops before `\r` too.
    let mut end = comment_end;
    let mut start = text_start;
    while start < end && bytes[start].is_ascii_whitespace() {
        start += 1;
    }
    while end > start && bytes[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    Some((start..end, later_line, comment_end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The byte-by-byte walk [`close_paren`] replaced, kept as the model it must agree with: the same
    /// close, the same arguments and the same budget left, whether it finds the `)` or not.
    fn close_paren_byte_by_byte(
        bytes: &[u8],
        open: usize,
        budget: &mut usize,
    ) -> Option<(usize, Vec<Range<usize>>)> {
        let mut quote: Option<u8> = None;
        let mut parens = 1usize;
        let mut nesting = 0isize;
        let mut args = Vec::new();
        let mut arg_start = open;
        let mut i = open;
        while i < bytes.len() {
            if *budget == 0 {
                return None;
            }
            *budget -= 1;
            let b = bytes[i];
            match quote {
                Some(q) => {
                    let Some(skip) = memchr::memchr2(q, b'\\', &bytes[i..]) else {
                        *budget = budget.saturating_sub(bytes.len() - i - 1);
                        return None;
                    };
                    if *budget < skip {
                        *budget = 0;
                        return None;
                    }
                    *budget -= skip;
                    i += skip;
                    if bytes[i] == b'\\' {
                        i += 1;
                    } else if bytes[i] == q {
                        quote = None;
                    }
                }
                None => match b {
                    b'\'' | b'"' | b'`' if i > 0 && bytes[i - 1] == b'\\' => {}
                    b'\'' | b'"' | b'`' => quote = Some(b),
                    b'(' => parens += 1,
                    b')' => {
                        parens -= 1;
                        if parens == 0 {
                            push_arg(bytes, arg_start..i, &mut args, true);
                            return Some((i, args));
                        }
                    }
                    b'[' | b'{' => nesting += 1,
                    b']' | b'}' => nesting -= 1,
                    b',' if parens == 1 && nesting == 0 => {
                        push_arg(bytes, arg_start..i, &mut args, false);
                        arg_start = i + 1;
                    }
                    _ => {}
                },
            }
            i += 1;
        }
        None
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn close_paren_agrees_with_the_byte_by_byte_walk(
            text in "[a'\"`()\\\\\\[\\]{},; ]{0,40}",
            open in 0usize..8,
            budget in 0usize..48,
        ) {
            let bytes = text.as_bytes();
            let open = open.min(bytes.len());
            let (mut fast, mut model) = (budget, budget);
            // A range already in the caller's vector, which the search must leave alone.
            let earlier: Range<usize> = 100..101;
            let mut args = vec![earlier.clone()];
            let found = close_paren(bytes, open, &mut fast, &mut args)
                .map(|s| (s.close, args[s.args].to_vec()));
            let expected = close_paren_byte_by_byte(bytes, open, &mut model);
            prop_assert_eq!(&found, &expected);
            if expected.is_none() {
                // A failed search leaves the caller's vector as it was.
                prop_assert_eq!(args, vec![earlier]);
            }
            prop_assert_eq!(fast, model);
        }
    }

    fn names(text: &str) -> (Vec<&'static str>, Vec<String>) {
        let mut diagnostics = Vec::new();
        let found = scan(text, Severity::Warning, &mut diagnostics).commands;
        (
            found.iter().map(|c| c.name.name()).collect(),
            diagnostics.iter().map(|d| d.kind.to_string()).collect(),
        )
    }

    #[test]
    fn unclosed_command_does_not_hide_the_next_one() {
        assert_eq!(
            names("_.set('a', \"x);\n_.set('b', 1);"),
            (vec!["set"], vec!["mvu_unclosed_command".to_owned()])
        );
        assert_eq!(
            names("_.set('a', (1;\n_.set('b', 1);"),
            (vec!["set"], vec!["mvu_unclosed_command".to_owned()])
        );
    }

    #[test]
    fn escaped_quotes_outside_strings_open_nothing() {
        assert_eq!(names("_.set(\\\"a.b\\\", 1);"), (vec!["set"], vec![]));
    }

    #[test]
    fn adversarial_input_stops_within_budget() {
        let text = "_.set(".repeat(10_000);
        let (found, kinds) = names(&text);
        assert!(found.is_empty());
        assert!(kinds.len() < 100, "{}", kinds.len());
        assert_eq!(kinds.last().map(String::as_str), Some("mvu_scan_stopped"));
    }
}
