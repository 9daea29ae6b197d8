//! What the command prints about a reply stays bounded however often the reply repeats a mistake and
//! however long its lines are: diagnostics of one kind beyond a hundred are summarised ("and N more"),
//! in the human format and in `--format json`, and each report shows a capped excerpt of its line.
//!
//! Each family is run at two sizes four times apart, and the output of the larger must be about the
//! size of the smaller's: printing every diagnostic, or the whole line under each, grows with the
//! input (and with a whole line under each diagnostic on one line, grows quadratically).

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
