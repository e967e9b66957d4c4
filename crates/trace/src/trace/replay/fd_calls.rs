//! The system calls on a descriptor: transfers in chunks of the thread's
//! buffer, seeks, syncs, truncation, allocation, copies, directory reads,
//! locks (never waiting), maps (`map.rs`) and closes.

use super::execute::{Executor, Lane, OpError};
use super::map::{replay_map, MapCall};
use crate::buffer::AlignedBuf;
use crate::trace::format::OpKind;
use std::os::fd::RawFd;

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

/// A system call's return value as bytes moved, or the OS error.
pub(super) fn check(r: isize) -> Result<u64, OpError> {
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

/// The calls that take one descriptor and no buffer: seek, syncs,
/// truncation, allocation, fstat, fchmod.
fn plain_call(fd: RawFd, kind: &OpKind) -> Result<u64, OpError> {
    match kind {
        OpKind::Fchmod { mode, .. } => {
            // SAFETY: valid descriptor.
            check(unsafe { libc::fchmod(fd, *mode) } as isize)
        }
        OpKind::Lseek { offset, .. } => {
            let at = off(*offset)?;
            // SAFETY: valid descriptor.
            check(unsafe { libc::lseek(fd, at, libc::SEEK_SET) } as isize).map(|_| 0)
        }
        OpKind::Fsync { .. } => {
            // SAFETY: valid descriptor.
            check(unsafe { libc::fsync(fd) } as isize)
        }
        OpKind::Fdatasync { .. } => {
            // SAFETY: valid descriptor.
            check(unsafe { libc::fdatasync(fd) } as isize)
        }
        OpKind::SyncFileRange { offset, len, .. } => {
            let (at, n) = (off(*offset)?, off(*len)?);
            // SAFETY: valid descriptor.
            check(unsafe { libc::sync_file_range(fd, at, n, libc::SYNC_FILE_RANGE_WRITE) } as isize)
        }
        OpKind::Ftruncate { len, .. } => {
            let n = off(*len)?;
            // SAFETY: valid descriptor.
            check(unsafe { libc::ftruncate(fd, n) } as isize)
        }
        OpKind::Fallocate { offset, len, .. } => {
            let (at, n) = (off(*offset)?, off(*len)?);
            // SAFETY: valid descriptor.
            check(unsafe { libc::fallocate(fd, 0, at, n) } as isize)
        }
        OpKind::Fstat { .. } => {
            // SAFETY: fstat fills the zeroed struct.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            check(unsafe { libc::fstat(fd, &mut st) } as isize)
        }
        // Only the calls above come here.
        _ => Ok(0),
    }
}

impl Executor<'_> {
    /// Carries out an operation on a descriptor (an old `mmap` record is
    /// not replayed).
    /// `failed`: the call failed in the recording (a map is then made, to
    /// fail the same way, but not touched).
    pub(super) fn on_descriptor(
        &self,
        kind: &OpKind,
        failed: bool,
        lane: &mut Lane,
    ) -> Result<u64, OpError> {
        match kind {
            OpKind::Fchmod { handle, .. }
            | OpKind::Lseek { handle, .. }
            | OpKind::Fsync { handle }
            | OpKind::Fdatasync { handle }
            | OpKind::SyncFileRange { handle, .. }
            | OpKind::Ftruncate { handle, .. }
            | OpKind::Fallocate { handle, .. }
            | OpKind::Fstat { handle } => plain_call(self.fd(lane, *handle)?, kind),
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
            OpKind::Close { handle: h } => {
                self.fd(lane, *h)?;
                self.handles
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(h);
                lane.cache.remove(h);
                Ok(0)
            }
            OpKind::Copy { from, to, len } => {
                let (a, b) = (self.fd(lane, *from)?, self.fd(lane, *to)?);
                let n = usize::try_from(*len).map_err(|_| OpError::Offset(*len))?;
                // SAFETY: valid descriptors; null offsets use the file positions.
                check(unsafe {
                    libc::copy_file_range(a, std::ptr::null_mut(), b, std::ptr::null_mut(), n, 0)
                })
            }
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
            OpKind::Map {
                handle,
                offset,
                len,
                write,
            } => {
                let call = MapCall {
                    fd: self.fd(lane, *handle)?,
                    offset: *offset,
                    len: *len,
                    write: *write,
                    failed,
                };
                replay_map(call, self.guard)
            }
            // An old `mmap` record is noted, not replayed; only the
            // operations on a descriptor come here (`execute` carries out
            // the others).
            _ => Ok(0),
        }
    }
}
