//! Golden saves: every file under `saves/golden/v*/` is a save written by some format version, kept
//! forever, with the game it must load as (`NAME.expected.json`). Every run loads them all, so a build
//! that cannot read an old save fails here. For the current version the test also writes the same
//! scenarios again and requires the same bytes, so a format change cannot slip in without a new
//! version. `UPDATE_EXPECT=1` writes the current version's files; review them in the diff.

mod common;

use std::path::{Path, PathBuf};

use common::{batch, unsynced, view};
use serde_json::{Value as Json, json};
use statecraft_engine::{
    ApplyOptions, CardUpdateOptions, CardVersion, HistoryLimits, Profile, StepId, StructureSchema,
    Value, plan_card_update,
};
use statecraft_saves::{FORMAT_VERSION, Game, NewGame};

fn golden_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden")
}

/// The scenario of `basic.save`: a schema, scripts, metadata, labels, reasons, `null` values, floats,
/// a deletion, an array insert and an undone step that stays redoable.
fn write_basic(path: &Path) -> Game {
    let schema = json!({"type": "object", "properties": {"hp": {"type": "integer", "minimum": 0}}, "required": ["hp"]});
    let setup = NewGame::default()
        .schema(schema)
        .scripts("scripts")
        .history(HistoryLimits {
            max_steps: 50,
            max_bytes: 1 << 20,
        })
        .metadata("card", json!("golden hall"))
        .seed(2024);
    let state =
        Value::from(json!({"hp": 10, "gold": 2.5, "bag": ["rope"], "flags": {"met_king": false}}));
    let mut game = Game::create_with(path, state, setup, unsynced()).unwrap();
    let steps = [
        (
            "msg-1",
            json!([{"op": "assign", "path": ["hp"], "value": 7, "reason": "hit by a goblin"}]),
        ),
        (
            "msg-2",
            json!([{"op": "push", "path": ["bag"], "value": {"name": "lamp", "lit": null}}, {"op": "increment", "path": ["gold"], "value": 0.25}]),
        ),
        (
            "msg-3",
            json!([{"op": "delete", "path": ["flags", "met_king"]}, {"op": "splice", "path": ["bag"], "value": {"start": 0, "deleteCount": 0, "items": ["key"]}}]),
        ),
        (
            "msg-4",
            json!([{"op": "assign", "path": ["note"], "value": null}]),
        ),
    ];
    for (label, step) in steps {
        assert!(
            game.apply(&batch(step), Some(label))
                .unwrap()
                .is_committed()
        );
    }
    game.undo().unwrap().expect("undo");
    game
}

/// The scenario of `timeline.save`: a chat with swipes (one of them replaced under the same label), a
/// return to an earlier swipe, a deleted message, an edit that branches, an empty labelled step,
/// trimming of the least recently visited branch tips, a compaction in the middle, and moves after it.
fn write_timeline(path: &Path) -> Game {
    let setup = NewGame::default().history(HistoryLimits {
        max_steps: 6,
        max_bytes: 1 << 20,
    });
    let state = Value::from(json!({"mood": "calm", "gold": 0, "log": []}));
    let mut game = Game::create_with(path, state, setup, unsynced()).unwrap();
    let commit = |game: &mut Game, at: Option<&str>, label: &str, batch_json: Json| {
        let options = ApplyOptions {
            label: Some(label.to_owned()),
            at: at.map(Into::into),
            ..ApplyOptions::default()
        };
        assert!(
            game.apply_with(&batch(batch_json), &options)
                .unwrap()
                .is_committed(),
            "{label}"
        );
    };
    commit(&mut game, None, "m0", json!([]));
    commit(
        &mut game,
        None,
        "m1",
        json!([{"op": "push", "path": ["log"], "value": "hello"}]),
    );
    commit(
        &mut game,
        Some("m0"),
        "m1/edit",
        json!([{"op": "push", "path": ["log"], "value": "hi"}]),
    );
    commit(
        &mut game,
        None,
        "m2/s1",
        json!([{"op": "assign", "path": ["mood"], "value": "glad", "reason": "a gift"}]),
    );
    commit(
        &mut game,
        Some("m1/edit"),
        "m2/s2",
        json!([{"op": "increment", "path": ["gold"], "value": 5}]),
    );
    commit(
        &mut game,
        Some("m1/edit"),
        "m2/s2",
        json!([{"op": "increment", "path": ["gold"], "value": 7}]),
    );
    game.checkout("m2/s1").unwrap().expect("m2/s1");
    commit(
        &mut game,
        None,
        "m3",
        json!([{"op": "assign", "path": ["note"], "value": null}]),
    );
    game.compact().unwrap();
    game.undo().unwrap().expect("m3 deleted");
    commit(
        &mut game,
        None,
        "m3/s2",
        json!([{"op": "delete", "path": ["log", 0]}]),
    );
    commit(
        &mut game,
        None,
        "m4",
        json!([{"op": "assign", "path": ["gold"], "value": 1.5}]),
    );
    game.checkout(StepId::ROOT).unwrap().expect("the root");
    game.redo().unwrap().expect("redo");
    game
}

