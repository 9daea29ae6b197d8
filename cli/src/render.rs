//! How results reach people and programs: diagnostics with source lines and carets, batch errors,
//! change logs and host events, in human or JSON form.
//!
//! Text diagnostics are rendered by `annotate-snippets` (the renderer rustc uses), never by hand-made
//! caret arithmetic, so wide characters and long lines come out right. Colour is used only when the
//! stream is a terminal and `NO_COLOR` is unset. This module formats; it decides nothing about exit codes.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};

use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};
use serde_json::json;
use statecraft_engine::{Batch, BatchError, Change, HostEvent, Path, Segment, Value};
use statecraft_translators::{Diagnostic, Severity};

use crate::args::Format;

/// Where and how to print: the chosen format and whether each stream takes colour.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Output {
    /// Human or JSON diagnostics.
    pub(crate) format: Format,
    /// Whether stdout is a colour terminal.
    pub(crate) colour_out: bool,
    /// Whether stderr is a colour terminal.
    pub(crate) colour_err: bool,
}

impl Output {
    /// The output for this process: colour only on terminals, and never under `NO_COLOR`.
    pub(crate) fn detect(format: Format) -> Output {
        let allowed = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Output {
            format,
            colour_out: allowed && std::io::stdout().is_terminal(),
            colour_err: allowed && std::io::stderr().is_terminal(),
        }
    }

    /// Whether diagnostics are JSON.
    pub(crate) fn json(&self) -> bool {
        self.format == Format::Json
    }

    /// The renderer for stderr.
    fn renderer(&self, colour: bool) -> Renderer {
        let renderer = if colour {
            Renderer::styled()
        } else {
            Renderer::plain()
        };
        // An excerpt is already cut to its size, with `…` where the line goes on: the renderer must
        // not cut it again at its own terminal width and mark that with `...`. Any width well past
        // the excerpt's bytes and the gutter does (the renderer doubles it, so not `usize::MAX`).
        renderer.term_width(8 * MAX_EXCERPT_BYTES)
    }

    /// Renders text diagnostics against `source`, each with an excerpt of its line and a caret under
    /// the span. Consecutive diagnostics that say the same thing on one line (eight single-quoted
    /// strings) are drawn as one report with several carets, so a badly quoted reply stays readable.
    ///
    /// Each report shows at most [`MAX_EXCERPT_BYTES`] of the source, found by looking at most that far
    /// from the span, so the output is linear in the diagnostics however long the line or the text.
    pub(crate) fn diagnostics(
        &self,
        source: &str,
        origin: &str,
        diagnostics: &[Diagnostic],
        colour: bool,
    ) -> String {
        let renderer = self.renderer(colour);
        let mut out = String::new();
        let mut rest = diagnostics;
        while let Some(first) = rest.first() {
            let excerpt = Excerpt::around(source, first.span.clone());
            let together = rest
                .iter()
                .take_while(|d| {
                    d.kind == first.kind
                        && d.severity == first.severity
                        && d.message == first.message
                        && excerpt.holds(source, &d.span)
                })
                .count()
                .max(1);
            let (group, after) = rest.split_at(together);
            rest = after;
            let excerpt = group
                .iter()
                .fold(excerpt, |excerpt, d| excerpt.reaching(source, &d.span));
            let level = match first.severity {
                Severity::Note => Level::NOTE,
                Severity::Warning => Level::WARNING,
                Severity::Error => Level::ERROR,
            };
            let times = if group.len() > 1 {
                format!(" ({} times)", group.len())
            } else {
                String::new()
            };
            let title = format!("{}{times} [{}]", first.message, first.kind);
            let text = excerpt.text(source);
            let snippet = group.iter().fold(
                Snippet::source(text.as_str()).line_start(first.line),
                |snippet, diagnostic| {
                    snippet.annotation(
                        AnnotationKind::Primary.span(excerpt.span_in(source, &diagnostic.span)),
                    )
                },
            );
            let report = &[level.primary_title(title.as_str()).element(snippet)];
            let rendered = renderer.render(report);
            // The snippet shows an excerpt, so its place is written here, from the whole text: the
            // renderer would count columns from the excerpt's start.
            let (head, body) = rendered.split_once('\n').unwrap_or((rendered.as_str(), ""));
            let gutter = " ".repeat(first.line.to_string().len());
            let arrow = self.paint(colour, Paint::Blue, "-->");
            let _ = writeln!(
                out,
                "{head}\n{gutter}{arrow} {origin}:{}:{}\n{body}",
                first.line, first.column
            );
        }
        out
    }

