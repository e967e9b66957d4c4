//! I/O engines: one trait, one file per engine, one registry.
//!
//! An engine moves bytes between slot memory and files that it owns jointly
//! with the runner ([`memory`]). Synchronous engines complete a request
//! inside [`IoEngine::queue`]; asynchronous ones hand it to the kernel and
//! report it from [`IoEngine::reap`], and wait for what is still in flight
//! when they are dropped. The runner decides when to submit, so the batching
//! policy lives in one place.

mod cpuio;
mod falloc;
mod ftruncate;
mod io_uring;
mod libaio;
pub mod memory;
mod metadata;
mod mmap;
mod net;
mod null;
mod posixaio;
mod psync;
mod pvsync;
mod sync;

use crate::files::FilePlan;
use crate::job::spec::EngineOpts;
pub use cpuio::pacing as cpuio_pacing;
pub use memory::{JobFiles, SlotMemory};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// What an I/O does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Read into the slot's buffer.
    Read,
    /// Write from the slot's buffer.
    Write,
}

/// One I/O handed to an engine.
#[derive(Debug, Clone, Copy)]
pub struct IoRequest {
    /// The buffer slot; also the request's identity until it completes.
    pub slot: u32,
    /// Index of the file in the engine's file table.
    pub file: u32,
    /// Read or write.
    pub op: Op,
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes to transfer (at most the slot buffer's length).
    pub len: u32,
}

/// A finished I/O: bytes transferred, or a negative errno.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    /// The slot of the request.
    pub slot: u32,
    /// Bytes moved, or `-errno`.
    pub result: i64,
}

/// What an engine is given to start: it keeps both `Arc`s until every
/// request it handed the kernel has completed.
pub struct EngineSetup<'a> {
    /// Open files, indexed by [`IoRequest::file`].
    pub files: JobFiles,
    /// Slot memory, one slot per request in flight ([`IoRequest::slot`]).
    pub memory: Arc<SlotMemory>,
    /// Most requests in flight at once (at most the number of slots).
    pub depth: u32,
    /// The files by name, for an engine that works on paths
    /// ([`EngineCaps::by_path`]); empty for the others.
    pub paths: Vec<FilePlan>,
    /// The job's engine options.
    pub options: EngineOpts,
    /// The job's stop flag, for an engine that waits on something else
    /// than the kernel (a peer to connect): it waits in slices and gives up
    /// when the flag is raised or `until` has passed.
    pub stop: &'a AtomicBool,
    /// When the job's runtime ends, if it has one.
    pub until: Option<Instant>,
    /// Which clone of the job this is (`numjobs`): the net engine's port offset.
    pub clone_index: u32,
    /// The job writes (a UDP `net` job that only reads is the receiver).
    pub writes: bool,
}

impl EngineSetup<'_> {
    /// The raw descriptors of the files, in order.
    fn raw_fds(&self) -> Vec<RawFd> {
        self.files.iter().map(|f| f.as_raw_fd()).collect()
    }
}

/// The contract every engine fulfils.
pub trait IoEngine {
    /// Queues a request; a synchronous engine performs it and returns its result.
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>>;
    /// Hands queued requests to the kernel.
    fn submit(&mut self) -> io::Result<()>;
    /// Submits what is queued, waits for at least `min` completions and appends
    /// up to `max` of those available to `out`.
    fn reap(&mut self, min: u32, max: u32, out: &mut Vec<Completion>) -> io::Result<()>;
    /// For an engine that times its own operations
    /// ([`EngineCaps::own_latency`]): the latency of the operation the last
    /// request made, in ns, or `None` when it made none (a request on a
    /// file whose operation is done moves no bytes and takes no time).
    fn op_latency(&mut self) -> Option<u64> {
        None
    }
    /// True once the engine has nothing more to do whatever the job's
    /// size (the net engine's peer has closed). Asked only after a request
    /// that moved 0 bytes; that request is then not counted.
    fn ended(&self) -> bool {
        false
    }
}

/// Capabilities of an engine, as fio's engine flags.
#[derive(Debug, Clone, Copy)]
pub struct EngineCaps {
    /// Requests complete later; `iodepth` applies.
    pub is_async: bool,
    /// No data moves and no file is laid out (fio's diskless engines).
    pub diskless: bool,
    /// The engine works on file names, not on descriptors the runner opens
    /// (fio's file operation engines): it gets [`EngineSetup::paths`].
    pub by_path: bool,
    /// The engine times its operations itself, and only they are latency
    /// samples ([`IoEngine::op_latency`]), as fio's `FIO_NOSTATS` engines.
    pub own_latency: bool,
}

impl EngineCaps {
    /// A synchronous engine on open files (psync and its kin).
    pub const SYNC: EngineCaps = EngineCaps {
        is_async: false,
        diskless: false,
        by_path: false,
        own_latency: false,
    };
}

/// A registered engine.
pub struct EngineInfo {
    /// The name used in job options, results and tables.
    pub name: &'static str,
    /// What it can do.
    pub caps: EngineCaps,
    /// Starts an instance, which owns what `setup` lends it.
    pub create: for<'a> fn(EngineSetup<'a>) -> io::Result<Box<dyn IoEngine + 'a>>,
}

/// Every engine plumb has.
pub static ENGINES: &[EngineInfo] = &[
    io_uring::INFO,
    libaio::INFO,
    psync::INFO,
    sync::INFO,
    null::INFO,
    pvsync::PVSYNC,
    pvsync::PVSYNC2,
    sync::VSYNC,
    posixaio::INFO,
    mmap::INFO,
    metadata::FILECREATE,
    metadata::FILESTAT,
    metadata::FILEDELETE,
    ftruncate::INFO,
    falloc::INFO,
    cpuio::INFO,
    net::INFO,
];

/// Finds an engine by its fio name.
pub fn find(name: &str) -> Option<&'static EngineInfo> {
    ENGINES.iter().find(|e| e.name == name)
}

/// The names of all engines.
pub fn names() -> Vec<&'static str> {
    ENGINES.iter().map(|e| e.name).collect()
}

/// Refuses a request whose slot, file or length is outside what the engine
/// was given, before any pointer from it reaches the kernel; returns the
/// start of the request's slot.
pub(crate) fn check_request(
    req: &IoRequest,
    memory: &SlotMemory,
    files: usize,
) -> io::Result<*mut u8> {
    let slot = memory
        .slot_ptr(req.slot)
        .filter(|_| req.len as usize <= memory.slot_len());
    match slot {
        Some(ptr) if (req.file as usize) < files => Ok(ptr),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "I/O request out of bounds: slot {} ({} slots of {} bytes), file {} ({} files), length {}",
                req.slot,
                memory.slots(),
                memory.slot_len(),
                req.file,
                files,
                req.len
            ),
        )),
    }
}

/// The entry of `items` (an engine's files, descriptors or plans) a
/// request names, or the error of a request beyond them.
pub(crate) fn request_file<T>(items: &[T], file: u32) -> io::Result<&T> {
    items.get(file as usize).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("I/O request for file {file} of {}", items.len()),
        )
    })
}

/// Turns a libc return value into a completion result (`-errno` on failure).
pub(crate) fn syscall_result(ret: isize) -> i64 {
    if ret < 0 {
        -(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as i64)
    } else {
        ret as i64
    }
}
