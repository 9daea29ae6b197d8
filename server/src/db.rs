//! The database backends behind `statecraft_saves::Storage`, chosen by `--db`.
//!
//! `sqlite:PATH` (the default, `sqlite:statecraft.db`) keeps games in one embedded file;
//! `postgres://...` (or `postgresql://`) keeps them in a PostgreSQL database that many server processes
//! may share. Both store the same rows (`rows.rs`). This module must not interpret records.

mod postgres;
mod rows;
mod sqlite;

use std::sync::Arc;

use statecraft_saves::{Storage, StorageError};

pub(crate) use rows::{fits, now};

/// Where games are stored, as given to `--db`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file.
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL connection string.
    Postgres(String),
}

/// A `--db` value that names no database.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DatabaseUrlError {
    /// `sqlite:` with nothing after it.
    #[error("sqlite: needs a file path, like sqlite:statecraft.db")]
    NoSqlitePath,
    /// Neither `sqlite:` nor `postgres://`.
    #[error("`{0}` is not a database this server knows: use sqlite:PATH or postgres://...")]
    UnknownScheme(String),
}

impl Database {
    /// Reads a `--db` value.
    pub fn parse(url: &str) -> Result<Database, DatabaseUrlError> {
        if let Some(path) = url.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(DatabaseUrlError::NoSqlitePath);
            }
            return Ok(Database::Sqlite(path.into()));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Database::Postgres(url.to_owned()));
        }
        Err(DatabaseUrlError::UnknownScheme(url.to_owned()))
    }

    /// The database for logs, without a password.
    pub fn describe(&self) -> String {
        match self {
            Database::Sqlite(path) => format!("sqlite:{}", path.display()),
            Database::Postgres(url) => postgres::without_password(url),
        }
    }

    /// Opens it and creates its tables when they are missing.
    pub fn open(&self) -> Result<Arc<dyn Storage>, StorageError> {
        Ok(match self {
            Database::Sqlite(path) => Arc::new(sqlite::Sqlite::open(path)?),
            Database::Postgres(url) => Arc::new(postgres::Postgres::open(url)?),
        })
    }
}
