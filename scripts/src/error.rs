//! Errors of loading a scripts folder, and the words of every Lua failure. Failures while a handler
//! runs are not errors of this crate: they become the engine's `HandlerError::Failed` (with the
//! message made here) and reject the batch.
//!
//! A message names the script line it comes from (`file.lua:line: ...`), never carries Rust-side
//! noise (tracebacks, wrapper layers, a thrown table's address) and is cut to
//! `Limits::max_error_text`. This module must not run Lua: it reads the stack only to place a
//! message.

use std::path::PathBuf;

use mlua::Lua;
use statecraft_engine::Limits;

use crate::limiter::where_running;

/// Why a scripts folder could not be loaded. Nothing is registered when loading fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The folder could not be listed.
    #[error("cannot list the scripts folder {}: {source}", path.display())]
    Folder {
        /// The folder.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A script file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A script file is not UTF-8 text (precompiled bytecode, for instance, is never loaded).
    #[error("{file} is not utf-8 text; scripts are loaded as source text only")]
    NotText {
        /// The file name.
        file: String,
    },
    /// A script failed to compile or to run its top level (including a limit it exceeded while
    /// loading, or an invalid `on`/`watch` registration).
    #[error("{file}{}: {message}", line.map(|line| format!(":{line}")).unwrap_or_default())]
    Script {
        /// The file name.
        file: String,
        /// The line the error points at, when the interpreter gave one.
        line: Option<usize>,
        /// What went wrong.
        message: String,
    },
    /// The Lua VM itself could not be created or prepared.
    #[error("cannot set up the lua vm: {0}")]
    Vm(String),
}

/// A Lua error carrying the script location of the caller.
pub(crate) fn raised(lua: &Lua, message: &str) -> mlua::Error {
    mlua::Error::runtime(located(lua, message))
}

/// `file.lua:line: message` when a script frame is on the stack.
pub(crate) fn located(lua: &Lua, message: &str) -> String {
    match caller(lua) {
        Some(place) => format!("{place}: {message}"),
        None => message.to_owned(),
    }
}

/// The innermost script frame on the stack, as `file.lua:line`.
fn caller(lua: &Lua) -> Option<String> {
    (0..4).find_map(|level| where_running(lua, level))
}

/// The cause of a Lua error, in words, without Rust-side noise (tracebacks, wrapper layers).
pub(crate) fn describe_error(error: &mlua::Error, limits: &Limits) -> String {
    match error {
        mlua::Error::CallbackError { cause, .. } => describe_error(cause, limits),
        mlua::Error::WithContext { cause, .. } => describe_error(cause, limits),
        mlua::Error::MemoryError(_) => format!(
            "the memory limit of {} bytes was exceeded",
            limits.max_callback_memory
        ),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(message) => {
            // mlua appends a traceback to some messages. Keep only the innermost script line from it,
            // for messages that carry no location of their own (errors raised by library functions).
            let (head, traceback) = message
                .split_once("\nstack traceback:")
                .unwrap_or((message, ""));
            let text = match thrown_value(head) {
                Some(kind) => {
                    format!("the script raised a {kind} as its error instead of a message")
                }
                None => head.to_owned(),
            };
            match traceback_place(traceback) {
                Some(place) if !head.starts_with(&place) => format!("{text} (at {place})"),
                _ => text,
            }
        }
        other => other.to_string(),
    }
}

/// The type of a non-string error value, which mlua renders as `table: 0x…` (or `<table 0x…>`): its
/// address is noise and its `__tostring` is not the script's to run on the host's behalf.
fn thrown_value(message: &str) -> Option<&str> {
    let trimmed = message.trim_start_matches('<');
    [
        "table", "userdata", "function", "thread", "buffer", "vector",
    ]
    .into_iter()
    .find(|kind| {
        trimmed
            .strip_prefix(kind)
            .is_some_and(|rest| rest.starts_with(": 0x") || rest.starts_with(" 0x"))
    })
}

/// The innermost script frame of a Luau traceback (`attack.lua:2: in function <attack.lua:1>`), as
/// `attack.lua:2`.
fn traceback_place(traceback: &str) -> Option<String> {
    traceback
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("[C]"))
        .find_map(|line| {
            let (file, rest) = line.split_once(':')?;
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            (!digits.is_empty()).then(|| format!("{file}:{digits}"))
        })
}

/// A script's failure to load, with the line lifted out of the interpreter's message.
pub(crate) fn script_error(file: &str, message: String) -> LoadError {
    // Interpreter messages start with `file:line:`; lift the line out so callers can point at it.
    let rest = message
        .strip_prefix(file)
        .and_then(|rest| rest.strip_prefix(':'));
    if let Some(rest) = rest {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let (Ok(line), Some(text)) = (
            digits.parse::<usize>(),
            rest[digits.len()..].strip_prefix(':'),
        ) {
            return LoadError::Script {
                file: file.to_owned(),
                line: Some(line),
                message: text.trim_start().to_owned(),
            };
        }
    }
    LoadError::Script {
        file: file.to_owned(),
        line: None,
        message,
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut.
pub(crate) fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    const MARK: &str = "…";
    let mut end = max.saturating_sub(MARK.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    if max >= MARK.len() {
        text.push_str(MARK);
    }
    text
}
