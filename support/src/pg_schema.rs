//! A PostgreSQL schema of its own for one test: the one set-up of every PostgreSQL test
//! (`server/src/http/tests.rs`, `server/tests/*.rs`, `cli/tests/http/mod.rs`).
//!
//! The server is `STATECRAFT_TEST_POSTGRES` (a URL), or else the machine's own on 127.0.0.1:5432,
//! database `test`. When it cannot be used, the test says so on the standard error handle (which the
//! test harness does not capture, so the skip shows) and skips, or fails when `CI` is set.

/// The PostgreSQL server the tests use.
fn postgres_url() -> String {
    std::env::var("STATECRAFT_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A schema of its own in the test database, dropped when the handle drops.
#[derive(Debug)]
pub struct PgSchema {
    /// The database's URL with the schema as its `search_path`: what `--db` and
    /// `Database::Postgres` take, and where the server makes its tables.
    pub url: String,
    name: String,
}

impl PgSchema {
    /// Makes a schema for `test` (an identifier), or says why PostgreSQL cannot be used: then the
    /// test skips, visibly, and fails under CI.
    pub fn new(test: &str) -> Option<PgSchema> {
        let base = postgres_url();
        let name = format!("t_{test}_{}", std::process::id());
        let made = postgres::Client::connect(&base, postgres::NoTls).and_then(|mut client| {
            client.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name};"
            ))
        });
        if let Err(error) = made {
            let message = format!("PostgreSQL at {base} is not usable ({error}); skipping {test}");
            assert!(
                std::env::var_os("CI").is_none(),
                "{message} (a failure under CI)"
            );
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
            return None;
        }
        let separator = if base.contains('?') { '&' } else { '?' };
        Some(PgSchema {
            url: format!("{base}{separator}options=-csearch_path%3D{name}"),
            name,
        })
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&postgres_url(), postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE;", self.name));
        }
    }
}
