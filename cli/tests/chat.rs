//! `statecraft sync` and `statecraft import-chat` (docs/cli.md, docs/timeline.md).
//!
//! `tests/fixtures/chats/mira.jsonl` is a SillyTavern chat file written from the format, with the card
//! of `tests/fixtures/cards/mira.json`: a greeting with an alternate greeting, a reply with two swipes
//! (the second shown), a narrator's note (not a reply), a reply hidden with /hide (`is_system`, still a
//! reply), and MVU's per-message variables, whose last stored state differs from what the reply does
//! (`时间` is `12:30` there, `12:00` by the reply), so the migration check has one difference to find.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use statecraft_engine::ContentKey;

mod support;
use support::run_in;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not json ({e}): {text}"))
}

fn key(text: &str) -> String {
    ContentKey::of_text(text).to_string()
}

/// The shown replies of the fixture, oldest first.
fn shown_replies() -> Vec<String> {
    let text = std::fs::read_to_string(fixture("chats/mira.jsonl")).unwrap();
    text.lines()
        .skip(1)
        .map(json_of)
        .filter(|message| {
            message["is_user"] != json!(true) && !message["extra"]["type"].is_string()
        })
        .map(|message| message["mes"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_chat_without_a_card_starts_from_its_first_stored_state_and_reports_mvu_differences() {
    let dir = tempfile::tempdir().unwrap();
    let chat = fixture("chats/mira.jsonl");
    let run = run_in(
        dir.path(),
        &[
            "import-chat",
            chat.to_str().unwrap(),
            "--save",
            "game.save",
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let report = json_of(&run.stdout);
    assert_eq!(report["replies"], 4);
    assert_eq!(
        report["steps"], 5,
        "the shown greeting, two swipes, two replies"
    );
    assert_eq!(
        report["skipped_swipes"],
        json!([{"message": 0, "swipe": 1}])
    );
    assert_eq!(
        report["mismatches"],
        json!([{
            "message": 7, "swipe": 0, "step": report["current"],
            "differences": [{"path": ["时间"], "statecraft": "12:00", "mvu": "12:30"}]
        }])
    );
    let show = run_in(dir.path(), &["show", "--save", "game.save"], "");
    let state = json_of(&show.stdout);
    assert_eq!(
        state["Alex"]["金钱"], 55,
        "the hidden reply's change stands"
    );
    assert_eq!(state["Mira"]["心情"], "开心", "the shown swipe");
    assert_eq!(state["时间"], "12:00");

    // The front end's chat path, by keys alone, finds every step.
    let path = json!({"replies": shown_replies().iter().map(|text| json!({"sha256": key(text)})).collect::<Vec<_>>()});
    let run = run_in(
        dir.path(),
        &["sync", "--save", "game.save", "-"],
        &path.to_string(),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let synced = json_of(&run.stdout);
    assert_eq!(synced["reused"], 4);
    assert_eq!(synced["applied"], json!([]));
    assert_eq!(synced["step"], report["current"]);
}

#[test]
fn a_chat_with_its_card_replays_every_reply_from_the_card_state() {
    let dir = tempfile::tempdir().unwrap();
    let chat = fixture("chats/mira.jsonl");
    let card = fixture("cards/mira.json");
    let run = run_in(
        dir.path(),
        &[
            "import-chat",
            chat.to_str().unwrap(),
            "--save",
            "game.save",
            "--card",
            card.to_str().unwrap(),
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let report = json_of(&run.stdout);
    assert_eq!(report["steps"], 6, "both greetings are steps now");
    assert_eq!(report["skipped_swipes"], json!([]));
    assert_eq!(report["mismatches"].as_array().unwrap().len(), 1);
    let log = json_of(&run_in(dir.path(), &["log", "--save", "game.save"], "").stdout);
    let roots = log["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step["parent"] == 0)
        .count();
    assert_eq!(roots, 2, "the greetings are siblings: {log}");
    let first = shown_replies()[0].clone();
    assert!(
        log["steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|step| step["key"] == json!(key(&first))),
        "the log shows each synced step's key: {log}"
    );
    let text = run_in(
        dir.path(),
        &[
            "import-chat",
            chat.to_str().unwrap(),
            "--save",
            "other.save",
        ],
        "",
    );
    assert!(
        text.stdout.contains("differs from MVU: message 7 swipe 0"),
        "{text:?}"
    );
}

#[test]
fn sync_applies_what_is_new_asks_for_unknown_texts_and_reads_without_moving() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("state.json"), r#"{"gold": 0}"#).unwrap();
    let new = run_in(
        dir.path(),
        &["new", "game.save", "--state", "state.json"],
        "",
    );
    assert_eq!(new.code, 0, "{new:?}");
    let replies: Vec<String> = (1..=3)
        .map(|n| format!("<UpdateVariable>\n_.add('gold', {n});\n</UpdateVariable>"))
        .collect();
    let texts = |replies: &[String]| {
        json!({"replies": replies.iter().map(|text| json!({"text": text})).collect::<Vec<_>>()})
            .to_string()
    };
    let run = run_in(
        dir.path(),
        &["sync", "--save", "game.save", "-"],
        &texts(&replies[..2]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(json_of(&run.stdout)["state"], json!({"gold": 3}));

    let keys = json!({"replies": replies.iter().map(|text| json!({"sha256": key(text)})).collect::<Vec<_>>()});
    let run = run_in(
        dir.path(),
        &["sync", "--save", "game.save", "--format", "json", "-"],
        &keys.to_string(),
    );
    assert_eq!(run.code, 1, "{run:?}");
    let error = json_of(run.stderr.trim());
    assert_eq!(error["error"]["kind"], "need_text");
    assert_eq!(error["need"], json!([2]));
    // docs/cli.md: for people, the message counts the replies; `need` above lists their indices.
    let run = run_in(
        dir.path(),
        &["sync", "--save", "game.save", "-"],
        &keys.to_string(),
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("1 reply given by key alone matches no step at its place: send its text"),
        "{}",
        run.stderr
    );

    let run = run_in(
        dir.path(),
        &["sync", "--save", "game.save", "--no-move", "-"],
        &texts(&replies),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let answer = json_of(&run.stdout);
    assert_eq!(answer["state"], json!({"gold": 6}));
    assert_ne!(answer["current"], answer["step"]);
    let show = run_in(dir.path(), &["show", "--save", "game.save"], "");
    assert_eq!(json_of(&show.stdout), json!({"gold": 3}), "not moved");

    let run = run_in(
        dir.path(),
        &["sync", "--save", "game.save", "-"],
        r#"{"replies": [{"sha256": "12"}]}"#,
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("replies[0]"), "{}", run.stderr);
}

#[test]
fn a_broken_chat_file_is_named_by_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("chat.jsonl"),
        "{\"user_name\": \"Alex\"}\n{\"mes\": \"hi\", \"is_user\": false}\nnot json\n",
    )
    .unwrap();
    let run = run_in(
        dir.path(),
        &["import-chat", "chat.jsonl", "--save", "game.save"],
        "",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("chat.jsonl, line 3"), "{}", run.stderr);
    assert!(!dir.path().join("game.save").exists(), "nothing made");
}
