//! MVU command text to instructions and back (docs/mvu.md).
//!
//! MVU (MagVarUpdate) is the variable system of SillyTavern character cards: models write commands such
//! as `_.set('悠纪.好感度', 33, 35);//愉快的讨论`. This module owns translating that text into engine
//! [`Instruction`]s ([`from_text`]) and writing instructions back as MVU text ([`to_text`]). It finds
//! commands the way MVU's own extractor does (`scan`), reads arguments (`literal`, with `math` for
//! math.js expressions and `yaml` for MVU's YAML fallback), decides what each command does
//! (`resolve`) and writes text (`emit`); `<JSONPatch>` blocks in the text go to the reader
//! [`crate::extract`] uses. It never fails and never drops a command silently: everything MVU would
//! skip, everything guessed and every deliberate difference from MVU is a [`Diagnostic`], and text MVU
//! would not run is skipped or refused as [`Unrunnable`] says. It must not run instructions: it reads a
//! state only to resolve MVU's type-dependent commands, and leaves execution to the engine, under
//! [`Policies::mvu`].

mod emit;
mod literal;
mod math;
mod resolve;
mod scan;
mod view;
mod yaml;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::Value as Json;
use statecraft_engine::{Batch, Instruction, Policies, Profile, Value};

use crate::diagnostic::{Diagnostic, DiagnosticKind, Severity, place, unplaced};
use crate::extract::patch_blocks;

pub use emit::to_text;
pub use math::{MathOutcome, evaluate as evaluate_math};
pub use scan::CommandName;
pub use view::{MvuViews, current_views, views};

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
    /// element 0, as MVU does. The `mvu` profiles turn it on whatever this says.
    pub value_description_pairs: bool,
    /// What to do with text MVU itself would not run.
    pub unrunnable: Unrunnable,
    /// The game's profile (docs/mvu.md, "Profiles"). Under `mvu` and `mvu-zod`, with a state:
    /// `[value, "description"]` pairs are on, `_.add` (and, under `mvu`, `_.set`) on a path that does
    /// not exist is skipped with a warning, a value written over a number becomes a number as MVU's
    /// `Number()` makes it, and `_.insert` below a missing parent is skipped, all as MVU does.
    pub profile: Profile,
    /// MVU's `strictSet` of the card: pairs stay off even under the `mvu` profiles.
    pub strict_set: bool,
}

impl MvuOptions {
    /// Whether `[value, "description"]` pairs are on.
    pub fn pairs(&self) -> bool {
        !self.strict_set && (self.value_description_pairs || self.profile.is_mvu())
    }
}

/// What to do with text MVU itself would not run (docs/mvu.md): a command without `;` right after its
/// `)`, a command cut off by the end of the text, a command with the wrong number of arguments, a
/// space between the name and `(`, a path that cannot be read, an `_.add` whose delta is no number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unrunnable {
    /// Skip it with a warning and translate the rest, as MVU does: a reply holding it still applies.
    #[default]
    Skip,
    /// Report it as an error, which makes a reply holding it invalid: nothing of it applies.
    Reject,
}

impl Unrunnable {
    /// The severity of the diagnostic that reports such text.
    pub fn severity(self) -> Severity {
        match self {
            Unrunnable::Skip => Severity::Warning,
            Unrunnable::Reject => Severity::Error,
        }
    }
}

/// What [`from_text`] read from a text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MvuTranslation {
    /// The instructions, in text order.
    pub instructions: Vec<Instruction>,
    /// The byte range in the translated text of each instruction's command or patch operation.
    pub spans: Vec<Range<usize>>,
    /// What was noticed, skipped or guessed; spans are byte ranges of the translated text.
    pub diagnostics: Vec<Diagnostic>,
    /// The commands, each with its instructions, kept when the profile applies commands one by one
    /// (empty otherwise): each is decided again on the state it runs on (docs/mvu.md, "Profiles").
    pub units: Vec<MvuUnit>,
}

/// One command of a translation: the instructions it became, and what it takes to decide it again.
#[derive(Clone, Debug, PartialEq)]
pub struct MvuUnit {
    /// Its instructions, by index (empty when it resolved to nothing).
    pub instructions: Range<usize>,
    /// The command, or `None` for an operation of a `<JSONPatch>` block, which does not depend on
    /// the state.
    pub(crate) command: Option<Resolvable>,
}

/// An MVU command as read, owned, to resolve again on another state.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Resolvable {
    pub(crate) name: CommandName,
    pub(crate) span: Range<usize>,
    pub(crate) path: String,
    pub(crate) args: Vec<Value>,
    pub(crate) reason: Option<String>,
    /// The command's text, cut to a length fit for a message.
    pub(crate) text: String,
}

