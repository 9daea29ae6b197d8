//! The endpoints of docs/http.md and the router that holds them.
//!
//! Each handler reads its body with [`Body`] (JSON, strict, each member once, within `--max-body` and
//! `--body-timeout`; a 400, 413 or 408 in the one error shape otherwise), hands game requests to
//! [`ActiveGames`] and stateless ones to a blocking thread, and returns an [`Answer`] or an [`ApiError`]; a
//! last layer gives the same shape to any error answer axum makes on its own. Everything lives under `/v1`; [`app`] merges
//! the inspector page's files (`inspector.rs`, at `/`) beside the API, behind the same guard. This module must
//! not run the engine itself: `loaded_game.rs` does for games, the translators and the prompt kit for the
//! stateless endpoints.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value as Json;
use statecraft_engine::{Batch, ChatReply, Limits, StepId, StepRef, Value};
use statecraft_saves::{Head, Storage, Write, Written};
use statecraft_translators::mvu::{self, MvuOptions};
use statecraft_translators::{ExtractOptions, extract, jsonpatch};

use crate::active_games::{
    ActiveGames, Idempotency, created, fingerprint, receipt, replayed, storage_error,
};
use crate::answer::Answer;
use crate::error::{ApiError, Kind};
use crate::guard::{self, Policy};
use crate::ids::{self, Owner, check_id, new_id};
use crate::inspector;
use crate::loaded_game::{Operation, SyncJob, compile_schema, load_scripts};
use crate::new_game;
use crate::prompting;
use crate::requests::{
    ApplyRequest, CardUpdateRequest, CheckoutRequest, ConvertRequest, CreateRequest,
    EvaluateRequest, ExtractRequest, GamePromptRequest, Notation, PromptRequest, SchemaRequest,
    SyncRequest, check_macros, check_script_names, read_replies,
};
use crate::wire::{
    Converted, Extracted, GameList, GameListing, Health, Problem, Report, Schemas, WireDiagnostic,
};
use crate::writer::Writer;

/// Everything the handlers share.
pub(crate) struct App {
    pub(crate) games: ActiveGames,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) writer: Writer,
    pub(crate) policy: Policy,
    pub(crate) limits: Limits,
    pub(crate) max_games: u64,
    pub(crate) request_timeout: Duration,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").finish_non_exhaustive()
    }
}

/// The whole service: the API under `/v1` and the inspector page at `/`, behind the guard.
pub(crate) fn app(app: Arc<App>, max_body: usize) -> Router {
    api()
        .merge(inspector::routes())
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            guard::guard,
        ))
        .layer(axum::middleware::from_fn(json_errors))
        .with_state(app)
}

/// The routes of docs/http.md.
fn api() -> Router<Arc<App>> {
    Router::new()
        .route("/v1/health", get(health))
        .route("/v1/games", get(list_games).post(create_game))
        .route("/v1/games/{id}", get(show_game).delete(delete_game))
        .route("/v1/games/{id}/state", get(state_at))
        .route("/v1/games/{id}/log", get(log))
        .route("/v1/games/{id}/apply", post(apply))
        .route("/v1/games/{id}/checkout", post(checkout))
        .route("/v1/games/{id}/sync", post(sync))
        .route("/v1/games/{id}/undo", post(undo))
        .route("/v1/games/{id}/redo", post(redo))
        .route("/v1/games/{id}/card", get(game_card).post(update_card))
        .route("/v1/games/{id}/prompt", post(game_prompt))
        .route("/v1/games/{id}/schema", get(game_schema))
        .route("/v1/games/{id}/evaluate", post(evaluate))
        .route("/v1/extract", post(extract_reply))
        .route("/v1/convert", post(convert))
        .route("/v1/prompt", post(prompt))
        .route("/v1/schema", post(schema))
        .method_not_allowed_fallback(method_not_allowed)
}

async fn not_found() -> ApiError {
    ApiError::new(Kind::NotFound, "no such endpoint; the API is under /v1")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        Kind::MethodNotAllowed,
        "this endpoint does not take this method",
    )
}

/// Refuses a query string on an endpoint that takes none: `?dry_run=true` on an apply would otherwise
/// be ignored and the batch committed, as an unknown body member would be without `deny_unknown_fields`.
pub(crate) struct NoQuery;

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for NoQuery {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<NoQuery, ApiError> {
        match parts.uri.query() {
            None | Some("") => Ok(NoQuery),
            Some(query) => Err(ApiError::new(
                Kind::BadRequest,
                format!(
                    "this endpoint takes no query parameters, but got \"{query}\"; its options \
                     are members of the JSON body"
                ),
            )),
        }
    }
}

