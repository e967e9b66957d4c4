//! dbench's load files (NetBench's `client.txt` format) as plumb traces.
//!
//! [`convert`] turns each line into the system calls dbench 4.0's `fileio`
//! backend makes for it on a local file system (`fileio.c` and `child.c` of
//! dbench 4.0, checked against `strace -f dbench -c client.txt 1`), as one
//! client's operations in its own directory, starting from an empty one:
//!
//! | load file | system calls (`fileio.c`) |
//! |---|---|
//! | every path (below) | `resolve_name`: a stat; if it fails, the parent directory is read through to look for the name without regard to case (open, fstat, getdents64, close) |
//! | `NTCreateX path opts disp fnum` | resolve; a `mkdir` first for a directory (opts & 1, result ignored); `open` read-write, with `O_CREAT` for disposition 2, `O_CREAT\|O_TRUNC` for 4 and 5, or read-only `O_DIRECTORY` for a directory, opened again as a directory when it fails with `EISDIR`; an `fstat` |
//! | `Close fnum` | `close` |
//! | `ReadX fnum off size ret` / `WriteX ...` | `pread` / `pwrite` of `size` bytes |
//! | `Flush fnum` | `fsync` |
//! | `QUERY_PATH_INFORMATION path level` | resolve only |
//! | `QUERY_FILE_INFORMATION fnum level` | `fstat` |
//! | `QUERY_FS_INFORMATION level` | `statfs` of the client's directory (dbench's: of `-D`) |
//! | `SET_FILE_INFORMATION fnum level` | `fstat`, then `utime` of the name it was opened by |
//! | `FIND_FIRST pattern level max count` | resolve; with a wildcard (`<>*?"`), the pattern's directory read through (up to `max` entries) |
//! | `Unlink path attr` / `Rmdir path` / `Rename old new` | resolve each path; `unlink` / `rmdir` / `rename`, which must succeed or fail as the status says (dbench stops otherwise) |
//! | `Mkdir path` | resolve; `mkdir` (result ignored) |
//! | `Deltree path` | read the directory, stat each entry, unlink files and descend into directories (which stay: dbench 4.0 removes no directory) |
//! | `LockX fnum off len` / `UnlockX ...` | `fcntl` write lock / unlock of the range (`lock`, `unlock` in the trace) |
//! | `Sleep usec` | think time |
//!
//! On a directory's handle a ReadX fails with `EISDIR` (dbench notes it
//! and goes on), a LockX with `EBADF` (not open for writing; ignored), and
//! a WriteX stops dbench, so it is refused. What plumb does not do: the
//! `-x` xattr hooks, `-S` directory syncs, `-s` `O_SYNC` and `-F` fsyncs
//! (dbench options off by default); `utime` sets the times to now, not to
//! dbench's "10 and 12 seconds ago"; locks are taken with `F_SETLK`, not
//! `F_SETLKW`, so a replay can never hang on one; a directory read is
//! counted as glibc's 32 KiB `getdents64` calls in name order (the real
//! order is the file system's); dbench's renaming of `client1` inside file
//! names for other clients is not copied (each client has its own
//! directory instead).
//!
//! The outcome of every call comes from a model of the client's directory
//! as the lines change it (case-sensitive, as a local file system is), so
//! the trace expects exactly the failures the replay will see; where dbench
//! checks a status (Unlink, Rmdir, Rename) a disagreement is an error, as
//! it stops dbench; elsewhere fileio's outcome is kept and counted in a
//! note. NT statuses map to errnos ([`status`]). Each line's calls form a
//! step named as dbench's latency table names the operation (`NTCreateX`,
//! `Qpathinfo`, `Find`, ...).
//!
//! Paths: `\` becomes `/` and the leading `\clients\clientN` is taken off,
//! so the trace is one client's tree; `\clients` itself (dbench's set-up)
//! is left out. A path that climbs, is absolute after that, is empty where
//! a name is needed, or holds a control byte is refused, naming the line.

//!
//! In the code: `load.rs` reads a line (words, numbers, statuses, paths),
//! `tree.rs` models the client's directory, `converter.rs` holds the
//! conversion and the calls every line is made of, `lines.rs` and
//! `create.rs` turn each operation into fileio's calls; errors are typed
//! ([`LoadError`]), each naming its line ([`DbenchError`]).

mod converter;
mod create;
mod error;
mod lines;
mod load;
mod tree;

use super::format::Trace;
use super::limits::MAX_LOG_LINE;
use converter::Converter;
pub use error::{DbenchError, LoadError};
pub use load::status;

/// A converted load file, and what the conversion left out or noticed.
#[derive(Debug)]
pub struct Converted {
    /// The trace: one thread, the client's tree, nothing existing at first.
    pub trace: Trace,
    /// One line per thing worth knowing (left out, disagreeing statuses).
    pub notes: Vec<String>,
}

/// The buffer glibc's `readdir` hands `getdents64` (what `strace` shows
/// dbench using).
pub const GETDENTS_BYTES: u64 = 32 << 10;

/// Most files dbench's fileio backend holds open per client (its
/// `MAX_FILES`; one more stops it).
pub const MAX_OPEN: usize = 200;

/// Longest path dbench may name once it is beneath a client's directory.
const MAX_PATH: usize = 4000;

/// Converts a load file's text: one client's operations as dbench 4.0's
/// fileio backend makes them, from an empty directory.
pub fn convert(name: &str, text: &str) -> Result<Converted, DbenchError> {
    let err = |line: usize, cause: LoadError| DbenchError {
        file: name.to_string(),
        line,
        cause,
    };
    let mut c = Converter::new();
    let mut lines = 0usize;
    for (i, raw) in text.split('\n').enumerate() {
        let n = i + 1;
        if raw.len() > MAX_LOG_LINE {
            return Err(err(n, LoadError::LongLine(raw.len())));
        }
        let line = raw.trim_end_matches('\r').trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let l = load::line(line).map_err(|e| err(n, e))?;
        if let Some(us) = l.at_us {
            c.clock = c.clock.max(us);
        }
        c.line(n, l.op, &l.args, l.want).map_err(|e| err(n, e))?;
        lines += 1;
    }
    c.t.duration_us = c.clock;
    if lines == 0 {
        return Err(err(1, LoadError::Empty));
    }
    let notes = c.tally.notes();
    Ok(Converted { trace: c.t, notes })
}

#[cfg(test)]
mod tests;