/// The longest command text a warning quotes, in bytes.
const QUOTED_COMMAND_BYTES: usize = 160;

impl MvuUnit {
    /// The command as written in the reply, cut to a length fit for a message; `None` for a JSON
    /// Patch operation.
    pub fn text(&self) -> Option<&str> {
        self.command.as_ref().map(|command| command.text.as_str())
    }

    /// The command's byte span in the translated text.
    pub fn span(&self) -> Option<Range<usize>> {
        self.command.as_ref().map(|command| command.span.clone())
    }

    /// The unit moved by `instructions` instructions and `bytes` bytes, for a translation placed in a
    /// longer text.
    pub(crate) fn shifted(mut self, instructions: usize, bytes: usize) -> MvuUnit {
        self.instructions =
            self.instructions.start + instructions..self.instructions.end + instructions;
        if let Some(command) = &mut self.command {
            command.span = command.span.start + bytes..command.span.end + bytes;
        }
        self
    }

    /// What the command stands for on the state `options` carry, with the diagnostics of deciding
    /// it (spans as the command's); `None` for a JSON Patch operation, which stands as it is.
    pub(crate) fn resolve(
        &self,
        options: &MvuOptions,
    ) -> Option<(Vec<Instruction>, Vec<Diagnostic>)> {
        let command = self.command.as_ref()?;
        let mut values = command.args.clone();
        let read = Command {
            name: command.name,
            span: command.span.clone(),
            path: Cow::Borrowed(&command.path),
            args: 0..values.len(),
            reason: command.reason.clone(),
        };
        let mut instructions = Vec::new();
        let mut diagnostics = Vec::new();
        resolve::resolve(
            read,
            &mut values,
            options,
            &mut instructions,
            &mut diagnostics,
        );
        Some((instructions, diagnostics))
    }
}

/// A command's text for a message: at most [`QUOTED_COMMAND_BYTES`], cut at a character boundary.
fn quoted(text: &str) -> String {
    if text.len() <= QUOTED_COMMAND_BYTES {
        return text.to_owned();
    }
    let mut end = QUOTED_COMMAND_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl MvuTranslation {
    /// The instructions as a batch.
    pub fn into_batch(self) -> Batch {
        Batch::new(self.instructions)
    }

    /// The policies to run these instructions under: `old_mismatch = warn`, because MVU ignores old
    /// values and models often write stale ones (docs/instructions.md, "Old-value checks").
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
pub fn commands_from_text(text: &str, options: &MvuOptions) -> (Vec<MvuCommand>, Vec<Diagnostic>) {
    let (read, mut diagnostics) = read_commands(text, options);
    let ReadCommands {
        commands,
        values,
        literal,
    } = read;
    let commands = commands
        .into_iter()
        .map(|command| MvuCommand {
            name: command.name,
            span: command.span,
            path: command.path.into_owned(),
            args: values[command.args.clone()]
                .iter()
                .map(Value::to_json)
                .collect(),
            literal: literal[command.args].to_vec(),
            reason: command.reason,
        })
        .collect();
    place(text, &mut diagnostics);
    (commands, diagnostics)
}

/// The commands of a text as read, before they are resolved.
struct ReadCommands<'t> {
    commands: Vec<Command<'t>>,
    /// The arguments after the path of every command, in text order, as engine values: one vector for
    /// the whole text rather than one per command.
    values: Vec<Value>,
    /// Whether each of `values` was a complete literal rather than bare text, arithmetic or a repair.
    literal: Vec<bool>,
}

/// [`MvuCommand`] with its arguments in [`ReadCommands::values`].
pub(crate) struct Command<'t> {
    pub(crate) name: CommandName,
    pub(crate) span: Range<usize>,
    /// The path as written, quotes removed and macros substituted: borrowed from the text when
    /// nothing was removed from inside it or substituted.
    pub(crate) path: Cow<'t, str>,
    /// Where the arguments after the path are in [`ReadCommands::values`].
    pub(crate) args: Range<usize>,
    pub(crate) reason: Option<String>,
}

