//! Finding instructions in a raw model reply: blocks, wrappers, truncation, path spellings (docs/lenient-layer.md).
//!
//! This module owns the walk over a reply: `<think>` sections are skipped, fences (```` ``` ```` and
//! `~~~`, labelled or not, closed or not) and tags (`<UpdateVariable>`, `<tool_call>`, `<JSONPatch>`, any
//! case, with attributes) are opened, bare JSON in prose is recognised without letting a `{name}` in
//! a sentence swallow the real block, and MVU command lines are handed to [`crate::mvu::from_text`].
//! Every block is translated on its own and the instructions join into one batch in text order. An
//! instruction the end of the text cut is dropped with a diagnostic, never completed with a guess.
//!
//! Each byte is looked at a bounded number of times: a block that is parsed is never parsed again, tag
//! and fence nesting is bounded, and the JSON parser is linear. This module must not repair JSON itself
//! ([`crate::repair`] does), read path spellings ([`statecraft_engine::parse_path`]) or parse MVU commands.

use std::borrow::Cow;
use std::ops::Range;

use serde_json::Value as Json;
use statecraft_engine::{
    ApplyOptions, Batch, BatchError, ErrorKind, Instruction, JsonTree, Limits, NodeKind, Policies,
    Profile, ReplyReader, Resolve, Value, escape_pointer_token, parse_path,
};

use crate::diagnostic::{Diagnostic, DiagnosticKind, MAX_DIAGNOSTICS_PER_KIND, Severity, unplaced};
use crate::document::{Document, NodeId, NodeRef, PointerTargets};
use crate::jsonpatch::PATCH_OPS;
use crate::mvu::{self, MvuOptions, MvuUnit};
use crate::repair::{Parsed, Repair, RepairKind, Spare, find, parse_value_in};
use crate::report::RepairReport;

/// How to read a reply.
#[derive(Clone, Debug, Default)]
pub struct ExtractOptions {
    /// Limits applied while decoding instructions (value depth, string sizes, batch length).
    pub limits: Limits,
    /// Options for MVU command lines found in the reply (macros, state, value/description pairs,
    /// and the game's profile, which is also the reply's).
    pub mvu: MvuOptions,
}

/// What [`extract`] found in a reply. To apply it, take the batch and options from
/// [`Extraction::applicable`], which refuses an invalid reply and carries the policies it calls for.
#[derive(Clone, Debug)]
pub struct Extraction {
    /// The instructions, in text order. When [`Extraction::valid`] is `false` it holds only the
    /// instructions that decoded, and must not be applied.
    pub batch: Batch,
    /// The byte range in the reply of each instruction of `batch` (its JSON value, or its MVU
    /// command line), for `before` hooks and their notes.
    pub spans: Vec<Range<usize>>,
    /// Everything noticed, repaired, skipped or refused, with byte spans into the reply.
    pub diagnostics: Vec<Diagnostic>,
    /// What was cleaned, and the cleanliness score.
    pub report: RepairReport,
    /// `false` when a value with an `op` was invalid (docs/lenient-layer.md: it makes the batch invalid).
    pub valid: bool,
    /// The policies the batch should run under: MVU's (`old_mismatch = warn`) when any instruction
    /// came from MVU command text, the defaults otherwise. Private so that no caller applies the
    /// batch without them.
    policies: Policies,
    /// The profile the reply was read under.
    profile: Profile,
    /// Under a one-by-one profile, the reply's commands in order, covering the batch (empty
    /// otherwise).
    units: Vec<MvuUnit>,
    /// Under a one-by-one profile, the MVU options to decide commands again with (no state).
    mvu: Option<MvuOptions>,
}

impl Extraction {
    /// The batch and the options to apply it with, or `None` when the reply is invalid and must not be
    /// applied. The options carry the policies the reply calls for: MVU's (`old_mismatch = warn`,
    /// docs/instructions.md, "Old-value checks") when any instruction came from MVU command text, the defaults otherwise. Set a label
    /// on the options before applying when the step should have one. Under the `mvu` profiles they
    /// carry the profile and its policies; apply with [`Extraction::resolver`] then, so that each
    /// command is decided on the state it meets.
    pub fn applicable(&self) -> Option<(&Batch, ApplyOptions)> {
        self.valid.then(|| {
            let options = ApplyOptions {
                policies: Some(self.policies),
                profile: self.profile.is_mvu().then_some(self.profile),
                spans: self.spans.clone(),
                ..ApplyOptions::default()
            };
            (&self.batch, options)
        })
    }

    /// The profile the reply was read under.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The reply's commands, for a profile that applies them one by one (docs/mvu.md): hand it to
    /// `Store::apply_resolved`, then give it back with [`Extraction::absorb`]. `None` under `strict`.
    pub fn resolver(&self) -> Option<ReplyResolver> {
        let options = self.mvu.clone()?;
        Some(ReplyResolver {
            ranges: self
                .units
                .iter()
                .map(|unit| unit.instructions.clone())
                .collect(),
            found: vec![None; self.units.len()],
            units: self.units.clone(),
            options,
        })
    }

    /// Takes in what deciding the commands again found: the diagnostics of each command decided on
    /// the state it met replace those it had on the state before the reply. `text` is the reply.
    pub fn absorb(&mut self, resolver: ReplyResolver, text: &str) {
        let mut replaced = false;
        for (unit, found) in resolver.units.iter().zip(resolver.found) {
            let (Some(found), Some(span)) = (found, unit.span()) else {
                continue;
            };
            self.diagnostics
                .retain(|d| !(d.span == span && RESOLUTION_KINDS.contains(&d.kind)));
            self.diagnostics.extend(found);
            replaced = true;
        }
        if replaced {
            self.diagnostics.sort_by_key(|d| d.span.start);
            crate::diagnostic::place_in_order(text, &mut self.diagnostics);
        }
    }

    /// Runs `apply` (a store's or a save's `apply_resolved` of this reply's batch) with the reply's
    /// resolver, then absorbs what deciding the commands found: the one way to apply a reply under a
    /// profile that decides commands one by one. `text` is the reply.
    pub fn apply_resolved<T>(
        &mut self,
        text: &str,
        apply: impl FnOnce(Option<&mut dyn Resolve>) -> T,
    ) -> T {
        let mut resolver = self.resolver();
        let outcome = apply(resolver.as_mut().map(|r| r as &mut dyn Resolve));
        if let Some(resolver) = resolver {
            self.absorb(resolver, text);
        }
        outcome
    }
}

