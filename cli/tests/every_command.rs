//! What every command must do, for every command `statecraft --help` lists (a new command without a
//! case here fails these tests): show examples in its `--help`, and honour `--format json` (docs/cli.md:
//! machine-readable diagnostics), where whatever it prints, on stdout and on stderr, is JSON documents
//! and nothing else. Each command runs on a case that gives it something to say on stderr where it
//! has anything to say (repairs, a warning, a refusal, an error), and the same run without the flag
//! must print something that is not JSON, so the test sees the flag change the output.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

mod support;
use support::{Run, run_in};

/// The commands `statecraft --help` lists (without `help`).
fn commands(dir: &Path) -> Vec<String> {
    let help = run_in(dir, &["--help"], "");
    assert_eq!(help.code, 0, "{help:?}");
    let listing = help
        .stdout
        .split_once("Commands:\n")
        .expect("--help lists the commands")
        .1;
    listing
        .lines()
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every JSON document in `text`, or why `text` is not only JSON documents.
fn documents(text: &str) -> Result<Vec<Value>, String> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .map_err(|error| format!("not JSON ({error}):\n{text}"))
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// A folder with a state, its schema, a recursive schema, a reply with repairs, and a save.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let write = |name: &str, text: &str| fs::write(dir.path().join(name), text).expect("written");
    write("state.json", r#"{"player": {"hp": 100, "gold": 5}}"#);
    write(
        "schema.json",
        r#"{"type": "object", "properties": {"player": {"type": "object",
            "properties": {"hp": {"type": "integer"}, "gold": {"type": "integer"}}}}}"#,
    );
    write(
        "tree.json",
        r##"{"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}"##,
    );
    write(
        "reply.txt",
        "The goblin strikes.\n```json\n[{'op':'assign','path':['player','hp'],'value':90},]\n```\n",
    );
    write("expect.json", r#"{"/player/hp": 90}"#);
    let made = run_in(
        dir.path(),
        &["new", "game.save", "--state", "state.json"],
        "",
    );
    assert_eq!(made.code, 0, "{made:?}");
    dir
}

/// One run per command, with the exit code it must give.
fn case(command: &str) -> (Vec<String>, &'static str, i32) {
    let fantasy = examples().join("fantasy").to_string_lossy().into_owned();
    let (args, stdin, code): (Vec<&str>, &str, i32) = match command {
        "apply" => (vec!["apply", "--state", "state.json", "reply.txt"], "", 0),
        "extract" => (vec!["extract", "reply.txt"], "", 0),
        "convert" => (
            vec!["convert", "--from", "json", "--to", "mvu", "-"],
            r#"[{"op":"assign","path":["a.b"],"value":1}]"#,
            1,
        ),
        "new" => (vec!["new", "other.save", "--state", "state.json"], "", 0),
        "undo" => (vec!["undo", "--save", "game.save"], "", 1),
        "redo" => (vec!["redo", "--save", "game.save"], "", 1),
        "checkout" => (vec!["checkout", "--save", "game.save", "nowhere"], "", 1),
        "show" => (
            vec!["show", "--save", "game.save", "--at", "nowhere"],
            "",
            1,
        ),
        "log" => (vec!["log", "--save", "game.save"], "", 0),
        "play" => (vec!["play", &fantasy], "", 0),
        "prompt" => (vec!["prompt", "--state", "state.json"], "", 0),
        "evaluate" => (
            vec![
                "evaluate",
                "--save",
                "game.save",
                "--condition",
                "player.hp > 0",
                "--condition",
                "player.hp exists",
            ],
            "",
            0,
        ),
        "schema" => (vec!["schema", "--schema", "tree.json"], "", 0),
        "feedback" => (
            vec!["feedback", "--state", "state.json", "-"],
            r#"[{"op":"increment","path":["player","hp"],"value":"x"}]"#,
            1,
        ),
        "grade" => (
            vec![
                "grade",
                "--state",
                "state.json",
                "--expect",
                "expect.json",
                "reply.txt",
            ],
            "",
            0,
        ),
        // A key alone that names no step: `need_text`, nothing changed.
        "sync" => (
            vec!["sync", "--save", "game.save", "-"],
            r#"{"replies": [{"sha256": "0000000000000000000000000000000000000000000000000000000000000000"}]}"#,
            1,
        ),
        // A chat file that is not one.
        "import-chat" => (
            vec!["import-chat", "reply.txt", "--save", "chat.save"],
            "",
            2,
        ),
        // `card` prints JSON in either format; its error shows the flag.
        "card" => (vec!["card", "-"], "- not a mapping\n", 2),
        // A database it cannot use: refused before anything is served (the listening line is below).
        "serve" => (vec!["serve", "--db", "mysql://nowhere/games"], "", 2),
        other => panic!("no --format json case for the command `{other}`: add one"),
    };
    (args.into_iter().map(str::to_owned).collect(), stdin, code)
}

fn run(dir: &Path, args: &[String], stdin: &str) -> Run {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_in(dir, &args, stdin)
}

