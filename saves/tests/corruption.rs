//! Damaged files: every flipped byte, every truncation, wrong versions, files that are not saves, and
//! records that are well framed but do not fit. Each gives an error naming the file, the byte offset and
//! the problem, or (for a truncation after the base snapshot) loads exactly the whole records before the
//! cut; none panics, and a file that cannot be read is never written.

mod common;

use std::path::{Path, PathBuf};

use common::{batch, unsynced, view};
use rstest::rstest;
use serde_json::{Value as Json, json};
use statecraft_engine::{ApplyOptions, Value};
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
    // The macros are a member only version 5 holds, so that a flip of the version byte to 4 (5 ^
    // 0x01) is damage too: the header has no checksum of its own.
    let mut game = Game::create_with(
        &path,
        Value::from(json!({"hp": 10, "bag": []})),
        NewGame::default()
            .schema(schema)
            .macros([("user".to_owned(), "Alex".to_owned())].into()),
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
    // A branch (a swipe of m1) and a checkout back: every kind of record is in the file.
    let swipe = ApplyOptions {
        label: Some("m1/s2".into()),
        at: Some("m0".into()),
        ..ApplyOptions::default()
    };
    assert!(
        game.apply_with(
            &batch(json!([{"op": "assign", "path": ["hp"], "value": 1}])),
            &swipe
        )
        .unwrap()
        .is_committed()
    );
    points.push((game.file_len() as usize, view(game.store())));
    game.checkout("m2").unwrap().expect("m2 is retained");
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

/// Read-only, a flipped byte after the base loads exactly the records before the damaged one and
/// says where the damage is, so the game up to it can be read; the file is left alone and every
/// change is refused. A flip in the base leaves nothing to read, and stays an error.
#[test]
fn read_only_every_flipped_byte_after_the_base_loads_the_records_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let small = small_save(dir.path());
    let base_end = small.points[0].0;
    for at in 0..small.bytes.len() {
        for mask in [0x01, 0x80, 0xff] {
            let mut bad = small.bytes.clone();
            bad[at] ^= mask;
            let path = dir.path().join("flipped.save");
            std::fs::write(&path, &bad).unwrap();
            let opened = Game::open_with(&path, unsynced().read_only());
            let flip = format!("a flip at byte {at} (mask {mask:#x})");
            if at < base_end {
                assert_clear(&opened.map(|_| ()).expect_err(&flip), &path);
                continue;
            }
            let mut game = opened.unwrap_or_else(|error| panic!("{flip} read nothing: {error}"));
            let damaged = small
                .points
                .iter()
                .rposition(|(len, _)| *len <= at)
                .unwrap();
            let (start, expected) = &small.points[damaged];
            let damage = game
                .damage()
                .unwrap_or_else(|| panic!("{flip} went unnoticed"));
            assert_eq!(
                (damage.offset, damage.records),
                (*start as u64, damaged),
                "{flip}"
            );
            assert!(
                damage
                    .to_string()
                    .contains(&format!("at byte {start} is damaged")),
                "{damage}"
            );
            assert_eq!(game.torn_tail(), None, "{flip}: damage is not a torn tail");
            assert_eq!(&view(game.store()), expected, "{flip}");
            assert!(
                matches!(game.undo(), Err(SaveError::ReadOnly { .. })),
                "{flip}"
            );
            drop(game);
            assert_eq!(
                std::fs::read(&path).unwrap(),
                bad,
                "{flip}: the file was written to"
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
                error.to_string().ends_with(&expected),
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
#[case(6)]
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
            "{} at byte 16: save format version {version} is not supported; this build reads versions 1 to 5",
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
fn a_missing_file_names_the_path_once_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nowhere.save");
    for options in [unsynced(), unsynced().read_only()] {
        let error = Game::open_with(&path, options).unwrap_err();
        // The operating system's reason is the error's source, not repeated in its message: printed
        // as a chain, it appears once.
        assert_eq!(
            error.to_string(),
            format!("{}: cannot read", path.display())
        );
        let source = std::error::Error::source(&error).expect("the io error");
        assert!(
            source.to_string().starts_with("No such file or directory"),
            "{source}"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "a failed open left {left:?}");
    }
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

fn header(version: u32) -> Vec<u8> {
    let mut out = b"statecraft save\n".to_vec();
    out.extend_from_slice(&version.to_le_bytes());
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
    "the record is not a valid save record: unknown op \"teleport\" in a change"
)]
#[case::second_base(BASE, "a second base snapshot after the first")]
#[case::undo_of_nothing(r#"{"undo":{"steps":2}}"#, "an undo record with no step left to undo")]
#[case::redo_of_nothing(r#"{"redo":{"steps":1}}"#, "a redo record with no step left to redo")]
#[case::unknown_record(
    r#"{"rewind":{"steps":1}}"#,
    "the record is not a valid save record: unknown variant `rewind`"
)]
#[case::not_json("step 3: hp = 2", "the record is not a valid save record")]
fn a_well_framed_version_1_record_that_does_not_fit_is_an_error_at_its_offset(
    #[case] payload: &str,
    #[case] problem: &str,
) {
    let good =
        r#"{"step":{"label":"ok","changes":[{"path":["hp"],"old":1,"new":2,"op":"assign"}]}}"#;
    refused_at_its_offset(1, good, good, payload, problem);
}

#[rstest]
#[case::step_that_does_not_fit(
    r#"{"step":{"id":2,"parent":1,"label":"x","changes":[{"path":["nope","deep"],"old":1,"op":"delete"}]}}"#,
    "the record does not replay on the timeline before it: the change at /nope/deep does not fit the state"
)]
#[case::unknown_op(
    r#"{"step":{"id":2,"parent":1,"changes":[{"path":["hp"],"old":1,"new":2,"op":"teleport"}]}}"#,
    "the record is not a valid save record: unknown op \"teleport\" in a change"
)]
#[case::unknown_parent(
    r#"{"step":{"id":2,"parent":7,"changes":[]}}"#,
    "the record does not replay on the timeline before it: no step 7 in the history"
)]
#[case::id_given_twice(
    r#"{"step":{"id":1,"parent":0,"changes":[]}}"#,
    "the record does not replay on the timeline before it: step 1 cannot be recorded: ids only grow, and the next free id is 2"
)]
#[case::trim_of_the_current_step(
    r#"{"step":{"id":2,"parent":1,"changes":[],"trimmed":[2]}}"#,
    "the record does not replay on the timeline before it: step 2 cannot be forgotten"
)]
#[case::checkout_of_nothing(
    r#"{"checkout":{"to":9}}"#,
    "the record does not replay on the timeline before it: no step 9 in the history"
)]
#[case::position_of_nothing(
    r#"{"position":{"current":1,"recency":[5],"next_id":6}}"#,
    "the record does not replay on the timeline before it: no step 5 in the history"
)]
#[case::second_base(BASE, "a second base snapshot after the first")]
#[case::version_1_record(
    r#"{"undo":{"steps":1}}"#,
    "the record is not a valid save record: unknown variant `undo`"
)]
#[case::not_json("step 3: hp = 2", "the record is not a valid save record")]
fn a_well_framed_version_2_record_that_does_not_fit_is_an_error_at_its_offset(
    #[case] payload: &str,
    #[case] problem: &str,
) {
    let good = r#"{"step":{"id":1,"parent":0,"label":"ok","changes":[{"path":["hp"],"old":1,"new":2,"op":"assign"}]}}"#;
    let after = r#"{"checkout":{"to":0}}"#;
    refused_at_its_offset(2, good, after, payload, problem);
}

