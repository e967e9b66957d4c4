//! `ftruncate`: each write truncates the file to the I/O's offset (growing
//! or shrinking it), as fio's engine; it moves no data and counts the I/O's
//! length. Reads are refused with `EINVAL`, as fio does.

use super::{
    syscall_result, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, JobFiles, Op,
};
use std::io;
use std::os::fd::RawFd;

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "ftruncate",
    caps: EngineCaps::SYNC,
    create,
};

struct Ftruncate {
    fds: Vec<RawFd>,
    /// Keeps `fds` open.
    _files: JobFiles,
}

fn create(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    Ok(Box::new(Ftruncate {
        fds: setup.raw_fds(),
        _files: setup.files,
    }))
}

impl IoEngine for Ftruncate {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        let fd = *super::request_file(&self.fds, req.file)?;
        if req.op == Op::Read {
            return Ok(Some(-i64::from(libc::EINVAL)));
        }
        let Ok(off) = libc::off_t::try_from(req.offset) else {
            return Ok(Some(-i64::from(libc::EINVAL)));
        };
        // SAFETY: plain syscall on an open descriptor.
        let r = unsafe { libc::ftruncate(fd, off) };
        Ok(Some(if r == 0 {
            i64::from(req.len)
        } else {
            syscall_result(-1)
        }))
    }

    fn submit(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _max: u32, _out: &mut Vec<super::Completion>) -> io::Result<()> {
        Ok(())
    }
}
