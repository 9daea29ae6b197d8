//! The state the model sees, in real SillyTavern (`cli/tests/sillytavern/view.test.js`): the
//! extension's budgeted view in the prompt the model receives, `{{state::PATH}}` and MVU's
//! `{{get_message_variable::stat_data...}}` expanding to the step a reply builds on (a swipe's
//! included), world-info entries switched on and off by conditions on the state, and the drawer's
//! token counts; then SillyTavern's own tokenizers against the engine's estimator
//! (`tokenizers.test.js`). SillyTavern is installed from npm under `target/` as for
//! `sillytavern_browser`. Its own `main` (`harness = false`), so that a missing tool shows in
//! `cargo test`'s summary as "1 skipped"; under CI a missing tool is a failure.

mod browser;
mod sillytavern;

use std::process::ExitCode;

use sillytavern::Suite;

fn main() -> ExitCode {
    sillytavern::run(&[
        Suite {
            test: "the_estimator_against_sillytaverns_tokenizers",
            script: "tokenizers.test.js",
            artifacts: "sillytavern-tokenizers",
            what: "the estimator against SillyTavern's tokenizers",
        },
        Suite {
            test: "the_state_the_model_sees_in_sillytavern",
            script: "view.test.js",
            artifacts: "sillytavern-view-screenshots",
            what: "the SillyTavern view tests",
        },
    ])
}
