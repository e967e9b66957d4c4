//! A recorded `mmap(2)` of a file, replayed: the same range mapped the same
//! way, each of its pages that the file holds touched once — read, or
//! written for a shared writable map, whose pages then reach the file as
//! the program's stores would — and unmapped. That is an upper bound of what
//! the program did through the map: it may have touched fewer pages, and
//! its loads, stores, `msync` and `munmap` are not traced.
//!
//! Pages are touched with `madvise(MADV_POPULATE_READ|WRITE)` (Linux 5.14),
//! which fails with `EFAULT` where a plain load would raise `SIGBUS` (a
//! page past the file's end, a file another thread cut short), so no trace
//! can kill the replay; on an older kernel the range is read with `pread`
//! instead (into the page cache: a write map's pages are then not dirtied).
//! The range is mapped in windows of at most [`WINDOW`] bytes, so a replay
//! thread never holds more than that mapped, and the stop flag and the
//! deadline are polled between windows.

use super::execute::{Lane, OpError};
use super::fd_calls::{check, transfer};
use crate::trace::halt::Guard;
use std::os::fd::RawFd;

/// The most bytes of a map a replay thread holds mapped at once.
pub(super) const WINDOW: u64 = 8 << 20;

/// How a map is touched.
#[derive(Debug, Clone, Copy)]
pub(super) struct MapCall {
    /// The descriptor mapped.
    pub(super) fd: RawFd,
    /// First byte of the range (the recorded offset).
    pub(super) offset: u64,
    /// Bytes mapped.
    pub(super) len: u64,
    /// A shared writable map (else read-only and private).
    pub(super) write: bool,
}

/// One mapped window, unmapped when dropped.
struct Mapping {
    at: *mut libc::c_void,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `fd` from `offset` as `call` says; the error is
    /// the kernel's, as the program would have met it.
    fn new(call: &MapCall, offset: u64, len: u64) -> Result<Mapping, OpError> {
        let (prot, flags) = if call.write {
            (libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED)
        } else {
            (libc::PROT_READ, libc::MAP_PRIVATE)
        };
        let len = usize::try_from(len).map_err(|_| OpError::Offset(len))?;
        let at = i64::try_from(offset).map_err(|_| OpError::Offset(offset))?;
        // SAFETY: a new mapping at an address the kernel chooses; nothing
        // else refers to it until it is unmapped in `drop`.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, call.fd, at) };
        if p == libc::MAP_FAILED {
            return Err(OpError::Os(std::io::Error::last_os_error()));
        }
        Ok(Mapping { at: p, len })
    }

    /// Touches the first `len` bytes, page by page in the kernel.
    fn populate(&self, len: usize, write: bool) -> Result<Populated, OpError> {
        let advice = if write {
            libc::MADV_POPULATE_WRITE
        } else {
            libc::MADV_POPULATE_READ
        };
        // SAFETY: the range lies within this mapping.
        let r = unsafe { libc::madvise(self.at, len.min(self.len), advice) };
        if r == 0 {
            return Ok(Populated::All);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EFAULT) => Ok(Populated::FileEnded),
            Some(libc::EINVAL) => Ok(Populated::Unsupported),
            _ => Err(OpError::Os(e)),
        }
    }
}

/// What touching a window did.
enum Populated {
    /// Every page was touched.
    All,
    /// The file ended within the window (another thread cut it short): the
    /// pages before were touched, there are none after.
    FileEnded,
    /// The kernel cannot populate a mapping (before Linux 5.14).
    Unsupported,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.at, self.len) };
    }
}

/// The size of the file behind `fd`.
fn file_size(fd: RawFd) -> Result<u64, OpError> {
    // SAFETY: fstat fills the zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstat(fd, &mut st) } as isize)?;
    Ok(st.st_size.max(0) as u64)
}

/// Replays a map: the first window is mapped with the recorded offset and
/// length (so a call that failed in the recording fails the same way),
/// then every window of the range that the file holds is touched, each
/// mapped in turn. Returns the bytes touched. Stops early, with what it
/// touched, when the replay halts.
pub(super) fn replay_map(call: MapCall, guard: &Guard, lane: &mut Lane) -> Result<u64, OpError> {
    let mut window = Some(Mapping::new(&call, call.offset, call.len.min(WINDOW))?);
    let end = call
        .offset
        .saturating_add(call.len)
        .min(file_size(call.fd)?);
    let mut at = call.offset;
    while at < end && !guard.halted() {
        let n = (end - at).min(WINDOW);
        let m = match window.take() {
            Some(m) => m,
            None => Mapping::new(&call, at, n)?,
        };
        // At most WINDOW bytes, hence a usize.
        match m.populate(n as usize, call.write)? {
            Populated::All => at += n,
            Populated::FileEnded => break,
            Populated::Unsupported => {
                drop(m);
                return Ok(
                    (at - call.offset).saturating_add(read_through(&call, at, end, guard, lane)?)
                );
            }
        }
    }
    Ok(at - call.offset)
}

/// Reads `at..end` of the file with `pread`, a window at a time (where the
/// kernel cannot populate a mapping): the bytes read.
fn read_through(
    call: &MapCall,
    mut at: u64,
    end: u64,
    guard: &Guard,
    lane: &mut Lane,
) -> Result<u64, OpError> {
    let start = at;
    while at < end && !guard.halted() {
        let n = (end - at).min(WINDOW);
        let got = transfer(call.fd, lane.buffer(n)?, at, n, false)?;
        at += got;
        if got < n {
            break;
        }
    }
    Ok(at - start)
}