/// The diagnostics that deciding a command on a state gives (each spans the whole command).
const RESOLUTION_KINDS: [DiagnosticKind; 9] = [
    DiagnosticKind::MvuExtraArguments,
    DiagnosticKind::MvuPointerPath,
    DiagnosticKind::MvuInvalidPath,
    DiagnosticKind::MvuAddNotANumber,
    DiagnosticKind::MvuGuessed,
    DiagnosticKind::MvuMissingTarget,
    DiagnosticKind::MvuInsertType,
    DiagnosticKind::MvuCoerced,
    DiagnosticKind::MvuMissingPath,
];

/// A reply's commands, decided again one by one on the state each meets (the engine's
/// [`Resolve`]), as MVU runs them: an `_.insert` that makes a character lets the `_.set` of its
/// members after it apply.
#[derive(Clone, Debug)]
pub struct ReplyResolver {
    ranges: Vec<Range<usize>>,
    units: Vec<MvuUnit>,
    options: MvuOptions,
    /// The diagnostics of each command decided again, with spans into the reply.
    found: Vec<Option<Vec<crate::Diagnostic>>>,
}

impl Resolve for ReplyResolver {
    fn units(&self) -> &[Range<usize>] {
        &self.ranges
    }

    fn resolve(&mut self, unit: usize, state: &Value) -> Option<Vec<Instruction>> {
        let options = MvuOptions {
            state: Some(state.clone()),
            ..self.options.clone()
        };
        let (instructions, diagnostics) = self.units.get(unit)?.resolve(&options)?;
        self.found[unit] = Some(diagnostics);
        Some(instructions)
    }

    fn describe(&self, unit: usize) -> Option<String> {
        self.units.get(unit)?.text().map(|text| format!("`{text}`"))
    }
}

/// The [`ReplyReader`] a sync reads replies with: [`extract`] against the state each reply runs on
/// (under the options' profile, whose commands it hands the engine to decide one by one), and the
/// feedback of [`feedback`] for a reply that cannot run or that the engine refused.
#[derive(Debug)]
pub struct ExtractReader {
    options: ExtractOptions,
    last: Option<Extraction>,
    resolver: Option<ReplyResolver>,
}

impl ExtractReader {
    /// A reader with these options; `options.mvu.state` is set to each reply's state as it is read.
    pub fn new(options: ExtractOptions) -> ExtractReader {
        ExtractReader {
            options,
            last: None,
            resolver: None,
        }
    }
}

impl ReplyReader for ExtractReader {
    fn read(&mut self, text: &str, state: &Value) -> Result<(Batch, ApplyOptions), String> {
        self.options.mvu.state = Some(state.clone());
        let extraction = extract(text, &self.options);
        self.options.mvu.state = None;
        self.resolver = extraction.resolver();
        let read = match extraction.applicable() {
            Some((batch, options)) => Ok((batch.clone(), options)),
            None => Err(crate::feedback(&extraction, &[])),
        };
        self.last = Some(extraction);
        read
    }

    fn resolver(&mut self) -> Option<&mut dyn Resolve> {
        self.resolver
            .as_mut()
            .map(|resolver| resolver as &mut dyn Resolve)
    }

    fn refused(&mut self, errors: &[BatchError]) -> String {
        match &self.last {
            Some(extraction) => crate::feedback(extraction, errors),
            None => crate::feedback_for_errors(errors),
        }
    }
}

/// Tags whose content holds instructions.
const TAGS: [&str; 4] = ["updatevariable", "tool_call", "jsonpatch", "json_patch"];

/// The tags whose content is a JSON Patch document (MVU writes both spellings).
const PATCH_TAGS: [&str; 2] = ["jsonpatch", "json_patch"];

/// How deeply tags and fences may nest before their markers are read as plain text.
const MAX_NESTING: usize = 4;

/// The longest opening tag (name and attributes) looked for before a `<` is read as prose.
const MAX_TAG_LENGTH: usize = 512;

/// Repairs listed as diagnostics per block; the rest are counted in the report and summed up in one.
const MAX_REPAIR_DIAGNOSTICS: usize = 200;

/// MVU command names recognised after `_.`.
const MVU_COMMANDS: [&str; 7] = [
    "set", "add", "insert", "assign", "remove", "unset", "delete",
];

/// Finds and translates every instruction block in `text`. Never fails and never panics.
///
/// Time: O(n) in the length of `text`, plus the engine's decoding of the instructions found.
pub fn extract(text: &str, options: &ExtractOptions) -> Extraction {
    let mut walker = Walker::new(text, options);
    walker.walk();
    walker.finish()
}

/// One `<JSONPatch>` block of MVU text, read by [`patch_blocks`].
#[derive(Debug)]
pub(crate) struct PatchBlock {
    /// Where its opening tag starts in the text.
    pub(crate) start: usize,
    /// The operations it holds, decoded.
    pub(crate) instructions: Vec<Instruction>,
    /// The byte range in the text of each operation.
    pub(crate) spans: Vec<Range<usize>>,
}

