//! MVU command text to instructions and back (SPEC §6).
//!
//! MVU (MagVarUpdate) is the variable system of SillyTavern character cards: models write commands such
//! as `_.set('悠纪.好感度', 33, 35);//愉快的讨论`. This module owns translating that text into engine
//! [`Instruction`]s ([`translate`]) and writing instructions back as MVU text ([`to_mvu`]). It finds
//! commands the way MVU's own extractor does (`scan`), reads arguments (`literal`), decides what each
//! command does (`resolve`) and writes text (`emit`). It never fails and never drops a command
//! silently: everything MVU would skip, everything guessed and every deliberate difference from MVU is a
//! [`Diagnostic`]. It must not run instructions: it reads a state only to resolve MVU's type-dependent
//! commands, and leaves execution to the engine, under [`Policies::mvu`].

mod emit;
mod literal;
mod resolve;
mod scan;

use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::Value as Json;
use statecraft_engine::{Batch, Instruction, Policies, Value};

use crate::diagnostic::{Diagnostic, Severity, place, unplaced};

pub use emit::to_mvu;
pub use scan::CommandName;

/// How to translate MVU text.
#[derive(Clone, Debug, Default)]
pub struct MvuOptions {
    /// SillyTavern macros substituted in every path, string and reason: the name `user` replaces
    /// `<user>` and `{{user}}`. Names not in the map are left as written.
    pub macros: BTreeMap<String, String>,
    /// The state the commands will run on. With it, `insert`/`assign` and `remove`/`unset`/`delete`
    /// resolve exactly; without it they are guessed from their arguments and a diagnostic says so.
    pub state: Option<Value>,
    /// MVU's `[value, "description"]` convention: with a state, `set` and `add` on such a pair touch
    /// element 0, as MVU does.
    pub value_description_pairs: bool,
}

/// What [`translate`] read from a text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MvuTranslation {
    /// The instructions, in text order.
    pub instructions: Vec<Instruction>,
    /// What was noticed, skipped or guessed; spans are byte ranges of the translated text.
    pub diagnostics: Vec<Diagnostic>,
}

impl MvuTranslation {
    /// The instructions as a batch.
    pub fn into_batch(self) -> Batch {
        Batch::new(self.instructions)
    }

    /// The policies to run these instructions under: `old_mismatch = warn`, because MVU ignores old
    /// values and models often write stale ones (SPEC §3).
    pub fn policies() -> Policies {
        Policies::mvu()
    }
}

/// One MVU command as read, before it is resolved into instructions.
#[derive(Clone, Debug, PartialEq)]
pub struct MvuCommand {
    /// Which command.
    pub name: CommandName,
    /// Bytes of the command in the text, from `_` to the `;` or the end of its reason.
    pub span: Range<usize>,
    /// The path as written, quotes removed and macros substituted.
    pub path: String,
    /// The arguments after the path, read as values.
    pub args: Vec<Json>,
    /// Whether each of `args` was a complete literal rather than bare text, arithmetic or a repair.
    pub literal: Vec<bool>,
    /// The `//` comment, trimmed; `None` when absent or empty.
    pub reason: Option<String>,
}

/// Reads every MVU command in `text` without resolving it, with the diagnostics of reading.
/// Time: O(n) in the length of `text`.
pub fn parse_commands(text: &str, options: &MvuOptions) -> (Vec<MvuCommand>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let raw = scan::scan(text, &mut diagnostics);
    let mut commands = Vec::with_capacity(raw.len());
    for command in raw {
        let mut values = Vec::with_capacity(command.args.len());
        let mut literal = Vec::with_capacity(command.args.len());
        for range in &command.args[1..] {
            let read = literal::read_value(&text[range.clone()], &options.macros);
            if let Some(note) = read.note {
                diagnostics.push(unplaced(
                    note.kind,
                    note.severity,
                    range.clone(),
                    note.message,
                ));
            }
            values.push(read.value);
            literal.push(read.literal);
        }
        let path_range = command.args[0].clone();
        let path_text = &text[path_range.clone()];
        let path = match literal::read_value(path_text, &options.macros) {
            literal::Read {
                value: Json::String(path),
                literal: true,
                ..
            } => path,
            literal::Read {
                value,
                literal: true,
                ..
            } => {
                diagnostics.push(unplaced(
                    "mvu_unquoted_path",
                    Severity::Note,
                    path_range,
                    format!("the path `{path_text}` is not quoted; read it as the key {value}"),
                ));
                value.to_string()
            }
            _ => {
                // MVU trims quotes and backslashes from the path text whatever it holds.
                let trimmed =
                    path_text.trim_matches(|c| matches!(c, '\\' | '"' | '\'' | '`' | ' '));
                if trimmed == path_text {
                    diagnostics.push(unplaced(
                        "mvu_unquoted_path",
                        Severity::Note,
                        path_range,
                        format!("the path `{path_text}` is not quoted; read as written"),
                    ));
                }
                literal::expand(trimmed, &options.macros).into_owned()
            }
        };
        if command.reason_on_later_line {
            if let Some(range) = &command.reason {
                diagnostics.push(unplaced("mvu_reason_on_next_line",
                    Severity::Note,
                    range.clone(),
                    "this comment is on a later line than the command; mvu takes it as the command's reason, and so does this",
                ));
            }
        }
        let reason = command
            .reason
            .map(|range| literal::expand(&text[range], &options.macros).into_owned())
            .filter(|reason| !reason.is_empty());
        commands.push(MvuCommand {
            name: command.name,
            span: command.span,
            path,
            args: values,
            literal,
            reason,
        });
    }
    place(text, &mut diagnostics);
    (commands, diagnostics)
}

/// Translates MVU command text into instructions. Never fails: what cannot be read, what MVU would
/// drop and what had to be guessed are diagnostics with byte spans into `text`.
/// Time: O(n) in the length of `text` (plus state lookups when a state is given).
pub fn translate(text: &str, options: &MvuOptions) -> MvuTranslation {
    let (commands, mut diagnostics) = parse_commands(text, options);
    let mut instructions = Vec::with_capacity(commands.len());
    for command in &commands {
        resolve::resolve(command, options, &mut instructions, &mut diagnostics);
    }
    place(text, &mut diagnostics);
    MvuTranslation {
        instructions,
        diagnostics,
    }
}
