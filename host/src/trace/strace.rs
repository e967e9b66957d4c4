//! Converts an `strace -f -ttt -T -y` log into a [`Trace`]: the file
//! operations of every thread, in order, with start times and durations,
//! keeping only paths under the recording's root. Data is never recorded,
//! only sizes and offsets (offsets of plain `read`/`write` are worked out
//! from the file position, as the kernel did).

use super::format::{FileEntry, Op, OpKind, OpenFlags, Trace};
use std::collections::HashMap;

/// The strace options a log must be captured with.
pub const STRACE_OPTIONS: &[&str] = &["-f", "-ttt", "-T", "-y", "-s", "0"];

/// The system calls plumb converts (`?`: not every architecture has it).
pub const SYSCALLS: &str = "?open,openat,?openat2,?creat,read,pread64,readv,preadv,?preadv2,write,pwrite64,writev,pwritev,?pwritev2,lseek,fsync,fdatasync,sync_file_range,ftruncate,fallocate,close,?fstat,?newfstatat,?stat,?lstat,?statx,mmap,copy_file_range,sendfile,?rename,renameat,?renameat2,?unlink,unlinkat,?mkdir,mkdirat,?rmdir,chdir,fchdir,clone,?clone3,?fork,?vfork";

/// A line that could not be understood.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct StraceError {
    /// The log.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

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

/// Converts a log; paths outside `root` (an absolute, normalised directory)
/// are left out. `cwd` is the working directory the command started in.
pub fn convert(name: &str, log: &str, root: &str, cwd: &str) -> Result<Trace, StraceError> {
    let mut c = Converter {
        root: normalise(root),
        start_cwd: normalise(cwd),
        ..Converter::default()
    };
    let mut pending: HashMap<u64, String> = HashMap::new();
    for (i, raw) in log.lines().enumerate() {
        let n = i + 1;
        let err = |message: String| StraceError {
            file: name.to_string(),
            line: n,
            message,
        };
        let line = raw.trim_end();
        if line.is_empty() {
            continue;
        }
        let (tid, rest) = split_pid(line);
        let (ts, rest) = rest
            .split_once(' ')
            .and_then(|(t, r)| t.parse::<f64>().ok().map(|t| (t, r)))
            .ok_or_else(|| {
                err("expected a timestamp: capture with strace -f -ttt -T -y -s 0".into())
            })?;
        let t0 = *c.t0.get_or_insert(ts);
        if rest.starts_with("+++") || rest.starts_with("---") {
            continue;
        }
        let call = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(tid, head.to_string());
            c.starts.insert(tid, ts);
            continue;
        } else if let Some(tail) = rest.strip_prefix("<... ") {
            let Some((_, after)) = tail.split_once(" resumed>") else {
                return Err(err("a malformed 'resumed' line".into()));
            };
            match pending.remove(&tid) {
                Some(head) => format!("{head}{after}"),
                // The start was before the log began.
                None => continue,
            }
        } else {
            c.starts.insert(tid, ts);
            rest.to_string()
        };
        let start = c.starts.remove(&tid).unwrap_or(ts);
        let Some(sys) = parse_call(&call) else {
            return Err(err(format!(
                "cannot read the system call in '{}'",
                short(&call)
            )));
        };
        let dur = sys.dur.unwrap_or(0.0);
        c.apply(
            tid,
            ((start - t0) * 1e6).round().max(0.0) as u64,
            (dur * 1e6).round() as u64,
            &sys,
        );
    }
    // The trace spans the program's file activity: from its first kept
    // operation to the end of its last.
    let mut ops = std::mem::take(&mut c.ops);
    ops.sort_by_key(|o| o.start_us);
    let base = ops.first().map_or(0, |o| o.start_us);
    for o in &mut ops {
        o.start_us -= base;
    }
    let duration_us = ops.iter().map(|o| o.start_us + o.dur_us).max().unwrap_or(0);
    Ok(Trace {
        files: c.files,
        threads: c.threads,
        ops,
        duration_us,
    })
}

fn short(s: &str) -> String {
    s.chars().take(80).collect()
}

fn split_pid(line: &str) -> (u64, &str) {
    let trimmed = line.trim_start();
    if let Some((first, rest)) = trimmed.split_once(' ') {
        let rest = rest.trim_start();
        // "PID TIMESTAMP ...": the timestamp has a dot, the pid does not.
        if first.bytes().all(|b| b.is_ascii_digit()) {
            return (first.parse().unwrap_or(0), rest);
        }
    }
    (0, trimmed)
}

/// One completed system call.
struct Call {
    name: String,
    args: Vec<String>,
    ret: Option<i64>,
    ret_path: Option<String>,
    dur: Option<f64>,
}

