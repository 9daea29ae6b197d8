//! What one request may cost `statecraft serve`, measured on the process: its time (a batch out of
//! time stops, its game answers at once, and no thread goes on with it) and what it makes the server
//! hold and answer (bounded by the engine's limits, which are options with a shared server's
//! defaults). A record too big to store and the strings a client sends are tested in process
//! (`server/src/http/tests/limits.rs`).

mod http;

use std::time::{Duration, Instant};

use http::{Server, create, sqlite};
use serde_json::{Value as Json, json};

fn server(args: &[&str]) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let db = sqlite(dir.path());
    let mut all = vec!["--db", db.as_str()];
    all.extend_from_slice(args);
    let server = Server::start(&all);
    (dir, server)
}

/// The CPU time the process has used (user and system), in clock ticks (1/100 s on Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the process's stat");
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat[stat.rfind(')').expect("a command name") + 2..]
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// The most memory the process has held at once, in KiB (`VmHWM`).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

fn apply(server: &Server, id: &str, body: &Json) -> http::Response {
    server.call("POST", &format!("/v1/games/{id}/apply"), Some(body))
}

/// A part of the state of about 3 MB: 3,000 strings of 1,000 bytes.
fn big_part() -> Json {
    json!((0..3_000).map(|i| format!("{i:01000}")).collect::<Vec<_>>())
}

#[test]
fn a_batch_out_of_time_stops_and_its_game_answers_at_once() {
    let (_dir, server) = server(&["--request-timeout", "1"]);
    // Every callback loops 1.5 million steps, within the script's own budget per call.
    let spin =
        "on(\"spin\", function(ctx) local x = 0 for i = 1, 1500000 do x = x + i end return x end)";
    let id = create(
        &server,
        &json!({"state": {"n": 0}, "scripts": {"spin.lua": spin}}),
    );
    let mut calls = vec![json!({"op": "assign", "path": ["n"], "value": -1})];
    calls.extend((0..9_999).map(|_| json!({"op": "callback", "path": ["spin"]})));
    let started = Instant::now();
    let answer = apply(&server, &id, &json!({"batch": calls}));
    let took = started.elapsed();
    assert_eq!(answer.status, 503, "{:?}", answer.body);
    assert_eq!(answer.kind(), "timeout");
    assert!(
        answer.body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("nothing changed"),
        "the game's own answer, within the grace: {:?}",
        answer.body
    );
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    // The game takes the next request at once, on a state the stopped batch never touched.
    let started = Instant::now();
    let next = apply(
        &server,
        &id,
        &json!({"batch": [{"op": "increment", "path": ["n"], "value": 1}]}),
    );
    assert_eq!(next.status, 200, "{:?}", next.body);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(http::state(&server, &id), json!({"n": 1}));
    // And the process is idle again: no thread goes on with the stopped batch.
    let before = cpu_ticks(server.pid());
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_ticks(server.pid()) - before;
    assert!(
        used < 30,
        "{used} ticks of CPU in the second after the answer"
    );
}

#[test]
fn a_small_body_cannot_make_a_large_answer() {
    let (_dir, server) = server(&["--max-active-memory", "64"]);
    let id = create(&server, &json!({"state": {"a": big_part()}}));
    let peak_before = peak_kib(server.pid());
    // Ten copies of the same part onto one place: a 500-byte body whose change log holds the part
    // nineteen times. Before, the answer alone was about 60 MB.
    let copies: Vec<Json> = (0..10)
        .map(|_| json!({"op": "copy", "from": "/a", "path": "/b"}))
        .collect();
    let body = json!({"batch": copies});
    assert!(body.to_string().len() < 600);
    let answer = apply(&server, &id, &body);
    assert_eq!(answer.status, 422, "{}", answer.body.to_string().len());
    assert_eq!(answer.kind(), "rejected");
    assert_eq!(answer.body["errors"][0]["kind"], "commit_too_large");
    let message = answer.body["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("33554432 bytes"),
        "names the limit: {message}"
    );
    assert!(answer.body.to_string().len() < 100_000);
    let grew = peak_kib(server.pid()).saturating_sub(peak_before);
    assert!(grew < 64 << 10, "the peak grew by {grew} KiB");
    // One copy is well within every bound and commits; the game is as it was otherwise.
    let one = apply(
        &server,
        &id,
        &json!({"batch": [{"op": "copy", "from": "/a", "path": "/b"}]}),
    );
    assert_eq!(one.status, 200, "{:?}", one.body["error"]);
    // A state past the shared server's default size is refused before it is built.
    let doubling: Vec<Json> = (0..4)
        .map(|i| json!({"op": "copy", "from": "", "path": format!("/c{i}")}))
        .collect();
    let answer = apply(&server, &id, &json!({"batch": doubling}));
    assert_eq!(answer.status, 422);
    let kind = answer.body["errors"][0]["kind"].as_str().unwrap_or("");
    assert!(
        ["state_too_large", "op_too_large", "commit_too_large"].contains(&kind),
        "{:?}",
        answer.body["errors"]
    );
}
