//! `sync`: lseek then read/write per I/O, as fio's `sync` engine.

use super::{
    syscall_result, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, JobFiles, Op,
    SlotMemory,
};
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "sync",
    caps: EngineCaps {
        is_async: false,
        diskless: false,
    },
    create,
};

struct Sync {
    fds: Vec<RawFd>,
    memory: Arc<SlotMemory>,
    /// Keeps `fds` open.
    _files: JobFiles,
    /// Where each file's position is, to skip an lseek on sequential I/O like fio.
    positions: Vec<Option<u64>>,
}

fn create(setup: EngineSetup) -> io::Result<Box<dyn IoEngine>> {
    Ok(Box::new(Sync {
        fds: setup.raw_fds(),
        positions: vec![None; setup.files.len()],
        memory: setup.memory,
        _files: setup.files,
    }))
}

impl IoEngine for Sync {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        let buf = super::check_request(req, &self.memory, self.fds.len())?;
        let fd = self.fds[req.file as usize];
        let pos = &mut self.positions[req.file as usize];
        if *pos != Some(req.offset) {
            let Ok(off) = libc::off_t::try_from(req.offset) else {
                *pos = None;
                return Ok(Some(-(libc::EINVAL as i64)));
            };
            // SAFETY: plain syscall on an open descriptor.
            let r = unsafe { libc::lseek(fd, off, libc::SEEK_SET) };
            if r < 0 {
                *pos = None;
                return Ok(Some(syscall_result(-1)));
            }
        }
        // SAFETY: `buf` starts a slot of at least `len` bytes (checked) that
        // lives as long as `self.memory`; the runner touches a slot only
        // through `SlotMemory::slot_mut`, whose contract keeps it off a
        // slot in use.
        let ret = unsafe {
            match req.op {
                Op::Read => libc::read(fd, buf.cast(), req.len as usize),
                Op::Write => libc::write(fd, buf.cast(), req.len as usize),
            }
        };
        *pos = if ret >= 0 {
            Some(req.offset + ret as u64)
        } else {
            None
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