/// A save of `version` with the base, `good`, then `payload` and `after`: opening it fails at
/// `payload`'s offset with `problem`, and the file stays as it was.
fn refused_at_its_offset(version: u32, good: &str, after: &str, payload: &str, problem: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = header(version);
    bytes.extend(frame(BASE));
    let good = frame(good);
    bytes.extend(&good);
    let offset = bytes.len();
    bytes.extend(frame(payload));
    // A record after the bad one, so that the bad one cannot pass for a torn tail.
    bytes.extend(frame(after));
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
fn a_hand_framed_version_1_save_loads_as_the_line_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = header(1);
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
fn a_hand_framed_version_2_save_loads_so_the_documented_format_is_the_real_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = header(2);
    bytes.extend(frame(BASE));
    bytes.extend(frame(r#"{"step":{"id":1,"parent":0,"label":"m1","changes":[{"path":["hp"],"old":1,"new":2,"reason":"heal","op":"assign"}]}}"#));
    bytes.extend(frame(
        r#"{"step":{"id":2,"parent":1,"label":"m2/s1","changes":[{"path":["bag",0],"new":null,"op":"push"}]}}"#,
    ));
    // A swipe of m2, committed on m1 beside the first one.
    bytes.extend(frame(
        r#"{"step":{"id":3,"parent":1,"label":"m2/s2","changes":[{"path":["hp"],"old":2,"new":5,"op":"assign"}]}}"#,
    ));
    bytes.extend(frame(r#"{"checkout":{"to":2}}"#));
    let (_, opened) = open_bytes(dir.path(), "hand.save", &bytes);
    let mut game = opened.unwrap();
    assert_eq!(game.state().to_json(), json!({"hp": 2, "bag": [null]}));
    game.checkout("m2/s2").unwrap().expect("the other swipe");
    assert_eq!(game.state().to_json(), json!({"hp": 5, "bag": []}));
    game.undo().unwrap();
    assert_eq!(
        game.redo().unwrap().map(|s| s.get()),
        Some(3),
        "the swipe current last"
    );
    // A compacted timeline: the steps, then where it stands and the order the others were visited in.
    let mut bytes = header(2);
    bytes.extend(frame(BASE));
    bytes.extend(frame(r#"{"step":{"id":4,"parent":0,"label":"a","changes":[{"path":["hp"],"old":1,"new":2,"op":"assign"}]}}"#));
    bytes.extend(frame(r#"{"step":{"id":6,"parent":0,"label":"b","changes":[{"path":["hp"],"old":1,"new":3,"op":"assign"}]}}"#));
    bytes.extend(frame(r#"{"step":{"id":7,"parent":0,"label":"c","changes":[{"path":["hp"],"old":1,"new":4,"op":"assign"}]}}"#));
    bytes.extend(frame(
        r#"{"position":{"current":0,"recency":[7,4,6],"next_id":9}}"#,
    ));
    let (_, opened) = open_bytes(dir.path(), "compacted.save", &bytes);
    let mut game = opened.unwrap();
    assert_eq!(game.state().to_json(), json!({"hp": 1, "bag": []}));
    assert_eq!(
        game.redo().unwrap().map(|s| s.get()),
        Some(6),
        "b was visited last"
    );
    assert_eq!(game.store().next_step_id().get(), 9);
}

#[test]
fn a_damaged_base_is_an_error_at_byte_20() {
    let dir = tempfile::tempdir().unwrap();
    for (payload, problem) in [
        (
            r#"{"step":{"id":1,"parent":0,"changes":[]}}"#,
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
        let mut bytes = header(2);
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

#[test]
fn a_base_that_its_version_cannot_hold_or_that_names_an_unusable_schema_is_an_error_at_byte_20() {
    let dir = tempfile::tempdir().unwrap();
    for (version, payload, problem) in [
        (
            3,
            r#"{"base":{"state":{},"history":{"max_steps":1,"max_bytes":1},"metadata":{},"seed":0,"profile":"mvu"}}"#,
            "a version 3 base snapshot cannot hold a profile or an automatic schema",
        ),
        (
            1,
            r#"{"base":{"state":{},"history":{"max_steps":1,"max_bytes":1},"metadata":{},"automatic_schema":{"type":"object"}}}"#,
            "a version 1 base snapshot cannot hold a seed, a profile, an automatic schema, a \
             card's fingerprint or macros",
        ),
        (
            4,
            r#"{"base":{"state":{},"history":{"max_steps":1,"max_bytes":1},"metadata":{},"seed":0,"macros":{"user":"Alex"}}}"#,
            "a version 4 base snapshot cannot hold a card's fingerprint or macros",
        ),
        (
            4,
            r#"{"base":{"state":{},"history":{"max_steps":1,"max_bytes":1},"metadata":{},"seed":0,"card_fingerprint":"ab"}}"#,
            "a version 4 base snapshot cannot hold a card's fingerprint or macros",
        ),
        (
            4,
            r#"{"base":{"state":{},"history":{"max_steps":1,"max_bytes":1},"metadata":{},"seed":0,"automatic_schema":{"type":"thing"}}}"#,
            "the saved automatic schema is unusable",
        ),
        (
            4,
            r#"{"base":{"state":{},"history":{"max_steps":1,"max_bytes":1},"metadata":{},"seed":0,"profile":"lenient"}}"#,
            "the record is not a valid save record: unknown variant `lenient`",
        ),
    ] {
        let mut bytes = header(version);
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

#[test]
fn a_hand_framed_version_4_save_keeps_its_profile_and_automatic_schema() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = header(4);
    bytes.extend(frame(
        r#"{"base":{"state":{"hp":1,"bag":[]},"history":{"max_steps":10,"max_bytes":100000},"metadata":{},"seed":0,"profile":"mvu","automatic_schema":{"type":"object","properties":{"hp":{"type":"number","required":true},"bag":{"type":"array","required":true,"extensible":false}}}}}"#,
    ));
    let (_, opened) = open_bytes(dir.path(), "card.save", &bytes);
    let mut game = opened.unwrap();
    assert_eq!(game.store().profile(), statecraft_engine::Profile::Mvu);
    let commit = game
        .apply(
            &batch(json!([
                {"op": "push", "path": ["bag"], "value": 1},
                {"op": "assign", "path": ["hp"], "value": 2}
            ])),
            None,
        )
        .unwrap()
        .committed()
        .expect("one by one");
    assert_eq!(game.state().to_json(), json!({"hp": 2, "bag": []}));
    assert_eq!(commit.warnings[0].kind.code(), "schema_violation");
}

#[test]
fn a_card_update_in_a_version_4_file_or_with_an_unusable_schema_is_an_error_at_its_offset() {
    let good = r#"{"step":{"id":1,"parent":0,"label":"ok","changes":[{"path":["hp"],"old":1,"new":2,"op":"assign"}]}}"#;
    let after = r#"{"checkout":{"to":0}}"#;
    let update = r#"{"step":{"id":2,"parent":1,"changes":[],"card":{"fingerprint":"ab"}}}"#;
    let seeded = |base: &str| base.replace(r#""metadata":{}"#, r#""metadata":{},"seed":0"#);
    for (version, payload, problem) in [
        (
            4,
            update.to_owned(),
            "a version 4 step cannot take a new version of the card".to_owned(),
        ),
        (
            5,
            update.replace(
                r#""fingerprint":"ab""#,
                r#""automatic_schema":{"type":"thing"}"#,
            ),
            "the record does not replay on the timeline before it: step 2 takes a card whose \
             automatic schema is unusable"
                .to_owned(),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = header(version);
        bytes.extend(frame(&seeded(BASE)));
        bytes.extend(frame(good));
        let offset = bytes.len();
        bytes.extend(frame(&payload));
        bytes.extend(frame(after));
        let (path, opened) = open_bytes(dir.path(), "update.save", &bytes);
        let error = opened.unwrap_err().to_string();
        let expected = format!("{} at byte {offset}: {problem}", path.display());
        assert!(
            error.starts_with(&expected),
            "{error}\nexpected: {expected}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
}

#[test]
fn a_hand_framed_version_5_save_keeps_its_macros_and_its_card_updates() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = header(5);
    bytes.extend(frame(
        r#"{"base":{"state":{"hp":1},"history":{"max_steps":10,"max_bytes":100000},"metadata":{},"seed":0,"profile":"mvu","automatic_schema":{"type":"object","properties":{"hp":{"type":"number","required":true}}},"card_fingerprint":"c1","macros":{"user":"Alex"}}}"#,
    ));
    bytes.extend(frame(
        r#"{"step":{"id":1,"parent":0,"label":"card 2","changes":[{"path":["mp"],"new":3,"op":"assign"}],"card":{"fingerprint":"c2","automatic_schema":{"type":"object","properties":{"hp":{"type":"number","required":true},"mp":{"type":"number","required":true}}}}}}"#,
    ));
    let (_, opened) = open_bytes(dir.path(), "v5.save", &bytes);
    let mut game = opened.unwrap();
    assert_eq!(game.macros().get("user").map(String::as_str), Some("Alex"));
    assert_eq!(game.store().card().fingerprint.as_deref(), Some("c2"));
    let commit = game
        .apply(&batch(json!([{"op": "delete", "path": ["mp"]}])), None)
        .unwrap()
        .committed()
        .expect("one by one");
    assert_eq!(
        commit.warnings[0].kind.code(),
        "schema_violation",
        "mp is required now"
    );
    game.undo().unwrap();
    game.undo().unwrap();
    assert_eq!(game.store().card().fingerprint.as_deref(), Some("c1"));
    assert_eq!(game.state().to_json(), json!({"hp": 1}));
}
