//! Which file a path names, and replacing a file whole.
//!
//! A save or a state file may be reached through a symbolic link (a front end links the current game).
//! Everything that locks, reads or replaces such a file works on the file the link points to: a lock
//! named after the link would not exclude a process that uses the real name, and a rename over the link
//! would replace the link with a new file and leave the real one behind. A file is replaced whole by
//! writing beside it, fsyncing, renaming over it and fsyncing the folder, so a crash leaves the old file
//! or the new one; the new one keeps the old one's permissions, so a private file stays private. This
//! module must not know what the bytes mean.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::SaveError;
use crate::game::Durability;

/// How many links in a row are followed before giving up, as the kernel's own limit (`ELOOP`).
const MAX_LINKS: usize = 40;

/// The file `path` names once every symbolic link in its last component is followed; the path itself
/// when it is no link or names nothing yet. Links in the folders above need no following: the file
/// reached through them is the same one, and so is the lock file beside it. Relative link targets are
/// read from the link's folder, and the result stays relative when they are.
pub fn resolve_links(path: &Path) -> io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::read_link(&path) {
            // `join` keeps an absolute target as it is.
            Ok(target) => path = path.parent().unwrap_or(Path::new("")).join(target),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::NotFound
                ) =>
            {
                return Ok(path);
            }
            Err(error) => return Err(error),
        }
    }
    Err(io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links in a row"
    )))
}

/// Replaces the file `path` names (links followed) with `bytes`, atomically and durably, keeping its
/// permissions; creates it when it does not exist. For files that no lock protects, such as a state
/// file written back in place: the file written beside it has a name of this process's own.
pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), SaveError> {
    let real = resolve_links(path).map_err(|source| SaveError::Io {
        path: path.to_owned(),
        action: "cannot follow the symbolic link",
        source,
    })?;
    let Some(name) = real.file_name() else {
        return Err(SaveError::Io {
            path: path.to_owned(),
            action: "cannot replace",
            source: io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"),
        });
    };
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = real.with_file_name(temp_name);
    let replaced = replace(&real, &temp, bytes, Durability::Synced);
    if replaced.is_err() {
        // The file beside is this process's own and useless now; failing to remove it changes nothing.
        let _ = fs::remove_file(&temp);
    }
    replaced
}

/// Replaces `path` (already resolved) with `bytes` by way of `temp`: write, fsync, rename, fsync the
/// folder (without which the rename itself may not survive a power loss). The new file takes the old
/// one's permissions before any byte is written, so it is never readable more widely than the old one.
pub(crate) fn replace(
    path: &Path,
    temp: &Path,
    bytes: &[u8],
    durability: Durability,
) -> Result<(), SaveError> {
    let io = |path: &Path, action| {
        let path = path.to_owned();
        move |source| SaveError::Io {
            path,
            action,
            source,
        }
    };
    let permissions = match fs::metadata(path) {
        Ok(metadata) => Some(metadata.permissions()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(io(path, "cannot read the permissions of")(error)),
    };
    let mut file = File::create(temp).map_err(io(temp, "cannot create"))?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions)
            .map_err(io(temp, "cannot set the permissions of"))?;
    }
    file.write_all(bytes).map_err(io(temp, "cannot write"))?;
    if durability == Durability::Synced {
        file.sync_all().map_err(io(temp, "cannot fsync"))?;
    }
    drop(file);
    fs::rename(temp, path).map_err(io(path, "cannot rename the new file into place"))?;
    if durability == Durability::Synced {
        let folder = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        File::open(folder)
            .and_then(|dir| dir.sync_all())
            .map_err(io(folder, "cannot fsync the folder"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[test]
    fn links_are_followed_to_the_file_and_a_missing_file_is_its_own_path() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        fs::write(&real, "{}").unwrap();
        symlink("real.json", dir.path().join("link.json")).unwrap();
        symlink(dir.path().join("link.json"), dir.path().join("second.json")).unwrap();
        assert_eq!(
            resolve_links(&dir.path().join("second.json")).unwrap(),
            real
        );
        assert_eq!(resolve_links(&real).unwrap(), real);
        let missing = dir.path().join("missing.json");
        assert_eq!(resolve_links(&missing).unwrap(), missing);
        symlink("loop", dir.path().join("loop")).unwrap();
        assert!(resolve_links(&dir.path().join("loop")).is_err());
    }

    #[test]
    fn a_replaced_file_keeps_its_link_and_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        fs::write(&real, "old").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.json");
        symlink("real.json", &link).unwrap();
        replace_file(&link, b"new").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "nothing is left beside: {names:?}");
    }
}
