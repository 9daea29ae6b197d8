//! The `statecraft` binary as users and scripts see it: stdout, stderr and exit codes of every command
//! (docs/cli.md), on fixtures and on every scenario in `examples/`.
//!
//! Each test runs the built binary in a temporary folder, so files the commands write (`--in-place`,
//! saves) never touch the repository. Exit codes: 0 success, 1 rejected batch or failed expectation,
//! 2 usage or IO error.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

mod support;
use support::run_in;

/// A temporary folder holding `state.json` with `state`.
fn folder_with_state(state: &Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    fs::write(
        dir.path().join("state.json"),
        serde_json::to_string(state).unwrap(),
    )
    .unwrap();
    dir
}

fn hero() -> Value {
    json!({"player": {"hp": 100, "gold": 5, "bag": []}})
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not json ({e}): {text}"))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

// ---- apply --state -------------------------------------------------------------------------------

#[test]
fn apply_commits_a_raw_reply_and_prints_the_new_state() {
    let dir = folder_with_state(&hero());
    let reply = "The goblin strikes.\n```json\n[{\"op\":\"assign\",\"path\":\"player.hp\",\"value\":90,},]\n```\nOuch.";
    let run = run_in(dir.path(), &["apply", "--state", "state.json", "-"], reply);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        parse(&run.stdout),
        json!({"player": {"hp": 90, "gold": 5, "bag": []}})
    );
    // The repairs are shown with the source line and a caret.
    assert!(run.stderr.contains("trailing_comma"), "{}", run.stderr);
    assert!(run.stderr.contains("<stdin>:3:"), "{}", run.stderr);
    assert!(run.stderr.contains('^'), "{}", run.stderr);
    // Without --in-place the file is left as it was.
    assert_eq!(
        parse(&fs::read_to_string(dir.path().join("state.json")).unwrap()),
        hero()
    );
}

#[test]
fn apply_reads_a_json_batch_from_a_file_and_keeps_number_kinds() {
    let dir = folder_with_state(&json!({"a": 1, "b": 2.5}));
    fs::write(
        dir.path().join("batch.json"),
        r#"[{"op":"increment","path":["a"],"value":2},{"op":"assign","path":["c"],"value":5.0}]"#,
    )
    .unwrap();
    let run = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "batch.json"],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "{\n  \"a\": 3,\n  \"b\": 2.5,\n  \"c\": 5.0\n}\n"
    );
    assert_eq!(run.stderr, "");
}

#[test]
fn apply_rejects_an_old_value_conflict_with_exit_1_and_nothing_on_stdout() {
    let dir = folder_with_state(&hero());
    let before = fs::read(dir.path().join("state.json")).unwrap();
    let batch = r#"[{"op":"assign","path":["player","gold"],"value":9},{"op":"assign","path":["player","hp"],"value":1,"old":50}]"#;
    let run = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "--in-place", "-"],
        batch,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("rejected: the batch changed nothing (1 problem)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("instruction 1, at /player/hp:"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("[old_mismatch]"), "{}", run.stderr);
    assert_eq!(
        fs::read(dir.path().join("state.json")).unwrap(),
        before,
        "the state file is untouched"
    );
}

#[test]
fn apply_rejects_an_invalid_instruction_with_exit_1() {
    let dir = folder_with_state(&hero());
    let run = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "-"],
        r#"[{"op":"explode","path":["player"]}]"#,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("error"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("rejected: the input holds invalid instructions"),
        "{}",
        run.stderr
    );
}

#[test]
fn apply_rejects_a_schema_violation_and_names_the_location() {
    let dir = folder_with_state(&hero());
    fs::write(
        dir.path().join("schema.json"),
        r#"{"type":"object","properties":{"player":{"type":"object","properties":{"hp":{"type":"integer","minimum":0}}}}}"#,
    )
    .unwrap();
    let batch = r#"{"op":"increment","path":["player","hp"],"value":-150}"#;
    let run = run_in(
        dir.path(),
        &[
            "apply",
            "--state",
            "state.json",
            "--schema",
            "schema.json",
            "-",
        ],
        batch,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("/player/hp"), "{}", run.stderr);
    assert!(run.stderr.contains("[schema_violation]"), "{}", run.stderr);
}

#[test]
fn concurrent_in_place_applies_lose_no_change() {
    use std::io::Write;
    let dir = folder_with_state(&json!({"n": 0}));
    // Sixteen commands at once, each adding 1: without the state file's lock most of them read the
    // same old state and the last replacement wins.
    let children: Vec<_> = (0..16)
        .map(|_| {
            let mut child = Command::new(env!("CARGO_BIN_EXE_statecraft"))
                .args(["apply", "--state", "state.json", "--in-place", "-"])
                .current_dir(dir.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(br#"[{"op":"increment","path":["n"],"value":1}]"#)
                .unwrap();
            child
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{output:?}");
    }
    let state = parse(&fs::read_to_string(dir.path().join("state.json")).unwrap());
    assert_eq!(state, json!({"n": 16}));
    assert!(
        !dir.path().join("state.json.lock").exists(),
        "the lock file is removed"
    );
}

#[test]
fn apply_in_place_writes_the_state_back_and_prints_nothing() {
    let dir = folder_with_state(&hero());
    let run = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "--in-place", "-"],
        r#"{"op":"push","path":["player","bag"],"value":"rope"}"#,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "");
    let written = parse(&fs::read_to_string(dir.path().join("state.json")).unwrap());
    assert_eq!(
        written,
        json!({"player": {"hp": 100, "gold": 5, "bag": ["rope"]}})
    );
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        1,
        "no temporary file is left behind: {leftovers:?}"
    );
}

#[test]
fn apply_translates_mvu_commands_and_only_warns_about_stale_old_values() {
    let dir = folder_with_state(&json!({"悠纪": {"好感度": 33}}));
    let reply = "<UpdateVariable>\n_.set('悠纪.好感度', 30, 35);//愉快的讨论\n</UpdateVariable>";
    let run = run_in(dir.path(), &["apply", "--state", "state.json", "-"], reply);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(parse(&run.stdout), json!({"悠纪": {"好感度": 35}}));
    assert!(run.stderr.contains("warnings:"), "{}", run.stderr);
    assert!(run.stderr.contains("[old_mismatch]"), "{}", run.stderr);
}

#[test]
fn apply_substitutes_sillytavern_macros_in_mvu_text() {
    let dir = folder_with_state(&json!({"小林": {"金钱": 500}}));
    let reply = "_.set('<user>.金钱', 500, 420);//买了巧克力\n_.add('{{user}}.金钱', -20);\n";
    let run = run_in(
        dir.path(),
        &[
            "apply",
            "--state",
            "state.json",
            "--macro",
            "user=小林",
            "-",
        ],
        reply,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(parse(&run.stdout), json!({"小林": {"金钱": 400}}));
    let bad = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "--macro", "user", "-"],
        reply,
    );
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(bad.stderr.contains("expected NAME=VALUE"), "{}", bad.stderr);
}

