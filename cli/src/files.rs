//! Reading inputs and writing state files: the command's only file IO outside saves.
//!
//! Every failure here is a usage or IO error (exit 2) whose message names the file and the cause. Writing
//! a state back (`apply --in-place`) is atomic: the new text goes to a temporary file in the same folder,
//! is flushed to disk, and replaces the old file by a rename, so a crash leaves either the old state or
//! the new one, never a torn file.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use statecraft_engine::{StateSchema, Value};

/// Reads INPUT: a file, or stdin when absent or `-`.
pub(crate) fn read_input(input: Option<&Path>) -> Result<String> {
    match input {
        Some(path) if path != Path::new("-") => read_text(path, "input"),
        _ => {
            let mut text = String::new();
            io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the input from stdin")?;
            Ok(text)
        }
    }
}

/// How diagnostics name INPUT: its path, or `<stdin>`.
pub(crate) fn origin(input: Option<&Path>) -> String {
    match input {
        Some(path) if path != Path::new("-") => path.display().to_string(),
        _ => "<stdin>".to_owned(),
    }
}

/// Reads a UTF-8 text file; `what` names its role in the message.
pub(crate) fn read_text(path: &Path, what: &str) -> Result<String> {
    fs::read_to_string(path)
        .with_context(|| format!("cannot read the {what} file {}", path.display()))
}

/// Reads and parses a JSON file.
pub(crate) fn read_json(path: &Path, what: &str) -> Result<serde_json::Value> {
    let text = read_text(path, what)?;
    serde_json::from_str(&text)
        .with_context(|| format!("the {what} file {} is not valid json", path.display()))
}

/// Reads a state file.
pub(crate) fn read_state(path: &Path) -> Result<Value> {
    Ok(Value::from_json(&read_json(path, "state")?))
}

/// Reads and compiles a JSON Schema file.
pub(crate) fn read_schema(path: &Path) -> Result<StateSchema> {
    let json = read_json(path, "schema")?;
    StateSchema::new(json).with_context(|| {
        format!(
            "the schema file {} is not a usable json schema",
            path.display()
        )
    })
}

/// Replaces `path` with `bytes` atomically: temporary file in the same folder, fsync, rename, then an
/// fsync of the folder so the rename itself survives a crash.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(name) = path.file_name() else {
        bail!("cannot write {}: it names no file", path.display())
    };
    let temp = folder.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| -> io::Result<()> {
        let mut file = fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    if let Err(error) = written {
        // The temporary file is ours and useless now; failing to remove it changes nothing for the caller.
        let _ = fs::remove_file(&temp);
        return Err(error)
            .with_context(|| format!("cannot write the state file {}", path.display()));
    }
    // Folders cannot be opened for syncing on every platform; where they can, this makes the rename durable.
    if let Ok(dir) = fs::File::open(&folder) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The state as pretty JSON text with a final newline.
pub(crate) fn state_text(state: &Value) -> Result<String> {
    let mut text = serde_json::to_string_pretty(state).context("cannot write the state as json")?;
    text.push('\n');
    Ok(text)
}
