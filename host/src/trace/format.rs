//! plumb's trace format, version 1: a text file, one line per record.
//!
//! ```text
//! plumb-trace 1
//! duration_us 1523400
//! file 0 1048576 data/app.db          id, size at first touch ("-" when the
//! file 1 - data/app.db-journal        file did not exist yet), relative path
//! thread 0 4711                        index, original thread id
//! op 0 120 35 open 0 0 rw,creat        thread, start µs, duration µs, op, args
//! op 0 160 12 pwrite 0 4096 4096       handle, offset, length
//! ```
//!
//! Operations and their arguments (`h` = handle opened by an `open`, `f` =
//! file id):
//! `open h f FLAGS` (FLAGS: r, w or rw, then any of creat, trunc, append,
//! excl, direct, sync, dsync, implicit — `implicit` marks a descriptor the
//! program had before the trace began and is not counted as an operation),
//! `read|pread|readv|preadv h off len`, `write|pwrite|writev|pwritev h off len`,
//! `lseek h off`, `fsync h`, `fdatasync h`, `sync_file_range h off len`,
//! `ftruncate h len`, `fallocate h off len`, `close h`, `fstat h`,
//! `mmap h len` (noted, not replayed), `copy h_in h_out len`,
//! `stat f`, `unlink f`, `mkdir f`, `rmdir f`, `rename f_from f_to`.
//! Paths are percent-encoded where they hold spaces, `%` or control bytes.

use super::limits::{
    MAX_FILES, MAX_FILE_BYTES, MAX_HANDLE, MAX_IO_BYTES, MAX_OPS, MAX_THREADS, MAX_TIME_US,
    MAX_TRACE_BYTES, MAX_TRACE_LINE,
};
use std::collections::HashSet;
use std::fmt::Write as _;

/// The first line of every trace.
pub const MAGIC: &str = "plumb-trace 1";

