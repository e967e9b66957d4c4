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
        why: PrivateError,
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

/// Why a cache directory is not private to this user.
#[derive(Debug, thiserror::Error)]
pub enum PrivateError {
    /// A file or a symlink in its place.
    #[error("it is not a directory")]
    NotDirectory,
    /// Another user owns it.
    #[error("it is owned by uid {owner}, not {me}")]
    Owner {
        /// Its owner.
        owner: u32,
        /// This user.
        me: u32,
    },
    /// Group or others may write in it.
    #[error("it is writable by group or others (mode {mode:o}): make it private (chmod 700) or use another PLUMB_CACHE_DIR")]
    Writable {
        /// Its permission bits.
        mode: u32,
    },
    /// It could not be made.
    #[error("cannot create it: {0}")]
    Create(std::io::Error),
    /// It could not be looked at.
    #[error("{0}")]
    Look(std::io::Error),
}

impl From<PrivateError> for String {
    /// The message, for callers whose errors are still text.
    fn from(e: PrivateError) -> String {
        e.to_string()
    }
}

/// Checks that `m` describes a directory only this user can change: a real
/// directory (not a symlink), owned by this user, not writable by group or
/// others. The reason when it is not.
pub fn check_private(m: &std::fs::Metadata) -> Result<(), PrivateError> {
    if !m.is_dir() {
        return Err(PrivateError::NotDirectory);
    }
    if m.uid() != me() {
        return Err(PrivateError::Owner {
            owner: m.uid(),
            me: me(),
        });
    }
    if m.mode() & 0o022 != 0 {
        return Err(PrivateError::Writable {
            mode: m.mode() & 0o7777,
        });
    }
    Ok(())
}

/// Creates `dir` (and missing parents) `0700`, then checks it with
/// [`check_private`], not following a symlink in its place.
pub fn private_dir(dir: &Path) -> Result<(), PrivateError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(PrivateError::Create)?;
    let m = std::fs::symlink_metadata(dir).map_err(PrivateError::Look)?;
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
        let why = private_dir(&d).unwrap_err().to_string();
        assert!(why.contains("writable by group or others"), "{why}");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(private_dir(&link)
            .unwrap_err()
            .to_string()
            .contains("not a directory"));
        if me() == 0 {
            // Root can give it away: owned by someone else, it is refused.
            std::os::unix::fs::chown(&d, Some(65534), None).unwrap();
            assert!(private_dir(&d)
                .unwrap_err()
                .to_string()
                .contains("owned by uid 65534"));
        }
    }
}
