//! The inspector page that `statecraft serve` serves at `/`: its files pass the guard's `Host` and
//! `Origin` checks but need no token (the page must load to ask for it), while the API still does;
//! and the page itself, in Debian's chromium driven by playwright-core (`cli/tests/inspector/`),
//! against a real server. Without node, chromium or the test's `node_modules` the browser test says so
//! and skips; under CI (which installs them) that is a failure.

mod http;

use std::path::Path;
use std::process::Command;

use http::{Server, sqlite};

const TOKEN: &str = "s3cret-token";

#[test]
fn the_page_loads_without_the_token_and_the_api_still_needs_it() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let server = Server::start(&["--db", &sqlite(dir.path()), "--token", TOKEN]);
    let page = server.call("GET", "/", None);
    assert_eq!(page.status, 200, "{page:?}");
    assert!(
        page.header("content-type")
            .unwrap_or("")
            .starts_with("text/html")
    );
    let html = page.body.as_str().expect("the page is text");
    assert!(html.contains("statecraft inspector"), "{html}");
    let policy = page.header("content-security-policy").unwrap_or("");
    assert!(policy.contains("connect-src 'self'"), "{policy}");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    for asset in ["/main.js", "/api.js", "/inspector.css"] {
        let file = server.call("GET", asset, None);
        assert_eq!(file.status, 200, "{asset}: {file:?}");
    }
    assert_eq!(server.call("GET", "/v1/games", None).status, 401);
    let bearer = format!("Bearer {TOKEN}");
    let listed = server.call_with("GET", "/v1/games", None, &[("Authorization", &bearer)]);
    assert_eq!(listed.status, 200, "{listed:?}");
    // Only the page's own files are open: anything else still needs the token, and a write to a
    // page path is not a page request.
    assert_eq!(server.call("GET", "/other.js", None).status, 401);
    assert_eq!(server.call("POST", "/", None).status, 401);
    // A foreign page cannot fetch the inspector's files in a browser either.
    let foreign = server.call_with(
        "GET",
        "/main.js",
        None,
        &[("Origin", "http://evil.example")],
    );
    assert_eq!(foreign.status, 403, "{foreign:?}");
    let own = format!("http://{}", server.address);
    let same = server.call_with("GET", "/main.js", None, &[("Origin", &own)]);
    assert_eq!(same.status, 200, "{same:?}");
}

#[test]
fn without_a_token_the_page_answers_only_loopback_hosts() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let server = Server::start(&["--db", &sqlite(dir.path())]);
    assert_eq!(server.call("GET", "/", None).status, 200);
    let rebound = server.call_with("GET", "/", None, &[("Host", "evil.example:8765")]);
    assert_eq!(rebound.status, 403, "{rebound:?}");
    assert_eq!(rebound.kind(), "host_not_allowed");
}

/// Says why the browser test cannot run, skipping outside CI and failing under it.
fn skip(message: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{message} (a failure under CI)"
    );
    eprintln!("SKIPPED: {message}");
}

#[test]
fn the_inspector_passes_its_browser_tests() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/inspector");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let node = Command::new("node").arg("--version").output();
    let Some(node) = node.ok().filter(|output| output.status.success()) else {
        return skip("node is not installed; skipping the inspector's browser tests");
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
        return skip(&format!(
            "node {version} is older than 20, which playwright-core needs; skipping the inspector's \
             browser tests"
        ));
    }
    if !Path::new(&chromium).exists() {
        return skip(&format!(
            "no chromium at {chromium} (apt-get install chromium); skipping the inspector's browser tests"
        ));
    }
    if !folder.join("node_modules/playwright-core").exists() {
        return skip(
            "playwright-core is not installed (npm ci in cli/tests/inspector); skipping the \
             inspector's browser tests",
        );
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
    assert!(
        run.status.success(),
        "the inspector's browser tests failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("# fail 0"), "{stdout}");
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("# ") && !line.starts_with("# Subtest"))
        .collect();
    eprintln!("{}", summary.join("\n"));
    eprintln!("screenshots in {}", artifacts.display());
}
