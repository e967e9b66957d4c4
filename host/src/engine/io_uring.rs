//! `io_uring`: the kernel's submission/completion rings, with registered
//! files and buffers when the kernel allows them (they cut CPU per I/O).

use super::{Completion, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, Op, SlotBuffer};
use io_uring::{opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::RawFd;

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "io_uring",
    caps: EngineCaps {
        is_async: true,
        diskless: false,
    },
    create,
};

struct Uring {
    ring: IoUring,
    files: Vec<RawFd>,
    buffers: Vec<SlotBuffer>,
    fixed_files: bool,
    fixed_buffers: bool,
    /// Entries pushed to the submission queue and not yet handed to the kernel.
    unsubmitted: u32,
}

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

fn create(setup: &EngineSetup) -> io::Result<Box<dyn IoEngine>> {
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
    let fixed_files = ring.submitter().register_files(setup.files).is_ok();
    let iovecs: Vec<libc::iovec> = setup
        .buffers
        .iter()
        .map(|b| libc::iovec {
            iov_base: b.ptr.cast(),
            iov_len: b.len,
        })
        .collect();
    // SAFETY: the runner keeps every slot buffer alive for the engine's lifetime.
    let fixed_buffers = setup.buffers.len() <= u16::MAX as usize
        && unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
    Ok(Box::new(Uring {
        ring,
        files: setup.files.to_vec(),
        buffers: setup.buffers.to_vec(),
        fixed_files,
        fixed_buffers,
        unsubmitted: 0,
    }))
}

impl Uring {
    fn entry(&self, req: &IoRequest) -> squeue::Entry {
        let buf = self.buffers[req.slot as usize].ptr;
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
                let fd = types::Fd(self.files[req.file as usize]);
                opcode::ReadFixed::new(fd, buf, req.len, req.slot as u16)
                    .offset(req.offset)
                    .build()
            }
            (false, true, Op::Write) => {
                let fd = types::Fd(self.files[req.file as usize]);
                opcode::WriteFixed::new(fd, buf, req.len, req.slot as u16)
                    .offset(req.offset)
                    .build()
            }
            (false, false, Op::Read) => {
                let fd = types::Fd(self.files[req.file as usize]);
                opcode::Read::new(fd, buf, req.len)
                    .offset(req.offset)
                    .build()
            }
            (false, false, Op::Write) => {
                let fd = types::Fd(self.files[req.file as usize]);
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
        super::check_request(req, &self.buffers, self.files.len())?;
        let entry = self.entry(req);
        loop {
            // SAFETY: the buffer and file stay valid until the completion is reaped.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            if pushed.is_ok() {
                self.unsubmitted += 1;
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
            out.push(Completion {
                slot: cqe.user_data() as u32,
                result: cqe.result() as i64,
            });
        }
        Ok(())
    }
}
