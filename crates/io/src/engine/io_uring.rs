//! `io_uring`: the kernel's submission/completion rings, with registered
//! files and buffers when the kernel allows them (they cut CPU per I/O).
//!
//! Closing a ring does not wait for its requests: the kernel finishes them
//! later, writing into the memory they name. So the engine counts what it
//! handed the kernel, and dropping it waits for those completions (as
//! libaio's `io_destroy` does) before the slot memory and files it holds
//! can go; when it cannot wait for them, it never gives them back.

use super::{
    Completion, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, JobFiles, Op, SlotMemory,
};
use io_uring::{opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "io_uring",
    caps: EngineCaps {
        is_async: true,
        diskless: false,
        by_path: false,
        own_latency: false,
    },
    create,
};

struct Uring {
    ring: IoUring,
    fds: Vec<RawFd>,
    /// The memory requests read into and write from.
    memory: Arc<SlotMemory>,
    /// Keeps `fds` open as long as `memory`.
    files: JobFiles,
    fixed_files: bool,
    fixed_buffers: bool,
    /// Entries pushed to the submission queue and not yet handed to the kernel.
    unsubmitted: u32,
    /// Entries pushed and not yet reaped: what the kernel may still be
    /// doing with the memory and files.
    in_flight: u32,
}

/// The longest a dropped engine waits for its requests to complete before
/// it gives up and keeps their memory for the rest of the process.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// The kernel's largest submission queue (`IORING_MAX_ENTRIES`).
const KERNEL_MAX_ENTRIES: u32 = 32768;

/// Says what failed when a ring cannot be made, and the likely why.
fn ring_error(depth: u32, entries: u32, e: io::Error) -> io::Error {
    let why = match e.raw_os_error() {
        Some(libc::EINVAL) if entries > KERNEL_MAX_ENTRIES => {
            format!(" (the kernel's limit is {KERNEL_MAX_ENTRIES} entries; use a smaller iodepth)")
        }
        Some(libc::ENOMEM) => {
            " (not enough locked memory for the ring: raise `ulimit -l` or lower iodepth)".into()
        }
        Some(libc::EPERM) => {
            " (io_uring is disabled: see /proc/sys/kernel/io_uring_disabled)".into()
        }
        Some(libc::ENOSYS) => " (this kernel has no io_uring; use ioengine=libaio or psync)".into(),
        _ => String::new(),
    };
    let rounded = if entries != depth {
        format!(" ({entries} entries)")
    } else {
        String::new()
    };
    io::Error::new(
        e.kind(),
        format!("io_uring: cannot create a ring of depth {depth}{rounded}: {e}{why}"),
    )
}

fn create(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    let depth = setup.depth.max(1);
    let entries = depth
        .checked_next_power_of_two()
        .ok_or_else(|| ring_error(depth, u32::MAX, io::Error::from_raw_os_error(libc::EINVAL)))?;
    // One thread submits and reaps each ring. With DEFER_TASKRUN (Linux
    // 6.1) the kernel finishes completions when that thread waits for them,
    // instead of interrupting it with task work as each one arrives.
    let ring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
        .or_else(|_| IoUring::builder().setup_single_issuer().build(entries))
        .or_else(|_| IoUring::new(entries))
        .map_err(|e| ring_error(depth, entries, e))?;
    let fds = setup.raw_fds();
    let fixed_files = ring.submitter().register_files(&fds).is_ok();
    let memory = setup.memory;
    let iovecs: Vec<libc::iovec> = (0..memory.slots())
        .filter_map(|slot| memory.slot_ptr(slot))
        .map(|ptr| libc::iovec {
            iov_base: ptr.cast(),
            iov_len: memory.slot_len(),
        })
        .collect();
    // SAFETY: every slot lies in `memory`, which the engine holds until the
    // ring is gone (fields drop after `Drop::drop` has drained the ring).
    let fixed_buffers = memory.slots() <= u32::from(u16::MAX)
        && unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
    Ok(Box::new(Uring {
        ring,
        fds,
        memory,
        files: setup.files,
        fixed_files,
        fixed_buffers,
        unsubmitted: 0,
        in_flight: 0,
    }))
}

