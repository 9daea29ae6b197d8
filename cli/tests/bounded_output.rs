//! What the command prints about a reply stays bounded however often the reply repeats a mistake and
//! however long its lines are: diagnostics of one kind beyond a hundred are summarised ("and N more"),
//! in the human format and in `--format json`, and each report shows a capped excerpt of its line.
//!
//! Each family is run at two sizes four times apart, and the output of the larger must be about the
//! size of the smaller's: printing every diagnostic, or the whole line under each, grows with the
//! input (and with a whole line under each diagnostic on one line, grows quadratically).
//!
//! The time it takes stays linear too. Thousands of instructions that each carry a repair (one family
//! per kind of repair), thousands of problems in one instruction or one patch document: each is read
//! at two sizes four times apart, and the processor time of the larger must stay under 6.5 times the
//! smaller's, where linear growth gives at most 4 and the quadratic walks this replaced gave 7 to 17.
//! Processor time, not the wall clock, so that a loaded machine does not fail the test; a ratio, not
//! a figure, so that a slow one does not either.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

mod support;
use support::{Run, run_in};

/// A reply family: the text for `n` repetitions, and the command that reads it.
struct Family {
    name: &'static str,
    text: fn(usize) -> String,
    args: &'static [&'static str],
}

fn families() -> Vec<Family> {
    vec![
        Family {
            name: "unknown members on one line",
            text: |n| {
                let one = r#"{"op":"assign","path":["a"],"value":1,"zz":1}"#;
                format!("[{}]", vec![one; n].join(","))
            },
            args: &["extract", "-"],
        },
        Family {
            name: "invalid ops on one line",
            text: |n| {
                let one = r#"{"op":"frob","path":["a"],"value":1}"#;
                format!("[{}]", vec![one; n].join(","))
            },
            args: &["extract", "-"],
        },
        Family {
            name: "values without op, one a line",
            text: |n| "{\"a\":1}\n".repeat(n),
            args: &["extract", "-"],
        },
        Family {
            name: "guessed mvu inserts on one line",
            text: |n| "_.insert('list', 'x');".repeat(n),
            args: &["convert", "--from", "mvu", "--to", "json", "-"],
        },
        Family {
            name: "braces in prose",
            text: |n| "Use the {name} template {".repeat(n),
            args: &["extract", "-"],
        },
        Family {
            name: "diagnostics after a long line of prose",
            text: |n| format!("{} {}", "word ".repeat(200 * n), "{'a': 1} ".repeat(50)),
            args: &["extract", "-"],
        },
    ]
}

fn run(family: &Family, n: usize, json: bool) -> Run {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut args: Vec<&str> = Vec::new();
    if json {
        args.extend(["--format", "json"]);
    }
    args.extend(family.args);
    let run = run_in(dir.path(), &args, &(family.text)(n));
    assert!(
        run.code == 0 || run.code == 1,
        "{} at {n}: {run:?}",
        family.name
    );
    run
}

#[test]
fn diagnostics_stay_bounded_as_the_reply_grows_in_both_formats() {
    for family in families() {
        for json in [false, true] {
            let small = run(&family, 300, json);
            let large = run(&family, 1200, json);
            let (small_len, large_len) = (small.stderr.len(), large.stderr.len());
            assert!(
                large_len <= small_len + small_len / 10 + 200,
                "{} (json: {json}): {small_len} bytes of diagnostics at 300, {large_len} at 1200:\n{}",
                family.name,
                &large.stderr[..large.stderr.len().min(3000)]
            );
            // No line shows more than a capped excerpt of the source or of a message.
            let longest = large.stderr.lines().map(str::len).max().unwrap_or(0);
            if !json {
                assert!(longest <= 600, "{}: a line of {longest} bytes", family.name);
            }
        }
    }
}

