//! The conversion proper: follows descriptors per fd table (threads share
//! one, forks copy it), file positions and sizes, and turns each system call
//! on a path under the root into a trace operation.

use super::syntax::{decorated, normalise, num, stat_field, unquote, Call};
use crate::trace::format::{FileEntry, Op, OpKind, OpenFlags, Trace};
use crate::trace::limits::{MAX_FILES, MAX_FILE_BYTES, MAX_IO_BYTES, MAX_OPS, MAX_THREADS};
use std::collections::HashMap;

#[derive(Clone, Copy)]
struct Handle {
    file: u32,
    pos: u64,
    append: bool,
}

#[derive(Default, Clone, Copy)]
struct FileState {
    /// A write or truncate happened: the size at first touch is settled.
    modified: bool,
    /// Current size, as far as the trace shows.
    size: u64,
}

/// What the conversion knows so far: descriptors, files, threads, operations.
#[derive(Default)]
pub(super) struct Converter {
    root: String,
    start_cwd: String,
    cwd: HashMap<u64, String>,
    table_of: HashMap<u64, usize>,
    tables: Vec<HashMap<i64, u32>>,
    handles: Vec<Handle>,
    files: Vec<FileEntry>,
    state: Vec<FileState>,
    file_ids: HashMap<String, u32>,
    threads: Vec<u64>,
    thread_ids: HashMap<u64, u32>,
    ops: Vec<Op>,
    /// The first bound the log broke (see [`Converter::take_error`]).
    error: Option<String>,
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
    pub(super) fn finish(self) -> Trace {
        let mut ops = self.ops;
        ops.sort_by_key(|o| o.start_us);
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
        }
    }

    fn table(&mut self, tid: u64) -> usize {
        if let Some(t) = self.table_of.get(&tid) {
            return *t;
        }
        self.tables.push(HashMap::new());
        self.table_of.insert(tid, self.tables.len() - 1);
        self.tables.len() - 1
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
        let abs = normalise(abs);
        if self.root == "/" {
            return Some(abs[1..].to_string()).filter(|s| !s.is_empty());
        }
        abs.strip_prefix(&self.root)?
            .strip_prefix('/')
            .map(str::to_string)
            .filter(|s| !s.is_empty())
    }

    /// Resolves a path argument against a decorated dirfd or the cwd.
    fn resolve(&self, tid: u64, dirfd: Option<&String>, path: &str) -> Option<String> {
        if path.starts_with('/') {
            return self.relative(path);
        }
        let base = match dirfd.map(|d| decorated(d)) {
            Some((_, Some(dir))) => dir,
            _ => self
                .cwd
                .get(&tid)
                .cloned()
                .unwrap_or_else(|| self.start_cwd.clone()),
        };
        self.relative(&format!("{base}/{path}"))
    }

    fn file(&mut self, rel: &str, size: Option<u64>) -> u32 {
        if let Some(f) = self.file_ids.get(rel) {
            return *f;
        }
        if self.files.len() >= MAX_FILES {
            self.fail(format!(
                "more than {MAX_FILES} files (the most a trace may name)"
            ));
            return 0;
        }
        let size = size.map(|s| self.bounded(s, "file size"));
        self.files.push(FileEntry {
            path: rel.to_string(),
            size,
        });
        self.state.push(FileState {
            modified: false,
            size: size.unwrap_or(0),
        });
        let id = self.files.len() as u32 - 1;
        self.file_ids.insert(rel.to_string(), id);
        id
    }

    /// The file grew to at least `size` before it was modified: it was that big.
    fn seen_size(&mut self, f: u32, size: u64) {
        let size = self.bounded(size, "file size");
        let st = &mut self.state[f as usize];
        if !st.modified && size > st.size {
            st.size = size;
            self.files[f as usize].size = Some(size);
        }
    }

    fn modified(&mut self, f: u32, new_size: u64) {
        let st = &mut self.state[f as usize];
        st.modified = true;
        st.size = new_size;
    }

    /// The handle of a descriptor argument, opening one implicitly for a
    /// descriptor under the root that the trace did not see opened.
    fn handle(&mut self, tid: u64, arg: Option<&String>, start: u64) -> Option<u32> {
        let (fd, path) = decorated(arg?);
        let fd: i64 = fd.parse().ok()?;
        let table = self.table(tid);
        if let Some(h) = self.tables[table].get(&fd) {
            return Some(*h);
        }
        let rel = self.relative(path.as_deref()?)?;
        let file = self.file(&rel, Some(0));
        let h = self.open_handle(table, fd, file, false);
        self.push(
            tid,
            start,
            0,
            OpKind::Open {
                handle: h,
                file,
                flags: OpenFlags {
                    read: true,
                    write: true,
                    implicit: true,
                    ..Default::default()
                },
            },
        );
        Some(h)
    }

    fn open_handle(&mut self, table: usize, fd: i64, file: u32, append: bool) -> u32 {
        self.handles.push(Handle {
            file,
            pos: 0,
            append,
        });
        let h = self.handles.len() as u32 - 1;
        self.tables[table].insert(fd, h);
        h
    }

    fn push(&mut self, tid: u64, start: u64, dur: u64, kind: OpKind) {
        if self.ops.len() >= MAX_OPS {
            self.fail(format!(
                "more than {MAX_OPS} operations (the most a trace may hold)"
            ));
            return;
        }
        let thread = self.thread(tid);
        self.ops.push(Op {
            thread,
            start_us: start,
            dur_us: dur,
            kind,
        });
    }

    pub(super) fn apply(&mut self, tid: u64, start: u64, dur: u64, c: &Call) {
        // Any decorated AT_FDCWD tells this process's working directory.
        for a in &c.args {
            if let ("AT_FDCWD", Some(dir)) = decorated(a) {
                self.cwd.insert(tid, dir);
            }
        }
        let Some(ret) = c.ret else {
            return; // Failed calls change nothing.
        };
        let a = &c.args;
        let name = c.name.as_str();
        match name {
            "clone" | "clone3" | "fork" | "vfork" => {
                let parent = self.table(tid);
                let child = ret as u64;
                let shares = a.iter().any(|x| x.contains("CLONE_FILES"));
                if shares && name != "fork" && name != "vfork" {
                    self.table_of.insert(child, parent);
                } else {
                    let copy = self.tables[parent].clone();
                    self.tables.push(copy);
                    self.table_of.insert(child, self.tables.len() - 1);
                }
                if let Some(cwd) = self.cwd.get(&tid).cloned() {
                    self.cwd.insert(child, cwd);
                }
            }
            "chdir" => {
                if let Some(p) = a.first().and_then(|p| unquote(p)) {
                    let base = self
                        .cwd
                        .get(&tid)
                        .cloned()
                        .unwrap_or_else(|| self.start_cwd.clone());
                    let new = if p.starts_with('/') {
                        p
                    } else {
                        format!("{base}/{p}")
                    };
                    self.cwd.insert(tid, normalise(&new));
                }
            }
            "fchdir" => {
                if let Some((_, Some(dir))) = a.first().map(|d| decorated(d)) {
                    self.cwd.insert(tid, dir);
                }
            }
            "open" | "openat" | "openat2" | "creat" => self.open(tid, start, dur, name, a, c, ret),
            "read" | "pread64" | "readv" | "preadv" | "preadv2" | "write" | "pwrite64"
            | "writev" | "pwritev" | "pwritev2" => {
                self.transfer(tid, start, dur, name, a, ret as u64)
            }
            "lseek" => {
                if let Some(h) = self.handle(tid, a.first(), start) {
                    let pos = self.bounded(ret as u64, "lseek offset");
                    self.handles[h as usize].pos = pos;
                    let file = self.handles[h as usize].file;
                    if a.get(2).is_some_and(|w| w == "SEEK_END")
                        && a.get(1).is_some_and(|o| o == "0")
                    {
                        self.seen_size(file, pos);
                    }
                    self.push(
                        tid,
                        start,
                        dur,
                        OpKind::Lseek {
                            handle: h,
                            offset: pos,
                        },
                    );
                }
            }
            "fsync" | "fdatasync" | "close" | "fstat" => {
                if let Some(h) = self.handle(tid, a.first(), start) {
                    let kind = match name {
                        "fsync" => OpKind::Fsync(h),
                        "fdatasync" => OpKind::Fdatasync(h),
                        "fstat" => {
                            self.stat_size(self.handles[h as usize].file, a.get(1));
                            OpKind::Fstat(h)
                        }
                        _ => {
                            let table = self.table(tid);
                            if let Some(fd) =
                                a.first().and_then(|x| decorated(x).0.parse::<i64>().ok())
                            {
                                self.tables[table].remove(&fd);
                            }
                            OpKind::Close(h)
                        }
                    };
                    self.push(tid, start, dur, kind);
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
                    );
                }
            }
            "ftruncate" => {
                if let Some(h) = self.handle(tid, a.first(), start) {
                    let len = num(a.get(1)).unwrap_or(0);
                    let len = self.bounded(len, "ftruncate length");
                    self.modified(self.handles[h as usize].file, len);
                    self.push(tid, start, dur, OpKind::Ftruncate { handle: h, len });
                }
            }
            "fallocate" => {
                if let Some(h) = self.handle(tid, a.first(), start) {
                    let (offset, len) = (num(a.get(2)).unwrap_or(0), num(a.get(3)).unwrap_or(0));
                    let file = self.handles[h as usize].file;
                    let size = self.state[file as usize].size.max(self.end(offset, len));
                    self.modified(file, size);
                    self.push(
                        tid,
                        start,
                        dur,
                        OpKind::Fallocate {
                            handle: h,
                            offset,
                            len,
                        },
                    );
                }
            }
            "mmap" if a.get(4).is_some_and(|fd| !fd.starts_with('-')) => {
                if let Some(h) = self.handle(tid, a.get(4), start) {
                    let len = num(a.get(1)).unwrap_or(0);
                    let len = self.bounded(len, "mmap length");
                    self.push(tid, start, dur, OpKind::Mmap { handle: h, len });
                }
            }
            "copy_file_range" | "sendfile" => {
                let (from, to) = if name == "sendfile" {
                    (a.get(1), a.first())
                } else {
                    (a.first(), a.get(2))
                };
                if let (Some(from), Some(to)) =
                    (self.handle(tid, from, start), self.handle(tid, to, start))
                {
                    let len = self.bounded(ret as u64, "copy length");
                    self.push(tid, start, dur, OpKind::Copy { from, to, len });
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
                        self.stat_size(self.handles[h as usize].file, statbuf);
                        self.push(tid, start, dur, OpKind::Fstat(h));
                    }
                } else if let Some(rel) = self.resolve(tid, dirfd, &p) {
                    // A directory has no data to lay out.
                    let is_dir = statbuf.is_some_and(|b| b.contains("S_IFDIR"));
                    let size = stat_field(statbuf, "st_size=")
                        .or_else(|| stat_field(statbuf, "stx_size="));
                    let f = self.file(&rel, if is_dir { None } else { size });
                    if !is_dir {
                        self.stat_size(f, statbuf);
                    }
                    self.push(tid, start, dur, OpKind::Stat(f));
                }
            }
            "rename" | "renameat" | "renameat2" => {
                let (fa, pa, fb, pb) = if name == "rename" {
                    (None, a.first(), None, a.get(1))
                } else {
                    (a.first(), a.get(1), a.get(2), a.get(3))
                };
                let from = pa
                    .and_then(|p| unquote(p))
                    .and_then(|p| self.resolve(tid, fa, &p));
                let to = pb
                    .and_then(|p| unquote(p))
                    .and_then(|p| self.resolve(tid, fb, &p));
                if let (Some(from), Some(to)) = (from, to) {
                    let f = self.file(&from, Some(0));
                    let t = self.file(&to, None);
                    // The target now holds the source's data.
                    self.state[t as usize] = self.state[f as usize];
                    self.state[t as usize].modified = true;
                    self.push(tid, start, dur, OpKind::Rename { from: f, to: t });
                }
            }
            "unlink" | "unlinkat" | "mkdir" | "mkdirat" | "rmdir" => {
                let (dirfd, path) = match name {
                    "unlinkat" | "mkdirat" => (a.first(), a.get(1)),
                    _ => (None, a.first()),
                };
                let Some(rel) = path
                    .and_then(|p| unquote(p))
                    .and_then(|p| self.resolve(tid, dirfd, &p))
                else {
                    return;
                };
                let is_rmdir = name == "rmdir"
                    || (name == "unlinkat" && a.get(2).is_some_and(|f| f.contains("AT_REMOVEDIR")));
                let kind = if name.starts_with("mkdir") {
                    OpKind::Mkdir(self.file(&rel, None))
                } else if is_rmdir {
                    OpKind::Rmdir(self.file(&rel, Some(0)))
                } else {
                    OpKind::Unlink(self.file(&rel, Some(0)))
                };
                self.push(tid, start, dur, kind);
            }
            _ => {}
        }
    }

    fn stat_size(&mut self, f: u32, statbuf: Option<&String>) {
        if let Some(size) =
            stat_field(statbuf, "st_size=").or_else(|| stat_field(statbuf, "stx_size="))
        {
            self.seen_size(f, size);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn open(
        &mut self,
        tid: u64,
        start: u64,
        dur: u64,
        name: &str,
        a: &[String],
        c: &Call,
        ret: i64,
    ) {
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
            _ => path
                .and_then(|p| unquote(p))
                .and_then(|p| self.resolve(tid, dirfd, &p)),
        };
        let Some(rel) = rel else {
            return;
        };
        let text = flags.unwrap_or_default();
        let has = |f: &str| text.split(['|', ',', '{', '}', '=', ' ']).any(|w| w == f);
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
            implicit: false,
        };
        if has("O_DIRECTORY") || has("O_PATH") {
            return;
        }
        let size = if flags.create { None } else { Some(0) };
        let file = self.file(&rel, size);
        if flags.truncate {
            self.modified(file, 0);
        }
        let table = self.table(tid);
        let h = self.open_handle(table, ret, file, flags.append);
        self.push(
            tid,
            start,
            dur,
            OpKind::Open {
                handle: h,
                file,
                flags,
            },
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn transfer(&mut self, tid: u64, start: u64, dur: u64, name: &str, a: &[String], done: u64) {
        let Some(h) = self.handle(tid, a.first(), start) else {
            return;
        };
        let explicit = match name {
            "pread64" | "pwrite64" => num(a.get(3)),
            "preadv" | "preadv2" | "pwritev" | "pwritev2" => num(a.get(3)),
            _ => None,
        };
        let hs = self.handles[h as usize];
        let file = hs.file;
        let is_write = name.starts_with('w') || name.starts_with("pw");
        let offset = match explicit {
            Some(o) => o,
            None if is_write && hs.append => self.state[file as usize].size,
            None => hs.pos,
        };
        let end = self.end(offset, done);
        if explicit.is_none() {
            self.handles[h as usize].pos = end;
        }
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
        if is_write {
            let size = self.state[file as usize].size.max(end);
            self.modified(file, size);
        } else if done > 0 {
            // A short or empty read only says the file ends somewhere after `offset`.
            self.seen_size(file, end);
        }
        // A transfer larger than one replayed operation may move becomes
        // several, back to back.
        let mut at = offset;
        let mut left = done;
        loop {
            let len = left.min(MAX_IO_BYTES);
            let kind = if is_write {
                OpKind::Write {
                    call,
                    handle: h,
                    offset: at,
                    len,
                }
            } else {
                OpKind::Read {
                    call,
                    handle: h,
                    offset: at,
                    len,
                }
            };
            self.push(tid, start, dur, kind);
            left -= len;
            at = at.saturating_add(len);
            if left == 0 || self.error.is_some() {
                break;
            }
        }
    }
}
