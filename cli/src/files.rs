//! Reading inputs and writing state files: the command's only file IO outside saves.
//!
//! Every failure here is a usage or IO error (exit 2) whose message names the file and the cause. Writing
//! a state back (`apply --in-place`) is the saves crate's `replace_file`: atomic, through symbolic links,
//! keeping the file's mode.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use statecraft_engine::{StateSchema, Value};

/// Reads INPUT: a file, or stdin when absent or `-`.
pub(crate) fn read_input(input: Option<&Path>) -> Result<String> {
    match input {
        Some(path) if path != Path::new("-") => read_text(path, "input"),
        _ => {
            let mut bytes = Vec::new();
            io::stdin()
                .read_to_end(&mut bytes)
                .context("cannot read the input from stdin")?;
            utf8(bytes).context("cannot read the input from stdin")
        }
    }
}

/// Reads INPUT as bytes (a PNG card): a file, or stdin when absent or `-`.
pub(crate) fn read_bytes(input: Option<&Path>) -> Result<Vec<u8>> {
    match input {
        Some(path) if path != Path::new("-") => {
            fs::read(path).with_context(|| format!("cannot read the input file {}", path.display()))
        }
        _ => {
            let mut bytes = Vec::new();
            io::stdin()
                .read_to_end(&mut bytes)
                .context("cannot read the input from stdin")?;
            Ok(bytes)
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
    fs::read(path)
        .map_err(anyhow::Error::from)
        .and_then(utf8)
        .with_context(|| format!("cannot read the {what} file {}", path.display()))
}

/// The bytes as text, or an error naming the first byte that is not UTF-8 and where it is.
fn utf8(bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|error| {
        let at = error.utf8_error().valid_up_to();
        let bytes = error.as_bytes();
        let line_start = bytes[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |newline| newline + 1);
        let line = bytes[..line_start].iter().filter(|&&b| b == b'\n').count() + 1;
        anyhow!(
            "it is not UTF-8 text: byte {at} (line {line}, byte {} of the line) is 0x{:02x}",
            at - line_start + 1,
            bytes[at]
        )
    })
}

/// Reads and parses a JSON file. A byte-order mark at the start, which some editors on Windows write,
/// is not JSON but says nothing either: it is skipped.
pub(crate) fn read_json(path: &Path, what: &str) -> Result<serde_json::Value> {
    let text = read_text(path, what)?;
    serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text))
        .with_context(|| format!("the {what} file {} is not valid json", path.display()))
}

/// Takes the exclusive lock of a state file (its real path, beside it as `STATE.json.lock`, removed
/// when released), waiting up to ten seconds for another command to finish with it.
pub(crate) fn lock_state(path: &Path) -> Result<statecraft_saves::Lock> {
    let real = statecraft_saves::resolve_links(path)
        .with_context(|| format!("cannot resolve the state file {}", path.display()))?;
    statecraft_saves::lock_exclusive(&real, std::time::Duration::from_secs(10))
        .with_context(|| format!("cannot lock the state file {}", path.display()))
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
