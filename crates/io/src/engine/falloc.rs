//! `falloc`: each I/O is an `fallocate` of its range, as fio's engine:
//! a write allocates (and extends the file), a read allocates without
//! changing the size (`FALLOC_FL_KEEP_SIZE`). fio's third direction, trims
//! punching holes, needs trims in plumb's patterns, which it has not yet.
//! Like fio, the engine opens its files itself, read-write and created if
//! missing, whatever the job's direction.

use super::{syscall_result, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, Op};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "falloc",
    caps: EngineCaps {
        is_async: false,
        diskless: false,
        by_path: true,
        own_latency: false,
    },
    create,
};

struct Falloc {
    files: Vec<File>,
}

fn create(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    let files = setup
        .paths
        .iter()
        .map(|p| {
            p.space
                .open(&p.path, libc::O_RDWR | libc::O_CREAT, 0o644)
                .map_err(|e| io::Error::other(e.to_string()))
        })
        .collect::<io::Result<Vec<_>>>()?;
    Ok(Box::new(Falloc { files }))
}

impl IoEngine for Falloc {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        let f = super::request_file(&self.files, req.file)?;
        let Ok(off) = libc::off_t::try_from(req.offset) else {
            return Ok(Some(-i64::from(libc::EINVAL)));
        };
        let len = libc::off_t::from(req.len);
        let mode = match req.op {
            Op::Read => libc::FALLOC_FL_KEEP_SIZE,
            Op::Write => 0,
        };
        // SAFETY: plain syscall on an open descriptor.
        let r = unsafe { libc::fallocate(f.as_raw_fd(), mode, off, len) };
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
