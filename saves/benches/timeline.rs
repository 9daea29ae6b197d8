//! The chat timeline on disk (issue 14, see BENCHMARKS.md): the save of a 1,000-message chat with 3
//! swipes per message on a state of 10,000 keys, about 10 changes per reply (`support/src/chat.rs`, the
//! engine's benchmarks: the same chat as `engine/benches/timeline.rs`).
//!
//! Printed before the timings: the save's size (as written by the commits, and compacted) against what
//! MVU's scheme stores for the same chat, a full copy of the variables for every message and swipe,
//! computed from the same states (`state_at` of every step, as compact JSON). Timed: opening the save
//! (reading every record and rebuilding the whole tree), against opening a save of the final state
//! alone in the same run (the floor of any load that ends in that state). Printed after the timings:
//! the CPU time per open of both, which a machine shared with other work inflates far less than the
//! wall time.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group};
use statecraft_engine::{HistoryLimits, Value};
use statecraft_saves::{Durability, Game, NewGame, OpenOptions};

use chat::{MESSAGES, SWIPES, label, state_json};
use statecraft_test_support::chat;

const CHARACTERS: usize = 100;
const FIELDS: usize = 100;

fn unsynced() -> OpenOptions {
    OpenOptions::default().durability(Durability::Unsynced)
}

/// Every step of the chat kept.
fn unbounded() -> HistoryLimits {
    HistoryLimits {
        max_steps: usize::MAX,
        max_bytes: usize::MAX,
    }
}

/// Writes the chat to a new save at `path` as a front end would, one commit per reply.
fn write_chat(path: &Path) -> Game {
    let mut game = Game::create_with(
        path,
        Value::from(&state_json(CHARACTERS, FIELDS)),
        NewGame::default().history(unbounded()),
        unsynced(),
    )
    .expect("create");
    chat::play(CHARACTERS, FIELDS, |batch, options| {
        assert!(
            game.apply_with(batch, options)
                .expect("apply")
                .is_committed()
        );
    });
    game
}

/// The save's size against MVU's full copy per message and swipe, from the same states. The save is
/// compacted on a copy, so that the load is timed on the file as the commits wrote it.
fn sizes(game: &Game, dir: &Path) {
    let written = game.file_len();
    let mut mvu: u64 = 0;
    for message in 0..MESSAGES {
        for swipe in 0..SWIPES {
            let state = game
                .store()
                .state_at(label(message, swipe).as_str())
                .expect("every step is retained");
            mvu += serde_json::to_string(&state.value().to_json())
                .expect("json")
                .len() as u64;
        }
    }
    let copy = dir.join("compacted.save");
    std::fs::copy(game.path(), &copy).expect("copy");
    let mut copy = Game::open_with(&copy, unsynced()).expect("open the copy");
    copy.compact().expect("compact");
    let compacted = copy.file_len();
    println!(
        "chat save: {written} bytes as written, {compacted} compacted; MVU's full state per message and swipe: {mvu} bytes; save / MVU = {:.3}% as written, {:.3}% compacted",
        written as f64 * 100.0 / mvu as f64,
        compacted as f64 * 100.0 / mvu as f64,
    );
}

/// The time `iters` opens take, leaving out closing what each returns (a game must close before the
/// next open, since it holds the save's lock).
fn opened(path: &Path, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = std::time::Instant::now();
        let game = black_box(Game::open_with(path, unsynced()).expect("open"));
        total += start.elapsed();
        drop(game);
    }
    total
}

fn load(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let chat = dir.path().join("chat.save");
    let game = write_chat(&chat);
    sizes(&game, dir.path());
    let last = game.state().clone();
    drop(game);
    let alone = dir.path().join("state-alone.save");
    drop(Game::create_with(&alone, last, NewGame::default(), unsynced()).expect("create"));
    let mut group = c.benchmark_group("open the chat's save (3,000 steps, 10k keys)");
    group.sample_size(20);
    group.bench_function("statecraft, the whole tree", |b| {
        b.iter_custom(|iters| opened(&chat, iters))
    });
    group.bench_function("baseline the final state alone", |b| {
        b.iter_custom(|iters| opened(&alone, iters))
    });
    group.finish();
    cpu_per_open("CPU time, the chat's save", &chat, 40);
    cpu_per_open("CPU time, the final state alone", &alone, 400);
}

/// The CPU time this thread has used, from `/proc/thread-self/stat` (user + system, in ticks of 10 ms:
/// `CLK_TCK` is 100 on Linux), or `None` where that file is not there. Coarse, so only sums over many
/// opens mean anything; it leaves out the time the thread waited for a core, which on a shared machine
/// is most of the wall time.
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // The fields after the command name (which may hold spaces) start with the state, field 3;
    // utime and stime are fields 14 and 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// Opens the save `opens` times and prints the CPU time and the wall time per open.
fn cpu_per_open(name: &str, path: &Path, opens: u32) {
    let Some(before) = thread_cpu() else {
        println!("{name}: no /proc/thread-self/stat, CPU time not measured");
        return;
    };
    let wall = opened(path, u64::from(opens));
    let Some(after) = thread_cpu() else {
        return;
    };
    println!(
        "{name}: {:.1} ms CPU per open and close ({:.1} ms wall per open), over {opens} opens",
        (after - before).as_secs_f64() * 1e3 / f64::from(opens),
        wall.as_secs_f64() * 1e3 / f64::from(opens),
    );
}

criterion_group!(benches, load);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
