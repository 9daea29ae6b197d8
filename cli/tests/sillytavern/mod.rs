//! What the SillyTavern browser tests (`sillytavern_browser.rs`, `sillytavern_pass.rs`,
//! `sillytavern_view.rs`) need before their node test files run: npm and git (SillyTavern is
//! installed from npm, and its installer clones the extension with git), the browser tools, and
//! SillyTavern itself, installed from npm under `target/` on the first run (about a minute) and
//! checked afterwards (`install.js`).

use std::path::Path;
use std::process::Command;

use crate::browser;

/// Why SillyTavern's browser tests cannot run here, if they cannot; otherwise SillyTavern is
/// installed in `folder`'s `target/` when this returns.
pub(crate) fn not_ready(folder: &Path, chromium: &str) -> Option<String> {
    let npm = Command::new("npm").arg("--version").output();
    if !npm.is_ok_and(|output| output.status.success()) {
        return Some("npm is not installed (it installs SillyTavern)".to_owned());
    }
    let git = Command::new("git").arg("--version").output();
    if !git.is_ok_and(|output| output.status.success()) {
        return Some("git is not installed (SillyTavern's installer clones with it)".to_owned());
    }
    if let Some(missing) =
        browser::missing_browser_tool(folder, chromium, "playwright-core and SillyTavern need")
    {
        return Some(missing);
    }
    let install = Command::new("node")
        .arg("install.js")
        .current_dir(folder)
        .output()
        .expect("node runs");
    if !install.status.success() {
        return Some(format!(
            "SillyTavern could not be installed from npm ({}): {}",
            install.status,
            String::from_utf8_lossy(&install.stderr).trim()
        ));
    }
    None
}
