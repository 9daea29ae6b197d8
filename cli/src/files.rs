//! Reading inputs and writing state files: the command's only file IO outside saves.
//!
//! Every failure here is a usage or IO error (exit 2) whose message names the file and the cause. Writing
//! a state back (`apply --in-place`) is the saves crate's `replace_file`: atomic, through symbolic links,
//! keeping the file's mode.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use anyhow::{Context, Result};
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

/// Reads and parses a JSON file. A byte-order mark at the start, which some editors on Windows write,
/// is not JSON but says nothing either: it is skipped.
pub(crate) fn read_json(path: &Path, what: &str) -> Result<serde_json::Value> {
    let text = read_text(path, what)?;
    serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text))
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

/// The state as pretty JSON text with a final newline.
pub(crate) fn state_text(state: &Value) -> Result<String> {
    let mut text = serde_json::to_string_pretty(state).context("cannot write the state as json")?;
    text.push('\n');
    Ok(text)
}
