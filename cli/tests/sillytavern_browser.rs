//! The SillyTavern extension (`clients/sillytavern/`) in real SillyTavern: the version pinned in
//! `cli/tests/sillytavern/st/package-lock.json`, installed from npm under `target/` (kept between runs),
//! driven in Debian's chromium by playwright-core (`cli/tests/sillytavern/`), against a real
//! `statecraft serve` and a fake OpenAI-compatible model. The extension is installed through
//! SillyTavern's own "Install extension" from a git URL serving this working tree, and at the end
//! turned off, on, updated and deleted in "Manage extensions"; each run has a SillyTavern data root
//! of its own (`target/sillytavern-VERSION/runs/PID`), so no run sees what another did. Its own `main`
//! (`harness = false`), so that a missing tool shows in `cargo test`'s summary as "1 skipped"; under
//! CI (which installs node, npm, chromium and the npm packages) a missing tool is a failure.

use std::path::Path;
use std::process::{Command, ExitCode};

const TEST: &str = "the_extension_keeps_every_chat_action_right_in_sillytavern";

fn main() -> ExitCode {
    println!("\nrunning 1 test");
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sillytavern");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let ci = std::env::var_os("CI").is_some();
    if let Some(missing) = missing_tool(&folder, &chromium) {
        return skip_or_fail(ci, &missing);
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
        return skip_or_fail(ci, &why);
    }
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sillytavern-screenshots");
    let run = Command::new("node")
        .args(["--test", "sillytavern.test.js"])
        .current_dir(&folder)
        .env("STATECRAFT_BIN", env!("CARGO_BIN_EXE_statecraft"))
        .env("STATECRAFT_ARTIFACTS", &artifacts)
        .env("CHROMIUM", &chromium)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    if !run.status.success() || !stdout.contains("# fail 0") {
        println!("test {TEST} ... FAILED");
        println!("the SillyTavern browser tests failed:\n{stdout}\n{stderr}");
        println!("\ntest result: FAILED. 0 passed; 1 failed\n");
        return ExitCode::FAILURE;
    }
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("# ") && !line.starts_with("# Subtest"))
        .collect();
    println!("test {TEST} ... ok");
    println!(
        "{}\n{}screenshots in {}",
        summary.join("\n"),
        stderr,
        artifacts.display()
    );
    println!("\ntest result: ok. 1 passed; 0 failed\n");
    ExitCode::SUCCESS
}

fn skip_or_fail(ci: bool, why: &str) -> ExitCode {
    if ci {
        println!("test {TEST} ... FAILED: {why} (under CI this is a failure)");
        println!("\ntest result: FAILED. 0 passed; 1 failed\n");
        return ExitCode::FAILURE;
    }
    println!("test {TEST} ... skipped: {why} (under CI this is a failure)");
    println!("\ntest result: ok. 0 passed; 0 failed; 1 skipped\n");
    ExitCode::SUCCESS
}

/// Why the browser test cannot run here, if it cannot.
fn missing_tool(folder: &Path, chromium: &str) -> Option<String> {
    let node = Command::new("node").arg("--version").output();
    let Some(node) = node.ok().filter(|output| output.status.success()) else {
        return Some("node is not installed".to_owned());
    };
    // playwright-core and SillyTavern 1.19 need Node.js 20 or later.
    let version = String::from_utf8_lossy(&node.stdout).trim().to_owned();
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|major| major.parse().ok())
        .unwrap_or(0);
    if major < 20 {
        return Some(format!(
            "node {version} is older than 20, which playwright-core and SillyTavern need"
        ));
    }
    let npm = Command::new("npm").arg("--version").output();
    if !npm.is_ok_and(|output| output.status.success()) {
        return Some("npm is not installed (it installs SillyTavern)".to_owned());
    }
    let git = Command::new("git").arg("--version").output();
    if !git.is_ok_and(|output| output.status.success()) {
        return Some("git is not installed (SillyTavern's installer clones with it)".to_owned());
    }
    if !Path::new(chromium).exists() {
        return Some(format!(
            "no chromium at {chromium} (apt-get install chromium)"
        ));
    }
    if !folder.join("node_modules/playwright-core").exists() {
        return Some(
            "playwright-core is not installed (npm ci in cli/tests/sillytavern)".to_owned(),
        );
    }
    None
}
