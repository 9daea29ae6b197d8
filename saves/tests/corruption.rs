//! Damaged files: every flipped byte, every truncation, wrong versions, files that are not saves, and
//! records that are well framed but do not fit. Each gives an error naming the file, the byte offset and
//! the problem, or (for a truncation after the base snapshot) loads exactly the whole records before the
//! cut; none panics, and a file that cannot be read is never written.

mod common;

use std::path::{Path, PathBuf};

use common::{batch, unsynced, view};
use rstest::rstest;
use serde_json::{Value as Json, json};
use statecraft_engine::Value;
use statecraft_saves::{Game, NewGame, SaveError};

/// A small save and, after each operation, its length and the view of the game.
struct Small {
    bytes: Vec<u8>,
    /// `(file length, view)` after creation and after each operation.
    points: Vec<(usize, Json)>,
}

fn small_save(dir: &Path) -> Small {
    let path = dir.join("small.save");
    let schema = json!({"type": "object"});
    let mut game = Game::create_with(
        &path,
        Value::from(json!({"hp": 10, "bag": []})),
        NewGame::default().schema(schema),
        unsynced(),
    )
    .unwrap();
    let mut points = vec![(game.file_len() as usize, view(game.store()))];
    let steps = [
        json!([{"op": "assign", "path": ["hp"], "value": 7, "reason": "hit"}]),
        json!([{"op": "push", "path": ["bag"], "value": {"name": "rope"}}]),
        json!([{"op": "assign", "path": ["note"], "value": null}]),
    ];
    for (i, step) in steps.into_iter().enumerate() {
        assert!(
            game.apply(&batch(step), Some(&format!("m{i}")))
                .unwrap()
                .is_committed()
        );
        points.push((game.file_len() as usize, view(game.store())));
    }
    game.undo().unwrap().expect("undo");
    points.push((game.file_len() as usize, view(game.store())));
    drop(game);
    Small {
        bytes: std::fs::read(&path).unwrap(),
        points,
    }
}

/// Writes `bytes` to a fresh file and opens it.
fn open_bytes(dir: &Path, name: &str, bytes: &[u8]) -> (PathBuf, Result<Game, SaveError>) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let opened = Game::open_with(&path, unsynced());
    (path, opened)
}

/// The error names the file and a byte offset.
fn assert_clear(error: &SaveError, path: &Path) {
    let message = error.to_string();
    assert!(
        message.starts_with(&path.display().to_string()),
        "no file name: {message}"
    );
    assert!(message.contains(" at byte "), "no offset: {message}");
}

#[test]
fn every_flipped_byte_is_a_clear_error_and_the_file_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let small = small_save(dir.path());
    for at in 0..small.bytes.len() {
        for mask in [0x01, 0x80, 0xff] {
            let mut bad = small.bytes.clone();
            bad[at] ^= mask;
            let (path, opened) = open_bytes(dir.path(), "flipped.save", &bad);
            let error = opened.map(|_| ()).expect_err(&format!(
                "a flip at byte {at} (mask {mask:#x}) went unnoticed"
            ));
            assert_clear(&error, &path);
            assert_eq!(
                std::fs::read(&path).unwrap(),
                bad,
                "the damaged file was written to"
            );
        }
    }
}

#[test]
fn every_truncation_is_an_error_or_loads_exactly_the_whole_records() {
    let dir = tempfile::tempdir().unwrap();
    let small = small_save(dir.path());
    let base_end = small.points[0].0;
    for cut in 0..small.bytes.len() {
        let (path, opened) = open_bytes(dir.path(), "cut.save", &small.bytes[..cut]);
        if cut < base_end {
            let error = opened
                .map(|_| ())
                .expect_err(&format!("a cut at byte {cut} loaded"));
            assert_clear(&error, &path);
            let expected = match cut {
                0 => "at byte 0: not a statecraft save: the file is empty".to_owned(),
                1..16 => format!(
                    "at byte {cut}: not a statecraft save: the file ends at byte {cut} inside the statecraft save header"
                ),
                16..20 => format!(
                    "at byte {cut}: not a statecraft save: the file ends at byte {cut} inside the format version"
                ),
                _ => format!("at byte 20: the file ends at byte {cut} inside the base snapshot"),
            };
            assert!(
                error.to_string().contains(&expected),
                "cut at {cut}: {error}"
            );
            assert_eq!(
                std::fs::read(&path).unwrap(),
                &small.bytes[..cut],
                "the unreadable file was written to"
            );
        } else {
            let game = opened.unwrap_or_else(|error| {
                panic!("a cut at byte {cut} after the base failed: {error}")
            });
            let (whole, expected) = small
                .points
                .iter()
                .rev()
                .find(|(len, _)| *len <= cut)
                .unwrap();
            assert_eq!(&view(game.store()), expected, "cut at {cut}");
            drop(game);
            assert_eq!(
                std::fs::metadata(&path).unwrap().len() as usize,
                *whole,
                "cut at {cut}: the torn tail stays"
            );
        }
    }
}

