//! `statecraft serve`: the HTTP API of docs/http.md, from the `statecraft-server` crate.
//!
//! This module owns the command's options and its logs: it turns the arguments into a
//! `statecraft_server::Config`, installs the `tracing` subscriber (text or JSON lines on stderr), prints
//! `listening on http://ADDR` (under `--format json`, `{"listening": "http://ADDR"}`) on stdout once
//! requests are accepted (scripts and tests read the port from it), and runs the server until SIGINT or SIGTERM. It must not serve anything itself.

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde_json::json;
use statecraft_server::{CacheBounds, Config, ConnectionBounds, Database, shared_limits};

use crate::render::Output;

/// How logs are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// One readable line per event.
    Text,
    /// One JSON object per event.
    Json,
}

/// The least severe log events written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogLevel {
    /// Failures only.
    Error,
    /// Failures and warnings.
    Warn,
    /// One line per request, with its id, status and time.
    Info,
    /// Also group commits and game loads.
    Debug,
}

/// `statecraft serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Where games are stored: sqlite:PATH (embedded) or postgres://USER@HOST/DB (shared).
    #[arg(long, value_name = "URL", default_value = "sqlite:statecraft.db")]
    pub(crate) db: String,

    /// The address and port to listen on; port 0 picks a free one.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8765")]
    pub(crate) listen: SocketAddr,

    /// The bearer token every request must carry; required on any address but loopback.
    #[arg(
        long,
        value_name = "T",
        env = "STATECRAFT_TOKEN",
        hide_env_values = true
    )]
    pub(crate) token: Option<String>,

    /// A browser origin allowed to call the API (CORS), like http://localhost:8000; `*` allows any.
    /// Repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub(crate) allow_origin: Vec<String>,

    /// The largest request body, in bytes (larger ones answer 413).
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20)]
    pub(crate) max_body: usize,

    /// The most games the database may hold (creating more answers 507).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub(crate) max_games: u64,

    /// The longest a request may take, in seconds (a fraction like 0.5 too), waiting included
    /// (then 503).
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = seconds)]
    pub(crate) request_timeout: Duration,

    /// The most games kept in memory; the least recently used idle ones are dropped first.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub(crate) max_active_games: usize,

    /// About how much memory, in MiB, the games in memory may hold together.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub(crate) max_active_memory: usize,

    /// Also stop (as on SIGTERM) when standard input closes: for a parent process that starts the
    /// server with a pipe, such as the SillyTavern plugin, so that the server ends with it.
    #[arg(long)]
    pub(crate) stop_on_stdin_close: bool,

    #[command(flatten)]
    pub(crate) connections: ConnectionArgs,

    /// How to write logs (on stderr); without it, JSON lines under `--format json` and text otherwise.
    #[arg(long, value_enum)]
    pub(crate) log_format: Option<LogFormat>,

    /// The least severe log events written.
    #[arg(long, value_enum, default_value_t = LogLevel::Info)]
    pub(crate) log_level: LogLevel,

    #[command(flatten)]
    pub(crate) limits: LimitArgs,
}

/// What one request may make a game hold, carry and cost (docs/http.md, "Limits").
#[derive(Debug, Args)]
#[command(next_help_heading = "Limits")]
pub(crate) struct LimitArgs {
    /// The largest state a game may grow to, in bytes as the engine estimates them (422
    /// `state_too_large`).
    #[arg(long, value_name = "BYTES", default_value_t = shared_limits().max_state_bytes)]
    pub(crate) max_state_bytes: usize,

    /// The most bytes one instruction may write into the state; a `copy` writes what it copies (422
    /// `op_too_large`).
    #[arg(long, value_name = "BYTES", default_value_t = shared_limits().max_op_bytes)]
    pub(crate) max_op_bytes: usize,

    /// The most bytes one request's changes (old and new values) and events may carry: what its
    /// answer and its stored step spell out (422 `commit_too_large`).
    #[arg(long, value_name = "BYTES", default_value_t = shared_limits().max_commit_bytes)]
    pub(crate) max_commit_bytes: usize,

    /// The longest string in a value, key or reason, in bytes (422 `string_too_long`).
    #[arg(long, value_name = "BYTES", default_value_t = shared_limits().max_string_bytes)]
    pub(crate) max_string_bytes: usize,

    /// The longest step label, in bytes (422 `label_too_long`).
    #[arg(long, value_name = "BYTES", default_value_t = shared_limits().max_label_bytes)]
    pub(crate) max_label_bytes: usize,

    /// The most instructions in one request's batch (422 `batch_too_long`).
    #[arg(long, value_name = "N", default_value_t = shared_limits().max_batch_len)]
    pub(crate) max_batch_len: usize,

    /// The most instructions scripts may emit in one batch (422 `too_many_emitted`).
    #[arg(long, value_name = "N", default_value_t = shared_limits().max_emitted)]
    pub(crate) max_emitted: usize,

    /// Interpreter steps one script call may run.
    #[arg(long, value_name = "N", default_value_t = shared_limits().max_callback_steps)]
    pub(crate) max_script_steps: u64,

