//! Removing a copy: whatever it holds now (the untraced run may have left
//! anything in it), never following a symlink.

use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Removes the tree at `path` (nothing when it is not there). A directory
/// this process owns but may not change (mode 0500, say, copied from the
/// user's tree) is opened up first; symlinks are removed, not followed.
pub(super) fn remove_tree(path: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            open_up(path)?;
            std::fs::remove_dir_all(path)
        }
        Err(e) => Err(e),
    }
}

/// Gives every directory under `path` that this process owns the mode
/// 0700, so what it holds can be removed. The walk keeps its own list (a
/// deep tree takes memory, not stack) and skips what it cannot read.
fn open_up(path: &Path) -> io::Result<()> {
    let me = rustix::process::geteuid().as_raw();
    let mut todo: Vec<PathBuf> = vec![path.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me {
            continue;
        }
        if meta.mode() & 0o700 != 0o700 {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in listing.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(entry.path());
            }
        }
    }
    Ok(())
}
