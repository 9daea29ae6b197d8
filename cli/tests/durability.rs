//! Nothing acknowledged is lost or unreadable, as a hostile user would check with the real binary: what a
//! batch builds always reads back, a labelled batch that changes nothing is a step, locks hold through
//! symlinks, files keep their links and modes, reading needs only read access, failed commands leave
//! no lock files, a torn tail is cut with a word, and a damaged record still lets the game before it
//! be read.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};

use serde_json::{Value, json};

mod support;
use support::run_in;

/// A temporary folder holding `state.json` with `state`.
fn folder_with_state(state: &Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    fs::write(dir.path().join("state.json"), state.to_string()).unwrap();
    dir
}

/// `n` JSON Patch copies of `/x`, each into the path `to(i)`.
fn copies(n: usize, to: impl Fn(usize) -> String) -> String {
    let ops: Vec<Value> = (0..n)
        .map(|i| json!({"op": "copy", "from": "/x", "path": to(i)}))
        .collect();
    Value::Array(ops).to_string()
}

#[test]
fn a_batch_that_would_nest_a_save_too_deep_is_rejected_and_the_save_stays_readable() {
    let dir = folder_with_state(&json!({"x": {"x": 1}}));
    assert_eq!(
        run_in(dir.path(), &["new", "g.save", "--state", "state.json"], "").code,
        0
    );
    let deep = copies(200, |_| "/x/x".to_owned());
    let run = run_in(dir.path(), &["apply", "--save", "g.save", "-"], &deep);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("this would nest the state 65 levels deep; the limit is 64 [state_too_deep]"),
        "{}",
        run.stderr
    );
    for args in [
        &["show", "--save", "g.save"][..],
        &["apply", "--save", "g.save", "-"][..],
    ] {
        let run = run_in(dir.path(), args, "[]");
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert_eq!(
            serde_json::from_str::<Value>(&run.stdout).unwrap(),
            json!({"x": {"x": 1}})
        );
    }
    // A state file written in place reads back too.
    let run = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "--in-place", "-"],
        &deep,
    );
    assert_eq!(run.code, 1, "{run:?}");
    let run = run_in(dir.path(), &["apply", "--state", "state.json", "-"], "[]");
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn a_reply_that_doubles_the_state_is_rejected_with_exit_1() {
    let dir = folder_with_state(&json!({"x": {"x": 1}}));
    // 26 copies of /x into /x/yN: about 1.3 KB of reply for a state of tens of gigabytes once written.
    let doubling = copies(26, |i| format!("/x/y{i}"));
    let run = run_in(
        dir.path(),
        &["apply", "--state", "state.json", "-"],
        &doubling,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("[op_too_large]") || run.stderr.contains("[state_too_large]"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_labelled_batch_that_changes_nothing_is_a_step_undo_finds() {
    let dir = folder_with_state(&json!({"n": 0}));
    assert_eq!(
        run_in(dir.path(), &["new", "g.save", "--state", "state.json"], "").code,
        0
    );
    let run = run_in(
        dir.path(),
        &["apply", "--save", "g.save", "--label", "msg-2", "-"],
        "[]",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let increment = r#"[{"op": "increment", "path": ["n"], "value": 1}]"#;
    let run = run_in(
        dir.path(),
        &["apply", "--save", "g.save", "--label", "msg-3", "-"],
        increment,
    );
    assert_eq!(run.code, 0, "{run:?}");
    let run = run_in(
        dir.path(),
        &["undo", "--save", "g.save", "--to", "msg-2"],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&run.stdout).unwrap(),
        json!({"n": 0})
    );
}

#[test]
fn in_place_follows_a_symbolic_link_and_keeps_the_mode() {
    let dir = folder_with_state(&json!({"hp": 1}));
    fs::set_permissions(
        dir.path().join("state.json"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    symlink("state.json", dir.path().join("current.json")).unwrap();
    let reply = r#"[{"op": "assign", "path": ["hp"], "value": 2}]"#;
    let run = run_in(
        dir.path(),
        &["apply", "--state", "current.json", "--in-place", "-"],
        reply,
    );
    assert_eq!(run.code, 0, "{run:?}");
    let link = fs::symlink_metadata(dir.path().join("current.json")).unwrap();
    assert!(link.file_type().is_symlink(), "the link is still a link");
    let real = dir.path().join("state.json");
    assert_eq!(
        serde_json::from_str::<Value>(&fs::read_to_string(&real).unwrap()).unwrap(),
        json!({"hp": 2})
    );
    assert_eq!(
        fs::metadata(&real).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn show_needs_only_read_access_and_failed_commands_leave_no_lock_file() {
    let dir = folder_with_state(&json!({"hp": 1}));
    assert_eq!(
        run_in(dir.path(), &["new", "g.save", "--state", "state.json"], "").code,
        0
    );
    let run = run_in(dir.path(), &["show", "--save", "nonexist.save"], "");
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr.matches("No such file or directory").count(),
        1,
        "the reason is given once: {}",
        run.stderr
    );
    assert_eq!(listing(dir.path()), ["g.save", "state.json"]);
    fs::set_permissions(dir.path().join("g.save"), fs::Permissions::from_mode(0o444)).unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o555)).unwrap();
    let run = run_in(dir.path(), &["show", "--save", "g.save"], "");
    let after = listing(dir.path());
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&run.stdout).unwrap(),
        json!({"hp": 1})
    );
    assert_eq!(after, ["g.save", "state.json"], "show wrote nothing");
}

#[test]
fn a_torn_tail_is_reported_when_it_is_cut() {
    let dir = folder_with_state(&json!({"log": []}));
    assert_eq!(
        run_in(dir.path(), &["new", "g.save", "--state", "state.json"], "").code,
        0
    );
    let push = r#"[{"op": "push", "path": ["log"], "value": 1}]"#;
    assert_eq!(
        run_in(dir.path(), &["apply", "--save", "g.save", "-"], push).code,
        0
    );
    let save = dir.path().join("g.save");
    let whole = fs::read(&save).unwrap();
    assert_eq!(
        run_in(dir.path(), &["apply", "--save", "g.save", "-"], push).code,
        0
    );
    // A crash in the middle of the second append leaves a few of its bytes.
    let bytes = fs::read(&save).unwrap();
    fs::write(&save, &bytes[..whole.len() + 5]).unwrap();
    let warning = format!(
        "warning: g.save: 5 bytes after byte {} were an unfinished append, never acknowledged, and",
        whole.len()
    );
    let run = run_in(dir.path(), &["show", "--save", "g.save"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.starts_with(&warning), "{}", run.stderr);
    assert!(run.stderr.contains("were ignored"), "{}", run.stderr);
    let run = run_in(
        dir.path(),
        &["--format", "json", "apply", "--save", "g.save", "-"],
        push,
    );
    assert_eq!(run.code, 0, "{run:?}");
    let first: Value = serde_json::from_str(run.stderr.lines().next().unwrap()).unwrap();
    assert_eq!(first["warning"], "torn_tail");
    assert_eq!(
        (first["bytes"].as_u64(), first["cut"].as_bool()),
        (Some(5), Some(true))
    );
    assert_eq!(
        serde_json::from_str::<Value>(&run.stdout).unwrap(),
        json!({"log": [1, 1]})
    );
}

#[test]
fn a_damaged_record_still_shows_the_game_before_it_and_refuses_changes() {
    let dir = folder_with_state(&json!({"log": []}));
    assert_eq!(
        run_in(dir.path(), &["new", "g.save", "--state", "state.json"], "").code,
        0
    );
    let push = |n: u32| format!(r#"[{{"op": "push", "path": ["log"], "value": {n}}}]"#);
    let save = dir.path().join("g.save");
    for n in 1..=2 {
        let run = run_in(dir.path(), &["apply", "--save", "g.save", "-"], &push(n));
        assert_eq!(run.code, 0, "{run:?}");
    }
    let intact = fs::read(&save).unwrap().len();
    let run = run_in(dir.path(), &["apply", "--save", "g.save", "-"], &push(3));
    assert_eq!(run.code, 0, "{run:?}");
    // A byte of the last record's payload rots on the disk: its checksum fails.
    let mut bytes = fs::read(&save).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0x01;
    fs::write(&save, &bytes).unwrap();
    let run = run_in(dir.path(), &["show", "--save", "g.save"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&run.stdout).unwrap(),
        json!({"log": [1, 2]}),
        "the steps before the damage"
    );
    let warning = format!(
        "warning: g.save: the record at byte {intact} is damaged (the record fails its checksum): \
         this is the game as of the 2 records before it"
    );
    assert!(run.stderr.starts_with(&warning), "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("cut the file to its first {intact} bytes")),
        "{}",
        run.stderr
    );
    let run = run_in(
        dir.path(),
        &["--format", "json", "log", "--save", "g.save"],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let warning: Value = serde_json::from_str(run.stderr.lines().next().unwrap()).unwrap();
    assert_eq!(
        (&warning["warning"], &warning["offset"], &warning["records"]),
        (&json!("damaged"), &json!(intact), &json!(2))
    );
    // A change is refused, as before, and the file is left as it is.
    let run = run_in(dir.path(), &["apply", "--save", "g.save", "-"], &push(4));
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "g.save at byte {intact}: the record fails its checksum"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(fs::read(&save).unwrap(), bytes);
    // Cut where the message says, the save goes on from the steps before the damage.
    fs::write(&save, &bytes[..intact]).unwrap();
    let run = run_in(dir.path(), &["apply", "--save", "g.save", "-"], &push(4));
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&run.stdout).unwrap(),
        json!({"log": [1, 2, 4]})
    );
}

#[test]
fn no_command_leaves_a_lock_file_behind() {
    let dir = folder_with_state(&json!({"hp": 1}));
    assert_eq!(
        run_in(dir.path(), &["new", "g.save", "--state", "state.json"], "").code,
        0
    );
    assert_eq!(
        run_in(dir.path(), &["show", "--save", "nonexist.save"], "").code,
        2
    );
    assert_eq!(
        run_in(dir.path(), &["undo", "--save", "g.save"], "").code,
        1
    );
    let bad = r#"[{"op": "increment", "path": ["mana"], "value": 1}]"#;
    assert_eq!(
        run_in(dir.path(), &["apply", "--save", "g.save", "-"], bad).code,
        1
    );
    let good = r#"[{"op": "increment", "path": ["hp"], "value": 1}]"#;
    assert_eq!(
        run_in(dir.path(), &["apply", "--save", "g.save", "-"], good).code,
        0
    );
    assert_eq!(listing(dir.path()), ["g.save", "state.json"]);
}

/// The names in a folder, sorted.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
