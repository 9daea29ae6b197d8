//! `statecraft card`: a character card in (PNG, card JSON, world book export, InitVar text), MVU's
//! initial state and automatic schema out; bad cards get an error naming the entry and the line.
//!
//! The cards are in `tests/fixtures/cards/`: `mira.json` is a V2 card in the shape of MVU's example
//! cards (an `[InitVar]` entry of YAML in a code fence with `<user>`, `{{char}}`, value-description
//! pairs, `$meta` and the extensible marker; a second one of JSON with comments; both disabled, as
//! MVU cards keep them out of the prompt), `mira.png` the same card in a PNG's `chara` chunk, and
//! `mira-book.json` its world book as SillyTavern exports it (entries keyed by uid).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

mod support;
use support::run_in;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cards")
        .join(name)
}

fn card(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut all = vec!["card"];
    all.extend_from_slice(args);
    let run = run_in(dir.path(), &all, "");
    assert_eq!(run.code, 0, "{run:?}");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not json ({e}): {}", run.stdout))
}

fn mira_state() -> Value {
    json!({
        "日期": "2024-03-01",
        "时间": "08:00",
        "Alex": {"生命值": [100, "0-100, 0 means death"], "金钱": 50, "背包": ["绳子"]},
        "Mira": {"好感度": [10, "-100 to 100"], "心情": "平静"},
        "NPC": {"小林": {"好感度": 5, "心情": "开心"}},
        "事件": [{"名称": "初遇", "已完成": true}]
    })
}

#[test]
fn a_png_card_and_its_json_give_the_same_state_and_schema() {
    let png = fixture("mira.png");
    let json = fixture("mira.json");
    let from_png = card(&[png.to_str().unwrap(), "--macro", "user=Alex"]);
    let from_json = card(&[json.to_str().unwrap(), "--macro", "user=Alex"]);
    assert_eq!(from_png, from_json);
    assert_eq!(from_png["state"], mira_state());
    assert_eq!(from_png["profile"], "mvu");
    assert_eq!(
        from_png["entries"],
        json!(["[InitVar] 1 start", "[initvar] events"]),
        "only InitVar entries, disabled ones included, in the book's order"
    );
}

#[test]
fn markers_become_the_automatic_schema() {
    let read = card(&[
        fixture("mira.json").to_str().unwrap(),
        "--macro",
        "user=Alex",
    ]);
    let schema = &read["schema"];
    assert_eq!(schema["extensible"], false, "the root is closed");
    let alex = &schema["properties"]["Alex"];
    assert_eq!(alex["required"], true);
    assert_eq!(alex["extensible"], false);
    assert_eq!(
        alex["properties"]["背包"]["extensible"], true,
        "the marker opens the bag"
    );
    let npc = &schema["properties"]["NPC"];
    assert_eq!(npc["extensible"], true);
    assert_eq!(npc["template"], json!({"好感度": 0, "心情": "平静"}));
    assert_eq!(
        npc["properties"]["小林"]["required"], false,
        "members of an open object may go"
    );
    let events = &schema["properties"]["事件"];
    assert_eq!(events["extensible"], true);
    assert_eq!(events["template"], json!({"已完成": false}));
}

#[test]
fn an_exported_world_book_is_read_in_uid_order() {
    let read = card(&[
        fixture("mira-book.json").to_str().unwrap(),
        "--macro",
        "user=Alex",
        "--macro",
        "char=Mira",
    ]);
    // uid 10 comes after uid 2, though "10" sorts before "2" as text, and its 金钱 is merged last.
    assert_eq!(
        read["entries"],
        json!(["[InitVar] 1 start", "[initvar] events", "[InitVar] late"])
    );
    assert_eq!(read["state"]["金钱"], 1);
    assert_eq!(read["state"]["Alex"]["金钱"], 50);
}

#[test]
fn initvar_text_is_a_card_too() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let run = run_in(
        dir.path(),
        &["card", "-", "--macro", "user=Ann"],
        "<user>:\n  hp: 10\n  bag: [rope, $__META_EXTENSIBLE__$]\n",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let read: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(read["state"], json!({"Ann": {"hp": 10, "bag": ["rope"]}}));
    assert_eq!(
        read["schema"]["properties"]["Ann"]["properties"]["bag"]["extensible"],
        true
    );
}

#[test]
fn bad_cards_are_refused_with_what_and_where() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let cases: [(&str, &[u8], &str); 4] = [
        ("broken YAML", b"a: 1\nb: [1, 2\nc: 3\n", "line 3"),
        (
            "no InitVar entry",
            br#"{"spec": "chara_card_v2", "data": {"name": "x", "character_book": {"entries": [{"comment": "lore", "content": "a: 1"}]}}}"#,
            "1 world book entries and none is an InitVar entry",
        ),
        ("a PNG without a card", &[0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', 0, 0], "PNG file is damaged"),
        ("a list, not a mapping", b"- 1\n- 2\n", "not a list"),
    ];
    for (what, input, expected) in cases {
        let path = dir.path().join("card.bin");
        std::fs::write(&path, input).unwrap();
        let run = run_in(dir.path(), &["--format", "json", "card", "card.bin"], "");
        assert_eq!(run.code, 2, "{what}: {run:?}");
        assert!(run.stdout.is_empty(), "{what}: nothing on stdout");
        assert!(run.stderr.contains(expected), "{what}: {}", run.stderr);
        let error: Value = serde_json::from_str(run.stderr.trim()).expect("a JSON error");
        assert!(error["error"].is_string(), "{what}: {error}");
    }
}
