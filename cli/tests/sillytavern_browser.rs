//! The SillyTavern extension (`clients/sillytavern/`) in real SillyTavern: the version pinned in
//! `cli/tests/sillytavern/st/package-lock.json`, installed from npm under `target/` (kept between runs),
//! driven in Debian's chromium by playwright-core (`cli/tests/sillytavern/`), against a real
//! `statecraft serve` and a fake OpenAI-compatible model. The extension is installed through
//! SillyTavern's own "Install extension" from a git URL serving this working tree, and at the end
//! turned off, on, updated and deleted in "Manage extensions"; each run has a SillyTavern data root
//! of its own (`target/sillytavern-VERSION/runs/PID`), so no run sees what another did. Its own `main`
//! (`harness = false`), so that a missing tool shows in `cargo test`'s summary as "1 skipped"; under
//! CI (which installs node, npm, chromium and the npm packages) a missing tool is a failure.

mod browser;

use std::path::Path;
use std::process::{Command, ExitCode};

const TEST: &str = "the_extension_keeps_every_chat_action_right_in_sillytavern";

fn main() -> ExitCode {
    println!("\nrunning 1 test");
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sillytavern");
    let chromium = browser::chromium();
    if let Some(missing) = missing_tool(&folder, &chromium) {
        return browser::skip_or_fail(TEST, &missing);
    }
    // SillyTavern itself: installed from npm on the first run (about a minute), checked afterwards.
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
        "sillytavern.test.js",
        "sillytavern-screenshots",
        &chromium,
        "the SillyTavern browser tests",
    )
}

/// Why the browser test cannot run here, if it cannot: the browser tests' tools, and npm and git
/// (SillyTavern is installed from npm, and its installer clones the extension with git).
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
