//! One trace operation as a system call in the run directory: the
//! descriptors the replay threads share, each thread's buffer, and what a
//! failure means for the rest of the replay. Opens, dups and the calls on
//! paths are here; the calls on a descriptor are `fd_calls.rs`'s.

use super::fd_calls::check;
use crate::buffer::AlignedBuf;
use crate::sandbox::{RunDir, SandboxError};
use crate::trace::budget::{Allowance, Growth, OverBudget};
use crate::trace::format::{OpKind, OpenFlags, RenameMode, Trace};
use crate::trace::halt::{Guard, Halt};
use crate::trace::layout::{contained, is_disk_full};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

/// One replay thread's own state: its I/O buffer and the descriptors it
/// has looked up (handle ids are never reused, so a cached one stays right
/// until some thread closes it).
#[derive(Default)]
pub(super) struct Lane {
    /// Made on the first read or write, grown up to [`LANE_BUF_MAX`].
    buf: Option<AlignedBuf>,
    pub(super) cache: HashMap<u32, Arc<OwnedFd>>,
    /// The cache's size at which handles other threads have closed are
    /// dropped from it (so it holds about the open ones, not every one
    /// ever used).
    prune_at: usize,
}

/// The smallest cache a lane prunes.
const PRUNE_FROM: usize = 256;

/// The most buffer memory one replay thread holds: longer reads and writes
/// are replayed in chunks of this size.
const LANE_BUF_MAX: u64 = 64 << 20;

impl Lane {
    /// The I/O buffer for a transfer of `len` bytes: at least `len` bytes
    /// or [`LANE_BUF_MAX`], whichever is smaller.
    pub(super) fn buffer(&mut self, len: u64) -> Result<&mut AlignedBuf, OpError> {
        // At most LANE_BUF_MAX, hence a usize.
        let want = len.min(LANE_BUF_MAX) as usize;
        let buf = match self.buf.take() {
            Some(b) if b.len() >= want => b,
            _ => AlignedBuf::zeroed(want).map_err(|e| OpError::Os(e.into()))?,
        };
        Ok(self.buf.insert(buf))
    }
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
    /// A map cannot be replayed here: the kernel cannot populate a mapping
    /// (before Linux 5.14). It is noted, not counted.
    #[error(
        "this kernel cannot populate a mapping (Linux 5.14 can): the map is noted, not replayed"
    )]
    MapsUnsupported,
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

impl Executor<'_> {
    /// The descriptor of a handle: from this thread's cache, else from the
    /// shared table. The cross-thread order makes every handle's open come
    /// before its uses, so a handle not there now was never opened (its
    /// open failed on replay): an error at once, never a wait.
    pub(super) fn fd(&self, lane: &mut Lane, h: u32) -> Result<RawFd, OpError> {
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
        if lane.cache.len() > lane.prune_at.max(PRUNE_FROM) {
            let open = self.handles.lock().unwrap_or_else(|p| p.into_inner());
            lane.cache.retain(|h, _| open.contains_key(h));
            lane.prune_at = lane.cache.len().saturating_mul(2);
        }
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

    /// Carries out one operation; returns the bytes moved. What it may
    /// grow (`growth`) is charged to the allowance first. `failed` is the
    /// recorded outcome: a descriptor that the recording did not get is
    /// not kept.
    pub(super) fn execute(
        &self,
        kind: &OpKind,
        failed: bool,
        growth: Option<Growth>,
        lane: &mut Lane,
    ) -> Result<u64, OpError> {
        self.allowance.charge(growth)?;
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
            OpKind::Read { .. }
            | OpKind::Write { .. }
            | OpKind::Lseek { .. }
            | OpKind::Fsync { .. }
            | OpKind::Fdatasync { .. }
            | OpKind::SyncFileRange { .. }
            | OpKind::Ftruncate { .. }
            | OpKind::Fallocate { .. }
            | OpKind::Close { .. }
            | OpKind::Fstat { .. }
            | OpKind::Mmap { .. }
            | OpKind::Map { .. }
            | OpKind::Copy { .. }
            | OpKind::Readdir { .. }
            | OpKind::Fchmod { .. }
            | OpKind::Lock { .. }
            | OpKind::Unlock { .. } => self.on_descriptor(kind, failed, lane),
        }
    }
}
