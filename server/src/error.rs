//! The one error shape of the HTTP API, and the one place that maps errors to status codes.
//!
//! Every failure a client can see is an [`ApiError`]: a [`Kind`] (a stable code and its status), a
//! message for people, and for a rejected batch the details a host needs (`errors`, `diagnostics`,
//! `feedback`), side by side with `error`. Its `IntoResponse` writes
//! `{"error": {"kind", "message"}, ...details}` (`crate::wire::ErrorBody`); no handler builds an
//! error response by hand. This module must not decide what is an error: handlers and games do.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::wire::{ErrorBody, ErrorDetails, ErrorHead, Problem, Report, WireDiagnostic};

/// What went wrong, as a stable code with its HTTP status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// The body is not JSON, or not the JSON this endpoint takes.
    BadRequest,
    /// A game's initial state, schema or scripts cannot make a game.
    InvalidGame,
    /// The bearer token is missing or wrong.
    Unauthorized,
    /// A browser origin that was not allowed with `--allow-origin`.
    OriginNotAllowed,
    /// A `Host` that is not a loopback name, on a server without a token (DNS rebinding).
    HostNotAllowed,
    /// No game has this id.
    UnknownGame,
    /// No retained step has this label.
    UnknownLabel,
    /// No retained step has this id.
    UnknownStep,
    /// No such endpoint.
    NotFound,
    /// The endpoint exists, but not for this method.
    MethodNotAllowed,
    /// `expect_step` named another step than the current one.
    StepConflict,
    /// A game with this id exists already.
    GameExists,
    /// An `Idempotency-Key` sent again with a different request.
    IdempotencyKeyReused,
    /// An `Idempotency-Key` sent again with the request that made a game, which has since been deleted.
    GameDeleted,
    /// Other writers kept changing the game; nothing was done.
    Contention,
    /// A sync gave replies by key alone that name no step at their place (`need` lists them).
    NeedText,
    /// A sync's path differs from the replies trimming folded into the game's root.
    PathTrimmed,
    /// The body is larger than `--max-body`.
    BodyTooLarge,
    /// The body did not arrive within `--body-timeout`.
    BodyTimeout,
    /// The batch was rejected (or the reply held invalid instructions): nothing changed.
    Rejected,
    /// The server holds `--max-games` games already.
    GameLimit,
    /// The request took longer than `--request-timeout`.
    Timeout,
    /// The database failed; nothing of the request was made durable.
    Storage,
    /// A stored game could not be rebuilt.
    Damaged,
    /// The server is shutting down.
    ShuttingDown,
    /// The server failed in a way no other kind names.
    Internal,
}