/// Reads every `<JSONPatch>` (or `<json_patch>`) block of `text` exactly as [`extract`] reads one: the
/// MVU translator hands its blocks here (docs/mvu.md). Diagnostics go to `diagnostics`, unplaced, with
/// spans into `text`. Commands inside the blocks are the MVU translator's own to find.
/// Time: O(n) in the length of `text`.
pub(crate) fn patch_blocks(
    text: &str,
    mvu: &MvuOptions,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<PatchBlock> {
    // Most MVU text has no block: the walker and its options are built only when there is one.
    let Some((first, _)) = find_tag(text.as_bytes(), 0, &PATCH_TAGS, false) else {
        return Vec::new();
    };
    let options = ExtractOptions {
        limits: Limits::default(),
        mvu: mvu.clone(),
    };
    let mut walker = Walker::new(text, &options);
    walker.read_mvu = false;
    let mut blocks = Vec::new();
    let mut pos = first;
    while let Some((at, _)) = find_tag(walker.b, pos, &PATCH_TAGS, false) {
        let end = walker.tag(at, text.len(), 0).unwrap_or(at + 1);
        blocks.push(PatchBlock {
            start: at,
            instructions: std::mem::take(&mut walker.instructions),
            spans: std::mem::take(&mut walker.spans),
        });
        pos = end.max(at + 1);
    }
    diagnostics.append(&mut walker.diagnostics);
    blocks
}

/// Every JSON value found in `text` the way [`extract`] finds blocks (fences, tags, JSON-looking
/// brackets in prose, `<think>` skipped), whether or not it holds instructions.
///
/// This is the library-compatible view used by the repair corpus. Time: O(n).
pub fn json_values(text: &str) -> Vec<Json> {
    let options = ExtractOptions::default();
    let mut walker = Walker::new(text, &options);
    walker.collect_values = true;
    walker.walk();
    walker.values
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// Text written for people: only JSON-looking brackets start a block.
    Prose,
    /// A fence or tool call: every bracket starts a value, other text is garbage.
    Code,
    /// A `<JSONPatch>` tag: values are JSON Patch documents.
    Patch,
}

struct Walker<'a> {
    text: &'a str,
    b: &'a [u8],
    options: &'a ExtractOptions,
    instructions: Vec<Instruction>,
    /// The MVU commands read so far, under a one-by-one profile.
    units: Vec<MvuUnit>,
    /// The byte range of each of `instructions` in the text.
    spans: Vec<Range<usize>>,
    diagnostics: Vec<Diagnostic>,
    report: RepairReport,
    valid: bool,
    mvu_used: bool,
    /// End of the last block at the top level, for counting prose around blocks.
    last_block_end: Option<usize>,
    collect_values: bool,
    values: Vec<Json>,
    /// Where to look next after a bracket in prose was refused: the next bracket when only spaces
    /// lie between, so that a megabyte of `{` is one step, not a million.
    resume: Option<usize>,
    /// Vectors kept from one block's parse for the next.
    spare: Spare<'a>,
    /// Repairs made, by [`RepairKind`] as an index; they go into the report at the end.
    repair_counts: [usize; RepairKind::ALL.len()],
    /// A block's candidate instructions, kept from block to block.
    candidates: Vec<Candidate>,
    /// Whether MVU command lines are read; off when the MVU translator reads `<JSONPatch>` blocks
    /// through this walker, so that the two never call each other in a loop.
    read_mvu: bool,
    /// The invalid-instruction diagnostics pushed so far: how many, and the last byte one starts at.
    invalid_count: usize,
    invalid_last_start: usize,
}

/// One value that claims to be an instruction, with where it sits in the text.
struct Candidate {
    /// Its node in the block's document.
    node: NodeId,
    span: Range<usize>,
    complete: bool,
}

