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