impl Kind {
    /// The stable code clients match on.
    pub fn code(self) -> &'static str {
        match self {
            Kind::BadRequest => "bad_request",
            Kind::InvalidGame => "invalid_game",
            Kind::Unauthorized => "unauthorized",
            Kind::OriginNotAllowed => "origin_not_allowed",
            Kind::HostNotAllowed => "host_not_allowed",
            Kind::UnknownGame => "unknown_game",
            Kind::UnknownLabel => "unknown_label",
            Kind::UnknownStep => "unknown_step",
            Kind::NotFound => "not_found",
            Kind::MethodNotAllowed => "method_not_allowed",
            Kind::StepConflict => "step_conflict",
            Kind::GameExists => "game_exists",
            Kind::IdempotencyKeyReused => "idempotency_key_reused",
            Kind::GameDeleted => "game_deleted",
            Kind::Contention => "contention",
            Kind::NeedText => "need_text",
            Kind::PathTrimmed => "path_trimmed",
            Kind::BodyTooLarge => "body_too_large",
            Kind::BodyTimeout => "body_timeout",
            Kind::Rejected => "rejected",
            Kind::GameLimit => "game_limit",
            Kind::Timeout => "timeout",
            Kind::Storage => "storage_failed",
            Kind::Damaged => "game_damaged",
            Kind::ShuttingDown => "shutting_down",
            Kind::Internal => "internal_error",
        }
    }

    /// The kind of an answer made outside the handlers (a rejection of axum's own), by its status.
    pub(crate) fn for_status(status: StatusCode) -> Kind {
        match status {
            StatusCode::UNAUTHORIZED => Kind::Unauthorized,
            StatusCode::NOT_FOUND => Kind::NotFound,
            StatusCode::METHOD_NOT_ALLOWED => Kind::MethodNotAllowed,
            StatusCode::PAYLOAD_TOO_LARGE => Kind::BodyTooLarge,
            StatusCode::REQUEST_TIMEOUT | StatusCode::GATEWAY_TIMEOUT => Kind::Timeout,
            StatusCode::SERVICE_UNAVAILABLE => Kind::ShuttingDown,
            status if status.is_server_error() => Kind::Internal,
            _ => Kind::BadRequest,
        }
    }

    /// The HTTP status that goes with it.
    pub fn status(self) -> StatusCode {
        match self {
            Kind::BadRequest | Kind::InvalidGame => StatusCode::BAD_REQUEST,
            Kind::Unauthorized => StatusCode::UNAUTHORIZED,
            Kind::OriginNotAllowed | Kind::HostNotAllowed => StatusCode::FORBIDDEN,
            Kind::UnknownGame | Kind::UnknownLabel | Kind::UnknownStep | Kind::NotFound => {
                StatusCode::NOT_FOUND
            }
            Kind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Kind::StepConflict
            | Kind::GameExists
            | Kind::IdempotencyKeyReused
            | Kind::GameDeleted
            | Kind::Contention
            | Kind::NeedText
            | Kind::PathTrimmed => StatusCode::CONFLICT,
            Kind::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Kind::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Kind::Rejected => StatusCode::UNPROCESSABLE_ENTITY,
            Kind::GameLimit => StatusCode::INSUFFICIENT_STORAGE,
            Kind::Timeout | Kind::Storage | Kind::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            Kind::Damaged | Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// An error answer: a kind, a message, and details beside `error` (a rejection's `errors`,
/// `diagnostics` and `feedback`).
#[derive(Clone, Debug)]
pub struct ApiError {
    /// What went wrong.
    pub kind: Kind,
    /// For people: what, where and why.
    pub message: String,
    /// Members added beside `error` in the body.
    pub(crate) details: Box<ErrorDetails>,
}

impl ApiError {
    /// An error with a message and no details.
    pub fn new(kind: Kind, message: impl Into<String>) -> ApiError {
        ApiError {
            kind,
            message: message.into(),
            details: Box::default(),
        }
    }

    /// The same error with the problems that made it.
    pub(crate) fn with_errors(mut self, errors: Vec<Problem>) -> ApiError {
        self.details.errors = Some(errors);
        self
    }

    /// The same error with what the text layer noticed in the reply.
    pub(crate) fn with_diagnostics(mut self, diagnostics: Vec<WireDiagnostic>) -> ApiError {
        self.details.diagnostics = Some(diagnostics);
        self
    }

    /// The same error with what was cleaned in the reply (`None` for a batch sent as JSON, which has
    /// no report).
    pub(crate) fn with_report(mut self, report: Option<Report>) -> ApiError {
        self.details.report = report;
        self
    }

    /// The same error with the text to hand back to the model.
    pub(crate) fn with_feedback(mut self, feedback: String) -> ApiError {
        self.details.feedback = Some(feedback);
        self
    }

    /// The same error with the replies whose text a sync needs.
    pub(crate) fn with_need(mut self, need: Vec<usize>) -> ApiError {
        self.details.need = Some(need);
        self
    }

    /// The same error with the index of the reply concerned.
    pub(crate) fn with_index(mut self, index: usize) -> ApiError {
        self.details.index = Some(index);
        self
    }

    /// The same error with the game's current step.
    pub(crate) fn with_step(mut self, step: u64) -> ApiError {
        self.details.step = Some(step);
        self
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.kind.status()
    }

    /// The body, as the wire carries it.
    pub(crate) fn body(&self) -> ErrorBody<'_> {
        ErrorBody {
            error: ErrorHead {
                kind: self.kind.code(),
                message: &self.message,
            },
            details: &self.details,
        }
    }

    /// The body's JSON text.
    pub fn body_text(&self) -> String {
        serde_json::to_string(&self.body()).unwrap_or_else(|_| "{}".to_owned())
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.code(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        crate::answer::Answer::json(self.status(), &self.body()).into_response()
    }
}

impl From<statecraft_saves::StorageError> for ApiError {
    fn from(error: statecraft_saves::StorageError) -> ApiError {
        match error {
            statecraft_saves::StorageError::Damaged { .. } => {
                ApiError::new(Kind::Damaged, error.to_string())
            }
            _ => ApiError::new(
                Kind::Storage,
                format!("{error}; nothing of this request was saved"),
            ),
        }
    }
}
