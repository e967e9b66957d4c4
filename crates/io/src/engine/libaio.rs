//! `libaio`: Linux native AIO (io_setup/io_submit/io_getevents) through raw
//! syscalls, as fio's libaio engine; it needs O_DIRECT to be asynchronous.

use super::{
    Completion, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest, JobFiles, Op, SlotMemory,
};
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "libaio",
    caps: EngineCaps {
        is_async: true,
        diskless: false,
        by_path: false,
        own_latency: false,
    },
    create,
};

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;

/// The kernel's `struct iocb` (little-endian layout).
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: i32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// The kernel's `struct io_event`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

struct Libaio {
    ctx: libc::c_ulong,
    fds: Vec<RawFd>,
    /// The memory requests read into and write from; kept until `io_destroy`
    /// has waited for every request in flight.
    memory: Arc<SlotMemory>,
    /// Keeps `fds` open as long as `memory`.
    files: JobFiles,
    /// One control block per slot; the kernel reads it during io_submit.
    iocbs: Vec<Iocb>,
    /// Slots queued but not yet submitted, in order.
    pending: Vec<*mut Iocb>,
    events: Vec<IoEvent>,
}

fn create(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    let mut ctx: libc::c_ulong = 0;
    // SAFETY: io_setup writes the context id into `ctx`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_setup,
            setup.depth.max(1) as libc::c_long,
            &mut ctx as *mut _,
        )
    };
    if r < 0 {
        return Err(setup_error(setup.depth.max(1), io::Error::last_os_error()));
    }
    let slots = setup.memory.slots() as usize;
    Ok(Box::new(Libaio {
        ctx,
        fds: setup.raw_fds(),
        memory: setup.memory,
        files: setup.files,
        iocbs: vec![Iocb::default(); slots],
        pending: Vec::with_capacity(slots),
        events: vec![IoEvent::default(); slots.max(1)],
    }))
}

/// Reads a number from a /proc file, for error messages.
fn proc_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Says what failed when io_setup refuses, and the likely why.
fn setup_error(depth: u32, e: io::Error) -> io::Error {
    let why = match e.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINVAL) => {
            match (
                proc_number("/proc/sys/fs/aio-max-nr"),
                proc_number("/proc/sys/fs/aio-nr"),
            ) {
                (Some(max), Some(used)) => format!(
                    " (the system allows {max} AIO events in all (/proc/sys/fs/aio-max-nr) and {used} are in use (/proc/sys/fs/aio-nr); lower iodepth or numjobs, or raise aio-max-nr)"
                ),
                _ => " (the system-wide AIO limit /proc/sys/fs/aio-max-nr is reached)".into(),
            }
        }
        Some(libc::ENOSYS) => " (this kernel has no native AIO; use ioengine=psync)".into(),
        _ => String::new(),
    };
    io::Error::new(
        e.kind(),
        format!("libaio: io_setup for depth {depth} failed: {e}{why}"),
    )
}

impl Drop for Libaio {
    /// Destroys the context: `io_destroy` cancels what it can and blocks
    /// until every other request in flight has completed, so the memory and
    /// files go only after it. Should it fail, the kernel may still hold
    /// requests: both are then never given back.
    fn drop(&mut self) {
        // SAFETY: destroys the context created in `create`, used by no one else.
        let r = unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
        if r < 0 {
            std::mem::forget(Arc::clone(&self.memory));
            std::mem::forget(Arc::clone(&self.files));
        }
    }
}

impl IoEngine for Libaio {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        let buf = super::check_request(req, &self.memory, self.fds.len())?;
        let offset = i64::try_from(req.offset).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "libaio: offset {} is beyond the largest file offset",
                    req.offset
                ),
            )
        })?;
        let iocb = &mut self.iocbs[req.slot as usize];
        *iocb = Iocb {
            aio_data: req.slot as u64,
            aio_lio_opcode: match req.op {
                Op::Read => IOCB_CMD_PREAD,
                Op::Write => IOCB_CMD_PWRITE,
            },
            aio_fildes: self.fds[req.file as usize] as u32,
            aio_buf: buf as u64,
            aio_nbytes: req.len as u64,
            aio_offset: offset,
            ..Iocb::default()
        };
        self.pending.push(iocb as *mut Iocb);
        Ok(None)
    }

    fn submit(&mut self) -> io::Result<()> {
        while !self.pending.is_empty() {
            // SAFETY: every pointer refers to an iocb in `self.iocbs`, alive and filled.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    self.pending.len() as libc::c_long,
                    self.pending.as_ptr(),
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // The kernel is out of room: reaping frees it; the rest stays pending.
                    Some(libc::EAGAIN) => return Ok(()),
                    _ => return Err(e),
                }
            }
            self.pending.drain(..r as usize);
        }
        Ok(())
    }

    fn reap(&mut self, min: u32, max: u32, out: &mut Vec<Completion>) -> io::Result<()> {
        self.submit()?;
        loop {
            // SAFETY: `events` has room for `events.len()` entries.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    min as libc::c_long,
                    (max as usize).clamp(min.max(1) as usize, self.events.len()) as libc::c_long,
                    self.events.as_mut_ptr(),
                    std::ptr::null::<libc::timespec>(),
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            out.extend(self.events[..r as usize].iter().map(|ev| Completion {
                slot: ev.data as u32,
                result: ev.res,
            }));
            return Ok(());
        }
    }
}
