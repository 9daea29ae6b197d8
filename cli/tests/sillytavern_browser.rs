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
mod sillytavern;

use std::process::ExitCode;

use sillytavern::Suite;

fn main() -> ExitCode {
    sillytavern::run(&[Suite {
        test: "the_extension_keeps_every_chat_action_right_in_sillytavern",
        script: "sillytavern.test.js",
        artifacts: "sillytavern-screenshots",
        what: "the SillyTavern browser tests",
    }])
}
