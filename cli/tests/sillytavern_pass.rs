//! State updates by a separate pass (`clients/sillytavern/pass.js`) in real SillyTavern: the version
//! pinned in `cli/tests/sillytavern/st/package-lock.json`, installed from npm under `target/` (kept
//! between runs), driven in Debian's chromium by playwright-core (`cli/tests/sillytavern/pass.test.js`),
//! against a real `statecraft serve` (through SillyTavern's server plugin) and a fake OpenAI-compatible
//! model that answers pass requests by their kind: structured output, a function tool, or the schema
//! in the prompt. Its own `main` (`harness = false`), so that a missing tool shows in `cargo test`'s
//! summary as "1 skipped"; under CI a missing tool is a failure.

mod browser;
mod sillytavern;

use std::path::Path;
use std::process::ExitCode;

const TEST: &str = "the_update_pass_keeps_every_chat_action_right_in_sillytavern";

fn main() -> ExitCode {
    println!("\nrunning 1 test");
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sillytavern");
    let chromium = browser::chromium();
    if let Some(why) = sillytavern::not_ready(&folder, &chromium) {
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
