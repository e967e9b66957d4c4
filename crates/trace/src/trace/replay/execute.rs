//! One trace operation as a system call in the run directory: the
//! descriptors the replay threads share, each thread's buffer, and what a
//! failure means for the rest of the replay.

use crate::buffer::AlignedBuf;
use crate::sandbox::{RunDir, SandboxError};
use crate::trace::budget::{Allowance, OverBudget};
use crate::trace::format::{OpKind, OpenFlags, RenameMode, Trace};
use crate::trace::halt::{Guard, Halt};
use crate::trace::layout::{contained, is_disk_full};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

/// One replay thread's own state: its I/O buffer and the descriptors it
/// has looked up (handle ids are never reused, so a cached one stays right).
#[derive(Default)]
pub(super) struct Lane {
    /// Made on the first read or write, grown up to [`LANE_BUF_MAX`].
    buf: Option<AlignedBuf>,
    cache: HashMap<u32, Arc<OwnedFd>>,
}

/// The most buffer memory one replay thread holds: longer reads and writes
/// are replayed in chunks of this size.
const LANE_BUF_MAX: u64 = 64 << 20;

impl Lane {
    /// The I/O buffer for a transfer of `len` bytes: at least `len` bytes
    /// or [`LANE_BUF_MAX`], whichever is smaller.
    fn buffer(&mut self, len: u64) -> Result<&mut AlignedBuf, OpError> {
        // At most LANE_BUF_MAX, hence a usize.
        let want = len.min(LANE_BUF_MAX) as usize;
        let buf = match self.buf.take() {
            Some(b) if b.len() >= want => b,
            _ => AlignedBuf::zeroed(want).map_err(|e| OpError::Os(e.into()))?,
        };
        Ok(self.buf.insert(buf))
    }
}

/// Reads (or writes) `len` bytes at `offset` through `buf`, in chunks of the
/// buffer's size; stops early at a short transfer, as the recorded program
/// would have seen one. Returns the bytes moved.
fn transfer(
    fd: i32,
    buf: &mut AlignedBuf,
    offset: u64,
    len: u64,
    write: bool,
) -> Result<u64, OpError> {
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        let chunk = buf.prefix_mut(n).map_err(|e| OpError::Os(e.into()))?;
        let end = offset.checked_add(done).ok_or(OpError::Offset(offset))?;
        let at = off(end)?;
        // SAFETY: pointer and length come from the same slice; valid descriptor.
        let r = check(unsafe {
            if write {
                libc::pwrite(fd, chunk.as_ptr().cast(), chunk.len(), at)
            } else {
                libc::pread(fd, chunk.as_mut_ptr().cast(), chunk.len(), at)
            }
        })?;
        done += r;
        if r < n as u64 {
            break;
        }
    }
    Ok(done)
}

/// The descriptors of the trace's open handles, by handle id, shared by
/// the replay threads.
pub(super) type Handles = Mutex<HashMap<u32, Arc<OwnedFd>>>;

/// The `open(2)` flags for the recorded ones; an implicit open (a handle
/// the trace used before it saw it opened) is read-write, created if missing.
fn open_flags(f: &OpenFlags) -> i32 {
    let mut fl = match (f.read, f.write) {
        (true, true) => libc::O_RDWR,
        (false, true) => libc::O_WRONLY,
        _ => libc::O_RDONLY,
    };
    for (on, bit) in [
        (f.create, libc::O_CREAT),
        (f.truncate, libc::O_TRUNC),
        (f.append, libc::O_APPEND),
        (f.exclusive, libc::O_EXCL),
        (f.direct, libc::O_DIRECT),
        (f.sync, libc::O_SYNC),
        (f.dsync, libc::O_DSYNC),
    ] {
        if on {
            fl |= bit;
        }
    }
    if f.directory {
        fl = libc::O_RDONLY | libc::O_DIRECTORY;
    } else if f.implicit {
        fl = libc::O_RDWR | libc::O_CREAT;
    }
    fl
}