#[test]
fn apply_repairs_a_schema_violation_with_schema_violation_repair() {
    let dir = folder_with_state(&hero());
    fs::write(
        dir.path().join("schema.json"),
        r#"{"type":"object","properties":{"player":{"type":"object","properties":{"hp":{"type":"integer","minimum":0,"maximum":100},"gold":{"type":"integer"}}}}}"#,
    )
    .unwrap();
    let batch = r#"[{"op":"increment","path":["player","hp"],"value":-150},{"op":"assign","path":["player","gold"],"value":"7"}]"#;
    let args = |policy: &'static str| {
        [
            "apply",
            "--state",
            "state.json",
            "--schema",
            "schema.json",
            "--schema-violation",
            policy,
            "-",
        ]
    };
    let rejected = run_in(dir.path(), &args("reject"), batch);
    assert_eq!(rejected.code, 1, "{rejected:?}");
    let run = run_in(dir.path(), &args("repair"), batch);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        parse(&run.stdout),
        json!({"player": {"hp": 0, "gold": 7, "bag": []}})
    );
    assert!(run.stderr.contains("[schema_repaired]"), "{}", run.stderr);
    assert!(run.stderr.contains("/player/hp"), "{}", run.stderr);
    assert!(run.stderr.contains("clamp_minimum"), "{}", run.stderr);
    assert!(run.stderr.contains("coerce_type"), "{}", run.stderr);
}

#[test]
fn apply_draws_the_same_numbers_for_the_same_seed() {
    let dir = folder_with_state(&json!({"rolls": []}));
    fs::create_dir(dir.path().join("scripts")).unwrap();
    fs::write(
        dir.path().join("scripts/dice.lua"),
        "on('roll', function(ctx)\n  for i = 1, 6 do ctx.emit({op = 'push', path = 'rolls', value = ctx.random(1, 100)}) end\nend)\n",
    )
    .unwrap();
    let reply = r#"{"op":"callback","path":["roll"]}"#;
    let roll = |seed: &'static str| {
        let run = run_in(
            dir.path(),
            &[
                "apply",
                "--state",
                "state.json",
                "--scripts",
                "scripts",
                "--seed",
                seed,
                "-",
            ],
            reply,
        );
        assert_eq!(run.code, 0, "{run:?}");
        parse(&run.stdout)
    };
    assert_eq!(roll("5"), roll("5"));
    assert_ne!(roll("5"), roll("6"));
}

#[test]
fn apply_runs_lua_handlers_and_reports_their_events() {
    let dir = folder_with_state(&json!({"player": {"xp": 90, "level": 1}}));
    fs::create_dir(dir.path().join("scripts")).unwrap();
    fs::write(
        dir.path().join("scripts/xp.lua"),
        "on('gain', function(ctx, n)\n  ctx.emit({op = 'increment', path = {'player', 'xp'}, value = n})\n  \
         ctx.event('level_up', {level = 2})\nend)\n",
    )
    .unwrap();
    let reply = r#"{"op":"callback","path":["gain"],"value":[20]}"#;
    let run = run_in(
        dir.path(),
        &[
            "apply",
            "--state",
            "state.json",
            "--scripts",
            "scripts",
            "-",
        ],
        reply,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        parse(&run.stdout),
        json!({"player": {"xp": 110, "level": 1}})
    );
    assert_eq!(run.stderr, "event: level_up {\"level\":2}\n");
}

#[test]
fn apply_without_scripts_rejects_a_callback() {
    let dir = folder_with_state(&hero());
    let run = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "-"],
        r#"{"op":"callback","path":["gain"]}"#,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("[unknown_callback]"), "{}", run.stderr);
}

#[test]
fn apply_reports_rejections_as_json_with_format_json() {
    let dir = folder_with_state(&hero());
    let batch = r#"{"op":"pop","path":["player","bag"]}"#;
    let run = run_in(
        dir.path(),
        &["apply", "--format", "json", "--state", "state.json", "-"],
        batch,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    let report = parse(run.stderr.trim());
    assert_eq!(report["rejected"], json!(true));
    assert_eq!(report["errors"][0]["kind"], json!("missing_target"));
    assert_eq!(report["errors"][0]["path"], json!("/player/bag"));
}

#[test]
fn apply_reports_the_change_log_as_json_with_format_json() {
    let dir = folder_with_state(&hero());
    let batch = r#"{"op":"assign","path":["player","hp"],"value":7,"reason":"trap"}"#;
    let run = run_in(
        dir.path(),
        &["apply", "--format", "json", "--state", "state.json", "-"],
        batch,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(parse(&run.stdout)["player"]["hp"], json!(7));
    assert_eq!(
        parse(run.stderr.trim()),
        json!({
            "committed": true,
            "changes": [{"path": ["player", "hp"], "old": 100, "new": 7, "reason": "trap", "op": "assign"}],
            "warnings": [],
            "events": [],
        })
    );
}

#[test]
fn apply_with_a_missing_state_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), &["apply", "--state", "nowhere.json", "-"], "[]");
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .starts_with("error: cannot read the state file nowhere.json"),
        "{}",
        run.stderr
    );
}

#[test]
fn input_that_is_not_utf8_names_the_first_bad_byte_and_its_line() {
    let dir = folder_with_state(&hero());
    fs::write(
        dir.path().join("reply.txt"),
        b"_.set('hp', 1);\n\xe5\xa5\xbd \xff garbage",
    )
    .unwrap();
    let run = run_in(dir.path(), &["extract", "reply.txt"], "");
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "error: cannot read the input file reply.txt: it is not UTF-8 text: byte 20 (line 2, byte 5 \
         of the line) is 0xff\n"
    );
}

#[test]
fn apply_with_an_invalid_json_state_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("state.json"), "{\"hp\": 1,,}").unwrap();
    let run = run_in(dir.path(), &["apply", "--state", "state.json", "-"], "[]");
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("the state file state.json is not valid json"),
        "{}",
        run.stderr
    );
}