impl<'a> Walker<'a> {
    fn new(text: &'a str, options: &'a ExtractOptions) -> Walker<'a> {
        Walker {
            text,
            b: text.as_bytes(),
            options,
            instructions: Vec::new(),
            spans: Vec::new(),
            units: Vec::new(),
            diagnostics: Vec::new(),
            report: RepairReport::default(),
            valid: true,
            mvu_used: false,
            last_block_end: None,
            collect_values: false,
            values: Vec::new(),
            resume: None,
            spare: Spare::default(),
            repair_counts: [0; RepairKind::ALL.len()],
            candidates: Vec::new(),
            read_mvu: true,
            invalid_count: 0,
            invalid_last_start: 0,
        }
    }

    fn diag(
        &mut self,
        kind: DiagnosticKind,
        severity: Severity,
        span: Range<usize>,
        message: impl Into<Cow<'static, str>>,
    ) {
        // Line and column are filled in one pass at the end: computing them from the start of the
        // text for each diagnostic would make many diagnostics quadratic.
        self.diagnostics
            .push(unplaced(kind, severity, span, message));
    }

    /// Reports an invalid instruction, counted for [`Walker::instruction`] to see which ones the
    /// summary at the end will only count.
    fn invalid_instruction(&mut self, span: Range<usize>, message: impl Into<Cow<'static, str>>) {
        self.invalid_count += 1;
        self.invalid_last_start = self.invalid_last_start.max(span.start);
        self.diag(
            DiagnosticKind::InvalidInstruction,
            Severity::Error,
            span,
            message,
        );
    }

    /// The `<think>`/`<thinking>` sections, in order. A closing tag with no opener hides everything
    /// before it (some models omit the opener); an opener with no closer hides the rest.
    fn think_sections(&self) -> Vec<Range<usize>> {
        const NAMES: [&str; 2] = ["think", "thinking"];
        let mut sections = Vec::new();
        let mut pos = 0;
        let first_open = find_tag(self.b, 0, &NAMES, false).map(|(at, _)| at);
        if let Some((close_at, close_end)) = find_tag(self.b, 0, &NAMES, true) {
            if first_open.is_none_or(|open_at| close_at < open_at) {
                sections.push(0..close_end);
                pos = close_end;
            }
        }
        while let Some((open_at, open_end)) = find_tag(self.b, pos, &NAMES, false) {
            match find_tag(self.b, open_end, &NAMES, true) {
                Some((_, close_end)) => {
                    sections.push(open_at..close_end);
                    pos = close_end;
                }
                None => {
                    sections.push(open_at..self.b.len());
                    break;
                }
            }
        }
        sections
    }

    /// Walks the whole text, skipping `<think>` sections. Diagnostics are pushed in text order, so
    /// that placing them at the end needs no real sort.
    fn walk(&mut self) {
        let mut from = 0;
        for section in self.think_sections() {
            self.scan(from..section.start, Mode::Prose, 0);
            self.report.think_sections += 1;
            self.diag(
                DiagnosticKind::ThinkIgnored,
                Severity::Note,
                section.clone(),
                "ignored a <think> section: drafts written while thinking are not instructions",
            );
            from = section.end;
        }
        self.scan(from..self.text.len(), Mode::Prose, 0);
    }

    /// Walks `range` for blocks. Nesting (tags and fences inside tags) is bounded by [`MAX_NESTING`].
    fn scan(&mut self, range: Range<usize>, mode: Mode, depth: usize) {
        let end = range.end;
        let mut pos = range.start;
        let mut gap_start = pos;
        let mut after_value = false;
        while pos < end {
            let Some(offset) = self.b[pos..end]
                .iter()
                .position(|&c| matches!(c, b'<' | b'`' | b'~' | b'{' | b'[' | b'_'))
            else {
                break;
            };
            let at = pos + offset;
            let mark = self.diagnostics.len();
            let next = match self.b[at] {
                b'<' if depth < MAX_NESTING => self.tag(at, end, depth),
                b'`' | b'~' if depth < MAX_NESTING => self.fence(at, end, depth),
                b'{' | b'[' => self.json(at, end, mode),
                b'_' if self.read_mvu => self.mvu(at, end),
                _ => None,
            };
            match next {
                Some(block_end) => {
                    // The gap comes before the block: its diagnostics go before the block's.
                    let block_diagnostics = self.diagnostics.len() - mark;
                    self.gap(gap_start..at, mode, depth, after_value);
                    self.diagnostics[mark..].rotate_left(block_diagnostics);
                    after_value = true;
                    pos = block_end.max(at + 1);
                    gap_start = pos;
                    if depth == 0 {
                        self.last_block_end = Some(pos);
                    }
                }
                None => pos = self.resume.take().unwrap_or(at + 1).max(at + 1),
            }
        }
        self.gap(gap_start..end, mode, depth, after_value);
    }

    /// Text between blocks: prose at the top level is counted; in code, text after a value is garbage.
    fn gap(&mut self, span: Range<usize>, mode: Mode, depth: usize, after_value: bool) {
        let slice = &self.text[span.clone()];
        let trimmed = slice.trim();
        if trimmed.is_empty() {
            return;
        }
        if mode != Mode::Prose {
            if after_value && trimmed.chars().any(|c| !matches!(c, ',' | ';')) {
                let start = span.start + (slice.len() - slice.trim_start().len());
                self.report.trailing_garbage += 1;
                self.diag(
                    DiagnosticKind::TrailingGarbage,
                    Severity::Note,
                    start..start + trimmed.len(),
                    "ignored text after a complete value",
                );
            }
            return;
        }
        if depth == 0 {
            if self.last_block_end.is_some() {
                self.report.prose_after_bytes += trimmed.len();
            } else {
                self.report.prose_before_bytes += trimmed.len();
            }
        }
    }

    /// An opening tag at `at`: its content is scanned and its end returned.
    fn tag(&mut self, at: usize, end: usize, depth: usize) -> Option<usize> {
        let name_start = at + 1;
        let name_len = self.b[name_start..end]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        let name = &self.b[name_start..name_start + name_len];
        let tag = TAGS
            .iter()
            .find(|tag| tag.as_bytes().eq_ignore_ascii_case(name))?;
        // The tag ends at `>`; attributes may come first. A `<tool_call` with no `>` on its line is prose.
        let after_name = name_start + name_len;
        let window_end = end.min(after_name + MAX_TAG_LENGTH);
        let gt = self.b[after_name..window_end]
            .iter()
            .position(|&c| c == b'>')?
            + after_name;
        if !matches!(self.b[after_name], b'>' | b' ' | b'\t' | b'/') {
            return None;
        }
        let content_start = gt + 1;
        self.report.tags += 1;
        let (content_end, block_end) = match find_tag(&self.b[..end], content_start, &[tag], true) {
            Some((close_at, close_end)) => (close_at, close_end),
            None => {
                self.diag(
                    DiagnosticKind::UnclosedTag,
                    Severity::Note,
                    at..content_start,
                    format!(
                        "<{}> is never closed; read it to the end of the text",
                        &self.text[name_start..after_name]
                    ),
                );
                (end, end)
            }
        };
        let mode = match *tag {
            "jsonpatch" | "json_patch" => Mode::Patch,
            "tool_call" => Mode::Code,
            // MVU's <UpdateVariable> holds an <Analysis> written in prose next to the commands.
            _ => Mode::Prose,
        };
        self.scan(content_start..content_end, mode, depth + 1);
        Some(block_end)
    }

    /// A fence opening at `at` (three or more backticks or tildes): its content is scanned.
    fn fence(&mut self, at: usize, end: usize, depth: usize) -> Option<usize> {
        let marker = self.b[at];
        let run = self.b[at..end].iter().take_while(|&&c| c == marker).count();
        if run < 3 {
            return None;
        }
        let label_start = at + run;
        let label_len = self.b[label_start..end]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'.'))
            .count();
        let label = &self.text[label_start..label_start + label_len];
        let mut content_start = label_start + label_len;
        // The rest of the opening line, when blank, belongs to the fence.
        let rest = self.b[content_start..end]
            .iter()
            .take_while(|c| matches!(c, b' ' | b'\t' | b'\r'))
            .count();
        if content_start + rest < end && self.b[content_start + rest] == b'\n' {
            content_start += rest + 1;
        }
        let fence = &self.b[at..at + run];
        self.report.fences += 1;
        let (content_end, block_end) = match find(&self.b[content_start..end], fence) {
            Some(i) => {
                let close = content_start + i;
                let close_run = self.b[close..end]
                    .iter()
                    .take_while(|&&c| c == marker)
                    .count();
                (close, close + close_run)
            }
            None => {
                self.diag(
                    DiagnosticKind::UnclosedFence,
                    Severity::Note,
                    at..content_start,
                    "a fence is never closed; read it to the end of the text",
                );
                (end, end)
            }
        };
        const PROSE_LABELS: [&str; 6] = ["text", "txt", "markdown", "md", "xml", "html"];
        let mode = if PROSE_LABELS.iter().any(|l| l.eq_ignore_ascii_case(label)) {
            Mode::Prose
        } else {
            Mode::Code
        };
        self.scan(content_start..content_end, mode, depth + 1);
        Some(block_end)
    }

    /// An MVU command at `at` (`_.set(`…): the run of command lines is translated by the MVU module.
    fn mvu(&mut self, at: usize, end: usize) -> Option<usize> {
        if !self.is_mvu_command(at, end) {
            return None;
        }
        let region_end = self.mvu_region_end(at, end);
        let region = &self.text[at..region_end];
        let translation = mvu::from_text(region, &self.options.mvu);
        self.report.mvu_blocks += 1;
        self.report.blocks += 1;
        if !translation.instructions.is_empty() {
            self.mvu_used = true;
        }
        for diagnostic in translation.diagnostics {
            if diagnostic.severity == Severity::Error {
                self.valid = false;
            }
            let mut diagnostic = diagnostic;
            diagnostic.span = diagnostic.span.start + at..diagnostic.span.end + at;
            self.diagnostics.push(diagnostic);
        }
        self.report.instructions += translation.instructions.len();
        let offset = self.instructions.len();
        self.units.extend(
            translation
                .units
                .into_iter()
                .map(|unit| unit.shifted(offset, at)),
        );
        self.instructions.extend(translation.instructions);
        self.spans.extend(
            translation
                .spans
                .into_iter()
                .map(|span| span.start + at..span.end + at),
        );
        Some(region_end)
    }

    fn is_mvu_command(&self, at: usize, end: usize) -> bool {
        if at > 0
            && (self.b[at - 1].is_ascii_alphanumeric()
                || self.b[at - 1] == b'_'
                || self.b[at - 1] == b'.')
        {
            return false;
        }
        if at + 2 >= end || self.b[at + 1] != b'.' {
            return false;
        }
        let name_start = at + 2;
        let name_len = self.b[name_start.min(end)..end]
            .iter()
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        let name = &self.text[name_start.min(end)..name_start.min(end) + name_len];
        if !MVU_COMMANDS.contains(&name) {
            return false;
        }
        let after = name_start + name_len;
        let spaces = self.b[after..end]
            .iter()
            .take_while(|c| matches!(c, b' ' | b'\t'))
            .count();
        self.b.get(after + spaces) == Some(&b'(') && after + spaces < end
    }

    /// Where a run of MVU command lines starting at `at` ends: after the last line that starts with a
    /// command, continues an unbalanced command, or is a `//` comment between commands.
    fn mvu_region_end(&self, at: usize, end: usize) -> usize {
        let mut depth: i64 = 0;
        let mut quote: Option<u8> = None;
        let mut p = at;
        loop {
            // One line.
            let line_end = self.b[p..end]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(end, |i| p + i);
            let mut i = p;
            while i < line_end {
                let c = self.b[i];
                match quote {
                    Some(q) => {
                        if c == b'\\' {
                            i += 1;
                        } else if c == q {
                            quote = None;
                        }
                    }
                    None => match c {
                        b'\'' | b'"' | b'`' => quote = Some(c),
                        b'(' | b'[' | b'{' => depth += 1,
                        b')' | b']' | b'}' => depth -= 1,
                        b'/' if self.b.get(i + 1) == Some(&b'/') => break,
                        _ => {}
                    },
                }
                i += 1;
            }
            if depth <= 0 {
                quote = None;
                depth = 0;
            }
            // Blank lines between commands belong to the run only if a command or a comment follows:
            // MVU reads a `//` comment on a later line as the previous command's reason.
            let mut next = line_end + 1;
            let next_line = loop {
                if next >= end {
                    return line_end;
                }
                let next_end = self.b[next..end]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(end, |i| next + i);
                let line = self.text[next..next_end].trim_start();
                if line.trim_end().is_empty() && depth == 0 && quote.is_none() {
                    next = next_end + 1;
                    continue;
                }
                break line;
            };
            let continues = depth > 0 || quote.is_some();
            if !(continues || next_line.starts_with("_.") || next_line.starts_with("//")) {
                return line_end;
            }
            p = next;
        }
    }

    /// A bracket at `at`: in prose only when it looks like JSON; the value is read and handled.
    fn json(&mut self, at: usize, end: usize, mode: Mode) -> Option<usize> {
        if mode == Mode::Prose && !self.looks_like_json(at, end) {
            return None;
        }
        let slice = &self.text[..end];
        // One pass of the tolerant parser: on valid JSON it runs near serde_json's speed, and on
        // broken JSON it avoids building and dropping a partial value first.
        let parsed = parse_value_in(slice, at, &mut self.spare);
        let block_end = parsed.span.end;
        self.block(parsed, mode);
        Some(self.trailing_garbage(block_end, end, mode))
    }

    /// Whether a bracket in prose starts JSON: `{"`, `{'`, `{}`, `{key:`, `[{`, `[[`, `["`, `[]`, `[1`.
    fn looks_like_json(&mut self, at: usize, end: usize) -> bool {
        let open = self.b[at];
        let mut p = at + 1;
        while p < end && matches!(self.b[p], b' ' | b'\t' | b'\r' | b'\n') {
            p += 1;
        }
        let Some(&next) = self.b[..end].get(p) else {
            return false;
        };
        if next == b'{' && open == b'{' {
            // `{{`: only the last opener of a run can start JSON.
            let run = self.b[p..end].iter().take_while(|&&c| c == b'{').count();
            self.resume = Some(p + run - 1);
            return false;
        }
        if open == b'[' {
            return matches!(next, b'{' | b'[' | b'"' | b']')
                || next.is_ascii_digit()
                || (next == b'-' && self.b.get(p + 1).is_some_and(u8::is_ascii_digit));
        }
        if matches!(next, b'"' | b'\'' | b'}') || self.text[p..end].starts_with('“') {
            return true;
        }
        // An unquoted key followed by a colon: `{op: "assign"}`. `{name}` is prose and is reported.
        let word = self.b[p..end]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        if word == 0 {
            return false;
        }
        let mut q = p + word;
        while q < end && matches!(self.b[q], b' ' | b'\t') {
            q += 1;
        }
        match self.b[..end].get(q) {
            Some(b':') => true,
            Some(b'}') => {
                self.report.skipped_values += 1;
                self.diag(
                    DiagnosticKind::NotAnInstruction,
                    Severity::Note,
                    at..q + 1,
                    format!(
                        "skipped {}: it has no \"op\", so it is not an instruction",
                        &self.text[at..q + 1]
                    ),
                );
                false
            }
            _ => false,
        }
    }

    /// After a value, closers and quotes left on the same line (`}]}"}`) are trailing garbage.
    fn trailing_garbage(&mut self, from: usize, end: usize, mode: Mode) -> usize {
        if mode != Mode::Prose {
            return from;
        }
        let run = self.b[from..end]
            .iter()
            .take_while(|c| {
                matches!(
                    c,
                    b'}' | b']' | b')' | b'"' | b'\'' | b' ' | b'\t' | b';' | b','
                )
            })
            .count();
        let garbage = &self.text[from..from + run];
        if garbage.contains(['}', ']', '"', '\'', ')']) {
            let trimmed = garbage.trim_end();
            self.report.trailing_garbage += 1;
            self.diag(
                DiagnosticKind::TrailingGarbage,
                Severity::Note,
                from..from + trimmed.len(),
                "ignored closers and quotes after a complete value",
            );
            from + trimmed.len()
        } else {
            from
        }
    }

    /// Handles one parsed value: its instructions are decoded, anything else is skipped and reported.
    fn block(&mut self, mut parsed: Parsed<'a>, mode: Mode) {
        let first = self.diagnostics.len();
        self.block_unsorted(&mut parsed, mode);
        self.spare.recycle(parsed);
        // A block reports its repairs, then its instructions' problems: put them in text order.
        self.diagnostics[first..].sort_by_key(|d| d.span.start);
    }

    fn block_unsorted(&mut self, parsed: &mut Parsed<'a>, mode: Mode) {
        let Some(value) = parsed.value else {
            if let Some(too_deep) = parsed
                .repairs
                .iter()
                .find(|r| r.kind == RepairKind::TooDeep)
            {
                self.diag(
                    DiagnosticKind::Repair(RepairKind::TooDeep),
                    Severity::Error,
                    too_deep.span.clone(),
                    format!(
                        "skipped a value nested deeper than {} levels",
                        crate::repair::MAX_PARSE_NESTING
                    ),
                );
            }
            return;
        };
        if self.collect_values {
            self.values.push(parsed.document.to_json(value));
            return;
        }
        // The candidates go into a vector kept from block to block.
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        let wrapper = self.candidates(value, parsed, &mut candidates);
        let root = parsed.document.node(value);
        let empty =
            |node: NodeRef<'_, 'a>| node.kind() == NodeKind::Array && node.items().next().is_none();
        // An update pass's answer `{"instructions": []}` says the same as `[]`.
        let empty_pass = root.kind() == NodeKind::Object
            && root.members().count() == 1
            && root.get("instructions").is_some_and(empty);
        if parsed.complete && (empty(root) || empty_pass) {
            // `[]` is the batch the rules ask for when nothing changed: a block, not a skipped value.
            self.report.blocks += 1;
            self.report.empty_batches += 1;
            self.candidates = candidates;
            return;
        }
        if candidates.is_empty() {
            self.report.skipped_values += 1;
            self.diag(
                DiagnosticKind::NotAnInstruction,
                Severity::Note,
                parsed.span.clone(),
                "skipped a JSON value with no \"op\": it is not an instruction",
            );
            self.candidates = candidates;
            return;
        }
        self.report.blocks += 1;
        if let Some(member) = wrapper {
            self.diag(
                DiagnosticKind::WrapperUnwrapped,
                Severity::Note,
                parsed.span.clone(),
                format!("read the instructions inside the wrapper member \"{member}\""),
            );
        }
        for repair in &parsed.repairs {
            self.repair_counts[repair.kind as usize] += 1;
        }
        for (index, repair) in parsed.repairs.iter().enumerate() {
            if index == MAX_REPAIR_DIAGNOSTICS {
                let elided = parsed.repairs.len() - MAX_REPAIR_DIAGNOSTICS;
                self.diag(
                    DiagnosticKind::RepairsElided,
                    Severity::Warning,
                    repair.span.clone(),
                    format!("{elided} more repairs in this block are counted in the report but not listed"),
                );
            }
            if index >= MAX_REPAIR_DIAGNOSTICS {
                continue;
            }
            let severity = match repair.kind {
                RepairKind::UnescapedQuote
                | RepairKind::MissingCloser
                | RepairKind::StrayCloser
                | RepairKind::Garbage
                | RepairKind::MissingValue
                | RepairKind::UnclosedString
                | RepairKind::UnclosedContainer
                | RepairKind::TooDeep => Severity::Warning,
                _ => Severity::Note,
            };
            self.diag(
                DiagnosticKind::Repair(repair.kind),
                severity,
                repair.span.clone(),
                repair.kind.describe(),
            );
        }
        // The values skipped for their depth, which the parser meets (and lists) in text order. Each
        // candidate finds the first inside it by a binary search: walking every repair of the block
        // for every candidate was quadratic on thousands of instructions that each carry a repair.
        let too_deep: Vec<&Range<usize>> = parsed
            .repairs
            .iter()
            .filter(|r| r.kind == RepairKind::TooDeep)
            .map(|r| &r.span)
            .collect();
        debug_assert!(too_deep.is_sorted_by_key(|span| span.start));
        // The first decoded instruction's form (JSON Patch or not), and the first that differs.
        let mut first_form = None;
        let mut odd = None;
        for candidate in candidates.drain(..) {
            let first_inside = too_deep.partition_point(|span| span.start < candidate.span.start);
            let inside = too_deep
                .get(first_inside)
                .filter(|span| span.start < candidate.span.end);
            if let Some(&too_deep) = inside {
                self.refuse_too_deep(&parsed.document, &candidate, too_deep.clone());
                continue;
            }
            if let Some((patch, span)) = self.instruction(&mut parsed.document, candidate, mode) {
                match first_form {
                    None => first_form = Some(patch),
                    Some(first) if first != patch && odd.is_none() => odd = Some(span),
                    Some(_) => {}
                }
            }
        }
        self.candidates = candidates;
        if let Some(odd) = odd {
            self.valid = false;
            self.report.invalid_instructions += 1;
            self.diag(
                DiagnosticKind::MixedBatch,
                Severity::Error,
                odd,
                "this block mixes JSON Patch ops (add, remove, replace, move, copy, test, delta) with instruction ops; send them as separate blocks",
            );
        }
    }

    /// Puts into `out` the values in `value` that claim to be instructions; returns the wrapper
    /// member they came from, if any.
    fn candidates(
        &mut self,
        value: NodeId,
        parsed: &mut Parsed<'a>,
        out: &mut Vec<Candidate>,
    ) -> Option<String> {
        let span = parsed.span.clone();
        let node = parsed.document.node(value);
        match node.kind() {
            NodeKind::Object if node.get("op").is_some() => {
                out.push(Candidate {
                    node: value,
                    span,
                    complete: parsed.complete,
                });
                None
            }
            NodeKind::Array => {
                for (index, item) in node.items().enumerate() {
                    let (item_span, complete) = parsed
                        .children
                        .get(index)
                        .map_or((span.clone(), parsed.complete), |child| {
                            (child.span.clone(), child.complete)
                        });
                    if has_op(item) {
                        out.push(Candidate {
                            node: item.id(),
                            span: item_span,
                            complete,
                        });
                    } else {
                        self.report.skipped_values += 1;
                        self.diag(
                            DiagnosticKind::NotAnInstruction,
                            Severity::Warning,
                            item_span,
                            format!("skipped element {index}: it has no \"op\", so it is not an instruction"),
                        );
                    }
                }
                None
            }
            NodeKind::Object => {
                // A tool call (`{"name", "arguments"}`, OpenAI's `{"function": {...}}`) or a wrapper
                // object (`{"updates": [...]}`): its instructions are one level down. Arguments sent
                // as a JSON string are read into the document first. Most objects without "op" wrap
                // nothing: that is seen before their members are copied.
                if !node
                    .members()
                    .any(|(key, member)| may_wrap_instructions(key, member))
                {
                    return None;
                }
                let members: Vec<(String, NodeId)> = node
                    .members()
                    .map(|(key, member)| (key.to_owned(), member.id()))
                    .collect();
                let document = &mut parsed.document;
                let mut repairs = Vec::new();
                let inner = members.into_iter().find_map(|(key, member)| {
                    repairs.clear();
                    wrapped_instructions(document, &key, member, &mut repairs)
                        .map(|id| (key, member, id))
                });
                let (key, string, member) = inner?;
                if !repairs.is_empty() {
                    // The repairs' spans are in the unescaped string, not the reply: the string
                    // itself is reported, and each repair is counted.
                    for repair in &repairs {
                        self.repair_counts[repair.kind as usize] += 1;
                    }
                    self.diag(
                        DiagnosticKind::ArgumentsRepaired,
                        Severity::Note,
                        document.node(string).span(),
                        format!(
                            "the JSON inside this string needed {} repairs ({})",
                            repairs.len(),
                            repair_kinds(&repairs)
                        ),
                    );
                }
                let member = document.node(member);
                let items: Vec<NodeRef<'_, 'a>> = match member.kind() {
                    NodeKind::Array => member.items().collect(),
                    NodeKind::Object if member.get("op").is_some() => vec![member],
                    NodeKind::Object => member
                        .members()
                        .map(|(_, v)| v)
                        .find(|v| v.kind() == NodeKind::Array && v.items().any(has_op))
                        .map(|v| v.items().collect())
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                out.extend(
                    items
                        .into_iter()
                        .filter(|&item| has_op(item))
                        .map(|item| Candidate {
                            node: item.id(),
                            span: item.span(),
                            complete: parsed.complete,
                        }),
                );
                Some(key)
            }
            _ => None,
        }
    }

    /// Refuses an instruction holding a value nested deeper than the parser builds, as the engine
    /// refuses any value deeper than its limit: the reply is invalid. The text around it was complete,
    /// so this is not an instruction cut by the end of the text, and it is never dropped while the
    /// rest of the reply commits.
    fn refuse_too_deep(
        &mut self,
        document: &Document<'a>,
        candidate: &Candidate,
        deep: Range<usize>,
    ) {
        self.valid = false;
        self.report.invalid_instructions += 1;
        let field = document
            .node(candidate.node)
            .members()
            .find(|(_, member)| member.span().contains(&deep.start))
            .map(|(name, _)| name);
        let reason = format!(
            "the value nests more than {} levels deep; the limit is {}",
            crate::repair::MAX_PARSE_NESTING,
            self.options.limits.max_value_depth
        );
        let message = match field {
            Some(field) => format!("/{}: {reason}", escape_pointer_token(field)),
            None => reason,
        };
        self.invalid_instruction(deep, message);
    }

    /// Decodes one candidate; returns whether it is a JSON Patch op and its span when it decoded.
    fn instruction(
        &mut self,
        document: &mut Document<'a>,
        candidate: Candidate,
        mode: Mode,
    ) -> Option<(bool, Range<usize>)> {
        let Candidate {
            node,
            span,
            complete,
        } = candidate;
        if !complete {
            self.report.dropped_truncated += 1;
            self.diag(
                DiagnosticKind::TruncatedInstruction,
                Severity::Warning,
                span,
                "the text ended inside this instruction, so it was dropped rather than completed with a guessed value",
            );
            return None;
        }
        let instruction = document.node(node);
        let op = match instruction.get("op").map(JsonTree::kind) {
            Some(NodeKind::String(op)) => op,
            _ => "",
        };
        let patch = mode == Mode::Patch || PATCH_OPS.contains(&op);
        let path_node = instruction.get("path").filter(|_| !patch);
        if let Some((NodeKind::String(text), path_span)) =
            path_node.map(|path| (path.kind(), path.span()))
        {
            // A string path (docs/instructions.md) is read into its list form in the document.
            let path = match parse_path(text) {
                Ok((path, spelling)) => {
                    self.report.normalised_paths += 1;
                    // The message is built in one buffer: there is one per string path.
                    let mut message =
                        format!("read the {} path \"{text}\" as ", spelling.describe())
                            .into_bytes();
                    let listed = serde_json::to_writer(&mut message, &path);
                    let message = String::from_utf8(message).unwrap_or_default();
                    debug_assert!(listed.is_ok() && !message.is_empty());
                    self.diag(
                        DiagnosticKind::PathNormalised,
                        Severity::Note,
                        path_span.clone(),
                        message,
                    );
                    path
                }
                Err(error) => {
                    self.valid = false;
                    self.report.invalid_instructions += 1;
                    self.diag(
                        DiagnosticKind::InvalidPath,
                        Severity::Error,
                        path_span,
                        error.to_string(),
                    );
                    return None;
                }
            };
            let list = document.push_path(&path, path_span);
            document.set_member(node, "path", list);
        }
        // Each problem is placed at its field; an instruction may have thousands (unknown members).
        let mut fields = PointerTargets::new(document.node(node));
        match Instruction::from_json_lenient(document.node(node), &self.options.limits) {
            Ok((instruction, warnings)) => {
                for warning in warnings {
                    let field_span = field_span(&mut fields, &warning);
                    let kind = if warning.kind == ErrorKind::UnknownMember {
                        DiagnosticKind::UnknownMember
                    } else {
                        DiagnosticKind::PointerRepaired
                    };
                    self.report.unknown_members +=
                        usize::from(kind == DiagnosticKind::UnknownMember);
                    self.diag(kind, Severity::Warning, field_span, warning.message);
                }
                self.report.instructions += 1;
                self.instructions.push(instruction);
                self.spans.push(span.clone());
                Some((patch, span))
            }
            Err(errors) => {
                self.valid = false;
                self.report.invalid_instructions += 1;
                for error in errors {
                    let field_span = field_span(&mut fields, &error);
                    // Past the first invalid instructions of the reply, the summary at the end
                    // counts this one rather than listing it: its message would be thrown away.
                    let listed = self.invalid_count < MAX_DIAGNOSTICS_PER_KIND
                        || field_span.start <= self.invalid_last_start;
                    let message: Cow<'static, str> = match &error.field {
                        _ if !listed => Cow::Borrowed(""),
                        Some(field) if !field.is_empty() => {
                            [field, ": ", &error.message].concat().into()
                        }
                        _ => error.message.into(),
                    };
                    self.invalid_instruction(field_span, message);
                }
                None
            }
        }
    }

    fn finish(mut self) -> Extraction {
        for (kind, count) in RepairKind::ALL.iter().zip(self.repair_counts) {
            if count > 0 {
                self.report.repairs.insert(*kind, count);
            }
        }
        if self.instructions.is_empty() && self.report.blocks == 0 {
            self.diag(
                DiagnosticKind::NoInstructions,
                Severity::Warning,
                0..0,
                "found no instructions in the text",
            );
        }
        let bare = self.report.fences == 0 && self.report.tags == 0 && self.report.mvu_blocks == 0;
        let exact = bare
            && self.valid
            && self.report.blocks == 1
            && self.report.prose_before_bytes == 0
            && self.report.prose_after_bytes == 0
            && self.diagnostics.is_empty();
        self.report.score = self.report.cleanliness(exact, self.valid);
        crate::diagnostic::place(self.text, &mut self.diagnostics);
        let profile = self.options.mvu.profile;
        let policies = if profile.is_mvu() {
            profile.policies()
        } else if self.mvu_used {
            Policies::mvu()
        } else {
            Policies::default()
        };
        let (units, mvu) = if profile.one_by_one() {
            let units = cover(std::mem::take(&mut self.units), self.instructions.len());
            let options = MvuOptions {
                state: None,
                ..self.options.mvu.clone()
            };
            (units, Some(options))
        } else {
            (Vec::new(), None)
        };
        Extraction {
            batch: Batch::from(self.instructions),
            spans: self.spans,
            diagnostics: self.diagnostics,
            report: self.report,
            valid: self.valid,
            policies,
            profile,
            units,
            mvu,
        }
    }
}

