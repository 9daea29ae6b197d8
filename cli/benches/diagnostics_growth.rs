//! Growth of the command's time with the reply for each adversarial family of issues 12 and 18, in
//! the human format and in `--format json`: every family is doubled four times, from 64 KiB to 1 MiB
//! of reply, and each run is the real binary reading the reply on stdin (`extract`, or `convert --from
//! mvu` for MVU text), so the figures include starting the process. Linear growth shows as a flat
//! throughput across the five sizes. The baseline in the same run is `extract --format json` of a
//! clean batch of the same size: reading without diagnostics.
//!
//! The repair families (one per kind of repair: a fenced array of instructions that each carry that
//! repair) are doubled by instruction count instead, from 2,500 to 40,000 instructions (about 2.6 MB
//! of single-quoted ones), against a clean fenced array of as many instructions in the same run.

use std::io::Write;
use std::process::{Command, Stdio};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const KIB: usize = 1024;

/// A family: its name, the text that repeats, what comes before the repetitions (prose for the
/// family whose diagnostics come after a long text), and the command's arguments.
struct Family {
    name: &'static str,
    unit: &'static str,
    args: &'static [&'static str],
}

const FAMILIES: [Family; 7] = [
    Family {
        name: "baseline: clean batch",
        unit: r#"{"op":"assign","path":["a"],"value":1},"#,
        args: &["extract", "-"],
    },
    Family {
        name: "unknown members on one line",
        unit: r#"{"op":"assign","path":["a"],"value":1,"zz":1},"#,
        args: &["extract", "-"],
    },
    Family {
        name: "invalid ops on one line",
        unit: r#"{"op":"frob","path":["a"],"value":1},"#,
        args: &["extract", "-"],
    },
    Family {
        name: "values without op, one a line",
        unit: "{\"a\":1}\n",
        args: &["extract", "-"],
    },
    Family {
        name: "guessed mvu inserts on one line",
        unit: "_.insert('list', 'x');",
        args: &["convert", "--from", "mvu", "--to", "json", "-"],
    },
    Family {
        name: "braces in prose",
        unit: "Use the {name} template {",
        args: &["extract", "-"],
    },
    Family {
        name: "2000 diagnostics after prose",
        unit: "word ",
        args: &["extract", "-"],
    },
];

/// A repair family: its name, and one instruction carrying the repair, written as the model wrote it
/// (with the comma that follows it, or the line break where the comma is missing).
struct RepairFamily {
    name: &'static str,
    instruction: &'static str,
}

const REPAIR_FAMILIES: [RepairFamily; 9] = [
    RepairFamily {
        name: "repair baseline: clean fenced instructions",
        instruction: r#"{"op": "assign", "path": ["npc7", "mood"], "value": "calm 7"},"#,
    },
    RepairFamily {
        name: "repairs: single quotes",
        instruction: "{'op': 'assign', 'path': ['npc7', 'mood'], 'value': 'calm 7'},",
    },
    RepairFamily {
        name: "repairs: unquoted keys",
        instruction: r#"{op: "assign", path: ["npc7", "mood"], value: "calm 7"},"#,
    },
    RepairFamily {
        name: "repairs: python literals",
        instruction: r#"{"op": "assign", "path": ["npc7", "awake"], "value": True},"#,
    },
    RepairFamily {
        name: "repairs: comments",
        instruction: r#"{"op": "assign", /* npc */ "path": ["npc7", "mood"], "value": "calm 7"}, // seven"#,
    },
    RepairFamily {
        name: "repairs: trailing commas",
        instruction: r#"{"op": "assign", "path": ["npc7", "mood",], "value": "calm 7",},"#,
    },
    RepairFamily {
        name: "repairs: missing commas",
        instruction: r#"{"op": "assign" "path": ["npc7", "mood"] "value": "calm 7"}"#,
    },
    RepairFamily {
        name: "repairs: smart quotes",
        instruction: "{“op”: “assign”, “path”: [“npc7”, “mood”], “value”: “calm 7”},",
    },
    RepairFamily {
        name: "repairs: unclosed containers",
        instruction: r#"{"op": "assign", "path": ["npc7", "mood"], "value": ["calm", 7},"#,
    },
];

/// A fenced array of `n` of the family's instructions, one a line.
fn repaired_reply(family: &RepairFamily, n: usize) -> String {
    let mut text = String::with_capacity(n * (family.instruction.len() + 1) + 16);
    text.push_str("```json\n[\n");
    for _ in 0..n {
        text.push_str(family.instruction);
        text.push('\n');
    }
    text.push_str("]\n```\n");
    text
}

/// About `size` bytes of the family's reply.
fn reply(family: &Family, size: usize) -> String {
    let body = family.unit.repeat(size / family.unit.len());
    match family.name {
        "baseline: clean batch" | "unknown members on one line" | "invalid ops on one line" => {
            format!("[{}]", body.trim_end_matches(','))
        }
        "2000 diagnostics after prose" => format!("{body}\n{}", "{'a': 1} ".repeat(2000)),
        _ => body,
    }
}

fn run(args: &[&str], json: bool, input: &[u8]) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_statecraft"));
    if json {
        command.args(["--format", "json"]);
    }
    let mut child = command
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    // The command reads all of stdin before it writes anything, so writing first cannot block.
    let _ = child.stdin.take().expect("stdin").write_all(input);
    let status = child.wait().expect("the binary finishes");
    assert!(matches!(status.code(), Some(0 | 1)), "{args:?}: {status}");
}

fn bench(c: &mut Criterion) {
    for family in &FAMILIES {
        let mut group = c.benchmark_group(family.name);
        group.sample_size(10);
        let formats: &[bool] = if family.name.starts_with("baseline") {
            &[true]
        } else {
            &[false, true]
        };
        for &json in formats {
            let format = if json { "json" } else { "human" };
            for size in [64 * KIB, 128 * KIB, 256 * KIB, 512 * KIB, 1024 * KIB] {
                let input = reply(family, size);
                group.throughput(Throughput::Bytes(input.len() as u64));
                group.bench_with_input(
                    BenchmarkId::new(format, size / KIB),
                    input.as_bytes(),
                    |b, input| b.iter(|| run(family.args, json, input)),
                );
            }
        }
        group.finish();
    }
    for family in &REPAIR_FAMILIES {
        let mut group = c.benchmark_group(family.name);
        group.sample_size(10);
        let formats: &[bool] = if family.name.starts_with("repair baseline") {
            &[true]
        } else {
            &[false, true]
        };
        for &json in formats {
            let format = if json { "json" } else { "human" };
            for n in [2_500, 5_000, 10_000, 20_000, 40_000] {
                let input = repaired_reply(family, n);
                group.throughput(Throughput::Bytes(input.len() as u64));
                group.bench_with_input(
                    BenchmarkId::new(format, n),
                    input.as_bytes(),
                    |b, input| b.iter(|| run(&["extract", "-"], json, input)),
                );
            }
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