/// The game a `/v1/games/{id}/...` URL names: the storage key of the id for the request's owner
/// (`ids.rs`). Axum's own `Path` refuses an id that is not UTF-8 once its %-escapes are decoded
/// (`%FF`) with a plain-text answer; this one answers in the one error shape. An id that is not a
/// game id is a game no one has (404), as it always was.
pub(crate) struct GameId(String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for GameId {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<GameId, ApiError> {
        let owner = Owner::of(&parts.headers)?;
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(id)) => {
                check_id(&id).map_err(|_| crate::active_games::unknown_game(&id))?;
                Ok(GameId(owner.key(&id)))
            }
            Err(rejection) => Err(ApiError::new(
                Kind::BadRequest,
                format!(
                    "the game id in the URL cannot be read ({}); an id is 1 to 128 letters, \
                     digits, '-', '_', '.' or '~'",
                    rejection.body_text()
                ),
            )),
        }
    }
}

/// Gives every error answer the one error shape, whatever made it: a rejection of axum's own (its
/// extractors and router answer plain text) or of a layer, which no handler sees. An answer that is
/// JSON already passes unchanged.
async fn json_errors(request: Request, next: axum::middleware::Next) -> axum::response::Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if is_json || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // These answers are short texts; a longer one is not read, and the status's reason stands in.
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let message = match text.trim() {
        "" => status
            .canonical_reason()
            .unwrap_or("the request was refused")
            .to_owned(),
        text => text.to_owned(),
    };
    let error = ApiError::new(Kind::for_status(status), message);
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    parts.headers.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    axum::response::Response::from_parts(parts, axum::body::Body::from(error.body_text()))
}

/// A JSON body, read strictly and within the body limit, with its bytes (for idempotency digests).
pub(crate) struct Body<T> {
    value: T,
    bytes: Bytes,
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Body<T>, ApiError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        Kind::BodyTooLarge,
                        "the body is larger than this server takes (--max-body)",
                    )
                } else if crate::conns::is_body_timeout(&rejection) {
                    ApiError::new(
                        Kind::BodyTimeout,
                        "the body did not arrive within the server's time limit (--body-timeout); \
                         nothing was done and the connection is closed",
                    )
                } else {
                    ApiError::new(
                        Kind::BadRequest,
                        format!("the body cannot be read: {rejection}"),
                    )
                }
            })?;
        // An empty body is an empty object, for the endpoints whose every member is optional.
        let text: &[u8] = match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
            None => b"{}",
            Some(b'{') => &bytes,
            // serde would read an array as the members in order (`["x"]` as `{"input": "x"}`),
            // which no reader of the API would expect: every body is an object of named members.
            Some(_) => {
                return Err(ApiError::new(
                    Kind::BadRequest,
                    "the body must be a JSON object of named members, like {\"input\": \"...\"}",
                ));
            }
        };
        let value = serde_json::from_slice(text).map_err(|error| {
            ApiError::new(
                Kind::BadRequest,
                format!("the body is not the JSON this endpoint takes: {error}"),
            )
        })?;
        // serde_json keeps the last of two members of one name and drops the first unseen (only the
        // top object's are refused above, by name): `"value": 1, "value": 1000` in an instruction
        // would add 1000. A body that read above is valid UTF-8 JSON, so this finds or passes.
        if let Some(duplicate) = std::str::from_utf8(text)
            .ok()
            .and_then(|text| statecraft_engine::duplicate_member(text).ok().flatten())
        {
            return Err(ApiError::new(
                Kind::BadRequest,
                format!("the body is ambiguous: {duplicate}; give each member once"),
            ));
        }
        Ok(Body { value, bytes })
    }
}

/// The `Idempotency-Key` of a request, with its digest over the endpoint and the body.
fn idempotency(
    headers: &HeaderMap,
    endpoint: &str,
    body: &[u8],
) -> Result<Option<Idempotency>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .filter(|key| !key.is_empty() && key.len() <= 255)
        .ok_or_else(|| {
            ApiError::new(
                Kind::BadRequest,
                "an Idempotency-Key is 1 to 255 printable characters",
            )
        })?;
    Ok(Some(Idempotency {
        key: key.to_owned(),
        fingerprint: fingerprint(&[endpoint.as_bytes(), body]),
    }))
}