    /// Wraps `text` in an ANSI style when `colour` is on.
    pub(crate) fn paint(&self, colour: bool, style: Paint, text: &str) -> String {
        if !colour {
            return text.to_owned();
        }
        let code = match style {
            Paint::Bold => "1",
            Paint::Red => "1;31",
            Paint::Green => "32",
            Paint::Yellow => "33",
            Paint::Cyan => "36",
            Paint::Blue => "1;34",
            Paint::Dim => "2",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }
}

/// A few text styles for play's report.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Paint {
    /// Headings.
    Bold,
    /// Failures and rejections.
    Red,
    /// Commits and passed expectations.
    Green,
    /// Warnings.
    Yellow,
    /// Host events.
    Cyan,
    /// The place of a diagnostic, as the renderer draws line numbers.
    Blue,
    /// Secondary detail.
    Dim,
}

/// The most source text one report shows, in bytes (plus `…` where a line was cut).
const MAX_EXCERPT_BYTES: usize = 160;

/// How much of a line one report shows before and after its spans, in bytes.
const CONTEXT_BYTES: usize = 40;

/// The piece of one line of the source that a report shows: `start..end`, and whether the line goes on
/// before or after it. Every search is bounded by [`MAX_EXCERPT_BYTES`].
#[derive(Clone, Copy, Debug)]
struct Excerpt {
    start: usize,
    end: usize,
}

