//! A game's behaviour across restarts: history, undo, redo and `undo_to` after reopening, torn tails,
//! compaction bounds, the lock, and a model-based property test against an in-memory store.

mod common;

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::time::Duration;

use common::{batch, unsynced, view};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::json;
use statecraft_engine::{ApplyOptions, HistoryLimits, Outcome, Store, Value};
use statecraft_saves::{Game, NewGame, OpenOptions, SaveError, TornTail};

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
    // A new step after undo starts a branch; the undone steps stay, on disk as in memory.
    push(&mut game, 9, "m2b");
    let mut game = reopen(game);
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
            (Some("m2".to_owned()), false),
            (Some("m3".to_owned()), false),
            (Some("m2b".to_owned()), true)
        ]
    );
    assert_eq!(game.checkout("m3").unwrap(), Some(3));
    let mut game = reopen(game);
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1, 2, 3]}));
    assert_eq!(game.checkout("nowhere").unwrap(), None);
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
fn an_empty_labelled_batch_is_a_step_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = start(&dir, NewGame::default());
    assert!(
        game.apply(&batch(json!([])), Some("msg-2"))
            .unwrap()
            .is_committed()
    );
    push(&mut game, 1, "msg-3");
    let mut game = reopen(game);
    assert_eq!(game.undo_to("msg-2").unwrap(), Some(1));
    let game = reopen(game);
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": []}));
}

#[test]
fn what_a_batch_builds_is_bounded_so_the_save_always_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.save");
    let mut game = Game::create_with(
        &path,
        Value::from(json!({"x": {"x": 1}})),
        NewGame::default(),
        unsynced(),
    )
    .unwrap();
    // Two hundred copies of /x into /x/x would nest the state about 200 deep: refused, nothing written.
    let copies: Vec<_> = (0..200)
        .map(|_| json!({"op": "copy", "from": "/x", "path": "/x/x"}))
        .collect();
    let len = game.file_len();
    let outcome = game.apply(&batch(json!(copies)), Some("deep")).unwrap();
    assert!(matches!(outcome, Outcome::Rejected(_)));
    assert_eq!(game.file_len(), len);
    // As deep as the limit allows commits, and reads back.
    let copies: Vec<_> = (0..62)
        .map(|_| json!({"op": "copy", "from": "/x", "path": "/x/x"}))
        .collect();
    assert!(
        game.apply(&batch(json!(copies)), Some("deepest"))
            .unwrap()
            .is_committed()
    );
    let before = view(game.store());
    let mut game = reopen(game);
    assert_eq!(view(game.store()), before);
    game.compact().unwrap();
    let game = reopen(game);
    assert_eq!(view(game.store()), before);
    assert_eq!(game.state().depth(), 64);
}

#[test]
fn a_new_game_cannot_start_from_a_state_its_readers_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.save");
    let mut deep = json!(1);
    for _ in 0..100 {
        deep = json!({"d": deep});
    }
    let error =
        Game::create_with(&path, Value::from(deep), NewGame::default(), unsynced()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the initial state is refused: at (root): the state nests 100 levels deep; the limit is 64"
    );
    assert!(!path.exists());
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
    // Base plus at most 2 x 5 + 16 records of about 150 bytes (the change, the step's id and parent,
    // the step it trimmed): far below what 3,000 steps would take.
    assert!(largest < 5_000, "the file grew to {largest} bytes");
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
    // A labelled batch that changes nothing still uses up a step id, which the save keeps too.
    let nothing = game.apply(&batch(json!([])), Some("c")).expect("apply");
    assert!(nothing.is_committed());
    assert_eq!(game.store().next_step_id().get(), 4);
    let mut game = reopen(game);
    assert_eq!(
        game.store().next_step_id().get(),
        4,
        "step ids (and so the draws of ctx.random) go on where they stopped"
    );
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
    // And it is reported, so that a front end can say a crash interrupted a write.
    let tail = game.torn_tail().expect("reported");
    assert_eq!(
        (tail.offset as usize, tail.bytes as usize, tail.cut),
        (whole, torn.len() - whole, true)
    );
    assert_eq!(
        tail.to_string(),
        format!(
            "{} bytes after byte {whole} were an unfinished append, never acknowledged, and were cut \
             from the file",
            torn.len() - whole
        )
    );
    push(&mut game, 3, "m3");
    let game = reopen(game);
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1, 3]}));
    assert_eq!(game.torn_tail(), None::<TornTail>);
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

