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

pub mod errno;
mod parse;

use std::fmt::Write as _;

/// The first line of a version-2 trace: what this plumb writes unless
/// the trace needs version 3.
pub const MAGIC: &str = "plumb-trace 2";
/// The first line of a trace with locks or steps.
pub const MAGIC_V3: &str = "plumb-trace 3";
/// The first line of a version-1 trace, which still loads.
pub const MAGIC_V1: &str = "plumb-trace 1";

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EntryKind {
    /// A regular file (or anything not known to be otherwise).
    #[default]
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
}

impl EntryKind {
    fn letter(self) -> &'static str {
        match self {
            EntryKind::File => "f",
            EntryKind::Dir => "d",
            EntryKind::Symlink => "l",
        }
    }
}

/// A file, directory or symlink the program touched.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileEntry {
    /// Path relative to the recording's root.
    pub path: String,
    /// Size when first touched; None when it did not exist yet.
    pub size: Option<u64>,
    /// What it was when first touched.
    pub kind: EntryKind,
    /// A symlink's target, as the link holds it.
    pub target: Option<String>,
}

impl FileEntry {
    /// A regular file of `size` bytes (None: did not exist yet).
    pub fn file(path: &str, size: Option<u64>) -> FileEntry {
        FileEntry {
            path: path.to_string(),
            size,
            ..FileEntry::default()
        }
    }
}

/// Flags of an `open`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenFlags {
    /// Opened for reading.
    pub read: bool,
    /// Opened for writing.
    pub write: bool,
    /// O_CREAT.
    pub create: bool,
    /// O_TRUNC.
    pub truncate: bool,
    /// O_APPEND.
    pub append: bool,
    /// O_EXCL.
    pub exclusive: bool,
    /// O_DIRECT.
    pub direct: bool,
    /// O_SYNC.
    pub sync: bool,
    /// O_DSYNC.
    pub dsync: bool,
    /// O_DIRECTORY: a directory, to read its entries or sync it.
    pub directory: bool,
    /// Opened before the trace began (not an operation of the program's).
    pub implicit: bool,
}

impl OpenFlags {
    fn text(&self) -> String {
        let mut out = match (self.read, self.write) {
            (true, true) => "rw",
            (false, true) => "w",
            _ => "r",
        }
        .to_string();
        for (on, name) in [
            (self.create, "creat"),
            (self.truncate, "trunc"),
            (self.append, "append"),
            (self.exclusive, "excl"),
            (self.direct, "direct"),
            (self.sync, "sync"),
            (self.dsync, "dsync"),
            (self.directory, "dir"),
            (self.implicit, "implicit"),
        ] {
            if on {
                out.push(',');
                out.push_str(name);
            }
        }
        out
    }

    fn parse(s: &str) -> Result<OpenFlags, String> {
        let mut f = OpenFlags::default();
        for (i, w) in s.split(',').enumerate() {
            match (i, w) {
                (0, "r") => f.read = true,
                (0, "w") => f.write = true,
                (0, "rw") => (f.read, f.write) = (true, true),
                (0, _) => return Err(format!("open mode '{w}' is not r, w or rw")),
                (_, "creat") => f.create = true,
                (_, "trunc") => f.truncate = true,
                (_, "append") => f.append = true,
                (_, "excl") => f.exclusive = true,
                (_, "direct") => f.direct = true,
                (_, "sync") => f.sync = true,
                (_, "dsync") => f.dsync = true,
                (_, "dir") => f.directory = true,
                (_, "implicit") => f.implicit = true,
                _ => {
                    let shown: String = w.chars().take(40).collect();
                    return Err(format!("unknown open flag '{shown}'"));
                }
            }
        }
        Ok(f)
    }
}

/// renameat2's flags that change what a rename does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RenameMode {
    /// rename(2): replaces the target.
    #[default]
    Replace,
    /// RENAME_NOREPLACE: fails with EEXIST when the target exists.
    NoReplace,
    /// RENAME_EXCHANGE: swaps the two paths.
    Exchange,
}

