//! plumb's cache directory: `$PLUMB_CACHE_DIR`, else `$XDG_CACHE_HOME/plumb`,
//! else `~/.cache/plumb`; compiled components, git clones of packs and the
//! fleet's memo of its own hash live in folders of their own below it.
//!
//! What a cache holds is obeyed when read back (native code is run, git
//! follows a repository's configuration), so every cache folder passes one
//! rule before anything in it is used, [`open`]: plumb creates the cache
//! and the folder `0700`, and uses them only when both are real directories
//! (not symlinks) owned by this user and writable by no one else. A folder
//! anyone else could write is refused, never repaired: what was planted in
//! it would stay.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Why a cache folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// None of the variables that name it is set.
    #[error("no cache directory (set PLUMB_CACHE_DIR)")]
    Unnamed,
    /// It cannot be made, or someone else could write it.
    #[error("cache directory {}: {why}", dir.display())]
    NotPrivate {
        /// The directory at fault.
        dir: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

/// The cache itself, if one can be named.
fn base() -> Option<PathBuf> {
    std::env::var_os("PLUMB_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("plumb")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/plumb")))
}

/// The cache folder for `kind` (`wasm`, `git`, `self`): made if missing,
/// and checked private with [`private_dir`] (the cache above it too).
pub fn open(kind: &str) -> Result<PathBuf, CacheError> {
    let base = base().ok_or(CacheError::Unnamed)?;
    let dir = base.join(kind);
    for d in [&base, &dir] {
        private_dir(d).map_err(|why| CacheError::NotPrivate {
            dir: d.clone(),
            why,
        })?;
    }
    Ok(dir)
}

/// This process's effective user.
fn me() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Checks that `m` describes a directory only this user can change: a real
/// directory (not a symlink), owned by this user, not writable by group or
/// others. The reason when it is not.
pub fn check_private(m: &std::fs::Metadata) -> Result<(), String> {
    if !m.is_dir() {
        return Err("it is not a directory".into());
    }
    if m.uid() != me() {
        return Err(format!("it is owned by uid {}, not {}", m.uid(), me()));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!(
            "it is writable by group or others (mode {:o}): make it private (chmod 700) or use another PLUMB_CACHE_DIR",
            m.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Creates `dir` (and missing parents) `0700`, then checks it with
/// [`check_private`], not following a symlink in its place.
pub fn private_dir(dir: &Path) -> Result<(), String> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create it: {e}"))?;
    let m = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    check_private(&m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_a_private_directory_of_this_user_passes() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("a/wasm");
        private_dir(&d).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o777, 0o700);
        assert_eq!(
            std::fs::metadata(t.path().join("a")).unwrap().mode() & 0o777,
            0o700,
            "missing parents are made private too"
        );
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let why = private_dir(&d).unwrap_err();
        assert!(why.contains("writable by group or others"), "{why}");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(private_dir(&link).unwrap_err().contains("not a directory"));
        if me() == 0 {
            // Root can give it away: owned by someone else, it is refused.
            std::os::unix::fs::chown(&d, Some(65534), None).unwrap();
            assert!(private_dir(&d).unwrap_err().contains("owned by uid 65534"));
        }
    }
}
