//! A game's behaviour across restarts: history, undo, redo and `undo_to` after reopening, torn tails,
//! compaction bounds, the lock, and a model-based property test against an in-memory store.

mod common;

use std::time::Duration;

use common::{batch, unsynced, view};
use proptest::prelude::*;
use serde_json::json;
use statecraft_engine::{ApplyOptions, HistoryLimits, Outcome, Store, Value};
use statecraft_saves::{Game, NewGame, OpenOptions, SaveError};

fn start(dir: &tempfile::TempDir, setup: NewGame) -> Game {
    Game::create_with(
        dir.path().join("game.save"),
        Value::from(json!({"hp": 10, "log": []})),
        setup,
        unsynced(),
    )
    .expect("create")
}

fn push(game: &mut Game, value: i64, label: &str) {
    let outcome = game
        .apply(
            &batch(json!([{"op": "push", "path": ["log"], "value": value}])),
            Some(label),
        )
        .expect("apply");
    assert!(outcome.is_committed());
}

fn reopen(game: Game) -> Game {
    let path = game.path().to_owned();
    drop(game);
    Game::open_with(path, unsynced()).expect("reopen")
}

#[test]
fn history_survives_a_restart_and_undo_redo_work_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = start(&dir, NewGame::default());
    push(&mut game, 1, "m1");
    push(&mut game, 2, "m2");
    push(&mut game, 3, "m3");
    game.undo().unwrap().expect("a step to undo");
    let before = view(game.store());
    let mut game = reopen(game);
    assert_eq!(view(game.store()), before);
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1, 2]}));
    game.redo().unwrap().expect("a step to redo");
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1, 2, 3]}));
    let mut game = reopen(game);
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1, 2, 3]}));
    assert_eq!(game.undo_to("m1").unwrap(), Some(2));
    let mut game = reopen(game);
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1]}));
    assert_eq!(game.undo_to("nowhere").unwrap(), None);
    // A new step after undo drops the redo branch, on disk as in memory.
    push(&mut game, 9, "m2b");
    let game = reopen(game);
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1, 9]}));
    let labels: Vec<_> = game
        .store()
        .history()
        .map(|s| (s.label.map(str::to_owned), s.applied))
        .collect();
    assert_eq!(
        labels,
        vec![
            (Some("m1".to_owned()), true),
            (Some("m2b".to_owned()), true)
        ]
    );
}

#[test]
fn a_rejected_batch_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = start(&dir, NewGame::default());
    let len = std::fs::metadata(game.path()).unwrap().len();
    let outcome = game
        .apply(
            &batch(json!([{"op": "increment", "path": ["missing"], "value": 1}])),
            Some("x"),
        )
        .unwrap();
    assert!(matches!(outcome, Outcome::Rejected(_)));
    assert_eq!(std::fs::metadata(game.path()).unwrap().len(), len);
    assert_eq!(game.file_len(), len);
}

#[test]
fn a_batch_that_changes_nothing_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = start(&dir, NewGame::default());
    let len = game.file_len();
    assert!(
        game.apply(&batch(json!([{"op": "get", "path": ["hp"]}])), None)
            .unwrap()
            .is_committed()
    );
    assert_eq!(std::fs::metadata(game.path()).unwrap().len(), len);
}

#[test]
fn the_file_stays_proportional_to_the_retained_history() {
    let dir = tempfile::tempdir().unwrap();
    let limits = HistoryLimits {
        max_steps: 5,
        max_bytes: 1 << 20,
    };
    let mut game = start(&dir, NewGame::default().history(limits));
    let mut largest = 0;
    for i in 0..3_000 {
        let outcome = game
            .apply(&batch(json!([{"op": "assign", "path": ["hp"], "value": i, "reason": "a long enough reason"}])), None)
            .unwrap();
        assert!(outcome.is_committed());
        largest = largest.max(std::fs::metadata(game.path()).unwrap().len());
    }
    // Base plus at most 2 x 5 + 16 records of about 100 bytes: far below what 3,000 steps would take.
    assert!(largest < 4_000, "the file grew to {largest} bytes");
    let mut game = reopen(game);
    assert_eq!(game.state().to_json()["hp"], json!(2_999));
    assert_eq!(game.store().history().count(), 5);
    for _ in 0..5 {
        game.undo().unwrap().expect("a retained step");
    }
    assert_eq!(game.undo().unwrap(), None);
    assert_eq!(game.state().to_json()["hp"], json!(2_994));
    let game = reopen(game);
    assert_eq!(game.state().to_json()["hp"], json!(2_994));
}

