//! The inspector page that `statecraft serve` serves at `/`: its files pass the guard's `Host` and
//! `Origin` checks but need no token (the page must load to ask for it), while the API still does;
//! the page itself runs in a real browser in `inspector_browser.rs`.

mod http;

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
    for asset in ["/main.js", "/api.js", "/statecraft.js", "/inspector.css"] {
        let file = server.call("GET", asset, None);
        assert_eq!(file.status, 200, "{asset}: {file:?}");
    }
    // The page imports the JavaScript client itself, the very file of clients/js (the server embeds
    // its own copy, since a published crate holds only its own files).
    let served = server.call("GET", "/statecraft.js", None);
    assert!(
        served
            .header("content-type")
            .unwrap_or("")
            .starts_with("text/javascript")
    );
    let client = include_str!("../../clients/js/statecraft.js");
    assert!(
        served.body.as_str() == Some(client),
        "the served client differs from clients/js/statecraft.js: \
         cp clients/js/statecraft.js server/inspector/statecraft.js"
    );
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
