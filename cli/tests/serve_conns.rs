//! Slow clients and stops: `statecraft serve` closes connections that stall in their headers, their
//! body or between requests, holds at most `--max-connections` (fewer than the open-file limit), keeps
//! serving other clients meanwhile, and stops within `--shutdown-grace` after SIGTERM whatever its
//! clients and games are doing, with every acknowledged change kept. Bounded: a few hundred sockets on
//! 127.0.0.1, clocks of one to three seconds.

mod http;

use std::collections::BTreeSet;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{Server, apply_ok, create, sqlite};
use serde_json::json;

/// A connection that sent `bytes` and then nothing more.
fn stalled(address: &str, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(address).expect("a connection");
    stream.write_all(bytes).expect("the first bytes");
    stream
}

/// Waits up to `limit` for the server to close `stream`; what it sent before, or `None` if the
/// connection is still open.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let started = Instant::now();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let left = limit.saturating_sub(started.elapsed());
        if left.is_zero() {
            return None;
        }
        stream.set_read_timeout(Some(left)).expect("a timeout");
        match stream.read(&mut buffer) {
            Ok(0) => return Some(String::from_utf8_lossy(&received).into_owned()),
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None;
            }
            // A reset is a close too.
            Err(_) => return Some(String::from_utf8_lossy(&received).into_owned()),
        }
    }
}

/// `GET /v1/health` on a fresh connection, waiting at most `limit`; how long it took.
fn health_within(address: &str, limit: Duration, token: Option<&str>) -> Result<Duration, String> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).map_err(|error| error.to_string())?;
    stream
        .set_read_timeout(Some(limit))
        .map_err(|error| error.to_string())?;
    let authorization = token.map_or(String::new(), |token| {
        format!("Authorization: Bearer {token}\r\n")
    });
    write!(
        stream,
        "GET /v1/health HTTP/1.1\r\nHost: {address}\r\n{authorization}Connection: close\r\n\r\n"
    )
    .map_err(|error| error.to_string())?;
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .map_err(|error| format!("no answer after {:?}: {error}", started.elapsed()))?;
    if !answer.starts_with("HTTP/1.1 200") || !answer.contains(r#"{"ok":true,"#) {
        return Err(format!("not a healthy answer: {answer:?}"));
    }
    Ok(started.elapsed())
}

/// A request's headers cut off in the middle.
fn half_headers(address: &str) -> Vec<u8> {
    format!("POST /v1/games/g/apply HTTP/1.1\r\nHost: {address}\r\nContent-Le").into_bytes()
}

/// Whole headers that announce a body of 100 bytes, and 10 of them.
fn half_body(address: &str) -> Vec<u8> {
    format!(
        "POST /v1/games/g/apply HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"batch\":"
    )
    .into_bytes()
}

