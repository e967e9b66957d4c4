//! `pvsync` and `pvsync2`: one preadv/pwritev (`pvsync`) or
//! preadv2/pwritev2 with per-request flags (`pvsync2`: `hipri`,
//! `uncached`, `nowait`) per I/O, completed before `queue` returns.

use super::{
    syscall_result, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, JobFiles, Op,
    SlotMemory,
};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Registry entry of `pvsync`.
pub const PVSYNC: EngineInfo = EngineInfo {
    name: "pvsync",
    caps: EngineCaps::SYNC,
    create: create::<false>,
};

/// Registry entry of `pvsync2`.
pub const PVSYNC2: EngineInfo = EngineInfo {
    name: "pvsync2",
    caps: EngineCaps::SYNC,
    create: create::<true>,
};

/// Polled completion (`RWF_HIPRI`).
const RWF_HIPRI: libc::c_int = 0x01;
/// Fail rather than block (`RWF_NOWAIT`).
const RWF_NOWAIT: libc::c_int = 0x08;
/// Drop the page cache pages once the I/O is done (`RWF_DONTCACHE`, Linux 6.14).
const RWF_DONTCACHE: libc::c_int = 0x80;

/// The engine; `V2` picks preadv2/pwritev2 at compile time.
struct Pvsync<const V2: bool> {
    fds: Vec<RawFd>,
    memory: Arc<SlotMemory>,
    /// Keeps `fds` open.
    _files: JobFiles,
    /// Flags of every request (`pvsync2`).
    flags: libc::c_int,
    /// Percent of requests that also get `RWF_HIPRI` (`hipri_percentage`);
    /// 0 when `hipri` is off, 100 when it applies to all.
    hipri_percent: u32,
    /// Draws which requests get `RWF_HIPRI` when not all do.
    rng: SmallRng,
}

fn create<const V2: bool>(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    let o = &setup.options;
    let mut flags = 0;
    if o.nowait {
        flags |= RWF_NOWAIT;
    }
    // fio applies `uncached` to buffered I/O only; the runner opens files
    // with O_DIRECT for `direct=1`, and RWF_DONTCACHE on those is moot.
    if o.uncached {
        flags |= RWF_DONTCACHE;
    }
    let hipri_percent = if o.hipri { o.hipri_percentage } else { 0 };
    if hipri_percent == 100 {
        flags |= RWF_HIPRI;
    }
    Ok(Box::new(Pvsync::<V2> {
        fds: setup.raw_fds(),
        memory: setup.memory,
        _files: setup.files,
        flags,
        hipri_percent,
        rng: SmallRng::seed_from_u64(0x9e37_79b9),
    }))
}

impl<const V2: bool> Pvsync<V2> {
    /// The flags of the next request: the fixed ones, and `RWF_HIPRI` for
    /// `hipri_percentage` percent of them.
    fn next_flags(&mut self) -> libc::c_int {
        if self.hipri_percent == 0 || self.hipri_percent == 100 {
            self.flags
        } else if self.rng.random_range(0..100) < self.hipri_percent {
            self.flags | RWF_HIPRI
        } else {
            self.flags
        }
    }
}

impl<const V2: bool> IoEngine for Pvsync<V2> {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        let buf = super::check_request(req, &self.memory, self.fds.len())?;
        let fd = self.fds[req.file as usize];
        let Ok(off) = libc::off_t::try_from(req.offset) else {
            return Ok(Some(-(libc::EINVAL as i64)));
        };
        let iov = libc::iovec {
            iov_base: buf.cast(),
            iov_len: req.len as usize,
        };
        let flags = if V2 { self.next_flags() } else { 0 };
        // SAFETY: `iov` names a slot of at least `len` bytes (checked) that
        // lives as long as `self.memory`; the runner touches a slot only
        // through `SlotMemory::slot_mut`, whose contract keeps it off a
        // slot in use.
        let ret = unsafe {
            match (V2, req.op) {
                (false, Op::Read) => libc::preadv(fd, &iov, 1, off),
                (false, Op::Write) => libc::pwritev(fd, &iov, 1, off),
                (true, Op::Read) => libc::preadv2(fd, &iov, 1, off, flags),
                (true, Op::Write) => libc::pwritev2(fd, &iov, 1, off, flags),
            }
        };
        Ok(Some(syscall_result(ret)))
    }

    fn submit(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _max: u32, _out: &mut Vec<super::Completion>) -> io::Result<()> {
        Ok(())
    }
}
