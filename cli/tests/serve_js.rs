//! The JavaScript client (`clients/js/`), the SillyTavern extension's logic (`clients/sillytavern/`)
//! and its server plugin (`clients/sillytavern/plugin/`), tested by Node's own test runner against the
//! `statecraft serve` built here. Without Node.js the test says so in `cargo test`'s output and skips;
//! under CI (which installs Node) that is a failure.

use std::io::Write;
use std::path::Path;
use std::process::Command;

#[test]
fn the_javascript_client_passes_its_tests_against_this_server() {
    let clients = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients");
    let version = Command::new("node").arg("--version").output();
    let Some(version) = version.ok().filter(|output| output.status.success()) else {
        let message = "node is not installed; skipping the JavaScript client's tests";
        assert!(
            std::env::var_os("CI").is_none(),
            "{message} (a failure under CI)"
        );
        // Written to the handle itself: the harness captures `eprintln!` in a passing test, so the
        // skip would go unseen.
        let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
        return;
    };
    eprintln!("node {}", String::from_utf8_lossy(&version.stdout).trim());
    let mut files: Vec<String> = ["js/test", "sillytavern/test", "sillytavern/plugin/test"]
        .iter()
        .flat_map(|folder| {
            std::fs::read_dir(clients.join(folder))
                .unwrap_or_else(|error| panic!("clients/{folder}: {error}"))
                .filter_map(move |entry| {
                    let name = entry.ok()?.file_name().into_string().ok()?;
                    name.ends_with(".test.js")
                        .then(|| format!("{folder}/{name}"))
                })
        })
        .collect();
    files.sort();
    assert!(files.len() >= 4, "the test files: {files:?}");
    let run = Command::new("node")
        .arg("--test")
        .args(&files)
        .current_dir(&clients)
        .env("STATECRAFT_BIN", env!("CARGO_BIN_EXE_statecraft"))
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "node --test failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("# fail 0"), "{stdout}");
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("# ") && !line.starts_with("# Subtest"))
        .collect();
    eprintln!("{}", summary.join("\n"));
}
