//! The lock that keeps two processes from interleaving their writes to one save.
//!
//! The lock is `flock(2)` on a side file, `GAME.lock`, never on the save itself: compaction replaces the
//! save by renaming a new file over it, and a lock on the old inode would then protect nothing. `GAME` is
//! the save's real path (symbolic links followed, see [`crate::files::resolve_links`]), so every name
//! for one save leads to one lock file. A writer takes the lock exclusively and removes the lock file
//! before it lets go, so that no command, finished or failed, leaves one behind; a process that waited
//! on the removed file finds, once it holds the lock, that the path no longer names its file, and starts
//! over on the current one. A reader takes the lock shared, only if the lock file exists, and creates
//! nothing: reading a save needs read access alone. The kernel releases the lock when the process dies,
//! so a killed writer never leaves the save locked (only a lock file, which the next writer reuses).
//! This module must not read or write the save.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, flock};

use crate::error::SaveError;

/// A held lock; dropping it (or the process dying) releases it.
#[derive(Debug)]
pub struct Lock {
    _file: File,
    path: PathBuf,
    exclusive: bool,
}

impl Drop for Lock {
    fn drop(&mut self) {
        if self.exclusive {
            // Removed while still held, so that no one can lock this file after its name is gone
            // without noticing; the file itself closes (and unlocks) right after. A failure leaves a
            // lock file that the next writer simply reuses.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The lock file of a save.
pub(crate) fn lock_path(save: &Path) -> PathBuf {
    let mut name = save.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the exclusive lock of `save` (its real path), polling until `timeout` has passed. The same
/// lock serves any file that is read, changed and replaced whole, such as the command's state file
/// under `apply --in-place`: without it, two processes could both read the old file and the second
/// replacement would drop the first one's change.
pub fn acquire(save: &Path, timeout: Duration) -> Result<Lock, SaveError> {
    let path = lock_path(save);
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map(Some)
    };
    let lock = take(
        save,
        &path,
        timeout,
        FlockOperation::NonBlockingLockExclusive,
        open,
    )?;
    Ok(lock.expect("the lock file is created when missing"))
}

/// Takes the shared lock of `save` (its real path) for reading, if its lock file exists; `None` when it
/// does not, since then no writer holds it. Creates nothing.
pub(crate) fn acquire_shared(save: &Path, timeout: Duration) -> Result<Option<Lock>, SaveError> {
    let path = lock_path(save);
    let open = || match File::open(&path) {
        Ok(file) => Ok(Some(file)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    };
    take(
        save,
        &path,
        timeout,
        FlockOperation::NonBlockingLockShared,
        open,
    )
}

/// Opens the lock file with `open` and locks it with `operation`, polling until `timeout`; starts over
/// when the file it locked is no longer the one its path names (its holder removed it).
fn take(
    save: &Path,
    path: &Path,
    timeout: Duration,
    operation: FlockOperation,
    open: impl Fn() -> std::io::Result<Option<File>>,
) -> Result<Option<Lock>, SaveError> {
    let fail = |action, source| SaveError::Io {
        path: path.to_owned(),
        action,
        source,
    };
    let start = Instant::now();
    // Polling rather than a blocking flock keeps the wait bounded without a signal or a thread; the
    // short first sleeps keep a lock released quickly cheap to get.
    let mut pause = Duration::from_millis(1);
    loop {
        let Some(file) = open().map_err(|source| fail("cannot open the lock file", source))? else {
            return Ok(None);
        };
        loop {
            match flock(&file, operation) {
                Ok(()) => break,
                Err(rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::INTR) => {}
                Err(errno) => return Err(fail("cannot lock", std::io::Error::from(errno))),
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(SaveError::Locked {
                    path: save.to_owned(),
                    lock: path.to_owned(),
                    waited,
                });
            }
            std::thread::sleep(pause.min(timeout - waited));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
        let held = file
            .metadata()
            .map_err(|source| fail("cannot read the lock file", source))?;
        let current = std::fs::metadata(path);
        if current.is_ok_and(|now| now.dev() == held.dev() && now.ino() == held.ino()) {
            return Ok(Some(Lock {
                _file: file,
                path: path.to_owned(),
                exclusive: operation == FlockOperation::NonBlockingLockExclusive,
            }));
        }
        // The holder before us removed this file as it let go: lock the one the path names now.
    }
}
