//! State updates by a separate pass (`clients/sillytavern/pass.js`) in real SillyTavern: the version
//! pinned in `cli/tests/sillytavern/st/package-lock.json`, installed from npm under `target/` (kept
//! between runs), driven in Debian's chromium by playwright-core (`cli/tests/sillytavern/pass.test.js`),
//! against a real `statecraft serve` (through SillyTavern's server plugin) and a fake OpenAI-compatible
//! model that answers pass requests by their kind: structured output, a function tool, or the schema
//! in the prompt. Its own `main` (`harness = false`), so that a missing tool shows in `cargo test`'s
//! summary as "1 skipped"; under CI a missing tool is a failure.

mod browser;
mod sillytavern;

use std::process::ExitCode;

use sillytavern::Suite;

fn main() -> ExitCode {
    sillytavern::run(&[Suite {
        test: "the_update_pass_keeps_every_chat_action_right_in_sillytavern",
        script: "pass.test.js",
        artifacts: "sillytavern-pass-screenshots",
        what: "the SillyTavern update pass tests",
    }])
}
