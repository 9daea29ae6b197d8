//! Load benchmark for `statecraft serve` on loopback: 100 games, 32 concurrent clients on keep-alive
//! connections, each request a raw model reply of about 2 KB (prose, a fenced JSON batch with a
//! trailing comma to repair, an MVU line) applied durably. Reports throughput and p50/p99 latency.
//!
//! Run: `cargo bench -p statecraft --bench serve_load -- sqlite` (or `postgres`, which uses
//! `STATECRAFT_TEST_POSTGRES` or the local server on 127.0.0.1:5432, database `test`, in a schema of
//! its own that it drops; `postgres2` adds two server processes on one database, each serving half of
//! the games, after the one-process run). Bounded: 2 s of warm-up and 10 s of measurement per database, only to
//! 127.0.0.1. Not part of CI.
//!
//! `-- games` opens 10,000 games one after another on SQLite under `--max-active-games` 100 and 1,000
//! and reports the server's resident memory along the way.
//!
//! `-- sync` measures `POST /v1/games/{id}/sync` on SQLite instead: the first sync of a 1,000-reply
//! chat (2 KB replies, a state of 10,000 keys), then, once every reply has two more swipes in the
//! tree, incremental syncs (one new reply, the key alone for the rest), beside the same run's apply of
//! one such reply as the baseline; and the bytes an incremental body spends a known reply.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const GAMES: usize = 100;
const CLIENTS: usize = 32;
const WARM_UP: Duration = Duration::from_secs(2);
const MEASURE: Duration = Duration::from_secs(10);

/// One keep-alive HTTP/1.1 connection.
struct Connection {
    reader: BufReader<TcpStream>,
    address: String,
}

impl Connection {
    fn open(address: &str) -> Connection {
        let stream = TcpStream::connect(address).expect("the server accepts");
        stream.set_nodelay(true).expect("nodelay");
        Connection {
            reader: BufReader::new(stream),
            address: address.to_owned(),
        }
    }

    /// Sends a request and returns the status and body.
    fn call(&mut self, method: &str, path: &str, body: &str) -> (u16, String) {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.address,
            body.len()
        );
        let stream = self.reader.get_mut();
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body.as_bytes()))
            .expect("the request is sent");
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line).expect("a status");
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .expect("a status code");
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).expect("a header");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().expect("a length");
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).expect("the body");
        (status, String::from_utf8(body).expect("utf-8"))
    }
}

/// A model reply of about 2 KB: prose around a fenced batch (with a trailing comma) and an MVU line.
fn reply(turn: usize) -> String {
    let prose = "The lantern gutters as you step into the hall. Dust hangs in the light, and somewhere \
        beyond the broken arch a door creaks on its hinges. The merchant you met at the gate follows a \
        few paces behind, muttering about the price of rope and the ingratitude of adventurers. ";
    let mut text = String::new();
    while text.len() < 1500 {
        text.push_str(prose);
    }
    text.push_str(&format!(
        "\n```json\n[\n  {{\"op\": \"increment\", \"path\": [\"turn\"], \"value\": 1, \"reason\": \"a new turn\"}},\n  \
         {{\"op\": \"assign\", \"path\": \"player.mood\", \"value\": \"wary {turn}\", \"reason\": \"the hall is dark\"}},\n  \
         {{\"op\": \"increment\", \"path\": [\"player\", \"gold\"], \"value\": 3, \"reason\": \"a coin purse\"}},\n  \
         {{\"op\": \"assign\", \"path\": [\"scene\"], \"value\": {{\"room\": \"hall\", \"light\": \"lantern\", \"turn\": {turn}}}}},\n]\n```\n"
    ));
    text.push_str("_.set('player.stance', 'guarded');//the door creaks\n");
    text.push_str("Then you wait, listening.");
    text
}

struct Server {
    child: Child,
    address: String,
}