#[test]
fn diagnostics_beyond_a_hundred_of_one_kind_are_counted_in_one_summary() {
    let family = &families()[0];
    let human = run(family, 1000, false);
    assert!(
        human
            .stderr
            .contains("and 900 more unknown_member diagnostics from here on"),
        "{}",
        human.stderr
    );
    // Only the listing is summarised: every instruction is read.
    let batch: Value = serde_json::from_str(&human.stdout).unwrap_or_default();
    assert_eq!(batch.as_array().map(Vec::len), Some(1000));
    let json = run(family, 1000, true);
    let report: Value = serde_json::from_str(json.stderr.lines().next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {}", json.stderr));
    let diagnostics = report["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let count = |kind: &str| diagnostics.iter().filter(|d| d["kind"] == kind).count();
    assert_eq!(count("unknown_member"), 100);
    assert_eq!(count("diagnostics_elided"), 1);
    // The counts of what was cleaned stay exact.
    assert_eq!(report["report"]["unknown_members"], 1000);
}

#[test]
fn an_excerpt_of_a_long_line_shows_the_place_and_its_true_column() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let prose = "word ".repeat(20_000);
    let run = run_in(dir.path(), &["extract", "-"], &format!("{prose}{{'a': 1}}"));
    assert_eq!(run.code, 0, "{run:?}");
    // The value without op is at column 100,001 of line 1, and the excerpt around it is short.
    assert!(run.stderr.contains("<stdin>:1:100001"), "{}", run.stderr);
    assert!(run.stderr.contains("…word word"), "{}", run.stderr);
    assert!(run.stderr.len() < 3000, "{} bytes", run.stderr.len());
}

/// docs/cli.md: `…` marks where a line goes on, on both sides, also when several reports share one
/// excerpt wider than a terminal; the renderer never cuts it again with `...`.
#[test]
fn an_excerpt_cut_on_both_sides_is_marked_the_same_on_both() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let one = r#"{"op": "assign", "path": ["hp"], "value": tru }"#;
    let reply = format!("[{}]", vec![one; 20].join(", "));
    let run = run_in(dir.path(), &["extract", "-"], &reply);
    assert_eq!(run.code, 0, "{run:?}");
    let shown: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("1 | "))
        .collect();
    assert!(
        shown
            .iter()
            .any(|line| line.starts_with("1 | …") && line.ends_with('…')),
        "{}",
        run.stderr
    );
    for line in shown {
        assert!(line.ends_with('…') || line.ends_with("}]"), "{line}");
        assert!(!line.contains("..."), "{line}");
    }
}

/// A family whose reading time must grow linearly: the text for `n` units, the command that reads it,
/// and the repair that the JSON report must count at least once per unit, so that the family is what
/// it claims to be. `convert --from jsonpatch` lists every problem of a document (a patch applies
/// whole or not at all), so the size of what it prints is not checked.
struct Growth {
    name: &'static str,
    text: fn(usize) -> String,
    args: &'static [&'static str],
    repair: Option<&'static str>,
    /// How many units the smaller reply has; the larger has four times as many.
    small: usize,
}

/// The command that reads a JSON Patch document.
const PATCH: &[&str] = &["convert", "--from", "jsonpatch", "--to", "json", "-"];

/// A fenced array of `n` instructions, one a line, each written by `instruction` and followed by
/// `separator` (but the last).
fn fenced(n: usize, separator: &str, instruction: impl Fn(usize) -> String) -> String {
    let lines: Vec<String> = (0..n).map(instruction).collect();
    format!("```json\n[\n{}\n]\n```\n", lines.join(separator))
}

