//! How much of a file is in the page cache (`mincore` on a read-only map
//! of it), and dropping it from there (written back, then
//! `POSIX_FADV_DONTNEED`): what tells a buffered read of the device from
//! one served by memory.

use std::os::fd::RawFd;

/// Pages of a file, and how many of them are in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Residency {
    /// Pages the file spans.
    pub pages: u64,
    /// Of them, pages in the page cache.
    pub resident: u64,
}

/// Part of a file in the page cache from which a buffered read of it
/// measures memory more than the device: a tenth.
const CACHED_SHARE: f64 = 0.10;

impl Residency {
    /// The share of the file's pages in the cache (0 for an empty file).
    pub fn share(&self) -> f64 {
        if self.pages == 0 {
            0.0
        } else {
            self.resident as f64 / self.pages as f64
        }
    }

    /// Whether a buffered read now would be served by memory: at least
    /// [`CACHED_SHARE`] of the file is resident.
    pub fn cached(&self) -> bool {
        self.pages > 0 && self.share() >= CACHED_SHARE
    }
}

/// The most of a file whose residency is asked in one `mincore` call:
/// 1 GiB of pages, a 256 KiB vector at 4 KiB pages.
const WINDOW: u64 = 1 << 30;

/// The residency of the first `len` bytes of the file open as `fd`, from
/// `mincore` on read-only maps of it, a window at a time (the vector stays
/// small whatever the size).
pub fn residency(fd: RawFd, len: u64) -> std::io::Result<Residency> {
    // SAFETY: sysconf has no preconditions.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as u64,
        _ => 4096,
    };
    let mut out = Residency {
        pages: len.div_ceil(page),
        resident: 0,
    };
    let mut vec = Vec::new();
    let mut at = 0u64;
    while at < len {
        let n = (len - at).min(WINDOW);
        let Ok(offset) = libc::off_t::try_from(at) else {
            break;
        };
        // SAFETY: a shared read-only map of an open file, unmapped below;
        // nothing reads through it, so a file shrunk meanwhile cannot fault.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                n as usize,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                offset,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let pages = n.div_ceil(page) as usize;
        vec.clear();
        vec.resize(pages, 0u8);
        // SAFETY: `map` is a mapping of `n` bytes and `vec` has one byte
        // per page of it.
        let r = unsafe { libc::mincore(map, n as usize, vec.as_mut_ptr()) };
        let err = std::io::Error::last_os_error();
        // SAFETY: the mapping made above, unmapped once.
        unsafe { libc::munmap(map, n as usize) };
        if r != 0 {
            return Err(err);
        }
        out.resident += vec.iter().filter(|b| **b & 1 == 1).count() as u64;
        at += n;
    }
    Ok(out)
}

/// Writes the file back (fsync) and asks the kernel to drop its pages
/// (`POSIX_FADV_DONTNEED`); returns what stayed resident after.
pub fn drop_pages(fd: RawFd, len: u64) -> std::io::Result<Residency> {
    // SAFETY: plain syscalls on an open descriptor.
    if unsafe { libc::fsync(fd) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above; it returns the error number instead of setting errno.
    let r = unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(std::io::Error::from_raw_os_error(r));
    }
    residency(fd, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_file_just_written_is_resident_and_dropping_it_empties_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut f = std::fs::File::create(&path).unwrap();
        let len = 8u64 << 20;
        f.write_all(&vec![7u8; len as usize]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let before = residency(f.as_raw_fd(), len).unwrap();
        assert_eq!(before.pages, len / 4096);
        assert!(before.cached(), "{before:?}");
        let after = drop_pages(f.as_raw_fd(), len).unwrap();
        assert!(!after.cached(), "{after:?}");
        assert_eq!(residency(f.as_raw_fd(), 0).unwrap().pages, 0);
    }
}
