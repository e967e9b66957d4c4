//! The conversion proper: follows descriptors as the kernel keeps them (per
//! fd table: threads share one, forks copy it, exec closes close-on-exec
//! descriptors), file positions and sizes, and turns each system call on a
//! path under the root into a trace operation — failed ones with their
//! errno.

use super::descriptors::{Slot, Tables};
use super::syntax::{decorated, normalise, num, parse_call, stat_field, unquote, Call};
use crate::trace::format::{
    EntryKind, FileEntry, Op, OpKind, OpenFlags, RenameMode, Trace, Tracer,
};
use crate::trace::limits::{MAX_FILES, MAX_FILE_BYTES, MAX_IO_BYTES, MAX_OPS, MAX_THREADS};
use std::collections::HashMap;

/// An open file description: what a descriptor (and its duplicates) holds.
#[derive(Clone, Copy)]
struct Description {
    file: u32,
    pos: u64,
    append: bool,
}

/// What the trace knows of a path.
#[derive(Default, Clone, Copy)]
struct FileState {
    /// What it was at first touch is known (it existed, or it did not).
    known: bool,
    /// A write, truncate, create or rename happened: first-touch figures are settled.
    modified: bool,
    /// Current size, as far as the trace shows.
    size: u64,
}

/// What one call says about a path as it was before the call.
#[derive(Clone, Copy)]
enum Seen {
    /// It existed, of this kind (and size, if the call says).
    Exists(EntryKind, Option<u64>),
    /// It did not exist.
    Missing,
    /// The call does not say.
    Unknown,
}

/// What the conversion knows so far: descriptors, files, threads, operations.
#[derive(Default)]
pub(super) struct Converter {
    root: String,
    start_cwd: String,
    cwd: HashMap<u64, String>,
    tables: Tables,
    /// Per handle: its open file description.
    handles: Vec<usize>,
    descriptions: Vec<Description>,
    files: Vec<FileEntry>,
    state: Vec<FileState>,
    file_ids: HashMap<String, u32>,
    threads: Vec<u64>,
    thread_ids: HashMap<u64, u32>,
    /// Operations with the log position they sort by among equal start times.
    ops: Vec<(Op, u64)>,
    /// The log position of the call being converted.
    seq: u64,
    /// The first bound the log broke (see [`Converter::take_error`]).
    error: Option<String>,
    /// Per thread: the operations of a call applied when it began (see
    /// [`Converter::apply_at_entry`]), waiting for its outcome.
    at_entry: HashMap<u64, std::ops::Range<usize>>,
}

/// The failure a call returned, as an errno.
fn errno_of(c: &Call) -> Option<i32> {
    c.errno
        .as_deref()
        .and_then(|e| crate::trace::format::errno::parse(e).ok())
}

impl Converter {
    /// A converter keeping paths under `root`, for a program started in `cwd`.
    pub(super) fn new(root: &str, cwd: &str) -> Converter {
        Converter {
            root: normalise(root),
            start_cwd: normalise(cwd),
            ..Converter::default()
        }
    }

