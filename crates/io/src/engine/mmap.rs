//! `mmap`: each file's region is mapped (shared) once, and an I/O is a
//! copy between the slot and the mapping, as fio's mmap engine. With
//! `direct=1` each I/O is also written back (`msync`) and its pages
//! dropped (`madvise(DONTNEED)`), fio's stand-in for direct I/O on a
//! mapping. A sync of the job (`fsync=`, `end_fsync`) is an fsync of the
//! descriptor, which on Linux writes back the mapping's dirty pages too.

use super::{EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, JobFiles, Op, SlotMemory};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "mmap",
    caps: EngineCaps::SYNC,
    create,
};

/// One file's mapping: `len` bytes at `ptr` showing the file from `start`.
struct Mapping {
    ptr: *mut u8,
    len: usize,
    /// File offset of the first mapped byte (page aligned).
    start: u64,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: a mapping this engine made, unmapped once.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }
}

struct Mmap {
    maps: Vec<Mapping>,
    memory: Arc<SlotMemory>,
    /// `direct=1`: write back and drop each I/O's pages.
    direct: bool,
    /// The page size.
    page: usize,
    /// Keeps the mapped files open for the job's syncs.
    _files: JobFiles,
}

/// The system's page size.
fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(p).unwrap_or(4096).max(1)
}

fn create(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    let page = page_size();
    let mut maps = Vec::with_capacity(setup.files.len());
    let mut direct = false;
    for (file, plan) in setup.files.iter().zip(&setup.paths) {
        let fd = file.as_raw_fd();
        // SAFETY: F_GETFL on an open descriptor.
        let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if fl < 0 {
            return Err(io::Error::last_os_error());
        }
        direct |= fl & libc::O_DIRECT != 0;
        let prot = if fl & libc::O_ACCMODE == libc::O_RDONLY {
            libc::PROT_READ
        } else {
            libc::PROT_READ | libc::PROT_WRITE
        };
        let start = plan.region.start - plan.region.start % page;
        let len = plan
            .region
            .start
            .checked_add(plan.region.len)
            .map(|end| end - start)
            .and_then(|l| usize::try_from(l).ok())
            .ok_or_else(|| mmap_error(plan, io::Error::from_raw_os_error(libc::EOVERFLOW)))?;
        if len == 0 {
            maps.push(Mapping {
                ptr: std::ptr::null_mut(),
                len: 0,
                start,
            });
            continue;
        }
        let off = libc::off_t::try_from(start)
            .map_err(|_| mmap_error(plan, io::Error::from_raw_os_error(libc::EOVERFLOW)))?;
        // SAFETY: a fresh shared mapping of an open file; the kernel picks the address.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, off) };
        if ptr == libc::MAP_FAILED {
            return Err(mmap_error(plan, io::Error::last_os_error()));
        }
        maps.push(Mapping {
            ptr: ptr.cast(),
            len,
            start,
        });
    }
    Ok(Box::new(Mmap {
        maps,
        memory: setup.memory,
        direct,
        page: page as usize,
        _files: setup.files,
    }))
}

/// Says which file could not be mapped.
fn mmap_error(plan: &crate::files::FilePlan, e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!(
            "mmap of {} ({} bytes from {}): {e}",
            plan.path.display(),
            plan.region.len,
            plan.region.start
        ),
    )
}

impl IoEngine for Mmap {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        let buf = super::check_request(req, &self.memory, self.maps.len())?;
        let map = &self.maps[req.file as usize];
        let len = req.len as usize;
        let inside = req
            .offset
            .checked_sub(map.start)
            .and_then(|rel| usize::try_from(rel).ok())
            .filter(|rel| rel.checked_add(len).is_some_and(|end| end <= map.len));
        let Some(rel) = inside else {
            return Ok(Some(-(libc::EINVAL as i64)));
        };
        // SAFETY: `rel..rel + len` lies inside the mapping (checked), and
        // `buf` starts a slot of at least `len` bytes that nothing else
        // uses while the request is on it; the two never overlap.
        unsafe {
            let mapped = map.ptr.add(rel);
            match req.op {
                Op::Read => std::ptr::copy_nonoverlapping(mapped, buf, len),
                Op::Write => std::ptr::copy_nonoverlapping(buf, mapped, len),
            }
            if self.direct {
                // msync and madvise want a page-aligned start; the
                // mapping starts on a page, so `rel`'s page starts `lead`
                // bytes before it, inside the mapping.
                let lead = rel % self.page;
                let from = mapped.sub(lead);
                let span = len + lead;
                if libc::msync(from.cast(), span, libc::MS_SYNC) != 0
                    || libc::madvise(from.cast(), span, libc::MADV_DONTNEED) != 0
                {
                    return Ok(Some(super::syscall_result(-1)));
                }
            }
        }
        Ok(Some(len as i64))
    }

    fn submit(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _max: u32, _out: &mut Vec<super::Completion>) -> io::Result<()> {
        Ok(())
    }
}
