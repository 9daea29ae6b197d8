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

use std::path::Path;
use std::process::ExitCode;

const TEST: &str = "the_state_the_model_sees_in_sillytavern";
const TOKENIZERS: &str = "the_estimator_against_sillytaverns_tokenizers";

fn main() -> ExitCode {
    println!("\nrunning 2 tests");
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sillytavern");
    let chromium = browser::chromium();
    if let Some(why) = sillytavern::not_ready(&folder, &chromium) {
        return browser::skip_or_fail(TEST, &why);
    }
    let tokenizers = browser::run_node_test(
        TOKENIZERS,
        &folder,
        "tokenizers.test.js",
        "sillytavern-tokenizers",
        &chromium,
        "the estimator against SillyTavern's tokenizers",
    );
    let view = browser::run_node_test(
        TEST,
        &folder,
        "view.test.js",
        "sillytavern-view-screenshots",
        &chromium,
        "the SillyTavern view tests",
    );
    if tokenizers == ExitCode::SUCCESS && view == ExitCode::SUCCESS {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
