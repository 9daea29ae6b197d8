//! The inspector page that `statecraft serve` serves at `/`, in process: its files pass the guard's
//! `Host` and `Origin` checks but need no token (the page must load to ask for it), while the API
//! still does; the page itself runs in a real browser in `cli/tests/inspector_browser.rs`.

use axum::http::StatusCode;

use super::{Harness, Options};

const TOKEN: &str = "s3cret-token";

#[test]
fn the_page_loads_without_the_token_and_the_api_still_needs_it() {
    let server = Harness::sqlite_with(Options {
        token: Some(TOKEN.to_owned()),
        ..Options::default()
    });
    let get = |uri: &str, headers: &[(&str, &str)]| server.fetch("GET", uri, "", headers);
    let page = get("/", &[]);
    assert_eq!(page.status, StatusCode::OK, "{page:?}");
    assert!(
        page.header("content-type")
            .unwrap_or("")
            .starts_with("text/html")
    );
    assert!(page.text.contains("statecraft inspector"), "{}", page.text);
    let policy = page.header("content-security-policy").unwrap_or("");
    assert!(policy.contains("connect-src 'self'"), "{policy}");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    // Every file of the page's folder is served (`index.html` at `/`): a module added there and
    // not embedded would fail the page's imports only in a browser.
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("inspector");
    for entry in std::fs::read_dir(&folder).expect("the page's folder") {
        let name = entry
            .expect("a file")
            .file_name()
            .into_string()
            .expect("a UTF-8 name");
        let asset = if name == "index.html" {
            "/".to_owned()
        } else {
            format!("/{name}")
        };
        let file = get(&asset, &[]);
        assert_eq!(file.status, StatusCode::OK, "{asset}: {file:?}");
        assert_eq!(
            file.text,
            std::fs::read_to_string(folder.join(&name)).expect("the file"),
            "{asset} is served as it is in server/inspector/"
        );
    }
    // The page imports the JavaScript client itself, the very file of clients/js (the server embeds
    // its own copy, since a published crate holds only its own files).
    let served = get("/statecraft.js", &[]);
    assert!(
        served
            .header("content-type")
            .unwrap_or("")
            .starts_with("text/javascript")
    );
    let client = include_str!("../../../../clients/js/statecraft.js");
    assert!(
        served.text == client,
        "the served client differs from clients/js/statecraft.js: \
         cp clients/js/statecraft.js server/inspector/statecraft.js"
    );
    assert_eq!(get("/v1/games", &[]).status, StatusCode::UNAUTHORIZED);
    let bearer = format!("Bearer {TOKEN}");
    let listed = get("/v1/games", &[("Authorization", &bearer)]);
    assert_eq!(listed.status, StatusCode::OK, "{listed:?}");
    // Only the page's own files are open: anything else still needs the token, and a write to a
    // page path is not a page request.
    assert_eq!(get("/other.js", &[]).status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        server.fetch("POST", "/", "", &[]).status,
        StatusCode::UNAUTHORIZED
    );
    // A foreign page cannot fetch the inspector's files in a browser either.
    let foreign = get("/main.js", &[("Origin", "http://evil.example")]);
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{foreign:?}");
    let same = get("/main.js", &[("Origin", "http://127.0.0.1")]);
    assert_eq!(same.status, StatusCode::OK, "{same:?}");
}

#[test]
fn without_a_token_the_page_answers_only_loopback_hosts() {
    let server = Harness::sqlite(100);
    assert_eq!(server.fetch("GET", "/", "", &[]).status, StatusCode::OK);
    let rebound = server.raw("GET", "/", "", &[("Host", "evil.example:8765")]);
    assert_eq!(rebound.status, StatusCode::FORBIDDEN, "{rebound:?}");
    assert_eq!(rebound.kind(), "host_not_allowed");
}
