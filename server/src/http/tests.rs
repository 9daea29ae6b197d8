//! The API in-process: requests handed to the router without a socket, on a SQLite file or a
//! PostgreSQL schema of the test's own. What needs a real process (a kill, two processes) is tested in
//! `cli/tests/serve_*.rs`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body as RequestBody;
use axum::http::{Request, StatusCode};
use serde_json::{Value as Json, json};
use statecraft_engine::Limits;
use tower::ServiceExt;

use super::{App, app};
use crate::db::Database;
use crate::games::{CacheBounds, Games};
use crate::guard::Policy;
use crate::writer::Writer;

/// A server in this process, with the runtime its handlers need.
pub(crate) struct Harness {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    _dir: Option<tempfile::TempDir>,
    _schema: Option<PgSchema>,
}

/// An answer: its status and its body as JSON.
#[derive(Debug)]
pub(crate) struct Answered {
    pub(crate) status: StatusCode,
    pub(crate) body: Json,
}

impl Answered {
    pub(crate) fn kind(&self) -> &str {
        self.body["error"]["kind"].as_str().unwrap_or("")
    }
}

impl Harness {
    /// A server on a new SQLite file.
    pub(crate) fn sqlite(max_games: u64) -> Harness {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let database = Database::Sqlite(dir.path().join("games.db"));
        Harness::on(&database, max_games, Some(dir), None)
    }

    /// A server on a PostgreSQL schema of its own, or `None` (said) when PostgreSQL is not usable.
    pub(crate) fn postgres(test: &str, max_games: u64) -> Option<Harness> {
        let schema = PgSchema::new(test)?;
        let database = Database::Postgres(schema.url.clone());
        Some(Harness::on(&database, max_games, None, Some(schema)))
    }

    fn on(
        database: &Database,
        max_games: u64,
        dir: Option<tempfile::TempDir>,
        schema: Option<PgSchema>,
    ) -> Harness {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let storage = database.open().expect("the database opens");
        let (writer, _thread) = Writer::start(Arc::clone(&storage));
        let limits = Limits::default();
        let bounds = CacheBounds {
            max_active: 100,
            max_memory: 1 << 28,
        };
        let state = Arc::new(App {
            games: Games::new(Arc::clone(&storage), writer.clone(), limits.clone(), bounds),
            storage,
            writer,
            policy: Policy {
                token: None,
                origins: Vec::new(),
            },
            limits,
            max_games,
            request_timeout: Duration::from_secs(30),
        });
        Harness {
            runtime,
            router: app(state, 1 << 20),
            _dir: dir,
            _schema: schema,
        }
    }

    /// Sends a request with a body of raw text and extra headers.
    pub(crate) fn raw(
        &self,
        method: &str,
        uri: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> Answered {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "127.0.0.1");
        if !body.is_empty() {
            request = request.header("content-type", "application/json");
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(RequestBody::from(body.to_owned()))
            .expect("a request");
        let router = self.router.clone();
        self.runtime.block_on(async move {
            let response = router.oneshot(request).await.expect("an answer");
            let status = response.status();
            let content_type = response
                .headers()
                .get("content-type")
                .and_then(|value| value.to_str().ok())
                .unwrap_or("")
                .to_owned();
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .expect("a body");
            let text = String::from_utf8_lossy(&bytes).into_owned();
            assert!(
                content_type.starts_with("application/json"),
                "{status}: not JSON ({content_type:?}): {text:?}"
            );
            let body = serde_json::from_str(&text)
                .unwrap_or_else(|error| panic!("{status}: not JSON ({error}): {text:?}"));
            Answered { status, body }
        })
    }

    /// Sends a request with a JSON body (or none).
    pub(crate) fn call(&self, method: &str, uri: &str, body: Option<&Json>) -> Answered {
        let text = body.map(Json::to_string).unwrap_or_default();
        self.raw(method, uri, &text, &[])
    }

    /// Creates a game and returns its id.
    pub(crate) fn create(&self, body: &Json) -> String {
        let answer = self.call("POST", "/v1/games", Some(body));
        assert_eq!(answer.status, StatusCode::CREATED, "{:?}", answer.body);
        answer.body["id"].as_str().expect("an id").to_owned()
    }
}

/// A schema of its own in the test database, dropped when the handle drops.
pub(crate) struct PgSchema {
    pub(crate) url: String,
    name: String,
}

/// The PostgreSQL server the tests use: `STATECRAFT_TEST_POSTGRES`, or the local one.
fn postgres_url() -> String {
    std::env::var("STATECRAFT_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

impl PgSchema {
    /// Makes a schema for one test, or says why PostgreSQL cannot be used (then the test skips,
    /// visibly, and fails under CI).
    pub(crate) fn new(test: &str) -> Option<PgSchema> {
        let base = postgres_url();
        let name = format!("u_{test}_{}", std::process::id());
        let made = postgres::Client::connect(&base, postgres::NoTls).and_then(|mut client| {
            client.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name};"
            ))
        });
        if let Err(error) = made {
            let message = format!("PostgreSQL at {base} is not usable ({error}); skipping {test}");
            assert!(
                std::env::var_os("CI").is_none(),
                "{message} (a failure under CI)"
            );
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
            return None;
        }
        let separator = if base.contains('?') { '&' } else { '?' };
        Some(PgSchema {
            url: format!("{base}{separator}options=-csearch_path%3D{name}"),
            name,
        })
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&postgres_url(), postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE;", self.name));
        }
    }
}

#[test]
fn dot_segments_are_no_game_ids() {
    let server = Harness::sqlite(100);
    for id in [".", ".."] {
        let answer = server.call("POST", "/v1/games", Some(&json!({"state": {}, "id": id})));
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{id}: {:?}",
            answer.body
        );
        assert_eq!(answer.kind(), "bad_request");
        let message = answer.body["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("dot segment"), "{message}");
    }
    // Dots inside an id are still fine.
    assert_eq!(server.create(&json!({"state": {}, "id": "..a"})), "..a");
    assert_eq!(server.create(&json!({"state": {}, "id": "a.b"})), "a.b");
}

#[test]
fn every_refusal_has_the_json_error_shape() {
    let server = Harness::sqlite(100);
    let answer = server.raw("GET", "/v1/games/%FF", "", &[]);
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.kind(), "bad_request");
    let message = answer.body["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("game id"), "{message}");
    for uri in ["/v1/games/%FF/log", "/v1/games/%C3%28/state"] {
        let answer = server.raw("GET", uri, "", &[]);
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(answer.kind(), "bad_request", "{uri}");
    }
    let answer = server.raw("POST", "/v1/games/%FF/apply", "{}", &[]);
    assert_eq!(answer.kind(), "bad_request");
}
