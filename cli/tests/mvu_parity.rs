//! MVU text through the command, where real replies break: text MVU would not run is skipped with a
//! warning and the rest applies (`--mvu-unrunnable skip`, the default) or refuses the reply
//! (`reject`); `<JSONPatch>` blocks inside MVU text convert; evaluated math applies (docs/mvu.md, docs/cli.md).

use std::fs;

use serde_json::{Value, json};

mod support;
use support::run_in;

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not json ({e}): {text}"))
}

/// Whether `stderr` reports a diagnostic of `kind` at `severity` (`warning: … [kind]`).
fn reported(stderr: &str, severity: &str, kind: &str) -> bool {
    stderr.lines().any(|line| {
        line.starts_with(&format!("{severity}: ")) && line.ends_with(&format!("[{kind}]"))
    })
}

fn folder_with_state(state: &Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    fs::write(dir.path().join("state.json"), state.to_string()).unwrap();
    dir
}

/// A reply whose first command has no `;`; MVU drops it and runs the second.
const HALF_RUNNABLE: &str =
    "The hero drinks a potion.\n_.set('hero.hp', 10, 4)\n_.set('hero.mp', 5, 3);//spell\n";

#[test]
fn apply_commits_the_runnable_commands_and_warns_about_the_rest() {
    // The same under every profile: text MVU would not run is skipped however commands then apply.
    for profile in ["strict", "mvu", "mvu-zod"] {
        let dir = folder_with_state(&json!({"hero": {"hp": 10, "mp": 5}}));
        let run = run_in(
            dir.path(),
            &["apply", "--state", "state.json", "--profile", profile, "-"],
            HALF_RUNNABLE,
        );
        assert_eq!(run.code, 0, "{profile}: {run:?}");
        assert_eq!(parse(&run.stdout), json!({"hero": {"hp": 10, "mp": 3}}));
        assert!(
            reported(&run.stderr, "warning", "mvu_missing_semicolon"),
            "{profile}: {}",
            run.stderr
        );
    }
}

#[test]
fn apply_with_reject_refuses_the_whole_reply() {
    let dir = folder_with_state(&json!({"hero": {"hp": 10, "mp": 5}}));
    let run = run_in(
        dir.path(),
        &[
            "apply",
            "--state",
            "state.json",
            "--mvu-unrunnable",
            "reject",
            "-",
        ],
        HALF_RUNNABLE,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        reported(&run.stderr, "error", "mvu_missing_semicolon"),
        "{}",
        run.stderr
    );
}

#[test]
fn extract_and_convert_exit_0_when_text_was_skipped() {
    let dir = tempfile::tempdir().unwrap();
    for text in [
        "_.set('a', 1)",
        "_.set('a', 1) ;",
        "_.set('name'",
        "_.set('name');",
        "_.add('a', 5, 6);",
        "_.add('path', 5)",
    ] {
        let run = run_in(dir.path(), &["extract", "-"], text);
        assert_eq!(run.code, 0, "{text}: {run:?}");
        assert_eq!(parse(&run.stdout), json!([]), "{text}");
        assert!(run.stderr.contains("warning: "), "{text}: {}", run.stderr);

        let run = run_in(
            dir.path(),
            &["convert", "--from", "mvu", "--to", "json", "-"],
            text,
        );
        assert_eq!(run.code, 0, "{text}: {run:?}");
        assert_eq!(parse(&run.stdout), json!([]), "{text}");
        assert!(run.stderr.contains("warning: "), "{text}: {}", run.stderr);

        let run = run_in(
            dir.path(),
            &[
                "convert",
                "--from",
                "mvu",
                "--to",
                "json",
                "--mvu-unrunnable",
                "reject",
                "-",
            ],
            text,
        );
        assert_eq!(run.code, 1, "{text}: {run:?}");
    }
}

#[test]
fn convert_from_mvu_reads_json_patch_blocks_in_text_order() {
    let dir = tempfile::tempdir().unwrap();
    let text = "_.set('a', 1);\n<JSONPatch>\n[{\"op\": \"delta\", \"path\": \"/gold\", \"value\": -5}, {\"op\": \"insert\", \"path\": \"/bag/-\", \"value\": \"rope\"}]\n</JSONPatch>\n_.set('b', 2);";
    let run = run_in(
        dir.path(),
        &["convert", "--from", "mvu", "--to", "json", "-"],
        text,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        parse(&run.stdout),
        json!([
            {"op": "assign", "path": ["a"], "value": 1},
            {"op": "increment", "path": ["gold"], "value": -5},
            {"op": "add", "path": ["bag", "-"], "value": "rope"},
            {"op": "assign", "path": ["b"], "value": 2}
        ])
    );
}

#[test]
fn convert_of_text_with_nothing_in_it_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(
        dir.path(),
        &["convert", "--from", "mvu", "--to", "json", "-"],
        "<JSONPatch>[]</JSONPatch>",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(parse(&run.stdout), json!([]));
    assert!(
        reported(&run.stderr, "warning", "mvu_no_commands"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_score_raised_by_an_evaluated_expression_fifty_times() {
    let dir = folder_with_state(&json!({"score": 0}));
    let reply = "_.add('score', sqrt(16));\n".repeat(50);
    let run = run_in(dir.path(), &["apply", "--state", "state.json", "-"], &reply);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(parse(&run.stdout), json!({"score": 200}));
}

#[test]
fn quoting_and_yaml_values_reach_the_state() {
    let dir = folder_with_state(&json!({}));
    let reply = "_.set('line', 'it''s a string');\n_.set('dir', 'C:\\Users\\name');\n_.set('awake', True);\n_.set('tags', [x, y]);\n_.set(\\\"a.b\\\", 1);\n";
    let run = run_in(dir.path(), &["apply", "--state", "state.json", "-"], reply);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        parse(&run.stdout),
        json!({
            "line": "it's a string",
            "dir": "C:\\Users\\name",
            "awake": true,
            "tags": ["x", "y"],
            "a": {"b": 1}
        })
    );
}