/// The units of a batch of `len` instructions: the MVU commands where they are, and every other
/// instruction (a JSON block's, a patch operation's) a unit of its own.
fn cover(commands: Vec<MvuUnit>, len: usize) -> Vec<MvuUnit> {
    let mut units = Vec::with_capacity(len.max(commands.len()));
    let mut next = 0;
    let single = |i: usize| MvuUnit {
        instructions: i..i + 1,
        command: None,
    };
    for unit in commands {
        units.extend((next..unit.instructions.start).map(single));
        next = unit.instructions.end;
        units.push(unit);
    }
    units.extend((next..len).map(single));
    units
}

/// The members in which a tool call sends its arguments, as a JSON string or as they are.
const ARGUMENT_KEYS: [&str; 4] = ["arguments", "parameters", "input", "args"];

/// The node in which wrapper member `key` holds instructions, if it does. Arguments sent as a JSON
/// string (`"arguments": "[{\"op\": …}]"`) are read into the document first.
/// Repairs made reading such a string go into `repairs`.
fn wrapped_instructions(
    document: &mut Document<'_>,
    key: &str,
    member: NodeId,
    repairs: &mut Vec<Repair>,
) -> Option<NodeId> {
    let node = document.node(member);
    let span = node.span();
    let json = match (key, node.kind()) {
        (key, NodeKind::String(text)) if ARGUMENT_KEYS.contains(&key) => {
            match serde_json::from_str::<Json>(text) {
                Ok(json) => json,
                Err(_) => {
                    let repaired = crate::repair::repair_json(text)?;
                    repairs.extend(repaired.repairs);
                    repaired.value
                }
            }
        }
        // OpenAI's `{"function": {"name", "arguments"}}`.
        ("function", NodeKind::Object) => {
            let arguments = node.get("arguments")?;
            match arguments.kind() {
                NodeKind::String(text) => serde_json::from_str::<Json>(text).ok()?,
                _ => return holds_instructions(arguments).then(|| arguments.id()),
            }
        }
        _ => return holds_instructions(node).then_some(member),
    };
    let read = document.push_json(&json, span);
    holds_instructions(document.node(read)).then_some(read)
}

