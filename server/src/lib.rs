//! `statecraft serve`: the engine over HTTP, for front ends in any language and hosted platforms.
//!
//! [`serve`] opens the database (`db/`: SQLite by default, PostgreSQL for many processes), starts the
//! group-commit writer (`writer.rs`) and answers the API of docs/http.md (`http.rs`) behind the guard
//! (`guard.rs`: request ids, the `Host` and `Origin` checks, CORS, the bearer token), and serves the
//! inspector page at `/` (`inspector.rs`) behind the same guard, over connections bounded in number
//! and time (`conns.rs`: the accept loop, the header, body and idle clocks, the stop). Game requests
//! run on the game's own thread (`active_games.rs`), where its store and Lua VM live (`loaded_game.rs`); a change
//! is answered only once the database has it on disk. Every error a client sees has one shape
//! (`error.rs`). This crate is the only one with async code, HTTP and SQL: the engine, translators,
//! prompt kit, scripts and saves stay synchronous and free of them.

mod active_games;
mod answer;
mod conns;
mod db;
mod error;
mod guard;
mod http;
mod ids;
mod inspector;
mod loaded_game;
mod new_game;
mod prompting;
mod requests;
mod wire;
mod writer;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use statecraft_engine::Limits;

pub use active_games::CacheBounds;
pub use conns::{ConnectionBounds, DEFAULT_MAX_CONNECTIONS};
pub use db::{Database, DatabaseUrlError};
pub use error::{ApiError, Kind};

/// The version of the HTTP API, in `GET /v1/health` and `statecraft --version`: the SillyTavern plugin
/// starts only a binary of its own API version, and the number is raised with any change to the API
/// that the plugin and the extension of the same release rely on (docs/http.md).
pub const API_VERSION: u32 = 1;

/// How to run the server.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to listen. Anything but a loopback address needs a token.
    pub listen: SocketAddr,
    /// Where games are stored.
    pub database: Database,
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
    /// Browser origins allowed to call the API (`*` for any).
    pub allow_origins: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// The most games the database may hold (creating more answers 507).
    pub max_games: u64,
    /// The longest a request may take, waiting included.
    pub request_timeout: Duration,
    /// Bounds on the games kept in memory.
    pub cache: CacheBounds,
    /// The engine's limits for every game (batch sizes, script time and memory); [`shared_limits`]
    /// by default.
    pub limits: Limits,
    /// Bounds on connections (how many, how long each phase may take) and on the stop.
    pub connections: ConnectionBounds,
    /// The longest record one request may store, in bytes of JSON (at most [`MAX_RECORD_BYTES`]).
    pub max_record_bytes: usize,
    /// Whether the server also stops, as on `SIGTERM`, when its standard input closes: a parent that
    /// started it with a pipe (the SillyTavern plugin) takes it along when it ends, however it ends,
    /// and can ask for the stop on any platform by closing the pipe.
    pub stop_on_stdin_close: bool,
}

/// The engine's limits on a shared server, where one client must not make the process hold, write
/// or answer much more than it sent: states of 16 MiB, 4 MiB written by one instruction, 32 MiB
/// carried by one commit (its changes' old and new values and its events: what its answer and its
/// record spell out), strings of 256 KiB, labels of 256 bytes, 10,000 instructions emitted by
/// scripts in one batch; the others as the engine's defaults. Each is an option of `statecraft
/// serve` (docs/http.md).
pub fn shared_limits() -> Limits {
    Limits {
        max_state_bytes: 16 << 20,
        max_op_bytes: 4 << 20,
        max_commit_bytes: 32 << 20,
        max_string_bytes: 256 << 10,
        max_label_bytes: 256,
        max_emitted: 10_000,
        ..Limits::default()
    }
}

/// The largest `max_record_bytes`: both databases refuse a text over 1 GB, and a record's text is
/// held in memory whole while it is written.
pub const MAX_RECORD_BYTES: usize = 512 << 20;

impl Config {
    /// The defaults of `statecraft serve`: 127.0.0.1:8765, `sqlite:statecraft.db`, no token, no
    /// browser origin, 4 MiB bodies, 100,000 games, 30 s per request, 1,000 games or 1 GiB in memory,
    /// [`shared_limits`], records of 64 MiB and the connection bounds of [`ConnectionBounds::default`].
    pub fn new() -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8765)),
            database: Database::Sqlite("statecraft.db".into()),
            token: None,
            allow_origins: Vec::new(),
            max_body: 4 << 20,
            max_games: 100_000,
            request_timeout: Duration::from_secs(30),
            cache: CacheBounds {
                max_active: 1000,
                max_memory: 1 << 30,
            },
            connections: ConnectionBounds::default(),
            limits: shared_limits(),
            max_record_bytes: 64 << 20,
            stop_on_stdin_close: false,
        }
    }
}

impl Default for Config {
    fn default() -> Config {
        Config::new()
    }
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A listen address other than loopback without a token.
    #[error(
        "{0} is not a loopback address: anyone who can reach it could change every game, so the server \
         needs --token to listen there"
    )]
    NeedsToken(SocketAddr),
    /// The token is empty or has characters a header cannot carry.
    #[error("the token must be 1 to 1024 printable ASCII characters without spaces")]
    BadToken,
    /// The database could not be opened.
    #[error("cannot open the database {database}")]
    Database {
        /// The database, without a password.
        database: String,
        /// Why.
        source: statecraft_saves::StorageError,
    },
    /// The address could not be bound, or the server failed.
    #[error("cannot listen on {address}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// `--max-connections` leaves the database no files under the open-file limit.
    #[error(
        "--max-connections {asked} is more than the open-file limit of {files} leaves room for \
         ({room}, keeping files for the database); raise the limit (ulimit -n) or lower the option"
    )]
    TooManyConnections {
        /// The connections asked for.
        asked: usize,
        /// The open-file limit.
        files: u64,
        /// The most connections it leaves room for.
        room: usize,
    },
    /// The async runtime could not start.
    #[error("cannot start the runtime")]
    Runtime(#[source] std::io::Error),
    /// `max_record_bytes` past what a database takes.
    #[error(
        "the record limit {0} is more than the {MAX_RECORD_BYTES} bytes a database row may take"
    )]
    RecordLimit(usize),
}

