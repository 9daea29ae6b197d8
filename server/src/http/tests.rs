//! The API in-process: requests handed to the router without a socket, on a SQLite file or a
//! PostgreSQL schema of the test's own. What needs a real process (a kill, a restart, a stop, two
//! processes) is tested in `cli/tests/serve_*.rs`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body as RequestBody;
use axum::http::{Request, StatusCode};
use serde_json::{Value as Json, json};
use statecraft_engine::Limits;
use tower::ServiceExt;

use super::{App, app};
use crate::active_games::{ActiveGames, CacheBounds};
use crate::db::Database;
use crate::guard::Policy;
use crate::writer::Writer;

mod api;
mod cards;
mod inspector;
mod limits;
mod owners;
mod prompts;
mod scenarios;
mod sync;
mod wire;

// The PostgreSQL set-up every test of the server and the command shares.
pub(crate) use statecraft_test_support::pg_schema::PgSchema;

/// A server in this process, with the runtime its handlers need.
pub(crate) struct Harness {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    _dir: Option<tempfile::TempDir>,
    _schema: Option<PgSchema>,
}

/// An answer as sent: its status, headers and body text.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) status: StatusCode,
    pub(crate) headers: axum::http::HeaderMap,
    pub(crate) text: String,
}

impl Fetched {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

/// An answer: its status, its headers and its body as JSON.
#[derive(Debug)]
pub(crate) struct Answered {
    pub(crate) status: StatusCode,
    pub(crate) headers: axum::http::HeaderMap,
    pub(crate) body: Json,
}

impl Answered {
    pub(crate) fn kind(&self) -> &str {
        self.body["error"]["kind"].as_str().unwrap_or("")
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

/// How a harness's server is set up: what `statecraft serve`'s options set. `Options::default()` is
/// a test's server: no token, no browser origin, at most 100 games, 30 s per request, 1 MiB bodies,
/// 100 games or 256 MiB in memory, the engine's default limits and the default record limit;
/// `Options::serve()` is `statecraft serve`'s own defaults.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) token: Option<String>,
    pub(crate) origins: Vec<String>,
    pub(crate) max_games: u64,
    pub(crate) request_timeout: Duration,
    pub(crate) max_body: usize,
    pub(crate) cache: CacheBounds,
    pub(crate) limits: Limits,
    pub(crate) max_record_bytes: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            token: None,
            origins: Vec::new(),
            max_games: 100,
            request_timeout: Duration::from_secs(30),
            max_body: 1 << 20,
            cache: CacheBounds {
                max_active: 100,
                max_memory: 1 << 28,
            },
            limits: Limits::default(),
            max_record_bytes: crate::Config::new().max_record_bytes,
        }
    }
}

impl Options {
    /// The options `statecraft serve` starts with by default ([`crate::Config::new`]).
    pub(crate) fn serve() -> Options {
        let config = crate::Config::new();
        Options {
            token: config.token,
            origins: config.allow_origins,
            max_games: config.max_games,
            request_timeout: config.request_timeout,
            max_body: config.max_body,
            cache: config.cache,
            limits: config.limits,
            max_record_bytes: config.max_record_bytes,
        }
    }
}

impl Harness {
    /// A server on a new SQLite file.
    pub(crate) fn sqlite(max_games: u64) -> Harness {
        Harness::sqlite_with(Options {
            max_games,
            ..Options::default()
        })
    }

    /// A server on a new SQLite file, set up as `options` say.
    pub(crate) fn sqlite_with(options: Options) -> Harness {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let database = Database::Sqlite(dir.path().join("games.db"));
        Harness::build(&database, options, Some(dir), None)
    }

    /// A server on a PostgreSQL schema of its own, or `None` (said) when PostgreSQL is not usable.
    pub(crate) fn postgres(test: &str, max_games: u64) -> Option<Harness> {
        let schema = PgSchema::new(test)?;
        let database = Database::Postgres(schema.url.clone());
        let options = Options {
            max_games,
            ..Options::default()
        };
        Some(Harness::build(&database, options, None, Some(schema)))
    }

    /// A server on a database another harness may use too, as another process would.
    fn on(
        database: &Database,
        max_games: u64,
        dir: Option<tempfile::TempDir>,
        schema: Option<PgSchema>,
    ) -> Harness {
        let options = Options {
            max_games,
            ..Options::default()
        };
        Harness::build(database, options, dir, schema)
    }