/// Whether [`wrapped_instructions`] can find instructions in member `key`: a tool call's arguments
/// sent as a string, OpenAI's `function` object, or a member that holds instructions itself.
fn may_wrap_instructions<'a>(key: &str, member: impl JsonTree<'a>) -> bool {
    match (key, member.kind()) {
        (key, NodeKind::String(_)) if ARGUMENT_KEYS.contains(&key) => true,
        ("function", NodeKind::Object) => true,
        _ => holds_instructions(member),
    }
}

/// The distinct repair codes in `repairs`, in order of first appearance: `single_quotes, comment`.
fn repair_kinds(repairs: &[Repair]) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for repair in repairs {
        if !kinds.contains(&repair.kind.code()) {
            kinds.push(repair.kind.code());
        }
    }
    kinds.join(", ")
}

fn has_op<'a>(node: impl JsonTree<'a>) -> bool {
    node.kind() == NodeKind::Object && node.get("op").is_some()
}

/// Whether `node` holds instructions: an array with one, an instruction, or an object with such an array.
fn holds_instructions<'a>(node: impl JsonTree<'a>) -> bool {
    match node.kind() {
        NodeKind::Array => node.items().any(has_op),
        NodeKind::Object => {
            node.get("op").is_some()
                || node.members().any(|(_, member)| {
                    member.kind() == NodeKind::Array && member.items().any(has_op)
                })
        }
        _ => false,
    }
}