#[test]
fn apply_with_a_missing_input_file_is_a_usage_error() {
    let dir = folder_with_state(&hero());
    let run = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "reply.txt"],
        "",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("cannot read the input file reply.txt"),
        "{}",
        run.stderr
    );
}

#[test]
fn apply_with_a_state_that_breaks_the_schema_is_a_usage_error() {
    let dir = folder_with_state(&json!({"hp": -1}));
    fs::write(
        dir.path().join("schema.json"),
        r#"{"properties":{"hp":{"minimum":0}}}"#,
    )
    .unwrap();
    let run = run_in(
        dir.path(),
        &[
            "apply",
            "--state",
            "state.json",
            "--schema",
            "schema.json",
            "-",
        ],
        "[]",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("the state does not satisfy the schema"),
        "{}",
        run.stderr
    );
}

#[test]
fn apply_with_a_broken_script_is_a_usage_error_naming_the_file() {
    let dir = folder_with_state(&hero());
    fs::create_dir(dir.path().join("scripts")).unwrap();
    fs::write(
        dir.path().join("scripts/bad.lua"),
        "on('x', function(ctx)\n  return (\nend)\n",
    )
    .unwrap();
    let run = run_in(
        dir.path(),
        &[
            "apply",
            "--state",
            "state.json",
            "--scripts",
            "scripts",
            "-",
        ],
        "[]",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("cannot load the scripts folder scripts"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("bad.lua"), "{}", run.stderr);
}

#[test]
fn apply_needs_a_state_or_a_save() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), &["apply", "-"], "[]");
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--state"), "{}", run.stderr);
}

// ---- extract -------------------------------------------------------------------------------------

#[test]
fn extract_prints_canonical_instructions_and_the_score() {
    let dir = tempfile::tempdir().unwrap();
    let reply = "<think>{\"op\":\"assign\",\"path\":[\"x\"],\"value\":0}</think>\nSure!\n<UpdateVariable>\n\
                 {'op': 'assign', 'path': 'inventory[0].name', 'value': 'rope'}\n</UpdateVariable>";
    let run = run_in(dir.path(), &["extract", "-"], reply);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        parse(&run.stdout),
        json!([{"op": "assign", "path": ["inventory", 0, "name"], "value": "rope"}])
    );
    assert!(run.stderr.contains("[single_quotes]"), "{}", run.stderr);
    assert!(run.stderr.contains("repair score "), "{}", run.stderr);
    assert!(
        run.stderr.ends_with("/100, 1 instruction\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn extract_of_plain_prose_is_an_empty_batch_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(
        dir.path(),
        &["extract", "--format", "json", "-"],
        "Nothing happens. Use the {name} template.",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(parse(&run.stdout), json!([]));
    let report = parse(run.stderr.trim());
    assert_eq!(report["valid"], json!(true));
    assert!(
        report["diagnostics"]
            .as_array()
            .is_some_and(|d| !d.is_empty()),
        "{report}"
    );
    assert!(report["score"].is_u64(), "{report}");
}

#[test]
fn extract_keeps_complete_instructions_and_drops_the_cut_one() {
    let dir = tempfile::tempdir().unwrap();
    let reply = r#"[{"op":"assign","path":["a"],"value":1},{"op":"assign","path":["hp"],"value":8"#;
    let run = run_in(dir.path(), &["extract", "-"], reply);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        parse(&run.stdout),
        json!([{"op": "assign", "path": ["a"], "value": 1}])
    );
    assert!(
        run.stderr.contains("truncated_instruction"),
        "{}",
        run.stderr
    );
}

#[test]
fn extract_refuses_a_reply_with_an_invalid_instruction() {
    let dir = tempfile::tempdir().unwrap();
    let reply = r#"[{"op":"assign","path":["a"],"value":1},{"op":"teleport","path":["b"]}]"#;
    let run = run_in(dir.path(), &["extract", "-"], reply);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("unknown op \"teleport\""),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("rejected: the input holds invalid instructions"),
        "{}",
        run.stderr
    );
}

#[test]
fn extract_with_a_missing_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), &["extract", "missing.txt"], "");
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("missing.txt"), "{}", run.stderr);
}

#[test]
fn usage_errors_are_json_with_format_json() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(
        dir.path(),
        &["extract", "--format", "json", "missing.txt"],
        "",
    );
    assert_eq!(run.code, 2, "{run:?}");
    let error = parse(run.stderr.trim());
    assert!(
        error["error"]
            .as_str()
            .is_some_and(|e| e.contains("missing.txt")),
        "{error}"
    );
}

#[test]
fn command_line_errors_are_json_with_format_json_too() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--format", "json", "extract", "--macro", "=x"][..],
        &["extract", "--format=json", "--bogus"],
        &[
            "convert", "--from", "yaml", "--to", "json", "--format", "json",
        ],
        &["--format", "json"],
    ] {
        let run = run_in(dir.path(), args, "");
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.stdout, "");
        let error = parse(run.stderr.trim());
        assert!(error["error"].is_string(), "{args:?}: {error}");
    }
    let run = run_in(dir.path(), &["extract", "--macro", "=x"], "");
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.starts_with("error: invalid value '=x'"),
        "people still get clap's text: {}",
        run.stderr
    );
    let help = run_in(dir.path(), &["--format", "json", "extract", "--help"], "");
    assert_eq!(help.code, 0, "{help:?}");
    assert!(help.stdout.starts_with("Show the instructions"), "{help:?}");
}

// ---- convert -------------------------------------------------------------------------------------

#[test]
fn convert_mvu_to_json() {
    let dir = tempfile::tempdir().unwrap();
    let mvu = "_.set('悠纪.好感度', 33, 35);//愉快的讨论\n_.add('金钱', -20);\n";
    let run = run_in(
        dir.path(),
        &["convert", "--from", "mvu", "--to", "json", "-"],
        mvu,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        parse(&run.stdout),
        json!([
            {"op": "assign", "path": ["悠纪", "好感度"], "old": 33, "value": 35, "reason": "愉快的讨论"},
            {"op": "increment", "path": ["金钱"], "value": -20}
        ])
    );
}

#[test]
fn convert_json_to_mvu() {
    let dir = tempfile::tempdir().unwrap();
    let batch = r#"[{"op":"assign","path":["a","b"],"old":1,"value":2,"reason":"why"},{"op":"increment","path":["n"],"value":3}]"#;
    let run = run_in(
        dir.path(),
        &["convert", "--from", "json", "--to", "mvu", "-"],
        batch,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "_.set('a.b', 1, 2);//why\n_.add('n', 3);\n");
    assert_eq!(run.stderr, "");
}