impl Server {
    fn start(db: &str) -> Server {
        Server::start_with(db, "error", Stdio::inherit())
    }

    /// A server whose request log (each request's `micros`: its time inside the server) goes to
    /// `log`.
    fn start_logged(db: &str, log: &std::path::Path) -> Server {
        let file = std::fs::File::create(log).expect("a log file");
        Server::start_with(db, "info", Stdio::from(file))
    }

    fn start_with(db: &str, level: &str, stderr: Stdio) -> Server {
        Server::start_args(db, level, stderr, &[])
    }

    fn start_args(db: &str, level: &str, stderr: Stdio, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_statecraft"))
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--log-level",
                level,
                "--db",
                db,
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("the server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the address");
        let address = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("the server did not start: {line:?}"))
            .to_owned();
        Server { child, address }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index]
}

fn run(db: &str, name: &str) {
    run_on(&[Server::start(db)], name);
}

/// The load on `servers` sharing one database: game `g` is served by server `g % servers.len()`,
/// as a load balancer that routes by game would spread them.
fn run_on(servers: &[Server], name: &str) {
    let addresses: Vec<String> = servers.iter().map(|s| s.address.clone()).collect();
    let mut setup = Connection::open(&addresses[0]);
    for game in 0..GAMES {
        let body = format!(
            r#"{{"state": {{"turn": 0, "player": {{"hp": 100, "gold": 0}}}}, "id": "load-{game}"}}"#
        );
        let (status, answer) = setup.call("POST", "/v1/games", &body);
        assert_eq!(status, 201, "{answer}");
    }
    let started = Instant::now();
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let failures = Arc::new(Mutex::new(0usize));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let (addresses, latencies, failures) = (
                addresses.clone(),
                Arc::clone(&latencies),
                Arc::clone(&failures),
            );
            std::thread::spawn(move || {
                let mut connections: Vec<Connection> =
                    addresses.iter().map(|a| Connection::open(a)).collect();
                let mut mine = Vec::new();
                for request in 0.. {
                    let elapsed = started.elapsed();
                    if elapsed > WARM_UP + MEASURE {
                        break;
                    }
                    let game = (client * 31 + request * 7) % GAMES;
                    let body = serde_json::json!({"input": reply(request)}).to_string();
                    let sent = Instant::now();
                    let connection = &mut connections[game % addresses.len()];
                    let (status, answer) =
                        connection.call("POST", &format!("/v1/games/load-{game}/apply"), &body);
                    let took = sent.elapsed();
                    if status != 200 {
                        eprintln!("{status}: {answer}");
                        *failures.lock().unwrap() += 1;
                    } else if elapsed > WARM_UP {
                        mine.push(took);
                    }
                }
                latencies.lock().unwrap().extend(mine);
            })
        })
        .collect();
    for client in clients {
        client.join().expect("a client");
    }
    let mut latencies = latencies.lock().unwrap().clone();
    latencies.sort();
    let count = latencies.len();
    println!(
        "{name}: {GAMES} games, {CLIENTS} clients, ~{} B replies: {count} applies in {:.0} s = {:.0} applies/s, \
         p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, {} failures",
        reply(0).len(),
        MEASURE.as_secs_f64(),
        count as f64 / MEASURE.as_secs_f64(),
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        failures.lock().unwrap()
    );
}

/// A state of 10,000 keys besides what the replies change.
fn big_state() -> serde_json::Value {
    big_state_of(10_000)
}

fn sha256_hex(text: &str) -> String {
    statecraft_engine::ContentKey::of_text(text).to_string()
}

/// Swipe `swipe` of reply `turn`: the same reply with its own last line.
fn swipe(turn: usize, swipe: usize) -> String {
    format!("{}\n(swipe {swipe})", reply(turn))
}

fn median(mut times: Vec<Duration>) -> (f64, f64) {
    assert!(!times.is_empty(), "no times were measured (or logged)");
    times.sort();
    (
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.9).as_secs_f64() * 1e3,
    )
}