impl Excerpt {
    /// The excerpt for a span: from the line's start (or [`CONTEXT_BYTES`] before the span when the
    /// line starts further back) to the span's end on that line, plus some context.
    fn around(source: &str, span: std::ops::Range<usize>) -> Excerpt {
        let at = floor(source, span.start.min(source.len()));
        // The line's start when it is near, else some context before the span.
        let reach = floor(source, at.saturating_sub(2 * CONTEXT_BYTES));
        let start = source.as_bytes()[reach..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or_else(
                || floor(source, at.saturating_sub(CONTEXT_BYTES)).max(reach),
                |nl| reach + nl + 1,
            );
        Excerpt { start, end: at }.reaching(source, &span)
    }

    /// Whether a span starting here can be shown in this excerpt: on the same line, within the size.
    fn holds(&self, source: &str, span: &std::ops::Range<usize>) -> bool {
        span.start >= self.start
            && span.start <= self.start + MAX_EXCERPT_BYTES - CONTEXT_BYTES
            && span.start <= source.len()
            && !source.as_bytes()[self.start..span.start].contains(&b'\n')
    }

    /// The excerpt grown to show `span` (cut at its line's end and at the size) and the context after it.
    fn reaching(self, source: &str, span: &std::ops::Range<usize>) -> Excerpt {
        let limit = ceil(source, (self.start + MAX_EXCERPT_BYTES).min(source.len()));
        let from = self.end.max(floor(source, span.start.min(limit)));
        let want = ceil(source, (span.end.max(from) + CONTEXT_BYTES).min(limit));
        let want = want.max(from);
        let end = source.as_bytes()[from..want]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(want, |nl| from + nl);
        Excerpt {
            start: self.start,
            end: end.max(self.end),
        }
    }

    /// The text shown, with `…` where the line goes on.
    fn text(&self, source: &str) -> String {
        let before = if self.cut_before(source) { "…" } else { "" };
        let after = if self.end < source.len() && source.as_bytes()[self.end] != b'\n' {
            "…"
        } else {
            ""
        };
        format!("{before}{}{after}", &source[self.start..self.end])
    }

    fn cut_before(&self, source: &str) -> bool {
        self.start > 0 && source.as_bytes()[self.start - 1] != b'\n'
    }

    /// A span of the source as a span of [`Excerpt::text`], clamped to what is shown.
    fn span_in(&self, source: &str, span: &std::ops::Range<usize>) -> std::ops::Range<usize> {
        let shift = if self.cut_before(source) {
            "…".len()
        } else {
            0
        };
        let start = floor(source, span.start.clamp(self.start, self.end));
        let end = ceil(source, span.end.clamp(start, self.end));
        start - self.start + shift..end - self.start + shift
    }
}

/// The character boundary at or before `at`.
fn floor(source: &str, mut at: usize) -> usize {
    while !source.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The character boundary at or after `at`.
fn ceil(source: &str, mut at: usize) -> usize {
    while !source.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Diagnostics as one JSON value, in the translators' one JSON form.
pub(crate) use statecraft_translators::diagnostics_json;

/// Batch errors as JSON.
pub(crate) fn errors_json(errors: &[BatchError]) -> serde_json::Value {
    serde_json::to_value(errors)
        .unwrap_or_else(|_| json!(errors.iter().map(ToString::to_string).collect::<Vec<_>>()))
}

/// One batch error per line, `  - instruction 0, at /player/hp: <message> [kind]`.
pub(crate) fn errors_text(errors: &[BatchError]) -> String {
    let mut out = String::new();
    for error in errors {
        let _ = writeln!(out, "  - {error} [{}]", error.kind);
    }
    out
}

/// A path as people read it: `player.hp`, `inventory[0].name`, `a["x.y"]`; the root is `(root)`.
pub(crate) fn path_text(path: &Path) -> String {
    if path.is_empty() {
        return "(root)".to_owned();
    }
    let mut out = String::new();
    for segment in path.segments() {
        match segment {
            Segment::Index(index) => {
                let _ = write!(out, "[{index}]");
            }
            Segment::Key(key) => {
                let plain = !key.is_empty() && !key.contains(['.', '[', ']', '"', '\'', ' ']);
                if plain {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(key);
                } else {
                    let _ = write!(out, "[{}]", serde_json::Value::String(key.to_string()));
                }
            }
        }
    }
    out
}

/// A value in a change line; absent is `(none)`.
fn value_text(value: Option<&Value>) -> String {
    value.map_or_else(|| "(none)".to_owned(), ToString::to_string)
}

/// One change as `path: old -> new (reason)`.
pub(crate) fn change_text(change: &Change) -> String {
    let mut line = format!(
        "{}: {} -> {}",
        path_text(&change.path),
        value_text(change.old.as_ref()),
        value_text(change.new.as_ref())
    );
    if let Some(reason) = &change.reason {
        let _ = write!(line, " ({reason})");
    }
    line
}

/// One host event as `name payload`.
pub(crate) fn event_text(event: &HostEvent) -> String {
    format!("{} {}", event.name, event.payload)
}

/// Writes to stdout. A closed pipe is an IO error for the caller (exit 2), never a panic.
pub(crate) fn write_stdout(text: &str) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("cannot write to stdout")
}

/// Writes a batch to stdout as indented canonical JSON and a newline.
pub(crate) fn write_batch(batch: &Batch) -> anyhow::Result<()> {
    let mut json = batch.to_json_pretty();
    json.push('\n');
    write_stdout(&json)
}

/// Writes to stderr, ignoring failure: there is nowhere left to report it.
pub(crate) fn write_stderr(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
}

/// Prints a usage or IO error on stderr, as text or as `{"error": ...}`.
pub(crate) fn print_error(output: &Output, error: &anyhow::Error) {
    if output.json() {
        errln!("{}", json!({"error": format!("{error:#}")}));
    } else {
        errln!(
            "{}: {error:#}",
            output.paint(output.colour_err, Paint::Red, "error")
        );
    }
}