/// Why one operation failed on replay.
#[derive(Debug, thiserror::Error)]
pub(super) enum OpError {
    /// The system call failed.
    #[error("{0}")]
    Os(std::io::Error),
    /// The sandbox refused or the OS failed a path operation.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The handle was not open when the operation came.
    #[error("handle {0} is not open")]
    NotOpen(u32),
    /// The operation names the run directory itself.
    #[error("the operation names the run directory itself")]
    RunDir,
    /// An offset does not fit the system call.
    #[error("offset {0} does not fit a file offset")]
    Offset(u64),
    /// The operation would pass the byte grant.
    #[error(transparent)]
    Budget(#[from] OverBudget),
}

impl OpError {
    /// The errno of the failure, compared with the recorded one.
    pub(super) fn errno(&self) -> Option<i32> {
        match self {
            OpError::Os(e) => e.raw_os_error(),
            OpError::Sandbox(e) => e.errno(),
            _ => None,
        }
    }

    /// The halt this failure forces on the whole replay, if any: a full
    /// disk or the byte grant (later operations would only fail too).
    pub(super) fn halt(&self, what: &str) -> Option<Halt> {
        let errno = match self {
            OpError::Os(e) => e.raw_os_error(),
            OpError::Sandbox(e) => e.errno(),
            OpError::Budget(b) => return Some(Halt::Budget(format!("{what}: {b}"))),
            _ => None,
        };
        is_disk_full(errno).then(|| Halt::DiskFull(format!("{what}: {self}")))
    }
}

/// A system call's return value as bytes moved, or the OS error.
fn check(r: isize) -> Result<u64, OpError> {
    if r < 0 {
        Err(OpError::Os(std::io::Error::last_os_error()))
    } else {
        Ok(r as u64)
    }
}

/// An offset or length as the system calls take it.
fn off(v: u64) -> Result<i64, OpError> {
    i64::try_from(v).map_err(|_| OpError::Offset(v))
}

/// Carries out trace operations in the run directory for every replay
/// thread of one client: paths through the sandbox (beneath the client's
/// directory), handles in the client's shared table, growth charged to the
/// client's share of the byte grant.
pub(super) struct Executor<'a> {
    pub(super) trace: &'a Trace,
    pub(super) dir: &'a RunDir,
    /// The client's directory (`clients/client3`), or empty: the trace's
    /// paths are relative to it.
    pub(super) prefix: &'a str,
    pub(super) handles: &'a Handles,
    pub(super) guard: &'a Guard<'a>,
    pub(super) allowance: &'a Allowance,
}

/// A POSIX byte-range lock or release with `F_SETLK`, which never waits:
/// every replay thread is one process, whose own locks never conflict, so a
/// conflict could only be another program's, and a replay must not hang on it.
fn lock(fd: RawFd, kind: i32, offset: u64, len: u64) -> Result<u64, OpError> {
    // SAFETY: a plain struct, filled in below.
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = kind as libc::c_short;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    l.l_start = off(offset)?;
    l.l_len = off(len)?;
    // SAFETY: valid descriptor and a valid flock.
    check(unsafe { libc::fcntl(fd, libc::F_SETLK, &l) } as isize).map(|_| 0)
}

