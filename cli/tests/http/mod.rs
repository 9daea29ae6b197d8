//! What the `statecraft serve` tests share: a server process on a free loopback port and a minimal
//! HTTP/1.1 client over a TCP socket (no client library). A test that needs no real socket or
//! process drives the router in process instead (`server/src/http/tests.rs`).
//!
//! Every server a test starts listens on 127.0.0.1 only and is stopped (SIGTERM, then SIGKILL) when the
//! test's handle drops, so no process outlives its test.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};

/// A running `statecraft serve`.
pub(crate) struct Server {
    child: Option<Child>,
    /// `127.0.0.1:PORT`.
    pub(crate) address: String,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Server {
    /// Starts `statecraft serve --listen 127.0.0.1:0 ARGS` and waits until it listens.
    pub(crate) fn start(args: &[&str]) -> Server {
        Server::try_start_command(Command::new(env!("CARGO_BIN_EXE_statecraft")), args)
            .unwrap_or_else(|error| panic!("the server starts: {error}"))
    }

    /// Starts a server under an open-file limit of `files` (`ulimit -n`, through `sh`).
    pub(crate) fn start_with_file_limit(files: u64, args: &[&str]) -> Server {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            &format!("ulimit -n {files} && exec \"$0\" \"$@\""),
            env!("CARGO_BIN_EXE_statecraft"),
        ]);
        Server::try_start_command(command, args)
            .unwrap_or_else(|error| panic!("the server starts: {error}"))
    }

    fn try_start_command(mut command: Command, args: &[&str]) -> Result<Server, String> {
        let quiet: &[&str] = if args.contains(&"--log-level") {
            &[]
        } else {
            &["--log-level", "warn"]
        };
        let mut child = command
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(quiet)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| error.to_string())?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut text);
            text
        });
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout is piped");
        let _ = BufReader::new(stdout).read_line(&mut line);
        let Some(address) = line.trim().strip_prefix("listening on http://") else {
            let _ = child.wait();
            let stderr = stderr.join().unwrap_or_default();
            return Err(format!(
                "no address printed; stdout {line:?}, stderr {stderr}"
            ));
        };
        Ok(Server {
            address: address.to_owned(),
            child: Some(child),
            stderr: Some(stderr),
        })
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// A request to this server.
    pub(crate) fn call(&self, method: &str, path: &str, body: Option<&Json>) -> Response {
        request(&self.address, method, path, body, &[])
    }

    /// A request with extra headers.
    pub(crate) fn call_with(
        &self,
        method: &str,
        path: &str,
        body: Option<&Json>,
        headers: &[(&str, &str)],
    ) -> Response {
        request(&self.address, method, path, body, headers)
    }

    /// Asks the server to stop (SIGTERM) and waits for it; returns its exit code and its stderr.
    pub(crate) fn stop(self) -> (Option<i32>, String) {
        self.stop_within(Duration::from_secs(20))
    }

    /// Asks the server to stop (SIGTERM) and waits up to `limit`; returns its exit code (`None` if it
    /// had not ended, and then it is killed) and its stderr.
    pub(crate) fn stop_within(mut self, limit: Duration) -> (Option<i32>, String) {
        let mut child = self.child.take().expect("running");
        signal(child.id(), "TERM");
        let status = wait_for(&mut child, limit);
        if status.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let stderr = self.stderr.take().map(|t| t.join().unwrap_or_default());
        (status, stderr.unwrap_or_default())
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    pub(crate) fn kill(mut self) {
        let mut child = self.child.take().expect("running");
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), "TERM");
            if wait_for(&mut child, Duration::from_secs(10)).is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

fn signal(pid: u32, name: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status();
}

/// Waits up to `limit` for the process to end; its exit code, or `None` if it did not end.
fn wait_for(child: &mut Child, limit: Duration) -> Option<i32> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status.code().unwrap_or(-1));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// An answer.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Json,
}

impl Response {
    /// A header's value, by case-insensitive name.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The error kind of an error answer.
    pub(crate) fn kind(&self) -> &str {
        self.body["error"]["kind"].as_str().unwrap_or("")
    }
}

/// Sends one request on a fresh connection and reads the whole answer.
pub(crate) fn request(
    address: &str,
    method: &str,
    path: &str,
    body: Option<&Json>,
    headers: &[(&str, &str)],
) -> Response {
    let text = body.map(Json::to_string).unwrap_or_default();
    raw(address, method, path, text.as_bytes(), headers)
        .unwrap_or_else(|error| panic!("{method} {path}: {error}"))
}

/// Sends a request with a body of raw bytes.
pub(crate) fn raw(
    address: &str,
    method: &str,
    path: &str,
    body: &[u8],
    headers: &[(&str, &str)],
) -> Result<Response, String> {
    let mut stream = TcpStream::connect(address).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        head.push_str(&format!("Host: {address}\r\n"));
    }
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(|e| e.to_string())?;
    parse(&answer)
}

