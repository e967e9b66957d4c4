//! `psync`: one pread/pwrite per I/O, completed before `queue` returns.

use super::{
    syscall_result, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, JobFiles, Op,
    SlotMemory,
};
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "psync",
    caps: EngineCaps::SYNC,
    create,
};

struct Psync {
    fds: Vec<RawFd>,
    memory: Arc<SlotMemory>,
    /// Keeps `fds` open.
    _files: JobFiles,
}

fn create(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    Ok(Box::new(Psync {
        fds: setup.raw_fds(),
        memory: setup.memory,
        _files: setup.files,
    }))
}

impl IoEngine for Psync {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        let buf = super::check_request(req, &self.memory, self.fds.len())?;
        let fd = self.fds[req.file as usize];
        let len = req.len as usize;
        let Ok(off) = libc::off_t::try_from(req.offset) else {
            return Ok(Some(-(libc::EINVAL as i64)));
        };
        // SAFETY: `buf` starts a slot of at least `len` bytes (checked) that
        // lives as long as `self.memory`; the runner touches a slot only
        // through `SlotMemory::slot_mut`, whose contract keeps it off a
        // slot in use.
        let ret = unsafe {
            match req.op {
                Op::Read => libc::pread(fd, buf.cast(), len, off),
                Op::Write => libc::pwrite(fd, buf.cast(), len, off),
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