    /// The bound the last call broke, if any: the log cannot become a trace.
    pub(super) fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }

    fn fail(&mut self, message: String) {
        self.error.get_or_insert(message);
    }

    /// `v` if it is within the largest file a trace may describe; else
    /// records the error and gives 0.
    fn bounded(&mut self, v: u64, what: &str) -> u64 {
        if v > MAX_FILE_BYTES {
            self.fail(format!(
                "{what} {v} is past the largest file a trace may describe ({MAX_FILE_BYTES} bytes)"
            ));
            return 0;
        }
        v
    }

    /// The end of `offset + len`, within bounds (else the error is recorded).
    fn end(&mut self, offset: u64, len: u64) -> u64 {
        match offset.checked_add(len) {
            Some(e) => self.bounded(e, "offset + length"),
            None => {
                self.fail(format!("offset {offset} + length {len} overflows"));
                0
            }
        }
    }

    /// The trace: spanning the program's file activity, from its first kept
    /// operation to the end of its last.
    pub(super) fn finish(self, tracer: Option<Tracer>) -> Trace {
        let mut ops = self.ops;
        ops.sort_by_key(|(o, seq)| (o.start_us, *seq));
        let mut ops: Vec<Op> = ops.into_iter().map(|(o, _)| o).collect();
        let base = ops.first().map_or(0, |o| o.start_us);
        for o in &mut ops {
            o.start_us -= base;
        }
        let duration_us = ops
            .iter()
            .map(|o| o.start_us.saturating_add(o.dur_us))
            .max()
            .unwrap_or(0);
        Trace {
            files: self.files,
            threads: self.threads,
            ops,
            duration_us,
            tracer,
            ..Trace::default()
        }
    }

    fn thread(&mut self, tid: u64) -> u32 {
        if let Some(t) = self.thread_ids.get(&tid) {
            return *t;
        }
        if self.threads.len() >= MAX_THREADS {
            self.fail(format!(
                "more than {MAX_THREADS} threads (the most plumb replays at once)"
            ));
            return 0;
        }
        self.threads.push(tid);
        let i = self.threads.len() as u32 - 1;
        self.thread_ids.insert(tid, i);
        i
    }

    /// The path relative to the root, if it is under it.
    fn relative(&self, abs: &str) -> Option<String> {
        if !abs.starts_with('/') {
            return None; // pipe:[…], socket:[…], anon_inode:…
        }
        let abs = normalise(abs);
        if self.root == "/" {
            return Some(abs[1..].to_string()).filter(|s| !s.is_empty());
        }
        abs.strip_prefix(&self.root)?
            .strip_prefix('/')
            .map(str::to_string)
            .filter(|s| !s.is_empty())
    }

    fn cwd_of(&self, tid: u64) -> String {
        self.cwd
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| self.start_cwd.clone())
    }

    /// Resolves a path argument against a decorated dirfd or the cwd.
    fn resolve(&self, tid: u64, dirfd: Option<&String>, path: &str) -> Option<String> {
        if path.starts_with('/') {
            return self.relative(path);
        }
        let base = match dirfd.map(|d| decorated(d)) {
            Some((_, Some(dir))) => dir,
            _ => self.cwd_of(tid),
        };
        self.relative(&format!("{base}/{path}"))
    }

    /// A quoted path argument `path` (against `dirfd`) under the root.
    fn path_arg(&self, tid: u64, dirfd: Option<&String>, path: Option<&String>) -> Option<String> {
        path.and_then(|p| unquote(p))
            .and_then(|p| self.resolve(tid, dirfd, &p))
    }

    /// The file id of `rel`, noting what the call saw of it.
    fn file(&mut self, rel: &str, seen: Seen) -> u32 {
        let id = match self.file_ids.get(rel) {
            Some(f) => *f,
            None => {
                if self.files.len() >= MAX_FILES {
                    self.fail(format!(
                        "more than {MAX_FILES} files (the most a trace may name)"
                    ));
                    return 0;
                }
                self.files.push(FileEntry::file(rel, None));
                self.state.push(FileState::default());
                let id = self.files.len() as u32 - 1;
                self.file_ids.insert(rel.to_string(), id);
                id
            }
        };
        self.saw(id, seen);
        id
    }

    /// Notes what a call saw of file `f` as it was before the call: only
    /// what is seen before anything changed it describes its first state.
    fn saw(&mut self, f: u32, seen: Seen) {
        let st = self.state[f as usize];
        if st.modified {
            return;
        }
        match seen {
            Seen::Exists(kind, size) => {
                let size = size.map(|s| self.bounded(s, "file size"));
                let entry = &mut self.files[f as usize];
                if !st.known || entry.size.is_some() {
                    entry.kind = kind;
                    let grown = size.unwrap_or(0).max(st.size);
                    entry.size = Some(grown);
                    self.state[f as usize].size = grown;
                }
                self.state[f as usize].known = true;
            }
            Seen::Missing => self.state[f as usize].known = true,
            Seen::Unknown => {}
        }
    }

    /// File `f` now has `new_size` bytes by the program's own doing.
    fn modified(&mut self, f: u32, new_size: u64) {
        let st = &mut self.state[f as usize];
        st.known = true;
        st.modified = true;
        st.size = new_size;
    }

    /// A new handle on a new open file description of `file`.
    fn new_handle(&mut self, file: u32, append: bool) -> u32 {
        self.descriptions.push(Description {
            file,
            pos: 0,
            append,
        });
        self.handles.push(self.descriptions.len() - 1);
        self.handles.len() as u32 - 1
    }

    /// A new handle sharing `h`'s open file description (dup, fork).
    fn shared_handle(&mut self, h: u32) -> u32 {
        self.handles.push(self.handles[h as usize]);
        self.handles.len() as u32 - 1
    }

    fn desc(&mut self, h: u32) -> &mut Description {
        &mut self.descriptions[self.handles[h as usize]]
    }

    /// The handle a descriptor argument names in `tid`'s table: a copy
    /// inherited at fork becomes a handle of its own now (an `inherit`
    /// operation at the time of the fork); a descriptor under the root the
    /// trace never saw opened gets an implicit open. None for descriptors
    /// that are not files under the root.
    fn handle(&mut self, tid: u64, arg: Option<&String>, start: u64) -> Option<u32> {
        let (fd, path) = decorated(arg?);
        let fd: i64 = fd.parse().ok()?;
        match self.tables.get(tid, fd) {
            Some(Slot::Held { handle, .. }) => return Some(handle),
            Some(Slot::Inherited {
                from,
                cloexec,
                at_us,
                seq,
            }) => {
                let h = self.shared_handle(from);
                self.push_at(tid, at_us, seq, 0, OpKind::Inherit { from, to: h }, None);
                self.tables.set(tid, fd, Slot::Held { handle: h, cloexec });
                return Some(h);
            }
            Some(Slot::Other) => return None,
            None => {}
        }
        let rel = self.relative(path.as_deref()?)?;
        let file = self.file(&rel, Seen::Exists(EntryKind::File, None));
        let directory = self.files[file as usize].kind == EntryKind::Dir;
        let h = self.new_handle(file, false);
        self.tables.set(
            tid,
            fd,
            Slot::Held {
                handle: h,
                cloexec: false,
            },
        );
        self.push(
            tid,
            start,
            0,
            OpKind::Open {
                handle: h,
                file,
                flags: OpenFlags {
                    read: true,
                    write: !directory,
                    directory,
                    implicit: true,
                    ..Default::default()
                },
            },
            None,
        );
        Some(h)
    }

    fn push(&mut self, tid: u64, start: u64, dur: u64, kind: OpKind, failed: Option<i32>) {
        self.push_at(tid, start, self.seq, dur, kind, failed);
    }

    fn push_at(
        &mut self,
        tid: u64,
        start: u64,
        seq: u64,
        dur: u64,
        kind: OpKind,
        failed: Option<i32>,
    ) {
        if self.ops.len() >= MAX_OPS {
            self.fail(format!(
                "more than {MAX_OPS} operations (the most a trace may hold)"
            ));
            return;
        }
        let thread = self.thread(tid);
        self.ops.push((
            Op {
                thread,
                start_us: start,
                dur_us: dur,
                kind,
                failed,
            },
            seq,
        ));
    }

    /// Applies a call that releases descriptors (`close`, `close_range`)
    /// when it begins, as the kernel does: another thread may be given the
    /// same number before strace prints the call's end, and its open must
    /// not be closed by this call. The call is taken to succeed; its
    /// duration and outcome are filled in by [`Converter::finish_at_entry`].
    pub(super) fn apply_at_entry(&mut self, tid: u64, start: u64, head: &str) {
        let Some(c) = parse_call(&format!("{head}) = 0")) else {
            return;
        };
        let before = self.ops.len();
        self.apply(tid, start, 0, &c);
        self.at_entry.insert(tid, before..self.ops.len());
    }

    /// The end of a call [`Converter::apply_at_entry`] applied: its
    /// duration and, when it failed, its errno (the descriptor is released
    /// whatever close returns, except EBADF, when it was not open).
    pub(super) fn finish_at_entry(&mut self, tid: u64, dur: u64, c: &Call) {
        let Some(range) = self.at_entry.remove(&tid) else {
            return;
        };
        let failed = errno_of(c);
        for (op, _) in self.ops.get_mut(range).into_iter().flatten() {
            op.dur_us = dur;
            op.failed = failed;
        }
    }

    /// Converts one completed call of thread `tid`, which started `start` µs
    /// into the log and took `dur` µs.
    pub(super) fn apply(&mut self, tid: u64, start: u64, dur: u64, c: &Call) {
        self.seq += 1;
        // Any decorated AT_FDCWD tells this process's working directory.
        for a in &c.args {
            if let ("AT_FDCWD", Some(dir)) = decorated(a) {
                self.cwd.insert(tid, dir);
            }
        }
        let failed = errno_of(c);
        if c.ret.is_none() && failed.is_none() {
            return; // No outcome (the process ended during the call).
        }
        let a = &c.args;
        let name = c.name.as_str();
        if failed.is_none() {
            self.descriptors_changed(tid, start, dur, c);
        }
        let at = |s: &Self, i: usize| s.path_arg(tid, None, a.get(i));
        let at2 = |s: &Self, d: usize, p: usize| s.path_arg(tid, a.get(d), a.get(p));
        match name {
            "open" | "openat" | "openat2" | "creat" => self.open(tid, start, dur, c, failed),
            "read" | "pread64" | "readv" | "preadv" | "preadv2" | "write" | "pwrite64"
            | "writev" | "pwritev" | "pwritev2" => self.transfer(tid, start, dur, c, failed),
            "lseek" => {
                if let Some(h) = self.handle(tid, a.first(), start) {
                    let Some(ret) = c.ret.filter(|_| failed.is_none()) else {
                        let offset = self.desc(h).pos;
                        self.push(tid, start, dur, OpKind::Lseek { handle: h, offset }, failed);
                        return;
                    };
                    let pos = self.bounded(ret as u64, "lseek offset");
                    self.desc(h).pos = pos;
                    let file = self.desc(h).file;
                    if a.get(2).is_some_and(|w| w == "SEEK_END")
                        && a.get(1).is_some_and(|o| o == "0")
                    {
                        self.saw(file, Seen::Exists(EntryKind::File, Some(pos)));
                    }
                    self.push(
                        tid,
                        start,
                        dur,
                        OpKind::Lseek {
                            handle: h,
                            offset: pos,
                        },
                        None,
                    );
                }
            }
            "fsync" | "fdatasync" | "fstat" | "getdents64" | "fchmod" => {
                if let Some(h) = self.handle(tid, a.first(), start) {
                    let kind = match name {
                        "fsync" => OpKind::Fsync(h),
                        "fdatasync" => OpKind::Fdatasync(h),
                        "fchmod" => OpKind::Fchmod {
                            handle: h,
                            mode: mode(a.get(1)),
                        },
                        "getdents64" => {
                            let len = num(a.get(2)).unwrap_or(0).min(MAX_IO_BYTES);
                            OpKind::Readdir { handle: h, len }
                        }
                        _ => {
                            let file = self.desc(h).file;
                            self.stat_seen(file, a.get(1));
                            OpKind::Fstat(h)
                        }
                    };
                    self.push(tid, start, dur, kind, failed);
                }
            }
            "close" => {
                let fd = a.first().and_then(|x| decorated(x).0.parse::<i64>().ok());
                if let Some(h) = self.handle(tid, a.first(), start) {
                    if failed.is_none() {
                        if let Some(fd) = fd {
                            self.tables.remove(tid, fd);
                        }
                    }
                    self.push(tid, start, dur, OpKind::Close(h), failed);
                } else if let Some(fd) = fd.filter(|_| failed.is_none()) {
                    self.tables.remove(tid, fd);
                }
            }
            "sync_file_range" => {
                if let Some(h) = self.handle(tid, a.first(), start) {
                    let (offset, len) = (num(a.get(1)).unwrap_or(0), num(a.get(2)).unwrap_or(0));
                    self.end(offset, len);
                    self.push(
                        tid,
                        start,
                        dur,
                        OpKind::SyncFileRange {
                            handle: h,
                            offset,
                            len,
                        },
                        failed,
                    );
                }
            }
            "ftruncate" => {
                if let Some(h) = self.handle(tid, a.first(), start) {
                    let len = num(a.get(1)).unwrap_or(0);
                    let len = self.bounded(len, "ftruncate length");
                    if failed.is_none() {
                        let file = self.desc(h).file;
                        self.modified(file, len);
                    }
                    self.push(
                        tid,
                        start,
                        dur,
                        OpKind::Ftruncate { handle: h, len },
                        failed,
                    );
                }
            }
            "fallocate" => {
                if let Some(h) = self.handle(tid, a.first(), start) {
                    let (offset, len) = (num(a.get(2)).unwrap_or(0), num(a.get(3)).unwrap_or(0));
                    let end = self.end(offset, len);
                    if failed.is_none() {
                        let file = self.desc(h).file;
                        let size = self.state[file as usize].size.max(end);
                        self.modified(file, size);
                    }
                    self.push(
                        tid,
                        start,
                        dur,
                        OpKind::Fallocate {
                            handle: h,
                            offset,
                            len,
                        },
                        failed,
                    );
                }
            }
            "mmap" if failed.is_none() && a.get(4).is_some_and(|fd| !fd.starts_with('-')) => {
                if let Some(h) = self.handle(tid, a.get(4), start) {
                    let len = num(a.get(1)).unwrap_or(0);
                    let len = self.bounded(len, "mmap length");
                    self.push(tid, start, dur, OpKind::Mmap { handle: h, len }, None);
                }
            }
            "copy_file_range" | "sendfile" if failed.is_none() => {
                let (from, to) = if name == "sendfile" {
                    (a.get(1), a.first())
                } else {
                    (a.first(), a.get(2))
                };
                if let (Some(from), Some(to)) =
                    (self.handle(tid, from, start), self.handle(tid, to, start))
                {
                    let len = self.bounded(c.ret.unwrap_or(0) as u64, "copy length");
                    self.push(tid, start, dur, OpKind::Copy { from, to, len }, None);
                }
            }
            "newfstatat" | "statx" | "stat" | "lstat" => {
                let (dirfd, path, statbuf) = match name {
                    "stat" | "lstat" => (None, a.first(), a.get(1)),
                    "statx" => (a.first(), a.get(1), a.get(4)),
                    _ => (a.first(), a.get(1), a.get(2)),
                };
                let p = path.and_then(|p| unquote(p)).unwrap_or_default();
                if p.is_empty() && dirfd.is_some() {
                    if let Some(h) = self.handle(tid, dirfd, start) {
                        let file = self.desc(h).file;
                        self.stat_seen(file, statbuf.filter(|_| failed.is_none()));
                        self.push(tid, start, dur, OpKind::Fstat(h), failed);
                    }
                } else if let Some(rel) = self.resolve(tid, dirfd, &p) {
                    let seen = match failed {
                        None => stat_seen(statbuf),
                        Some(libc::ENOENT) => Seen::Missing,
                        Some(_) => Seen::Unknown,
                    };
                    let f = self.file(&rel, seen);
                    self.push(tid, start, dur, OpKind::Stat(f), failed);
                }
            }
            "access" | "faccessat" | "faccessat2" | "statfs" | "readlink" | "readlinkat"
            | "truncate" | "chmod" | "fchmodat" | "utimensat" => {
                let rel = match name {
                    "access" | "statfs" | "readlink" | "truncate" | "chmod" => at(self, 0),
                    _ => at2(self, 0, 1),
                };
                let Some(rel) = rel else { return };
                let seen = match failed {
                    None if name.starts_with("readlink") => Seen::Exists(EntryKind::Symlink, None),
                    None => Seen::Exists(EntryKind::File, None),
                    Some(libc::ENOENT) => Seen::Missing,
                    Some(_) => Seen::Unknown,
                };
                let f = self.file(&rel, seen);
                let kind = match name {
                    "access" | "faccessat" | "faccessat2" => OpKind::Access(f),
                    "statfs" => OpKind::Statfs(f),
                    "readlink" | "readlinkat" => OpKind::Readlink(f),
                    "utimensat" => OpKind::Utimes(f),
                    "truncate" => {
                        let len = num(a.get(1)).unwrap_or(0);
                        let len = self.bounded(len, "truncate length");
                        if failed.is_none() {
                            self.modified(f, len);
                        }
                        OpKind::Truncate { file: f, len }
                    }
                    "chmod" => OpKind::Chmod {
                        file: f,
                        mode: mode(a.get(1)),
                    },
                    _ => OpKind::Chmod {
                        file: f,
                        mode: mode(a.get(2)),
                    },
                };
                self.push(tid, start, dur, kind, failed);
            }
            "rename" | "renameat" | "renameat2" | "link" | "linkat" => {
                let (from, to) = if name == "rename" || name == "link" {
                    (at(self, 0), at(self, 1))
                } else {
                    (at2(self, 0, 1), at2(self, 2, 3))
                };
                let (Some(from), Some(to)) = (from, to) else {
                    return;
                };
                let flags = a.get(4).map(String::as_str).unwrap_or("");
                let f = self.file(
                    &from,
                    if failed == Some(libc::ENOENT) {
                        Seen::Missing
                    } else {
                        Seen::Exists(EntryKind::File, None)
                    },
                );
                let t = self.file(
                    &to,
                    if failed == Some(libc::EEXIST) {
                        Seen::Exists(EntryKind::File, None)
                    } else {
                        Seen::Unknown
                    },
                );
                if failed.is_none() {
                    // The target now holds the source's data.
                    self.state[t as usize] = self.state[f as usize];
                    self.state[t as usize].modified = true;
                    self.state[t as usize].known = true;
                    if name.starts_with("rename") {
                        self.state[f as usize].modified = true;
                    }
                }
                let kind = if name.starts_with("link") {
                    OpKind::Link { from: f, to: t }
                } else {
                    let mode = if flags.contains("RENAME_NOREPLACE") {
                        RenameMode::NoReplace
                    } else if flags.contains("RENAME_EXCHANGE") {
                        RenameMode::Exchange
                    } else {
                        RenameMode::Replace
                    };
                    OpKind::Rename {
                        from: f,
                        to: t,
                        mode,
                    }
                };
                self.push(tid, start, dur, kind, failed);
            }
            "symlink" | "symlinkat" => {
                let (target, rel) = if name == "symlink" {
                    (a.first(), at(self, 1))
                } else {
                    (a.first(), at2(self, 1, 2))
                };
                let (Some(target), Some(rel)) = (target.and_then(|t| unquote(t)), rel) else {
                    return;
                };
                let seen = if failed == Some(libc::EEXIST) {
                    Seen::Exists(EntryKind::File, None)
                } else {
                    Seen::Missing
                };
                let f = self.file(&rel, seen);
                if failed.is_none() {
                    self.modified(f, 0);
                }
                self.push(tid, start, dur, OpKind::Symlink { file: f, target }, failed);
            }
            "unlink" | "unlinkat" | "mkdir" | "mkdirat" | "rmdir" => {
                let rel = match name {
                    "unlinkat" | "mkdirat" => at2(self, 0, 1),
                    _ => at(self, 0),
                };
                let Some(rel) = rel else { return };
                let is_rmdir = name == "rmdir"
                    || (name == "unlinkat" && a.get(2).is_some_and(|f| f.contains("AT_REMOVEDIR")));
                let (kind_of, seen) = if name.starts_with("mkdir") {
                    let seen = match failed {
                        None => Seen::Missing,
                        Some(libc::EEXIST) => Seen::Exists(EntryKind::Dir, None),
                        Some(_) => Seen::Unknown,
                    };
                    (EntryKind::Dir, seen)
                } else {
                    let kind = if is_rmdir {
                        EntryKind::Dir
                    } else {
                        EntryKind::File
                    };
                    let seen = match failed {
                        None => Seen::Exists(kind, None),
                        Some(libc::ENOENT) => Seen::Missing,
                        Some(libc::ENOTEMPTY) => Seen::Exists(EntryKind::Dir, None),
                        Some(_) => Seen::Unknown,
                    };
                    (kind, seen)
                };
                let f = self.file(&rel, seen);
                let kind = if name.starts_with("mkdir") {
                    OpKind::Mkdir(f)
                } else if is_rmdir {
                    OpKind::Rmdir(f)
                } else {
                    OpKind::Unlink(f)
                };
                if failed.is_none() {
                    if kind_of == EntryKind::Dir
                        && name.starts_with("mkdir")
                        && !self.state[f as usize].modified
                    {
                        self.files[f as usize].kind = EntryKind::Dir;
                    }
                    self.modified(f, 0);
                }
                self.push(tid, start, dur, kind, failed);
            }
            _ => {}
        }
    }

    /// What a successful call did to the descriptor tables: forks, chdir,
    /// exec, duplicates, and descriptors that are not files under the root.
    fn descriptors_changed(&mut self, tid: u64, start: u64, dur: u64, c: &Call) {
        let a = &c.args;
        let name = c.name.as_str();
        let ret = c.ret.unwrap_or(0);
        match name {
            "clone" | "clone3" | "fork" | "vfork" => {
                let child = ret as u64;
                let threads = a.iter().any(|x| x.contains("CLONE_FILES"));
                if threads && name != "fork" && name != "vfork" {
                    self.tables.share(tid, child);
                } else {
                    self.tables.fork(tid, child, start, self.seq);
                }
                let cwd = self.cwd_of(tid);
                self.cwd.insert(child, cwd);
            }
            "execve" | "execveat" => self.tables.exec(tid),
            "chdir" => {
                if let Some(p) = a.first().and_then(|p| unquote(p)) {
                    let new = if p.starts_with('/') {
                        p
                    } else {
                        format!("{}/{p}", self.cwd_of(tid))
                    };
                    self.cwd.insert(tid, normalise(&new));
                }
            }
            "fchdir" => {
                if let Some((_, Some(dir))) = a.first().map(|d| decorated(d)) {
                    self.cwd.insert(tid, dir);
                }
            }
            "dup" | "dup2" | "dup3" | "fcntl" | "fcntl64" => {
                let cloexec = a
                    .iter()
                    .any(|x| x.contains("O_CLOEXEC") || x.contains("F_DUPFD_CLOEXEC"));
                let is_dup = !name.starts_with("fcntl")
                    || a.get(1).is_some_and(|x| x.starts_with("F_DUPFD"));
                if name.starts_with("fcntl") && a.get(1).is_some_and(|x| x == "F_SETFD") {
                    let on = a.get(2).is_some_and(|x| x.contains("FD_CLOEXEC"));
                    if let Some(fd) = a.first().and_then(|x| decorated(x).0.parse().ok()) {
                        self.tables.set_cloexec(tid, fd, on);
                    }
                }
                if !is_dup {
                    return;
                }
                let new_fd = ret;
                let same = a.first().map(|x| decorated(x).0) == a.get(1).map(|x| decorated(x).0);
                if (name == "dup2" || name == "dup3") && same {
                    return; // dup2(fd, fd) changes nothing.
                }
                self.tables.remove(tid, new_fd);
                if let Some(from) = self.handle(tid, a.first(), start) {
                    let to = self.shared_handle(from);
                    self.tables.set(
                        tid,
                        new_fd,
                        Slot::Held {
                            handle: to,
                            cloexec,
                        },
                    );
                    self.push(tid, start, dur, OpKind::Dup { from, to }, None);
                } else {
                    self.tables.set(tid, new_fd, Slot::Other);
                }
            }
            "close_range" => {
                let first = num(a.first()).unwrap_or(0);
                let last = num(a.get(1)).map_or(i64::MAX, |l| l.min(i64::MAX as u64) as i64);
                let cloexec = a.get(2).is_some_and(|f| f.contains("CLOSE_RANGE_CLOEXEC"));
                self.tables
                    .close_range(tid, first.min(i64::MAX as u64) as i64, last, cloexec);
            }
            "pipe" | "pipe2" | "socketpair" => {
                // The new descriptors are listed in the array argument.
                let list = if name == "socketpair" {
                    a.get(3)
                } else {
                    a.first()
                };
                for fd in list
                    .map(|l| {
                        l.trim_matches(['[', ']'])
                            .split(", ")
                            .filter_map(|x| decorated(x).0.parse::<i64>().ok())
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default()
                {
                    self.tables.set(tid, fd, Slot::Other);
                }
            }
            "open" | "openat" | "openat2" | "creat" | "getdents64" => {}
            _ => {
                // Any other call returning a descriptor (socket, eventfd,
                // memfd, accept, ...) makes that number something else.
                if c.ret_path.is_some()
                    && ret >= 0
                    && !name.contains("read")
                    && !name.contains("write")
                {
                    self.tables.set(tid, ret, Slot::Other);
                }
            }
        }
    }

    /// The size and kind a stat buffer shows.
    fn stat_seen(&mut self, f: u32, statbuf: Option<&String>) {
        if statbuf.is_some() {
            self.saw(f, stat_seen(statbuf));
        }
    }

    fn open(&mut self, tid: u64, start: u64, dur: u64, c: &Call, failed: Option<i32>) {
        let a = &c.args;
        let name = c.name.as_str();
        let (dirfd, path, flags) = match name {
            "open" => (None, a.first(), a.get(1).cloned()),
            "creat" => (
                None,
                a.first(),
                Some("O_WRONLY|O_CREAT|O_TRUNC".to_string()),
            ),
            _ => (a.first(), a.get(1), a.get(2).cloned()),
        };
        // With -y, the returned descriptor names the file opened.
        let rel = match &c.ret_path {
            Some(p) if p.starts_with('/') => self.relative(p),
            _ => self.path_arg(tid, dirfd, path),
        };
        let fd = c.ret.filter(|_| failed.is_none());
        let text = flags.unwrap_or_default();
        let has = |f: &str| text.split(['|', ',', '{', '}', '=', ' ']).any(|w| w == f);
        let Some(rel) = rel.filter(|_| !has("O_PATH") && !has("O_TMPFILE")) else {
            if let Some(fd) = fd {
                self.tables.set(tid, fd, Slot::Other);
            }
            return;
        };
        let flags = OpenFlags {
            read: has("O_RDONLY") || has("O_RDWR"),
            write: has("O_WRONLY") || has("O_RDWR"),
            create: has("O_CREAT"),
            truncate: has("O_TRUNC"),
            append: has("O_APPEND"),
            exclusive: has("O_EXCL"),
            direct: has("O_DIRECT"),
            sync: has("O_SYNC"),
            dsync: has("O_DSYNC"),
            directory: has("O_DIRECTORY"),
            implicit: false,
        };
        let seen = match failed {
            None if flags.directory => Seen::Exists(EntryKind::Dir, None),
            None if !flags.create => Seen::Exists(EntryKind::File, None),
            None => Seen::Unknown,
            Some(libc::ENOENT) => Seen::Missing,
            Some(libc::EEXIST) => Seen::Exists(EntryKind::File, None),
            Some(libc::ENOTDIR) if flags.directory => Seen::Exists(EntryKind::File, None),
            Some(libc::EISDIR) => Seen::Exists(EntryKind::Dir, None),
            Some(_) => Seen::Unknown,
        };
        let file = self.file(&rel, seen);
        if failed.is_none() {
            if flags.truncate || (flags.create && !self.state[file as usize].known) {
                self.modified(file, 0);
            }
            if flags.create {
                self.state[file as usize].known = true;
            }
        }
        let h = self.new_handle(file, flags.append);
        if let Some(fd) = fd {
            let cloexec = has("O_CLOEXEC");
            self.tables.set(tid, fd, Slot::Held { handle: h, cloexec });
        }
        self.push(
            tid,
            start,
            dur,
            OpKind::Open {
                handle: h,
                file,
                flags,
            },
            failed,
        );
    }

    fn transfer(&mut self, tid: u64, start: u64, dur: u64, c: &Call, failed: Option<i32>) {
        let a = &c.args;
        let name = c.name.as_str();
        let Some(h) = self.handle(tid, a.first(), start) else {
            return;
        };
        let explicit = match name {
            "pread64" | "pwrite64" | "preadv" | "preadv2" | "pwritev" | "pwritev2" => num(a.get(3)),
            _ => None,
        };
        let d = *self.desc(h);
        let file = d.file;
        let is_write = name.starts_with('w') || name.starts_with("pw");
        let offset = match explicit {
            Some(o) => o,
            None if is_write && d.append => self.state[file as usize].size,
            None => d.pos,
        };
        let call = match name {
            "read" => "read",
            "pread64" => "pread",
            "readv" => "readv",
            "preadv" | "preadv2" => "preadv",
            "write" => "write",
            "pwrite64" => "pwrite",
            "writev" => "writev",
            _ => "pwritev",
        };
        let kind = |handle, offset, len| {
            if is_write {
                OpKind::Write {
                    call,
                    handle,
                    offset,
                    len,
                }
            } else {
                OpKind::Read {
                    call,
                    handle,
                    offset,
                    len,
                }
            }
        };
        if failed.is_some() {
            // What was asked, for the replay to fail the same way.
            let asked = match name {
                "read" | "write" | "pread64" | "pwrite64" => num(a.get(2)).unwrap_or(0),
                _ => 0,
            }
            .min(MAX_IO_BYTES);
            let offset = offset.min(MAX_FILE_BYTES - asked);
            self.push(tid, start, dur, kind(h, offset, asked), failed);
            return;
        }
        let done = c.ret.unwrap_or(0) as u64;
        let end = self.end(offset, done);
        if explicit.is_none() {
            self.desc(h).pos = end;
        }
        if is_write {
            let size = self.state[file as usize].size.max(end);
            self.modified(file, size);
        } else if done > 0 {
            // A short or empty read only says the file ends somewhere after `offset`.
            self.saw(file, Seen::Exists(EntryKind::File, Some(end)));
        }
        // A transfer larger than one replayed operation may move becomes
        // several, back to back.
        let mut at = offset;
        let mut left = done;
        loop {
            let len = left.min(MAX_IO_BYTES);
            self.push(tid, start, dur, kind(h, at, len), None);
            left -= len;
            at = at.saturating_add(len);
            if left == 0 || self.error.is_some() {
                break;
            }
        }
    }
}

/// What a stat buffer says of a path: its kind and size.
fn stat_seen(statbuf: Option<&String>) -> Seen {
    let kind = match statbuf {
        Some(b) if b.contains("S_IFDIR") => EntryKind::Dir,
        Some(b) if b.contains("S_IFLNK") => EntryKind::Symlink,
        _ => EntryKind::File,
    };
    let size = stat_field(statbuf, "st_size=").or_else(|| stat_field(statbuf, "stx_size="));
    Seen::Exists(kind, if kind == EntryKind::File { size } else { None })
}

/// Permission bits of a mode argument (`0644`, `S_IRUSR|…` is read as 0644).
fn mode(arg: Option<&String>) -> u32 {
    arg.and_then(|m| {
        u32::from_str_radix(m.trim_start_matches('0'), 8)
            .ok()
            .or_else(|| m.parse().ok())
    })
    .unwrap_or(0o644)
        & 0o7777
}
