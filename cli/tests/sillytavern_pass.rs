//! State updates by a separate pass (`clients/sillytavern/pass.js`) in real SillyTavern: the version
//! pinned in `cli/tests/sillytavern/st/package-lock.json`, installed from npm under `target/` (kept
//! between runs), driven in Debian's chromium by playwright-core (`cli/tests/sillytavern/pass.test.js`),
//! against a real `statecraft serve` (through SillyTavern's server plugin) and a fake OpenAI-compatible
//! model that answers pass requests by their kind: structured output, a function tool, or the schema
//! in the prompt. Its own `main` (`harness = false`), so that a missing tool shows in `cargo test`'s
//! summary as "1 skipped"; under CI a missing tool is a failure.

mod browser;

use std::path::Path;
use std::process::{Command, ExitCode};

const TEST: &str = "the_update_pass_keeps_every_chat_action_right_in_sillytavern";

fn main() -> ExitCode {
    println!("\nrunning 1 test");
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sillytavern");
    let chromium = browser::chromium();
    if let Some(missing) = missing_tool(&folder, &chromium) {
        return browser::skip_or_fail(TEST, &missing);
    }
    let install = Command::new("node")
        .arg("install.js")
        .current_dir(&folder)
        .output()
        .expect("node runs");
    if !install.status.success() {
        let why = format!(
            "SillyTavern could not be installed from npm ({}): {}",
            install.status,
            String::from_utf8_lossy(&install.stderr).trim()
        );
        return browser::skip_or_fail(TEST, &why);
    }
    browser::run_node_test(
        TEST,
        &folder,
        "pass.test.js",
        "sillytavern-pass-screenshots",
        &chromium,
        "the SillyTavern update pass tests",
    )
}

/// Why the browser test cannot run here, if it cannot: the browser tests' tools, npm and git.
fn missing_tool(folder: &Path, chromium: &str) -> Option<String> {
    let npm = Command::new("npm").arg("--version").output();
    if !npm.is_ok_and(|output| output.status.success()) {
        return Some("npm is not installed (it installs SillyTavern)".to_owned());
    }
    let git = Command::new("git").arg("--version").output();
    if !git.is_ok_and(|output| output.status.success()) {
        return Some("git is not installed (SillyTavern's installer clones with it)".to_owned());
    }
    browser::missing_browser_tool(folder, chromium, "playwright-core and SillyTavern need")
}
