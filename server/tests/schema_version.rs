//! A database records the layout of its tables (`statecraft_meta.schema_version`) and the server
//! reads it at every open: a database written by a newer statecraft is refused with an error that
//! says what to do, before anything of it is read or written, on SQLite and on PostgreSQL; a database
//! of version 1, whose rows version 2 reads as they are, opens and is recorded as version 2.

use std::process::Command;

use statecraft_saves::StorageError;
use statecraft_server::Database;

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
    let base = std::env::var("STATECRAFT_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let schema = format!("t_schema_version_{}", std::process::id());
    if let Err(error) = psql(
        &base,
        &format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};"),
    ) {
        let message = format!("PostgreSQL at {base} is not usable ({error}); skipping");
        assert!(
            std::env::var_os("CI").is_none(),
            "{message} (a failure under CI)"
        );
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
        return;
    }
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}options=-csearch_path%3D{schema}");
    let set = |version: &str| {
        psql(
            &url,
            &format!("UPDATE statecraft_meta SET value = '{version}' WHERE key = 'schema_version'"),
        )
        .expect("set the version");
    };
    let database = Database::Postgres(url.clone());
    let upgraded = reopened_at(&database, "1", set);
    // Whether opening recorded the version 1 database as version 2.
    let raised = psql(
        &url,
        "DO $$ BEGIN IF (SELECT value FROM statecraft_meta WHERE key = 'schema_version') <> '2' \
         THEN RAISE EXCEPTION 'not raised'; END IF; END $$;",
    );
    let result = reopened_at(&database, "3", set);
    let _ = psql(&base, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE;"));
    assert_refused(result);
    upgraded.expect("a version 1 database opens");
    raised.expect("the version 1 database is recorded as version 2");
}

/// Runs SQL with `psql`, one line of error on failure.
fn psql(url: &str, sql: &str) -> Result<(), String> {
    let output = Command::new("psql")
        .args([url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql])
        .output()
        .map_err(|error| format!("psql cannot run: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(stderr.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}
