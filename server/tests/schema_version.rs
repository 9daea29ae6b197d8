//! A database records the layout of its tables (`statecraft_meta.schema_version`) and the server
//! reads it at every open: a database written by a newer statecraft is refused with an error that
//! says what to do, before anything of it is read or written, on SQLite and on PostgreSQL; a database
//! of version 1, whose rows version 2 reads as they are, opens and is recorded as version 2.

use statecraft_saves::StorageError;
use statecraft_server::Database;

// The PostgreSQL set-up every test of the server and the command shares.
#[path = "common/pg_schema.rs"]
mod pg_schema;
use pg_schema::PgSchema;

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
                message.contains("schema version 3") && message.contains("upgrade statecraft"),
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
    // Version 1 opens and is raised to 2.
    reopened_at(&database, "1", set).expect("a version 1 database opens");
    let connection = rusqlite::Connection::open(&path).expect("open the file");
    let version: String = connection
        .query_row(
            "SELECT value FROM statecraft_meta WHERE key = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .expect("the version");
    assert_eq!(version, "2");
    let result = reopened_at(&database, "3", set);
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
    // Version 1 opens and is raised to 2.
    reopened_at(&database, "1", set).expect("a version 1 database opens");
    let version: String = client()
        .query_one(
            "SELECT value FROM statecraft_meta WHERE key = 'schema_version'",
            &[],
        )
        .expect("the version")
        .get(0);
    assert_eq!(version, "2");
    let result = reopened_at(&database, "3", set);
    assert_refused(result);
}