/// One operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpKind {
    /// Opens file `file` as handle `handle`.
    Open {
        /// The handle (the trace's descriptor number) the call used.
        handle: u32,
        /// File id.
        file: u32,
        /// The open flags that matter to a replay.
        flags: OpenFlags,
    },
    /// A read; `call` is read, pread, readv or preadv.
    Read {
        /// The system call.
        call: &'static str,
        /// The handle (the trace's descriptor number) the call used.
        handle: u32,
        /// Byte offset in the file.
        offset: u64,
        /// Length in bytes, as the call asked.
        len: u64,
    },
    /// A write; `call` is write, pwrite, writev or pwritev.
    Write {
        /// The system call.
        call: &'static str,
        /// The handle (the trace's descriptor number) the call used.
        handle: u32,
        /// Byte offset in the file.
        offset: u64,
        /// Length in bytes, as the call asked.
        len: u64,
    },
    /// A seek to an absolute offset.
    Lseek {
        /// The handle (the trace's descriptor number) the call used.
        handle: u32,
        /// New offset.
        offset: u64,
    },
    /// `fsync(2)` as recorded.
    Fsync(u32),
    /// `fdatasync(2)` as recorded.
    Fdatasync(u32),
    /// `sync_file_range(2)` as recorded.
    SyncFileRange {
        /// The handle (the trace's descriptor number) the call used.
        handle: u32,
        /// Byte offset in the file.
        offset: u64,
        /// Length in bytes, as the call asked.
        len: u64,
    },
    /// `ftruncate(2)` as recorded.
    Ftruncate {
        /// The handle (the trace's descriptor number) the call used.
        handle: u32,
        /// New length.
        len: u64,
    },
    /// `fallocate(2)` as recorded.
    Fallocate {
        /// The handle (the trace's descriptor number) the call used.
        handle: u32,
        /// Byte offset in the file.
        offset: u64,
        /// Length in bytes, as the call asked.
        len: u64,
    },
    /// `close(2)` as recorded.
    Close(u32),
    /// `fstat(2)` as recorded.
    Fstat(u32),
    /// mmap of a file (noted, not replayed).
    Mmap {
        /// The handle (the trace's descriptor number) the call used.
        handle: u32,
        /// Bytes mapped.
        len: u64,
    },
    /// copy_file_range or sendfile.
    Copy {
        /// Source handle.
        from: u32,
        /// Destination handle.
        to: u32,
        /// Length in bytes, as the call asked.
        len: u64,
    },
    /// stat of a path.
    Stat(u32),
    /// `unlink(2)` as recorded.
    Unlink(u32),
    /// `mkdir(2)` as recorded.
    Mkdir(u32),
    /// `rmdir(2)` as recorded.
    Rmdir(u32),
    /// `rename(2)`, `renameat(2)` or `renameat2(2)` as recorded.
    Rename {
        /// Source file id.
        from: u32,
        /// Destination file id.
        to: u32,
        /// renameat2's flags.
        mode: RenameMode,
    },
    /// `getdents64(2)` on a directory handle, with a buffer of `len` bytes.
    Readdir {
        /// The directory's handle.
        handle: u32,
        /// The buffer size the call passed.
        len: u64,
    },
    /// `dup`, `dup2`, `dup3` or `fcntl(F_DUPFD*)`: `to` is a new descriptor
    /// for what `from` holds.
    Dup {
        /// The handle duplicated.
        from: u32,
        /// The new handle.
        to: u32,
    },
    /// A child process's copy of a parent's descriptor, made by the kernel
    /// at fork (not a call of the program's: replayed, not counted).
    Inherit {
        /// The parent's handle.
        from: u32,
        /// The child's handle.
        to: u32,
    },
    /// `fchmod(2)` as recorded.
    Fchmod {
        /// The handle.
        handle: u32,
        /// The new mode (permission bits).
        mode: u32,
    },
    /// `access(2)`/`faccessat(2)` of a path.
    Access(u32),
    /// `statfs(2)` of a path.
    Statfs(u32),
    /// `readlink(2)` of a path.
    Readlink(u32),
    /// `utimensat(2)` on a path (times set to now on replay).
    Utimes(u32),
    /// `chmod(2)`/`fchmodat(2)` of a path.
    Chmod {
        /// The file id.
        file: u32,
        /// The new mode (permission bits).
        mode: u32,
    },
    /// `truncate(2)` of a path.
    Truncate {
        /// The file id.
        file: u32,
        /// New length.
        len: u64,
    },
    /// `link(2)`/`linkat(2)`: a new name for an existing file.
    Link {
        /// The existing file.
        from: u32,
        /// The new name.
        to: u32,
    },
    /// `symlink(2)`/`symlinkat(2)`: a symlink at `file` holding `target`.
    Symlink {
        /// Where the link is made.
        file: u32,
        /// What it points to, as the program wrote it.
        target: String,
    },
    /// A POSIX byte-range lock (`fcntl(F_SETLK)`, `F_WRLCK` or `F_RDLCK`)
    /// on `len` bytes from `offset` (0: to the end of the file). Version 3.
    Lock {
        /// The handle.
        handle: u32,
        /// First byte locked.
        offset: u64,
        /// Bytes locked; 0 locks to the end of the file, however long.
        len: u64,
        /// A write (exclusive) lock; a read (shared) lock otherwise.
        write: bool,
    },
    /// The release of a byte range (`fcntl(F_SETLK)` with `F_UNLCK`).
    /// Version 3.
    Unlock {
        /// The handle.
        handle: u32,
        /// First byte released.
        offset: u64,
        /// Bytes released; 0: to the end of the file.
        len: u64,
    },
}

