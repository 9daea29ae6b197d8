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
use statecraft_engine::{BatchError, Change, HostEvent, Path, Segment, Value};
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
        if colour {
            Renderer::styled()
        } else {
            Renderer::plain()
        }
    }

    /// Renders text diagnostics against `source`, each with its line and a caret under the span.
    /// Consecutive diagnostics that say the same thing (eight single-quoted strings on one line) are
    /// drawn as one report with several carets, so a badly quoted reply stays readable.
    pub(crate) fn diagnostics(
        &self,
        source: &str,
        origin: &str,
        diagnostics: &[Diagnostic],
        colour: bool,
    ) -> String {
        let renderer = self.renderer(colour);
        let mut out = String::new();
        let same = |a: &Diagnostic, b: &Diagnostic| {
            a.kind == b.kind && a.severity == b.severity && a.message == b.message
        };
        for group in diagnostics.chunk_by(|a, b| same(a, b)) {
            let first = &group[0];
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
            let snippet = group.iter().fold(
                Snippet::source(source).path(origin),
                |snippet, diagnostic| {
                    snippet.annotation(
                        AnnotationKind::Primary.span(clamp_span(source, diagnostic.span.clone())),
                    )
                },
            );
            let report = &[level.primary_title(title.as_str()).element(snippet)];
            let _ = writeln!(out, "{}", renderer.render(report));
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
    /// Secondary detail.
    Dim,
}

/// Moves a span onto character boundaries inside `source`, because diagnostics computed on a slice or a
/// cut-off text may point past its end, and the renderer needs valid boundaries.
fn clamp_span(source: &str, span: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let mut start = span.start.min(source.len());
    let mut end = span.end.clamp(start, source.len());
    while !source.is_char_boundary(start) {
        start -= 1;
    }
    while !source.is_char_boundary(end) {
        end += 1;
    }
    start..end
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
