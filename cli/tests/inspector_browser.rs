//! The inspector page in a real browser: Debian's chromium driven by playwright-core
//! (`cli/tests/inspector/`), against a real `statecraft serve` that the node test starts. This test has
//! its own `main` (`harness = false`) so that a missing tool shows in `cargo test`'s summary as
//! "1 skipped", as the corpus tests do; under CI (which installs node, chromium and the npm packages)
//! a missing tool is a failure.

mod browser;

use std::path::Path;
use std::process::ExitCode;

const TEST: &str = "the_inspector_passes_its_browser_tests";

fn main() -> ExitCode {
    println!("\nrunning 1 test");
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/inspector");
    let chromium = browser::chromium();
    if let Some(missing) =
        browser::missing_browser_tool(&folder, &chromium, "playwright-core needs")
    {
        return browser::skip_or_fail(TEST, &missing);
    }
    browser::run_node_test(
        TEST,
        &folder,
        "inspector.test.js",
        "inspector-screenshots",
        &chromium,
        "the inspector's browser tests",
    )
}
