//! The sandbox's file side: a run directory that every scenario path is
//! resolved beneath, race-free, with `openat2(RESOLVE_BENEATH)`.
//!
//! `..` that climbs out, absolute paths and symlinks that lead out all fail
//! with [`SandboxError::Escape`]; operations on a final path component
//! (`unlinkat`, `renameat`, `mkdirat`, `fstatat`) never follow symlinks.

mod account;
mod holds;
mod owner;

pub use account::{
    default_inodes, entry_bytes, Account, OverBudget, Unit, DEFAULT_MAX_INODES, INODE_BYTES,
};
pub use holds::{raise_descriptor_limit, Held, Inode};
pub use owner::sweep_stale;

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_BENEATH: u64 = 0x08;

/// The kernel's `struct open_how`.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

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

    /// Opens `rel` beneath the run directory with `open(2)` flags. With
    /// `O_CREAT`, a file this call creates is charged to the account
    /// ([`RunDir::charge_new`]) before it exists.
    pub fn open(&self, rel: &str, flags: i32, mode: u32) -> Result<OwnedFd, SandboxError> {
        let root = self.root.as_raw_fd();
        if flags & libc::O_CREAT == 0 {
            return self.open_beneath(root, rel, flags, mode, "open");
        }
        if flags & libc::O_EXCL != 0 || self.metering == Metering::UpperBound {
            let charged = self.charge_new("open", rel)?;
            return self
                .open_beneath(root, rel, flags, mode, "open")
                .inspect_err(|_| self.account.refund(charged, 1));
        }
        // An existing file costs nothing: open it as it is, and charge only
        // when this call is the one that creates it.
        match self.open_beneath(root, rel, flags & !libc::O_CREAT, mode, "open") {
            Err(e) if e.errno() == Some(libc::ENOENT) => {}
            done => return done,
        }
        let charged = self.charge_new("open", rel)?;
        match self.open_beneath(root, rel, flags | libc::O_EXCL, mode, "open") {
            Ok(fd) => Ok(fd),
            // Made meanwhile by someone else, or a dangling symlink beneath:
            // open as asked, keeping the charge (at most one inode too many).
            Err(e) if e.errno() == Some(libc::EEXIST) => self
                .open_beneath(root, rel, flags, mode, "open")
                .inspect_err(|_| self.account.refund(charged, 1)),
            Err(e) => {
                self.account.refund(charged, 1);
                Err(e)
            }
        }
    }

    /// Charges one new inode named by `rel`'s last component: the inode,
    /// its block and its directory entry ([`account`]). Returns the bytes
    /// charged, to refund if the creation fails.
    fn charge_new(&self, op: &'static str, rel: &str) -> Result<u64, SandboxError> {
        let bytes = INODE_BYTES + account::entry_bytes(last_name(rel).as_bytes());
        self.account
            .charge(op, bytes, 1)
            .map(|()| bytes)
            .map_err(|source| SandboxError::Budget {
                path: rel.to_string(),
                source,
            })
    }

    /// Gives back the inode a removed name `st` described, when it was the
    /// last name (or a directory): its block and the inode itself.
    fn refund_removed(&self, st: &Stat) {
        if self.metering == Metering::Exact && (st.is_dir || st.links <= 1) {
            self.account.refund(INODE_BYTES, 1);
        }
    }

    /// The account this directory's files are charged to.
    pub fn account(&self) -> &Arc<Account> {
        &self.account
    }

    /// Opens `rel` as [`RunDir::open`] does, for a descriptor kept past the
    /// call (a handle, a background job's or copy's file): while it is
    /// open, removing the file frees nothing ([`RunDir::remove`]); its
    /// bytes are released when it closes ([`RunDir::take_released`]).
    pub fn open_held(&self, rel: &str, flags: i32, mode: u32) -> Result<Held, SandboxError> {
        let fd = self.open(rel, flags, mode)?;
        self.holds.hold(fd).map_err(|e| io(e, "open", rel))
    }

    /// Holds a duplicate of `fd`, a file opened beneath this directory, as
    /// [`RunDir::open_held`] would: the file stays counted as open (and its
    /// inode allocated) until the returned [`Held`] is dropped.
    pub fn hold_copy(&self, fd: BorrowedFd<'_>) -> std::io::Result<Held> {
        self.holds.hold(fd.try_clone_to_owned()?)
    }

    /// True when more than one descriptor holds `inode` (see
    /// [`holds::Holds::shared`]): truncating it then refunds nothing.
    pub fn shared(&self, inode: Inode) -> bool {
        self.holds.shared(inode)
    }

    /// Bytes freed since the last call by the closing of held files whose
    /// names were removed while they were open (for the byte budget).
    pub fn take_released(&self) -> u64 {
        self.holds.take_released()
    }

    fn open_beneath(
        &self,
        dir: RawFd,
        rel: &str,
        flags: i32,
        mode: u32,
        op: &'static str,
    ) -> Result<OwnedFd, SandboxError> {
        let c = check(rel)?;
        loop {
            let e = match openat2(
                dir,
                &c,
                flags,
                mode,
                RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
            ) {
                Ok(fd) => return Ok(fd),
                Err(e) => e,
            };
            return Err(match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => continue,
                Some(libc::EXDEV) | Some(libc::ELOOP) => SandboxError::Escape {
                    path: rel.to_string(),
                },
                _ => SandboxError::Io {
                    op,
                    path: rel.to_string(),
                    source: e,
                },
            });
        }
    }

    /// The directory holding `rel` (opened beneath the root) and its last component.
    fn parent_of(&self, rel: &str) -> Result<(OwnedFd, CString), SandboxError> {
        check(rel)?;
        let trimmed = rel.trim_end_matches('/');
        let (parent, name) = match trimmed.rsplit_once('/') {
            Some((p, n)) => (if p.is_empty() { "/" } else { p }, n),
            None => (".", trimmed),
        };
        if name.is_empty() || name == "." || name == ".." {
            return Err(SandboxError::BadPath {
                path: rel.to_string(),
                why: "it must end in a file or directory name",
            });
        }
        let dir = self.open_beneath(
            self.root.as_raw_fd(),
            parent,
            libc::O_PATH | libc::O_DIRECTORY,
            0,
            "open",
        )?;
        Ok((
            dir,
            cstr(name.as_bytes()).map_err(|_| bad(rel, "it contains a NUL byte"))?,
        ))
    }

    /// Creates a directory (charged as a new inode).
    pub fn mkdir(&self, rel: &str) -> Result<(), SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        let charged = self.charge_new("mkdir", rel)?;
        // SAFETY: valid descriptor and C string.
        let r = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) };
        os(r, "mkdir", rel).inspect_err(|_| self.account.refund(charged, 1))
    }

    /// Removes a file or an empty directory (a symlink is removed, not
    /// followed). Returns the bytes that freed: a regular file's size when
    /// this was its last name and no held descriptor keeps it open (then
    /// they are released when the last one closes).
    pub fn remove(&self, rel: &str) -> Result<u64, SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        let st = fstatat(dir.as_raw_fd(), &name).map_err(|e| io(e, "remove", rel))?;
        let flag = if st.is_dir { libc::AT_REMOVEDIR } else { 0 };
        // SAFETY: valid descriptor and C string.
        let r = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flag) };
        os(r, "remove", rel)?;
        self.refund_removed(&st);
        Ok(self.holds.removed(&st))
    }

    /// Removes a file or symlink, as `unlink(2)` (a directory is refused
    /// by the kernel, not here); the inode goes back to the account when
    /// this was its last name.
    pub fn unlink(&self, rel: &str) -> Result<(), SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        let st = match self.metering {
            Metering::Exact => fstatat(dir.as_raw_fd(), &name).ok(),
            Metering::UpperBound => None,
        };
        // SAFETY: valid descriptor and C string.
        let r = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
        os(r, "unlink", rel)?;
        if let Some(st) = st {
            self.refund_removed(&st);
        }
        Ok(())
    }

    /// Removes an empty directory (its inode goes back to the account).
    pub fn rmdir(&self, rel: &str) -> Result<(), SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        // SAFETY: valid descriptor and C string.
        let r = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) };
        os(r, "rmdir", rel)?;
        if self.metering == Metering::Exact {
            self.account.refund(INODE_BYTES, 1);
        }
        Ok(())
    }

    /// `renameat2(2)` within the run directory, with its flags
    /// (`RENAME_NOREPLACE`, `RENAME_EXCHANGE` or 0). A target replaced by
    /// the rename gives its inode back when that was its last name (the
    /// moved name's entry is not charged again: the old one's space is
    /// free for it).
    pub fn rename_with(&self, from: &str, to: &str, flags: u32) -> Result<(), SandboxError> {
        let (fd_a, a) = self.parent_of(from)?;
        let (fd_b, b) = self.parent_of(to)?;
        let replaced =
            if flags & libc::RENAME_EXCHANGE != 0 || self.metering == Metering::UpperBound {
                None
            } else {
                let source = fstatat(fd_a.as_raw_fd(), &a).ok();
                fstatat(fd_b.as_raw_fd(), &b)
                    .ok()
                    .filter(|t| source.is_some_and(|s| s.inode != t.inode))
            };
        // SAFETY: valid descriptors and C strings.
        let r = unsafe {
            libc::renameat2(
                fd_a.as_raw_fd(),
                a.as_ptr(),
                fd_b.as_raw_fd(),
                b.as_ptr(),
                flags,
            )
        };
        os(r, "rename", from)?;
        if let Some(t) = replaced {
            self.refund_removed(&t);
        }
        Ok(())
    }

    /// A hard link `to` for the file at `from` (a final symlink is linked
    /// itself, not followed).
    pub fn link(&self, from: &str, to: &str) -> Result<(), SandboxError> {
        let (fd_a, a) = self.parent_of(from)?;
        let (fd_b, b) = self.parent_of(to)?;
        let entry = account::entry_bytes(b.as_bytes());
        self.account
            .charge_bytes("link", entry)
            .map_err(|source| SandboxError::Budget {
                path: to.to_string(),
                source,
            })?;
        // SAFETY: valid descriptors and C strings.
        let r = unsafe {
            libc::linkat(
                fd_a.as_raw_fd(),
                a.as_ptr(),
                fd_b.as_raw_fd(),
                b.as_ptr(),
                0,
            )
        };
        os(r, "link", to).inspect_err(|_| self.account.refund(entry, 0))
    }

    /// A symlink at `rel` holding `target` verbatim (absolute, climbing or
    /// not): making a link follows nothing, and every later resolution
    /// through it stays beneath the run directory ([`SandboxError::Escape`]).
    pub fn symlink(&self, target: &str, rel: &str) -> Result<(), SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        let t = cstr(target.as_bytes()).map_err(|_| bad(target, "it contains a NUL byte"))?;
        let charged = self.charge_new("symlink", rel)?;
        // SAFETY: valid descriptor and C strings.
        let r = unsafe { libc::symlinkat(t.as_ptr(), dir.as_raw_fd(), name.as_ptr()) };
        os(r, "symlink", rel).inspect_err(|_| self.account.refund(charged, 1))
    }

    /// What the symlink at `rel` holds (never followed).
    pub fn readlink(&self, rel: &str) -> Result<String, SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        let mut buf = vec![0u8; libc::PATH_MAX as usize];
        // SAFETY: the buffer and its length match; valid descriptor and C string.
        let n = unsafe {
            libc::readlinkat(
                dir.as_raw_fd(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(io(std::io::Error::last_os_error(), "readlink", rel));
        }
        buf.truncate(n as usize);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// Sets the access and modification times of `rel` to now (a final
    /// symlink is changed itself, not followed).
    pub fn touch(&self, rel: &str) -> Result<(), SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        // SAFETY: valid descriptor and C string; null times mean now.
        let r = unsafe {
            libc::utimensat(
                dir.as_raw_fd(),
                name.as_ptr(),
                std::ptr::null(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        os(r, "utimes", rel)
    }

    /// A path-taking call on what `rel` names (symlinks followed, but only
    /// beneath the run directory): `f` gets `/proc/self/fd/N` for it.
    fn through_path(
        &self,
        rel: &str,
        op: &'static str,
        f: impl FnOnce(&CStr, RawFd) -> i32,
    ) -> Result<(), SandboxError> {
        let fd = self.open_beneath(self.root.as_raw_fd(), rel, libc::O_PATH, 0, op)?;
        let proc_path = cstr(format!("/proc/self/fd/{}", fd.as_raw_fd()).as_bytes())
            .map_err(|e| io(e, op, rel))?;
        os(f(&proc_path, fd.as_raw_fd()), op, rel)
    }

    /// `chmod(2)` of `rel`.
    pub fn chmod(&self, rel: &str, mode: u32) -> Result<(), SandboxError> {
        // SAFETY: a valid C string.
        self.through_path(rel, "chmod", |p, _| unsafe {
            libc::chmod(p.as_ptr(), mode)
        })
    }

    /// `truncate(2)` of `rel` to `len` bytes.
    pub fn truncate(&self, rel: &str, len: u64) -> Result<(), SandboxError> {
        let len =
            i64::try_from(len).map_err(|_| bad(rel, "the length does not fit a file size"))?;
        // SAFETY: a valid C string.
        self.through_path(rel, "truncate", |p, _| unsafe {
            libc::truncate(p.as_ptr(), len)
        })
    }

    /// `access(2)` of `rel`: does it exist (following symlinks beneath).
    pub fn access(&self, rel: &str) -> Result<(), SandboxError> {
        // SAFETY: a valid C string.
        self.through_path(rel, "access", |p, _| unsafe {
            libc::access(p.as_ptr(), libc::F_OK)
        })
    }

    /// `statfs(2)` of the file system holding `rel`.
    pub fn statfs(&self, rel: &str) -> Result<(), SandboxError> {
        self.through_path(rel, "statfs", |_, fd| {
            // SAFETY: fstatfs fills the zeroed struct; valid descriptor.
            let mut st: libc::statfs = unsafe { std::mem::zeroed() };
            unsafe { libc::fstatfs(fd, &mut st) }
        })
    }

    /// Removes a directory tree (never following symlinks), or a single
    /// file, and returns the bytes that freed (what [`RunDir::remove`]
    /// would say, summed over what was removed). An error part way comes
    /// with the bytes freed before it, so the caller can still give them
    /// back.
    pub fn remove_all(&self, rel: &str) -> Result<u64, (SandboxError, u64)> {
        let (dir, name) = self.parent_of(rel).map_err(|e| (e, 0))?;
        let mut freed = 0u64;
        let mut count = |st: &Stat| {
            self.refund_removed(st);
            freed = freed.saturating_add(self.holds.removed(st));
        };
        remove_tree(dir.as_raw_fd(), &name, &mut count)
            .map(|()| freed)
            .map_err(|e| (io(e, "remove_all", rel), freed))
    }

    /// Renames within the run directory (replacing the target, like rename(2)).
    pub fn rename(&self, from: &str, to: &str) -> Result<(), SandboxError> {
        self.rename_with(from, to, 0)
    }

    /// Metadata of a path (not following a final symlink).
    pub fn stat(&self, rel: &str) -> Result<Stat, SandboxError> {
        if rel.trim_end_matches('/').is_empty() || rel == "." {
            return fstat(self.root.as_raw_fd()).map_err(|e| io(e, "stat", rel));
        }
        let (dir, name) = self.parent_of(rel)?;
        fstatat(dir.as_raw_fd(), &name).map_err(|e| io(e, "stat", rel))
    }

    /// True when the path exists inside the run directory.
    pub fn exists(&self, rel: &str) -> Result<bool, SandboxError> {
        match self.stat(rel) {
            Ok(_) => Ok(true),
            Err(e) if e.errno() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Names in a directory, sorted.
    pub fn list(&self, rel: &str) -> Result<Vec<String>, SandboxError> {
        let fd = self.open_beneath(
            self.root.as_raw_fd(),
            rel,
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
            "list",
        )?;
        let mut names = read_dir_fd(fd.as_raw_fd()).map_err(|e| io(e, "list", rel))?;
        names.sort();
        Ok(names)
    }
}

/// `openat2(2)` of `rel` beneath `dir` with the given `RESOLVE_*` flags
/// (`O_CLOEXEC` always added).
fn openat2(
    dir: RawFd,
    rel: &CStr,
    flags: i32,
    mode: u32,
    resolve: u64,
) -> std::io::Result<OwnedFd> {
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: if flags & libc::O_CREAT != 0 {
            mode as u64
        } else {
            0
        },
        resolve,
    };
    // SAFETY: `how` and `rel` outlive the call; the size matches the struct.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            rel.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Why a file of a folder (a pack) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A symlink on the way, or a name leading out of the folder.
    #[error("it must be a file inside the folder, reached without symlinks")]
    NotBeneath,
    /// Not a regular file (a FIFO, a device, a directory).
    #[error("it is not a regular file")]
    NotRegular,
    /// Bigger than the bound.
    #[error("it is larger than the limit of {limit} bytes")]
    TooBig {
        /// The bound in bytes.
        limit: u64,
    },
    /// The operating system refused.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads the regular file `rel` inside the directory `dir` — never through
/// a symlink (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), never blocking on a
/// FIFO, and at most `limit` bytes (checked before reading, and while reading).
pub fn read_beneath(dir: &Path, rel: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let root = std::fs::File::open(dir)?;
    let c = cstr(rel.as_bytes())?;
    let fd = loop {
        match openat2(
            root.as_raw_fd(),
            &c,
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
            0,
            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        ) {
            Ok(fd) => break fd,
            Err(e) => match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => continue,
                Some(libc::EXDEV) | Some(libc::ELOOP) => return Err(ReadError::NotBeneath),
                _ => return Err(e.into()),
            },
        }
    };
    let file = std::fs::File::from(fd);
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular);
    }
    if meta.len() > limit {
        return Err(ReadError::TooBig { limit });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooBig { limit });
    }
    Ok(bytes)
}

/// The last component of `rel` (what names the inode in its directory).
fn last_name(rel: &str) -> &str {
    let trimmed = rel.trim_end_matches('/');
    trimmed.rsplit_once('/').map_or(trimmed, |(_, n)| n)
}

fn bad(rel: &str, why: &'static str) -> SandboxError {
    SandboxError::BadPath {
        path: rel.to_string(),
        why,
    }
}

fn io(source: std::io::Error, op: &'static str, rel: &str) -> SandboxError {
    SandboxError::Io {
        op,
        path: rel.to_string(),
        source,
    }
}

fn os(r: i32, op: &'static str, rel: &str) -> Result<(), SandboxError> {
    if r == 0 {
        Ok(())
    } else {
        Err(io(std::io::Error::last_os_error(), op, rel))
    }
}

fn cstr(bytes: &[u8]) -> std::io::Result<CString> {
    CString::new(bytes).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

/// True when `target`, read from the directory of the link at `link`, names
/// a place inside the run directory (never absolute, never above the root).
pub fn target_stays_inside(link: &str, target: &str) -> bool {
    if target.is_empty() || target.starts_with('/') {
        return false;
    }
    let mut depth: i64 = link
        .trim_end_matches('/')
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .count() as i64
        - 1;
    for c in target.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => depth += 1,
        }
    }
    true
}

