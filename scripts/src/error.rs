//! Errors of loading a scripts folder. Failures while a handler runs are not errors of this crate:
//! they become the engine's `HandlerError::Failed` and reject the batch.

use std::path::PathBuf;

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