/// The read calls, in the order they are named.
pub const READ_CALLS: &[&str] = &["read", "pread", "readv", "preadv"];
/// The write calls.
pub const WRITE_CALLS: &[&str] = &["write", "pwrite", "writev", "pwritev"];

impl OpKind {
    /// The operation's name, as counted in reports.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Open { .. } => "open",
            OpKind::Read { call, .. } | OpKind::Write { call, .. } => call,
            OpKind::Lseek { .. } => "lseek",
            OpKind::Fsync(_) => "fsync",
            OpKind::Fdatasync(_) => "fdatasync",
            OpKind::SyncFileRange { .. } => "sync_file_range",
            OpKind::Ftruncate { .. } => "ftruncate",
            OpKind::Fallocate { .. } => "fallocate",
            OpKind::Close(_) => "close",
            OpKind::Fstat(_) => "fstat",
            OpKind::Mmap { .. } => "mmap",
            OpKind::Copy { .. } => "copy",
            OpKind::Stat(_) => "stat",
            OpKind::Unlink(_) => "unlink",
            OpKind::Mkdir(_) => "mkdir",
            OpKind::Rmdir(_) => "rmdir",
            OpKind::Rename { .. } => "rename",
            OpKind::Readdir { .. } => "readdir",
            OpKind::Dup { .. } => "dup",
            OpKind::Inherit { .. } => "inherit",
            OpKind::Fchmod { .. } => "fchmod",
            OpKind::Access(_) => "access",
            OpKind::Statfs(_) => "statfs",
            OpKind::Readlink(_) => "readlink",
            OpKind::Utimes(_) => "utimes",
            OpKind::Chmod { .. } => "chmod",
            OpKind::Truncate { .. } => "truncate",
            OpKind::Link { .. } => "link",
            OpKind::Symlink { .. } => "symlink",
            OpKind::Lock { .. } => "lock",
            OpKind::Unlock { .. } => "unlock",
        }
    }

    /// True for the operations a version-2 trace cannot hold.
    pub fn needs_v3(&self) -> bool {
        matches!(self, OpKind::Lock { .. } | OpKind::Unlock { .. })
    }

    /// True for the operations of the program's own (an implicit open or
    /// an inherited descriptor is the kernel's, and is not counted).
    pub fn counted(&self) -> bool {
        match self {
            OpKind::Open { flags, .. } => !flags.implicit,
            OpKind::Inherit { .. } => false,
            _ => true,
        }
    }

    /// Bytes the operation reads or writes.
    pub fn bytes(&self) -> u64 {
        match self {
            OpKind::Read { len, .. } | OpKind::Write { len, .. } | OpKind::Copy { len, .. } => *len,
            _ => 0,
        }
    }

    fn args(&self) -> String {
        match self {
            OpKind::Open {
                handle,
                file,
                flags,
            } => format!("{handle} {file} {}", flags.text()),
            OpKind::Read {
                handle,
                offset,
                len,
                ..
            }
            | OpKind::Write {
                handle,
                offset,
                len,
                ..
            }
            | OpKind::SyncFileRange {
                handle,
                offset,
                len,
            }
            | OpKind::Fallocate {
                handle,
                offset,
                len,
            } => format!("{handle} {offset} {len}"),
            OpKind::Lseek { handle, offset } => format!("{handle} {offset}"),
            OpKind::Ftruncate { handle, len } | OpKind::Mmap { handle, len } => {
                format!("{handle} {len}")
            }
            OpKind::Fsync(h) | OpKind::Fdatasync(h) | OpKind::Close(h) | OpKind::Fstat(h) => {
                h.to_string()
            }
            OpKind::Copy { from, to, len } => format!("{from} {to} {len}"),
            OpKind::Stat(f)
            | OpKind::Unlink(f)
            | OpKind::Mkdir(f)
            | OpKind::Rmdir(f)
            | OpKind::Access(f)
            | OpKind::Statfs(f)
            | OpKind::Readlink(f)
            | OpKind::Utimes(f) => f.to_string(),
            OpKind::Rename { from, to, mode } => match mode {
                RenameMode::Replace => format!("{from} {to}"),
                RenameMode::NoReplace => format!("{from} {to} noreplace"),
                RenameMode::Exchange => format!("{from} {to} exchange"),
            },
            OpKind::Readdir { handle, len } => format!("{handle} {len}"),
            OpKind::Dup { from, to } | OpKind::Inherit { from, to } | OpKind::Link { from, to } => {
                format!("{from} {to}")
            }
            OpKind::Fchmod { handle: h, mode } | OpKind::Chmod { file: h, mode } => {
                format!("{h} {mode:o}")
            }
            OpKind::Truncate { file, len } => format!("{file} {len}"),
            OpKind::Symlink { file, target } => format!("{file} {}", encode(target)),
            OpKind::Lock {
                handle,
                offset,
                len,
                write,
            } => format!("{handle} {offset} {len} {}", if *write { "w" } else { "r" }),
            OpKind::Unlock {
                handle,
                offset,
                len,
            } => format!("{handle} {offset} {len}"),
        }
    }
}

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