/// Rejects what is never a valid scenario path; escapes are left to openat2.
fn check(rel: &str) -> Result<CString, SandboxError> {
    if rel.is_empty() {
        return Err(bad(rel, "it is empty"));
    }
    if rel.starts_with('/') {
        return Err(SandboxError::Escape {
            path: rel.to_string(),
        });
    }
    cstr(rel.as_bytes()).map_err(|_| bad(rel, "it contains a NUL byte"))
}

fn stat_of(st: &libc::stat) -> Stat {
    let kind = st.st_mode & libc::S_IFMT;
    Stat {
        size: st.st_size as u64,
        is_dir: kind == libc::S_IFDIR,
        is_symlink: kind == libc::S_IFLNK,
        mtime: st.st_mtime,
        links: st.st_nlink,
        inode: Inode {
            dev: st.st_dev,
            ino: st.st_ino,
        },
    }
}

fn fstatat(dir: RawFd, name: &CStr) -> std::io::Result<Stat> {
    // SAFETY: fstatat fills the zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stat_of(&st))
}

fn fstat(fd: RawFd) -> std::io::Result<Stat> {
    // SAFETY: fstat fills the zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stat_of(&st))
}

/// Entry names of an open directory (without `.` and `..`).
fn read_dir_fd(fd: RawFd) -> std::io::Result<Vec<String>> {
    // SAFETY: fdopendir takes ownership of a duplicate; closedir releases it.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let dirp = unsafe { libc::fdopendir(dup) };
    if dirp.is_null() {
        let e = std::io::Error::last_os_error();
        unsafe { libc::close(dup) };
        return Err(e);
    }
    unsafe { libc::rewinddir(dirp) };
    let mut names = Vec::new();
    loop {
        // SAFETY: readdir returns entries owned by `dirp` until the next call.
        let ent = unsafe { libc::readdir(dirp) };
        if ent.is_null() {
            break;
        }
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        if name != "." && name != ".." {
            names.push(name);
        }
    }
    unsafe { libc::closedir(dirp) };
    Ok(names)
}

/// Removes `name` in `dir`: a file or symlink directly, a directory depth
/// first; `removed` is told of each file or symlink removed, as it was.
fn remove_tree(dir: RawFd, name: &CStr, removed: &mut dyn FnMut(&Stat)) -> std::io::Result<()> {
    let st = fstatat(dir, name)?;
    if st.is_dir {
        // SAFETY: opens the subdirectory relative to `dir` without following symlinks.
        let fd = unsafe {
            libc::openat(
                dir,
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a new descriptor owned here.
        let sub = unsafe { OwnedFd::from_raw_fd(fd) };
        for child in read_dir_fd(sub.as_raw_fd())? {
            remove_tree(sub.as_raw_fd(), &cstr(child.as_bytes())?, removed)?;
        }
        // SAFETY: valid descriptor and C string.
        if unsafe { libc::unlinkat(dir, name.as_ptr(), libc::AT_REMOVEDIR) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        removed(&st);
    } else if unsafe { libc::unlinkat(dir, name.as_ptr(), 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    } else {
        removed(&st);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

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
