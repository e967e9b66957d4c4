//! Reading a trace: every record checked (handles opened before use and
//! never reused, file and thread ids in range, numbers within the bounds of
//! [`crate::trace::limits`]), errors naming the line. Versions 1, 2 and 3.

use super::{
    decode, errno, EntryKind, FileEntry, Op, OpKind, OpenFlags, RenameMode, Trace, TraceError,
    Tracer, MAGIC, MAGIC_V1, MAGIC_V3, READ_CALLS, WRITE_CALLS,
};
use crate::trace::limits::{
    MAX_FILES, MAX_FILE_BYTES, MAX_HANDLE, MAX_IO_BYTES, MAX_OPS, MAX_THREADS, MAX_TIME_US,
    MAX_TRACE_BYTES, MAX_TRACE_LINE,
};
use std::collections::HashSet;

impl Trace {
    /// Parses a trace; `name` is used in errors. Every reference is checked
    /// (handles opened before use and never reused, file and thread ids in
    /// range), every number is within the bounds of [`crate::trace::limits`],
    /// and a trace without its `end` record is reported as truncated.
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
        let version = match lines.next().map(|(_, l)| l.trim_end()) {
            Some(MAGIC_V3) => 3,
            Some(MAGIC) => 2,
            Some(MAGIC_V1) => 1,
            Some(l) if l.starts_with("plumb-trace ") && l.len() < 64 => {
                return Err(err(
                    1,
                    format!(
                    "unsupported trace version '{l}' (this plumb reads '{MAGIC_V3}', '{MAGIC}' and '{MAGIC_V1}')"
                ),
                ))
            }
            _ => {
                return Err(err(
                    1,
                    format!("not a plumb trace (the first line must be '{MAGIC}')"),
                ))
            }
        };
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
                "tracer" if version >= 2 => {
                    let tracer = words
                        .get(1)
                        .filter(|w| {
                            (1..=32).contains(&w.len())
                                && w.bytes().all(|b| b.is_ascii_alphanumeric())
                        })
                        .ok_or_else(|| {
                            err(
                                n,
                                "a tracer record names its tracer in letters and digits".into(),
                            )
                        })?;
                    if words.len() != 4 {
                        return Err(err(
                            n,
                            "a tracer record is 'tracer NAME WALL_US CALLS'".into(),
                        ));
                    }
                    t.tracer = Some(Tracer {
                        name: tracer.to_string(),
                        wall_us: time(num(2)?).map_err(|m| err(n, m))?,
                        calls: num(3)?,
                    });
                }
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
                    let entry = file_record(&words, version).map_err(|m| err(n, m))?;
                    t.files.push(entry);
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
                    // A step begins here: "@NAME" after everything else (version 3).
                    let (words, step) = match words.last().and_then(|l| l.strip_prefix('@')) {
                        Some(name) if version >= 3 => (&words[..words.len() - 1], Some(name)),
                        Some(_) => {
                            return Err(err(n, "'@STEP' is a record of trace version 3".into()))
                        }
                        None => (&words[..], None),
                    };
                    let op = parse_op(words, &t, &mut handles, version).map_err(|m| err(n, m))?;
                    if let Some(prev) = t.ops.last() {
                        if op.start_us < prev.start_us {
                            return Err(err(n, "operations must be in start order".into()));
                        }
                    }
                    if let Some(name) = step {
                        // Below MAX_OPS, hence a u32.
                        t.steps
                            .mark(t.ops.len() as u32, name)
                            .map_err(|m| err(n, m))?;
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

/// A `file` record: `file ID SIZE PATH` (version 1) or
/// `file ID KIND SIZE PATH [TARGET]` (version 2, TARGET for symlinks only).
fn file_record(words: &[&str], version: u32) -> Result<FileEntry, String> {
    let (kind, rest) = if version == 1 {
        (EntryKind::File, &words[2.min(words.len())..])
    } else {
        let kind = match words.get(2) {
            Some(&"f") => EntryKind::File,
            Some(&"d") => EntryKind::Dir,
            Some(&"l") => EntryKind::Symlink,
            Some(other) => {
                let shown: String = other.chars().take(40).collect();
                return Err(format!("file kind '{shown}' is not f, d or l"));
            }
            None => return Err("'file' record is cut short".into()),
        };
        (kind, &words[3.min(words.len())..])
    };
    let size = match rest.first() {
        Some(&"-") => None,
        Some(w) => Some(file_size(number(w)?)?),
        None => return Err("'file' record is cut short".into()),
    };
    let path = decode(rest.get(1).ok_or("file record without a path")?)?;
    let target = match (kind, rest.get(2)) {
        (EntryKind::Symlink, Some(t)) => Some(decode(t)?),
        (_, None) => None,
        (_, Some(_)) => return Err("file record has extra words".into()),
    };
    if rest.len() > 3 {
        return Err("file record has extra words".into());
    }
    Ok(FileEntry {
        path,
        size,
        kind,
        target,
    })
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

/// Permission bits in octal (at most 07777).
fn mode(w: Option<&&str>) -> Result<u32, String> {
    let w = w.ok_or("the mode is missing")?;
    match u32::from_str_radix(w, 8) {
        Ok(m) if m <= 0o7777 => Ok(m),
        _ => {
            let shown: String = w.chars().take(40).collect();
            Err(format!("'{shown}' is not a mode (octal, at most 7777)"))
        }
    }
}

/// Handles while parsing: those open now, and every one ever named (a
/// handle id is never reused, so the replay's threads can cache them).
#[derive(Default)]
struct Handles {
    open: HashSet<u32>,
    seen: HashSet<u32>,
}

impl Handles {
    /// A new handle id at word `w`: below [`MAX_HANDLE`], never named before;
    /// it is open afterwards unless the call failed.
    fn fresh(&mut self, w: Option<&&str>, failed: bool) -> Result<u32, String> {
        let h = number(w.ok_or("the new handle is missing")?)?;
        if h >= MAX_HANDLE {
            return Err(format!("handle {h} is not below {MAX_HANDLE}"));
        }
        let h = h as u32;
        if !self.seen.insert(h) {
            return Err(format!("handle {h} is opened a second time"));
        }
        if !failed {
            self.open.insert(h);
        }
        Ok(h)
    }
}

fn parse_op(w: &[&str], t: &Trace, open: &mut Handles, version: u32) -> Result<Op, String> {
    // A failed call ends with "=ERRNO" (version 2).
    let (w, failed) = match w.last().and_then(|l| l.strip_prefix('=')) {
        Some(e) if version >= 2 => (&w[..w.len() - 1], Some(errno::parse(e)?)),
        _ => (w, None),
    };
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
    let handle = |i: usize, open: &Handles| -> Result<u32, String> {
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
    let v2 = |kind: OpKind| -> Result<OpKind, String> {
        if version < 2 {
            return Err(format!("'{name}' is an operation of trace version 2"));
        }
        Ok(kind)
    };
    let v3 = |kind: OpKind| -> Result<OpKind, String> {
        if version < 3 {
            return Err(format!("'{name}' is an operation of trace version 3"));
        }
        Ok(kind)
    };
    let (kind, arity) = match name {
        "open" => {
            let flags = OpenFlags::parse(w.get(7).ok_or("open without flags")?)?;
            let file = file(6)?;
            let h = open.fresh(w.get(5), failed.is_some())?;
            (
                OpKind::Open {
                    handle: h,
                    file,
                    flags,
                },
                3,
            )
        }
        n if READ_CALLS.contains(&n) => {
            let handle = handle(5, open)?;
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
            let handle = handle(5, open)?;
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
                handle: handle(5, open)?,
                offset: file_size(num(6)?)?,
            },
            2,
        ),
        "fsync" => (OpKind::Fsync(handle(5, open)?), 1),
        "fdatasync" => (OpKind::Fdatasync(handle(5, open)?), 1),
        "sync_file_range" => {
            let handle = handle(5, open)?;
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
                handle: handle(5, open)?,
                len: file_size(num(6)?)?,
            },
            2,
        ),
        "fallocate" => {
            let handle = handle(5, open)?;
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
            let h = handle(5, open)?;
            if failed.is_none() {
                open.open.remove(&h);
            }
            (OpKind::Close(h), 1)
        }
        "fstat" => (OpKind::Fstat(handle(5, open)?), 1),
        "mmap" => (
            OpKind::Mmap {
                handle: handle(5, open)?,
                len: file_size(num(6)?)?,
            },
            2,
        ),
        "copy" => (
            OpKind::Copy {
                from: handle(5, open)?,
                to: handle(6, open)?,
                len: file_size(num(7)?)?,
            },
            3,
        ),
        "stat" => (OpKind::Stat(file(5)?), 1),
        "unlink" => (OpKind::Unlink(file(5)?), 1),
        "mkdir" => (OpKind::Mkdir(file(5)?), 1),
        "rmdir" => (OpKind::Rmdir(file(5)?), 1),
        "rename" => {
            let mode = match w.get(7) {
                None => RenameMode::Replace,
                Some(&"noreplace") => RenameMode::NoReplace,
                Some(&"exchange") => RenameMode::Exchange,
                Some(other) => {
                    let shown: String = other.chars().take(40).collect();
                    return Err(format!(
                        "rename mode '{shown}' is not noreplace or exchange"
                    ));
                }
            };
            let kind = OpKind::Rename {
                from: file(5)?,
                to: file(6)?,
                mode,
            };
            (kind, if mode == RenameMode::Replace { 2 } else { 3 })
        }
        "readdir" => (
            v2(OpKind::Readdir {
                handle: handle(5, open)?,
                len: extent(0, num(6)?, MAX_IO_BYTES)?.1,
            })?,
            2,
        ),
        "dup" | "inherit" => {
            let from = handle(5, open)?;
            let to = open.fresh(w.get(6), failed.is_some())?;
            let kind = if name == "dup" {
                OpKind::Dup { from, to }
            } else {
                OpKind::Inherit { from, to }
            };
            (v2(kind)?, 2)
        }
        "fchmod" => (
            v2(OpKind::Fchmod {
                handle: handle(5, open)?,
                mode: mode(w.get(6))?,
            })?,
            2,
        ),
        "access" => (v2(OpKind::Access(file(5)?))?, 1),
        "statfs" => (v2(OpKind::Statfs(file(5)?))?, 1),
        "readlink" => (v2(OpKind::Readlink(file(5)?))?, 1),
        "utimes" => (v2(OpKind::Utimes(file(5)?))?, 1),
        "chmod" => (
            v2(OpKind::Chmod {
                file: file(5)?,
                mode: mode(w.get(6))?,
            })?,
            2,
        ),
        "truncate" => (
            v2(OpKind::Truncate {
                file: file(5)?,
                len: file_size(num(6)?)?,
            })?,
            2,
        ),
        "link" => (
            v2(OpKind::Link {
                from: file(5)?,
                to: file(6)?,
            })?,
            2,
        ),
        "symlink" => (
            v2(OpKind::Symlink {
                file: file(5)?,
                target: decode(w.get(6).ok_or("symlink without a target")?)?,
            })?,
            2,
        ),
        "lock" => {
            let handle = handle(5, open)?;
            let (offset, len) = io(6, 7, MAX_FILE_BYTES)?;
            let write = match w.get(8) {
                Some(&"w") => true,
                Some(&"r") => false,
                Some(other) => {
                    let shown: String = other.chars().take(40).collect();
                    return Err(format!("lock kind '{shown}' is not r or w"));
                }
                None => return Err("lock without its kind (r or w)".into()),
            };
            (
                v3(OpKind::Lock {
                    handle,
                    offset,
                    len,
                    write,
                })?,
                4,
            )
        }
        "unlock" => {
            let handle = handle(5, open)?;
            let (offset, len) = io(6, 7, MAX_FILE_BYTES)?;
            (
                v3(OpKind::Unlock {
                    handle,
                    offset,
                    len,
                })?,
                3,
            )
        }
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
        failed,
    })
}