/// Most step names a trace may have.
pub const MAX_STEPS: usize = 256;

/// Named steps (version 3): which operations begin one, and the names.
/// A step takes in the operations of its thread from the one that begins
/// it up to the next one of that thread that begins a step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Steps {
    /// Step names, indexed by step id, in the order of first use.
    pub names: Vec<String>,
    /// (operation index, step id) of every operation that begins a step,
    /// in operation order.
    pub starts: Vec<(u32, u16)>,
}

impl Steps {
    /// Marks operation `op` (later than any marked before) as the start
    /// of a step called `name`: 1 to 32 letters, digits, `_`, `-` or `.`,
    /// at most [`MAX_STEPS`] different names.
    pub fn mark(&mut self, op: u32, name: &str) -> Result<(), String> {
        let id = match self.names.iter().position(|n| n == name) {
            Some(id) => id,
            None => {
                let ok = (1..=32).contains(&name.len())
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
                if !ok {
                    let shown: String = name.chars().take(40).collect();
                    return Err(format!(
                        "step name '{shown}' is not 1 to 32 letters, digits, '_', '-' or '.'"
                    ));
                }
                if self.names.len() >= MAX_STEPS {
                    return Err(format!(
                        "more than {MAX_STEPS} step names (the most a trace may have)"
                    ));
                }
                self.names.push(name.to_string());
                self.names.len() - 1
            }
        };
        if self.starts.last().is_some_and(|(at, _)| *at >= op) {
            return Err("steps must be marked in operation order".into());
        }
        // Below MAX_STEPS, hence a u16.
        self.starts.push((op, id as u16));
        Ok(())
    }

    /// The step operation `op` begins, if it begins one.
    pub fn begun_by(&self, op: usize) -> Option<u16> {
        let op = u32::try_from(op).ok()?;
        self.starts
            .binary_search_by_key(&op, |(at, _)| *at)
            .ok()
            .map(|i| self.starts[i].1)
    }