impl Uring {
    /// The submission entry for `req`, whose slot starts at `buf`.
    fn entry(&self, req: &IoRequest, buf: *mut u8) -> squeue::Entry {
        let entry = match (self.fixed_files, self.fixed_buffers, req.op) {
            (true, true, Op::Read) => {
                opcode::ReadFixed::new(types::Fixed(req.file), buf, req.len, req.slot as u16)
                    .offset(req.offset)
                    .build()
            }
            (true, true, Op::Write) => {
                opcode::WriteFixed::new(types::Fixed(req.file), buf, req.len, req.slot as u16)
                    .offset(req.offset)
                    .build()
            }
            (true, false, Op::Read) => opcode::Read::new(types::Fixed(req.file), buf, req.len)
                .offset(req.offset)
                .build(),
            (true, false, Op::Write) => opcode::Write::new(types::Fixed(req.file), buf, req.len)
                .offset(req.offset)
                .build(),
            (false, true, Op::Read) => {
                let fd = types::Fd(self.fds[req.file as usize]);
                opcode::ReadFixed::new(fd, buf, req.len, req.slot as u16)
                    .offset(req.offset)
                    .build()
            }
            (false, true, Op::Write) => {
                let fd = types::Fd(self.fds[req.file as usize]);
                opcode::WriteFixed::new(fd, buf, req.len, req.slot as u16)
                    .offset(req.offset)
                    .build()
            }
            (false, false, Op::Read) => {
                let fd = types::Fd(self.fds[req.file as usize]);
                opcode::Read::new(fd, buf, req.len)
                    .offset(req.offset)
                    .build()
            }
            (false, false, Op::Write) => {
                let fd = types::Fd(self.fds[req.file as usize]);
                opcode::Write::new(fd, buf, req.len)
                    .offset(req.offset)
                    .build()
            }
        };
        entry.user_data(req.slot as u64)
    }

    fn enter(&mut self, want: u32) -> io::Result<()> {
        loop {
            let r = if want > 0 {
                self.ring.submit_and_wait(want as usize)
            } else {
                self.ring.submit()
            };
            match r {
                Ok(_) => {
                    self.unsubmitted = 0;
                    return Ok(());
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e)
                    if e.raw_os_error() == Some(libc::EBUSY)
                        || e.raw_os_error() == Some(libc::EAGAIN) =>
                {
                    // The completion queue is full: the caller reaps and comes back.
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl IoEngine for Uring {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        let buf = super::check_request(req, &self.memory, self.fds.len())?;
        let entry = self.entry(req, buf);
        loop {
            // SAFETY: the slot's memory and the file are held by the engine,
            // and the engine is not dropped before the completion is reaped.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            if pushed.is_ok() {
                self.unsubmitted += 1;
                self.in_flight += 1;
                return Ok(None);
            }
            self.enter(0)?;
        }
    }

    fn submit(&mut self) -> io::Result<()> {
        if self.unsubmitted > 0 {
            self.enter(0)?;
        }
        Ok(())
    }

    fn reap(&mut self, min: u32, max: u32, out: &mut Vec<Completion>) -> io::Result<()> {
        let ready = self.ring.completion().len() as u32;
        if ready < min {
            self.enter(min - ready)?;
        } else if self.unsubmitted > 0 {
            self.enter(0)?;
        }
        for cqe in self.ring.completion().take(max as usize) {
            self.in_flight = self.in_flight.saturating_sub(1);
            out.push(Completion {
                slot: cqe.user_data() as u32,
                result: cqe.result() as i64,
            });
        }
        Ok(())
    }
}

impl Uring {
    /// Submits what is queued and waits until every request handed to the
    /// kernel has completed, for at most [`DRAIN_LIMIT`]; false when some
    /// may still be in flight.
    fn drain(&mut self) -> bool {
        let give_up = Instant::now() + DRAIN_LIMIT;
        let slice = types::Timespec::new().nsec(100_000_000);
        let args = types::SubmitArgs::new().timespec(&slice);
        loop {
            let done = self.ring.completion().count() as u32;
            self.in_flight = self.in_flight.saturating_sub(done);
            if self.in_flight == 0 {
                return true;
            }
            if Instant::now() >= give_up {
                return false;
            }
            // Wait for one more, in slices, so the limit is kept.
            let waited = self
                .ring
                .submitter()
                .submit_with_args(1, &args)
                .or_else(|e| match e.raw_os_error() {
                    // No timed waits on this kernel: a plain wait.
                    Some(libc::EINVAL) => self.ring.submit_and_wait(1),
                    _ => Err(e),
                });
            match waited.map_err(|e| e.raw_os_error()) {
                Ok(_) => self.unsubmitted = 0,
                Err(Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN)) => {}
                Err(_) => return false,
            }
        }
    }
}

impl Drop for Uring {
    /// Waits for every request in flight before the memory and files go
    /// (the fields drop after this); when that fails, keeps both for the
    /// rest of the process rather than free memory the kernel may write.
    fn drop(&mut self) {
        if !self.drain() {
            std::mem::forget(Arc::clone(&self.memory));
            std::mem::forget(Arc::clone(&self.files));
        }
    }
}