    /// Seconds one script call may take (a fraction like 0.5 too); the whole batch is bounded by
    /// --request-timeout.
    #[arg(long, value_name = "SECONDS", default_value = "1", value_parser = seconds)]
    pub(crate) max_script_time: Duration,

    /// Memory one game's scripts may hold while a call runs, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = shared_limits().max_callback_memory >> 20)]
    pub(crate) max_script_memory: usize,

    /// The longest record one request may store, in bytes of JSON, at most 536870912 (422 with
    /// `record_too_large`).
    #[arg(long, value_name = "BYTES", default_value_t = Config::new().max_record_bytes)]
    pub(crate) max_record_bytes: usize,
}

impl LimitArgs {
    /// The engine's limits these options set, over [`shared_limits`].
    fn engine(&self) -> statecraft_engine::Limits {
        statecraft_engine::Limits {
            max_state_bytes: self.max_state_bytes,
            max_op_bytes: self.max_op_bytes,
            max_commit_bytes: self.max_commit_bytes,
            max_string_bytes: self.max_string_bytes,
            max_label_bytes: self.max_label_bytes,
            max_batch_len: self.max_batch_len,
            max_emitted: self.max_emitted,
            max_callback_steps: self.max_script_steps,
            max_callback_time: self.max_script_time,
            max_callback_memory: self.max_script_memory.saturating_mul(1 << 20),
            ..shared_limits()
        }
    }
}

/// Bounds on connections and on the stop (see `statecraft_server::ConnectionBounds`).
#[derive(Debug, Args)]
pub(crate) struct ConnectionArgs {
    /// The most connections open at once; more wait until one closes. Default: what the open-file
    /// limit leaves room for, at most 1024.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub(crate) max_connections: Option<usize>,

    /// The longest a client may take to send a request's headers, in seconds, from its connection or
    /// its first byte after an idle spell (then the connection is closed).
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = seconds)]
    pub(crate) header_timeout: Duration,

    /// The longest a request's body may take to arrive, in seconds, after its headers (then 408).
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = seconds)]
    pub(crate) body_timeout: Duration,

    /// The longest a connection may stay open between requests, in seconds.
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = seconds)]
    pub(crate) idle_timeout: Duration,

    /// After SIGTERM or SIGINT, the longest the requests in flight may take to finish, in seconds;
    /// then the server stops without them (none of them was answered).
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = seconds)]
    pub(crate) shutdown_grace: Duration,
}

/// Runs the server until it is told to stop.
pub(crate) fn run(args: &ServeArgs, out: &Output) -> Result<ExitCode> {
    let database = Database::parse(&args.db)?;
    let mut config = Config {
        listen: args.listen,
        database,
        token: args.token.clone(),
        allow_origins: args.allow_origin.clone(),
        max_body: args.max_body,
        max_games: args.max_games,
        request_timeout: args.request_timeout,
        cache: CacheBounds {
            max_active: args.max_active_games.max(1),
            max_memory: args.max_active_memory.saturating_mul(1 << 20),
        },
        connections: ConnectionBounds {
            max_connections: args.connections.max_connections,
            header_timeout: args.connections.header_timeout,
            body_timeout: args.connections.body_timeout,
            idle_timeout: args.connections.idle_timeout,
            shutdown_grace: args.connections.shutdown_grace,
        },
        stop_on_stdin_close: args.stop_on_stdin_close,
        ..Config::new()
    };
    config.limits = args.limits.engine();
    config.max_record_bytes = args.limits.max_record_bytes;
    statecraft_server::check(&config)?;
    install_logs(args, out);
    let json_out = out.json();
    statecraft_server::serve(config, move |address| {
        // The one line on stdout; a closed stdout must not stop a server that is already listening.
        let mut stdout = std::io::stdout().lock();
        let _ = if json_out {
            writeln!(
                stdout,
                "{}",
                json!({"listening": format!("http://{address}")})
            )
        } else {
            writeln!(stdout, "listening on http://{address}")
        };
        let _ = stdout.flush();
    })
    .context("the server stopped")?;
    Ok(ExitCode::SUCCESS)
}

fn install_logs(args: &ServeArgs, out: &Output) {
    let level = match args.log_level {
        LogLevel::Error => tracing_subscriber::filter::LevelFilter::ERROR,
        LogLevel::Warn => tracing_subscriber::filter::LevelFilter::WARN,
        LogLevel::Info => tracing_subscriber::filter::LevelFilter::INFO,
        LogLevel::Debug => tracing_subscriber::filter::LevelFilter::DEBUG,
    };
    let logs = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false);
    let format = args.log_format.unwrap_or(if out.json() {
        LogFormat::Json
    } else {
        LogFormat::Text
    });
    let _ = match format {
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => logs.json().try_init(),
    };
}

/// Reads a positive number of seconds, such as `30` or `0.25`.
fn seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(seconds > 0.0 && seconds <= 86_400.0) {
        return Err(format!(
            "{text} seconds is out of range: give more than 0 and at most 86400"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Reads a count of at least one.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("give at least 1".to_owned()),
        Ok(count) => Ok(count),
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}