fn parse_call(s: &str) -> Option<Call> {
    let open = s.find('(')?;
    let name = s[..open].to_string();
    let body = &s[open + 1..];
    let close = matching_paren(body)?;
    let args = split_args(&body[..close]);
    let after = body[close + 1..].trim_start();
    let after = after.strip_prefix('=')?.trim_start();
    let (ret_text, dur) = match after.rfind(" <") {
        Some(i) if after.ends_with('>') => (
            &after[..i],
            after[i + 2..after.len() - 1].parse::<f64>().ok(),
        ),
        _ => (after, None),
    };
    let ret_word = ret_text.split(' ').next().unwrap_or("");
    let (ret_num, ret_path) = decorated(ret_word);
    let ret = ret_num.parse::<i64>().ok().or_else(|| {
        // mmap returns an address.
        ret_num
            .strip_prefix("0x")
            .and_then(|h| i64::from_str_radix(h, 16).ok())
    });
    Some(Call {
        name,
        args,
        ret: ret.filter(|r| *r >= 0),
        ret_path,
        dur,
    })
}

/// Follows strace's quoted strings (with backslash escapes) character by
/// character, so brackets and commas inside them are not taken for syntax.
#[derive(Default)]
struct Quotes {
    quoted: bool,
    escaped: bool,
}

impl Quotes {
    /// Takes the next character; true when it is part of a quoted string.
    fn inside(&mut self, ch: char) -> bool {
        if !self.quoted {
            self.quoted = ch == '"';
            return self.quoted;
        }
        match (self.escaped, ch) {
            (true, _) => self.escaped = false,
            (false, '\\') => self.escaped = true,
            (false, '"') => self.quoted = false,
            _ => {}
        }
        true
    }
}

/// Where the closing parenthesis of the argument list is.
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut quotes = Quotes::default();
    for (i, ch) in s.char_indices() {
        if quotes.inside(ch) {
            continue;
        }
        match ch {
            '(' | '{' | '[' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' | '}' | ']' => depth -= 1,
            _ => {}
        }
    }
    None
}