/// A file (or directory) the program touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Path relative to the recording's root.
    pub path: String,
    /// Size when first touched; None when it did not exist yet.
    pub size: Option<u64>,
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
                (_, "implicit") => f.implicit = true,
                _ => return Err(format!("unknown open flag '{w}'")),
            }
        }
        Ok(f)
    }
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
    /// `rename(2)` as recorded.
    Rename {
        /// Source file id.
        from: u32,
        /// Destination file id.
        to: u32,
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
            OpKind::Stat(f) | OpKind::Unlink(f) | OpKind::Mkdir(f) | OpKind::Rmdir(f) => {
                f.to_string()
            }
            OpKind::Rename { from, to } => format!("{from} {to}"),
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

fn encode(path: &str) -> String {
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
    /// The trace as text.
    pub fn to_text(&self) -> String {
        let mut out = format!("{MAGIC}\nduration_us {}\n", self.duration_us);
        for (i, f) in self.files.iter().enumerate() {
            let size = f.size.map_or("-".to_string(), |s| s.to_string());
            let _ = writeln!(out, "file {i} {size} {}", encode(&f.path));
        }
        for (i, t) in self.threads.iter().enumerate() {
            let _ = writeln!(out, "thread {i} {t}");
        }
        for op in &self.ops {
            let _ = writeln!(
                out,
                "op {} {} {} {} {}",
                op.thread,
                op.start_us,
                op.dur_us,
                op.kind.name(),
                op.kind.args()
            );
        }
        let _ = writeln!(out, "end {}", self.ops.len());
        out
    }

    /// Parses a trace; `name` is used in errors. Every reference is checked
    /// (handles opened before use and never reused, file and thread ids in
    /// range), every number is within the bounds of [`super::limits`], and
    /// a trace without its `end` record is reported as truncated.
    pub fn parse(name: &str, text: &str) -> Result<Trace, TraceError> {
        let err = |line: usize, message: String| TraceError {
            file: name.to_string(),
            line,
            message,
        };
        if text.len() as u64 > MAX_TRACE_BYTES {
            return Err(err(
                1,
                format!(
                    "the trace is {} bytes; a trace may have at most {MAX_TRACE_BYTES}",
                    text.len()
                ),
            ));
        }
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        match lines.next() {
            Some((_, l)) if l.trim_end() == MAGIC => {}
            Some((_, l)) if l.starts_with("plumb-trace ") && l.len() < 64 => {
                return Err(err(
                    1,
                    format!("unsupported trace version '{l}' (this plumb reads '{MAGIC}')"),
                ))
            }
            _ => {
                return Err(err(
                    1,
                    format!("not a plumb trace (the first line must be '{MAGIC}')"),
                ))
            }
        }
        let mut t = Trace::default();
        let mut ended = None;
        let mut handles = Handles::default();
        for (n, line) in lines {
            if line.len() > MAX_TRACE_LINE {
                return Err(err(
                    n,
                    format!(
                        "the line is {} bytes long; a trace line may have at most {MAX_TRACE_LINE}",
                        line.len()
                    ),
                ));
            }
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(count) = ended {
                return Err(err(n, format!("a record after 'end {count}'")));
            }
            let words: Vec<&str> = line.split(' ').collect();
            let record = words.first().copied().unwrap_or_default();
            let num = |i: usize| -> Result<u64, TraceError> {
                let w = words
                    .get(i)
                    .ok_or_else(|| err(n, format!("'{record}' record is cut short")))?;
                number(w).map_err(|m| err(n, m))
            };
            match record {
                "duration_us" => t.duration_us = time(num(1)?).map_err(|m| err(n, m))?,
                "file" => {
                    if t.files.len() >= MAX_FILES {
                        return Err(err(
                            n,
                            format!("more than {MAX_FILES} files (the most a trace may name)"),
                        ));
                    }
                    if num(1)? != t.files.len() as u64 {
                        return Err(err(
                            n,
                            format!("file ids must count up from 0; expected {}", t.files.len()),
                        ));
                    }
                    let size = match words.get(2) {
                        Some(&"-") => None,
                        _ => Some(file_size(num(2)?).map_err(|m| err(n, m))?),
                    };
                    let path = words
                        .get(3)
                        .ok_or_else(|| err(n, "file record without a path".into()))?;
                    if words.len() > 4 {
                        return Err(err(n, "file record has extra words".into()));
                    }
                    let path = decode(path).map_err(|m| err(n, m))?;
                    t.files.push(FileEntry { path, size });
                }
                "thread" => {
                    if t.threads.len() >= MAX_THREADS {
                        return Err(err(
                            n,
                            format!(
                                "more than {MAX_THREADS} threads (the most plumb replays at once)"
                            ),
                        ));
                    }
                    if num(1)? != t.threads.len() as u64 {
                        return Err(err(
                            n,
                            format!(
                                "thread ids must count up from 0; expected {}",
                                t.threads.len()
                            ),
                        ));
                    }
                    t.threads.push(num(2)?);
                }
                "op" => {
                    if t.ops.len() >= MAX_OPS {
                        return Err(err(
                            n,
                            format!("more than {MAX_OPS} operations (the most a trace may hold)"),
                        ));
                    }
                    let op = parse_op(&words, &t, &mut handles).map_err(|m| err(n, m))?;
                    if let Some(prev) = t.ops.last() {
                        if op.start_us < prev.start_us {
                            return Err(err(n, "operations must be in start order".into()));
                        }
                    }
                    t.ops.push(op);
                }
                "end" => {
                    let count = num(1)?;
                    if count != t.ops.len() as u64 {
                        return Err(err(
                            n,
                            format!(
                                "'end' says {count} operations but {} were read",
                                t.ops.len()
                            ),
                        ));
                    }
                    ended = Some(count);
                }
                other => {
                    let shown: String = other.chars().take(40).collect();
                    return Err(err(n, format!("unknown record '{shown}'")));
                }
            }
        }
        if ended.is_none() {
            let last = text.lines().count();
            return Err(err(
                last,
                format!(
                    "the trace is truncated: no 'end' record after {} operations",
                    t.ops.len()
                ),
            ));
        }
        Ok(t)
    }
}

/// A decimal number of the trace (no sign, no more than u64 holds).
fn number(w: &str) -> Result<u64, String> {
    w.parse().map_err(|_| {
        let shown: String = w.chars().take(40).collect();
        format!("'{shown}' is not a number")
    })
}

/// A time in µs, within [`MAX_TIME_US`].
fn time(us: u64) -> Result<u64, String> {
    if us > MAX_TIME_US {
        return Err(format!(
            "time {us} µs is past the latest a trace may name ({MAX_TIME_US} µs)"
        ));
    }
    Ok(us)
}

/// A file size or offset, within [`MAX_FILE_BYTES`].
fn file_size(bytes: u64) -> Result<u64, String> {
    if bytes > MAX_FILE_BYTES {
        return Err(format!(
            "{bytes} bytes is past the largest file a trace may describe ({MAX_FILE_BYTES} bytes)"
        ));
    }
    Ok(bytes)
}

/// An offset and a length whose end is within [`MAX_FILE_BYTES`], the
/// length at most `max_len`.
fn extent(offset: u64, len: u64, max_len: u64) -> Result<(u64, u64), String> {
    if len > max_len {
        return Err(format!(
            "length {len} is more than the {max_len} bytes one operation may move"
        ));
    }
    let end = offset
        .checked_add(len)
        .ok_or_else(|| format!("offset {offset} + length {len} overflows"))?;
    file_size(end)?;
    Ok((offset, len))
}

/// Handles while parsing: those open now, and every one ever opened (a
/// handle id is never reused, so the replay's threads can cache them).
#[derive(Default)]
struct Handles {
    open: HashSet<u32>,
    seen: HashSet<u32>,
}

fn parse_op(w: &[&str], t: &Trace, open: &mut Handles) -> Result<Op, String> {
    let num = |i: usize| -> Result<u64, String> {
        let s = w
            .get(i)
            .ok_or_else(|| format!("'{}' operation is cut short", w.get(4).unwrap_or(&"op")))?;
        number(s)
    };
    let thread = num(1)?;
    if thread >= t.threads.len() as u64 {
        return Err(format!("thread {thread} is not declared"));
    }
    let start_us = time(num(2)?)?;
    let dur_us = time(num(3)?)?;
    let file = |i: usize| -> Result<u32, String> {
        let f = num(i)?;
        if f >= t.files.len() as u64 {
            return Err(format!("file {f} is not declared"));
        }
        u32::try_from(f).map_err(|_| format!("file {f} is not declared"))
    };
    let handle = |i: usize| -> Result<u32, String> {
        let h = num(i)?;
        match u32::try_from(h) {
            Ok(h) if open.open.contains(&h) => Ok(h),
            _ => Err(format!("handle {h} is used before it is opened")),
        }
    };
    let io = |o: usize, l: usize, max: u64| -> Result<(u64, u64), String> {
        extent(num(o)?, num(l)?, max)
    };
    let name = *w.get(4).ok_or("operation without a name")?;
    let (kind, arity) = match name {
        "open" => {
            let h = num(5)?;
            if h >= MAX_HANDLE {
                return Err(format!("handle {h} is not below {MAX_HANDLE}"));
            }
            let h = h as u32;
            if open.seen.contains(&h) {
                return Err(format!("handle {h} is opened a second time"));
            }
            let kind = OpKind::Open {
                handle: h,
                file: file(6)?,
                flags: OpenFlags::parse(w.get(7).ok_or("open without flags")?)?,
            };
            open.open.insert(h);
            open.seen.insert(h);
            (kind, 3)
        }
        n if READ_CALLS.contains(&n) => {
            let handle = handle(5)?;
            let (offset, len) = io(6, 7, MAX_IO_BYTES)?;
            (
                OpKind::Read {
                    call: READ_CALLS[READ_CALLS.iter().position(|c| *c == n).unwrap_or(0)],
                    handle,
                    offset,
                    len,
                },
                3,
            )
        }
        n if WRITE_CALLS.contains(&n) => {
            let handle = handle(5)?;
            let (offset, len) = io(6, 7, MAX_IO_BYTES)?;
            (
                OpKind::Write {
                    call: WRITE_CALLS[WRITE_CALLS.iter().position(|c| *c == n).unwrap_or(0)],
                    handle,
                    offset,
                    len,
                },
                3,
            )
        }
        "lseek" => (
            OpKind::Lseek {
                handle: handle(5)?,
                offset: file_size(num(6)?)?,
            },
            2,
        ),
        "fsync" => (OpKind::Fsync(handle(5)?), 1),
        "fdatasync" => (OpKind::Fdatasync(handle(5)?), 1),
        "sync_file_range" => {
            let handle = handle(5)?;
            let (offset, len) = io(6, 7, MAX_FILE_BYTES)?;
            (
                OpKind::SyncFileRange {
                    handle,
                    offset,
                    len,
                },
                3,
            )
        }
        "ftruncate" => (
            OpKind::Ftruncate {
                handle: handle(5)?,
                len: file_size(num(6)?)?,
            },
            2,
        ),
        "fallocate" => {
            let handle = handle(5)?;
            let (offset, len) = io(6, 7, MAX_FILE_BYTES)?;
            (
                OpKind::Fallocate {
                    handle,
                    offset,
                    len,
                },
                3,
            )
        }
        "close" => {
            let h = handle(5)?;
            open.open.remove(&h);
            (OpKind::Close(h), 1)
        }
        "fstat" => (OpKind::Fstat(handle(5)?), 1),
        "mmap" => (
            OpKind::Mmap {
                handle: handle(5)?,
                len: file_size(num(6)?)?,
            },
            2,
        ),
        "copy" => (
            OpKind::Copy {
                from: handle(5)?,
                to: handle(6)?,
                len: file_size(num(7)?)?,
            },
            3,
        ),
        "stat" => (OpKind::Stat(file(5)?), 1),
        "unlink" => (OpKind::Unlink(file(5)?), 1),
        "mkdir" => (OpKind::Mkdir(file(5)?), 1),
        "rmdir" => (OpKind::Rmdir(file(5)?), 1),
        "rename" => (
            OpKind::Rename {
                from: file(5)?,
                to: file(6)?,
            },
            2,
        ),
        other => {
            let shown: String = other.chars().take(40).collect();
            return Err(format!("unknown operation '{shown}'"));
        }
    };
    if w.len() != 5 + arity {
        return Err(format!(
            "'{name}' takes {arity} arguments, not {}",
            w.len() - 5
        ));
    }
    Ok(Op {
        thread: thread as u32,
        start_us,
        dur_us,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        Trace {
            files: vec![
                FileEntry {
                    path: "db/app db.sqlite".into(),
                    size: Some(8192),
                },
                FileEntry {
                    path: "db/journal".into(),
                    size: None,
                },
            ],
            threads: vec![100, 101],
            ops: vec![
                Op {
                    thread: 0,
                    start_us: 0,
                    dur_us: 5,
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
                    kind: OpKind::Fsync(0),
                },
                Op {
                    thread: 0,
                    start_us: 400,
                    dur_us: 2,
                    kind: OpKind::Close(0),
                },
                Op {
                    thread: 1,
                    start_us: 410,
                    dur_us: 9,
                    kind: OpKind::Rename { from: 0, to: 1 },
                },
            ],
            duration_us: 500,
        }
    }

    #[test]
    fn text_round_trips() {
        let t = sample();
        let text = t.to_text();
        assert!(text.contains("file 0 8192 db/app%20db.sqlite"));
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
        assert_eq!(e.line, 8, "{e}");
        assert!(
            e.message.contains("handle 7 is used before it is opened"),
            "{e}"
        );
        let bad = text.replace("op 0 20 300 fsync 0", "op 0 20 300 fsync");
        let e = Trace::parse("app.trace", &bad).unwrap_err();
        assert!(e.to_string().starts_with("app.trace:10: "), "{e}");
        assert!(Trace::parse("x", "hello\n")
            .unwrap_err()
            .message
            .contains("not a plumb trace"));
    }

    #[test]
    fn hostile_numbers_and_lines_are_refused_by_record() {
        let head =
            "plumb-trace 1\nduration_us 10\nfile 0 - a\nthread 0 1\nop 0 0 1 open 0 0 rw,creat\n";
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
}