/// [`commands_from_text`] with the diagnostics' lines and columns left for the caller to place.
fn read_commands<'t>(text: &'t str, options: &MvuOptions) -> (ReadCommands<'t>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let scan::Scan {
        commands: raw,
        args: ranges,
    } = scan::scan(text, options.unrunnable.severity(), &mut diagnostics);
    let mut commands = Vec::with_capacity(raw.len());
    let mut values = Vec::with_capacity(ranges.len());
    let mut literal = Vec::with_capacity(ranges.len());
    for command in raw {
        let first = values.len();
        for range in &ranges[command.args.start + 1..command.args.end] {
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
        let path_range = ranges[command.args.start].clone();
        let path_text = &text[path_range.clone()];
        // A plain quoted path (most are) is its text; the general reading would give the same.
        let path = match literal::plain_quoted(path_text) {
            Some(inner) => literal::expand(inner, &options.macros),
            None => Cow::Owned(read_path(path_text, path_range, options, &mut diagnostics)),
        };
        if command.reason_on_later_line {
            if let Some(range) = &command.reason {
                diagnostics.push(unplaced(DiagnosticKind::MvuReasonOnNextLine,
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
        commands.push(Command {
            name: command.name,
            span: command.span,
            path,
            args: first..values.len(),
            reason,
        });
    }
    (
        ReadCommands {
            commands,
            values,
            literal,
        },
        diagnostics,
    )
}

/// A command's path read as MVU reads it, when it is not a plain quoted string: any literal, or the
/// text with quotes and backslashes trimmed; unquoted paths are noted.
fn read_path(
    path_text: &str,
    path_range: Range<usize>,
    options: &MvuOptions,
    diagnostics: &mut Vec<Diagnostic>,
) -> String {
    match literal::read_value(path_text, &options.macros) {
        literal::Read {
            value: Value::String(path),
            literal: true,
            ..
        } => path.to_string(),
        literal::Read {
            value,
            literal: true,
            ..
        } => {
            diagnostics.push(unplaced(
                DiagnosticKind::MvuUnquotedPath,
                Severity::Note,
                path_range,
                format!("the path `{path_text}` is not quoted; read it as the key {value}"),
            ));
            value.to_string()
        }
        _ => {
            // MVU trims quotes and backslashes from the path text whatever it holds.
            let trimmed = path_text.trim_matches(|c| matches!(c, '\\' | '"' | '\'' | '`' | ' '));
            if trimmed == path_text {
                diagnostics.push(unplaced(
                    DiagnosticKind::MvuUnquotedPath,
                    Severity::Note,
                    path_range,
                    format!("the path `{path_text}` is not quoted; read as written"),
                ));
            }
            literal::expand(trimmed, &options.macros).into_owned()
        }
    }
}

/// Translates MVU command text into instructions: its commands and its `<JSONPatch>` blocks, in text
/// order. Never fails: what cannot be read, what MVU would drop and what had to be guessed are
/// diagnostics with byte spans into `text`, and a text that gives no instruction always says why.
/// Time: O(n) in the length of `text` (plus state lookups when a state is given).
pub fn from_text(text: &str, options: &MvuOptions) -> MvuTranslation {
    let (read, mut diagnostics) = read_commands(text, options);
    let ReadCommands {
        commands,
        mut values,
        ..
    } = read;
    let mut patches = patch_blocks(text, options, &mut diagnostics)
        .into_iter()
        .peekable();
    let mut instructions = Vec::with_capacity(commands.len());
    let mut spans = Vec::with_capacity(commands.len());
    let keep_units = options.profile.one_by_one();
    let mut units = Vec::new();
    let patch_units = |instructions: &Vec<Instruction>, added: usize, units: &mut Vec<MvuUnit>| {
        if keep_units {
            let end = instructions.len();
            units.extend((end - added..end).map(|i| MvuUnit {
                instructions: i..i + 1,
                command: None,
            }));
        }
    };
    for command in commands {
        while let Some(block) = patches.next_if(|block| block.start < command.span.start) {
            let added = block.instructions.len();
            instructions.extend(block.instructions);
            spans.extend(block.spans);
            patch_units(&instructions, added, &mut units);
        }
        let span = command.span.clone();
        let first = instructions.len();
        let kept = keep_units.then(|| Resolvable {
            name: command.name,
            span: span.clone(),
            path: command.path.to_string(),
            args: values[command.args.clone()].to_vec(),
            reason: command.reason.clone(),
            text: quoted(&text[span.clone()]),
        });
        let args = &mut values[command.args.clone()];
        resolve::resolve(command, args, options, &mut instructions, &mut diagnostics);
        spans.resize(instructions.len(), span);
        if let Some(command) = kept {
            units.push(MvuUnit {
                instructions: first..instructions.len(),
                command: Some(command),
            });
        }
    }
    for block in patches {
        let added = block.instructions.len();
        instructions.extend(block.instructions);
        spans.extend(block.spans);
        patch_units(&instructions, added, &mut units);
    }
    let explained = diagnostics.iter().any(|d| d.severity >= Severity::Warning);
    if instructions.is_empty() && !explained && !text.trim().is_empty() {
        diagnostics.push(unplaced(
            DiagnosticKind::MvuNoCommands,
            Severity::Warning,
            0..0,
            "found no mvu command and no json patch operation in the text",
        ));
    }
    place(text, &mut diagnostics);
    MvuTranslation {
        instructions,
        spans,
        diagnostics,
        units,
    }
}