    /// The name of step `id`.
    pub fn name(&self, id: u16) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }
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

/// A malformed trace, naming the record.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct TraceError {
    /// The trace file.
    pub file: String,
    /// 1-based line of the record.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

pub(crate) fn encode(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b <= b' ' || b == b'%' || b == 0x7f {
            let _ = write!(out, "%{b:02x}");
        } else {
            out.push(b as char);
        }
    }
    out
}

fn decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or("a % escape is cut short")?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad % escape '%{hex}'"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "path is not UTF-8".to_string())
}

impl Trace {
    /// True when only version 3 can hold the trace (locks or steps).
    pub fn needs_v3(&self) -> bool {
        !self.steps.starts.is_empty() || self.ops.iter().any(|o| o.kind.needs_v3())
    }

    /// The trace as text: version 2, or version 3 when it needs it.
    pub fn to_text(&self) -> String {
        let magic = if self.needs_v3() { MAGIC_V3 } else { MAGIC };
        let mut out = format!("{magic}\nduration_us {}\n", self.duration_us);
        if let Some(t) = &self.tracer {
            let _ = writeln!(out, "tracer {} {} {}", t.name, t.wall_us, t.calls);
        }
        for (i, f) in self.files.iter().enumerate() {
            let size = f.size.map_or("-".to_string(), |s| s.to_string());
            let _ = write!(
                out,
                "file {i} {} {size} {}",
                f.kind.letter(),
                encode(&f.path)
            );
            if let Some(target) = &f.target {
                let _ = write!(out, " {}", encode(target));
            }
            out.push('\n');
        }
        for (i, t) in self.threads.iter().enumerate() {
            let _ = writeln!(out, "thread {i} {t}");
        }
        let mut starts = self.steps.starts.iter().peekable();
        for (i, op) in self.ops.iter().enumerate() {
            let _ = write!(
                out,
                "op {} {} {} {} {}",
                op.thread,
                op.start_us,
                op.dur_us,
                op.kind.name(),
                op.kind.args()
            );
            if let Some(e) = op.failed {
                let _ = write!(out, " ={}", errno::name(e));
            }
            if let Some((_, id)) = starts.next_if(|(at, _)| *at as usize == i) {
                let _ = write!(out, " @{}", self.steps.name(*id));
            }
            out.push('\n');
        }
        let _ = writeln!(out, "end {}", self.ops.len());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        Trace {
            files: vec![
                FileEntry::file("db/app db.sqlite", Some(8192)),
                FileEntry {
                    path: "db".into(),
                    size: Some(0),
                    kind: EntryKind::Dir,
                    target: None,
                },
                FileEntry {
                    path: "db/cur".into(),
                    size: Some(0),
                    kind: EntryKind::Symlink,
                    target: Some("app db.sqlite".into()),
                },
            ],
            threads: vec![100, 101],
            ops: vec![
                Op {
                    thread: 0,
                    start_us: 0,
                    dur_us: 5,
                    failed: None,
                    kind: OpKind::Open {
                        handle: 0,
                        file: 0,
                        flags: OpenFlags {
                            read: true,
                            write: true,
                            direct: true,
                            ..Default::default()
                        },
                    },
                },
                Op {
                    thread: 0,
                    start_us: 10,
                    dur_us: 3,
                    failed: None,
                    kind: OpKind::Read {
                        call: "pread",
                        handle: 0,
                        offset: 4096,
                        len: 4096,
                    },
                },
                Op {
                    thread: 1,
                    start_us: 12,
                    dur_us: 3,
                    failed: None,
                    kind: OpKind::Write {
                        call: "write",
                        handle: 0,
                        offset: 0,
                        len: 100,
                    },
                },
                Op {
                    thread: 0,
                    start_us: 20,
                    dur_us: 300,
                    failed: None,
                    kind: OpKind::Fsync(0),
                },
                Op {
                    thread: 1,
                    start_us: 300,
                    dur_us: 4,
                    failed: Some(libc::ENOENT),
                    kind: OpKind::Stat(1),
                },
                Op {
                    thread: 0,
                    start_us: 400,
                    dur_us: 2,
                    failed: None,
                    kind: OpKind::Close(0),
                },
                Op {
                    thread: 1,
                    start_us: 410,
                    dur_us: 9,
                    failed: None,
                    kind: OpKind::Rename {
                        from: 0,
                        to: 1,
                        mode: RenameMode::NoReplace,
                    },
                },
            ],
            duration_us: 500,
            tracer: Some(Tracer {
                name: "strace".into(),
                wall_us: 900,
                calls: 40,
            }),
            steps: Steps::default(),
        }
    }

