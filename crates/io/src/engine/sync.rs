//! `sync` and `vsync`: lseek then read/write (`sync`) or readv/writev with
//! one vector (`vsync`) per I/O, as fio's engines of those names.

use super::{
    syscall_result, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, JobFiles, Op,
    SlotMemory,
};
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Registry entry of `sync`.
pub const INFO: EngineInfo = EngineInfo {
    name: "sync",
    caps: EngineCaps::SYNC,
    create: create::<false>,
};

/// Registry entry of `vsync`.
pub const VSYNC: EngineInfo = EngineInfo {
    name: "vsync",
    caps: EngineCaps::SYNC,
    create: create::<true>,
};

/// The engine; `VECTORED` picks readv/writev over read/write at compile
/// time, so `sync` pays nothing for `vsync`.
struct Sync<const VECTORED: bool> {
    fds: Vec<RawFd>,
    memory: Arc<SlotMemory>,
    /// Keeps `fds` open.
    _files: JobFiles,
    /// Where each file's position is, to skip an lseek on sequential I/O like fio.
    positions: Vec<Option<u64>>,
}

fn create<const VECTORED: bool>(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    Ok(Box::new(Sync::<VECTORED> {
        fds: setup.raw_fds(),
        positions: vec![None; setup.files.len()],
        memory: setup.memory,
        _files: setup.files,
    }))
}

impl<const VECTORED: bool> IoEngine for Sync<VECTORED> {
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
        let len = req.len as usize;
        // SAFETY: `buf` starts a slot of at least `len` bytes (checked) that
        // lives as long as `self.memory`; the runner touches a slot only
        // through `SlotMemory::slot_mut`, whose contract keeps it off a
        // slot in use.
        let ret = unsafe {
            if VECTORED {
                let iov = libc::iovec {
                    iov_base: buf.cast(),
                    iov_len: len,
                };
                match req.op {
                    Op::Read => libc::readv(fd, &iov, 1),
                    Op::Write => libc::writev(fd, &iov, 1),
                }
            } else {
                match req.op {
                    Op::Read => libc::read(fd, buf.cast(), len),
                    Op::Write => libc::write(fd, buf.cast(), len),
                }
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
