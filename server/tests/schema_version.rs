//! A database records the layout of its tables (`statecraft_meta.schema_version`) and the server
//! reads it at every open: a database written by a newer statecraft is refused with an error that
//! says what to do, before anything of it is read or written, on SQLite and on PostgreSQL; a database
//! of version 1 or 2, whose rows version 3 reads as they are, opens and is recorded as version 3, and
//! its games go on, taking what only version 3 writes (macros, a card update).

use statecraft_saves::StorageError;
use statecraft_server::Database;

// The PostgreSQL set-up every test of the server and the command shares.
use statecraft_test_support::pg_schema::PgSchema;

/// Opens `database`, sets its schema version to `version` with `set_version`, and opens it again.
fn reopened_at(
    database: &Database,
    version: &str,
    set_version: impl FnOnce(&str),
) -> Result<(), StorageError> {
    database.open().expect("a new database opens");
    database
        .open()
        .expect("a database of this version opens again");
    set_version(version);
    database.open().map(drop)
}

fn assert_refused(result: Result<(), StorageError>) {
    match result {
        Err(error @ StorageError::UnknownSchemaVersion { .. }) => {
            let message = error.to_string();
            assert!(
                message.contains("schema version 4") && message.contains("upgrade statecraft"),
                "the refusal says which version and what to do: {message}"
            );
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(()) => panic!("a database of an unknown schema version was opened"),
    }
}

#[test]
fn sqlite_refuses_an_unknown_schema_version() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("games.db");
    let database = Database::Sqlite(path.clone());
    let set = |version: &str| {
        let connection = rusqlite::Connection::open(&path).expect("open the file");
        connection
            .execute(
                "UPDATE statecraft_meta SET value = ?1 WHERE key = 'schema_version'",
                [version],
            )
            .expect("set the version");
    };
    let version = || -> String {
        let connection = rusqlite::Connection::open(&path).expect("open the file");
        connection
            .query_row(
                "SELECT value FROM statecraft_meta WHERE key = 'schema_version'",
                [],
                |row| row.get(0),
            )
            .expect("the version")
    };
    // Versions 1 and 2 open and are raised to 3.
    for old in ["1", "2"] {
        reopened_at(&database, old, set).expect("an older database opens");
        assert_eq!(version(), "3");
    }
    games_go_on_after_an_upgrade(&database, set);
    let result = reopened_at(&database, "4", set);
    assert_refused(result);
}

#[test]
fn postgres_refuses_an_unknown_schema_version() {
    let Some(schema) = PgSchema::new("schema_version") else {
        return;
    };
    let client = || postgres::Client::connect(&schema.url, postgres::NoTls).expect("connect");
    let set = |version: &str| {
        client()
            .execute(
                "UPDATE statecraft_meta SET value = $1 WHERE key = 'schema_version'",
                &[&version],
            )
            .expect("set the version");
    };
    let database = Database::Postgres(schema.url.clone());
    let version = || -> String {
        client()
            .query_one(
                "SELECT value FROM statecraft_meta WHERE key = 'schema_version'",
                &[],
            )
            .expect("the version")
            .get(0)
    };
    // Versions 1 and 2 open and are raised to 3.
    for old in ["1", "2"] {
        reopened_at(&database, old, set).expect("an older database opens");
        assert_eq!(version(), "3");
    }
    games_go_on_after_an_upgrade(&database, set);
    let result = reopened_at(&database, "4", set);
    assert_refused(result);
}

/// A game a version 2 server wrote (a base without macros or a fingerprint) loads after the upgrade
/// and takes records only version 3 writes: a card update.
fn games_go_on_after_an_upgrade(database: &Database, set_version: impl Fn(&str)) {
    use statecraft_engine::{Change, HistoryLimits, Op, Path, StepId};
    use statecraft_saves::{
        BaseRecord, CardRecord, Head, StepRecord, TimelineRecord, Write, Written,
    };
    let storage = database.open().expect("opens");
    let base = BaseRecord {
        state: statecraft_engine::Value::from(serde_json::json!({"hp": 1})),
        schema: None,
        scripts: None,
        history: HistoryLimits::default(),
        metadata: serde_json::Map::new(),
        seed: Some(0),
        root_keys: Vec::new(),
        profile: None,
        automatic_schema: None,
        card_fingerprint: None,
        macros: Default::default(),
    };
    let head = |seq: u64, step: u64| Head {
        seq,
        base_seq: 0,
        step: StepId::new(step),
        label: None,
    };
    let create = Write::Create {
        id: "old".to_owned(),
        base,
        scripts: Default::default(),
        head: head(0, 0),
        receipt: None,
        max_games: None,
    };
    assert_eq!(storage.write(&[create]).expect("written"), [Written::Done]);
    drop(storage);
    set_version("2");
    let storage = database.open().expect("a version 2 database opens");
    let update = TimelineRecord::Step(StepRecord {
        id: StepId::new(1),
        parent: StepId::ROOT,
        label: Some("card update".to_owned()),
        key: None,
        refusal: None,
        changes: vec![Change {
            path: Path::from(vec!["mp".into()]),
            old: None,
            new: Some(statecraft_engine::Value::from(3)),
            reason: None,
            op: Op::Assign,
        }]
        .into(),
        card: Some(CardRecord {
            fingerprint: Some("v2".to_owned()),
            automatic_schema: None,
        }),
        trimmed: Vec::new(),
    });
    let append = Write::Append {
        id: "old".to_owned(),
        on: 0,
        records: vec![update.clone()],
        head: head(1, 1),
        receipt: None,
    };
    assert_eq!(storage.write(&[append]).expect("written"), [Written::Done]);
    let game = storage.load("old").expect("loads").expect("is there");
    assert_eq!(game.records, vec![update]);
    let delete = Write::Delete {
        id: "old".to_owned(),
        spent: None,
    };
    storage.write(&[delete]).expect("deleted");
}