/// The server's own time for each request to a path ending in `suffix` logged since line `from`
/// (the request log's `micros`), and the number of lines read.
fn server_times(log: &std::path::Path, from: usize, suffix: &str) -> (Vec<Duration>, usize) {
    let text = std::fs::read_to_string(log).expect("the log");
    let lines: Vec<&str> = text.lines().collect();
    let times = lines[from.min(lines.len())..]
        .iter()
        .filter(|line| line.contains(&format!("{suffix}}}")) && line.contains("answered"))
        .filter_map(|line| line.rsplit("micros=").next()?.trim().parse().ok())
        .map(Duration::from_micros)
        .collect();
    (times, lines.len())
}

const LONG_REPLIES: usize = 10_000;
const LONG_RUNS: usize = 3;
/// The JavaScript client's part size for a long first sync (docs/http.md, the sync endpoint).
const PART_BYTES: usize = 3 << 20;

/// A first sync of a 10,000-reply chat on fresh games, sent in parts as the JavaScript client sends a
/// path past 3 MiB: each part the whole path from the first reply, the replies already sent as keys,
/// every part but the last with `move: false`. Returns the server's time for each run, summed over
/// its parts.
fn long_first_sync(
    connection: &mut Connection,
    create: &dyn Fn(&mut Connection, &str),
    log: &std::path::Path,
) -> Vec<Duration> {
    let texts: Vec<String> = (0..LONG_REPLIES).map(|turn| swipe(turn, 0)).collect();
    let keys: Vec<String> = texts.iter().map(|text| sha256_hex(text)).collect();
    let mut runs = Vec::new();
    for run in 0..LONG_RUNS {
        let id = format!("long-{run}");
        create(connection, &id);
        let (_, from) = server_times(log, 0, "/sync");
        let mut sent = 0;
        while sent < LONG_REPLIES {
            let mut replies: Vec<serde_json::Value> = keys[..sent]
                .iter()
                .map(|key| serde_json::json!(key))
                .collect();
            let mut bytes = 67 * sent;
            let mut end = sent;
            while end < LONG_REPLIES && bytes < PART_BYTES {
                bytes += texts[end].len() + 12;
                replies.push(serde_json::json!({"text": texts[end]}));
                end += 1;
            }
            let last = end == LONG_REPLIES;
            let body = serde_json::json!({"replies": replies, "move": last}).to_string();
            let (status, answer) = connection.call("POST", &format!("/v1/games/{id}/sync"), &body);
            assert_eq!(status, 200, "{}", &answer[..answer.len().min(300)]);
            sent = end;
        }
        let (parts, _) = server_times(log, from, "/sync");
        runs.push(parts.into_iter().sum());
    }
    runs
}