/// The scenario of `card.save` (version 4 on): a game made from an MVU card, with the `mvu`
/// profile and the card's automatic schema, whose replies apply one command at a time.
fn write_card(path: &Path) -> Game {
    let automatic = json!({
        "type": "object", "extensible": false, "recursiveExtensible": false,
        "properties": {
            "hp": {"type": "number", "required": true},
            "npcs": {"type": "object", "required": true, "extensible": true, "recursiveExtensible": false,
                     "template": {"mood": "calm"}, "properties": {}}
        }
    });
    let setup = NewGame::default()
        .profile(Profile::Mvu)
        .automatic_schema(automatic)
        .metadata("card", json!("golden card"));
    let state = Value::from(json!({"hp": 10, "npcs": {}}));
    let mut game = Game::create_with(path, state, setup, unsynced()).unwrap();
    let commit = game
        .apply(
            &batch(json!([
                {"op": "assign", "path": ["npcs", "ann"], "value": {"hp": 3}},
                {"op": "delete", "path": ["hp"]},
                {"op": "assign", "path": ["hp"], "value": 9}
            ])),
            Some("m1"),
        )
        .unwrap()
        .committed()
        .expect("committed");
    assert_eq!(commit.warnings.len(), 1, "the required key stays");
    game
}

/// The scenario of `mvu_card.save` (version 5 on): a card's game that keeps its macros and its card's
/// fingerprint, and takes a new version of its card as one step (a new key, the template merged in,
/// a dropped key only listed, the new automatic schema), then a reply under the new card.
fn write_card_update(path: &Path) -> Game {
    let automatic = |properties: Json| json!({"type": "object", "extensible": false, "recursiveExtensible": false, "properties": properties});
    let v1 = automatic(json!({
        "hp": {"type": "number", "required": true},
        "title": {"type": "string", "required": true},
        "npcs": {"type": "object", "required": true, "extensible": true, "recursiveExtensible": false,
                 "template": {"mood": "calm"}, "properties": {}}
    }));
    let v2 = automatic(json!({
        "hp": {"type": "number", "required": true},
        "mp": {"type": "number", "required": true},
        "npcs": {"type": "object", "required": true, "extensible": true, "recursiveExtensible": false,
                 "template": {"mood": "calm"}, "properties": {"Alex": {"type": "object", "required": true,
                 "extensible": false, "recursiveExtensible": false, "properties": {}}}}
    }));
    let setup = NewGame::default()
        .profile(Profile::Mvu)
        .automatic_schema(v1)
        .card_fingerprint("1".repeat(64))
        .macros(std::collections::BTreeMap::from([(
            "user".to_owned(),
            "Alex".to_owned(),
        )]))
        .metadata("card", json!("golden card"));
    let state = Value::from(json!({"hp": 10, "title": "squire", "npcs": {}}));
    let mut game = Game::create_with(path, state, setup, unsynced()).unwrap();
    assert!(
        game.apply(
            &batch(json!([{"op": "assign", "path": ["hp"], "value": 9}])),
            Some("m1"),
        )
        .unwrap()
        .is_committed()
    );
    let version = CardVersion {
        structure: Some(StructureSchema::new(v2).unwrap()),
        fingerprint: Some("2".repeat(64)),
    };
    let initial = Value::from(json!({"hp": 10, "mp": 5, "npcs": {"Alex": {}}}));
    let update = plan_card_update(
        game.state(),
        &initial,
        game.store().card(),
        &version,
        CardUpdateOptions::default(),
    );
    assert!(
        game.take_card(&update, version, Some("card 2"))
            .unwrap()
            .is_committed()
    );
    assert!(
        game.apply(
            &batch(json!([{"op": "assign", "path": ["mp"], "value": 4}])),
            Some("m2"),
        )
        .unwrap()
        .is_committed()
    );
    game
}

