//! `posixaio`: POSIX asynchronous I/O (`aio_read`/`aio_write`, completion
//! by `aio_error`/`aio_return`, waits in `aio_suspend`), as fio's engine;
//! glibc serves these requests with its own threads.
//!
//! The kernel-side helper threads write into slot memory until a request
//! completes, so, as the other asynchronous engines, dropping the engine
//! waits for everything in flight before the memory and files can go.

use super::{
    Completion, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, JobFiles, Op, SlotMemory,
};
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "posixaio",
    caps: EngineCaps {
        is_async: true,
        diskless: false,
        by_path: false,
        own_latency: false,
    },
    create,
};

/// The longest a dropped engine waits for its requests before it keeps
/// their memory for the rest of the process instead.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

struct PosixAio {
    fds: Vec<RawFd>,
    memory: Arc<SlotMemory>,
    files: JobFiles,
    /// One control block per slot; boxed so their addresses stay put while
    /// the library holds them.
    cbs: Box<[libc::aiocb]>,
    /// Slots with a request handed to the library and not yet reaped.
    pending: Vec<u32>,
}

fn create(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    let slots = setup.memory.slots() as usize;
    // SAFETY: aiocb is plain data; all zeroes is its documented initial state.
    let cbs = (0..slots)
        .map(|_| unsafe { std::mem::zeroed::<libc::aiocb>() })
        .collect();
    Ok(Box::new(PosixAio {
        fds: setup.raw_fds(),
        memory: setup.memory,
        files: setup.files,
        cbs,
        pending: Vec::with_capacity(slots),
    }))
}

impl PosixAio {
    /// Moves the finished requests among `pending` (up to `max`) to `out`;
    /// returns how many.
    fn collect(&mut self, max: u32, out: &mut Vec<Completion>) -> u32 {
        let mut found = 0;
        let mut i = 0;
        while i < self.pending.len() && found < max {
            let slot = self.pending[i];
            let cb = &mut self.cbs[slot as usize];
            // SAFETY: `cb` was handed to aio_read/aio_write and stays put.
            let err = unsafe { libc::aio_error(cb) };
            if err == libc::EINPROGRESS {
                i += 1;
                continue;
            }
            // SAFETY: the request is done; aio_return reaps it once.
            let ret = unsafe { libc::aio_return(cb) };
            let result = if err != 0 {
                -(i64::from(err))
            } else {
                ret as i64
            };
            out.push(Completion { slot, result });
            self.pending.swap_remove(i);
            found += 1;
        }
        found
    }

    /// Waits until one of `pending` finishes, or `timeout`.
    fn suspend(&self, timeout: Option<Duration>) -> io::Result<()> {
        let list: Vec<*const libc::aiocb> = self
            .pending
            .iter()
            .map(|&s| &self.cbs[s as usize] as *const libc::aiocb)
            .collect();
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
        });
        let tp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
        // SAFETY: every pointer names a control block in flight that stays put.
        let r = unsafe { libc::aio_suspend(list.as_ptr(), list.len() as i32, tp) };
        if r != 0 {
            let e = io::Error::last_os_error();
            if !matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) {
                return Err(e);
            }
        }
        Ok(())
    }
}

impl IoEngine for PosixAio {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        let buf = super::check_request(req, &self.memory, self.fds.len())?;
        let Ok(off) = libc::off_t::try_from(req.offset) else {
            return Ok(Some(-(libc::EINVAL as i64)));
        };
        let cb = &mut self.cbs[req.slot as usize];
        // SAFETY: plain data reset before reuse; the slot is free.
        *cb = unsafe { std::mem::zeroed() };
        cb.aio_fildes = self.fds[req.file as usize];
        cb.aio_buf = buf.cast();
        cb.aio_nbytes = req.len as usize;
        cb.aio_offset = off;
        // SAFETY: the buffer and descriptor are held by the engine until
        // the request is reaped (or the drop has waited for it).
        let r = unsafe {
            match req.op {
                Op::Read => libc::aio_read(cb),
                Op::Write => libc::aio_write(cb),
            }
        };
        if r != 0 {
            return Ok(Some(super::syscall_result(-1)));
        }
        self.pending.push(req.slot);
        Ok(None)
    }

    fn submit(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn reap(&mut self, min: u32, max: u32, out: &mut Vec<Completion>) -> io::Result<()> {
        let want = min.min(self.pending.len() as u32);
        let mut got = self.collect(max, out);
        while got < want {
            self.suspend(None)?;
            got += self.collect(max - got, out);
        }
        Ok(())
    }
}

impl Drop for PosixAio {
    /// Waits for every request in flight (for at most [`DRAIN_LIMIT`])
    /// before the memory and files go; past that, keeps both for the rest
    /// of the process.
    fn drop(&mut self) {
        let give_up = Instant::now() + DRAIN_LIMIT;
        let mut sink = Vec::new();
        while !self.pending.is_empty() && Instant::now() < give_up {
            sink.clear();
            self.collect(u32::MAX, &mut sink);
            if !self.pending.is_empty() && self.suspend(Some(Duration::from_millis(100))).is_err() {
                break;
            }
        }
        if !self.pending.is_empty() {
            std::mem::forget(Arc::clone(&self.memory));
            std::mem::forget(Arc::clone(&self.files));
            // The control blocks too: the library still points at them.
            std::mem::forget(std::mem::take(&mut self.cbs));
        }
    }
}
