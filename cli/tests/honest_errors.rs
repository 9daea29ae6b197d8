//! Errors that say what is wrong, where, once, and about the right thing: an unusable schema is the
//! schema's fault, a byte-order mark is no reason to refuse a state file, an integer too large for an
//! index is out of range (not "not an integer"), and an option with no effect is refused.

use std::fs;

use serde_json::{Value, json};

mod support;
use support::run_in;

/// A temporary folder holding `state.json` with `state`.
fn folder_with_state(state: &Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    fs::write(dir.path().join("state.json"), state.to_string()).unwrap();
    dir
}

#[test]
fn an_unusable_schema_is_blamed_on_the_schema_by_every_command() {
    let dir = folder_with_state(&json!({"name": "Ann"}));
    fs::write(
        dir.path().join("regex.json"),
        json!({"type": "object", "properties": {"name": {"type": "string", "pattern": "(unclosed"}}})
            .to_string(),
    )
    .unwrap();
    fs::write(
        dir.path().join("ref.json"),
        json!({"$ref": "#/$defs/missing"}).to_string(),
    )
    .unwrap();
    let expected = [
        (
            "regex.json",
            "the schema itself is unusable, at /properties/name/pattern: \"(unclosed\" is not a \"regex\"",
        ),
        (
            "ref.json",
            "the schema itself is unusable, at (root): Pointer '/$defs/missing' does not exist",
        ),
    ];
    for (schema, message) in expected {
        for args in [
            &["apply", "--state", "state.json", "--schema", schema, "-"][..],
            &["new", "g.save", "--state", "state.json", "--schema", schema][..],
            &["schema", "--schema", schema][..],
            &["prompt", "--state", "state.json", "--schema", schema][..],
        ] {
            let run = run_in(dir.path(), args, "[]");
            assert_eq!(run.code, 2, "{args:?}: {run:?}");
            assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
            assert!(
                !run.stderr.contains("violates") && !run.stderr.contains("does not satisfy"),
                "{args:?} blames the state: {}",
                run.stderr
            );
        }
    }
    assert!(!dir.path().join("g.save").exists());
}

#[test]
fn a_state_file_may_start_with_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("state.json"), "\u{feff}{\"hp\": 1}").unwrap();
    let run = run_in(dir.path(), &["apply", "--state", "state.json", "-"], "[]");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&run.stdout).unwrap(),
        json!({"hp": 1})
    );
    let run = run_in(dir.path(), &["new", "g.save", "--state", "state.json"], "");
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn a_splice_start_beyond_any_index_is_out_of_range() {
    let dir = folder_with_state(&json!({"list": [1, 2]}));
    let reply = r#"[{"op": "splice", "path": ["list"], "value": {"start": 18446744073709551615}}]"#;
    let run = run_in(dir.path(), &["apply", "--state", "state.json", "-"], reply);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(
            "splice \"start\" is out of range: 18446744073709551615 is not between -9223372036854775808 and \
             9223372036854775807"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_label_without_a_save_is_refused_not_ignored() {
    let dir = folder_with_state(&json!({"hp": 1}));
    let run = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "--label", "msg-2", "-"],
        "[]",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("the argument '--state <STATE.json>' cannot be used with '--label <L>'"),
        "{}",
        run.stderr
    );
}

#[test]
fn integers_beyond_64_bits_survive_every_read_and_write() {
    let big = "123456789012345678901234567890";
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("state.json"),
        format!(r#"{{"big": {big}, "hp": 1}}"#),
    )
    .unwrap();
    let edit = r#"[{"op": "increment", "path": ["hp"], "value": 1}]"#;
    let run = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "--in-place", "-"],
        edit,
    );
    assert_eq!(run.code, 0, "{run:?}");
    let written = fs::read_to_string(dir.path().join("state.json")).unwrap();
    assert!(written.contains(&format!("\"big\": {big}")), "{written}");
    assert_eq!(
        run_in(dir.path(), &["new", "g.save", "--state", "state.json"], "").code,
        0
    );
    let reply = format!(r#"[{{"op": "assign", "path": ["copy"], "value": {big}}}]"#);
    let run = run_in(dir.path(), &["apply", "--save", "g.save", "-"], &reply);
    assert_eq!(run.code, 0, "{run:?}");
    let run = run_in(dir.path(), &["show", "--save", "g.save"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(&format!("\"big\": {big}")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("\"copy\": {big}")),
        "{}",
        run.stdout
    );
    let run = run_in(
        dir.path(),
        &["convert", "--from", "json", "--to", "mvu", "-"],
        &reply,
    );
    assert!(run.stdout.contains(big), "{run:?}");
}

#[test]
fn a_value_nested_beyond_what_the_parser_builds_is_refused_like_any_value_too_deep() {
    let dir = folder_with_state(&json!({"a": 0, "b": 0}));
    for depth in [100, 300, 5000] {
        let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let reply = format!(
            r#"[{{"op":"assign","path":["a"],"value":{deep}}},{{"op":"assign","path":["b"],"value":1}}]"#
        );
        let run = run_in(
            dir.path(),
            &["apply", "--state", "state.json", "--in-place", "-"],
            &reply,
        );
        assert_eq!(run.code, 1, "depth {depth}: {run:?}");
        assert!(
            run.stderr.contains("/value: the value nests")
                && run.stderr.contains("the limit is 64"),
            "depth {depth}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("ended inside"),
            "depth {depth}: {}",
            run.stderr
        );
        let state: Value =
            serde_json::from_str(&fs::read_to_string(dir.path().join("state.json")).unwrap())
                .unwrap();
        assert_eq!(
            state,
            json!({"a": 0, "b": 0}),
            "depth {depth}: nothing commits"
        );
    }
}

#[test]
fn an_empty_batch_is_a_perfect_reply() {
    let dir = folder_with_state(&json!({"a": 0}));
    let run = run_in(dir.path(), &["--format", "json", "extract", "-"], "[]");
    assert_eq!(run.code, 0, "{run:?}");
    let report: Value = serde_json::from_str(run.stderr.trim()).unwrap();
    assert_eq!(report["score"], 100, "{report}");
    assert_eq!(report["diagnostics"], json!([]), "{report}");
    let human = run_in(dir.path(), &["extract", "-"], "[]\n");
    assert!(
        human.stderr.contains("repair score 100/100"),
        "{}",
        human.stderr
    );
    assert!(
        !human.stderr.contains("warning") && !human.stderr.contains("note"),
        "{}",
        human.stderr
    );
    // Wrapped in a fence, it loses only the fence's penalty.
    let fenced = run_in(
        dir.path(),
        &["--format", "json", "extract", "-"],
        "```json\n[]\n```",
    );
    let report: Value = serde_json::from_str(fenced.stderr.trim()).unwrap();
    assert_eq!(report["score"], 98, "{report}");
}

#[test]
fn grading_an_invalid_reply_lists_its_reasons() {
    let dir = folder_with_state(&json!({"a": 0}));
    let run = run_in(
        dir.path(),
        &["grade", "--state", "state.json", "-"],
        r#"[{"op":"frob","path":["a"]}]"#,
    );
    let grade: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"));
    assert_eq!(grade["valid"], false, "{grade}");
    let errors = grade["errors"].as_array().cloned().unwrap_or_default();
    assert_eq!(errors.len(), 1, "{grade}");
    assert!(
        errors[0]
            .as_str()
            .is_some_and(|e| e.starts_with("line 1, column ") && e.contains("frob")),
        "{grade}"
    );
}