#[test]
fn help_shows_examples_on_every_command() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let top = run_in(dir.path(), &["--help"], "");
    assert_eq!(top.code, 0);
    assert!(
        top.stdout.contains("Examples:") && top.stdout.contains("Exit codes:"),
        "{}",
        top.stdout
    );
    let commands = commands(dir.path());
    assert!(commands.len() >= 15, "{commands:?}");
    for command in &commands {
        let run = run_in(dir.path(), &[command, "--help"], "");
        assert_eq!(run.code, 0, "{command}: {run:?}");
        assert!(
            run.stdout.contains("Example"),
            "{command} --help has no example: {}",
            run.stdout
        );
        assert!(
            run.stdout.contains(&format!("statecraft {command}")),
            "{command}: {}",
            run.stdout
        );
    }
}

#[test]
fn every_command_prints_only_json_under_format_json() {
    let probe = tempfile::tempdir().expect("a temporary folder");
    let commands = commands(probe.path());
    assert!(commands.len() >= 15, "{commands:?}");
    let mut problems = Vec::new();
    for command in &commands {
        let (args, stdin, code) = case(command);
        let dir = folder();
        let mut with_flag = vec!["--format".to_owned(), "json".to_owned()];
        with_flag.extend(args.iter().cloned());
        let json_run = run(dir.path(), &with_flag, stdin);
        if json_run.code != code {
            problems.push(format!(
                "{command}: exit {} (expected {code}): {json_run:?}",
                json_run.code
            ));
            continue;
        }
        if json_run.stdout.is_empty() && json_run.stderr.is_empty() {
            problems.push(format!("{command}: printed nothing at all"));
        }
        for (stream, text) in [("stdout", &json_run.stdout), ("stderr", &json_run.stderr)] {
            if let Err(why) = documents(text) {
                problems.push(format!("{command} --format json: {stream} is {why}"));
            }
        }
        // The same run for people must print something that is not JSON, or the flag changed nothing
        // this test can see. (`log` and `grade` print JSON unless `--format human` is given by name.)
        let mut human = args.clone();
        if matches!(command.as_str(), "log" | "grade") {
            human.extend(["--format".to_owned(), "human".to_owned()]);
        }
        let dir = folder();
        let human_run = run(dir.path(), &human, stdin);
        if documents(&human_run.stdout).is_ok() && documents(&human_run.stderr).is_ok() {
            problems.push(format!(
                "{command}: the human output is JSON too, so this case does not show the flag: {human_run:?}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn schema_warns_in_json_and_grade_summarises_for_people() {
    let dir = folder();
    let schema = run_in(
        dir.path(),
        &["schema", "--format", "json", "--schema", "tree.json"],
        "",
    );
    assert_eq!(schema.code, 0, "{schema:?}");
    let warning = documents(&schema.stderr).expect("json");
    assert_eq!(warning.len(), 1, "{}", schema.stderr);
    assert_eq!(warning[0]["warning"], json!("partial_schema"));
    assert!(
        warning[0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("the schema is recursive")),
        "{warning:?}"
    );
    assert_eq!(
        documents(&schema.stdout).expect("json")[0]["type"],
        json!("array")
    );

    let args = [
        "grade",
        "--state",
        "state.json",
        "--expect",
        "expect.json",
        "reply.txt",
    ];
    let json_grade = run_in(dir.path(), &args, "");
    let grade = &documents(&json_grade.stdout).expect("json")[0];
    let mut human_args = args.to_vec();
    human_args.extend(["--format", "human"]);
    let human = run_in(dir.path(), &human_args, "");
    assert_eq!(human.code, 0, "{human:?}");
    assert!(
        human.stdout.starts_with(&format!(
            "score {}/100 (cleanliness {}/100)\n1 instruction read; valid: yes; applies: yes",
            grade["score"], grade["cleanliness"]
        )),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains("checks: 1/1 passed\n  ok    /player/hp = 90\n"),
        "{}",
        human.stdout
    );
}

#[test]
fn serve_announces_its_address_as_json() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut child = Command::new(env!("CARGO_BIN_EXE_statecraft"))
        .args([
            "--format",
            "json",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--db",
        ])
        .arg(format!("sqlite:{}", dir.path().join("games.db").display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let mut line = String::new();
    let read = BufReader::new(child.stdout.take().expect("piped")).read_line(&mut line);
    child.kill().expect("the server stops");
    let output = child.wait_with_output().expect("the server exits");
    read.expect("a line on stdout");
    let announced: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert!(
        announced["listening"]
            .as_str()
            .is_some_and(|url| url.starts_with("http://127.0.0.1:")),
        "{line}"
    );
    // Its logs follow the format too: every line on stderr is a JSON object.
    let logs = String::from_utf8(output.stderr).expect("utf-8");
    for log in logs.lines() {
        assert!(serde_json::from_str::<Value>(log).is_ok(), "{logs}");
    }
}
