//! The sandbox's file side: a run directory that every scenario path is
//! resolved beneath, race-free, with `openat2(RESOLVE_BENEATH)`.
//!
//! `..` that climbs out, absolute paths and symlinks that lead out all fail
//! with [`SandboxError::Escape`]; operations on a final path component
//! (`unlinkat`, `renameat`, `mkdirat`, `fstatat`) never follow symlinks.

mod account;
mod holds;
mod names;
mod open;
mod owner;
mod read;
mod sys;

pub use account::{
    default_inodes, entry_bytes, Account, OverBudget, Unit, DEFAULT_MAX_INODES, INODE_BYTES,
};
pub use holds::{raise_descriptor_limit, Held, Inode};
pub use owner::{sweep_stale, Owner, MARK_SUFFIX};
pub use read::{read_beneath, ReadError};

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use sys::{cstr, fstat};

/// A rule broken or an OS error, naming the path.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The path leads outside the run directory.
    #[error("path '{path}' is outside the run directory (paths must stay inside it: no absolute paths, no '..' or symlinks leading out)")]
    Escape {
        /// The path as the scenario gave it.
        path: String,
    },
    /// The path is not a usable name.
    #[error("path '{path}' is not valid: {why}")]
    BadPath {
        /// The path as given.
        path: String,
        /// What is wrong.
        why: &'static str,
    },
    /// Creating it would pass the run's byte or inode budget.
    #[error("'{path}': {source}")]
    Budget {
        /// The path as given.
        path: String,
        /// The refused charge.
        source: OverBudget,
    },
    /// The operating system refused.
    #[error("{op} '{path}': {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The path as given.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

impl SandboxError {
    /// The errno behind the error, if there is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            SandboxError::Io { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

/// Metadata of a path inside the run directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Size in bytes.
    pub size: u64,
    /// True for directories.
    pub is_dir: bool,
    /// True for symlinks (never followed).
    pub is_symlink: bool,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
    /// Hard links to it (its data is freed when the last one goes).
    pub links: u64,
    /// The inode the path names.
    pub inode: Inode,
}

impl Stat {
    /// Bytes that removing this name gives back to the write budget: a
    /// regular file's size when this is its last link (directories' and
    /// symlinks' sizes were never charged; another link keeps the data).
    pub fn freed_by_removal(&self) -> u64 {
        if self.is_dir || self.is_symlink || self.links > 1 {
            0
        } else {
            self.size
        }
    }
}

/// A directory of its own for one run; every scenario path resolves beneath it.
///
/// A directory made by [`RunDir::create`] is marked with its owner: a sibling
/// file `NAME.owner` (outside the directory, so scenarios can neither see nor
/// remove it) holding this process's PID and start time. The mark is removed
/// when the `RunDir` is dropped or deleted; a mark left behind by a killed
/// process lets the next `plumb run` in that target remove the directory
/// ([`sweep_stale`]).
#[derive(Debug)]
pub struct RunDir {
    root: OwnedFd,
    path: PathBuf,
    /// The owner mark this handle removes when dropped (None for clones and
    /// directories it did not create).
    mark: Option<PathBuf>,
    /// Its files held open (shared with its clones).
    holds: Arc<holds::Holds>,
    /// What its files may take on disk (shared with its clones): every
    /// inode created beneath it is charged here.
    account: Arc<Account>,
    /// How creations and removals are counted.
    metering: Metering,
}

/// How a run directory counts the inodes made beneath it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metering {
    /// Each inode is charged when a call really makes it (an open that
    /// creates looks first), and given back when its last name goes (a
    /// removal looks at what it removes): exact, at the cost of a lookup.
    Exact,
    /// Every call that may make a name is charged, and nothing is given
    /// back: an upper bound that adds no system call, for a trace replay,
    /// whose calls must be the recorded ones and whose account is its
    /// estimate (which counts the same way).
    UpperBound,
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if let Some(mark) = self.mark.take() {
            let _ = std::fs::remove_file(mark);
        }
    }
}