fn parse(answer: &[u8]) -> Result<Response, String> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no header end in {text:?}"))?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    let body = if body.is_empty() {
        Json::Null
    } else {
        serde_json::from_str(&body).map_err(|e| format!("not JSON ({e}): {body:?}"))?
    };
    Ok(Response {
        status,
        headers,
        body,
    })
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// Creates a game and returns its id.
pub(crate) fn create(server: &Server, body: &Json) -> String {
    let answer = server.call("POST", "/v1/games", Some(body));
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    answer.body["id"].as_str().expect("an id").to_owned()
}

/// Applies a batch of instructions and checks it committed.
pub(crate) fn apply_ok(server: &Server, id: &str, body: &Json) -> Json {
    let answer = server.call("POST", &format!("/v1/games/{id}/apply"), Some(body));
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

/// The state of a game now.
pub(crate) fn state(server: &Server, id: &str) -> Json {
    let answer = server.call("GET", &format!("/v1/games/{id}"), None);
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["state"].clone()
}

/// An increment of `counter` by one, the unit of the concurrency and crash tests.
pub(crate) fn increment() -> Json {
    json!({"batch": [{"op": "increment", "path": ["n"], "value": 1}]})
}

/// A SQLite database URL in `dir`.
pub(crate) fn sqlite(dir: &Path) -> String {
    format!("sqlite:{}", dir.join("games.db").display())
}

/// Adds one gold, for games made with a `player` object.
pub(crate) fn increment_gold() -> Json {
    json!({"batch": [{"op": "increment", "path": ["player", "gold"], "value": 1}]})
}

/// Rolls `ctx.random` in a new game with `seed` on the server, then again after a restart (the game
/// rebuilt from its rows): the seed is kept with the game.
pub(crate) fn seeded_rolls_survive_a_restart(db: &str) {
    let dice = r#"on("roll", function(ctx) ctx.emit({op = "push", path = "rolls", value = ctx.random(1, 1000000)}) end)"#;
    let roll = json!({"batch": [{"op": "callback", "path": ["roll"]}]});
    let server = Server::start(&["--db", db]);
    let make = |seed: u64| {
        create(
            &server,
            &json!({"state": {"rolls": []}, "scripts": {"dice.lua": dice}, "seed": seed}),
        )
    };
    let (a, b, other) = (make(9), make(9), make(10));
    for id in [&a, &b, &other] {
        apply_ok(&server, id, &roll);
    }
    server.stop();
    let server = Server::start(&["--db", db]);
    for id in [&a, &b, &other] {
        apply_ok(&server, id, &roll);
    }
    let rolls = |id: &str| state(&server, id)["rolls"].clone();
    assert_eq!(rolls(&a), rolls(&b), "the same seed rolls the same");
    assert_ne!(rolls(&a), rolls(&other), "another seed rolls otherwise");
    assert_eq!(rolls(&a).as_array().map(Vec::len), Some(2));
}

/// Sends the same request under the same `Idempotency-Key` from several clients at once, spread over
/// `servers`, and returns every answer as `(status, body)`.
fn race_one_key(servers: &[Server], path: &str, body: &Json, key: &str) -> Vec<(u16, Json)> {
    std::thread::scope(|scope| {
        let clients: Vec<_> = (0..4)
            .map(|client| {
                let server = &servers[client % servers.len()];
                scope.spawn(move || {
                    let answer =
                        server.call_with("POST", path, Some(body), &[("Idempotency-Key", key)]);
                    (answer.status, answer.body)
                })
            })
            .collect();
        clients
            .into_iter()
            .map(|client| client.join().expect("a client thread"))
            .collect()
    })
}

/// Two processes on one database get the same request under one `Idempotency-Key` at once, from
/// clients retrying it: it commits once, and every client gets the first answer. Applies and creates
/// both, with and without a game id.
pub(crate) fn a_key_raced_on_commits_once(db: &str) {
    let servers = [Server::start(&["--db", db]), Server::start(&["--db", db])];
    let id = create(&servers[0], &json!({"state": {"n": 0}}));
    let rounds = 20;
    for round in 0..rounds {
        let path = format!("/v1/games/{id}/apply");
        let answers = race_one_key(&servers, &path, &increment(), &format!("apply-{round}"));
        assert_eq!(answers[0].0, 200, "{:?}", answers[0].1);
        assert!(
            answers.iter().all(|answer| answer == &answers[0]),
            "round {round}: {answers:?}"
        );
        let made = json!({"state": {"round": round}});
        let answers = race_one_key(&servers, "/v1/games", &made, &format!("create-{round}"));
        assert_eq!(answers[0].0, 201, "{:?}", answers[0].1);
        assert!(
            answers.iter().all(|answer| answer == &answers[0]),
            "round {round}: {answers:?}"
        );
        let named = json!({"state": {}, "id": format!("named-{round}")});
        let answers = race_one_key(&servers, "/v1/games", &named, &format!("named-{round}"));
        assert!(
            answers
                .iter()
                .all(|answer| answer == &(201, json!({"id": format!("named-{round}"), "step": 0}))),
            "round {round}: {answers:?}"
        );
    }
    assert_eq!(state(&servers[1], &id), json!({"n": rounds}));
    let list = servers[0].call("GET", "/v1/games?limit=1000", None);
    assert_eq!(
        list.body["games"].as_array().map(Vec::len),
        Some(1 + 2 * rounds),
        "one game per key: {:?}",
        list.body
    );
}

/// A game deleted and made again under its id at one process (a chat reset) while another process
/// still holds the old game in memory: the other process reads and changes the new game, never the
/// old one it held, even when the new game has as many records as the old.
pub(crate) fn a_game_made_again_under_its_id_is_never_the_old_one(db: &str) {
    let (holder, resetter) = (Server::start(&["--db", db]), Server::start(&["--db", db]));
    let increment = |key: &str| json!({"batch": [{"op": "increment", "path": [key], "value": 1}]});
    let id = create(&holder, &json!({"id": "chat", "state": {"old": 0}}));
    apply_ok(&holder, &id, &increment("old"));
    apply_ok(&holder, &id, &increment("old"));
    assert_eq!(state(&holder, &id), json!({"old": 2}));
    let deleted = resetter.call("DELETE", "/v1/games/chat", None);
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    create(&resetter, &json!({"id": "chat", "state": {"new": 0}}));
    apply_ok(&resetter, &id, &increment("new"));
    apply_ok(&resetter, &id, &increment("new"));
    assert_eq!(
        state(&holder, &id),
        json!({"new": 2}),
        "the holder reads the new game"
    );
    let stale = holder.call("POST", "/v1/games/chat/apply", Some(&increment("old")));
    assert_eq!(
        stale.status, 422,
        "an apply runs on the new game: {:?}",
        stale.body
    );
    apply_ok(&holder, &id, &increment("new"));
    let fresh = Server::start(&["--db", db]);
    for server in [&holder, &resetter, &fresh] {
        assert_eq!(state(server, &id), json!({"new": 3}));
    }
    let log = fresh.call("GET", "/v1/games/chat/log", None).body;
    assert_eq!(log["steps"].as_array().map(Vec::len), Some(3), "{log}");
}

/// A process holds a game in memory while another changes it. A change at the first runs on the
/// newest state, whether it would have passed on the old copy (an increment: its write loses the
/// compare-and-set and runs again), been refused there (an `old` and an `expect_step` that only the
/// newest state has), or passed there and is refused on the newest state (an `old` of the old copy).
/// Each case on a game of its own, since a process that has seen another change a game reads its
/// head before every change from then on.
pub(crate) fn a_change_at_a_process_with_an_old_copy_runs_on_the_newest_state(db: &str) {
    let (holder, other) = (Server::start(&["--db", db]), Server::start(&["--db", db]));
    let assign = |value: i64| json!({"batch": [{"op": "assign", "path": ["hp"], "value": value}]});
    // A game the holder has loaded at hp 9, then set to hp 5 by the other process; → its step.
    let game = |id: &str| {
        create(&holder, &json!({"id": id, "state": {"hp": 10}}));
        apply_ok(&holder, id, &assign(9));
        apply_ok(&other, id, &assign(5))["step"].clone()
    };

    game("passes");
    let add = json!({"batch": [{"op": "increment", "path": ["hp"], "value": -1}]});
    let answer = apply_ok(&holder, "passes", &add);
    assert_eq!(
        answer["changes"],
        json!([{"op": "increment", "path": ["hp"], "old": 5, "new": 4}]),
        "{answer}"
    );

    let step = game("refused-on-the-copy");
    let checked = json!({
        "batch": [{"op": "assign", "path": ["hp"], "value": 4, "old": 5}],
        "expect_step": step,
    });
    let answer = apply_ok(&holder, "refused-on-the-copy", &checked);
    assert_eq!(answer["changes"][0]["new"], json!(4), "{answer}");

    game("refused-on-the-newest");
    let stale = json!({"batch": [{"op": "assign", "path": ["hp"], "value": 1, "old": 9}]});
    let refused = holder.call(
        "POST",
        "/v1/games/refused-on-the-newest/apply",
        Some(&stale),
    );
    assert_eq!(refused.status, 422, "{:?}", refused.body);

    let fresh = Server::start(&["--db", db]);
    for server in [&holder, &other, &fresh] {
        assert_eq!(state(server, "passes"), json!({"hp": 4}));
        assert_eq!(state(server, "refused-on-the-copy"), json!({"hp": 4}));
        assert_eq!(state(server, "refused-on-the-newest"), json!({"hp": 5}));
    }
}
