//! `sync`: lseek then read/write per I/O, as fio's `sync` engine.

use super::{
    syscall_result, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, Op, SlotBuffer,
};
use std::io;
use std::os::fd::RawFd;

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
    files: Vec<RawFd>,
    buffers: Vec<SlotBuffer>,
    /// Where each file's position is, to skip an lseek on sequential I/O like fio.
    positions: Vec<Option<u64>>,
}

fn create(setup: &EngineSetup) -> io::Result<Box<dyn IoEngine>> {
    Ok(Box::new(Sync {
        files: setup.files.to_vec(),
        buffers: setup.buffers.to_vec(),
        positions: vec![None; setup.files.len()],
    }))
}

impl IoEngine for Sync {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        super::check_request(req, &self.buffers, self.files.len())?;
        let fd = self.files[req.file as usize];
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
        let buf = self.buffers[req.slot as usize].ptr;
        // SAFETY: the runner guarantees the slot buffer is at least `len` bytes and idle.
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