/// Writes a scenario's save at a path.
type Scenario = fn(&Path) -> Game;

/// Every scenario the current version writes, by file stem.
const SCENARIOS: [(&str, Scenario); 4] = [
    ("basic", write_basic),
    ("timeline", write_timeline),
    ("card", write_card),
    ("card_update", write_card_update),
];

fn expected_of(game: &Game) -> Json {
    let mut expected = json!({
        "game": view(game.store()),
        "schema": game.schema(),
        "scripts": game.scripts(),
        "metadata": game.metadata(),
        "seed": game.store().seed(),
    });
    // Only games that have them say so, so that the files of older versions stay as written.
    if game.store().profile() != Profile::Strict {
        expected["profile"] = json!(game.store().profile());
    }
    if let Some(structure) = game.store().structure() {
        expected["automatic_schema"] = structure.source().clone();
    }
    if let Some(fingerprint) = &game.store().card().fingerprint {
        expected["card_fingerprint"] = json!(fingerprint);
    }
    if !game.macros().is_empty() {
        expected["macros"] = json!(game.macros());
    }
    expected
}

#[test]
fn every_golden_save_loads_as_recorded() {
    let current = golden_root().join(format!("v{FORMAT_VERSION}"));
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        // Written elsewhere and copied in, so that the lock file stays out of the golden folder.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(&current).unwrap();
        for (name, write) in SCENARIOS {
            let game = write(&dir.path().join(format!("{name}.save")));
            std::fs::copy(game.path(), current.join(format!("{name}.save"))).unwrap();
            let expected = serde_json::to_string_pretty(&expected_of(&game)).unwrap();
            std::fs::write(
                current.join(format!("{name}.expected.json")),
                expected + "\n",
            )
            .unwrap();
        }
    }
    let mut loaded = 0;
    let mut versions: Vec<_> = std::fs::read_dir(golden_root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    versions.sort();
    for version in versions {
        let mut saves: Vec<_> = std::fs::read_dir(&version)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "save"))
            .collect();
        saves.sort();
        for save in saves {
            // Opening takes the lock and may cut or migrate, so work on a copy: the golden file stays as
            // it was written.
            let dir = tempfile::tempdir().unwrap();
            let copy = dir.path().join("copy.save");
            std::fs::copy(&save, &copy).unwrap();
            let game = Game::open_with(&copy, unsynced())
                .unwrap_or_else(|e| panic!("{}: {e}", save.display()));
            let expected: Json = serde_json::from_str(
                &std::fs::read_to_string(save.with_extension("expected.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(expected_of(&game), expected, "{}", save.display());
            loaded += 1;
        }
    }
    println!("golden saves loaded: {loaded}");
    assert!(
        loaded >= 1,
        "no golden save under {}",
        golden_root().display()
    );
}

#[test]
fn the_current_version_writes_its_golden_bytes() {
    for (name, write) in SCENARIOS {
        let golden = golden_root()
            .join(format!("v{FORMAT_VERSION}"))
            .join(format!("{name}.save"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{name}.save"));
        drop(write(&path));
        let written = std::fs::read(&path).unwrap();
        let kept = std::fs::read(&golden)
            .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_EXPECT=1", golden.display()));
        assert!(
            written == kept,
            "{name}: the format changed without a new version; see saves/FORMAT.md"
        );
    }
}

#[test]
fn a_golden_game_goes_on_after_loading() {
    for version in ["v1", "v2"] {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("copy.save");
        std::fs::copy(golden_root().join(version).join("basic.save"), &copy).unwrap();
        let mut game = Game::open_with(&copy, unsynced()).unwrap();
        game.redo().unwrap().expect("msg-4 is redoable");
        assert_eq!(game.state().to_json()["note"], Json::Null);
        assert_eq!(game.undo_to("msg-1").unwrap(), Some(3));
        assert_eq!(
            game.state().to_json(),
            json!({"hp": 7, "gold": 2.5, "bag": ["rope"], "flags": {"met_king": false}})
        );
        let refused = game
            .apply(
                &batch(json!([{"op": "assign", "path": ["hp"], "value": -1}])),
                None,
            )
            .unwrap();
        assert!(
            !refused.is_committed(),
            "{version}: the golden schema still applies"
        );
    }
}

#[test]
fn a_golden_timeline_goes_on_after_loading() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.save");
    std::fs::copy(golden_root().join("v2").join("timeline.save"), &copy).unwrap();
    let mut game = Game::open_with(&copy, unsynced()).unwrap();
    let state_at =
        |game: &Game, label: &str| game.store().state_at(label).map(|s| s.value().to_json());
    // The edit's line is intact; the first version of m1 and both versions of m2/s2 were trimmed.
    assert_eq!(state_at(&game, "m1/edit").unwrap()["log"], json!(["hi"]));
    assert!(state_at(&game, "m1").is_err() && state_at(&game, "m2/s2").is_err());
    assert_eq!(
        state_at(&game, "m4").unwrap(),
        json!({"mood": "glad", "gold": 1.5, "log": []})
    );
    game.checkout("m3/s2").unwrap().expect("m3/s2");
    let commit = game
        .apply(
            &batch(json!([{"op": "assign", "path": ["mood"], "value": "tired"}])),
            Some("m4/s2"),
        )
        .unwrap()
        .committed()
        .unwrap();
    let trimmed: Vec<_> = commit.trimmed.iter().map(|t| t.label.as_deref()).collect();
    assert_eq!(
        trimmed,
        [Some("m3")],
        "six steps at most: the least recently visited goes"
    );
    drop(game);
    let game = Game::open_with(&copy, unsynced()).unwrap();
    assert_eq!(game.state().to_json()["mood"], json!("tired"));
}

/// A version 4 save is rewritten as version 5 when opened, and goes on: it takes a new version of
/// its card, and the file keeps it across a restart.
#[test]
fn a_version_4_card_save_is_upgraded_and_takes_a_card_update() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.save");
    std::fs::copy(golden_root().join("v4").join("card.save"), &copy).unwrap();
    let mut game = Game::open_with(&copy, unsynced()).unwrap();
    let header = std::fs::read(&copy).unwrap()[16..20].to_vec();
    assert_eq!(header, FORMAT_VERSION.to_le_bytes(), "rewritten at once");
    assert_eq!(game.store().card().fingerprint, None);
    assert!(game.macros().is_empty());
    let version = CardVersion {
        structure: game.store().structure().cloned(),
        fingerprint: Some("f".repeat(64)),
    };
    let initial = Value::from(json!({"hp": 10, "npcs": {}, "gold": 0}));
    let update = plan_card_update(
        game.state(),
        &initial,
        game.store().card(),
        &version,
        CardUpdateOptions::default(),
    );
    assert!(
        game.take_card(&update, version, Some("card 2"))
            .unwrap()
            .is_committed()
    );
    drop(game);
    let game = Game::open_with(&copy, unsynced()).unwrap();
    assert_eq!(game.state().to_json()["gold"], json!(0));
    assert_eq!(
        game.store().card().fingerprint.as_deref(),
        Some("f".repeat(64).as_str())
    );
}