/// Checks a configuration before anything starts.
pub fn check(config: &Config) -> Result<(), ServeError> {
    if let Some(token) = &config.token
        && (token.is_empty() || token.len() > 1024 || !token.bytes().all(|b| b.is_ascii_graphic()))
    {
        return Err(ServeError::BadToken);
    }
    if config.token.is_none() && !config.listen.ip().is_loopback() {
        return Err(ServeError::NeedsToken(config.listen));
    }
    max_connections(config)?;
    if config.max_record_bytes > MAX_RECORD_BYTES {
        return Err(ServeError::RecordLimit(config.max_record_bytes));
    }
    Ok(())
}

/// The most connections open at once: as asked, or as many as the open-file limit leaves room for
/// (at most [`DEFAULT_MAX_CONNECTIONS`]); more than that room is refused.
fn max_connections(config: &Config) -> Result<usize, ServeError> {
    let files = conns::file_limit();
    let room = conns::connection_room(files);
    match config.connections.max_connections {
        None => Ok(room.clamp(1, DEFAULT_MAX_CONNECTIONS)),
        Some(asked) if asked <= room => Ok(asked.max(1)),
        Some(asked) => Err(ServeError::TooManyConnections {
            asked,
            files: files.unwrap_or(u64::MAX),
            room,
        }),
    }
}

/// Runs the server until `SIGINT` or `SIGTERM`, then finishes the requests in flight and stops, within
/// the grace time (`ConnectionBounds::shutdown_grace`) after the signal.
/// `ready` is called with the bound address (the port chosen, for port 0) once requests are accepted.
pub fn serve(config: Config, ready: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    check(&config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("statecraft-http")
        .build()
        .map_err(ServeError::Runtime)?;
    let stdin = config.stop_on_stdin_close;
    let served = runtime.block_on(run(config, ready, shutdown_signal(stdin)));
    // Blocking work still running (a game being created, a stateless request) was never answered:
    // the grace time is over, so the process does not wait for it.
    runtime.shutdown_background();
    served
}

/// Resolves at `SIGINT` (Ctrl-C) or `SIGTERM`, and with `stdin` when standard input closes.
async fn shutdown_signal(stdin: bool) {
    let closed = async move {
        if !stdin {
            return std::future::pending().await;
        }
        let (tell, closed) = tokio::sync::oneshot::channel();
        // A thread of its own: a read of standard input blocks, and tokio's own stdin reader would
        // hold a runtime thread for it. Whatever is read is dropped; only the end matters.
        let spawned = std::thread::Builder::new()
            .name("statecraft-stdin".to_owned())
            .spawn(move || {
                let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
                let _ = tell.send(());
            });
        match spawned {
            Ok(_) => {
                let _ = closed.await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
            () = closed => tracing::info!("standard input closed: stopping"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::select! {
            _ = interrupt => {}
            () = closed => tracing::info!("standard input closed: stopping"),
        }
    }
}

async fn run(
    config: Config,
    ready: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let max_connections = max_connections(&config)?;
    let database = config.database.clone();
    let storage = tokio::task::spawn_blocking(move || database.open())
        .await
        .map_err(|error| ServeError::Runtime(std::io::Error::other(error)))?
        .map_err(|source| ServeError::Database {
            database: config.database.describe(),
            source,
        })?;
    let (writer, writer_thread) = writer::Writer::start(Arc::clone(&storage));
    let app = Arc::new(http::App {
        games: active_games::ActiveGames::new(
            Arc::clone(&storage),
            writer.clone(),
            config.limits.clone(),
            config.cache,
            config.max_record_bytes,
        ),
        storage,
        writer,
        policy: guard::Policy {
            token: config.token.clone(),
            origins: config.allow_origins.clone(),
        },
        limits: config.limits.clone(),
        max_games: config.max_games,
        request_timeout: config.request_timeout,
    });
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Listen {
            address: config.listen,
            source,
        })?;
    let address = listener.local_addr().map_err(|source| ServeError::Listen {
        address: config.listen,
        source,
    })?;
    tracing::info!(%address, database = %config.database.describe(), max_connections, "listening");
    ready(address);
    let router = http::app(Arc::clone(&app), config.max_body);
    let deadline = conns::serve(
        listener,
        router,
        config.connections,
        max_connections,
        shutdown,
    )
    .await;
    tracing::info!(
        active_games = app.games.active_count(),
        "stopping: the connections are closed"
    );
    // Every answered request's write is durable already. Dropping the games ends their threads once
    // their jobs are done, and the writer ends once the last of them lets go of it, after the writes
    // handed to it. A game still busy with a batch whose request was dropped (answered 503, or
    // abandoned at the end of the grace time) holds the writer open: nothing it does was
    // acknowledged, so the server stops at the deadline without it.
    app.games.close();
    drop(app);
    while !writer_thread.is_finished() {
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(
                "the grace time (--shutdown-grace) ran out while games were still busy: stopping \
                 without them; nothing they do now was acknowledged"
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = writer_thread.join();
    Ok(())
}
