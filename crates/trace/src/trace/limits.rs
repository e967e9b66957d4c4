//! Bounds that every trace, strace log and fio iolog must keep, checked
//! where the input is read, so a hostile file cannot exhaust memory,
//! overflow arithmetic or ask the replay for more than it can give. Each
//! error that cites one names it.

use std::io::Read;
use std::path::Path;

/// Largest file a trace may describe: sizes, and every offset + length.
/// Far below `i64::MAX`, so every offset fits the system calls' `off_t`.
pub const MAX_FILE_BYTES: u64 = 1 << 50;
/// Largest single read or write (the replay's I/O buffer for it).
pub const MAX_IO_BYTES: u64 = 64 << 20;
/// Latest time a trace may name, in µs (about 50 days).
pub const MAX_TIME_US: u64 = 1 << 42;
/// Most threads a trace may have (the replay starts one per thread).
pub const MAX_THREADS: usize = 512;
/// Most files a trace may name.
pub const MAX_FILES: usize = 100_000;
/// Most bytes of paths and link targets the file records may hold
/// together (what a replay keeps of them).
pub const MAX_FILE_TABLE_BYTES: usize = 64 << 20;
/// Most operations a trace held whole in memory may have (about 64 bytes
/// each), as the converters make one. `plumb trace show` and replays
/// stream a trace and read any number.
pub const MAX_OPS: usize = 2_000_000;
/// Handle ids are below this (the parser keeps a bit per id up to the
/// highest named: at most 2 MiB for each reading of a trace).
pub const MAX_HANDLE: u64 = 1 << 24;
/// Most handles a trace may have open at once.
pub const MAX_OPEN_HANDLES: usize = 1 << 16;
/// Longest symlink target a `file` record may hold (PATH_MAX less its
/// NUL: what `readlink` can have given the recording).
pub const MAX_TARGET: usize = libc::PATH_MAX as usize - 1;
/// Longest line of a trace (a 4096-byte path, percent-encoded, fits).
pub const MAX_TRACE_LINE: usize = 16 << 10;
/// Longest line of an strace log or fio iolog.
pub const MAX_LOG_LINE: usize = 64 << 10;
/// Largest trace held whole in memory.
pub const MAX_TRACE_BYTES: u64 = 256 << 20;
/// Largest trace `plumb trace show` and replays read (they stream it,
/// holding a line at a time).
pub const MAX_STREAMED_TRACE_BYTES: u64 = 64 << 30;
/// Largest strace log or fio iolog.
pub const MAX_LOG_BYTES: u64 = 1 << 30;
/// The replay threads' I/O buffers together (each as large as its
/// thread's largest transfer, at least 1 MiB).
pub const MAX_REPLAY_BUFFERS: u64 = 1 << 30;
/// Slowest and fastest `--speed` factor.
pub const SPEED_RANGE: (f64, f64) = (1e-3, 1e6);

/// Reads a text file of at most `max` bytes; a larger file is refused
/// before it is read into memory. The file is opened without blocking
/// (a FIFO with no writer would wait forever) and must be a regular file.
pub fn read_bounded(path: &Path, max: u64) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    read_bounded_file(file, max)
}

/// [`read_bounded_from`] for an open file, which must be a regular file:
/// a FIFO, socket or device is refused before anything is read.
pub fn read_bounded_file(file: std::fs::File, max: u64) -> std::io::Result<String> {
    if !file.metadata()?.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (plumb reads traces and logs only from regular files)",
        ));
    }
    read_bounded_from(file, max)
}

/// Reads at most `max` bytes of text from `r`; more is an error.
pub fn read_bounded_from(r: impl Read, max: u64) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    r.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than the {} MiB plumb reads", max >> 20),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}