fn sync_run(db: &str, log: &std::path::Path) {
    const REPLIES: usize = 1_000;
    const FIRST_RUNS: usize = 8;
    const INCREMENTAL_RUNS: usize = 60;
    let server = Server::start_logged(db, log);
    let mut connection = Connection::open(&server.address);
    let state = big_state();
    let create = |connection: &mut Connection, id: &str| {
        let body = serde_json::json!({"state": state, "id": id}).to_string();
        let (status, answer) = connection.call("POST", "/v1/games", &body);
        assert_eq!(status, 201, "{answer}");
    };
    let texts: Vec<String> = (0..REPLIES).map(|turn| swipe(turn, 0)).collect();
    let first_body = serde_json::json!({
        "replies": texts.iter().map(|text| serde_json::json!({"text": text})).collect::<Vec<_>>()
    })
    .to_string();
    let mut first = Vec::new();
    for run in 0..FIRST_RUNS {
        let id = format!("first-{run}");
        create(&mut connection, &id);
        let sent = Instant::now();
        let (status, answer) =
            connection.call("POST", &format!("/v1/games/{id}/sync"), &first_body);
        first.push(sent.elapsed());
        assert_eq!(status, 200, "{}", &answer[..answer.len().min(300)]);
    }
    let (first_server, _) = server_times(log, 0, "/sync");
    let long_first = long_first_sync(&mut connection, &create, log);
    // Two more swipes of every reply, off the current line.
    let id = "first-0";
    let mut keys: Vec<String> = texts.iter().map(|text| sha256_hex(text)).collect();
    for turn in 0..REPLIES {
        for other in 1..3 {
            let mut replies: Vec<serde_json::Value> = keys[..turn]
                .iter()
                .map(|key| serde_json::json!(key))
                .collect();
            replies.push(serde_json::json!({"text": swipe(turn, other)}));
            let body = serde_json::json!({"replies": replies, "move": false}).to_string();
            let (status, answer) = connection.call("POST", &format!("/v1/games/{id}/sync"), &body);
            assert_eq!(status, 200, "{answer}");
        }
    }
    let (_, before_incremental) = server_times(log, 0, "/sync");
    let mut incremental = Vec::new();
    let mut per_known = 0.0;
    for run in 0..INCREMENTAL_RUNS {
        let new = swipe(REPLIES + run, 0);
        let mut replies: Vec<serde_json::Value> =
            keys.iter().map(|key| serde_json::json!(key)).collect();
        replies.push(serde_json::json!({"text": new}));
        let body = serde_json::json!({"replies": replies}).to_string();
        let new_part = serde_json::json!({"text": new}).to_string().len() + 1;
        per_known = (body.len() - new_part) as f64 / keys.len() as f64;
        let sent = Instant::now();
        let (status, answer) = connection.call("POST", &format!("/v1/games/{id}/sync"), &body);
        incremental.push(sent.elapsed());
        assert_eq!(status, 200, "{}", &answer[..answer.len().min(300)]);
        keys.push(sha256_hex(&new));
    }
    let (incremental_server, _) = server_times(log, before_incremental, "/sync");
    create(&mut connection, "baseline");
    let mut applies = Vec::new();
    for turn in 0..INCREMENTAL_RUNS {
        let body = serde_json::json!({"input": swipe(turn, 0)}).to_string();
        let sent = Instant::now();
        let (status, answer) = connection.call("POST", "/v1/games/baseline/apply", &body);
        applies.push(sent.elapsed());
        assert_eq!(status, 200, "{answer}");
    }
    let (apply_server, _) = server_times(log, 0, "/apply");
    let ms = |(median, p90): (f64, f64)| format!("median {median:.2} ms, p90 {p90:.2} ms");
    println!(
        "sync: first sync of {REPLIES} replies of ~{} B ({} KB body), 10,000-key state, {FIRST_RUNS} runs: \
         server {}; client {}",
        reply(0).len(),
        first_body.len() / 1024,
        ms(median(first_server)),
        ms(median(first)),
    );
    println!(
        "sync: first sync of {LONG_REPLIES} replies of ~{} B in parts of at most {} MiB (as the JS client sends \
         them), 10,000-key state, {LONG_RUNS} runs: server time summed over the parts {}",
        reply(0).len(),
        PART_BYTES >> 20,
        ms(median(long_first)),
    );
    println!(
        "sync: incremental (1 new reply, {REPLIES} keys, 3 swipes a reply in the tree), {INCREMENTAL_RUNS} runs: \
         server {}; client {}; {per_known:.1} body bytes a known reply",
        ms(median(incremental_server)),
        ms(median(incremental)),
    );
    println!(
        "sync: baseline, apply of one such reply on the same state: server {}; client {}",
        ms(median(apply_server)),
        ms(median(applies)),
    );
}

/// The server's resident memory now (`VmRSS` of `/proc/PID/status`), in MiB.
fn resident_mib(pid: u32) -> f64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's status");
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in the status");
    kib / 1024.0
}

const OPENED_GAMES: usize = 10_000;