impl RunDir {
    /// Creates a fresh, uniquely named directory inside `parent`, marked
    /// with its owner (the mark is written first, so no directory is ever
    /// left unmarked), whose files are charged to `account`.
    pub fn create(parent: &Path, account: Arc<Account>) -> std::io::Result<RunDir> {
        let parent = std::fs::canonicalize(parent)?;
        let me = owner::Owner::me()?;
        for attempt in 0..100u32 {
            let name = format!("plumb-run-{}-{attempt}", std::process::id());
            let path = parent.join(&name);
            let mark = parent.join(format!("{name}{}", owner::MARK_SUFFIX));
            match me.write(&mark) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
            let made = std::fs::create_dir(&path);
            if made.is_err() {
                let _ = std::fs::remove_file(&mark);
            }
            match made {
                Ok(()) => {
                    let mut dir = RunDir::open_existing(&path)?;
                    dir.mark = Some(mark);
                    dir.account = account;
                    return Ok(dir);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other(
            "could not find a free run directory name",
        ))
    }

    /// Uses an existing directory as the root, its files charged to an
    /// unbounded account. The files held in it take descriptors of their
    /// own, so the process's limit is raised first
    /// ([`raise_descriptor_limit`]).
    pub fn open_existing(path: &Path) -> std::io::Result<RunDir> {
        raise_descriptor_limit();
        let c = cstr(path.as_os_str().as_encoded_bytes())?;
        // SAFETY: plain open of a directory.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned here.
        Ok(RunDir {
            root: unsafe { OwnedFd::from_raw_fd(fd) },
            path: path.to_path_buf(),
            mark: None,
            holds: Arc::default(),
            account: Account::unbounded(),
            metering: Metering::Exact,
        })
    }

    /// A second handle on the same directory (a duplicate of its descriptor,
    /// so it resolves beneath the very directory this one does, whatever
    /// happens to its path).
    pub fn try_clone(&self) -> std::io::Result<RunDir> {
        Ok(RunDir {
            root: self.root.try_clone()?,
            path: self.path.clone(),
            mark: None,
            holds: self.holds.clone(),
            account: self.account.clone(),
            metering: self.metering,
        })
    }

    /// A second handle on the same directory ([`RunDir::try_clone`]) whose
    /// creations are charged to `account`, counted as `metering` says.
    pub fn metered(&self, account: Arc<Account>, metering: Metering) -> std::io::Result<RunDir> {
        let mut dir = self.try_clone()?;
        dir.account = account;
        dir.metering = metering;
        Ok(dir)
    }

    /// The directory's absolute path (for messages and statistics; files are
    /// never reopened through it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Deletes the whole run directory (symlinks inside are removed, never followed).
    pub fn delete(mut self) -> std::io::Result<()> {
        let path = self.path.clone();
        let mark = self.mark.take();
        drop(self);
        let removed = std::fs::remove_dir_all(path);
        // The mark goes only once the directory is gone, so a failed removal
        // is still cleaned by a later run.
        if let Some(mark) = mark.filter(|_| removed.is_ok()) {
            let _ = std::fs::remove_file(mark);
        }
        removed
    }

    /// The account this directory's files are charged to.
    pub fn account(&self) -> &Arc<Account> {
        &self.account
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsFd, AsRawFd};

    fn tmp() -> (tempfile::TempDir, RunDir) {
        let t = tempfile::tempdir().unwrap();
        let rd = RunDir::create(t.path(), Account::unbounded()).unwrap();
        (t, rd)
    }

    #[test]
    fn paths_stay_beneath() {
        let (t, rd) = tmp();
        std::fs::write(t.path().join("secret"), b"x").unwrap();
        std::os::unix::fs::symlink(t.path().join("secret"), rd.path().join("link-out")).unwrap();
        std::os::unix::fs::symlink("/etc", rd.path().join("etc")).unwrap();
        rd.mkdir("a").unwrap();
        for p in [
            "../secret",
            "/etc/passwd",
            "link-out",
            "etc/passwd",
            "a/../../secret",
        ] {
            let e = rd.open(p, libc::O_RDONLY, 0).unwrap_err();
            assert!(matches!(e, SandboxError::Escape { .. }), "{p}: {e}");
        }
        rd.mkdir("sub").unwrap();
        let fd = rd
            .open("sub/../inside", libc::O_CREAT | libc::O_WRONLY, 0o644)
            .unwrap();
        drop(fd);
        assert!(rd.exists("inside").unwrap());
    }

    #[test]
    fn remove_all_never_follows_symlinks() {
        let (t, rd) = tmp();
        let outside = t.path().join("keep");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("file"), b"precious").unwrap();
        rd.mkdir("d").unwrap();
        rd.mkdir("d/e").unwrap();
        drop(
            rd.open("d/e/f", libc::O_CREAT | libc::O_WRONLY, 0o644)
                .unwrap(),
        );
        std::os::unix::fs::symlink(&outside, rd.path().join("d/out")).unwrap();
        rd.remove_all("d").unwrap();
        assert!(!rd.exists("d").unwrap());
        assert_eq!(std::fs::read(outside.join("file")).unwrap(), b"precious");
    }

    #[test]
    fn remove_all_counts_the_bytes_it_freed_once_per_file() {
        let (_t, rd) = tmp();
        rd.mkdir("d").unwrap();
        std::fs::write(rd.path().join("d/a"), vec![0u8; 1000]).unwrap();
        std::fs::write(rd.path().join("d/b"), vec![0u8; 24]).unwrap();
        // A second link to a file kept outside the tree: its data stays.
        std::fs::write(rd.path().join("kept"), vec![0u8; 500]).unwrap();
        std::fs::hard_link(rd.path().join("kept"), rd.path().join("d/link")).unwrap();
        std::os::unix::fs::symlink("a", rd.path().join("d/sym")).unwrap();
        assert_eq!(rd.remove_all("d").unwrap(), 1024);
        assert_eq!(rd.remove_all("kept").unwrap(), 500);
    }

    #[test]
    fn a_held_file_frees_its_bytes_when_its_last_holder_closes() {
        let (_t, rd) = tmp();
        std::fs::write(rd.path().join("f"), vec![0u8; 1000]).unwrap();
        let held = rd.open_held("f", libc::O_RDWR, 0).unwrap();
        let clone = rd.try_clone().unwrap();
        let second = clone.hold_copy(held.as_fd()).unwrap();
        assert_eq!(rd.remove("f").unwrap(), 0, "held: nothing freed yet");
        // Written after the removal: counted when it is freed.
        // SAFETY: a valid descriptor and buffer.
        let n = unsafe { libc::pwrite(held.as_raw_fd(), [1u8; 24].as_ptr().cast(), 24, 1000) };
        assert_eq!(n, 24);
        drop(held);
        assert_eq!(rd.take_released(), 0, "a second holder keeps it");
        drop(second);
        assert_eq!(rd.take_released(), 1024);
        assert_eq!(rd.take_released(), 0, "given once");
        // Held but never removed, or removed after the close: as before.
        std::fs::write(rd.path().join("g"), vec![0u8; 10]).unwrap();
        drop(rd.open_held("g", libc::O_RDONLY, 0).unwrap());
        assert_eq!(rd.take_released(), 0);
        rd.mkdir("d").unwrap();
        std::fs::write(rd.path().join("d/h"), vec![0u8; 7]).unwrap();
        let h = rd.open_held("d/h", libc::O_RDONLY, 0).unwrap();
        assert_eq!(rd.remove("g").unwrap(), 10);
        assert_eq!(rd.remove_all("d").unwrap(), 0);
        drop(h);
        assert_eq!(rd.take_released(), 7);
    }

    #[test]
    fn rename_list_stat_remove() {
        let (_t, rd) = tmp();
        drop(rd.open("a", libc::O_CREAT | libc::O_WRONLY, 0o644).unwrap());
        rd.rename("a", "b").unwrap();
        assert_eq!(rd.list(".").unwrap(), vec!["b"]);
        assert_eq!(rd.stat("b").unwrap().size, 0);
        rd.remove("b").unwrap();
        assert!(rd.list(".").unwrap().is_empty());
        assert!(matches!(
            rd.rename("x", "../y"),
            Err(SandboxError::Io { .. }) | Err(SandboxError::Escape { .. })
        ));
    }
}
