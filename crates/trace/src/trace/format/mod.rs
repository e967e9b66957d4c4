//! plumb's trace format, version 3: a text file, one line per record.
//!
//! ```text
//! plumb-trace 3
//! duration_us 1523400
//! tracer strace 1700000 9120            how the recording was made (below)
//! file 0 f 1048576 data/app.db         id, kind, size at first touch ("-"
//! file 1 f - data/app.db-journal       when it did not exist yet), path
//! file 2 d 0 data                      (a directory that existed)
//! file 3 l 0 data/cur current.db       a symlink and its target
//! thread 0 4711                        index, original thread id
//! op 0 120 35 open 0 0 rw,creat        thread, start µs, duration µs, op, args
//! op 0 160 12 pwrite 0 4096 4096       handle, offset, length
//! op 0 175 3 stat 1 =ENOENT            a call that failed, with its errno
//! op 0 180 2 lock 0 0 4096 w @LockX    a step begins here (below)
//! ```
//!
//! Kinds: `f` file, `d` directory, `l` symlink. `tracer NAME WALL_US CALLS`
//! says the program ran WALL_US µs under the tracer, which saw CALLS system
//! calls: think time in the trace includes the tracer's slowdown.
//!
//! Operations and their arguments (`h` = handle opened by an `open`, a
//! `dup` or an `inherit`, `f` = file id):
//! `open h f FLAGS` (FLAGS: r, w or rw, then any of creat, trunc, append,
//! excl, direct, sync, dsync, dir, implicit — `implicit` marks a descriptor
//! the program had before the trace began and is not counted as an
//! operation), `read|pread|readv|preadv h off len`,
//! `write|pwrite|writev|pwritev h off len`, `lseek h off`, `fsync h`,
//! `fdatasync h`, `sync_file_range h off len`, `ftruncate h len`,
//! `fallocate h off len`, `close h`, `fstat h`, `mmap h len` (noted, not
//! replayed), `copy h_in h_out len`, `readdir h len` (getdents64 with a
//! buffer of len bytes), `dup h_from h_to` (dup, dup2, dup3, fcntl
//! F_DUPFD), `inherit h_from h_to` (a child process's copy of a parent's
//! descriptor, made by the kernel at fork: not counted), `fchmod h MODE`,
//! `stat f`, `access f`, `statfs f`, `readlink f`, `utimes f`,
//! `chmod f MODE` (octal), `truncate f len`, `unlink f`, `mkdir f`,
//! `rmdir f`, `rename f_from f_to [noreplace|exchange]`, `link f_from f_to`,
//! `symlink f TARGET`; version 3 adds `lock h off len r|w` (a POSIX
//! byte-range lock, `len` 0 to the end of the file) and `unlock h off len`.
//!
//! Any operation may end with `=ERRNO`: the call failed that way in the
//! recording, and a replay expects it to fail the same way.
//!
//! Version 3 also names *steps*: an operation ending with `@NAME` (after
//! any `=ERRNO`) begins a step called NAME, which takes in the operations
//! of the same thread that follow it up to the next one that begins a step.
//! A converter marks what one operation of its source became (dbench's
//! `NTCreateX` is a stat, a directory scan, an open and an fstat), and a
//! replay reports each step's count and latency beside the system calls'.
//!
//! Paths and symlink targets are percent-encoded where they hold spaces,
//! `%` or control bytes. The path `.` names the root itself. A trace is
//! written as version 2 unless it needs version 3 (locks or steps), so
//! older plumbs read what they can; version-1 traces (`file ID SIZE PATH`,
//! no failed calls) and version-2 traces still load.

//!
//! # In the code
//!
//! The operations are defined once, in the table of `ops.rs`: each one's
//! names, version, fields and the kind of argument each field is
//! (`args.rs`: how it is read, checked and written back), and what it
//! means for reports and the byte budget. The macro of `table.rs` makes
//! [`OpKind`] from it, with its reading (`parse.rs` reads the other
//! records), its writing (`write.rs`), its name, and its counting.
//! Errors are typed ([`ParseError`]), each naming its line
//! ([`TraceError`]).

#[macro_use]
mod table;
mod args;
mod entries;
pub mod errno;
mod error;
mod escape;
mod ops;
mod parse;
mod steps;
mod write;

pub use entries::{EntryKind, FileEntry, OpenFlags, RenameMode};
pub use error::{ParseError, StepError, TraceError};
pub use ops::{OpKind, Reach, NAMES};
pub use steps::{Steps, MAX_STEPS};

/// The first line of a version-2 trace: what this plumb writes unless
/// the trace needs version 3.
pub const MAGIC: &str = "plumb-trace 2";
/// The first line of a trace with locks or steps.
pub const MAGIC_V3: &str = "plumb-trace 3";
/// The first line of a version-1 trace, which still loads.
pub const MAGIC_V1: &str = "plumb-trace 1";

/// One recorded operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// Thread index.
    pub thread: u32,
    /// Start, µs after the trace began.
    pub start_us: u64,
    /// How long the call took, µs.
    pub dur_us: u64,
    /// What it did.
    pub kind: OpKind,
    /// The errno it failed with in the recording; None when it succeeded.
    pub failed: Option<i32>,
}

/// How a trace was recorded: the tracer, and how long the program ran
/// under it, so think time is not mistaken for the application's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracer {
    /// The tracer's name (`strace`).
    pub name: String,
    /// Wall time of the traced program, µs.
    pub wall_us: u64,
    /// System calls the tracer saw.
    pub calls: u64,
}

/// A whole trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// Files touched, indexed by file id.
    pub files: Vec<FileEntry>,
    /// Original thread ids, indexed by thread index.
    pub threads: Vec<u64>,
    /// Operations in start order.
    pub ops: Vec<Op>,
    /// Length of the recording in µs.
    pub duration_us: u64,
    /// How it was recorded, when known.
    pub tracer: Option<Tracer>,
    /// Named steps (version 3; empty when the trace has none).
    pub steps: Steps,
}

impl Trace {
    /// True when only version 3 can hold the trace (locks or steps).
    pub fn needs_v3(&self) -> bool {
        !self.steps.starts.is_empty() || self.ops.iter().any(|o| o.kind.needs_v3())
    }
}

#[cfg(test)]
mod tests;
