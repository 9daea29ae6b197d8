//! What the SillyTavern browser tests (`sillytavern_browser.rs`, `sillytavern_pass.rs`,
//! `sillytavern_view.rs`) need before their node test files run: npm and git (SillyTavern is
//! installed from npm, and its installer clones the extension with git), the browser tools, and
//! SillyTavern itself, installed from npm under `target/` on the first run (about a minute) and
//! checked afterwards (`install.js`).

use std::path::Path;
use std::process::{Command, ExitCode};

use crate::browser;

/// Why SillyTavern's browser tests cannot run here, if they cannot; otherwise SillyTavern is
/// installed in `folder`'s `target/` when this returns.
pub(crate) fn not_ready(folder: &Path, chromium: &str) -> Option<String> {
    let npm = Command::new("npm").arg("--version").output();
    if !npm.is_ok_and(|output| output.status.success()) {
        return Some("npm is not installed (it installs SillyTavern)".to_owned());
    }
    let git = Command::new("git").arg("--version").output();
    if !git.is_ok_and(|output| output.status.success()) {
        return Some("git is not installed (SillyTavern's installer clones with it)".to_owned());
    }
    if let Some(missing) =
        browser::missing_browser_tool(folder, chromium, "playwright-core and SillyTavern need")
    {
        return Some(missing);
    }
    let install = Command::new("node")
        .arg("install.js")
        .current_dir(folder)
        .output()
        .expect("node runs");
    if !install.status.success() {
        return Some(format!(
            "SillyTavern could not be installed from npm ({}): {}",
            install.status,
            String::from_utf8_lossy(&install.stderr).trim()
        ));
    }
    None
}

/// One node test file of a SillyTavern runner.
pub(crate) struct Suite {
    /// The test's name in `cargo test`'s output.
    pub(crate) test: &'static str,
    /// The file in `cli/tests/sillytavern/` that `node --test` runs.
    pub(crate) script: &'static str,
    /// Its screenshots' folder under `CARGO_TARGET_TMPDIR`.
    pub(crate) artifacts: &'static str,
    /// What it checks, for a failure's message.
    pub(crate) what: &'static str,
}

/// A SillyTavern runner's `main`: checks the tools once (each suite reported skipped, or failed under
/// CI, when one is missing), then runs every suite; fails when any failed.
pub(crate) fn run(suites: &[Suite]) -> ExitCode {
    println!(
        "\nrunning {} test{}",
        suites.len(),
        if suites.len() == 1 { "" } else { "s" }
    );
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sillytavern");
    let chromium = browser::chromium();
    let outcomes: Vec<ExitCode> = match not_ready(&folder, &chromium) {
        Some(why) => suites
            .iter()
            .map(|suite| browser::skip_or_fail(suite.test, &why))
            .collect(),
        None => suites
            .iter()
            .map(|suite| {
                browser::run_node_test(
                    suite.test,
                    &folder,
                    suite.script,
                    suite.artifacts,
                    &chromium,
                    suite.what,
                )
            })
            .collect(),
    };
    if outcomes.iter().all(|outcome| *outcome == ExitCode::SUCCESS) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