/// The names in a folder, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_save_reached_through_a_symbolic_link_has_the_same_lock() {
    let dir = tempfile::tempdir().unwrap();
    let game = start(&dir, NewGame::default());
    let link = dir.path().join("link.save");
    symlink("game.save", &link).unwrap();
    let short = || unsynced().lock_timeout(Duration::from_millis(50));
    let error = Game::open_with(&link, short()).unwrap_err();
    assert!(matches!(error, SaveError::Locked { .. }), "{error}");
    drop(game);
    let mut through_link = Game::open_with(&link, short()).unwrap();
    let error = Game::open_with(dir.path().join("game.save"), short()).unwrap_err();
    assert!(matches!(error, SaveError::Locked { .. }), "{error}");
    // Writes through the link reach the real file, and compaction keeps the link a link.
    push(&mut through_link, 1, "m1");
    through_link.compact().unwrap();
    push(&mut through_link, 2, "m2");
    drop(through_link);
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    let game = Game::open_with(dir.path().join("game.save"), unsynced()).unwrap();
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1, 2]}));
}

#[test]
fn no_lock_file_outlives_a_command_that_failed_or_finished() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = start(&dir, NewGame::default());
    assert_eq!(listing(dir.path()), ["game.save", "game.save.lock"]);
    push(&mut game, 1, "m1");
    drop(game);
    assert_eq!(listing(dir.path()), ["game.save"]);
    let schema = json!({"type": "object", "required": ["mana"]});
    let refused = Game::create_with(
        dir.path().join("refused.save"),
        Value::from(json!({"hp": 1})),
        NewGame::default().schema(schema),
        unsynced(),
    );
    assert!(matches!(refused, Err(SaveError::InvalidState(_))));
    assert!(Game::open_with(dir.path().join("missing.save"), unsynced()).is_err());
    assert_eq!(listing(dir.path()), ["game.save"]);
    // A writer that waited on a lock file its holder removed locks the current one instead.
    let holder = Game::open_with(dir.path().join("game.save"), unsynced()).unwrap();
    let waiter = std::thread::spawn({
        let path = dir.path().join("game.save");
        move || Game::open_with(path, unsynced()).map(drop)
    });
    std::thread::sleep(Duration::from_millis(50));
    drop(holder);
    waiter.join().unwrap().unwrap();
    assert_eq!(listing(dir.path()), ["game.save"]);
}

#[test]
fn reading_needs_only_read_access_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = start(&dir, NewGame::default());
    push(&mut game, 1, "m1");
    let path = game.path().to_owned();
    drop(game);
    let bytes = std::fs::read(&path).unwrap();
    let mut torn = bytes.clone();
    torn.extend_from_slice(&bytes[bytes.len() - 9..]);
    std::fs::write(&path, &torn).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    // Where the permissions do not bind (a privileged user), what is checked is that nothing is written.
    let binding = std::fs::File::create(dir.path().join("probe")).is_err();
    if !binding {
        println!("permissions do not bind for this user: checking only that nothing is written");
        std::fs::remove_file(dir.path().join("probe")).unwrap();
    }
    let mut game = Game::open_read_only(&path).unwrap();
    assert_eq!(game.state().to_json(), json!({"hp": 10, "log": [1]}));
    assert_eq!(game.torn_tail().map(|t| (t.bytes, t.cut)), Some((9, false)));
    let error = game.apply(&batch(json!([])), Some("x")).unwrap_err();
    assert!(matches!(error, SaveError::ReadOnly { .. }), "{error}");
    assert!(matches!(game.undo(), Err(SaveError::ReadOnly { .. })));
    drop(game);
    assert_eq!(std::fs::read(&path).unwrap(), torn, "the file is as it was");
    assert_eq!(listing(dir.path()), ["game.save"]);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
}

