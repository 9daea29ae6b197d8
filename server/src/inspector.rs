//! The inspector page (`docs/inspector.md`): its files, embedded in the binary, served at `/`.
//!
//! The page is plain HTML, CSS and JavaScript modules (no build step) that talk to the HTTP API on
//! their own origin through the JavaScript client, `clients/js/statecraft.js`, embedded here from its
//! copy `server/inspector/statecraft.js` (a published crate can embed only its own files;
//! `server/src/http/tests/inspector.rs` fails when the two differ) and served beside the page at
//! `/statecraft.js` (any page of the origin may import it). Its files hold no game data, so the guard serves them without the token (the
//! page must load to ask for it) but with the `Host` and `Origin` checks; [`is_page`] is what it asks.
//! Every file goes out with a Content-Security-Policy that lets the page load only its own files and
//! talk only to its own origin, and that no other site may frame it.

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The page's files: the path each is served at, its media type and its contents.
const FILES: &[(&str, &str, &str)] = &[
    (
        "/",
        "text/html; charset=utf-8",
        include_str!("../inspector/index.html"),
    ),
    (
        "/inspector.css",
        "text/css; charset=utf-8",
        include_str!("../inspector/inspector.css"),
    ),
    (
        "/statecraft.js",
        JS,
        include_str!("../inspector/statecraft.js"),
    ),
    ("/api.js", JS, include_str!("../inspector/api.js")),
    ("/dom.js", JS, include_str!("../inspector/dom.js")),
    ("/values.js", JS, include_str!("../inspector/values.js")),
    ("/main.js", JS, include_str!("../inspector/main.js")),
    ("/tree.js", JS, include_str!("../inspector/tree.js")),
    ("/timeline.js", JS, include_str!("../inspector/timeline.js")),
    ("/diff.js", JS, include_str!("../inspector/diff.js")),
    ("/reply.js", JS, include_str!("../inspector/reply.js")),
    ("/plot.js", JS, include_str!("../inspector/plot.js")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// Only the page's own files, its own origin for `fetch`, no plugins, no framing by other sites.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Whether a request asks for one of the page's files (which need no token).
pub(crate) fn is_page(request: &Request) -> bool {
    (request.method() == Method::GET || request.method() == Method::HEAD)
        && FILES.iter().any(|(path, ..)| *path == request.uri().path())
}

/// The routes of the page's files.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    FILES
        .iter()
        .fold(Router::new(), |router, &(path, media_type, body)| {
            router.route(path, get(move || async move { file(media_type, body) }))
        })
}

fn file(media_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, media_type),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-cache"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