#[test]
fn a_member_given_twice_is_refused_by_convert_and_apply() {
    let dir = folder_with_state(&json!({"n": 0}));
    let batch = r#"[{"op": "assign", "path": ["a"], "value": 1},
{"op": "increment", "path": ["n"], "value": 1, "value": 1000}]"#;
    let run = run_in(
        dir.path(),
        &["convert", "--from", "json", "--to", "mvu", "-"],
        batch,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("instruction 1")
            && run.stderr.contains("/value")
            && run.stderr.contains("\"value\" is given twice"),
        "{}",
        run.stderr
    );
    // A reply holding the same batch is refused too, and the state keeps its n.
    let run = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "--in-place", "-"],
        batch,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("\"value\" is given twice"),
        "{}",
        run.stderr
    );
    assert_eq!(
        parse(&fs::read_to_string(dir.path().join("state.json")).unwrap()),
        json!({"n": 0})
    );
}

#[test]
fn convert_reports_what_mvu_cannot_express_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let batch = r#"[{"op":"assign","path":["a.b"],"value":1}]"#;
    let run = run_in(
        dir.path(),
        &["convert", "--from", "json", "--to", "mvu", "-"],
        batch,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stdout, "",
        "nothing is written when something cannot be"
    );
    assert!(
        run.stderr
            .starts_with("error: instruction 0: the key \"a.b\" cannot be written in an mvu path")
            && run.stderr.contains("[mvu_emit_unsupported]"),
        "{}",
        run.stderr
    );
}

#[test]
fn convert_jsonpatch_to_json_writes_canonical_paths() {
    let dir = tempfile::tempdir().unwrap();
    let patch =
        r#"[{"op":"replace","path":"/hp","value":5},{"op":"move","from":"/a~1b","path":"/c"}]"#;
    let run = run_in(
        dir.path(),
        &["convert", "--from", "jsonpatch", "--to", "json", "-"],
        patch,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        parse(&run.stdout),
        json!([{"op": "replace", "path": ["hp"], "value": 5}, {"op": "move", "from": ["a/b"], "path": ["c"]}])
    );
}

#[test]
fn convert_jsonpatch_to_jsonpatch_keeps_pointers_and_repairs_them() {
    let dir = tempfile::tempdir().unwrap();
    let patch =
        r#"[{"op":"replace","path":"hp","value":5},{"op":"move","from":"/a~1b","path":"/c"}]"#;
    let run = run_in(
        dir.path(),
        &["convert", "--from", "jsonpatch", "--to", "jsonpatch", "-"],
        patch,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        parse(&run.stdout),
        json!([{"op": "replace", "path": "/hp", "value": 5}, {"op": "move", "from": "/a~1b", "path": "/c"}])
    );
    assert!(
        run.stderr.contains("warning"),
        "the missing leading slash is reported: {}",
        run.stderr
    );
}

#[test]
fn convert_instructions_to_jsonpatch_explains_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let batch = r#"[{"op":"increment","path":["hp"],"value":1}]"#;
    let run = run_in(
        dir.path(),
        &["convert", "--from", "json", "--to", "jsonpatch", "-"],
        batch,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("`increment` has no json patch form without a state"),
        "{}",
        run.stderr
    );
}

#[test]
fn convert_of_an_empty_batch_to_jsonpatch_is_the_empty_document() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(
        dir.path(),
        &["convert", "--from", "json", "--to", "jsonpatch", "-"],
        "[]",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.trim(), "[]");
}

#[test]
fn convert_skips_a_byte_order_mark_as_state_files_do() {
    let dir = tempfile::tempdir().unwrap();
    let batch = "\u{feff}[{\"op\":\"assign\",\"path\":[\"a\"],\"value\":1}]";
    let run = run_in(
        dir.path(),
        &["convert", "--from", "json", "--to", "mvu", "-"],
        batch,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "_.set('a', 1);\n");
    let patch = "\u{feff}[{\"op\":\"remove\",\"path\":\"/a\"}]";
    let run = run_in(
        dir.path(),
        &["convert", "--from", "jsonpatch", "--to", "json", "-"],
        patch,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(parse(&run.stdout), json!([{"op": "remove", "path": ["a"]}]));
}

#[test]
fn convert_of_invalid_json_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(
        dir.path(),
        &["convert", "--from", "json", "--to", "mvu", "-"],
        "{not json",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("<stdin> is not valid json"),
        "{}",
        run.stderr
    );
}

#[test]
fn convert_needs_from_and_to() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(
        dir.path(),
        &["convert", "--from", "yaml", "--to", "json", "-"],
        "",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("yaml"), "{}", run.stderr);
}

// ---- play ----------------------------------------------------------------------------------------