#[test]
fn a_reader_waits_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let game = start(&dir, NewGame::default());
    let error = Game::open_with(
        game.path(),
        OpenOptions::default()
            .read_only()
            .lock_timeout(Duration::from_millis(50)),
    )
    .unwrap_err();
    assert!(matches!(error, SaveError::Locked { .. }), "{error}");
    // Readers share the lock with each other.
    let path = game.path().to_owned();
    drop(game);
    let first = Game::open_read_only(&path).unwrap();
    let second = Game::open_read_only(&path).unwrap();
    drop((first, second));
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
        )
        .into())
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
    /// A swipe or an edit: an assign committed on the step with this label.
    AssignAt(u8, u8, i64),
    Checkout(u8),
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
        2 => (0u8..8, 0u8..4, -50i64..50).prop_map(|(l, k, v)| Action::AssignAt(l, k, v)),
        2 => (0u8..8).prop_map(Action::Checkout),
        1 => Just(Action::Compact),
        2 => Just(Action::Reopen),
    ]
}

/// The same apply on the game and on the model: the same outcome and the same steps trimmed.
fn apply_both(
    game: &mut Game,
    model: &mut Store,
    batch: &statecraft_engine::Batch,
    options: &ApplyOptions,
) -> Result<(), TestCaseError> {
    let trimmed = |outcome: Outcome| outcome.committed().map(|commit| commit.trimmed);
    prop_assert_eq!(
        trimmed(game.apply_with(batch, options).unwrap()),
        trimmed(model.apply_with(batch, options))
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        // A failing case is saved beside this file (`*.proptest-regressions`, committed) and run first
        // from then on, so a failure seen once, in CI or anywhere, is reproduced by every run.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    /// The game and a plain in-memory store see the same operations, swipes, edits and checkouts
    /// included; after every one, and across reopens and compactions, the state, the whole tree, the
    /// current step, the visit order and the steps each commit trimmed agree.
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
                    apply_both(g, &mut model, &b, &options)?;
                }
                Action::Delete(k) => {
                    let b = batch(json!([{"op": "delete", "path": [format!("k{k}")]}]));
                    apply_both(g, &mut model, &b, &options)?;
                }
                Action::Push(v) => {
                    let b = batch(json!([{"op": "push", "path": ["list"], "value": v}]));
                    apply_both(g, &mut model, &b, &options)?;
                }
                Action::Undo => prop_assert_eq!(g.undo().unwrap().is_some(), model.undo().unwrap().is_some()),
                Action::Redo => prop_assert_eq!(g.redo().unwrap().is_some(), model.redo().unwrap().is_some()),
                Action::UndoTo(l) => {
                    let label = format!("l{l}");
                    prop_assert_eq!(g.undo_to(&label).unwrap(), model.undo_to(&label).unwrap());
                }
                Action::AssignAt(l, k, v) => {
                    let b = batch(json!([{"op": "assign", "path": [format!("k{k}")], "value": v}]));
                    let options = ApplyOptions { at: Some(format!("l{l}").into()), ..options };
                    apply_both(g, &mut model, &b, &options)?;
                }
                Action::Checkout(l) => {
                    let label = format!("l{l}");
                    prop_assert_eq!(g.checkout(label.as_str()).unwrap(), model.checkout(label.as_str()).ok());
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

/// Reads a reply as a JSON batch, for sync.
struct JsonReader;

impl statecraft_engine::ReplyReader for JsonReader {
    fn read(
        &mut self,
        text: &str,
        _state: &Value,
    ) -> Result<(statecraft_engine::Batch, ApplyOptions), String> {
        let json: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let batch = statecraft_engine::Batch::from_json(&json).map_err(|e| e.to_string())?;
        Ok((batch, ApplyOptions::default()))
    }

    fn refused(&mut self, errors: &[statecraft_engine::BatchError]) -> String {
        errors[0].to_string()
    }
}

#[test]
fn synced_steps_keep_their_keys_and_refusals_across_reopening_and_compaction() {
    use statecraft_engine::{SyncOptions, SyncReply};
    let dir = tempfile::tempdir().unwrap();
    let mut game = start(
        &dir,
        NewGame::default().history(HistoryLimits {
            max_steps: 3,
            ..HistoryLimits::default()
        }),
    );
    let chat: Vec<String> = (1..=5)
        .map(|n| json!([{"op": "push", "path": ["log"], "value": n}]).to_string())
        .chain(["not json".to_owned()])
        .collect();
    let replies: Vec<SyncReply<'_>> = chat.iter().map(|text| SyncReply::Text(text)).collect();
    // One reply at a time, as a chat grows: more at once than the history keeps is refused.
    for end in 1..=replies.len() {
        let synced = game
            .sync(&replies[..end], &SyncOptions::default(), &mut JsonReader)
            .unwrap()
            .unwrap();
        assert_eq!(synced.applied.len(), 1);
    }
    let state = view(game.store());
    let keys_only: Vec<SyncReply<'_>> = chat
        .iter()
        .map(|text| SyncReply::Key(statecraft_engine::ContentKey::of_text(text)))
        .collect();
    for round in 0..2 {
        game = reopen(game);
        assert_eq!(game.store().root_keys().len(), 3, "round {round}");
        let again = game
            .sync(&keys_only, &SyncOptions::default(), &mut JsonReader)
            .unwrap()
            .unwrap();
        assert_eq!(again.applied.len(), 0, "round {round}: every reply found");
        assert_eq!(view(game.store()), state);
        let last = game.store().step(again.end).unwrap();
        assert!(last.refusal.is_some_and(|why| why.contains("expected")));
        game.compact().unwrap();
    }
}

/// A card update trimmed into the root, and one taken with history off, leave the new card at the
/// root of the rewritten file: it survives compaction and a restart, its automatic schema enforced.
#[test]
fn a_card_update_survives_trimming_compaction_and_history_off() {
    use statecraft_engine::{
        CardUpdateOptions, CardVersion, Profile, StructureSchema, plan_card_update,
    };
    let locked = StructureSchema::new(json!({"type": "object", "properties": {
        "hp": {"type": "number", "required": true},
        "log": {"type": "array", "required": true, "extensible": false}}}))
    .unwrap();
    let version = CardVersion {
        structure: Some(locked),
        fingerprint: Some("v2".to_owned()),
    };
    let initial = Value::from(json!({"hp": 10, "log": [], "mp": 1}));
    for history in [
        HistoryLimits {
            max_steps: 2,
            max_bytes: 1 << 20,
        },
        HistoryLimits {
            max_steps: 0,
            max_bytes: 0,
        },
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut game = start(
            &dir,
            NewGame::default()
                .profile(Profile::Mvu)
                .card_fingerprint("v1")
                .history(history),
        );
        let update = plan_card_update(
            game.state(),
            &initial,
            game.store().card(),
            &version,
            CardUpdateOptions::default(),
        );
        assert!(
            game.take_card(&update, version.clone(), None)
                .unwrap()
                .is_committed()
        );
        for hp in [9, 8, 7] {
            let reply = batch(json!([{"op": "assign", "path": ["hp"], "value": hp}]));
            assert!(game.apply(&reply, None).unwrap().is_committed());
        }
        game.compact().unwrap();
        let mut game = reopen(game);
        assert_eq!(
            game.store()
                .card_at(statecraft_engine::StepId::ROOT)
                .unwrap()
                .fingerprint
                .as_deref(),
            Some("v2"),
            "{history:?}"
        );
        assert_eq!(game.state().to_json(), json!({"hp": 7, "log": [], "mp": 1}));
        let commit = game
            .apply(
                &batch(json!([{"op": "push", "path": ["log"], "value": 1}])),
                None,
            )
            .unwrap()
            .committed()
            .unwrap();
        assert_eq!(
            commit.warnings[0].kind.code(),
            "schema_violation",
            "{history:?}"
        );
    }
}
