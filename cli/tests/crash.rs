//! Crash safety of `statecraft apply --save`, with the real binary: processes killed with SIGKILL at
//! random moments never lose a step whose apply exited 0, never reorder steps, and never leave a save
//! that does not load. Also: concurrent appliers never lose a step (the lock).
//!
//! The suite runs 200 trials; `STATECRAFT_SOAK=10000` runs that many instead (the soak, whose result
//! goes in `BENCHMARKS.md`). `STATECRAFT_CRASH_SEED` replays a run; the seed is printed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use statecraft_engine::{HistoryLimits, Value};
use statecraft_saves::{Game, NewGame};

const BIN: &str = env!("CARGO_BIN_EXE_statecraft");

/// xorshift64*: enough randomness for kill timings, with a seed to replay a failure.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn seed() -> u64 {
    std::env::var("STATECRAFT_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos());
            (nanos as u64) | 1
        })
}

fn apply_command(save: &Path, label: &str, input: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .arg("apply")
        .arg("--save")
        .arg(save)
        .arg("--label")
        .arg(label)
        .arg(input);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// The pushed values in the save's log, after opening it as a restarted front end would.
fn logged(save: &Path) -> Vec<u64> {
    let game = Game::open(save)
        .unwrap_or_else(|error| panic!("the save does not load after a kill: {error}"));
    let state = game.state().to_json();
    let log: Vec<u64> = state["log"]
        .as_array()
        .expect("a log")
        .iter()
        .map(|v| v.as_u64().expect("an index"))
        .collect();
    // The newest retained step is the newest logged push: the history agrees with the state.
    if let (Some(last), Some(step)) = (
        log.last(),
        game.store().history().filter(|s| s.applied).last(),
    ) {
        assert_eq!(
            step.label,
            Some(format!("s{last}").as_str()),
            "history and state disagree"
        );
    }
    log
}

#[test]
fn killed_appliers_never_lose_an_acknowledged_step() {
    let trials: u64 = std::env::var("STATECRAFT_SOAK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let seed = seed();
    println!("crash test: {trials} trials, seed {seed} (STATECRAFT_CRASH_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("crash.save");
    // A short history so that compaction (write beside, rename) runs every twenty-odd steps and the kills
    // land in it too.
    let setup = NewGame::default().history(HistoryLimits {
        max_steps: 4,
        max_bytes: 1 << 24,
    });
    drop(Game::create(&save, Value::from(json!({"log": [], "pad": ""})), setup).unwrap());

    // Calibrate: how long one apply takes here, so that kills spread over its whole life.
    let input = dir.path().join("input.json");
    let mut log: Vec<u64> = Vec::new();
    let mut typical = Duration::ZERO;
    let mut next = 0u64;
    for _ in 0..5 {
        std::fs::write(
            &input,
            json!([{"op": "push", "path": ["log"], "value": next}]).to_string(),
        )
        .unwrap();
        let start = Instant::now();
        let output = apply_command(&save, &format!("s{next}"), &input)
            .output()
            .unwrap();
        typical += start.elapsed();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        log.push(next);
        next += 1;
    }
    typical /= 5;
    let window = typical.as_micros() as u64 * 3 / 2;

    let (mut acked, mut killed_kept, mut killed_lost, mut shrinks) = (0, 0, 0, 0);
    let mut acked_since_check: Vec<u64> = Vec::new();
    let mut tried_since_check: Vec<u64> = Vec::new();
    let mut last_len = std::fs::metadata(&save).unwrap().len();
    for trial in 0..trials {
        let value = next;
        next += 1;
        let pad = "x".repeat(rng.below(8_000) as usize);
        let batch = json!([{"op": "push", "path": ["log"], "value": value}, {"op": "assign", "path": ["pad"], "value": pad}]);
        std::fs::write(&input, batch.to_string()).unwrap();
        let mut child = apply_command(&save, &format!("s{value}"), &input)
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(window)));
        // SIGKILL; an error only means the process already exited, which the status below shows.
        let _ = child.kill();
        let output = child.wait_with_output().unwrap();
        match output.status.code() {
            Some(0) => {
                acked += 1;
                acked_since_check.push(value);
            }
            None => {}
            Some(code) => panic!(
                "trial {trial}: apply exited {code} instead of 0 or being killed: {}",
                String::from_utf8_lossy(&output.stderr)
            ),
        }
        tried_since_check.push(value);
        let len = std::fs::metadata(&save).unwrap().len();
        if len < last_len {
            shrinks += 1;
        }
        last_len = len;
        // Check after most trials; the others leave any torn tail for the next apply process to find.
        if rng.below(4) == 0 && trial + 1 < trials {
            continue;
        }
        let now = logged(&save);
        assert!(
            now.starts_with(&log),
            "trial {trial}: steps before the last check were lost or reordered"
        );
        let fresh = &now[log.len()..];
        let mut expected_order = tried_since_check.iter();
        for value in fresh {
            assert!(
                expected_order.any(|v| v == value),
                "trial {trial}: step {value} is out of order or invented: {fresh:?}"
            );
        }
        for value in &acked_since_check {
            assert!(
                fresh.contains(value),
                "trial {trial}: acknowledged step {value} was lost (log tail {fresh:?})"
            );
        }
        for value in &tried_since_check {
            if !acked_since_check.contains(value) {
                if fresh.contains(value) {
                    killed_kept += 1;
                } else {
                    killed_lost += 1;
                }
            }
        }
        log = now;
        acked_since_check.clear();
        tried_since_check.clear();
    }
    println!(
        "crash test: {trials} trials: {acked} acknowledged (all present, in order); killed before the \
         acknowledgement: {killed_kept} already on disk, {killed_lost} not; {shrinks} compactions seen; \
         typical apply {typical:?}"
    );
    assert!(
        acked > 0 && killed_kept + killed_lost > 0,
        "the kills never or always landed: the test proves nothing"
    );
}

#[test]
fn concurrent_appliers_never_lose_a_step() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("race.save");
    drop(Game::create(&save, Value::from(json!({"log": []})), NewGame::default()).unwrap());
    let children: Vec<_> = (0..12u64)
        .map(|i| {
            let input = dir.path().join(format!("in{i}.json"));
            std::fs::write(
                &input,
                json!([{"op": "push", "path": ["log"], "value": i}]).to_string(),
            )
            .unwrap();
            apply_command(&save, &format!("s{i}"), &input)
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let game = Game::open(&save).unwrap();
    let mut log: Vec<Json> = game.state().to_json()["log"].as_array().unwrap().clone();
    assert_eq!(game.store().history().count(), 12);
    log.sort_by_key(|v| v.as_u64());
    assert_eq!(log, (0..12u64).map(Json::from).collect::<Vec<_>>());
}