    fn build(
        database: &Database,
        options: Options,
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
        let state = Arc::new(App {
            games: ActiveGames::new(
                Arc::clone(&storage),
                writer.clone(),
                options.limits.clone(),
                options.cache,
                options.max_record_bytes,
            ),
            storage,
            writer,
            policy: Policy {
                token: options.token,
                origins: options.origins,
            },
            limits: options.limits,
            max_games: options.max_games,
            request_timeout: options.request_timeout,
        });
        Harness {
            runtime,
            router: app(state, options.max_body),
            _dir: dir,
            _schema: schema,
        }
    }

    /// Sends a request with a body of raw text and extra headers (a `Host` among them replaces the
    /// loopback one every request has), and returns the answer as sent.
    pub(crate) fn fetch(
        &self,
        method: &str,
        uri: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> Fetched {
        let mut request = Request::builder().method(method).uri(uri);
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            request = request.header("host", "127.0.0.1");
        }
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
            let headers = response.headers().clone();
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .expect("a body");
            let text = String::from_utf8_lossy(&bytes).into_owned();
            Fetched {
                status,
                headers,
                text,
            }
        })
    }

    /// Sends a request with a body of raw text and extra headers; the answer must be JSON.
    pub(crate) fn raw(
        &self,
        method: &str,
        uri: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> Answered {
        let answer = self.fetch(method, uri, body, headers);
        let content_type = answer.header("content-type").unwrap_or("");
        let (status, text) = (answer.status, &answer.text);
        assert!(
            content_type.starts_with("application/json"),
            "{status}: not JSON ({content_type:?}): {text:?}"
        );
        let body = serde_json::from_str(text)
            .unwrap_or_else(|error| panic!("{status}: not JSON ({error}): {text:?}"));
        Answered {
            status,
            headers: answer.headers,
            body,
        }
    }

    /// Sends a request with a JSON body (or none).
    pub(crate) fn call(&self, method: &str, uri: &str, body: Option<&Json>) -> Answered {
        self.call_with(method, uri, body, &[])
    }

    /// Sends a request with a JSON body (or none) and extra headers.
    pub(crate) fn call_with(
        &self,
        method: &str,
        uri: &str,
        body: Option<&Json>,
        headers: &[(&str, &str)],
    ) -> Answered {
        let text = body.map(Json::to_string).unwrap_or_default();
        self.raw(method, uri, &text, headers)
    }

    /// Creates a game and returns its id.
    pub(crate) fn create(&self, body: &Json) -> String {
        let answer = self.call("POST", "/v1/games", Some(body));
        assert_eq!(answer.status, StatusCode::CREATED, "{:?}", answer.body);
        answer.body["id"].as_str().expect("an id").to_owned()
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

/// docs/http.md: a query parameter where the endpoint takes none is a 400, the health check included
/// (a monitor's `?probe=1` is refused the same way as `?dry_run=true` on an apply).
#[test]
fn a_query_parameter_is_refused_where_the_endpoint_takes_none() {
    let server = Harness::sqlite(100);
    assert_eq!(
        server.raw("GET", "/v1/health", "", &[]).status,
        StatusCode::OK
    );
    let id = server.create(&json!({"state": {}}));
    for (method, uri) in [
        ("GET", "/v1/health?x=1".to_owned()),
        ("GET", format!("/v1/games/{id}/log?x=1")),
        ("DELETE", format!("/v1/games/{id}?really=no")),
    ] {
        let answer = server.raw(method, &uri, "", &[]);
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(answer.kind(), "bad_request", "{uri}");
    }
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

#[test]
fn a_member_given_twice_anywhere_in_a_body_is_refused_by_name() {
    let server = Harness::sqlite(100);
    let id = server.create(&json!({"state": {"n": 0}}));
    let apply = format!("/v1/games/{id}/apply");
    let body = r#"{"batch": [{"op": "increment", "path": ["n"], "value": 1, "value": 1000}]}"#;
    let answer = server.raw("POST", &apply, body, &[]);
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{:?}", answer.body);
    assert_eq!(answer.kind(), "bad_request");
    let message = answer.body["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("\"value\" is given twice in the object at /batch/0"),
        "{message}"
    );
    // Nested in a value, or in a game's state: the same.
    let nested = r#"{"batch": [{"op": "assign", "path": ["m"], "value": {"a": 1, "a": 2}}]}"#;
    let answer = server.raw("POST", &apply, nested, &[]);
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{:?}", answer.body);
    let answer = server.raw("POST", "/v1/games", r#"{"state": {"n": 1, "n": 2}}"#, &[]);
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{:?}", answer.body);
    let show = server.call("GET", &format!("/v1/games/{id}"), None);
    assert_eq!(show.body["state"], json!({"n": 0}), "nothing was applied");
    // A batch given to convert as JSON text is refused at its instruction and member.
    let text = r#"[{"op": "increment", "path": ["n"], "value": 1, "value": 1000}]"#;
    let answer = server.call(
        "POST",
        "/v1/convert",
        Some(&json!({"input": text, "from": "json", "to": "mvu"})),
    );
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        answer.body
    );
    assert_eq!(answer.body["errors"][0]["instruction"], json!([0]));
    assert_eq!(answer.body["errors"][0]["field"], json!("/value"));
}

#[test]
fn a_label_holding_nul_is_refused_on_either_database() {
    let mut servers = vec![("sqlite", Harness::sqlite(100))];
    servers.extend(Harness::postgres("nul_label", 100).map(|server| ("postgres", server)));
    for (name, server) in &servers {
        let id = server.create(&json!({"state": {"n": 0}}));
        let apply = format!("/v1/games/{id}/apply");
        let body =
            json!({"batch": [{"op": "increment", "path": ["n"], "value": 1}], "label": "a\u{0}b"});
        let answer = server.call("POST", &apply, Some(&body));
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{name}: {:?}",
            answer.body
        );
        let message = answer.body["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("U+0000"), "{name}: {message}");
        let answer = server.raw("GET", "/v1/games?after=a%00", "", &[]);
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{name}: {:?}",
            answer.body
        );
        // NUL inside the state is kept: the state is stored as JSON text, where it is escaped.
        let body = json!({"batch": [{"op": "assign", "path": ["s\u{0}"], "value": "x\u{0}y"}]});
        let answer = server.call("POST", &apply, Some(&body));
        assert_eq!(answer.status, StatusCode::OK, "{name}: {:?}", answer.body);
        let show = server.call("GET", &format!("/v1/games/{id}"), None);
        assert_eq!(
            show.body["state"],
            json!({"n": 0, "s\u{0}": "x\u{0}y"}),
            "{name}"
        );
    }
}

#[test]
fn concurrent_creates_never_pass_the_game_limit() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let sqlite = Database::Sqlite(dir.path().join("games.db"));
    let schema = PgSchema::new("max_games");
    let mut databases = vec![("sqlite", sqlite)];
    if let Some(schema) = &schema {
        databases.push(("postgres", Database::Postgres(schema.url.clone())));
    }
    for (name, database) in &databases {
        // Two servers on one database, as two processes: 30 creates race over both.
        let first = Harness::on(database, 5, None, None);
        let second = Harness::on(database, 5, None, None);
        let statuses: Vec<StatusCode> = std::thread::scope(|scope| {
            let calls: Vec<_> = (0..30)
                .map(|n| {
                    let server = if n % 2 == 0 { &first } else { &second };
                    scope.spawn(move || {
                        server
                            .call("POST", "/v1/games", Some(&json!({"state": {"n": n}})))
                            .status
                    })
                })
                .collect();
            calls
                .into_iter()
                .map(|call| call.join().expect("a call"))
                .collect()
        });
        let made = statuses
            .iter()
            .filter(|status| **status == StatusCode::CREATED)
            .count();
        let full = statuses
            .iter()
            .filter(|status| **status == StatusCode::INSUFFICIENT_STORAGE)
            .count();
        assert_eq!((made, full), (5, 25), "{name}: {statuses:?}");
        let listed = first.call("GET", "/v1/games", None).body["games"]
            .as_array()
            .map(Vec::len);
        assert_eq!(listed, Some(5), "{name}");
    }
}

