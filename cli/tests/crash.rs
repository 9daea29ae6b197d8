//! Crash safety of the save commands, with the real binary: `apply --save` (on the current step and, with
//! `--at`, on another: a branch) and `checkout`, killed with SIGKILL at random moments, never lose an
//! operation that exited 0, never leave half of one, and never leave a save that does not load. After
//! every trial the save must be exactly the game an in-memory store plays when given the operations
//! that happened (the acknowledged ones, and killed ones that reached the disk): the same state, tree,
//! labels, current step and visit order. Also: concurrent appliers never lose a step (the lock).
//!
//! The suite runs 200 trials; `STATECRAFT_SOAK=10000` runs that many instead (the soak, whose result
//! goes in `BENCHMARKS.md`). `STATECRAFT_CRASH_SEED` replays a run; the seed is printed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use statecraft_engine::{ApplyOptions, Batch, HistoryLimits, Store, Value};
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

/// One operation of a trial, as the command line runs it.
#[derive(Clone, Debug)]
enum Operation {
    /// A commit on the current step, labelled `s{value}`.
    Apply(u64),
    /// A commit on the step labelled `at` (a swipe or an edit), labelled `s{value}`.
    ApplyAt(u64, String),
    /// A move to the step labelled so.
    Checkout(String),
}

impl Operation {
    fn command(&self, save: &Path, input: &Path) -> Command {
        match self {
            Operation::Apply(value) => apply_command(save, &format!("s{value}"), input),
            Operation::ApplyAt(value, at) => {
                let mut command = apply_command(save, &format!("s{value}"), input);
                command.arg("--at").arg(at);
                command
            }
            Operation::Checkout(label) => {
                let mut command = Command::new(BIN);
                command.arg("checkout").arg("--save").arg(save).arg(label);
                command
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped());
                command
            }
        }
    }

    /// Does the same on the in-memory model.
    fn apply_to(&self, model: &mut Store, batch: &Batch) {
        let commit = |model: &mut Store, value: &u64, at: Option<&String>| {
            let options = ApplyOptions {
                label: Some(format!("s{value}")),
                at: at.map(|at| at.as_str().into()),
                ..ApplyOptions::default()
            };
            assert!(model.apply_with(batch, &options).is_committed(), "{self:?}");
        };
        match self {
            Operation::Apply(value) => commit(model, value, None),
            Operation::ApplyAt(value, at) => commit(model, value, Some(at)),
            Operation::Checkout(label) => {
                model.checkout(label.as_str()).expect("a retained label");
            }
        }
    }

    /// Whether the save shows that this operation happened, given the model before it.
    fn happened(&self, game: &Store, model: &Store) -> bool {
        match self {
            // A new step's label is fresh, and the step is current, so trimming cannot have taken it.
            Operation::Apply(value) | Operation::ApplyAt(value, _) => {
                game.find(format!("s{value}").as_str()).is_ok()
            }
            Operation::Checkout(label) => {
                game.current_step() != model.current_step()
                    || model.find(label.as_str()).ok() == Some(model.current_step())
            }
        }
    }
}