/// Every scenario folder in `examples/`.
fn scenarios() -> Vec<PathBuf> {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut found: Vec<PathBuf> = fs::read_dir(&examples)
        .expect("examples/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("turns").is_dir())
        .collect();
    found.sort();
    found
}

#[test]
fn every_example_scenario_plays_with_all_expectations_met() {
    let scenarios = scenarios();
    let names: Vec<String> = scenarios
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for wanted in [
        "fantasy", "mvu-card", "romance", "rules", "tavern", "timeline",
    ] {
        assert!(
            names.iter().any(|n| n == wanted),
            "examples/{wanted} is missing: {names:?}"
        );
    }
    for scenario in scenarios {
        let dir = scenario.to_string_lossy().into_owned();
        let run = run_in(Path::new("."), &["play", &dir], "");
        assert_eq!(
            run.code, 0,
            "play {dir} failed:\n{}\n{}",
            run.stdout, run.stderr
        );
        assert!(run.stdout.contains("final state:"), "{}", run.stdout);
        assert!(run.stdout.contains(" 0 failed"), "{}", run.stdout);
        assert!(!run.stdout.contains('✗'), "{}", run.stdout);
        assert_eq!(run.stderr, "", "play {dir}");
    }
}

/// The MVU card scenario plays the same from the card's PNG (its `scenario.json`) and from its JSON,
/// and a broken view expectation fails it.
#[test]
fn the_mvu_card_scenario_plays_from_the_png_and_the_json_card() {
    let original = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mvu-card");
    let played = |dir: &Path| {
        let run = run_in(
            Path::new("."),
            &["--format", "json", "play", &dir.to_string_lossy()],
            "",
        );
        let report: Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("not json ({e}): {}", run.stdout));
        (run.code, report)
    };
    let (code, from_png) = played(&original);
    assert_eq!(code, 0, "{from_png}");
    let copy = tempfile::tempdir().expect("a temporary folder");
    let dir = copy.path().join("mvu-card");
    fs::create_dir_all(dir.join("turns")).unwrap();
    for name in ["card.json", "card.png"] {
        fs::copy(original.join(name), dir.join(name)).unwrap();
    }
    for entry in fs::read_dir(original.join("turns")).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(&path, dir.join("turns").join(path.file_name().unwrap())).unwrap();
    }
    fs::write(
        dir.join("scenario.json"),
        r#"{"card": "card.json", "macros": {"user": "Alex"}}"#,
    )
    .unwrap();
    let (code, from_json) = played(&dir);
    assert_eq!(code, 0, "{from_json}");
    assert_eq!(from_png["final_state"], from_json["final_state"]);
    assert_eq!(from_png["turns"], from_json["turns"]);
    assert_eq!(from_png["summary"]["passed"], 33, "{from_png}");
    // A view expectation that does not hold fails the scenario.
    fs::write(
        dir.join("turns/03.expect.json"),
        r#"{"delta": {"time": "morning->evening"}}"#,
    )
    .unwrap();
    let (code, report) = played(&dir);
    assert_eq!(code, 1, "{report}");
    // A state.json beside a card is a mistake, said before anything runs.
    fs::write(dir.join("state.json"), "{}").unwrap();
    let run = run_in(Path::new("."), &["play", &dir.to_string_lossy()], "");
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("starts from the card"),
        "{}",
        run.stderr
    );
}

