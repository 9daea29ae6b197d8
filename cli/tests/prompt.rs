//! The prompt kit's commands as users and scripts see them: `prompt`, `schema`, `feedback` and
//! `grade`, their stdout, stderr and exit codes.
//!
//! Each test runs the built binary in a temporary folder holding the translators' prompt fixtures
//! (`prompt/tests/prompt/state.json` and `schema.json`), so nothing in the repository is written.
//! Exit codes: 0 success (and `feedback` with nothing to correct), 1 `feedback` with something to
//! correct, 2 usage or IO error.

use std::fs;
use std::path::PathBuf;

use serde_json::{Value, json};

mod support;
use support::run_in;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../prompt/tests/prompt")
}

/// A temporary folder with the fixture state and schema.
fn game() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for name in ["state.json", "schema.json"] {
        fs::copy(fixtures().join(name), dir.path().join(name)).expect("fixture copies");
    }
    dir
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not json ({e}):\n{text}"))
}

#[test]
fn prompt_prints_rules_examples_and_the_visible_state() {
    let dir = game();
    let run = run_in(
        dir.path(),
        &["prompt", "--state", "state.json", "--schema", "schema.json"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("# State updates\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(r#"{"op":"increment","path":["player","gold"],"value":1}"#),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\"stage\": \"village\""),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("goblin king"), "hidden notes leaked");
    let expected = fs::read_to_string(fixtures().join("en.txt")).expect("golden en");
    assert_eq!(
        run.stdout, expected,
        "the command prints the library's prompt"
    );
}

#[test]
fn prompt_speaks_chinese_and_json() {
    let dir = game();
    let zh = run_in(
        dir.path(),
        &[
            "prompt",
            "--state",
            "state.json",
            "--schema",
            "schema.json",
            "--lang",
            "zh",
        ],
        "",
    );
    assert_eq!(zh.code, 0, "{}", zh.stderr);
    assert!(zh.stdout.starts_with("# 状态更新\n"), "{}", zh.stdout);
    let json = run_in(
        dir.path(),
        &["--format", "json", "prompt", "--state", "state.json"],
        "",
    );
    assert_eq!(json.code, 0, "{}", json.stderr);
    let doc = json_of(&json.stdout);
    assert!(
        doc["state"]
            .as_str()
            .is_some_and(|s| s.contains("\"twist\": \"the elder is the goblin king\"")),
        "{doc}"
    );
    assert!(doc["rules"].as_str().is_some_and(|r| r.contains("Ops:")));
    assert!(doc["text"].as_str().is_some_and(|t| t.ends_with("```\n")));
    assert_eq!(doc["tokens"]["state"], doc["tokens"]["full_state"], "{doc}");
    assert_eq!(doc["elided"], json!([]));
}

#[test]
fn prompt_keeps_a_budget_writes_compact_and_asks_a_pass() {
    let dir = game();
    fs::write(dir.path().join("reply.txt"), "Aria buys a rope.").expect("written");
    let budgeted = run_in(
        dir.path(),
        &[
            "--format",
            "json",
            "prompt",
            "--state",
            "state.json",
            "--schema",
            "schema.json",
            "--budget",
            "60",
            "--view",
            "compact",
            "--message",
            "the elder nods",
        ],
        "",
    );
    assert_eq!(budgeted.code, 0, "{}", budgeted.stderr);
    let doc = json_of(&budgeted.stdout);
    assert!(doc["tokens"]["state"].as_u64().unwrap() <= 60, "{doc}");
    assert!(doc["tokens"]["full_state"].as_u64().unwrap() > 60, "{doc}");
    let state = doc["state"].as_str().unwrap();
    assert!(
        state.contains("elder: 10"),
        "the mentioned key first: {state}"
    );
    assert!(state.contains("tokens not shown"), "{state}");
    let pass = run_in(
        dir.path(),
        &[
            "prompt",
            "--state",
            "state.json",
            "--pass",
            "--reply",
            "reply.txt",
        ],
        "",
    );
    assert_eq!(pass.code, 0, "{}", pass.stderr);
    assert!(
        pass.stdout.starts_with("# State update\n"),
        "{}",
        pass.stdout
    );
    assert!(
        pass.stdout.contains("<reply>\nAria buys a rope.\n</reply>"),
        "{}",
        pass.stdout
    );
    let alone = run_in(
        dir.path(),
        &["prompt", "--state", "state.json", "--state-only"],
        "",
    );
    assert_eq!(alone.code, 0, "{}", alone.stderr);
    assert!(
        alone.stdout.starts_with("Current state:\n```json\n{"),
        "{}",
        alone.stdout
    );
    let no_reply = run_in(
        dir.path(),
        &["prompt", "--state", "state.json", "--pass"],
        "",
    );
    assert_eq!(no_reply.code, 2, "{}", no_reply.stderr);
}

#[test]
fn prompt_and_evaluate_read_a_save_at_a_step() {
    let dir = game();
    let new = run_in(
        dir.path(),
        &["new", "--state", "state.json", "game.save"],
        "",
    );
    assert_eq!(new.code, 0, "{}", new.stderr);
    for (batch, label) in [
        (
            r#"[{"op":"assign","path":["quest","stage"],"value":"forest"}]"#,
            "m1",
        ),
        (
            r#"[{"op":"increment","path":["player","gold"],"value":5}]"#,
            "m2",
        ),
    ] {
        let applied = run_in(
            dir.path(),
            &["apply", "--save", "game.save", "--label", label, "-"],
            batch,
        );
        assert_eq!(applied.code, 0, "{}", applied.stderr);
    }
    // The last steps' changes come first in a budgeted view.
    let view = run_in(
        dir.path(),
        &[
            "prompt",
            "--save",
            "game.save",
            "--state-only",
            "--budget",
            "130",
        ],
        "",
    );
    assert_eq!(view.code, 0, "{}", view.stderr);
    assert!(view.stdout.contains("\"gold\": 30"), "{}", view.stdout);
    assert!(
        view.stdout.contains("\"stage\": \"forest\""),
        "{}",
        view.stdout
    );
    let evaluated = run_in(
        dir.path(),
        &[
            "evaluate",
            "--save",
            "game.save",
            "--at",
            "m1",
            "--condition",
            "player.gold == 25 and quest.stage == 'forest'",
            "--condition",
            "/player/gold > 25",
        ],
        "",
    );
    assert_eq!(evaluated.code, 0, "{}", evaluated.stderr);
    assert_eq!(
        evaluated.stdout,
        "true: player.gold == 25 and quest.stage == 'forest'\nfalse: /player/gold > 25\n"
    );
    let bad = run_in(
        dir.path(),
        &[
            "--format",
            "json",
            "evaluate",
            "--state",
            "state.json",
            "--condition",
            "player.gold => 3",
        ],
        "",
    );
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert_eq!(
        json_of(&bad.stdout),
        json!({"results": [{"error": {"code": "expected_operator", "start": 12, "end": 14,
            "message": "\"=>\" is not an operator here: write >="}}]})
    );
    let missing = run_in(
        dir.path(),
        &[
            "evaluate",
            "--save",
            "game.save",
            "--at",
            "m9",
            "--condition",
            "player.gold > 0",
        ],
        "",
    );
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(missing.stderr.contains("m9"), "{}", missing.stderr);
}

#[test]
fn schema_prints_a_tailored_json_schema_or_a_grammar() {
    let dir = game();
    let run = run_in(dir.path(), &["schema", "--schema", "schema.json"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = json_of(&run.stdout);
    assert_eq!(
        doc["$schema"],
        json!("https://json-schema.org/draft/2020-12/schema")
    );
    assert_eq!(doc["type"], json!("array"));
    let branches = doc["items"]["anyOf"]
        .as_array()
        .expect("instruction branches");
    // Increment is offered on numbers only: hp, max_hp, gold, speed, luck, weight, relation values.
    let increments: Vec<&Value> = branches
        .iter()
        .filter(|b| b["properties"]["op"] == json!({"const": "increment"}))
        .map(|b| &b["properties"]["path"]["prefixItems"])
        .collect();
    assert_eq!(increments.len(), 8, "{increments:?}");
    assert!(
        increments
            .iter()
            .all(|p| **p != json!([{"const": "player"}, {"const": "name"}]))
    );
    let gbnf = run_in(
        dir.path(),
        &["schema", "--schema", "schema.json", "--gbnf"],
        "",
    );
    assert_eq!(gbnf.code, 0, "{}", gbnf.stderr);
    assert!(gbnf.stdout.starts_with("root ::= "), "{}", gbnf.stdout);
    assert!(gbnf.stdout.contains("\nws ::= "));
    assert_eq!(run.stderr, "", "the fixture is described whole");
    fs::write(
        dir.path().join("tree.json"),
        r##"{"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}"##,
    )
    .expect("written");
    let tree = run_in(dir.path(), &["schema", "--schema", "tree.json"], "");
    assert_eq!(tree.code, 0, "{}", tree.stderr);
    assert!(
        tree.stderr.starts_with("warning: the schema is recursive"),
        "{}",
        tree.stderr
    );
    let free = run_in(dir.path(), &["schema"], "");
    assert_eq!(free.code, 0, "{}", free.stderr);
    assert_eq!(json_of(&free.stdout)["type"], json!("array"));
}

#[test]
fn feedback_is_silent_and_exits_0_for_a_clean_reply() {
    let dir = game();
    let before = fs::read_to_string(dir.path().join("state.json")).expect("state");
    let run = run_in(
        dir.path(),
        &[
            "feedback",
            "--state",
            "state.json",
            "--schema",
            "schema.json",
            "-",
        ],
        r#"[{"op": "increment", "path": ["player", "hp"], "value": -5}]"#,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("nothing to correct"), "{}", run.stderr);
    let after = fs::read_to_string(dir.path().join("state.json")).expect("state");
    assert_eq!(before, after, "feedback never writes the state");
    // `[]` is how the rules say "nothing changed".
    let nothing = run_in(
        dir.path(),
        &["feedback", "--state", "state.json", "-"],
        "[]\n",
    );
    assert_eq!(nothing.code, 0, "{}{}", nothing.stdout, nothing.stderr);
    assert!(
        nothing.stderr.contains("repair score 100/100"),
        "{}",
        nothing.stderr
    );
}

/// docs/lenient-layer.md: harmless cleaning is nothing to correct (exit 0, said on stderr), and the
/// message still names the preferred form.
#[test]
fn feedback_on_harmless_cleaning_exits_0_with_the_preferred_form() {
    let dir = game();
    let run = run_in(
        dir.path(),
        &["feedback", "--state", "state.json", "-"],
        r#"[{"op": "increment", "path": ["player", "hp"], "value": -5,}]"#,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("nothing to correct"), "{}", run.stderr);
    assert!(
        run.stdout.starts_with("Next time write strict JSON"),
        "{}",
        run.stdout
    );
}

#[test]
fn feedback_names_each_problem_and_the_corrected_form() {
    let dir = game();
    let reply = "Done!\n```json\n[{\"op\": \"assign\", \"path\": [\"player\", \"HP\"], \"value\": \"25\"},\n {\"op\": \"assign\", \"path\": [\"quest\", \"stage\"], \"value\": \"Forest\"}]\n```";
    fs::write(dir.path().join("reply.txt"), reply).expect("reply written");
    let run = run_in(
        dir.path(),
        &[
            "feedback",
            "--state",
            "state.json",
            "--schema",
            "schema.json",
            "reply.txt",
        ],
        "",
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("Your state update was not applied."),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("[{\"op\":\"assign\",\"path\":[\"player\",\"hp\"],\"value\":25},\n {\"op\":\"assign\",\"path\":[\"quest\",\"stage\"],\"value\":\"forest\"}]"),
        "{}",
        run.stdout
    );
    let json = run_in(
        dir.path(),
        &[
            "--format",
            "json",
            "feedback",
            "--state",
            "state.json",
            "--schema",
            "schema.json",
            "reply.txt",
        ],
        "",
    );
    assert_eq!(json.code, 1, "{}", json.stderr);
    let doc = json_of(&json.stdout);
    let problems = doc["problems"].as_array().expect("problems");
    assert!(
        problems.iter().any(|p| p["kind"] == json!("outside_schema")
            && p["instruction"] == json!(0)
            && p["corrected"]["path"] == json!(["player", "hp"])),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p["corrected"]["value"] == json!("forest")),
        "{problems:?}"
    );
}

#[test]
fn feedback_reports_unreadable_replies() {
    let dir = game();
    let run = run_in(
        dir.path(),
        &["feedback", "--state", "state.json"],
        "I think the hero should rest now.",
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.contains("no_instructions"), "{}", run.stdout);
}

#[test]
fn grade_scores_like_a_benchmark() {
    let dir = game();
    fs::write(
        dir.path().join("expect.json"),
        r#"{"/player/hp": 25, "/player/tags/1": "sly"}"#,
    )
    .expect("expectations written");
    let clean = r#"[{"op":"increment","path":["player","hp"],"value":-5},{"op":"push","path":["player","tags"],"value":"sly"}]"#;
    let args = [
        "grade",
        "--state",
        "state.json",
        "--schema",
        "schema.json",
        "--expect",
        "expect.json",
        "-",
    ];
    let run = run_in(dir.path(), &args, clean);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = json_of(&run.stdout);
    assert_eq!(doc["score"], json!(100), "{doc}");
    assert_eq!(
        (&doc["applies"], &doc["in_schema"], &doc["checks_passed"]),
        (&json!(true), &json!(true), &json!(2))
    );
    let fenced = format!("Sure.\n```json\n{clean}\n```");
    let doc = json_of(&run_in(dir.path(), &args, &fenced).stdout);
    assert_eq!(doc["cleanliness"], json!(95), "{doc}");
    assert_eq!(doc["score"], json!(95));
    let wrong = r#"[{"op":"increment","path":["player","hp"],"value":-500}]"#;
    let doc = json_of(&run_in(dir.path(), &args, wrong).stdout);
    assert_eq!(
        (&doc["applies"], &doc["score"], &doc["checks_passed"]),
        (&json!(false), &json!(0), &json!(0)),
        "{doc}"
    );
    assert!(!doc["errors"].as_array().expect("errors").is_empty());
}

#[test]
fn usage_errors_exit_2() {
    let dir = game();
    fs::write(dir.path().join("bad.json"), r#"{"player": {"hp": "full"}}"#).expect("written");
    let run = run_in(
        dir.path(),
        &[
            "feedback",
            "--state",
            "bad.json",
            "--schema",
            "schema.json",
            "-",
        ],
        "[]",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("does not satisfy the schema"),
        "{}",
        run.stderr
    );
    let missing = run_in(dir.path(), &["prompt", "--state", "nope.json"], "");
    assert_eq!(missing.code, 2);
    fs::write(dir.path().join("expect.json"), "[1]").expect("written");
    let bad_expect = run_in(
        dir.path(),
        &[
            "grade",
            "--state",
            "state.json",
            "--expect",
            "expect.json",
            "-",
        ],
        "[]",
    );
    assert_eq!(bad_expect.code, 2, "{}", bad_expect.stderr);
    let bad_lang = run_in(
        dir.path(),
        &["prompt", "--state", "state.json", "--lang", "fr"],
        "",
    );
    assert_eq!(bad_lang.code, 2);
}
