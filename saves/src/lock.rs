//! The exclusive lock that keeps two processes from interleaving their writes to one save.
//!
//! The lock is `flock(2)` on a side file, `GAME.lock`, never on the save itself: compaction replaces the
//! save by renaming a new file over it, and a lock on the old inode would then protect nothing. The
//! side file is created once and never removed, because removing a lock file races with a process that
//! has just opened it. The kernel releases the lock when the process dies, so a killed writer never
//! leaves the save locked. This module must not read or write the save.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, flock};

use crate::error::SaveError;

/// A held lock; dropping it (or the process dying) releases it.
#[derive(Debug)]
pub(crate) struct Lock {
    _file: File,
}

/// The lock file of a save.
pub(crate) fn lock_path(save: &Path) -> PathBuf {
    let mut name = save.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the exclusive lock of `save`, polling until `timeout` has passed.
pub(crate) fn acquire(save: &Path, timeout: Duration) -> Result<Lock, SaveError> {
    let path = lock_path(save);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|source| SaveError::Io {
            path: path.clone(),
            action: "cannot open the lock file",
            source,
        })?;
    let start = Instant::now();
    // Polling rather than a blocking flock keeps the wait bounded without a signal or a thread; the
    // short first sleeps keep a lock released quickly cheap to get.
    let mut pause = Duration::from_millis(1);
    loop {
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(Lock { _file: file }),
            Err(rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::INTR) => {}
            Err(errno) => {
                return Err(SaveError::Io {
                    path,
                    action: "cannot lock",
                    source: std::io::Error::from(errno),
                });
            }
        }
        let waited = start.elapsed();
        if waited >= timeout {
            return Err(SaveError::Locked {
                path: save.to_owned(),
                lock: path,
                waited,
            });
        }
        std::thread::sleep(pause.min(timeout - waited));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}