#[test]
fn play_fantasy_shows_changes_events_rejections_and_the_swipe() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fantasy");
    let run = run_in(Path::new("."), &["play", &dir.to_string_lossy()], "");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("player.hp: 30 -> 22 (goblin ambush)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("event: level_up {\"level\":2,\"max_hp\":40}"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("not enough gold for 1 leather armor: 15 < 30"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("undo_to(turn-03) rolled back 1 step"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("repair score "), "{}", run.stdout);
}

#[test]
fn play_exits_1_when_an_expectation_fails() {
    let run = run_in(
        Path::new("."),
        &["play", &fixture("failing").to_string_lossy()],
        "",
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("✗ turn 01: /hp = 99 (found 90)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("✗ turn 02: expected committed, was rejected"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("expectations: 1 passed, 2 failed"),
        "{}",
        run.stdout
    );
}

#[test]
fn play_checks_conditions_and_a_budgeted_view_and_refuses_an_unreadable_condition() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let turns = dir.path().join("turns");
    fs::create_dir(&turns).expect("turns");
    fs::write(
        dir.path().join("state.json"),
        r#"{"hp": 10, "npcs": {"Mira": {"mood": "calm"}, "Bram": {"mood": "sleepy", "notes": "a long story about the old mill and the flood"}}}"#,
    )
    .expect("state");
    fs::write(
        turns.join("01.txt"),
        r#"[{"op": "increment", "path": ["hp"], "value": -4}]"#,
    )
    .expect("reply");
    let expect = |body: &str| fs::write(turns.join("01.expect.json"), body).expect("expect");
    expect(
        r#"{"conditions": {"hp == 6 and npcs.Mira.mood == 'calm'": true, "npcs.Bram exists": false},
            "view": {"budget": 30, "contains": ["\"hp\": 6", "Bram"], "lacks": ["sleepy"],
                     "elided": ["/npcs"]}}"#,
    );
    let folder = dir.path().to_string_lossy().into_owned();
    let run = run_in(Path::new("."), &["play", &folder], "");
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    for line in [
        "✓ condition hp == 6 and npcs.Mira.mood == 'calm' is true",
        "✗ turn 01: condition npcs.Bram exists is false (it is true)",
        "✓ the view keeps within 30 tokens",
        "✓ the view shows \"\\\"hp\\\": 6\"",
        "✗ turn 01: the view shows \"Bram\"",
        "✓ the view does not show \"sleepy\"",
        "✓ the view names /npcs as left out",
    ] {
        assert!(run.stdout.contains(line), "{line}\n{}", run.stdout);
    }
    expect(r#"{"conditions": {"hp = 6": true}}"#);
    let run = run_in(Path::new("."), &["play", &folder], "");
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("condition \"hp = 6\"") && run.stderr.contains("bytes 3..4"),
        "{}",
        run.stderr
    );
}

#[test]
fn play_quiet_prints_only_failures_and_the_summary() {
    let run = run_in(
        Path::new("."),
        &["play", "--quiet", &fixture("failing").to_string_lossy()],
        "",
    );
    assert_eq!(run.code, 1);
    let lines: Vec<&str> = run.stdout.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    assert!(
        lines[2].starts_with("summary: 2 turns, 1 committed, 1 rejected"),
        "{}",
        run.stdout
    );
}

#[test]
fn play_reports_every_turn_as_json_with_format_json() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/rules");
    let run = run_in(
        Path::new("."),
        &["play", "--format", "json", &dir.to_string_lossy()],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let report = parse(&run.stdout);
    assert_eq!(report["scenario"], json!("rules"));
    assert_eq!(report["summary"]["failed"], json!([]));
    let turns = report["turns"].as_array().expect("a list of turns");
    assert_eq!(turns.len(), 9);
    assert_eq!(turns[0]["outcome"], json!("committed"));
    assert_eq!(
        turns[0]["changes"][0],
        json!({"path": ["castle", "gate"], "old": "closed", "new": "open", "reason": "the king arrives", "op": "assign"})
    );
    assert_eq!(turns[1]["outcome"], json!("rejected"));
    assert_eq!(turns[1]["errors"][0]["kind"], json!("old_mismatch"));
    assert!(
        turns[1]["feedback"]
            .as_str()
            .is_some_and(|f| f.contains("expected old value")),
        "{}",
        turns[1]
    );
    assert_eq!(turns[8]["rolled_back"], json!(1));
    assert_eq!(report["final_state"]["castle"]["treasury"], json!(950));

    let failing = run_in(
        Path::new("."),
        &[
            "play",
            "--format",
            "json",
            &fixture("failing").to_string_lossy(),
        ],
        "",
    );
    assert_eq!(failing.code, 1, "{failing:?}");
    assert_eq!(
        parse(&failing.stdout)["summary"]["failed"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[test]
fn play_refuses_a_misspelt_expectation() {
    let run = run_in(
        Path::new("."),
        &["play", &fixture("misspelt").to_string_lossy()],
        "",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("01.expect.json is not valid"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("valeus"), "{}", run.stderr);
}

#[test]
fn play_checks_values_as_grade_does_and_refuses_a_key_that_is_not_a_pointer() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("state.json"), r#"{"hp": 10}"#).unwrap();
    fs::create_dir(dir.path().join("turns")).unwrap();
    fs::write(
        dir.path().join("turns/01.txt"),
        r#"[{"op": "assign", "path": ["hp"], "value": 5}]"#,
    )
    .unwrap();
    // An absent value counts as null, as `grade` and `old` checks count it.
    fs::write(
        dir.path().join("turns/01.expect.json"),
        r#"{"values": {"/hp": 5, "/mana": null}}"#,
    )
    .unwrap();
    let run = run_in(Path::new("."), &["play", &dir.path().to_string_lossy()], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("✓ /mana = null (found absent)"),
        "{}",
        run.stdout
    );

    fs::write(
        dir.path().join("turns/01.expect.json"),
        r#"{"values": {"hp": 5}}"#,
    )
    .unwrap();
    let run = run_in(Path::new("."), &["play", &dir.path().to_string_lossy()], "");
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("01.expect.json is not valid")
            && run.stderr.contains("\"hp\" is not a json pointer"),
        "{}",
        run.stderr
    );
}

#[test]
fn play_moves_on_the_tree_and_refuses_moves_that_mean_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().to_string_lossy().into_owned();
    fs::write(dir.path().join("state.json"), r#"{"hp": 10}"#).unwrap();
    fs::create_dir(dir.path().join("turns")).unwrap();
    let write =
        |name: &str, text: &str| fs::write(dir.path().join("turns").join(name), text).unwrap();
    write(
        "01.txt",
        r#"[{"op": "assign", "path": ["hp"], "value": 5}]"#,
    );
    write("01.expect.json", r#"{"label": "a"}"#);
    write(
        "02.txt",
        r#"[{"op": "assign", "path": ["hp"], "value": 7}]"#,
    );
    write(
        "02.expect.json",
        r#"{"label": "b", "at": 0, "steps": {"a": {"/hp": 5}}}"#,
    );
    write("03.move.json", r#"{"checkout": "a"}"#);
    write(
        "03.expect.json",
        r#"{"current": "a", "values": {"/hp": 5}}"#,
    );
    let run = run_in(Path::new("."), &["play", &folder], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("↷ checkout a: crossed 2 steps of the history tree"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("✓ at a: /hp = 5 (found 5)"),
        "{}",
        run.stdout
    );
    // A checkout of a step that is not there fails the turn, and play goes on.
    write("04.move.json", r#"{"checkout": "nowhere"}"#);
    let run = run_in(Path::new("."), &["play", &folder], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("✗ turn 04: checkout nowhere: no step is labelled \"nowhere\""),
        "{}",
        run.stdout
    );
    // A move applies no reply, so reply expectations on it are refused rather than silently unchecked.
    write("04.move.json", r#"{"checkout": 0}"#);
    write(
        "04.expect.json",
        r#"{"outcome": "committed", "current": 0}"#,
    );
    let run = run_in(Path::new("."), &["play", &folder], "");
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("is for a move, which applies no reply: outcome only fit a reply"),
        "{}",
        run.stderr
    );
    write("04.expect.json", r#"{"current": 0, "values": {"/hp": 10}}"#);
    write("04.txt", "[]");
    let run = run_in(Path::new("."), &["play", &folder], "");
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("turn 04 is both a reply and a move"),
        "{}",
        run.stderr
    );
    fs::remove_file(dir.path().join("turns/04.txt")).unwrap();
    let run = run_in(Path::new("."), &["play", &folder], "");
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn play_stopped_by_an_unreadable_reply_still_shows_the_turns_before_it() {
    let run = run_in(
        Path::new("."),
        &["play", &fixture("broken-turn").to_string_lossy()],
        "",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stdout.contains("hp: 100 -> 90 (a fall)"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("summary:"), "{}", run.stdout);
    assert!(
        run.stderr.contains("cannot read the reply file"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("02.txt"), "{}", run.stderr);
}

#[cfg(unix)]
#[test]
fn a_closed_stdout_is_an_io_error_not_a_panic() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let fantasy = examples.join("fantasy").to_string_lossy().into_owned();
    let state = examples
        .join("rules/state.json")
        .to_string_lossy()
        .into_owned();
    let reply = examples
        .join("rules/turns/01.txt")
        .to_string_lossy()
        .into_owned();
    let commands: [&[&str]; 3] = [
        &["play", &fantasy],
        &["apply", "--state", &state, &reply],
        &["extract", &reply],
    ];
    for args in commands {
        // A socket whose other end is already closed: the command's first write fails with EPIPE, the
        // way it does under `statecraft … | head`, without depending on timing.
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        drop(ours);
        let output = Command::new(env!("CARGO_BIN_EXE_statecraft"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
            .stderr(Stdio::piped())
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("error: cannot write to stdout"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn play_of_a_missing_folder_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), &["play", "no-such-scenario"], "");
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("cannot play no-such-scenario: it is not a scenario folder"),
        "{}",
        run.stderr
    );
}

// ---- saves ---------------------------------------------------------------------------------------

#[test]
fn save_commands_on_an_unreadable_save_are_usage_errors() {
    let dir = folder_with_state(&hero());
    fs::write(
        dir.path().join("game.save"),
        b"\x00\x01 definitely not a save",
    )
    .unwrap();
    for args in [
        &["show", "--save", "game.save"][..],
        &["undo", "--save", "game.save"][..],
        &["redo", "--save", "game.save"][..],
        &["apply", "--save", "game.save", "-"][..],
    ] {
        let run = run_in(dir.path(), args, "[]");
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(
            run.stderr.starts_with("error: "),
            "{args:?}: {}",
            run.stderr
        );
    }
    let missing = run_in(dir.path(), &["show", "--save", "missing.save"], "");
    assert_eq!(missing.code, 2, "{missing:?}");
    assert_eq!(missing.stdout, "");
}

#[test]
fn a_closed_stdout_after_a_durable_step_says_the_step_is_committed() {
    use std::io::Write;
    let dir = folder_with_state(&json!({"hp": 100}));
    let new = run_in(
        dir.path(),
        &["new", "game.save", "--state", "state.json"],
        "",
    );
    assert_eq!(new.code, 0, "{new:?}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_statecraft"))
        .args(["apply", "--save", "game.save", "-"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader of stdout goes away before the command has read its reply, so printing the state
    // fails once the step is on disk.
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(br#"[{"op":"assign","path":["hp"],"value":7}]"#)
        .unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("step 1 is committed and on disk; only printing the new state failed"),
        "{stderr}"
    );
    let show = run_in(dir.path(), &["show", "--save", "game.save"], "");
    assert_eq!(parse(&show.stdout), json!({"hp": 7}), "{show:?}");

    // docs/cli.md: a stdout closed before the start (`>&-`) is /dev/null to the program, so the
    // command prints into it and succeeds.
    let mut child = Command::new("sh")
        .args([
            "-c",
            "exec \"$0\" apply --save game.save - >&-",
            env!("CARGO_BIN_EXE_statecraft"),
        ])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(br#"[{"op":"assign","path":["hp"],"value":8}]"#)
        .unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");
    let show = run_in(dir.path(), &["show", "--save", "game.save"], "");
    assert_eq!(parse(&show.stdout), json!({"hp": 8}), "{show:?}");
}

#[test]
fn a_save_applies_durably_and_undoes_and_redoes_across_processes() {
    let dir = folder_with_state(&json!({"hp": 100}));
    let new = run_in(
        dir.path(),
        &["new", "game.save", "--state", "state.json"],
        "",
    );
    assert_eq!(new.code, 0, "{new:?}");
    assert_eq!(new.stdout, "");
    let hp = |value: i64| json!({"hp": value});
    let apply = |label: &str, value: i64| {
        let batch = format!(r#"[{{"op":"assign","path":["hp"],"value":{value}}}]"#);
        run_in(
            dir.path(),
            &["apply", "--save", "game.save", "--label", label, "-"],
            &batch,
        )
    };
    for (label, value) in [("m1", 90), ("m2", 80)] {
        let run = apply(label, value);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(parse(&run.stdout), hp(value));
    }
    let show = run_in(dir.path(), &["show", "--save", "game.save"], "");
    assert_eq!((show.code, parse(&show.stdout)), (0, hp(80)), "{show:?}");
    let history = run_in(
        dir.path(),
        &["show", "--save", "game.save", "--history"],
        "",
    );
    let history = parse(&history.stdout);
    let labels: Vec<&Value> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["label"])
        .collect();
    assert_eq!(labels, [&json!("m1"), &json!("m2")]);

    let rejected = run_in(
        dir.path(),
        &["apply", "--save", "game.save", "-"],
        r#"{"op":"pop","path":["hp"]}"#,
    );
    assert_eq!(rejected.code, 1, "{rejected:?}");
    assert_eq!(rejected.stdout, "");

    let to = run_in(
        dir.path(),
        &["undo", "--save", "game.save", "--to", "m1"],
        "",
    );
    assert_eq!((to.code, parse(&to.stdout)), (0, hp(90)), "{to:?}");
    let redo = run_in(dir.path(), &["redo", "--save", "game.save"], "");
    assert_eq!((redo.code, parse(&redo.stdout)), (0, hp(80)), "{redo:?}");
    for value in [90, 100] {
        let undo = run_in(dir.path(), &["undo", "--save", "game.save"], "");
        assert_eq!((undo.code, parse(&undo.stdout)), (0, hp(value)), "{undo:?}");
    }
    let nothing = run_in(dir.path(), &["undo", "--save", "game.save"], "");
    assert_eq!(nothing.code, 1, "{nothing:?}");
    assert_eq!(nothing.stdout, "");
    assert_eq!(nothing.stderr, "unchanged: nothing to undo\n");
}

/// A save in `dir` with a small chat: m1, two swipes of m2 (the second current), and an edit of m1.
fn chat_save(dir: &Path) {
    let new = run_in(dir, &["new", "game.save", "--state", "state.json"], "");
    assert_eq!(new.code, 0, "{new:?}");
    let apply = |args: &[&str], value: i64| {
        let batch = format!(r#"[{{"op":"assign","path":["hp"],"value":{value}}}]"#);
        let mut all = vec!["apply", "--save", "game.save"];
        all.extend_from_slice(args);
        all.push("-");
        let run = run_in(dir, &all, &batch);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(parse(&run.stdout), json!({"hp": value}), "{args:?}");
    };
    apply(&["--label", "m1"], 90);
    apply(&["--label", "m2/s1"], 80);
    apply(&["--at", "m1", "--label", "m2/s2"], 70);
    apply(&["--at-step", "0", "--label", "m1/edit"], 95);
    let back = run_in(dir, &["checkout", "--save", "game.save", "m2/s2"], "");
    assert_eq!(
        (back.code, parse(&back.stdout)),
        (0, json!({"hp": 70})),
        "{back:?}"
    );
}

#[test]
fn swipes_and_edits_commit_on_named_steps_and_checkout_goes_back_to_any() {
    let dir = folder_with_state(&json!({"hp": 100}));
    chat_save(dir.path());
    let show = |args: &[&str]| {
        let mut all = vec!["show", "--save", "game.save"];
        all.extend_from_slice(args);
        run_in(dir.path(), &all, "")
    };
    // Reading any step does not move.
    for (args, hp) in [
        (&["--at", "m2/s1"][..], 80),
        (&["--at", "m1/edit"][..], 95),
        (&["--at-step", "0"][..], 100),
        (&[][..], 70),
    ] {
        let run = show(args);
        assert_eq!(
            (run.code, parse(&run.stdout)),
            (0, json!({"hp": hp})),
            "{args:?}: {run:?}"
        );
    }
    let unknown = show(&["--at", "m9"]);
    assert_eq!(unknown.code, 1, "{unknown:?}");
    assert_eq!(unknown.stderr, "unchanged: no step is labelled \"m9\"\n");
    let by_id = run_in(
        dir.path(),
        &["checkout", "--save", "game.save", "--step", "2"],
        "",
    );
    assert_eq!(
        (by_id.code, parse(&by_id.stdout)),
        (0, json!({"hp": 80})),
        "{by_id:?}"
    );
    let unknown = run_in(dir.path(), &["checkout", "--save", "game.save", "nope"], "");
    assert_eq!(unknown.code, 1, "{unknown:?}");
    assert_eq!(unknown.stdout, "");
    assert_eq!(unknown.stderr, "unchanged: no step is labelled \"nope\"\n");
    // A batch on an unknown step is rejected, and nothing moves.
    let rejected = run_in(
        dir.path(),
        &["apply", "--save", "game.save", "--at", "nope", "-"],
        r#"[{"op":"assign","path":["hp"],"value":1}]"#,
    );
    assert_eq!(rejected.code, 1, "{rejected:?}");
    assert!(
        rejected.stderr.contains("no step is labelled \"nope\""),
        "{}",
        rejected.stderr
    );
    assert_eq!(parse(&show(&[]).stdout), json!({"hp": 80}));
    // undo --to keeps its meaning: only back along the current line.
    let off_line = run_in(
        dir.path(),
        &["undo", "--save", "game.save", "--to", "m1/edit"],
        "",
    );
    assert_eq!(off_line.code, 1, "{off_line:?}");
    assert!(
        off_line
            .stderr
            .contains("no step on the current line is labelled \"m1/edit\"")
    );
    let on_line = run_in(
        dir.path(),
        &["undo", "--save", "game.save", "--to", "m1"],
        "",
    );
    assert_eq!(
        (on_line.code, parse(&on_line.stdout)),
        (0, json!({"hp": 90})),
        "{on_line:?}"
    );
    // Redo goes back down the swipe that was current last.
    let redo = run_in(dir.path(), &["redo", "--save", "game.save"], "");
    assert_eq!(parse(&redo.stdout), json!({"hp": 80}), "{redo:?}");
}

#[test]
fn log_prints_the_tree_as_json_or_drawn() {
    let dir = folder_with_state(&json!({"hp": 100}));
    chat_save(dir.path());
    let log = run_in(dir.path(), &["log", "--save", "game.save"], "");
    assert_eq!(log.code, 0, "{log:?}");
    let steps: Vec<Value> = parse(&log.stdout)["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| json!([s["id"], s["parent"], s["label"], s["changes"], s["current"]]))
        .collect();
    assert_eq!(
        steps,
        [
            json!([1, 0, "m1", 1, false]),
            json!([2, 1, "m2/s1", 1, false]),
            json!([3, 1, "m2/s2", 1, true]),
            json!([4, 0, "m1/edit", 1, false]),
        ]
    );
    assert_eq!(parse(&log.stdout)["current"], json!(3));
    // docs/http.md: the server's log adds `roots` and `children`; the command's has `next_id`.
    let members: Vec<String> = parse(&log.stdout)
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(members, ["current", "next_id", "steps"]);
    assert_eq!(parse(&log.stdout)["next_id"], json!(5));
    let drawn = run_in(
        dir.path(),
        &["log", "--save", "game.save", "--format", "human"],
        "",
    );
    assert_eq!(drawn.code, 0, "{drawn:?}");
    assert_eq!(
        drawn.stdout,
        "root\n\
         ├─ * 1 m1 (1 change)\n\
         │  ├─ * 2 m2/s1 (1 change)\n\
         │  └─ * 3 m2/s2 (1 change)  <- current\n\
         └─ * 4 m1/edit (1 change)\n"
    );
}

#[test]
fn a_long_line_draws_narrow_and_a_commit_reports_what_trimming_dropped() {
    let dir = folder_with_state(&json!({"hp": 100}));
    let new = run_in(
        dir.path(),
        &["new", "game.save", "--state", "state.json"],
        "",
    );
    assert_eq!(new.code, 0, "{new:?}");
    for i in 0..3 {
        let batch = format!(r#"[{{"op":"assign","path":["hp"],"value":{i}}}]"#);
        let label = format!("m{i}");
        let run = run_in(
            dir.path(),
            &["apply", "--save", "game.save", "--label", &label, "-"],
            &batch,
        );
        assert_eq!(run.code, 0, "{run:?}");
    }
    let drawn = run_in(
        dir.path(),
        &["--format", "human", "log", "--save", "game.save"],
        "",
    );
    assert_eq!(
        drawn.stdout,
        "root\n* 1 m0 (1 change)\n* 2 m1 (1 change)\n* 3 m2 (1 change)  <- current\n"
    );
    // Reusing a label moves it, and the commit says from where.
    let again = run_in(
        dir.path(),
        &[
            "apply",
            "--save",
            "game.save",
            "--at",
            "m1",
            "--label",
            "m2",
            "--format",
            "json",
            "-",
        ],
        r#"[{"op":"assign","path":["hp"],"value":7}]"#,
    );
    assert_eq!(again.code, 0, "{again:?}");
    let report = parse(again.stderr.trim());
    assert_eq!(report["step"], json!(4));
    assert_eq!(report["parent"], json!(2));
    assert_eq!(report["label_moved_from"], json!(3));
    assert_eq!(report["trimmed"], json!([]));
    // A game kept to three steps: the next commit trims the least recently visited tip, and says so.
    let small = dir.path().join("small.save");
    drop(
        statecraft_saves::Game::create(
            &small,
            statecraft_engine::Value::from(json!({"hp": 100})),
            statecraft_saves::NewGame::default().history(statecraft_engine::HistoryLimits {
                max_steps: 3,
                max_bytes: 1 << 20,
            }),
        )
        .unwrap(),
    );
    for (args, value) in [
        (&["--label", "a"][..], 1),
        (&["--label", "b"][..], 2),
        (&["--at", "a", "--label", "b2"][..], 3),
        (&["--label", "c"][..], 4),
    ] {
        let mut all = vec!["apply", "--save", "small.save"];
        all.extend_from_slice(args);
        all.push("-");
        let run = run_in(
            dir.path(),
            &all,
            &format!(r#"[{{"op":"assign","path":["hp"],"value":{value}}}]"#),
        );
        assert_eq!(run.code, 0, "{run:?}");
        if value == 4 {
            assert!(
                run.stderr.contains(
                    "note: the history bounds trimmed 1 step, visited least recently, that can no longer be reached: 2 (b)"
                ),
                "{}",
                run.stderr
            );
        }
    }
}

#[test]
fn new_with_a_missing_state_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(
        dir.path(),
        &["new", "game.save", "--state", "missing.json"],
        "",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("cannot read the state file missing.json"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("game.save").exists());
}

#[test]
fn apply_save_refuses_state_only_options() {
    let dir = folder_with_state(&hero());
    let run = run_in(
        dir.path(),
        &["apply", "--save", "game.save", "--in-place", "-"],
        "[]",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--in-place"), "{}", run.stderr);
}