#[test]
fn stalled_connections_are_closed_and_others_served_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&[
        "--db",
        &sqlite(dir.path()),
        "--max-connections",
        "6",
        "--header-timeout",
        "4",
        "--body-timeout",
        "4",
        "--idle-timeout",
        "4",
    ]);
    let address = server.address.clone();
    // Ten stalled connections against a cap of six: three silent, three halfway through their
    // headers, four halfway through their body.
    let mut stalls: Vec<(&str, TcpStream)> = Vec::new();
    for _ in 0..3 {
        stalls.push(("silent", stalled(&address, b"")));
        stalls.push(("half headers", stalled(&address, &half_headers(&address))));
    }
    for _ in 0..4 {
        stalls.push(("half body", stalled(&address, &half_body(&address))));
    }
    // Another client is served while they stall, long before their clocks run out: at the cap, the
    // connection waiting longest for its client makes room for a new one.
    let took = health_within(&address, Duration::from_secs(10), None)
        .unwrap_or_else(|error| panic!("a client was locked out by stalled ones: {error}"));
    assert!(
        took < Duration::from_secs(2),
        "a client waited {took:?} behind stalled ones"
    );
    for (what, stream) in &mut stalls {
        let sent = closed_within(stream, Duration::from_secs(8))
            .unwrap_or_else(|| panic!("a connection that sent {what} is still open"));
        if *what == "half body" {
            assert!(
                sent.starts_with("HTTP/1.1 408") && sent.contains(r#""kind":"body_timeout""#),
                "a body that stalled answers 408 body_timeout: {sent:?}"
            );
        } else {
            assert_eq!(sent, "", "a {what} connection is closed without an answer");
        }
    }
    // The server is whole and serves at once again.
    let took = health_within(&address, Duration::from_secs(5), None).expect("served");
    assert!(took < Duration::from_secs(1), "{took:?}");
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn headers_and_idle_keep_alive_have_clocks_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&[
        "--db",
        &sqlite(dir.path()),
        "--header-timeout",
        "1",
        "--idle-timeout",
        "3",
    ]);
    let address = server.address.clone();
    let started = Instant::now();
    let mut silent = stalled(&address, b"");
    let mut half = stalled(&address, &half_headers(&address));
    // A keep-alive connection that asked once and then says nothing.
    let mut idle = stalled(
        &address,
        format!("GET /v1/health HTTP/1.1\r\nHost: {address}\r\n\r\n").as_bytes(),
    );
    let mut answer = Vec::new();
    let mut buffer = [0u8; 1024];
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    while !String::from_utf8_lossy(&answer).contains(r#"{"ok":true,"#) {
        let n = idle.read(&mut buffer).expect("an answer");
        assert!(n > 0, "the connection closed before its answer");
        answer.extend_from_slice(&buffer[..n]);
    }
    let answered = Instant::now();
    for (what, stream) in [("silent", &mut silent), ("half headers", &mut half)] {
        assert!(
            closed_within(stream, Duration::from_secs(4)).is_some(),
            "a {what} connection is still open after {:?}",
            started.elapsed()
        );
    }
    let headers_closed = started.elapsed();
    assert!(
        headers_closed < Duration::from_secs(3),
        "the header clock is 1 s, not {headers_closed:?}"
    );
    assert!(
        closed_within(&mut idle, Duration::from_secs(6)).is_some(),
        "an idle connection is still open after {:?}",
        answered.elapsed()
    );
    let idle_for = answered.elapsed();
    assert!(
        idle_for >= Duration::from_millis(2500),
        "an idle connection is kept for --idle-timeout (3 s), not cut after {idle_for:?}"
    );
}

#[test]
fn three_hundred_stalled_connections_under_a_file_limit_of_256_lock_no_one_out() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_file_limit(
        256,
        &[
            "--db",
            &sqlite(dir.path()),
            "--token",
            "s3cret",
            "--header-timeout",
            "5",
        ],
    );
    let address = server.address.clone();
    let stalls: Vec<TcpStream> = (0..300)
        .map(|_| stalled(&address, &half_headers(&address)))
        .collect();
    let took = health_within(&address, Duration::from_secs(10), Some("s3cret"))
        .unwrap_or_else(|error| panic!("a client with the token was locked out: {error}"));
    assert!(
        took < Duration::from_millis(2500),
        "a client waited {took:?} behind stalled ones (the header clock is 5 s)"
    );
    let started = Instant::now();
    for (n, mut stream) in stalls.into_iter().enumerate() {
        let left = Duration::from_secs(12).saturating_sub(started.elapsed());
        assert!(
            closed_within(&mut stream, left).is_some(),
            "stalled connection {n} is still open after {:?}",
            started.elapsed()
        );
    }
    health_within(&address, Duration::from_secs(5), Some("s3cret")).expect("served after");
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn more_connections_than_the_file_limit_leaves_room_for_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(dir.path());
    let output = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -n 256 && exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_statecraft"),
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--db",
            &db,
            "--max-connections",
            "1000",
        ])
        .output()
        .expect("the command runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--max-connections 1000")
            && stderr.contains("256")
            && stderr.contains("192"),
        "{stderr}"
    );
}

#[test]
fn sigterm_stops_the_server_while_a_client_stalls_in_its_headers() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(dir.path());
    // The default header clock (10 s) is longer than the grace time: the stop must not wait for it.
    let server = Server::start(&["--db", &db, "--shutdown-grace", "2"]);
    let id = create(&server, &json!({"state": {"n": 0}}));
    apply_ok(
        &server,
        &id,
        &json!({"batch": [{"op": "increment", "path": ["n"], "value": 1}], "label": "kept"}),
    );
    let mut half = stalled(&server.address, &half_headers(&server.address));
    let started = Instant::now();
    let (code, stderr) = server.stop_within(Duration::from_secs(6));
    let took = started.elapsed();
    assert_eq!(
        code,
        Some(0),
        "the server did not stop within 6 s: {stderr}"
    );
    assert!(took < Duration::from_secs(3), "the stop took {took:?}");
    assert!(closed_within(&mut half, Duration::from_secs(1)).is_some());
    let server = Server::start(&["--db", &db]);
    assert_eq!(http::state(&server, &id), json!({"n": 1}));
}

