//! `psync`: one pread/pwrite per I/O, completed before `queue` returns.

use super::{
    syscall_result, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, Op, SlotBuffer,
};
use std::io;
use std::os::fd::RawFd;

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "psync",
    caps: EngineCaps {
        is_async: false,
        diskless: false,
    },
    create,
};

struct Psync {
    files: Vec<RawFd>,
    buffers: Vec<SlotBuffer>,
}

fn create(setup: &EngineSetup) -> io::Result<Box<dyn IoEngine>> {
    Ok(Box::new(Psync {
        files: setup.files.to_vec(),
        buffers: setup.buffers.to_vec(),
    }))
}

impl IoEngine for Psync {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        super::check_request(req, &self.buffers, self.files.len())?;
        let fd = self.files[req.file as usize];
        let buf = self.buffers[req.slot as usize].ptr;
        let len = req.len as usize;
        let Ok(off) = libc::off_t::try_from(req.offset) else {
            return Ok(Some(-(libc::EINVAL as i64)));
        };
        // SAFETY: the runner guarantees the slot buffer is at least `len` bytes and idle.
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
