//! An answer as sent: a status code and a JSON body, kept as text so that an idempotency receipt
//! replays exactly the bytes of the first answer.
//!
//! Successful answers and [`crate::error::ApiError`]s both end as an `Answer`. This module must not
//! decide what a request answers.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A status code and a JSON body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    /// The status code.
    pub(crate) status: StatusCode,
    /// The body, JSON text.
    pub(crate) body: String,
}

impl Answer {
    /// An answer with this status and body (one of the types of `crate::wire`), written straight
    /// to its text: a JSON tree of a large state on the way would cost several times the writing.
    pub(crate) fn json(status: StatusCode, body: &impl Serialize) -> Answer {
        Answer {
            status,
            // The wire types hold JSON values and strings only, which always serialize.
            body: serde_json::to_string(body).unwrap_or_else(|_| "{}".to_owned()),
        }
    }

    /// A 200 answer.
    pub(crate) fn ok(body: &impl Serialize) -> Answer {
        Answer::json(StatusCode::OK, body)
    }
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}