fn split_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut depth, mut angle) = (0i32, 0i32);
    let mut quotes = Quotes::default();
    for ch in s.chars() {
        if quotes.inside(ch) {
            cur.push(ch);
            continue;
        }
        match ch {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth -= 1,
            '<' => angle += 1,
            '>' => angle -= 1,
            ',' if depth == 0 && angle <= 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// `3</a/b>` → ("3", Some("/a/b")).
fn decorated(s: &str) -> (&str, Option<String>) {
    match s.find('<') {
        Some(i) if s.ends_with('>') => (&s[..i], Some(s[i + 1..s.len() - 1].to_string())),
        _ => (s, None),
    }
}

/// The contents of a quoted string argument, unescaped.
fn unquote(s: &str) -> Option<String> {
    let inner = s.strip_prefix('"')?;
    let inner = inner
        .strip_suffix("...")
        .unwrap_or(inner)
        .strip_suffix('"')?;
    let mut out = Vec::new();
    let mut it = inner.bytes().peekable();
    while let Some(b) = it.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match it.next()? {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'x' => {
                let h: String = [it.next()? as char, it.next()? as char].iter().collect();
                out.push(u8::from_str_radix(&h, 16).ok()?);
            }
            d @ b'0'..=b'7' => {
                let mut v = (d - b'0') as u32;
                while let Some(&n @ b'0'..=b'7') = it.peek() {
                    v = v * 8 + (n - b'0') as u32;
                    it.next();
                }
                out.push(v as u8);
            }
            other => out.push(other),
        }
    }
    String::from_utf8(out).ok()
}

/// Lexical normalisation: absolute, no `.`, `..` resolved, no trailing `/`.
fn normalise(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

fn num(s: Option<&String>) -> Option<u64> {
    let s = s?;
    let s = decorated(s).0;
    s.parse().ok()
}

#[derive(Default)]
struct Converter {
    root: String,
    start_cwd: String,
    t0: Option<f64>,
    starts: HashMap<u64, f64>,
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
}

impl Converter {
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
        let thread = self.thread(tid);
        self.ops.push(Op {
            thread,
            start_us: start,
            dur_us: 0,
            kind: OpKind::Open {
                handle: h,
                file,
                flags: OpenFlags {
                    read: true,
                    write: true,
                    implicit: true,
                    ..Default::default()
                },
            },
        });
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
        let thread = self.thread(tid);
        self.ops.push(Op {
            thread,
            start_us: start,
            dur_us: dur,
            kind,
        });
    }

    fn apply(&mut self, tid: u64, start: u64, dur: u64, c: &Call) {
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
                    self.handles[h as usize].pos = ret as u64;
                    let file = self.handles[h as usize].file;
                    if a.get(2).is_some_and(|w| w == "SEEK_END")
                        && a.get(1).is_some_and(|o| o == "0")
                    {
                        self.seen_size(file, ret as u64);
                    }
                    self.push(
                        tid,
                        start,
                        dur,
                        OpKind::Lseek {
                            handle: h,
                            offset: ret as u64,
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
                    self.modified(self.handles[h as usize].file, len);
                    self.push(tid, start, dur, OpKind::Ftruncate { handle: h, len });
                }
            }
            "fallocate" => {
                if let Some(h) = self.handle(tid, a.first(), start) {
                    let (offset, len) = (num(a.get(2)).unwrap_or(0), num(a.get(3)).unwrap_or(0));
                    let file = self.handles[h as usize].file;
                    let size = self.state[file as usize].size.max(offset + len);
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
                    self.push(
                        tid,
                        start,
                        dur,
                        OpKind::Copy {
                            from,
                            to,
                            len: ret as u64,
                        },
                    );
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
        if explicit.is_none() {
            self.handles[h as usize].pos = offset + done;
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
        let kind = if is_write {
            let size = self.state[file as usize].size.max(offset + done);
            self.modified(file, size);
            OpKind::Write {
                call,
                handle: h,
                offset,
                len: done,
            }
        } else {
            // A short or empty read only says the file ends somewhere after `offset`.
            if done > 0 {
                self.seen_size(file, offset + done);
            }
            OpKind::Read {
                call,
                handle: h,
                offset,
                len: done,
            }
        };
        self.push(tid, start, dur, kind);
    }
}

fn stat_field(statbuf: Option<&String>, key: &str) -> Option<u64> {
    let s = statbuf?;
    let i = s.find(key)? + key.len();
    let digits: String = s[i..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = r#"3746  1796043420.982403 openat(AT_FDCWD</tmp/stt>, "a.dat", O_RDWR|O_CREAT|O_TRUNC|O_CLOEXEC, 0644) = 3</tmp/stt/a.dat> <0.000142>
3746  1796043420.982572 pwrite64(3</tmp/stt/a.dat>, ""..., 4096, 0) = 4096 <0.000014>
3746  1796043420.982610 write(3</tmp/stt/a.dat>, ""..., 100) = 100 <0.000006>
3746  1796043420.982635 lseek(3</tmp/stt/a.dat>, 0, SEEK_SET) = 0 <0.000005>
3746  1796043420.982667 read(3</tmp/stt/a.dat>, ""..., 50) = 50 <0.000004>
3746  1796043420.982691 fsync(3</tmp/stt/a.dat>) = 0 <0.000442>
3746  1796043420.983150 close(3</tmp/stt/a.dat>) = 0 <0.000005>
3746  1796043420.983312 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD, child_tid=0x7f80c4b14990, exit_signal=0} => {parent_tid=[3789]}, 88) = 3789 <0.000061>
3789  1796043420.983676 openat(AT_FDCWD</tmp/stt>, "b.dat", O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC, 0644) = 3</tmp/stt/b.dat> <0.000031>
3789  1796043420.983750 write(3</tmp/stt/b.dat>, <unfinished ...>
3746  1796043420.983751 openat(AT_FDCWD</tmp/stt>, "/etc/passwd", O_RDONLY) = 4</etc/passwd> <0.000010>
3789  1796043420.983790 <... write resumed>""..., 10) = 10 <0.000012>
3789  1796043420.983800 close(3</tmp/stt/b.dat>) = 0 <0.000005>
3746  1796043420.983949 mkdir("d", 0777) = 0 <0.000148>
3789  1796043420.984143 +++ exited with 0 +++
3746  1796043420.984158 rename("b.dat", "d/c.dat") = 0 <0.000012>
3746  1796043420.984190 newfstatat(AT_FDCWD</tmp/stt>, "d/c.dat", {st_mode=S_IFREG|0644, st_size=10, ...}, 0) = 0 <0.000004>
3746  1796043420.984200 openat(AT_FDCWD</tmp/stt>, "missing", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000004>
3746  1796043420.984226 unlink("d/c.dat") = 0 <0.000025>
3746  1796043420.992109 +++ exited with 0 +++
"#;

    #[test]
    fn converts_every_kind_of_line() {
        let t = convert("log", LOG, "/tmp/stt", "/tmp/stt").unwrap();
        let names: Vec<&str> = t.ops.iter().map(|o| o.kind.name()).collect();
        assert_eq!(
            names,
            [
                "open", "pwrite", "write", "lseek", "read", "fsync", "close", "open", "write",
                "close", "mkdir", "rename", "stat", "unlink"
            ]
        );
        assert_eq!(t.threads, vec![3746, 3789]);
        let paths: Vec<&str> = t.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.dat", "b.dat", "d", "d/c.dat"]);
        // The plain write continues at the file position after the pwrite? No:
        // pwrite does not move it, so the write lands at 0, and the read after
        // lseek(0) at 0.
        assert_eq!(
            t.ops[2].kind,
            OpKind::Write {
                call: "write",
                handle: 0,
                offset: 0,
                len: 100
            }
        );
        assert_eq!(
            t.ops[4].kind,
            OpKind::Read {
                call: "read",
                handle: 0,
                offset: 0,
                len: 50
            }
        );
        // The resumed write keeps the start time of its first half.
        assert_eq!(
            t.ops[0].start_us, 0,
            "the trace starts at its first operation"
        );
        assert_eq!(t.ops[8].start_us, 1347);
        assert_eq!(t.ops[8].dur_us, 12);
        assert_eq!(t.ops[8].thread, 1);
        assert_eq!(t.duration_us, 984226 - 982403 + 25);
    }
}