    #[test]
    fn text_round_trips() {
        let t = sample();
        let text = t.to_text();
        assert!(text.contains("file 0 f 8192 db/app%20db.sqlite"));
        assert!(text.contains("file 2 l 0 db/cur app%20db.sqlite"), "{text}");
        assert!(text.contains("stat 1 =ENOENT"), "{text}");
        assert_eq!(Trace::parse("t", &text).unwrap(), t);
    }

    #[test]
    fn errors_name_the_record() {
        let text = sample().to_text();
        let cut: String = text.lines().take(7).map(|l| format!("{l}\n")).collect();
        let e = Trace::parse("app.trace", &cut).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        let bad = text.replace("op 0 10 3 pread 0 4096 4096", "op 0 10 3 pread 7 4096 4096");
        let e = Trace::parse("app.trace", &bad).unwrap_err();
        assert_eq!(e.line, 10, "{e}");
        assert!(
            e.message.contains("handle 7 is used before it is opened"),
            "{e}"
        );
        let bad = text.replace("op 0 20 300 fsync 0", "op 0 20 300 fsync");
        let e = Trace::parse("app.trace", &bad).unwrap_err();
        assert!(e.to_string().starts_with("app.trace:12: "), "{e}");
        assert!(Trace::parse("x", "hello\n")
            .unwrap_err()
            .message
            .contains("not a plumb trace"));
    }

    #[test]
    fn hostile_numbers_and_lines_are_refused_by_record() {
        let head =
            "plumb-trace 2\nduration_us 10\nfile 0 f - a\nthread 0 1\nop 0 0 1 open 0 0 rw,creat\n";
        let cases = [
            ("op 0 1 1 pwrite 0 1125899906842624 1\n", "largest file"),
            (
                "op 0 1 1 pwrite 0 0 1099511627776\n",
                "one operation may move",
            ),
            ("op 0 1 1 pwrite 0 -1 1\n", "not a number"),
            (
                "op 0 18446744073709551615 1 fsync 0\n",
                "latest a trace may name",
            ),
            ("op 0 1 1 open 4294967296 0 r\n", "not below"),
            ("op 0 1 1 open 0 0 r\n", "opened a second time"),
            ("op 0 1 1 close 4294967296\n", "used before it is opened"),
            ("op 0 1 1 stat 0 =ENOPE\n", "not an error number"),
            ("op 0 1 1 symlink 0\n", "without a target"),
            ("op 0 1 1 chmod 0 99999\n", "not a mode"),
            ("op 0 1 1 dup 0 0\n", "opened a second time"),
            ("op 0 1 1 readdir 7 10\n", "used before it is opened"),
            (
                "op 0 1 1 rename 0 0 sideways\n",
                "not noreplace or exchange",
            ),
        ];
        for (op, what) in cases {
            let e = Trace::parse("h.trace", &format!("{head}{op}end 2\n")).unwrap_err();
            assert_eq!(e.line, 6, "{e}");
            assert!(e.message.contains(what), "{op}: {e}");
        }
        let long = format!("{head}# {}\nend 1\n", "x".repeat(1 << 20));
        assert!(Trace::parse("h", &long)
            .unwrap_err()
            .message
            .contains("at most"));
        let mut threads = String::from("plumb-trace 1\n");
        for i in 0..=crate::trace::limits::MAX_THREADS {
            threads.push_str(&format!("thread {i} {i}\n"));
        }
        let e = Trace::parse("h", &threads).unwrap_err();
        assert!(e.message.contains("threads"), "{e}");
    }

