//! What the browser tests share (`inspector_browser.rs` and the SillyTavern suites): each is one test
//! with its own `main` (`harness = false`), so that a missing tool shows in `cargo test`'s summary as
//! "1 skipped"; under CI (which installs node, npm, chromium and the npm packages) it is a failure.
//! The test itself is a node test file driving Debian's chromium with playwright-core.

use std::path::Path;
use std::process::{Command, ExitCode};

/// The chromium to drive: `$CHROMIUM`, or Debian's.
pub(crate) fn chromium() -> String {
    std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned())
}

/// Reports test `test` as skipped because of `why`, or as failed under CI.
pub(crate) fn skip_or_fail(test: &str, why: &str) -> ExitCode {
    if std::env::var_os("CI").is_some() {
        println!("test {test} ... FAILED: {why} (under CI this is a failure)");
        println!("\ntest result: FAILED. 0 passed; 1 failed\n");
        return ExitCode::FAILURE;
    }
    println!("test {test} ... skipped: {why} (under CI this is a failure)");
    println!("\ntest result: ok. 0 passed; 0 failed; 1 skipped\n");
    ExitCode::SUCCESS
}

/// Why a browser test cannot run here, if it cannot: Node.js 20 or later (which `who_needs_20`
/// says, as "playwright-core needs"), chromium, and playwright-core installed in `folder` (`npm ci`).
pub(crate) fn missing_browser_tool(
    folder: &Path,
    chromium: &str,
    who_needs_20: &str,
) -> Option<String> {
    let node = Command::new("node").arg("--version").output();
    let Some(node) = node.ok().filter(|output| output.status.success()) else {
        return Some("node is not installed".to_owned());
    };
    let version = String::from_utf8_lossy(&node.stdout).trim().to_owned();
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|major| major.parse().ok())
        .unwrap_or(0);
    if major < 20 {
        return Some(format!(
            "node {version} is older than 20, which {who_needs_20}"
        ));
    }
    if !Path::new(chromium).exists() {
        return Some(format!(
            "no chromium at {chromium} (apt-get install chromium)"
        ));
    }
    if !folder.join("node_modules/playwright-core").exists() {
        return Some(format!(
            "playwright-core is not installed (npm ci in cli/tests/{})",
            folder
                .file_name()
                .and_then(|name| name.to_str())
                .unwrap_or("")
        ));
    }
    None
}

/// Runs `node --test SCRIPT` in `folder` against the built `statecraft`, with screenshots in
/// `CARGO_TARGET_TMPDIR/ARTIFACTS`, and reports it as test `test` (`what` names it in a failure).
pub(crate) fn run_node_test(
    test: &str,
    folder: &Path,
    script: &str,
    artifacts: &str,
    chromium: &str,
    what: &str,
) -> ExitCode {
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join(artifacts);
    let run = Command::new("node")
        .args(["--test", script])
        .current_dir(folder)
        .env("STATECRAFT_BIN", env!("CARGO_BIN_EXE_statecraft"))
        .env("STATECRAFT_ARTIFACTS", &artifacts)
        .env("CHROMIUM", chromium)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    if !run.status.success() || !stdout.contains("# fail 0") {
        println!("test {test} ... FAILED");
        println!("{what} failed:\n{stdout}\n{stderr}");
        println!("\ntest result: FAILED. 0 passed; 1 failed\n");
        return ExitCode::FAILURE;
    }
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("# ") && !line.starts_with("# Subtest"))
        .collect();
    println!("test {test} ... ok");
    println!(
        "{}\n{}screenshots in {}",
        summary.join("\n"),
        stderr,
        artifacts.display()
    );
    println!("\ntest result: ok. 1 passed; 0 failed\n");
    ExitCode::SUCCESS
}