impl App {
    fn deadline(&self) -> Instant {
        Instant::now() + self.request_timeout
    }

    async fn run(
        &self,
        id: &str,
        operation: Operation,
        idempotency: Option<Idempotency>,
    ) -> Result<Answer, ApiError> {
        self.games
            .run(id, operation, idempotency, self.deadline())
            .await
    }

    /// Runs blocking work (the engine, the database) off the async threads, within the time limit.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let task = tokio::task::spawn_blocking(work);
        match tokio::time::timeout(self.request_timeout, task).await {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => Err(ApiError::new(
                Kind::Damaged,
                format!("the request failed inside the server: {error}"),
            )),
            Err(_) => Err(ApiError::new(
                Kind::Timeout,
                "the request took longer than the server's time limit",
            )),
        }
    }
}

async fn health(_: NoQuery) -> Answer {
    Answer::ok(&Health {
        ok: true,
        version: env!("CARGO_PKG_VERSION"),
        api: crate::API_VERSION,
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// The largest page `GET /v1/games` answers.
const MAX_PAGE: usize = 1000;

async fn list_games(
    State(app): State<Arc<App>>,
    owner: Owner,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Answer, ApiError> {
    let Query(query) = query.map_err(|error| ApiError::new(Kind::BadRequest, error.body_text()))?;
    if let Some(after) = &query.after {
        crate::requests::check_text("after", after)?;
    }
    let limit = query.limit.unwrap_or(100).clamp(1, MAX_PAGE);
    let storage = Arc::clone(&app.storage);
    let (page, next) = app
        .blocking(move || Ok(owner.page(storage.as_ref(), query.after.as_deref(), limit)?))
        .await?;
    let games = page
        .iter()
        .map(|game| GameListing {
            id: &game.id,
            step: game.step.get(),
            label: game.label.as_deref(),
        })
        .collect();
    Ok(Answer::ok(&GameList {
        games,
        next: next.as_deref(),
    }))
}

async fn create_game(
    State(app): State<Arc<App>>,
    owner: Owner,
    _: NoQuery,
    headers: HeaderMap,
    body: Body<CreateRequest>,
) -> Result<Answer, ApiError> {
    let idempotency = idempotency(&headers, "create", &body.bytes)?;
    let request = body.value;
    let worker = Arc::clone(&app);
    app.blocking(move || create(&worker, &owner, request, idempotency))
        .await
}

/// Checks that the state (or card), schema and scripts make a game (`new_game::base`), and stores it
/// as `owner`'s.
fn create(
    app: &App,
    owner: &Owner,
    request: CreateRequest,
    idempotency: Option<Idempotency>,
) -> Result<Answer, ApiError> {
    let scope = owner.key("");
    if let Some(idempotency) = &idempotency
        && let Some(kept) = app.storage.receipt(&scope, &idempotency.key)?
    {
        return replayed(&kept, idempotency);
    }
    let id = match request.id {
        Some(id) => {
            check_id(&id)?;
            id
        }
        None => new_id()?,
    };
    let key = owner.key(&id);
    let (base, scripts) = new_game::base(
        new_game::Source {
            state: request.state,
            card: request.card,
            macros: request.macros,
            schema: request.schema,
            scripts: request.scripts,
            profile: request.profile,
            seed: request.seed,
        },
        &app.limits,
    )?;
    let answer = created(&key);
    let write = Write::Create {
        id: key,
        base,
        scripts,
        head: Head {
            seq: 0,
            base_seq: 0,
            step: StepId::ROOT,
            label: None,
        },
        receipt: idempotency.as_ref().map(|key| receipt(key, &answer)),
        // The limit is decided in the transaction that inserts the game: counted before it, creates
        // racing each other would all pass.
        max_games: Some(app.max_games),
    };
    let written = app
        .writer
        .write(write)
        .map_err(|error| storage_error(&error))?;
    if written == Written::Done {
        return Ok(answer);
    }
    // Another request under the same key, racing this one, made its game first: this one answers
    // as that one did.
    if let Some(idempotency) = &idempotency
        && let Some(kept) = app.storage.receipt(&scope, &idempotency.key)?
    {
        return replayed(&kept, idempotency);
    }
    Err(match written {
        Written::Full => ApiError::new(
            Kind::GameLimit,
            format!(
                "this server holds {} games, its limit (--max-games); delete one first",
                app.max_games
            ),
        ),
        _ => ApiError::new(
            Kind::GameExists,
            format!("a game with the id \"{id}\" exists already"),
        ),
    })
}

/// `GET /v1/games/{id}`'s query: `view=mvu` for MVU's views.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShowQuery {
    #[serde(default)]
    view: Option<String>,
}

async fn show_game(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    query: Result<Query<ShowQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Answer, ApiError> {
    let Query(query) = query.map_err(|error| ApiError::new(Kind::BadRequest, error.body_text()))?;
    let operation = match query.view.as_deref() {
        None => Operation::Show,
        Some("mvu") => Operation::MvuView,
        Some(other) => {
            return Err(ApiError::new(
                Kind::BadRequest,
                format!("unknown view \"{other}\": the one view is mvu"),
            ));
        }
    };
    app.run(&id, operation, None).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AtQuery {
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    step: Option<u64>,
}

async fn state_at(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    query: Result<Query<AtQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Answer, ApiError> {
    let Query(query) = query.map_err(|error| ApiError::new(Kind::BadRequest, error.body_text()))?;
    let operation = match (query.at, query.step) {
        (Some(label), None) => Operation::StateAt(StepRef::Label(label)),
        (None, Some(step)) => Operation::StateAt(StepRef::Id(StepId::new(step))),
        (None, None) => Operation::Show,
        (Some(_), Some(_)) => {
            return Err(ApiError::new(
                Kind::BadRequest,
                "name the step by `at` (a label) or by `step` (an id), not both",
            ));
        }
    };
    app.run(&id, operation, None).await
}

async fn log(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    _: NoQuery,
) -> Result<Answer, ApiError> {
    app.run(&id, Operation::Log, None).await
}

/// A delete takes no idempotency key: the game's receipts go with it, and a repeat answers 404.
async fn delete_game(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    _: NoQuery,
) -> Result<Answer, ApiError> {
    app.run(&id, Operation::Delete, None).await
}

async fn apply(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    _: NoQuery,
    headers: HeaderMap,
    body: Body<ApplyRequest>,
) -> Result<Answer, ApiError> {
    let idempotency = idempotency(&headers, "apply", &body.bytes)?;
    check_macros(body.value.input.as_deref(), &body.value.macros)?;
    app.run(&id, Operation::Apply(Box::new(body.value)), idempotency)
        .await
}

/// A sync; with `create`, a game that does not exist is made first (a race with another first sync
/// of the same game is fine: the game exists either way).
async fn sync(
    State(app): State<Arc<App>>,
    owner: Owner,
    GameId(id): GameId,
    _: NoQuery,
    headers: HeaderMap,
    body: Body<SyncRequest>,
) -> Result<Answer, ApiError> {
    let idempotency = idempotency(&headers, "sync", &body.bytes)?;
    let request = body.value;
    let replies = read_replies(request.replies)?;
    for reply in &replies {
        if let ChatReply::Text(text) = reply {
            check_macros(Some(text), &request.macros)?;
        }
    }
    let job = SyncJob {
        replies,
        move_to_end: request.move_to_end,
        macros: request.macros,
    };
    let first = app
        .run(
            &id,
            Operation::Sync(Box::new(job.clone())),
            idempotency.clone(),
        )
        .await;
    let Some(mut new_game) = request.create else {
        return first;
    };
    match first {
        Err(error) if error.kind == Kind::UnknownGame => {}
        answer => return answer,
    }
    let shown = ids::shown(&id);
    if new_game.id.as_ref().is_some_and(|given| given != shown) {
        return Err(ApiError::new(
            Kind::BadRequest,
            format!("`create.id` names another game than the path's \"{shown}\"; leave it out"),
        ));
    }
    new_game.id = Some(shown.to_owned());
    check_script_names(&new_game.scripts)?;
    let worker = Arc::clone(&app);
    let made = app
        .blocking(move || create(&worker, &owner, new_game, None))
        .await;
    match made {
        Ok(_) => {}
        Err(error) if error.kind == Kind::GameExists => {}
        Err(error) => return Err(error),
    }
    app.run(&id, Operation::Sync(Box::new(job)), idempotency)
        .await
}

async fn checkout(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    _: NoQuery,
    headers: HeaderMap,
    body: Body<CheckoutRequest>,
) -> Result<Answer, ApiError> {
    let idempotency = idempotency(&headers, "checkout", &body.bytes)?;
    app.run(&id, Operation::Checkout(body.value), idempotency)
        .await
}

/// The body of undo and redo: nothing, or an empty object.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

async fn undo(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    _: NoQuery,
    headers: HeaderMap,
    body: Body<Empty>,
) -> Result<Answer, ApiError> {
    let idempotency = idempotency(&headers, "undo", &body.bytes)?;
    app.run(&id, Operation::Undo, idempotency).await
}

async fn redo(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    _: NoQuery,
    headers: HeaderMap,
    body: Body<Empty>,
) -> Result<Answer, ApiError> {
    let idempotency = idempotency(&headers, "redo", &body.bytes)?;
    app.run(&id, Operation::Redo, idempotency).await
}

/// `GET /v1/games/{id}/card`: the card the game holds, for a front end to compare with its own.
async fn game_card(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    _: NoQuery,
) -> Result<Answer, ApiError> {
    app.run(&id, Operation::Card, None).await
}

/// `POST /v1/games/{id}/card`: a new version of the game's card, as one step.
async fn update_card(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    _: NoQuery,
    headers: HeaderMap,
    body: Body<CardUpdateRequest>,
) -> Result<Answer, ApiError> {
    let idempotency = idempotency(&headers, "card", &body.bytes)?;
    check_macros(None, &body.value.macros)?;
    app.run(
        &id,
        Operation::UpdateCard(Box::new(body.value)),
        idempotency,
    )
    .await
}

/// `POST /v1/games/{id}/prompt`: the prompt at a step, its view ranking the step's recent changes.
async fn game_prompt(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    _: NoQuery,
    body: Body<GamePromptRequest>,
) -> Result<Answer, ApiError> {
    app.run(&id, Operation::Prompt(Box::new(body.value)), None)
        .await
}

/// `GET /v1/games/{id}/schema`: the game's batch schema and its update pass's strict schema.
async fn game_schema(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    _: NoQuery,
) -> Result<Answer, ApiError> {
    app.run(&id, Operation::Schema, None).await
}

/// `POST /v1/games/{id}/evaluate`: conditions on the state at a step.
async fn evaluate(
    State(app): State<Arc<App>>,
    GameId(id): GameId,
    _: NoQuery,
    body: Body<EvaluateRequest>,
) -> Result<Answer, ApiError> {
    app.run(&id, Operation::Evaluate(Box::new(body.value)), None)
        .await
}

async fn extract_reply(
    State(app): State<Arc<App>>,
    _: NoQuery,
    body: Body<ExtractRequest>,
) -> Result<Answer, ApiError> {
    let request = body.value;
    check_macros(Some(&request.input), &request.macros)?;
    let limits = app.limits.clone();
    app.blocking(move || {
        let options = ExtractOptions {
            limits,
            mvu: MvuOptions {
                state: request.state.map(Value::from),
                macros: request.macros,
                ..MvuOptions::default()
            },
        };
        let extraction = extract(&request.input, &options);
        Ok(Answer::ok(&Extracted {
            batch: extraction.batch.to_json(),
            valid: extraction.valid,
            diagnostics: WireDiagnostic::all(&extraction.diagnostics),
            report: Report::of(&extraction.report),
            feedback: &statecraft_translators::feedback(&extraction, &[]),
        }))
    })
    .await
}

async fn convert(
    State(app): State<Arc<App>>,
    _: NoQuery,
    body: Body<ConvertRequest>,
) -> Result<Answer, ApiError> {
    let request = body.value;
    let limits = app.limits.clone();
    app.blocking(move || converted(request, &limits)).await
}

/// Reads the input in its notation and writes it in the other.
fn converted(request: ConvertRequest, limits: &Limits) -> Result<Answer, ApiError> {
    let text_of = |input: &Json| match input {
        Json::String(text) => text.clone(),
        other => other.to_string(),
    };
    let (batch, mut diagnostics, errors) = match request.from {
        Notation::Mvu => {
            let Json::String(text) = &request.input else {
                return Err(ApiError::new(
                    Kind::BadRequest,
                    "MVU input is text: give `input` as a string",
                ));
            };
            let read = mvu::from_text(text, &MvuOptions::default());
            (Batch::new(read.instructions), read.diagnostics, Vec::new())
        }
        Notation::Json => {
            let json = match &request.input {
                Json::String(text) => serde_json::from_str(text).map_err(|error| {
                    ApiError::new(Kind::BadRequest, format!("`input` is not JSON: {error}"))
                })?,
                other => other.clone(),
            };
            // JSON text given as a string may name a member twice, which the parsed value hides.
            let decoded = match &request.input {
                Json::String(text) => Batch::from_json_text(&json, text),
                _ => Batch::from_json(&json),
            };
            match decoded {
                Ok(batch) => (batch, Vec::new(), Vec::new()),
                Err(errors) => (Batch::default(), Vec::new(), errors.0),
            }
        }
        Notation::Jsonpatch => {
            let read = jsonpatch::from_text(&text_of(&request.input), limits);
            (read.batch, read.diagnostics, Vec::new())
        }
    };
    if !errors.is_empty() {
        return Err(ApiError::new(
            Kind::Rejected,
            "the input holds invalid instructions; nothing was converted",
        )
        .with_errors(Problem::batch(&errors))
        .with_diagnostics(WireDiagnostic::all(&diagnostics)));
    }
    let mut unexpressed = Vec::new();
    let output = match request.to {
        Notation::Json => batch.to_json(),
        Notation::Mvu => {
            let (text, problems) = mvu::to_text(&batch);
            diagnostics.extend(problems);
            Json::String(text)
        }
        Notation::Jsonpatch => match jsonpatch::from_batch(&batch) {
            Ok(patch) => patch,
            Err(errors) => {
                unexpressed = errors.0;
                Json::Null
            }
        },
    };
    Ok(Answer::ok(&Converted {
        output,
        diagnostics: WireDiagnostic::all(&diagnostics),
        errors: Problem::batch(&unexpressed),
    }))
}

async fn prompt(
    State(app): State<Arc<App>>,
    _: NoQuery,
    body: Body<PromptRequest>,
) -> Result<Answer, ApiError> {
    let request = body.value;
    let limits = app.limits.clone();
    app.blocking(move || {
        let schema = compile_schema(request.schema.as_ref())?;
        let state = Value::from(request.state);
        if let Some(schema) = &schema {
            let errors = schema.check_full(&state);
            if !errors.is_empty() {
                return Err(ApiError::new(
                    Kind::InvalidGame,
                    "the state does not satisfy the schema",
                )
                .with_errors(Problem::batch(&errors)));
            }
        }
        let callbacks = signatures(&request.scripts, &limits)?;
        let asked = prompting::Asked {
            lang: request.lang,
            budget: request.budget,
            format: request.format,
            mode: request.mode,
            messages: &request.messages,
            reply: request.reply.as_deref(),
        };
        // No history: no recent changes to rank first.
        let made = prompting::make(&state, request.schema.as_ref(), &callbacks, &[], &asked)?;
        Ok(Answer::ok(&prompting::prompted(&made)))
    })
    .await
}

async fn schema(
    State(app): State<Arc<App>>,
    _: NoQuery,
    body: Body<SchemaRequest>,
) -> Result<Answer, ApiError> {
    let request = body.value;
    let limits = app.limits.clone();
    app.blocking(move || {
        compile_schema(request.schema.as_ref())?;
        let callbacks = signatures(&request.scripts, &limits)?;
        let spec = statecraft_prompt::InstructionSpec::from_schema(request.schema.as_ref())
            .with_callbacks(&callbacks);
        let partial = spec.is_partial();
        if request.gbnf {
            let gbnf = statecraft_prompt::batch_gbnf(&spec);
            return Ok(Answer::ok(&Schemas {
                schema: None,
                gbnf: Some(&gbnf),
                partial,
            }));
        }
        let schema = statecraft_prompt::batch_schema(&spec);
        Ok(Answer::ok(&Schemas {
            schema: Some(&schema),
            gbnf: None,
            partial,
        }))
    })
    .await
}

/// What the handlers of `scripts` say about themselves, for the prompt kit.
fn signatures(
    scripts: &std::collections::BTreeMap<String, String>,
    limits: &Limits,
) -> Result<Vec<statecraft_engine::CallbackSignature>, ApiError> {
    if scripts.is_empty() {
        return Ok(Vec::new());
    }
    check_script_names(scripts)?;
    Ok(load_scripts(scripts, limits)?.signatures().to_vec())
}

#[cfg(test)]
pub(crate) mod tests;