    #[test]
    fn version_1_traces_load_and_may_not_use_version_2_records() {
        let v1 = "plumb-trace 1\nduration_us 10\nfile 0 4096 a\nthread 0 1\nop 0 0 1 open 0 0 r\nop 0 1 1 pread 0 0 4096\nend 2\n";
        let t = Trace::parse("v1", v1).unwrap();
        assert_eq!(t.files[0], FileEntry::file("a", Some(4096)));
        assert_eq!(Trace::parse("v2", &t.to_text()).unwrap(), t);
        let e = Trace::parse("v1", &v1.replace("pread 0 0 4096", "readdir 0 4096")).unwrap_err();
        assert!(e.message.contains("version 2"), "{e}");
    }

    #[test]
    fn version_3_holds_locks_and_steps_and_is_written_only_when_needed() {
        let v3 = "plumb-trace 3\nduration_us 10\nfile 0 d 0 .\nfile 1 f - a\nthread 0 1\n\
                  op 0 0 0 stat 1 =ENOENT @NTCreateX\nop 0 0 0 open 0 1 rw,creat\nop 0 0 0 fstat 0\n\
                  op 0 1 0 lock 0 2147483538 1 w @LockX\nop 0 2 0 unlock 0 0 0 @UnlockX\n\
                  op 0 3 0 lock 0 10 5 r @LockX\nend 6\n";
        let t = Trace::parse("v3", v3).unwrap();
        assert_eq!(t.steps.names, ["NTCreateX", "LockX", "UnlockX"]);
        assert_eq!(t.steps.starts, [(0, 0), (3, 1), (4, 2), (5, 1)]);
        assert_eq!(t.steps.begun_by(3), Some(1));
        assert_eq!(t.steps.begun_by(1), None);
        assert_eq!(
            t.ops[3].kind,
            OpKind::Lock {
                handle: 0,
                offset: 2147483538,
                len: 1,
                write: true
            }
        );
        assert_eq!(t.to_text(), v3);
        assert_eq!(Trace::parse("again", &t.to_text()).unwrap(), t);
        // Without locks or steps, version 2 as before.
        assert!(sample().to_text().starts_with("plumb-trace 2\n"));
        // Version 2 may not use them.
        let v2 = v3.replace("plumb-trace 3", "plumb-trace 2");
        let e = Trace::parse("v2", &v2).unwrap_err();
        assert!(e.message.contains("version 3"), "{e}");
        let no_steps = "plumb-trace 2\nfile 0 f - a\nthread 0 1\nop 0 0 0 open 0 0 rw,creat\nop 0 1 0 lock 0 0 1 w\nend 2\n";
        let e = Trace::parse("v2", no_steps).unwrap_err();
        assert!(
            e.message
                .contains("'lock' is an operation of trace version 3"),
            "{e}"
        );
        for (bad, what) in [
            ("op 0 1 0 lock 0 0 1 x", "not r or w"),
            ("op 0 1 0 lock 0 0 1", "without its kind"),
            ("op 0 1 0 unlock 0 18446744073709551615 1", "overflows"),
            ("op 0 1 0 fstat 0 @", "step name"),
            ("op 0 1 0 fstat 0 @a/b", "step name"),
            ("op 0 1 0 lock 7 0 1 w", "used before it is opened"),
        ] {
            let text = format!(
                "plumb-trace 3\nfile 0 f - a\nthread 0 1\nop 0 0 0 open 0 0 rw,creat\n{bad}\nend 2\n"
            );
            let e = Trace::parse("b", &text).unwrap_err();
            assert_eq!(e.line, 5, "{bad}: {e}");
            assert!(e.message.contains(what), "{bad}: {e}");
        }
    }

    #[test]
    fn a_failed_open_leaves_its_handle_unopened() {
        let text = "plumb-trace 2\nfile 0 f - a\nthread 0 1\nop 0 0 1 open 0 0 r =ENOENT\nop 0 1 1 fstat 0\nend 2\n";
        let e = Trace::parse("f", text).unwrap_err();
        assert!(
            e.message.contains("handle 0 is used before it is opened"),
            "{e}"
        );
    }
}
