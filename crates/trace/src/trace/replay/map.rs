//! A recorded `mmap(2)` of a file, replayed: one `mmap` with the recorded
//! offset, length and kind (so a map that failed in the recording fails the
//! same way, and one that succeeded makes the same call), each of its pages
//! that the file holds touched once — read, or written for a shared
//! writable map, whose pages then reach the file as the program's stores
//! would — and one `munmap`. That is an upper bound of what the program did
//! through the map: it may have touched fewer pages, and its loads, stores,
//! `msync` and `munmap` are not traced. No call on the file is made that the
//! program did not make.
//!
//! Pages are touched with `madvise(MADV_POPULATE_READ|WRITE)` (Linux 5.14)
//! a window of [`WINDOW`] bytes at a time, each window's pages dropped from
//! the replay's page tables afterwards (`MADV_DONTNEED`: the file's pages
//! stay in the page cache, dirty ones included), so a replay thread never
//! holds more than a window in memory, and the stop flag and the deadline
//! are polled between windows. Populating fails with `EFAULT` where a plain
//! load would raise `SIGBUS`, so no trace can kill the replay; that failure
//! is where the file ends (found page by page within the window), since
//! asking the file's size would be a call the program did not make. A
//! writable map whose page cannot be made writable (a full disk under a
//! hole) fails the same way and is taken for the file's end too. On a kernel
//! without populating (asked once, of anonymous memory), maps are noted,
//! not replayed ([`OpError::MapsUnsupported`]); on one with it, any other
//! failure to populate is the map's own, a divergence.

use super::execute::OpError;
use crate::trace::halt::Guard;
use std::os::fd::RawFd;

/// The most bytes of a map a replay thread touches before dropping them
/// from its page tables.
const WINDOW: usize = 8 << 20;

/// The size of a page.
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .unwrap_or(4096)
        .max(1)
}

/// A recorded map.
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
    /// The map failed in the recording: it is made (to fail the same way)
    /// but not touched.
    pub(super) failed: bool,
}

/// The mapping, unmapped when dropped.
struct Mapping {
    at: *mut libc::c_void,
    len: usize,
}

impl Mapping {
    /// Maps the range as the recording did; the error is the kernel's, as
    /// the program met it.
    fn new(call: &MapCall) -> Result<Mapping, OpError> {
        let (prot, flags) = if call.write {
            (libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED)
        } else {
            (libc::PROT_READ, libc::MAP_PRIVATE)
        };
        // Beyond what the address space holds: the kernel's own answer.
        let too_big = || OpError::Os(std::io::Error::from_raw_os_error(libc::ENOMEM));
        let len = usize::try_from(call.len).map_err(|_| too_big())?;
        let at = i64::try_from(call.offset).map_err(|_| OpError::Offset(call.offset))?;
        // SAFETY: a new mapping at an address the kernel chooses; nothing
        // else refers to it until it is unmapped in `drop`.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, call.fd, at) };
        if p == libc::MAP_FAILED {
            return Err(OpError::Os(std::io::Error::last_os_error()));
        }
        Ok(Mapping { at: p, len })
    }

    /// Touches `len` bytes from byte `from` of the mapping (both within it,
    /// `from` page-aligned).
    fn populate(&self, from: usize, len: usize, write: bool) -> Populated {
        let advice = if write {
            libc::MADV_POPULATE_WRITE
        } else {
            libc::MADV_POPULATE_READ
        };
        // SAFETY: the range lies within this mapping.
        let r = unsafe { libc::madvise(self.at.wrapping_byte_add(from), len, advice) };
        if r == 0 {
            return Populated::All;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EFAULT) => Populated::Fault,
            _ => Populated::Failed(std::io::Error::last_os_error()),
        }
    }

    /// Drops `len` bytes from byte `from` from the page tables (the file's
    /// pages stay cached, dirty ones to be written back).
    fn release(&self, from: usize, len: usize) {
        // SAFETY: the range lies within this mapping; its pages are the
        // file's, so dropping them loses nothing.
        unsafe { libc::madvise(self.at.wrapping_byte_add(from), len, libc::MADV_DONTNEED) };
    }

    /// Of the `len` bytes from `from`, whose populating failed, where it
    /// first fails (bytes from `from`, a whole number of pages): found by
    /// halving, the pages before it populated.
    fn first_fault(&self, from: usize, len: usize, write: bool, page: usize) -> usize {
        // The first page that fails is at or after `good` and before `bad`.
        let (mut good, mut bad) = (0usize, len.div_ceil(page));
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            match self.populate(from + good * page, (mid - good) * page, write) {
                Populated::All => good = mid,
                _ => bad = mid,
            }
        }
        good * page
    }
}

/// What populating a range did.
enum Populated {
    /// Every page was touched.
    All,
    /// A page could not be (past the file's end, or not made writable).
    Fault,
    /// Another failure.
    Failed(std::io::Error),
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.at, self.len) };
    }
}

/// Whether this kernel populates mappings (Linux 5.14): asked once, of a
/// page of anonymous memory (no call on any file), so that an EINVAL from
/// populating a file's map afterwards is that map's own failure.
fn can_populate() -> bool {
    static CAN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CAN.get_or_init(|| {
        let page = page_size();
        // SAFETY: a new private anonymous page, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return false;
        }
        // SAFETY: the page just mapped, then unmapped once.
        unsafe {
            let ok = libc::madvise(p, page, libc::MADV_POPULATE_READ) == 0;
            libc::munmap(p, page);
            ok
        }
    })
}

/// Replays a map (see the module's notes); the bytes touched. Stops early,
/// with what it touched, when the replay halts.
pub(super) fn replay_map(call: MapCall, guard: &Guard) -> Result<u64, OpError> {
    if !can_populate() {
        return Err(OpError::MapsUnsupported);
    }
    let m = Mapping::new(&call)?;
    if call.failed {
        return Ok(0);
    }
    let page = page_size();
    let mut at = 0usize;
    while at < m.len && !guard.halted() {
        let n = (m.len - at).min(WINDOW);
        match m.populate(at, n, call.write) {
            Populated::All => {
                m.release(at, n);
                at += n;
            }
            Populated::Fault => {
                let touched = m.first_fault(at, n, call.write, page).min(n);
                m.release(at, n);
                return Ok((at + touched) as u64);
            }
            Populated::Failed(e) => return Err(OpError::Os(e)),
        }
    }
    Ok(at as u64)
}