/// The whole game as JSON: state, every step with its parent, label and changes, the current step and
/// the visit order. Two stores with the same view behave the same from here on.
fn view(store: &Store) -> Json {
    let steps: Vec<Json> = store
        .history()
        .map(|s| json!([s.id, s.parent, s.label, s.changes]))
        .collect();
    json!({"state": store.state(), "steps": steps, "current": store.current_step(), "recency": store.recency()})
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
    // A short history so that trimming and compaction (write beside, rename) run every few steps and the
    // kills land in them too.
    let limits = HistoryLimits {
        max_steps: 6,
        max_bytes: 1 << 24,
    };
    let initial = Value::from(json!({"log": [], "pad": ""}));
    drop(Game::create(&save, initial.clone(), NewGame::default().history(limits)).unwrap());
    // Every other command goes through a symbolic link to the save: its lock, its appends and its
    // compactions (write beside, rename) must reach the real file and leave the link a link.
    let link = dir.path().join("link.save");
    std::os::unix::fs::symlink(&save, &link).unwrap();
    // The model: the same operations on an in-memory store, those that happened and only those.
    let mut model = Store::builder(initial)
        .history_limits(limits)
        .build()
        .unwrap();

    // Calibrate: how long one apply takes here, so that kills spread over its whole life.
    let input = dir.path().join("input.json");
    let mut typical = Duration::ZERO;
    let mut next = 0u64;
    for _ in 0..5 {
        let batch = json!([{"op": "push", "path": ["log"], "value": next}]);
        std::fs::write(&input, batch.to_string()).unwrap();
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
        Operation::Apply(next).apply_to(&mut model, &Batch::from_json(&batch).unwrap());
        next += 1;
    }
    typical /= 5;
    let window = typical.as_micros() as u64 * 3 / 2;

    let (mut acked, mut killed_kept, mut killed_lost, mut shrinks) = (0, 0, 0, 0);
    let (mut branches, mut checkouts) = (0, 0);
    let mut last_len = std::fs::metadata(&save).unwrap().len();
    for trial in 0..trials {
        let value = next;
        next += 1;
        let labels: Vec<String> = model
            .history()
            .filter_map(|s| s.label.map(str::to_owned))
            .collect();
        let somewhere = labels[rng.below(labels.len() as u64) as usize].clone();
        let operation = match rng.below(4) {
            0 => Operation::ApplyAt(value, somewhere),
            1 => Operation::Checkout(somewhere),
            _ => Operation::Apply(value),
        };
        let pad = "x".repeat(rng.below(8_000) as usize);
        let batch = json!([{"op": "push", "path": ["log"], "value": value}, {"op": "assign", "path": ["pad"], "value": pad}]);
        std::fs::write(&input, batch.to_string()).unwrap();
        let through = if trial % 2 == 0 { &link } else { &save };
        let mut child = operation.command(through, &input).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(window)));
        // SIGKILL; an error only means the process already exited, which the status below shows.
        let _ = child.kill();
        let output = child.wait_with_output().unwrap();
        let acknowledged = match output.status.code() {
            Some(0) => true,
            None => false,
            Some(code) => panic!(
                "trial {trial}: {operation:?} exited {code} instead of 0 or being killed: {}",
                String::from_utf8_lossy(&output.stderr)
            ),
        };
        // Read-only, so that a torn tail stays for the next command to find and cut.
        let game = Game::open_read_only(&save).unwrap_or_else(|error| {
            panic!("trial {trial}: the save does not load after a kill: {error}")
        });
        // Read-only, damage would load what came before it: a kill must never cause any.
        if let Some(damage) = game.damage() {
            panic!("trial {trial}: a kill damaged the save: {damage}");
        }
        let happened = operation.happened(game.store(), &model);
        assert!(
            happened || !acknowledged,
            "trial {trial}: acknowledged {operation:?} was lost"
        );
        if happened {
            operation.apply_to(&mut model, &Batch::from_json(&batch).unwrap());
            match operation {
                Operation::ApplyAt(..) => branches += 1,
                Operation::Checkout(_) => checkouts += 1,
                Operation::Apply(_) => {}
            }
        }
        match (acknowledged, happened) {
            (true, _) => acked += 1,
            (false, true) => killed_kept += 1,
            (false, false) => killed_lost += 1,
        }
        assert_eq!(
            view(game.store()),
            view(&model),
            "trial {trial}: after {operation:?} (acknowledged: {acknowledged}), the save is not the game the model played"
        );
        drop(game);
        let len = std::fs::metadata(&save).unwrap().len();
        if len < last_len {
            shrinks += 1;
        }
        last_len = len;
    }
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link to the save was replaced by a file"
    );
    println!(
        "crash test: {trials} trials: {acked} acknowledged (all present); killed before the \
         acknowledgement: {killed_kept} already on disk, {killed_lost} not; {branches} branch commits and \
         {checkouts} checkouts done; {shrinks} compactions seen; typical apply {typical:?}"
    );
    assert!(
        acked > 0 && killed_kept + killed_lost > 0,
        "the kills never or always landed: the test proves nothing"
    );
    assert!(
        branches > 0 && checkouts > 0,
        "no branch commit or no checkout reached the save: the test proves nothing about them"
    );
}

#[test]
fn concurrent_appliers_never_lose_a_step() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("race.save");
    drop(Game::create(&save, Value::from(json!({"log": []})), NewGame::default()).unwrap());
    // Half of them go through a symbolic link: one lock must cover both names of the save.
    let link = dir.path().join("link.save");
    std::os::unix::fs::symlink(&save, &link).unwrap();
    let children: Vec<_> = (0..12u64)
        .map(|i| {
            let input = dir.path().join(format!("in{i}.json"));
            std::fs::write(
                &input,
                json!([{"op": "push", "path": ["log"], "value": i}]).to_string(),
            )
            .unwrap();
            let through = if i % 2 == 0 { &link } else { &save };
            apply_command(through, &format!("s{i}"), &input)
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