#[test]
fn with_history_off_the_state_still_survives() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = start(
        &dir,
        NewGame::default().history(HistoryLimits {
            max_steps: 0,
            max_bytes: 0,
        }),
    );
    push(&mut game, 1, "a");
    push(&mut game, 2, "b");
    let mut game = reopen(game);
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1, 2]}));
    assert_eq!(game.store().history().count(), 0);
    assert_eq!(game.undo().unwrap(), None);
}

#[test]
fn a_torn_tail_is_dropped_and_cut_and_the_game_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = start(&dir, NewGame::default());
    push(&mut game, 1, "m1");
    let whole = game.file_len() as usize;
    push(&mut game, 2, "m2");
    let path = game.path().to_owned();
    drop(game);
    let bytes = std::fs::read(&path).unwrap();
    // Half of the second step's record, as a crash in the middle of its append would leave.
    let torn = &bytes[..whole + (bytes.len() - whole) / 2];
    std::fs::write(&path, torn).unwrap();
    let mut game = Game::open_with(&path, unsynced()).unwrap();
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1]}));
    assert_eq!(
        std::fs::metadata(&path).unwrap().len() as usize,
        whole,
        "the torn tail is cut"
    );
    push(&mut game, 3, "m3");
    let game = reopen(game);
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1, 3]}));
}

#[test]
fn a_second_process_waits_for_the_lock_and_then_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let game = start(&dir, NewGame::default());
    let path = game.path().to_owned();
    let error =
        Game::open_with(&path, unsynced().lock_timeout(Duration::from_millis(50))).unwrap_err();
    assert!(matches!(error, SaveError::Locked { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("game.save is in use by another process")
            && message.contains("gave up after"),
        "{message}"
    );
    drop(game);
    Game::open_with(&path, unsynced()).expect("the lock is released with the game");
}

#[test]
fn a_new_game_never_overwrites_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("game.save");
    std::fs::write(&path, "precious").unwrap();
    let error = Game::create(&path, Value::from(json!({})), NewGame::default()).unwrap_err();
    assert!(matches!(error, SaveError::Exists { .. }), "{error}");
    assert!(
        error.to_string().contains("a file already exists there"),
        "{error}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
}

#[test]
fn the_schema_is_kept_and_enforced_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let schema = json!({"type": "object", "properties": {"hp": {"type": "integer", "minimum": 0}}});
    let setup = NewGame::default()
        .schema(schema.clone())
        .scripts("cards/scripts")
        .metadata("card", json!("golden"));
    let game = start(&dir, setup);
    let mut game = reopen(game);
    assert_eq!(game.schema(), Some(&schema));
    assert_eq!(game.scripts(), Some(std::path::Path::new("cards/scripts")));
    assert_eq!(game.metadata().get("card"), Some(&json!("golden")));
    let outcome = game
        .apply(
            &batch(json!([{"op": "assign", "path": ["hp"], "value": -1}])),
            None,
        )
        .unwrap();
    assert!(matches!(outcome, Outcome::Rejected(_)));
    let bad = Game::create(
        dir.path().join("bad.save"),
        Value::from(json!({"hp": -5})),
        NewGame::default().schema(schema),
    );
    assert!(matches!(bad, Err(SaveError::InvalidState(_))));
    assert!(
        !dir.path().join("bad.save").exists(),
        "a refused game leaves no file"
    );
}

#[test]
fn the_setup_hook_sees_the_scripts_folder_and_its_failure_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let game = start(&dir, NewGame::default().scripts("lua"));
    let path = game.path().to_owned();
    drop(game);
    let options = unsynced().setup(|_builder, scripts| {
        Err(format!(
            "no scripts in {}",
            scripts.map(|p| p.display().to_string()).unwrap_or_default()
        ))
    });
    let error = Game::open_with(&path, options).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: cannot set up the game: no scripts in lua",
            path.display()
        )
    );
}