#[test]
fn a_create_retried_after_its_game_was_deleted_answers_409() {
    let mut servers = vec![("sqlite", Harness::sqlite(100))];
    servers.extend(Harness::postgres("spent_key", 100).map(|server| ("postgres", server)));
    for (name, server) in &servers {
        let body = r#"{"state": {"n": 0}}"#;
        let key = [("Idempotency-Key", "make-1")];
        let made = server.raw("POST", "/v1/games", body, &key);
        assert_eq!(made.status, StatusCode::CREATED, "{name}");
        let again = server.raw("POST", "/v1/games", body, &key);
        assert_eq!(
            again.body, made.body,
            "{name}: a retry while the game lives replays"
        );
        let id = made.body["id"].as_str().expect("an id").to_owned();
        let deleted = server.call("DELETE", &format!("/v1/games/{id}"), None);
        assert_eq!(deleted.status, StatusCode::OK, "{name}");
        let after = server.raw("POST", "/v1/games", body, &key);
        assert_eq!(
            after.status,
            StatusCode::CONFLICT,
            "{name}: {:?}",
            after.body
        );
        assert_eq!(after.kind(), "game_deleted", "{name}");
        let message = after.body["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(&id), "{name}: {message}");
        // Another request under the key is still told the key was used for another request.
        let other = server.raw("POST", "/v1/games", r#"{"state": {"n": 1}}"#, &key);
        assert_eq!(other.kind(), "idempotency_key_reused", "{name}");

        // A game made again under the id of a deleted one is not the game the first key made.
        let named = r#"{"state": {"n": 0}, "id": "again"}"#;
        let first = server.raw("POST", "/v1/games", named, &[("Idempotency-Key", "k1")]);
        assert_eq!(first.status, StatusCode::CREATED, "{name}");
        server.call("DELETE", "/v1/games/again", None);
        let second = server.raw("POST", "/v1/games", named, &[("Idempotency-Key", "k2")]);
        assert_eq!(second.status, StatusCode::CREATED, "{name}");
        let retry = server.raw("POST", "/v1/games", named, &[("Idempotency-Key", "k1")]);
        assert_eq!(retry.kind(), "game_deleted", "{name}: {:?}", retry.body);
        let retry = server.raw("POST", "/v1/games", named, &[("Idempotency-Key", "k2")]);
        assert_eq!(
            retry.status,
            StatusCode::CREATED,
            "{name}: {:?}",
            retry.body
        );
    }
}

/// A V2 card in the shape of MVU's example cards: value-description pairs, a locked character, an
/// open, templated list of characters, and the `<user>` macro.
pub(crate) fn mvu_card() -> Json {
    let initvar = "```yaml\n<user>:\n  金钱: 50\n  背包: [绳子, $__META_EXTENSIBLE__$]\nMira:\n  好感度: [10, \"-100 to 100\"]\n  心情: 平静\nNPC:\n  $meta:\n    extensible: true\n    template: {好感度: 0, 心情: 平静}\n  小林: {好感度: 5, 心情: 开心}\n```";
    json!({
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "Mira",
            "character_book": {"entries": [
                {"keys": [], "comment": "[InitVar] start", "content": initvar, "enabled": false}
            ]}
        }
    })
}

/// The same card as a PNG's `chara` chunk, as `{"png": BASE64}`.
fn mvu_card_png() -> Json {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let chunk = engine.encode(mvu_card().to_string());
    let png = statecraft_translators::card::png_with_text(&[("chara", &chunk)]);
    json!({"png": engine.encode(png)})
}

#[test]
fn games_from_cards_follow_mvu_and_answer_mvus_views_on_either_database() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let sqlite = Database::Sqlite(dir.path().join("games.db"));
    let schema = PgSchema::new("cards");
    let mut databases = vec![("sqlite", sqlite)];
    if let Some(schema) = &schema {
        databases.push(("postgres", Database::Postgres(schema.url.clone())));
    }
    for (name, database) in &databases {
        let server = Harness::on(database, 100, None, None);
        let from_json =
            server.create(&json!({"card": mvu_card(), "macros": {"user": "Alex"}, "id": "mira"}));
        let from_png = server.create(&json!({"card": mvu_card_png(), "macros": {"user": "Alex"}}));
        let first = server.call("GET", &format!("/v1/games/{from_json}"), None);
        let second = server.call("GET", &format!("/v1/games/{from_png}"), None);
        assert_eq!(first.body["state"], second.body["state"], "{name}");
        assert_eq!(
            first.body["state"]["Mira"],
            json!({"好感度": [10, "-100 to 100"], "心情": "平静"}),
            "{name}"
        );
        // One reply: a pair, a misspelt path, a locked object, a template, a bad command.
        let reply = "_.set('Mira.好感度', 10, 15);//笑了\n_.set('Mira.心晴', '好');\n_.insert('Alex', '魔力', 5);\n_.insert('NPC', '阿明', {\"好感度\": 3});\n_.add('Alex.背包', 1);\n_.add('Alex.金钱', -20);//买花";
        let applied = server.call(
            "POST",
            "/v1/games/mira/apply",
            Some(&json!({"input": reply, "label": "m1"})),
        );
        assert_eq!(applied.status, StatusCode::OK, "{name}: {:?}", applied.body);
        let warnings: Vec<&str> = applied.body["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["kind"].as_str().unwrap())
            .collect();
        assert_eq!(warnings, ["schema_violation", "type_mismatch"], "{name}");
        let diagnostics = applied.body["diagnostics"].to_string();
        assert!(
            diagnostics.contains("mvu_missing_path"),
            "{name}: {diagnostics}"
        );
        // Another server on the same database rebuilds the game with its profile and views.
        drop(server);
        let again = Harness::on(database, 100, None, None);
        let view = again.call("GET", "/v1/games/mira?view=mvu", None);
        assert_eq!(view.status, StatusCode::OK, "{name}: {:?}", view.body);
        assert_eq!(view.body["step"], 1, "{name}");
        assert_eq!(view.body["label"], "m1", "{name}");
        assert_eq!(
            view.body["delta_data"],
            json!({
                "Mira": {"好感度": "10->15 (笑了)"},
                "NPC": "ASSIGNED key '阿明' with value {\"好感度\":3,\"心情\":\"平静\"} into object 'NPC' ",
                "Alex": {"金钱": "50->30 (买花)"}
            }),
            "{name}"
        );
        assert_eq!(
            view.body["display_data"]["Alex"]["背包"],
            json!(["绳子"]),
            "{name}"
        );
        assert_eq!(view.body["display_data"]["Mira"]["心情"], "平静", "{name}");
        assert_eq!(view.body["stat_data"]["Alex"]["金钱"], 30, "{name}");
        let next = again.call(
            "POST",
            "/v1/games/mira/apply",
            Some(&json!({"input": "_.set('nowhere', 1);\n_.set('Mira.心情', '开心');"})),
        );
        assert_eq!(next.status, StatusCode::OK, "{name}: {:?}", next.body);
        let shown = again.call("GET", "/v1/games/mira", None);
        assert_eq!(shown.body["state"].get("nowhere"), None, "{name}");
        let undone = again.call("POST", "/v1/games/mira/undo", None);
        assert_eq!(undone.status, StatusCode::OK, "{name}");
        let root = again.call("POST", "/v1/games/mira/checkout", Some(&json!({"to": 0})));
        assert_eq!(root.status, StatusCode::OK, "{name}");
        let view = again.call("GET", "/v1/games/mira?view=mvu", None);
        assert_eq!(
            view.body["delta_data"],
            json!({}),
            "{name}: the root changed nothing"
        );
        assert_eq!(view.body["display_data"], view.body["stat_data"], "{name}");
        again.call("DELETE", "/v1/games/mira", None);
        again.call("DELETE", &format!("/v1/games/{from_png}"), None);
    }
}

#[test]
fn a_game_request_with_a_bad_card_profile_or_view_is_refused() {
    let server = Harness::sqlite(100);
    for (body, status, kind) in [
        (json!({"card": [1]}), StatusCode::BAD_REQUEST, "bad_request"),
        (
            json!({"card": {"png": "%%"}}),
            StatusCode::BAD_REQUEST,
            "bad_request",
        ),
        (
            json!({"card": "- 1\n- 2"}),
            StatusCode::BAD_REQUEST,
            "bad_request",
        ),
        (
            json!({"state": {}, "card": mvu_card()}),
            StatusCode::BAD_REQUEST,
            "bad_request",
        ),
        (json!({}), StatusCode::BAD_REQUEST, "bad_request"),
        (
            json!({"state": {}, "profile": "lenient"}),
            StatusCode::BAD_REQUEST,
            "bad_request",
        ),
    ] {
        let answer = server.call("POST", "/v1/games", Some(&body));
        assert_eq!(answer.status, status, "{body}: {:?}", answer.body);
        assert_eq!(answer.kind(), kind, "{body}");
    }
    // A plain game may follow mvu too; a card game may be strict.
    let plain = server.create(&json!({"state": {"hp": [10, "d"], "s": "x"}, "profile": "mvu"}));
    let applied = server.call(
        "POST",
        &format!("/v1/games/{plain}/apply"),
        Some(&json!({"input": "_.set('hp', 9);\n_.add('s', 1);"})),
    );
    assert_eq!(applied.status, StatusCode::OK, "{:?}", applied.body);
    assert_eq!(
        applied.body["changes"][0]["path"],
        json!(["hp", 0]),
        "the pair's value"
    );
    let strict = server.create(&json!({"card": mvu_card(), "profile": "strict"}));
    let refused = server.call(
        "POST",
        &format!("/v1/games/{strict}/apply"),
        Some(&json!({"input": "_.add('Mira.心情', 1);"})),
    );
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        refused.body
    );
    let view = server.call("GET", &format!("/v1/games/{plain}?view=other"), None);
    assert_eq!(view.status, StatusCode::BAD_REQUEST, "{:?}", view.body);
    let view = server.call("GET", &format!("/v1/games/{plain}?views=mvu"), None);
    assert_eq!(view.status, StatusCode::BAD_REQUEST, "{:?}", view.body);
}
