//! What every request passes before an endpoint sees it: a request id, the `Host` and `Origin` checks,
//! CORS, and the bearer token.
//!
//! Without a token the server listens on loopback only, so it also refuses any `Host` that is not a
//! loopback name: a web page cannot reach it by pointing its own domain at 127.0.0.1 (DNS
//! rebinding). A browser origin is refused unless it was allowed with `--allow-origin` or is the
//! server's own (a page it serves); an allowed origin gets the CORS headers on every answer, a refused
//! token's 401 included (without them the browser hides that answer from the page, which then cannot
//! tell a wrong token from a refused origin), and its preflight is answered before the token check,
//! because browsers never send credentials in a preflight. The token is compared in constant time.
//! The inspector page's files (`inspector::is_page`) hold no game data and need no token, so that the
//! page loads and asks for it; they still pass the `Host` and `Origin` checks. This module must not
//! know the endpoints.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use crate::error::{ApiError, Kind};
use crate::http::App;
use crate::inspector;

/// The header a request id travels in, both ways.
pub(crate) const REQUEST_ID: &str = "x-request-id";

/// What the guard needs to know.
#[derive(Clone, Debug)]
pub(crate) struct Policy {
    /// The bearer token every request needs, if any.
    pub(crate) token: Option<String>,
    /// Browser origins allowed (`*` allows any).
    pub(crate) origins: Vec<String>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A request id: the client's, when it sent a short printable one, or a new one.
fn request_id(headers: &HeaderMap) -> String {
    headers
        .get(REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .filter(|id| !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(
            || format!("r{:x}", NEXT_ID.fetch_add(1, Ordering::Relaxed)),
            str::to_owned,
        )
}

/// The middleware.
pub(crate) async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let id = request_id(request.headers());
    let span = tracing::info_span!("request", id = %id, method = %request.method(), path = %request.uri().path());
    let started = Instant::now();
    async move {
        // Only an allowed origin is named back; a refused one gets no CORS headers at all.
        let (allowed, checked) = check(&app.policy, &request);
        let origin = if allowed {
            request.headers().get(header::ORIGIN).cloned()
        } else {
            None
        };
        let mut response = match checked {
            Err(error) => error.into_response(),
            Ok(Checked::Preflight) => preflight(),
            Ok(Checked::Pass) => next.run(request).await,
        };
        let headers = response.headers_mut();
        if let Ok(value) = HeaderValue::from_str(&id) {
            headers.insert(REQUEST_ID, value);
        }
        if let Some(origin) = origin {
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            headers.insert(header::VARY, HeaderValue::from_static("Origin"));
            headers.insert(
                header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static(REQUEST_ID),
            );
        }
        let status = response.status();
        let micros = started.elapsed().as_micros() as u64;
        if status.is_server_error() {
            tracing::warn!(status = status.as_u16(), micros, "answered");
        } else {
            tracing::info!(status = status.as_u16(), micros, "answered");
        }
        response
    }
    .instrument(span)
    .await
}

enum Checked {
    /// An allowed CORS preflight: answer it here.
    Preflight,
    /// On to the endpoint.
    Pass,
}

/// The checks in order, and whether the request's origin (if it has one) may read the answer: once
/// the `Host` and `Origin` checks have passed it may, whatever the token check says.
fn check(policy: &Policy, request: &Request) -> (bool, Result<Checked, ApiError>) {
    match check_address(policy, request) {
        Err(error) => (false, Err(error)),
        Ok(Some(checked)) => (true, Ok(checked)),
        Ok(None) => (true, check_token(policy, request).map(|()| Checked::Pass)),
    }
}

/// The `Host` and `Origin` checks; `Some(Preflight)` for an allowed preflight, which needs no token.
fn check_address(policy: &Policy, request: &Request) -> Result<Option<Checked>, ApiError> {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    if policy.token.is_none() && !is_loopback_host(host) {
        return Err(ApiError::new(
            Kind::HostNotAllowed,
            format!(
                "this server has no token, so it answers only requests addressed to a loopback \
                 name (localhost, 127.0.0.1, [::1]), not to \"{host}\""
            ),
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let own = origin
            .strip_prefix("http://")
            .is_some_and(|rest| rest.eq_ignore_ascii_case(host));
        let allowed = own
            || policy
                .origins
                .iter()
                .any(|allowed| allowed == "*" || allowed.eq_ignore_ascii_case(origin));
        if !allowed {
            return Err(ApiError::new(
                Kind::OriginNotAllowed,
                format!(
                    "the browser origin \"{origin}\" is not allowed; start the server with \
                     --allow-origin {origin} to allow it"
                ),
            ));
        }
        if request.method() == Method::OPTIONS
            && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
        {
            return Ok(Some(Checked::Preflight));
        }
    }
    Ok(None)
}

/// The bearer token, when the server has one (the inspector page's files need none).
fn check_token(policy: &Policy, request: &Request) -> Result<(), ApiError> {
    let headers = request.headers();
    if let Some(token) = &policy.token
        && !inspector::is_page(request)
    {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .unwrap_or("");
        if !same_secret(given.as_bytes(), token.as_bytes()) {
            return Err(ApiError::new(
                Kind::Unauthorized,
                "this server needs the header `Authorization: Bearer TOKEN` with its token",
            ));
        }
    }
    Ok(())
}

/// The answer to an allowed preflight (the origin itself is added by [`guard`]).
fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, idempotency-key, x-request-id"),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    response
}

/// Whether a `Host` header names this machine's loopback interface.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.rsplit_once(':') {
        // `[::1]:8765`, `localhost:8765`, `127.0.0.1:8765`; a bare `[::1]` has colons inside brackets.
        Some((name, port)) if !port.contains(']') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => host,
    };
    if name.eq_ignore_ascii_case("localhost") || name == "[::1]" {
        return true;
    }
    name.parse::<std::net::Ipv4Addr>()
        .is_ok_and(|address| address.is_loopback())
}

/// Compares two secrets in time that depends on their lengths only, never on where they differ.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = u8::from(given.len() != expected.len());
    for (index, byte) in expected.iter().enumerate() {
        // Past the end of `given`, compare with the expected byte flipped, which always differs.
        let other = given.get(index).copied().unwrap_or(!byte);
        difference |= byte ^ other;
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised() {
        for host in [
            "localhost",
            "localhost:8765",
            "127.0.0.1:1",
            "127.3.4.5",
            "[::1]:80",
            "[::1]",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8765",
            "10.0.0.1:80",
            "",
            "localhost.evil:80",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"s3cret", b"s3cret"));
        assert!(!same_secret(b"s3cre", b"s3cret"));
        assert!(!same_secret(b"s3crett", b"s3cret"));
        assert!(!same_secret(b"S3cret", b"s3cret"));
        assert!(!same_secret(b"", b"s3cret"));
    }
}