#[test]
fn a_leftover_compaction_file_is_removed_and_the_save_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = start(&dir, NewGame::default());
    push(&mut game, 1, "m1");
    let path = game.path().to_owned();
    drop(game);
    let leftover = dir.path().join("game.save.tmp");
    std::fs::write(&leftover, b"statecraft save\n\x01\0\0\0partial").unwrap();
    let game = Game::open_with(&path, unsynced()).unwrap();
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1]}));
    assert!(!leftover.exists());
}

#[test]
fn explicit_compaction_keeps_history_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = start(&dir, NewGame::default());
    for i in 0..6 {
        push(&mut game, i, &format!("m{i}"));
    }
    game.undo_to("m3").unwrap();
    let before = view(game.store());
    game.compact().unwrap();
    let mut game = reopen(game);
    assert_eq!(view(game.store()), before);
    game.redo().unwrap().expect("redo after compaction");
    assert_eq!(game.state().to_json()["log"], json!([0, 1, 2, 3, 4]));
}

/// One operation of the model-based test.
#[derive(Clone, Debug)]
enum Action {
    Assign(u8, i64),
    Delete(u8),
    Push(i64),
    Undo,
    Redo,
    UndoTo(u8),
    Compact,
    Reopen,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => (0u8..4, -50i64..50).prop_map(|(k, v)| Action::Assign(k, v)),
        1 => (0u8..4).prop_map(Action::Delete),
        2 => (-50i64..50).prop_map(Action::Push),
        2 => Just(Action::Undo),
        1 => Just(Action::Redo),
        1 => (0u8..8).prop_map(Action::UndoTo),
        1 => Just(Action::Compact),
        2 => Just(Action::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The game and a plain in-memory store see the same operations; after every one, and across
    /// reopens and compactions, the state and the whole history listing agree.
    #[test]
    fn a_game_behaves_like_an_in_memory_store(actions in proptest::collection::vec(action(), 1..40), max_steps in 1usize..6) {
        let dir = tempfile::tempdir().unwrap();
        let limits = HistoryLimits { max_steps, max_bytes: 1 << 20 };
        let initial = Value::from(json!({"k0": 0, "list": []}));
        let mut model = Store::builder(initial.clone()).history_limits(limits).build().unwrap();
        let mut game = Some(Game::create_with(dir.path().join("p.save"), initial, NewGame::default().history(limits), unsynced()).unwrap());
        for (n, action) in actions.into_iter().enumerate() {
            let g = game.as_mut().unwrap();
            let label = format!("l{}", n % 8);
            let options = ApplyOptions { label: Some(label), ..ApplyOptions::default() };
            match action {
                Action::Assign(k, v) => {
                    let b = batch(json!([{"op": "assign", "path": [format!("k{k}")], "value": v}]));
                    prop_assert_eq!(g.apply_with(&b, &options).unwrap().is_committed(), model.apply_with(&b, &options).is_committed());
                }
                Action::Delete(k) => {
                    let b = batch(json!([{"op": "delete", "path": [format!("k{k}")]}]));
                    prop_assert_eq!(g.apply_with(&b, &options).unwrap().is_committed(), model.apply_with(&b, &options).is_committed());
                }
                Action::Push(v) => {
                    let b = batch(json!([{"op": "push", "path": ["list"], "value": v}]));
                    prop_assert_eq!(g.apply_with(&b, &options).unwrap().is_committed(), model.apply_with(&b, &options).is_committed());
                }
                Action::Undo => prop_assert_eq!(g.undo().unwrap().is_some(), model.undo().unwrap().is_some()),
                Action::Redo => prop_assert_eq!(g.redo().unwrap().is_some(), model.redo().unwrap().is_some()),
                Action::UndoTo(l) => {
                    let label = format!("l{l}");
                    prop_assert_eq!(g.undo_to(&label).unwrap(), model.undo_to(&label).unwrap());
                }
                Action::Compact => g.compact().unwrap(),
                Action::Reopen => {
                    let path = g.path().to_owned();
                    // The old game must release its lock before the same process opens the save again.
                    drop(game.take());
                    game = Some(Game::open_with(path, unsynced()).unwrap());
                }
            }
            prop_assert_eq!(view(game.as_ref().unwrap().store()), view(&model));
        }
        let path = game.as_ref().unwrap().path().to_owned();
        drop(game);
        let reopened = Game::open_with(path, OpenOptions::default()).unwrap();
        prop_assert_eq!(view(reopened.store()), view(&model));
    }
}