impl Executor<'_> {
    /// The descriptor of a handle: from this thread's cache, else from the
    /// shared table. The cross-thread order makes every handle's open come
    /// before its uses, so a handle not there now was never opened (its
    /// open failed on replay): an error at once, never a wait.
    fn fd(&self, lane: &mut Lane, h: u32) -> Result<RawFd, OpError> {
        if let Some(fd) = lane.cache.get(&h) {
            return Ok(fd.as_raw_fd());
        }
        let shared = self
            .handles
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&h)
            .cloned();
        let fd = shared.ok_or(OpError::NotOpen(h))?;
        let raw = fd.as_raw_fd();
        lane.cache.insert(h, fd);
        Ok(raw)
    }

    /// Makes `fd` handle `h` for every replay thread.
    fn hold(&self, h: u32, fd: OwnedFd) {
        self.handles
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(h, Arc::new(fd));
    }

    /// The path of trace file `f`, made relative to the run directory
    /// (beneath the client's directory); the run directory itself is
    /// refused.
    fn path(&self, f: u32) -> Result<String, OpError> {
        let p = self.full_path(f);
        if p.is_empty() {
            return Err(OpError::RunDir);
        }
        Ok(p)
    }

    /// [`Executor::path`] for an operation that only looks (a stat, a
    /// statfs, an access, a read-only open of a directory): the run
    /// directory itself is `.`.
    fn look_path(&self, f: u32) -> String {
        let p = self.full_path(f);
        if p.is_empty() {
            ".".to_string()
        } else {
            p
        }
    }

    fn full_path(&self, f: u32) -> String {
        let p = self
            .trace
            .files
            .get(f as usize)
            .map(|e| contained(&e.path))
            .unwrap_or_default();
        match (self.prefix.is_empty(), p.is_empty()) {
            (true, _) => p,
            (false, true) => self.prefix.to_string(),
            (false, false) => format!("{}/{p}", self.prefix),
        }
    }

    /// Carries out one operation; returns the bytes moved. What may grow a
    /// file is charged to the allowance first. `failed` is the recorded
    /// outcome: a descriptor that the recording did not get is not kept.
    pub(super) fn execute(
        &self,
        kind: &OpKind,
        failed: bool,
        lane: &mut Lane,
    ) -> Result<u64, OpError> {
        self.allowance.charge(kind)?;
        match kind {
            OpKind::Open {
                handle,
                file,
                flags,
            } => {
                let looks = flags.directory && !flags.write && !flags.create && !flags.truncate;
                let path = if looks {
                    self.look_path(*file)
                } else {
                    self.path(*file)?
                };
                let fd = self.dir.open(&path, open_flags(flags), 0o644)?;
                if !failed {
                    self.hold(*handle, fd);
                }
                Ok(0)
            }
            OpKind::Dup { from, to } | OpKind::Inherit { from, to } => {
                let fd = self.fd(lane, *from)?;
                // SAFETY: valid descriptor; the new one is owned below.
                let new = check(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) } as isize)?;
                // SAFETY: a new descriptor owned here (it fits a RawFd).
                let new = unsafe { OwnedFd::from_raw_fd(new as RawFd) };
                if !failed {
                    self.hold(*to, new);
                }
                Ok(0)
            }
            OpKind::Readdir { handle, len } => {
                let fd = self.fd(lane, *handle)?;
                let buf = lane.buffer((*len).max(1))?;
                let n = (*len).clamp(1, buf.len() as u64) as usize;
                let chunk = buf.prefix_mut(n).map_err(|e| OpError::Os(e.into()))?;
                // SAFETY: the buffer and its length match; valid descriptor.
                check(unsafe {
                    libc::syscall(libc::SYS_getdents64, fd, chunk.as_mut_ptr(), chunk.len())
                } as isize)
            }
            OpKind::Fchmod { handle, mode } => {
                let fd = self.fd(lane, *handle)?;
                // SAFETY: valid descriptor.
                check(unsafe { libc::fchmod(fd, *mode) } as isize)
            }
            OpKind::Read {
                handle,
                offset,
                len,
                ..
            } => {
                let fd = self.fd(lane, *handle)?;
                transfer(fd, lane.buffer(*len)?, *offset, *len, false)
            }
            OpKind::Write {
                handle,
                offset,
                len,
                ..
            } => {
                let fd = self.fd(lane, *handle)?;
                transfer(fd, lane.buffer(*len)?, *offset, *len, true)
            }
            OpKind::Lseek { handle, offset } => {
                let fd = self.fd(lane, *handle)?;
                let at = off(*offset)?;
                // SAFETY: valid descriptor.
                check(unsafe { libc::lseek(fd, at, libc::SEEK_SET) } as isize).map(|_| 0)
            }
            OpKind::Fsync { handle: h } => {
                let fd = self.fd(lane, *h)?;
                // SAFETY: valid descriptor.
                check(unsafe { libc::fsync(fd) } as isize)
            }
            OpKind::Fdatasync { handle: h } => {
                let fd = self.fd(lane, *h)?;
                // SAFETY: valid descriptor.
                check(unsafe { libc::fdatasync(fd) } as isize)
            }
            OpKind::SyncFileRange {
                handle,
                offset,
                len,
            } => {
                let fd = self.fd(lane, *handle)?;
                let (at, n) = (off(*offset)?, off(*len)?);
                // SAFETY: valid descriptor.
                check(
                    unsafe { libc::sync_file_range(fd, at, n, libc::SYNC_FILE_RANGE_WRITE) }
                        as isize,
                )
            }
            OpKind::Ftruncate { handle, len } => {
                let fd = self.fd(lane, *handle)?;
                let n = off(*len)?;
                // SAFETY: valid descriptor.
                check(unsafe { libc::ftruncate(fd, n) } as isize)
            }
            OpKind::Fallocate {
                handle,
                offset,
                len,
            } => {
                let fd = self.fd(lane, *handle)?;
                let (at, n) = (off(*offset)?, off(*len)?);
                // SAFETY: valid descriptor.
                check(unsafe { libc::fallocate(fd, 0, at, n) } as isize)
            }
            OpKind::Close { handle: h } => {
                self.fd(lane, *h)?;
                self.handles
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(h);
                lane.cache.remove(h);
                Ok(0)
            }
            OpKind::Fstat { handle: h } => {
                let fd = self.fd(lane, *h)?;
                // SAFETY: fstat fills the zeroed struct.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                check(unsafe { libc::fstat(fd, &mut st) } as isize)
            }
            OpKind::Copy { from, to, len } => {
                let (a, b) = (self.fd(lane, *from)?, self.fd(lane, *to)?);
                let n = usize::try_from(*len).map_err(|_| OpError::Offset(*len))?;
                // SAFETY: valid descriptors; null offsets use the file positions.
                check(unsafe {
                    libc::copy_file_range(a, std::ptr::null_mut(), b, std::ptr::null_mut(), n, 0)
                })
            }
            OpKind::Stat { file: f } => Ok(self.dir.stat(&self.look_path(*f)).map(|_| 0)?),
            OpKind::Unlink { file: f } => Ok(self.dir.unlink(&self.path(*f)?).map(|_| 0)?),
            OpKind::Rmdir { file: f } => Ok(self.dir.rmdir(&self.path(*f)?).map(|_| 0)?),
            OpKind::Mkdir { file: f } => Ok(self.dir.mkdir(&self.path(*f)?).map(|_| 0)?),
            OpKind::Rename { from, to, mode } => {
                let flags = match mode {
                    RenameMode::Replace => 0,
                    RenameMode::NoReplace => libc::RENAME_NOREPLACE,
                    RenameMode::Exchange => libc::RENAME_EXCHANGE,
                };
                let (a, b) = (self.path(*from)?, self.path(*to)?);
                Ok(self.dir.rename_with(&a, &b, flags).map(|_| 0)?)
            }
            OpKind::Link { from, to } => {
                let (a, b) = (self.path(*from)?, self.path(*to)?);
                Ok(self.dir.link(&a, &b).map(|_| 0)?)
            }
            OpKind::Symlink { file, target } => {
                Ok(self.dir.symlink(target, &self.path(*file)?).map(|_| 0)?)
            }
            OpKind::Readlink { file: f } => Ok(self.dir.readlink(&self.path(*f)?).map(|_| 0)?),
            OpKind::Utimes { file: f } => Ok(self.dir.touch(&self.path(*f)?).map(|_| 0)?),
            OpKind::Chmod { file, mode } => {
                Ok(self.dir.chmod(&self.path(*file)?, *mode).map(|_| 0)?)
            }
            OpKind::Truncate { file, len } => {
                Ok(self.dir.truncate(&self.path(*file)?, *len).map(|_| 0)?)
            }
            OpKind::Access { file: f } => Ok(self.dir.access(&self.look_path(*f)).map(|_| 0)?),
            OpKind::Statfs { file: f } => Ok(self.dir.statfs(&self.look_path(*f)).map(|_| 0)?),
            OpKind::Mmap { .. } => Ok(0),
            OpKind::Lock {
                handle,
                offset,
                len,
                write,
            } => {
                let fd = self.fd(lane, *handle)?;
                let kind = if *write { libc::F_WRLCK } else { libc::F_RDLCK };
                lock(fd, kind, *offset, *len)
            }
            OpKind::Unlock {
                handle,
                offset,
                len,
            } => {
                let fd = self.fd(lane, *handle)?;
                lock(fd, libc::F_UNLCK, *offset, *len)
            }
        }
    }
}