/// 10,000 games opened one after another (each made, then one reply applied), on SQLite, under
/// `--max-active-games` of `active`: the server's resident memory along the way.
fn games_run(dir: &std::path::Path, active: usize) {
    let db = format!(
        "sqlite:{}",
        dir.join(format!("games-{active}.db")).display()
    );
    let limit = active.to_string();
    let server = Server::start_args(
        &db,
        "error",
        Stdio::inherit(),
        &["--max-active-games", &limit],
    );
    let mut connection = Connection::open(&server.address);
    let state = big_state_of(100);
    let mut samples = Vec::new();
    let mut peak: f64 = 0.0;
    for game in 0..OPENED_GAMES {
        let body = serde_json::json!({"state": state, "id": format!("g{game}")}).to_string();
        let (status, answer) = connection.call("POST", "/v1/games", &body);
        assert_eq!(status, 201, "{answer}");
        let body = serde_json::json!({"input": reply(game)}).to_string();
        let (status, answer) = connection.call("POST", &format!("/v1/games/g{game}/apply"), &body);
        assert_eq!(status, 200, "{answer}");
        if (game + 1) % 500 == 0 {
            let now = resident_mib(server.child.id());
            peak = peak.max(now);
            if (game + 1) % 2_500 == 0 {
                samples.push(format!("{} games: {now:.0} MiB", game + 1));
            }
        }
    }
    println!(
        "games: {OPENED_GAMES} games opened one after another (a 100-key state, one ~{} B reply each), \
         --max-active-games {active}: resident memory {}; peak {peak:.0} MiB",
        reply(0).len(),
        samples.join(", ")
    );
}

/// A state of `keys` keys besides what the replies change.
fn big_state_of(keys: usize) -> serde_json::Value {
    let world: serde_json::Map<String, serde_json::Value> = (0..keys)
        .map(|n| (format!("k{n}"), serde_json::json!(n)))
        .collect();
    serde_json::json!({"turn": 0, "player": {"hp": 100, "gold": 0}, "world": world})
}

fn main() {
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    if which.iter().any(|w| w == "games") {
        let dir = std::env::temp_dir().join(format!("statecraft-games-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder");
        for active in [100, 1_000] {
            games_run(&dir, active);
        }
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    if which.iter().any(|w| w == "sync") {
        let dir = std::env::temp_dir().join(format!("statecraft-sync-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder");
        sync_run(
            &format!("sqlite:{}", dir.join("games.db").display()),
            &dir.join("server.log"),
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let all = which.is_empty();
    if all || which.iter().any(|w| w == "sqlite") {
        let dir = std::env::temp_dir().join(format!("statecraft-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder");
        run(
            &format!("sqlite:{}", dir.join("games.db").display()),
            "sqlite",
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
    if all || which.iter().any(|w| w == "postgres" || w == "postgres2") {
        let base = std::env::var("STATECRAFT_TEST_POSTGRES")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
        let schema = format!("load_{}", std::process::id());
        let psql = |sql: &str| {
            Command::new("psql")
                .args([&base, "-q", "-c", sql])
                .status()
                .is_ok_and(|status| status.success())
        };
        if !psql(&format!("CREATE SCHEMA {schema}")) {
            eprintln!("postgres: no PostgreSQL answers at {base}; skipped");
            return;
        }
        let separator = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{separator}options=-csearch_path%3D{schema}");
        run(&url, "postgres");
        // Two processes on one database, each serving half of the games (fresh games: the schema
        // is made again).
        if all || which.iter().any(|w| w == "postgres2") {
            psql(&format!(
                "DROP SCHEMA {schema} CASCADE; CREATE SCHEMA {schema}"
            ));
            let servers = [Server::start(&url), Server::start(&url)];
            run_on(&servers, "postgres, two processes");
        }
        psql(&format!("DROP SCHEMA {schema} CASCADE"));
    }
}