#[rstest]
#[case(0)]
#[case(2)]
#[case(99)]
#[case(u32::MAX)]
fn an_unknown_version_is_refused_by_name(#[case] version: u32) {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = small_save(dir.path()).bytes;
    bytes[16..20].copy_from_slice(&version.to_le_bytes());
    let (path, opened) = open_bytes(dir.path(), "future.save", &bytes);
    let error = opened.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{} at byte 16: save format version {version} is not supported; this build reads versions 1 to 1",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[rstest]
#[case::json(b"{\"hp\": 10}".as_slice())]
#[case::png(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".as_slice())]
#[case::zeros([0u8; 64].as_slice())]
#[case::text(b"statecraft game, definitely".as_slice())]
fn a_file_that_is_not_a_save_says_so(#[case] bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let (path, opened) = open_bytes(dir.path(), "other.json", bytes);
    let error = opened.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{} at byte 0: not a statecraft save: the file does not start with the statecraft save magic",
            path.display()
        )
    );
}

#[test]
fn a_missing_file_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nowhere.save");
    let error = Game::open_with(&path, unsynced()).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}: cannot read: ", path.display())),
        "{error}"
    );
}

/// Frames a payload the way `saves/FORMAT.md` describes, independently of the crate's own encoder.
fn frame(payload: &str) -> Vec<u8> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut out = len.to_vec();
    out.extend_from_slice(&crc32fast::hash(&len).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload.as_bytes()).to_le_bytes());
    out.extend_from_slice(payload.as_bytes());
    out
}

fn header() -> Vec<u8> {
    let mut out = b"statecraft save\n".to_vec();
    out.extend_from_slice(&1u32.to_le_bytes());
    out
}

const BASE: &str = r#"{"base":{"state":{"hp":1,"bag":[]},"history":{"max_steps":10,"max_bytes":100000},"metadata":{}}}"#;

#[rstest]
#[case::step_that_does_not_fit(
    r#"{"step":{"label":"x","changes":[{"path":["nope","deep"],"old":1,"op":"delete"}]}}"#,
    "the step does not replay on the state"
)]
#[case::unknown_op(
    r#"{"step":{"changes":[{"path":["hp"],"old":1,"new":2,"op":"teleport"}]}}"#,
    "unknown op \"teleport\" in a change"
)]
#[case::second_base(BASE, "a second base snapshot after the first")]
#[case::undo_of_nothing(r#"{"undo":{"steps":2}}"#, "an undo record with no step left to undo")]
#[case::redo_of_nothing(r#"{"redo":{"steps":1}}"#, "a redo record with no step left to redo")]
#[case::unknown_record(
    r#"{"rewind":{"steps":1}}"#,
    "the record is not a valid save record: unknown variant `rewind`"
)]
#[case::not_json("step 3: hp = 2", "the record is not a valid save record")]
fn a_well_framed_record_that_does_not_fit_is_an_error_at_its_offset(
    #[case] payload: &str,
    #[case] problem: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = header();
    bytes.extend(frame(BASE));
    let good = frame(
        r#"{"step":{"label":"ok","changes":[{"path":["hp"],"old":1,"new":2,"op":"assign"}]}}"#,
    );
    bytes.extend(&good);
    let offset = bytes.len();
    bytes.extend(frame(payload));
    // A record after the bad one, so that the bad one cannot pass for a torn tail.
    bytes.extend(&good);
    let (path, opened) = open_bytes(dir.path(), "bad.save", &bytes);
    let error = opened.unwrap_err();
    let expected = format!("{} at byte {offset}: {problem}", path.display());
    assert!(
        error.to_string().starts_with(&expected),
        "{error}\nexpected: {expected}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_hand_framed_save_loads_so_the_documented_format_is_the_real_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = header();
    bytes.extend(frame(BASE));
    bytes.extend(frame(r#"{"step":{"label":"m1","changes":[{"path":["hp"],"old":1,"new":2,"reason":"heal","op":"assign"}]}}"#));
    bytes.extend(frame(
        r#"{"step":{"label":"m2","changes":[{"path":["bag",0],"new":null,"op":"push"}]}}"#,
    ));
    bytes.extend(frame(r#"{"undo":{"steps":1}}"#));
    let (_, opened) = open_bytes(dir.path(), "hand.save", &bytes);
    let mut game = opened.unwrap();
    assert_eq!(game.state().to_json(), json!({"hp": 2, "bag": []}));
    game.redo().unwrap().expect("redo");
    assert_eq!(game.state().to_json(), json!({"hp": 2, "bag": [null]}));
    game.undo_to("m1").unwrap();
    game.undo().unwrap();
    assert_eq!(game.state().to_json(), json!({"hp": 1, "bag": []}));
}

#[test]
fn a_damaged_base_is_an_error_at_byte_20() {
    let dir = tempfile::tempdir().unwrap();
    for (payload, problem) in [
        (
            r#"{"step":{"changes":[]}}"#,
            "the first record is not the base snapshot",
        ),
        (
            r#"{"base":{"state":{"hp":"x"},"schema":{"properties":{"hp":{"type":"integer"}}},"history":{"max_steps":1,"max_bytes":1},"metadata":{}}}"#,
            "the saved state violates the saved schema",
        ),
        (
            r#"{"base":{"state":{},"schema":{"type":12},"history":{"max_steps":1,"max_bytes":1},"metadata":{}}}"#,
            "the saved schema does not compile",
        ),
    ] {
        let mut bytes = header();
        bytes.extend(frame(payload));
        let (path, opened) = open_bytes(dir.path(), "base.save", &bytes);
        let error = opened.unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with(&format!("{} at byte 20: {problem}", path.display())),
            "{error}"
        );
    }
}
