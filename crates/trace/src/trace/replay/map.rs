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
//! can kill the replay, and that failure is how the replay finds the
//! file's end without a call the program did not make; on an older kernel the range is read with `pread`
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

impl Mapping {
    /// Bytes from the start of the mapping whose pages are in memory: after
    /// a populate that met the file's end, the pages before it.
    fn resident_prefix(&self) -> Result<u64, OpError> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
        let mut flags = vec![0u8; self.len.div_ceil(page)];
        // SAFETY: one byte per page of this mapping.
        check(unsafe { libc::mincore(self.at, self.len, flags.as_mut_ptr()) } as isize)?;
        let pages = flags.iter().take_while(|f| **f & 1 == 1).count();
        Ok((pages * page) as u64)
    }
}

/// What touching a window did.
enum Populated {
    /// Every page was touched.
    All,
    /// The file ended within the window (or another thread cut it short):
    /// the pages before its end were touched, there are none after.
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

/// Replays a map: the first window is mapped with the recorded offset and
/// length (so a call that failed in the recording fails the same way),
/// then the range is touched a window at a time, each mapped in turn,
/// until its end or the file's. Returns the bytes touched. Stops early,
/// with what it touched, when the replay halts. The replay makes no call
/// the program did not (no `fstat` for the file's size): the file's end
/// is where touching a page fails.
pub(super) fn replay_map(call: MapCall, guard: &Guard, lane: &mut Lane) -> Result<u64, OpError> {
    let mut window = Some(Mapping::new(&call, call.offset, call.len.min(WINDOW))?);
    let end = call.offset.saturating_add(call.len);
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
            Populated::FileEnded => {
                at += m.resident_prefix()?.min(n);
                break;
            }
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