/// Finds the first tag named one of `names` (lower-case) at or after `from`: an opening tag `<name…>`
/// or, with `closing`, `</name>`. Returns the tag's start and the byte after its `>`.
fn find_tag(b: &[u8], from: usize, names: &[&str], closing: bool) -> Option<(usize, usize)> {
    let mut pos = from;
    while pos < b.len() {
        let at = pos + memchr::memchr(b'<', &b[pos..])?;
        let mut p = at + 1;
        if closing {
            if b.get(p) != Some(&b'/') {
                pos = at + 1;
                continue;
            }
            p += 1;
        }
        let name_len = b[p..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        let name = &b[p..p + name_len];
        if names
            .iter()
            .any(|n| n.as_bytes().eq_ignore_ascii_case(name))
        {
            let after = p + name_len;
            match b.get(after) {
                Some(b'>') => return Some((at, after + 1)),
                Some(b' ' | b'\t' | b'\n' | b'/') => {
                    // Attributes: the tag ends at the next `>` within a bounded distance, so that a
                    // line of unclosed tags stays linear.
                    let window = &b[after..b.len().min(after + MAX_TAG_LENGTH)];
                    if let Some(gt) = window.iter().position(|&c| c == b'>') {
                        return Some((at, after + gt + 1));
                    }
                }
                _ => {}
            }
        }
        pos = at + 1;
    }
    None
}

/// The bytes a decoding error or warning about an instruction points at: its field, or the whole.
fn field_span(instruction: &mut PointerTargets<'_, '_>, error: &BatchError) -> Range<usize> {
    instruction
        .target(error.field.as_deref().unwrap_or(""))
        .span()
}
