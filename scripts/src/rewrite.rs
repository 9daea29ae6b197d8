//! What a `before` hook changed in a batch, in words: the `rewritten_by_script` notes.
//!
//! The batch a hook received and the one it returned are compared in one linear pass: the common
//! leading and trailing instructions are unchanged, and what lies between was edited (pairs of the
//! same position), dropped or added. Each note names the hook's file and line and, where an
//! instruction came from the reply, its byte span there. This module must not run Lua.

use std::borrow::Cow;
use std::ops::Range;

use statecraft_engine::{Instruction, RewriteNote};

/// One instruction of a batch passing through `before` hooks, with its span in the reply if known.
/// An instruction no hook changed is borrowed from the batch: most hooks hand most of it back.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry<'a> {
    pub instruction: Cow<'a, Instruction>,
    pub span: Option<Range<usize>>,
}

/// The longest instruction text a note quotes; longer text is cut.
const QUOTE: usize = 160;

/// The notes for a hook at `origin` that turned `old` into `new`. Empty when nothing changed.
pub(crate) fn notes(origin: &str, old: &[Entry<'_>], new: &[Entry<'_>]) -> Vec<RewriteNote> {
    let same = |a: &Entry<'_>, b: &Entry<'_>| a.instruction == b.instruction;
    let head = old.iter().zip(new).take_while(|(a, b)| same(a, b)).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| same(a, b))
        .count();
    let removed = &old[head..old.len() - tail];
    let added = &new[head..new.len() - tail];
    let mut out = Vec::new();
    let note = |instruction: Option<usize>, message: String| RewriteNote {
        origin: origin.to_owned(),
        instruction,
        message,
    };
    let edited = removed.len().min(added.len());
    for i in 0..edited {
        out.push(note(
            Some(head + i),
            format!(
                "instruction {} {}was changed from {} to {}",
                head + i,
                place(&removed[i]),
                quote(&removed[i].instruction),
                quote(&added[i].instruction)
            ),
        ));
    }
    for (i, entry) in removed.iter().enumerate().skip(edited) {
        out.push(note(
            None,
            format!(
                "instruction {} {}was dropped: {}",
                head + i,
                place(entry),
                quote(&entry.instruction)
            ),
        ));
    }
    for (i, entry) in added.iter().enumerate().skip(edited) {
        out.push(note(
            Some(head + i),
            format!(
                "instruction {} was added: {}",
                head + i,
                quote(&entry.instruction)
            ),
        ));
    }
    out
}

/// `(reply bytes 10..42) ` when the span is known.
fn place(entry: &Entry<'_>) -> String {
    match &entry.span {
        Some(span) => format!("(reply bytes {}..{}) ", span.start, span.end),
        None => String::new(),
    }
}

fn quote(instruction: &Instruction) -> String {
    let mut text = instruction.to_json_text();
    if text.len() > QUOTE {
        let mut end = QUOTE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}