#[test]
fn sigterm_stops_within_the_grace_time_while_a_batch_answered_503_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(dir.path());
    let server = Server::start(&[
        "--db",
        &db,
        "--request-timeout",
        "0.5",
        "--shutdown-grace",
        "1",
    ]);
    // Each call of the handler runs until the script time limit of 1 s stops it (see
    // a_request_over_the_time_limit_answers_503_and_the_game_goes_on in
    // server/src/http/tests/api.rs), and best effort goes on to the next: the batch keeps its game's
    // thread busy for about ten seconds.
    let scripts = json!({"spin.lua": "on('spin', function(ctx) while true do local s = string.rep('x', 100000) end end)"});
    let spinning = create(&server, &json!({"state": {"n": 0}, "scripts": scripts}));
    let busy = create(&server, &json!({"state": {"n": 0}}));
    let calls: Vec<_> = (0..10)
        .map(|_| json!({"op": "callback", "path": ["spin"]}))
        .collect();
    let slow = server.call(
        "POST",
        &format!("/v1/games/{spinning}/apply"),
        Some(&json!({"batch": calls, "best_effort": true})),
    );
    assert_eq!(slow.status, 503, "{:?}", slow.body);
    // Meanwhile clients change another game; every change answered 200 must survive the stop.
    let acknowledged = Arc::new(Mutex::new(BTreeSet::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..3)
        .map(|client| {
            let (address, id, acknowledged, stop) = (
                server.address.clone(),
                busy.clone(),
                Arc::clone(&acknowledged),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let label = format!("c{client}i{i}");
                    let body = json!({"batch": [{"op": "increment", "path": ["n"], "value": 1}], "label": label});
                    let path = format!("/v1/games/{id}/apply");
                    match http::raw(&address, "POST", &path, body.to_string().as_bytes(), &[]) {
                        Ok(answer) if answer.status == 200 => {
                            acknowledged.lock().unwrap().insert(label);
                        }
                        // Stopping: refused, cut off or answered 503; nothing acknowledged.
                        _ => return,
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let (code, stderr) = server.stop_within(Duration::from_secs(6));
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.join().expect("a client thread");
    }
    assert_eq!(
        code,
        Some(0),
        "the server did not stop within 6 s: {stderr}"
    );
    assert!(
        took < Duration::from_millis(2500),
        "the stop took {took:?} with a grace time of 1 s"
    );
    let server = Server::start(&["--db", &db]);
    let log = server
        .call("GET", &format!("/v1/games/{busy}/log"), None)
        .body;
    let committed: BTreeSet<String> = log["steps"]
        .as_array()
        .expect("a log")
        .iter()
        .filter_map(|step| step["label"].as_str().map(str::to_owned))
        .collect();
    let acknowledged = acknowledged.lock().unwrap();
    assert!(
        !acknowledged.is_empty(),
        "changes went through before the stop"
    );
    let lost: Vec<_> = acknowledged.difference(&committed).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
}

#[test]
fn sigterm_abandons_a_request_still_running_after_the_grace_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite(dir.path());
    let server = Server::start(&["--db", &db, "--shutdown-grace", "1"]);
    // About ten seconds of work (see the test above), well within the default request time of 30 s.
    let scripts = json!({"spin.lua": "on('spin', function(ctx) while true do local s = string.rep('x', 100000) end end)"});
    let spinning = create(&server, &json!({"state": {"n": 0}, "scripts": scripts}));
    let calls: Vec<_> = (0..10)
        .map(|_| json!({"op": "callback", "path": ["spin"]}))
        .collect();
    let body = json!({"batch": calls, "best_effort": true}).to_string();
    let address = server.address.clone();
    let path = format!("/v1/games/{spinning}/apply");
    let in_flight =
        std::thread::spawn(move || http::raw(&address, "POST", &path, body.as_bytes(), &[]));
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let (code, stderr) = server.stop_within(Duration::from_secs(6));
    let took = started.elapsed();
    assert_eq!(
        code,
        Some(0),
        "the server did not stop within 6 s: {stderr}"
    );
    assert!(
        took < Duration::from_millis(2500),
        "the stop took {took:?} with a grace time of 1 s"
    );
    assert!(
        stderr.contains("--shutdown-grace"),
        "the log says what was cut off: {stderr}"
    );
    let answer = in_flight.join().expect("the request thread");
    assert!(
        answer.is_err(),
        "the request was abandoned unanswered, not answered: {answer:?}"
    );
    // Nothing of it was acknowledged, and the game is whole after a restart.
    let server = Server::start(&["--db", &db]);
    assert_eq!(http::state(&server, &spinning), json!({"n": 0}));
}
