//! The inspector page in a real browser: Debian's chromium driven by playwright-core
//! (`cli/tests/inspector/`), against a real `statecraft serve` that the node test starts. This test has
//! its own `main` (`harness = false`) so that a missing tool shows in `cargo test`'s summary as
//! "1 skipped", as the corpus tests do; under CI (which installs node, chromium and the npm packages)
//! a missing tool is a failure.

use std::path::Path;
use std::process::{Command, ExitCode};

const TEST: &str = "the_inspector_passes_its_browser_tests";

fn main() -> ExitCode {
    println!("\nrunning 1 test");
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/inspector");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    if let Some(missing) = missing_tool(&folder, &chromium) {
        if std::env::var_os("CI").is_some() {
            println!("test {TEST} ... FAILED: {missing} (under CI this is a failure)");
            println!("\ntest result: FAILED. 0 passed; 1 failed\n");
            return ExitCode::FAILURE;
        }
        println!("test {TEST} ... skipped: {missing} (under CI this is a failure)");
        println!("\ntest result: ok. 0 passed; 0 failed; 1 skipped\n");
        return ExitCode::SUCCESS;
    }
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("inspector-screenshots");
    let run = Command::new("node")
        .args(["--test", "inspector.test.js"])
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
        println!("the inspector's browser tests failed:\n{stdout}\n{stderr}");
        println!("\ntest result: FAILED. 0 passed; 1 failed\n");
        return ExitCode::FAILURE;
    }
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("# ") && !line.starts_with("# Subtest"))
        .collect();
    println!("test {TEST} ... ok");
    println!(
        "{}\nscreenshots in {}",
        summary.join("\n"),
        artifacts.display()
    );
    println!("\ntest result: ok. 1 passed; 0 failed\n");
    ExitCode::SUCCESS
}

/// Why the browser test cannot run here, if it cannot.
fn missing_tool(folder: &Path, chromium: &str) -> Option<String> {
    let node = Command::new("node").arg("--version").output();
    let Some(node) = node.ok().filter(|output| output.status.success()) else {
        return Some("node is not installed".to_owned());
    };
    // playwright-core needs Node.js 20 or later.
    let version = String::from_utf8_lossy(&node.stdout).trim().to_owned();
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|major| major.parse().ok())
        .unwrap_or(0);
    if major < 20 {
        return Some(format!(
            "node {version} is older than 20, which playwright-core needs"
        ));
    }
    if !Path::new(chromium).exists() {
        return Some(format!(
            "no chromium at {chromium} (apt-get install chromium)"
        ));
    }
    if !folder.join("node_modules/playwright-core").exists() {
        return Some("playwright-core is not installed (npm ci in cli/tests/inspector)".to_owned());
    }
    None
}