/// One family per kind of repair the issue names (thousands of instructions, each carrying that
/// repair), then the other places where one problem's diagnostic looked at all the others.
fn growth_families() -> Vec<Growth> {
    const EXTRACT: &[&str] = &["extract", "-"];
    vec![
        Growth {
            name: "single quotes",
            text: |n| {
                fenced(n, ",\n", |i| {
                    format!("{{'op': 'assign', 'path': ['npc{i}', 'mood'], 'value': 'calm {i}'}}")
                })
            },
            args: EXTRACT,
            repair: Some("single_quotes"),
            small: SMALL,
        },
        Growth {
            name: "unquoted keys",
            text: |n| {
                fenced(n, ",\n", |i| {
                    format!(r#"{{op: "assign", path: ["npc{i}", "mood"], value: "calm {i}"}}"#)
                })
            },
            args: EXTRACT,
            repair: Some("unquoted_key"),
            small: SMALL,
        },
        Growth {
            name: "python literals",
            text: |n| {
                fenced(n, ",\n", |i| {
                    let literal = ["True", "False", "None"][i % 3];
                    format!(
                        r#"{{"op": "assign", "path": ["npc{i}", "awake"], "value": {literal}}}"#
                    )
                })
            },
            args: EXTRACT,
            repair: Some("python_literal"),
            small: SMALL,
        },
        Growth {
            name: "line and block comments",
            text: |n| {
                fenced(n, "\n", |i| {
                    if i % 2 == 0 {
                        format!(
                            r#"{{"op": "assign", "path": ["npc{i}", "mood"], /* npc {i} */ "value": "calm"}},"#
                        )
                    } else {
                        format!(
                            r#"{{"op": "assign", "path": ["npc{i}", "mood"], "value": "calm"}}, // npc {i}"#
                        )
                    }
                })
            },
            args: EXTRACT,
            repair: Some("comment"),
            small: SMALL,
        },
        Growth {
            name: "trailing commas",
            text: |n| {
                fenced(n, ",\n", |i| {
                    format!(r#"{{"op": "assign", "path": ["npc{i}", "mood",], "value": "calm",}}"#)
                })
            },
            args: EXTRACT,
            repair: Some("trailing_comma"),
            small: SMALL,
        },
        Growth {
            name: "missing commas",
            text: |n| {
                fenced(n, "\n", |i| {
                    format!(r#"{{"op": "assign" "path": ["npc{i}", "mood"] "value": "calm"}}"#)
                })
            },
            args: EXTRACT,
            repair: Some("missing_comma"),
            small: SMALL,
        },
        Growth {
            name: "smart quotes",
            text: |n| {
                fenced(n, ",\n", |i| {
                    format!("{{“op”: “assign”, “path”: [“npc{i}”, “mood”], “value”: “calm {i}”}}")
                })
            },
            args: EXTRACT,
            repair: Some("smart_quotes"),
            small: SMALL,
        },
        Growth {
            name: "unclosed containers",
            text: |n| {
                fenced(n, ",\n", |i| {
                    format!(
                        r#"{{"op": "assign", "path": ["npc{i}", "mood"], "value": ["calm", {i}}}"#
                    )
                })
            },
            args: EXTRACT,
            repair: Some("missing_closer"),
            small: SMALL,
        },
        Growth {
            name: "unknown members in one instruction",
            text: |n| {
                let members: String = (0..n).map(|i| format!(", \"zz{i}\": {i}")).collect();
                format!(r#"[{{"op": "assign", "path": ["a"], "value": 1{members}}}]"#)
            },
            args: EXTRACT,
            repair: None,
            small: SMALL,
        },
        Growth {
            name: "single-quoted patch operations in mvu text",
            text: |n| {
                let operations: Vec<String> = (0..n)
                    .map(|i| {
                        format!("{{'op': 'replace', 'path': '/npc{i}/mood', 'value': 'calm {i}'}}")
                    })
                    .collect();
                format!(
                    "_.set('turn', 1);\n<JSONPatch>\n[\n{}\n]\n</JSONPatch>\n",
                    operations.join(",\n")
                )
            },
            args: &["convert", "--from", "mvu", "--to", "json", "-"],
            repair: None,
            small: SMALL,
        },
        Growth {
            name: "patch operations each with an unknown member",
            text: |n| {
                let operations: Vec<String> = (0..n)
                    .map(|i| {
                        format!(r#"{{"op": "add", "path": "/npc{i}", "value": {i}, "zz": 1}}"#)
                    })
                    .collect();
                format!("[\n{}\n]\n", operations.join(",\n"))
            },
            args: PATCH,
            repair: None,
            small: SMALL / 2,
        },
        Growth {
            name: "unknown members in one patch operation",
            text: |n| {
                let members: String = (0..n).map(|i| format!(",\n\"zz{i}\": {i}")).collect();
                format!(r#"[{{"op": "add", "path": "/a", "value": 1{members}}}]"#)
            },
            args: PATCH,
            repair: None,
            small: SMALL / 2,
        },
    ]
}

/// Runs `statecraft args…` on `stdin` and returns what it did with the processor time it used (user
/// and system), which other work on the machine does not add to as it adds to the wall clock.
// The child is reaped by `wait4` in `wait_with_usage`, which clippy does not see.
#[allow(clippy::zombie_processes)]
fn timed_run(args: &[&str], stdin: &str) -> (Run, Duration) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_statecraft"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    // The output is read while the input is written: a large batch on stdout would fill its pipe.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            String::from_utf8(bytes).expect("the output is utf-8")
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let _ = child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes());
    let (code, cpu) = wait_with_usage(&child);
    let run = Run {
        code,
        stdout: stdout.join().expect("stdout is read"),
        stderr: stderr.join().expect("stderr is read"),
    };
    (run, cpu)
}

/// Waits for `child` and returns its exit code and the processor time it used. `wait4` is the one
/// call that gives one child's own resource usage; the standard library's `wait` does not.
#[allow(unsafe_code)]
fn wait_with_usage(child: &std::process::Child) -> (i32, Duration) {
    let pid = libc::pid_t::try_from(child.id()).expect("a process id");
    let mut status = 0;
    // SAFETY: `wait4` writes only to the two locals it is given, which live through the call; an
    // all-zero `rusage` is a valid value of that plain C struct.
    let (reaped, usage) = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let reaped = libc::wait4(pid, &mut status, 0, &mut usage);
        (reaped, usage)
    };
    assert_eq!(reaped, pid, "waited for the child");
    assert!(libc::WIFEXITED(status), "the child exited: status {status}");
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    (
        libc::WEXITSTATUS(status),
        time(usage.ru_utime) + time(usage.ru_stime),
    )
}

/// How many units the smaller reply of most families has. A patch document lists every problem, and
/// the engine takes at most 10,000 operations: its families have half as many.
const SMALL: usize = 2_500;

/// How much more time the larger reply may take: linear growth gives at most 4 (less, as starting
/// the process costs the same at both sizes), quadratic growth up to 16.
const MAX_GROWTH: f64 = 6.5;

#[test]
fn reading_time_grows_linearly_with_repairs_and_problems_in_both_formats() {
    for family in growth_families() {
        for json in [false, true] {
            let mut args: Vec<&str> = Vec::new();
            if json {
                args.extend(["--format", "json"]);
            }
            args.extend(family.args);
            let (small_n, large_n) = (family.small, 4 * family.small);
            let (small_text, large_text) = ((family.text)(small_n), (family.text)(large_n));
            // The least of up to three tries at each size: a busy machine only ever adds time.
            let (mut small, mut large) = (Duration::MAX, Duration::MAX);
            for _ in 0..3 {
                let (small_run, small_cpu) = timed_run(&args, &small_text);
                let (large_run, large_cpu) = timed_run(&args, &large_text);
                for (run, n) in [(&small_run, small_n), (&large_run, large_n)] {
                    assert!(
                        run.code == 0 || run.code == 1,
                        "{} at {n}: {run:?}",
                        family.name
                    );
                    if let (true, Some(code)) = (json, family.repair) {
                        let report: Value =
                            serde_json::from_str(run.stderr.lines().next().unwrap_or_default())
                                .unwrap_or_else(|e| panic!("{e}: {}", run.stderr));
                        let count = report["report"]["repairs"][code].as_u64().unwrap_or(0);
                        assert!(
                            count >= n as u64,
                            "{}: {count} {code} repairs at {n}",
                            family.name
                        );
                        assert_eq!(report["report"]["instructions"], n, "{}", family.name);
                    }
                }
                // What is printed stays bounded here too.
                let (small_len, large_len) = (small_run.stderr.len(), large_run.stderr.len());
                assert!(
                    family.args == PATCH || large_len <= small_len + small_len / 10 + 200,
                    "{} (json: {json}): {small_len} bytes of diagnostics at {small_n}, {large_len} at {large_n}",
                    family.name
                );
                small = small.min(small_cpu);
                large = large.min(large_cpu);
                if large.as_secs_f64() <= MAX_GROWTH * small.as_secs_f64() {
                    break;
                }
            }
            let growth = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
            assert!(
                growth <= MAX_GROWTH,
                "{} (json: {json}): {small:?} of processor time at {small_n}, {large:?} at {large_n} ({growth:.1}x)",
                family.name
            );
        }
    }
}
