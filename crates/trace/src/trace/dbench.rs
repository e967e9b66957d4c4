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

use super::format::{EntryKind, FileEntry, Op, OpKind, OpenFlags, RenameMode, Trace};
use super::limits::{MAX_FILES, MAX_FILE_BYTES, MAX_IO_BYTES, MAX_LOG_LINE, MAX_OPS, MAX_TIME_US};
use std::collections::{BTreeSet, HashMap, HashSet};

/// A line of a load file that cannot be converted.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct DbenchError {
    /// The load file's name as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

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

/// The NT statuses plumb knows: name, code, and the errno a local file
/// system gives where the server gave the status (None: success).
const STATUSES: &[(&str, u32, Option<i32>)] = &[
    ("NT_STATUS_OK", 0, None),
    ("NT_STATUS_NO_SUCH_FILE", 0xC000_000F, Some(libc::ENOENT)),
    (
        "NT_STATUS_OBJECT_NAME_NOT_FOUND",
        0xC000_0034,
        Some(libc::ENOENT),
    ),
    (
        "NT_STATUS_OBJECT_PATH_NOT_FOUND",
        0xC000_003A,
        Some(libc::ENOENT),
    ),
    (
        "NT_STATUS_OBJECT_NAME_COLLISION",
        0xC000_0035,
        Some(libc::EEXIST),
    ),
    ("NT_STATUS_ACCESS_DENIED", 0xC000_0022, Some(libc::EACCES)),
    (
        "NT_STATUS_FILE_IS_A_DIRECTORY",
        0xC000_00BA,
        Some(libc::EISDIR),
    ),
    (
        "NT_STATUS_NOT_A_DIRECTORY",
        0xC000_0103,
        Some(libc::ENOTDIR),
    ),
    (
        "NT_STATUS_DIRECTORY_NOT_EMPTY",
        0xC000_0101,
        Some(libc::ENOTEMPTY),
    ),
    ("NT_STATUS_NO_MORE_FILES", 0x8000_0006, Some(libc::ENOENT)),
];

/// Up to `max` characters of `w` as an error may show them: no control
/// characters (a terminal would obey them).
fn shown(w: &str, max: usize) -> String {
    w.chars().filter(|c| !c.is_control()).take(max).collect()
}

/// The errno an NT status stands for (None: success), by name
/// (`NT_STATUS_OBJECT_NAME_NOT_FOUND`) or code (`0xC0000034`, `0x0`).
pub fn status(s: &str) -> Result<Option<i32>, String> {
    let found = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let code = u32::from_str_radix(hex, 16).ok();
        STATUSES.iter().find(|(_, c, _)| Some(*c) == code)
    } else {
        STATUSES.iter().find(|(n, _, _)| *n == s)
    };
    match found {
        Some((_, _, errno)) => Ok(*errno),
        None => {
            let shown = shown(s, 48);
            let known: Vec<&str> = STATUSES.iter().map(|(n, _, _)| *n).collect();
            Err(format!(
                "status '{shown}' is not one plumb maps to an errno (it knows {} and their 0x codes)",
                known.join(", ")
            ))
        }
    }
}

/// What a load file's path names, once `\clients\clientN` is taken off.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// `\clients`: where dbench's clients live, above this one's directory.
    Clients,
    /// A path in the client's directory ("" for the directory itself).
    In(String),
}

/// Splits a line into words; a word in double quotes may hold spaces (the
/// quotes are taken off, as dbench's `next_token` does).
fn words(line: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = line;
    loop {
        rest = rest.trim_start_matches([' ', '\t']);
        if rest.is_empty() {
            return Ok(out);
        }
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').ok_or("a quoted path has no closing quote")?;
            out.push(&q[..end]);
            rest = &q[end + 1..];
        } else {
            let end = rest.find([' ', '\t']).unwrap_or(rest.len());
            out.push(&rest[..end]);
            rest = &rest[end..];
        }
    }
}

/// A number as dbench reads it (`strtol` base 0): decimal or `0x` hex.
fn number(w: &str, what: &str) -> Result<u64, String> {
    let parsed = match w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None if w.bytes().all(|b| b.is_ascii_digit()) => w.parse().ok(),
        None => None,
    };
    parsed.ok_or_else(|| format!("{what} '{}' is not a number", shown(w, 40)))
}

/// An offset and a length within the bounds of a trace's transfers.
fn extent(offset: u64, len: u64, max_len: u64) -> Result<(u64, u64), String> {
    if len > max_len {
        return Err(format!(
            "length {len} is more than the {max_len} bytes one operation may move"
        ));
    }
    match offset.checked_add(len) {
        Some(end) if end <= MAX_FILE_BYTES => Ok((offset, len)),
        Some(_) => Err(format!(
            "offset {offset} + length {len} is past the largest file a trace may describe ({MAX_FILE_BYTES} bytes)"
        )),
        None => Err(format!("offset {offset} + length {len} overflows")),
    }
}

/// Where client 1's names begin (the client number is checked to be one).
fn place(w: &str, client: &mut Option<u64>) -> Result<Place, String> {
    let shown = || shown(w, 60);
    if w.is_empty() {
        return Err("the path is empty".into());
    }
    if w.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err(format!(
            "the path '{}' holds a NUL or control byte",
            shown()
        ));
    }
    let p = w.replace('\\', "/");
    let Some(rest) = p.strip_prefix('/') else {
        return Err(format!(
            "the path '{}' does not start with \\ (dbench reads only such paths)",
            shown()
        ));
    };
    let mut parts: Vec<&str> = rest.split('/').collect();
    if parts.first() == Some(&"clients") {
        if parts.len() == 1 {
            return Ok(Place::Clients);
        }
        let n = parts[1]
            .strip_prefix("client")
            .filter(|d| !d.is_empty() && d.len() < 10 && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u64>().ok())
            .ok_or_else(|| {
                format!(
                    "the path '{}' is in \\clients but not in a client's directory (\\clients\\clientN)",
                    shown()
                )
            })?;
        match client {
            Some(c) if *c != n => {
                return Err(format!(
                    "the path '{}' is client{n}'s, but earlier lines are client{c}'s: a load file is one client's operations",
                    shown()
                ))
            }
            _ => *client = Some(n),
        }
        parts.drain(..2);
        if parts.is_empty() {
            return Ok(Place::In(String::new()));
        }
    }
    if parts.first() == Some(&"") {
        return Err(format!(
            "the path '{}' is absolute after its client's directory",
            shown()
        ));
    }
    for c in &parts {
        match *c {
            "" => {
                return Err(format!(
                    "the path '{}' has an empty name between separators",
                    shown()
                ))
            }
            ".." => return Err(format!("the path '{}' climbs with '..'", shown())),
            "." => return Err(format!("the path '{}' has a '.' component", shown())),
            c if c.len() > 255 => {
                return Err(format!(
                    "the path '{}' has a name longer than 255 bytes",
                    shown()
                ))
            }
            _ => {}
        }
    }
    let rel = parts.join("/");
    if rel.len() > MAX_PATH {
        return Err(format!(
            "the path '{}' is longer than {MAX_PATH} bytes",
            shown()
        ));
    }
    Ok(Place::In(rel))
}

fn parent(p: &str) -> &str {
    p.rsplit_once('/').map_or("", |(d, _)| d)
}

fn base(p: &str) -> &str {
    p.rsplit_once('/').map_or(p, |(_, b)| b)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

/// The client's directory as the lines change it: a local, case-sensitive
/// file system, starting empty. Paths are relative ("" is the directory).
struct Fs {
    /// Directories and the names in each.
    dirs: HashMap<String, BTreeSet<String>>,
    files: HashSet<String>,
}

impl Fs {
    fn new() -> Fs {
        Fs {
            dirs: HashMap::from([(String::new(), BTreeSet::new())]),
            files: HashSet::new(),
        }
    }

    /// What `p` is, or the errno a lookup of it fails with.
    fn kind(&self, p: &str) -> Result<Kind, i32> {
        if self.dirs.contains_key(p) {
            return Ok(Kind::Dir);
        }
        if self.files.contains(p) {
            return Ok(Kind::File);
        }
        for (i, _) in p.match_indices('/') {
            let above = &p[..i];
            if self.files.contains(above) {
                return Err(libc::ENOTDIR);
            }
            if !self.dirs.contains_key(above) {
                return Err(libc::ENOENT);
            }
        }
        Err(libc::ENOENT)
    }

    fn dir(&self, p: &str) -> Result<(), i32> {
        match self.kind(p)? {
            Kind::Dir => Ok(()),
            Kind::File => Err(libc::ENOTDIR),
        }
    }

    fn names(&self, d: &str) -> impl Iterator<Item = &String> {
        self.dirs.get(d).into_iter().flatten()
    }

    fn add(&mut self, p: &str, kind: Kind) {
        if let Some(names) = self.dirs.get_mut(parent(p)) {
            names.insert(base(p).to_string());
        }
        match kind {
            Kind::File => {
                self.files.insert(p.to_string());
            }
            Kind::Dir => {
                self.dirs.insert(p.to_string(), BTreeSet::new());
            }
        }
    }

    fn remove(&mut self, p: &str) {
        if let Some(names) = self.dirs.get_mut(parent(p)) {
            names.remove(base(p));
        }
        self.files.remove(p);
        self.dirs.remove(p);
    }

    /// `open(2)` of a file read-write: with `O_CREAT`, made when missing.
    fn open_file(&mut self, p: &str, create: bool) -> Result<(), i32> {
        match self.kind(p) {
            Ok(Kind::File) => Ok(()),
            Ok(Kind::Dir) => Err(libc::EISDIR),
            Err(libc::ENOENT) if create => {
                self.dir(parent(p))?;
                self.add(p, Kind::File);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn mkdir(&mut self, p: &str) -> Result<(), i32> {
        match self.kind(p) {
            Ok(_) => Err(libc::EEXIST),
            Err(libc::ENOENT) => {
                self.dir(parent(p))?;
                self.add(p, Kind::Dir);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn unlink(&mut self, p: &str) -> Result<(), i32> {
        match self.kind(p)? {
            Kind::Dir => Err(libc::EISDIR),
            Kind::File => {
                self.remove(p);
                Ok(())
            }
        }
    }

    fn rmdir(&mut self, p: &str) -> Result<(), i32> {
        match self.kind(p)? {
            Kind::File => Err(libc::ENOTDIR),
            Kind::Dir if p.is_empty() => Err(libc::EBUSY),
            Kind::Dir if self.names(p).next().is_some() => Err(libc::ENOTEMPTY),
            Kind::Dir => {
                self.remove(p);
                Ok(())
            }
        }
    }

    fn rename(&mut self, a: &str, b: &str) -> Result<(), i32> {
        let ka = self.kind(a)?;
        self.dir(parent(b))?;
        if a == b {
            return Ok(());
        }
        if a.is_empty() || b.is_empty() {
            return Err(libc::EBUSY);
        }
        let kb = self.kind(b).ok();
        match (ka, kb) {
            (Kind::File, Some(Kind::Dir)) => return Err(libc::EISDIR),
            (Kind::Dir, Some(Kind::File)) => return Err(libc::ENOTDIR),
            (Kind::Dir, Some(Kind::Dir)) if self.names(b).next().is_some() => {
                return Err(libc::ENOTEMPTY)
            }
            (Kind::Dir, _) if b.starts_with(&format!("{a}/")) => return Err(libc::EINVAL),
            _ => {}
        }
        if kb.is_some() {
            self.remove(b);
        }
        match ka {
            Kind::File => {
                self.remove(a);
                self.add(b, Kind::File);
            }
            Kind::Dir => {
                // The whole subtree moves: every name under a is re-keyed.
                let from = format!("{a}/");
                let moved_dirs: Vec<String> = self
                    .dirs
                    .keys()
                    .filter(|k| k.starts_with(&from))
                    .cloned()
                    .collect();
                let moved_files: Vec<String> = self
                    .files
                    .iter()
                    .filter(|k| k.starts_with(&from))
                    .cloned()
                    .collect();
                let names = self.dirs.get(a).cloned().unwrap_or_default();
                self.remove(a);
                self.add(b, Kind::Dir);
                if let Some(n) = self.dirs.get_mut(b) {
                    *n = names;
                }
                for d in moved_dirs {
                    if let Some(n) = self.dirs.remove(&d) {
                        self.dirs.insert(format!("{b}/{}", &d[from.len()..]), n);
                    }
                }
                for f in moved_files {
                    self.files.remove(&f);
                    self.files.insert(format!("{b}/{}", &f[from.len()..]));
                }
            }
        }
        Ok(())
    }
}

/// How many `getdents64` calls reading `names` (after `.` and `..`) take
/// with glibc's buffer: up to `stop` entries when given (`readdir` stops
/// asking once it has them), else through to the empty call at the end.
fn getdents_calls<'a>(names: impl Iterator<Item = &'a String>, stop: Option<usize>) -> u64 {
    // linux_dirent64: 19 bytes of header, the name and its NUL, 8-aligned.
    let size = |len: usize| ((19 + len + 1 + 7) & !7) as u64;
    let mut calls = 1;
    let mut used = 0u64;
    let mut entries = 0usize;
    if stop == Some(0) {
        return 0;
    }
    for len in [1, 2].into_iter().chain(names.map(|n| n.len())) {
        if stop.is_some_and(|s| entries >= s) {
            return calls;
        }
        let s = size(len);
        if used + s > GETDENTS_BYTES {
            calls += 1;
            used = 0;
        }
        used += s;
        entries += 1;
    }
    if stop.is_some_and(|s| entries >= s) {
        calls
    } else {
        calls + 1
    }
}

/// A file dbench has open: the trace's handle, the file, and the name it
/// was opened by (which SET_FILE_INFORMATION's `utime` uses).
#[derive(Clone)]
struct Opened {
    handle: u32,
    path: String,
    /// Opened as a directory (read-only, `O_DIRECTORY`).
    dir: bool,
}

/// Counts of what the conversion left out or found disagreeing, for the notes.
#[derive(Default)]
struct Tally {
    set_up: Vec<usize>,
    own_mkdir: Vec<usize>,
    open_disagrees: Vec<usize>,
    status_disagrees: Vec<usize>,
}

fn lines_note(what: &str, lines: &[usize]) -> Option<String> {
    let first = lines.first()?;
    Some(format!("{} {what} (first at line {first})", lines.len()))
}

struct Converter {
    t: Trace,
    fs: Fs,
    ids: HashMap<String, u32>,
    /// File ids whose kind is settled (by their first creation).
    settled: HashSet<u32>,
    open: HashMap<u64, Opened>,
    /// NTCreateX lines whose open failed under fileio (a later use of the
    /// fnum stops dbench).
    unopened: HashMap<u64, usize>,
    next_handle: u32,
    clock: u64,
    /// The step the next operation begins.
    step: Option<&'static str>,
    client: Option<u64>,
    tally: Tally,
}

/// A file number as dbench keeps them (an `int`). 0 is what a load file
/// gives an open that fails; dbench's table marks a free slot with it, so
/// an open that succeeds may not use it ([`Converter::create`]).
fn fnum(w: &str) -> Result<u64, String> {
    let n = number(w, "fnum")?;
    if n > i32::MAX as u64 {
        return Err(format!("fnum {n} is not from 0 to {}", i32::MAX));
    }
    Ok(n)
}

/// dbench's name for each operation in its latency table.
fn step_name(op: &str) -> Option<&'static str> {
    Some(match op {
        "NTCreateX" => "NTCreateX",
        "Close" => "Close",
        "Rename" => "Rename",
        "Unlink" => "Unlink",
        "Deltree" => "Deltree",
        "Rmdir" => "Rmdir",
        "Mkdir" => "Mkdir",
        "QUERY_PATH_INFORMATION" => "Qpathinfo",
        "QUERY_FILE_INFORMATION" => "Qfileinfo",
        "QUERY_FS_INFORMATION" => "Qfsinfo",
        "SET_FILE_INFORMATION" => "Sfileinfo",
        "FIND_FIRST" => "Find",
        "WriteX" => "WriteX",
        "ReadX" => "ReadX",
        "LockX" => "LockX",
        "UnlockX" => "UnlockX",
        "Flush" => "Flush",
        "Sleep" => "Sleep",
        _ => return None,
    })
}

/// Fields each operation takes between its name and its status.
fn arity(op: &str) -> usize {
    match op {
        "NTCreateX" | "FIND_FIRST" | "WriteX" | "ReadX" => 4,
        "LockX" | "UnlockX" => 3,
        "Rename"
        | "Unlink"
        | "QUERY_PATH_INFORMATION"
        | "QUERY_FILE_INFORMATION"
        | "SET_FILE_INFORMATION" => 2,
        _ => 1,
    }
}

const DIR_OPEN: OpenFlags = OpenFlags {
    read: true,
    write: false,
    create: false,
    truncate: false,
    append: false,
    exclusive: false,
    direct: false,
    sync: false,
    dsync: false,
    directory: true,
    implicit: false,
};

impl Converter {
    fn file(&mut self, p: &str) -> Result<u32, String> {
        if let Some(id) = self.ids.get(p) {
            return Ok(*id);
        }
        if self.t.files.len() >= MAX_FILES {
            return Err(format!(
                "more than {MAX_FILES} files (the most a trace may name)"
            ));
        }
        let id = self.t.files.len() as u32;
        self.t.files.push(if p.is_empty() {
            // The client's directory itself, there from the start.
            FileEntry {
                path: ".".into(),
                size: Some(0),
                kind: EntryKind::Dir,
                target: None,
            }
        } else {
            FileEntry::file(p, None)
        });
        self.ids.insert(p.to_string(), id);
        Ok(id)
    }

    /// The first creation of a path says what it is in the file table.
    fn settle(&mut self, p: &str, kind: EntryKind) -> Result<(), String> {
        let id = self.file(p)?;
        if self.settled.insert(id) {
            self.t.files[id as usize].kind = kind;
        }
        Ok(())
    }

    fn push(&mut self, kind: OpKind, failed: Option<i32>) -> Result<(), String> {
        if self.t.ops.len() >= MAX_OPS {
            return Err(format!(
                "the load file makes more than {MAX_OPS} operations (the most a trace may hold)"
            ));
        }
        if let Some(name) = self.step.take() {
            // Below MAX_OPS, hence a u32.
            self.t.steps.mark(self.t.ops.len() as u32, name)?;
        }
        self.t.ops.push(Op {
            thread: 0,
            start_us: self.clock,
            dur_us: 0,
            kind,
            failed,
        });
        Ok(())
    }

    fn handle(&mut self) -> u32 {
        let h = self.next_handle;
        self.next_handle += 1;
        h
    }

    fn stat(&mut self, p: &str) -> Result<bool, String> {
        let f = self.file(p)?;
        let r = self.fs.kind(p);
        self.push(OpKind::Stat(f), r.err())?;
        Ok(r.is_ok())
    }

    /// `opendir` (an open and an fstat), the `getdents64` calls, `closedir`;
    /// `between` runs after the first batch (Deltree's work on each entry).
    /// False when the directory could not be opened.
    fn read_dir(
        &mut self,
        d: &str,
        stop: Option<usize>,
        between: &mut dyn FnMut(&mut Converter) -> Result<(), String>,
    ) -> Result<bool, String> {
        let f = self.file(d)?;
        let h = self.handle();
        if let Err(e) = self.fs.dir(d) {
            self.push(
                OpKind::Open {
                    handle: h,
                    file: f,
                    flags: DIR_OPEN,
                },
                Some(e),
            )?;
            return Ok(false);
        }
        self.push(
            OpKind::Open {
                handle: h,
                file: f,
                flags: DIR_OPEN,
            },
            None,
        )?;
        self.push(OpKind::Fstat(h), None)?;
        let calls = getdents_calls(self.fs.names(d), stop);
        let readdir = OpKind::Readdir {
            handle: h,
            len: GETDENTS_BYTES,
        };
        if calls > 0 {
            self.push(readdir.clone(), None)?;
        }
        between(self)?;
        for _ in 1..calls {
            self.push(readdir.clone(), None)?;
        }
        self.push(OpKind::Close(h), None)?;
        Ok(true)
    }

    /// fileio's `resolve_name`: a stat, and when it fails a read of the
    /// parent directory looking for the name in any case.
    fn resolve(&mut self, p: &str) -> Result<(), String> {
        if self.stat(p)? || p.is_empty() {
            return Ok(());
        }
        let (d, name) = (parent(p), base(p));
        let at = self
            .fs
            .names(d)
            .position(|n| n.eq_ignore_ascii_case(name))
            // "." and ".." come first.
            .map(|i| i + 3);
        self.read_dir(d, at, &mut |_| Ok(()))?;
        Ok(())
    }

    fn opened(&self, w: &str) -> Result<Opened, String> {
        let n = fnum(w)?;
        if let Some(o) = self.open.get(&n) {
            return Ok(o.clone());
        }
        Err(match self.unopened.get(&n) {
            Some(at) => format!(
                "fnum {n} is not open: its NTCreateX at line {at} fails under dbench's fileio backend, which stops at this use"
            ),
            None => format!(
                "fnum {n} is not open (dbench's fileio backend stops at an unknown handle)"
            ),
        })
    }

    /// A path field that must name something in the client's directory.
    fn path(&mut self, w: &str, op: &str) -> Result<String, String> {
        match place(w, &mut self.client)? {
            Place::In(p) => Ok(p),
            Place::Clients => Err(format!(
                "{op} of \\clients, above the client's own directory, cannot be replayed"
            )),
        }
    }

    /// A path field that must name a file or directory in it, not the
    /// client's directory itself.
    fn name(&mut self, w: &str, op: &str) -> Result<String, String> {
        let p = self.path(w, op)?;
        if p.is_empty() {
            return Err(format!(
                "{op} of the client's own directory: a name is needed"
            ));
        }
        Ok(p)
    }

    /// An outcome dbench checks against the status (it stops otherwise).
    fn checked(
        &self,
        op: &str,
        p: &str,
        r: Result<(), i32>,
        want: Option<i32>,
    ) -> Result<(), String> {
        match (r, want) {
            (Ok(()), Some(_)) => Err(format!(
                "{op} {p} succeeds under dbench's fileio backend but the load file says it fails; dbench stops here"
            )),
            (Err(e), None) => Err(format!(
                "{op} {p} fails under dbench's fileio backend ({}) but the load file says it succeeds; dbench stops here",
                super::format::errno::name(e)
            )),
            _ => Ok(()),
        }
    }

    fn line(&mut self, n: usize, op: &str, a: &[&str], want: Option<i32>) -> Result<(), String> {
        self.step = step_name(op);
        match op {
            "NTCreateX" => self.create(n, a, want),
            "Close" => {
                let o = self.opened(a[0])?;
                self.open.remove(&fnum(a[0])?);
                self.push(OpKind::Close(o.handle), None)
            }
            "ReadX" | "WriteX" => {
                let o = self.opened(a[0])?;
                let offset = number(a[1], "offset")?;
                let size = number(a[2], "size")?;
                let ret = number(a[3], "returned size")?;
                let (offset, len) = extent(offset, size, MAX_IO_BYTES)?;
                if op == "WriteX" && o.dir {
                    return Err(format!(
                        "WriteX to fnum {}, a directory: the write fails and dbench's fileio backend stops here",
                        a[0]
                    ));
                }
                if op == "WriteX" && ret != size {
                    return Err(format!(
                        "WriteX of {size} bytes expects {ret} written; a local write of {size} bytes writes {size}, and dbench's fileio backend stops here"
                    ));
                }
                // A read of a directory fails (dbench notes it and goes on).
                let failed = o.dir.then_some(libc::EISDIR);
                let kind = if op == "ReadX" {
                    OpKind::Read {
                        call: "pread",
                        handle: o.handle,
                        offset,
                        len,
                    }
                } else {
                    OpKind::Write {
                        call: "pwrite",
                        handle: o.handle,
                        offset,
                        len,
                    }
                };
                self.push(kind, failed)
            }
            "Flush" => {
                let o = self.opened(a[0])?;
                self.push(OpKind::Fsync(o.handle), None)
            }
            "QUERY_FILE_INFORMATION" => {
                let o = self.opened(a[0])?;
                number(a[1], "level")?;
                self.push(OpKind::Fstat(o.handle), None)
            }
            "SET_FILE_INFORMATION" => {
                let o = self.opened(a[0])?;
                number(a[1], "level")?;
                self.push(OpKind::Fstat(o.handle), None)?;
                let f = self.file(&o.path)?;
                let r = self.fs.kind(&o.path);
                self.push(OpKind::Utimes(f), r.err())
            }
            "QUERY_FS_INFORMATION" => {
                number(a[0], "level")?;
                let f = self.file("")?;
                self.push(OpKind::Statfs(f), None)
            }
            "QUERY_PATH_INFORMATION" => {
                let p = self.path(a[0], op)?;
                number(a[1], "level")?;
                let exists = self.fs.kind(&p).is_ok();
                if exists != want.is_none() {
                    self.tally.status_disagrees.push(n);
                }
                self.resolve(&p)
            }
            "FIND_FIRST" => {
                let p = self.path(a[0], op)?;
                number(a[1], "level")?;
                let max = number(a[2], "maximum count")?;
                number(a[3], "count")?;
                self.resolve(&p)?;
                if p.contains(['<', '>', '*', '?', '"']) {
                    let stop = usize::try_from(max).unwrap_or(usize::MAX);
                    self.read_dir(parent(&p), Some(stop), &mut |_| Ok(()))?;
                }
                Ok(())
            }
            "Unlink" => {
                let p = self.name(a[0], op)?;
                number(a[1], "attributes")?;
                self.resolve(&p)?;
                let r = self.fs.unlink(&p);
                self.checked(op, a[0], r, want)?;
                let f = self.file(&p)?;
                self.push(OpKind::Unlink(f), r.err())
            }
            "Rmdir" => {
                let p = match place(a[0], &mut self.client)? {
                    Place::Clients => {
                        self.tally.set_up.push(n);
                        return Ok(());
                    }
                    Place::In(p) if p.is_empty() => {
                        return Err("Rmdir of the client's own directory cannot be replayed".into())
                    }
                    Place::In(p) => p,
                };
                self.resolve(&p)?;
                let r = self.fs.rmdir(&p);
                self.checked(op, a[0], r, want)?;
                let f = self.file(&p)?;
                self.push(OpKind::Rmdir(f), r.err())
            }
            "Mkdir" => {
                let p = match place(a[0], &mut self.client)? {
                    Place::Clients => {
                        self.tally.set_up.push(n);
                        return Ok(());
                    }
                    Place::In(p) => p,
                };
                self.resolve(&p)?;
                if p.is_empty() {
                    self.tally.own_mkdir.push(n);
                    return Ok(());
                }
                let r = self.fs.mkdir(&p);
                let f = self.file(&p)?;
                if r.is_ok() {
                    self.settle(&p, EntryKind::Dir)?;
                }
                self.push(OpKind::Mkdir(f), r.err())
            }
            "Rename" => {
                let from = self.name(a[0], op)?;
                let to = self.name(a[1], op)?;
                self.resolve(&from)?;
                self.resolve(&to)?;
                let r = self.fs.rename(&from, &to);
                self.checked(op, a[0], r, want)?;
                let (f, t) = (self.file(&from)?, self.file(&to)?);
                self.push(
                    OpKind::Rename {
                        from: f,
                        to: t,
                        mode: RenameMode::Replace,
                    },
                    r.err(),
                )
            }
            "Deltree" => {
                let p = match place(a[0], &mut self.client)? {
                    Place::Clients => {
                        self.tally.set_up.push(n);
                        return Ok(());
                    }
                    Place::In(p) => p,
                };
                self.deltree(&p)
            }
            "LockX" | "UnlockX" => {
                let o = self.opened(a[0])?;
                let offset = number(a[1], "offset")?;
                let len = number(a[2], "length")?;
                let (offset, len) = extent(offset, len, MAX_FILE_BYTES)?;
                // A write lock needs a descriptor open for writing: a
                // directory's is not (fileio ignores the failure).
                let (kind, failed) = if op == "LockX" {
                    let kind = OpKind::Lock {
                        handle: o.handle,
                        offset,
                        len,
                        write: true,
                    };
                    (kind, o.dir.then_some(libc::EBADF))
                } else {
                    let kind = OpKind::Unlock {
                        handle: o.handle,
                        offset,
                        len,
                    };
                    (kind, None)
                };
                self.push(kind, failed)
            }
            "Sleep" => {
                let us = number(a[0], "sleep")?;
                self.clock = self
                    .clock
                    .checked_add(us)
                    .filter(|c| *c <= MAX_TIME_US)
                    .ok_or_else(|| {
                        format!("sleeping {us} µs goes past the latest time a trace may name ({MAX_TIME_US} µs)")
                    })?;
                Ok(())
            }
            other => Err(format!("unknown operation '{}'", shown(other, 40))),
        }
    }

    /// `nb_deltree`: read the directory; stat each entry; descend into
    /// directories and unlink everything else.
    fn deltree(&mut self, d: &str) -> Result<(), String> {
        self.read_dir(d, None, &mut |c: &mut Converter| {
            let names: Vec<String> = c.fs.names(d).cloned().collect();
            for name in names {
                let p = join(d, &name);
                if !c.stat(&p)? {
                    continue;
                }
                if c.fs.kind(&p) == Ok(Kind::Dir) {
                    c.deltree(&p)?;
                } else {
                    let r = c.fs.unlink(&p);
                    let f = c.file(&p)?;
                    c.push(OpKind::Unlink(f), r.err())?;
                }
            }
            Ok(())
        })?;
        Ok(())
    }

    /// `nb_createx`.
    fn create(&mut self, n: usize, a: &[&str], want: Option<i32>) -> Result<(), String> {
        let p = self.path(a[0], "NTCreateX")?;
        let options = number(a[1], "create options")?;
        let disposition = number(a[2], "create disposition")?;
        let fnum = fnum(a[3])?;
        if disposition > 5 {
            return Err(format!(
                "create disposition {disposition} is not 0 to 5 (FILE_SUPERSEDE to FILE_OVERWRITE_IF)"
            ));
        }
        let directory = options & 1 != 0;
        if p.is_empty() && !directory {
            return Err(
                "NTCreateX of the client's own directory as a file (create options without 0x1)"
                    .into(),
            );
        }
        self.resolve(&p)?;
        let f = self.file(&p)?;
        let create = matches!(disposition, 2 | 4 | 5);
        let truncate = matches!(disposition, 4 | 5);
        if directory {
            if p.is_empty() {
                // The replay makes the client's directory itself.
                self.tally.own_mkdir.push(n);
            } else {
                let r = self.fs.mkdir(&p);
                if r.is_ok() {
                    self.settle(&p, EntryKind::Dir)?;
                }
                self.push(OpKind::Mkdir(f), r.err())?;
            }
        }
        let mut h = self.handle();
        let r = if directory {
            let r = self.fs.dir(&p);
            self.push(
                OpKind::Open {
                    handle: h,
                    file: f,
                    flags: DIR_OPEN,
                },
                r.err(),
            )?;
            r
        } else {
            let existed = self.fs.kind(&p).is_ok();
            let r = self.fs.open_file(&p, create);
            if r.is_ok() && !existed {
                self.settle(&p, EntryKind::File)?;
            }
            let flags = OpenFlags {
                read: true,
                write: true,
                create,
                truncate,
                ..OpenFlags::default()
            };
            self.push(
                OpKind::Open {
                    handle: h,
                    file: f,
                    flags,
                },
                r.err(),
            )?;
            if r == Err(libc::EISDIR) {
                // fileio opens it again as a directory.
                h = self.handle();
                let r = self.fs.dir(&p);
                self.push(
                    OpKind::Open {
                        handle: h,
                        file: f,
                        flags: DIR_OPEN,
                    },
                    r.err(),
                )?;
                r
            } else {
                r
            }
        };
        match (r, want) {
            (Err(_), _) => {
                if want.is_none() {
                    self.tally.open_disagrees.push(n);
                }
                self.unopened.insert(fnum, n);
            }
            (Ok(()), Some(_)) => {
                // fileio closes what it should not have opened.
                self.tally.open_disagrees.push(n);
                self.push(OpKind::Close(h), None)?;
                self.unopened.insert(fnum, n);
            }
            (Ok(()), None) => {
                if fnum == 0 {
                    return Err(
                        "fnum 0 for an open that succeeds (dbench's fileio backend marks a free slot with 0)"
                            .into(),
                    );
                }
                if self.open.contains_key(&fnum) {
                    return Err(format!(
                        "fnum {fnum} is opened again while it is open (dbench's fileio backend would then hold it twice)"
                    ));
                }
                if self.open.len() >= MAX_OPEN {
                    return Err(format!(
                        "more than {MAX_OPEN} files open at once (dbench's fileio backend holds at most {MAX_OPEN} per client)"
                    ));
                }
                self.push(OpKind::Fstat(h), None)?;
                self.unopened.remove(&fnum);
                let dir = self.fs.kind(&p) == Ok(Kind::Dir);
                self.open.insert(
                    fnum,
                    Opened {
                        handle: h,
                        path: p,
                        dir,
                    },
                );
            }
        }
        Ok(())
    }
}

/// Converts a load file's text: one client's operations as dbench 4.0's
/// fileio backend makes them, from an empty directory.
pub fn convert(name: &str, text: &str) -> Result<Converted, DbenchError> {
    let err = |line: usize, message: String| DbenchError {
        file: name.to_string(),
        line,
        message,
    };
    let mut c = Converter {
        t: Trace {
            threads: vec![1],
            ..Trace::default()
        },
        fs: Fs::new(),
        ids: HashMap::new(),
        settled: HashSet::new(),
        open: HashMap::new(),
        unopened: HashMap::new(),
        next_handle: 0,
        clock: 0,
        step: None,
        client: None,
        tally: Tally::default(),
    };
    let mut lines = 0usize;
    for (i, raw) in text.split('\n').enumerate() {
        let n = i + 1;
        if raw.len() > MAX_LOG_LINE {
            return Err(err(
                n,
                format!(
                    "the line is {} bytes long; a load-file line may have at most {MAX_LOG_LINE}",
                    raw.len()
                ),
            ));
        }
        let line = raw.trim_end_matches('\r').trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let w = words(line).map_err(|m| err(n, m))?;
        // dbench 4 may start a line with a time in seconds.
        let (timed, w) = match w.first() {
            Some(t) if t.starts_with(|ch: char| ch.is_ascii_digit()) => {
                let secs: f64 = t
                    .parse()
                    .map_err(|_| err(n, format!("'{}' is not a time in seconds", shown(t, 40))))?;
                let us = secs * 1e6;
                if !us.is_finite() || us > MAX_TIME_US as f64 {
                    return Err(err(
                        n,
                        format!(
                            "time {secs} s is past the latest a trace may name ({MAX_TIME_US} µs)"
                        ),
                    ));
                }
                (Some(us.round() as u64), &w[1..])
            }
            _ => (None, &w[..]),
        };
        let Some((&op, rest)) = w.split_first() else {
            return Err(err(n, "a time without an operation".into()));
        };
        if step_name(op).is_none() {
            return Err(err(n, format!("unknown operation '{}'", shown(op, 40))));
        }
        let Some((&st, args)) = rest.split_last() else {
            return Err(err(n, format!("{op} without its fields and status")));
        };
        if !st.starts_with("NT_STATUS_") && !st.starts_with("0x") {
            return Err(err(
                n,
                format!(
                    "the last field of {op} must be its NT status (NT_STATUS_OK, 0x0, ...), not '{}'",
                    shown(st, 40)
                ),
            ));
        }
        let want = status(st).map_err(|m| err(n, m))?;
        let need = arity(op);
        if args.len() != need {
            return Err(err(
                n,
                format!(
                    "{op} takes {need} field(s) before its status, not {}",
                    args.len()
                ),
            ));
        }
        if let Some(us) = timed {
            c.clock = c.clock.max(us);
        }
        c.line(n, op, args, want).map_err(|m| err(n, m))?;
        lines += 1;
    }
    c.t.duration_us = c.clock;
    let mut notes = Vec::new();
    notes.extend(lines_note(
        "line(s) name \\clients, dbench's set-up above the client's directory: left out (the replay makes the directories)",
        &c.tally.set_up,
    ));
    notes.extend(lines_note(
        "mkdir(s) of the client's own directory left out (the replay makes it)",
        &c.tally.own_mkdir,
    ));
    notes.extend(lines_note(
        "NTCreateX line(s) whose open ends otherwise under dbench's fileio backend than the status says: kept as fileio does it",
        &c.tally.open_disagrees,
    ));
    notes.extend(lines_note(
        "QUERY_PATH_INFORMATION line(s) whose status disagrees with the model of the tree (dbench ignores it)",
        &c.tally.status_disagrees,
    ));
    if lines == 0 {
        return Err(err(1, "the load file holds no operation".into()));
    }
    Ok(Converted { trace: c.t, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(t: &Trace) -> Vec<String> {
        t.ops
            .iter()
            .map(|o| match o.failed {
                Some(e) => format!("{}={}", o.kind.name(), super::super::format::errno::name(e)),
                None => o.kind.name().to_string(),
            })
            .collect()
    }

    #[test]
    fn each_line_becomes_what_fileio_does() {
        let text = "Deltree \"\\clients\\client1\" NT_STATUS_OK\n\
                    Mkdir \"\\clients\" NT_STATUS_OK\n\
                    NTCreateX \"\\clients\\client1\\mixfile\" 0x40 0x1 9935 NT_STATUS_OBJECT_NAME_NOT_FOUND\n\
                    NTCreateX \"\\clients\\client1\\d\" 0x1 0x2 9937 NT_STATUS_OK\n\
                    Close 9937 NT_STATUS_OK\n\
                    0.5 NTCreateX \"\\clients\\client1\\d\\f\" 0x40 0x2 9938 NT_STATUS_OK\n\
                    WriteX 9938 0 65536 65536 NT_STATUS_OK\n\
                    LockX 9938 100 1 NT_STATUS_OK\n\
                    UnlockX 9938 100 1 NT_STATUS_OK\n\
                    Flush 9938 NT_STATUS_OK\n\
                    SET_FILE_INFORMATION 9938 1004 NT_STATUS_OK\n\
                    Close 9938 NT_STATUS_OK\n\
                    FIND_FIRST \"\\clients\\client1\\d\\*.*\" 260 1366 1 NT_STATUS_OK\n\
                    Unlink \"\\clients\\client1\\d\\f\" 0x6 NT_STATUS_OK\n";
        let c = convert("c.txt", text).unwrap();
        let t = &c.trace;
        assert_eq!(
            names(t),
            [
                // Deltree of the (empty) client directory.
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                // NTCreateX of a missing file: resolve_name reads the directory.
                "stat=ENOENT",
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                "open=ENOENT",
                // A directory: mkdir, then opened as one.
                "stat=ENOENT",
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                "mkdir",
                "open",
                "fstat",
                "close",
                "stat=ENOENT",
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                "open",
                "fstat",
                "pwrite",
                "lock",
                "unlock",
                "fsync",
                "fstat",
                "utimes",
                "close",
                // FIND_FIRST: resolve the pattern, then read its directory.
                "stat=ENOENT",
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                "stat",
                "unlink",
            ]
        );
        assert_eq!(t.files[0].path, ".");
        assert!(t.files.iter().skip(1).all(|f| f.size.is_none()));
        assert!(
            c.notes.iter().any(|n| n.contains("\\clients")),
            "{:?}",
            c.notes
        );
        assert_eq!(t.ops.last().unwrap().start_us, 500_000);
        let steps: Vec<&str> = t
            .steps
            .starts
            .iter()
            .map(|(_, s)| t.steps.name(*s))
            .collect();
        assert_eq!(
            steps,
            [
                "Deltree",
                "NTCreateX",
                "NTCreateX",
                "Close",
                "NTCreateX",
                "WriteX",
                "LockX",
                "UnlockX",
                "Flush",
                "Sfileinfo",
                "Close",
                "Find",
                "Unlink"
            ]
        );
        // What the importer writes reads back the same.
        assert_eq!(Trace::parse("c.trace", &t.to_text()).unwrap(), *t);
        assert!(t.to_text().starts_with("plumb-trace 3\n"));
    }

    #[test]
    fn deltree_unlinks_files_and_keeps_directories() {
        let text = "NTCreateX \"\\clients\\client1\\a\" 0x1 0x2 1 NT_STATUS_OK\n\
                    Close 1 NT_STATUS_OK\n\
                    NTCreateX \"\\clients\\client1\\a\\x\" 0x40 0x5 2 NT_STATUS_OK\n\
                    Close 2 NT_STATUS_OK\n\
                    Deltree \"\\clients\\client1\" NT_STATUS_OK\n\
                    QUERY_PATH_INFORMATION \"\\clients\\client1\\a\" 1004 NT_STATUS_OK\n\
                    QUERY_PATH_INFORMATION \"\\clients\\client1\\a\\x\" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND\n";
        let t = convert("d.txt", text).unwrap().trace;
        let n = names(&t);
        let from = t.steps.starts[4].0 as usize;
        let to = t.steps.starts[5].0 as usize;
        assert_eq!(
            &n[from..to],
            [
                "open", "fstat", "readdir", "stat", "open", "fstat", "readdir", "stat", "unlink",
                "readdir", "close", "readdir", "close"
            ]
        );
        assert_eq!(&n[to..to + 1], ["stat"]);
        assert_eq!(n[to + 1], "stat=ENOENT");
    }

    #[test]
    fn statuses_map_to_errnos() {
        assert_eq!(status("NT_STATUS_OK"), Ok(None));
        assert_eq!(status("0x00000000"), Ok(None));
        assert_eq!(
            status("NT_STATUS_OBJECT_NAME_COLLISION"),
            Ok(Some(libc::EEXIST))
        );
        assert_eq!(status("0xC0000034"), Ok(Some(libc::ENOENT)));
        assert!(status("NT_STATUS_WHATEVER")
            .unwrap_err()
            .contains("not one plumb maps"));
        assert!(status("0xZZ").is_err());
    }

    #[test]
    fn hostile_lines_are_refused_by_line() {
        let ok = "NTCreateX \"\\clients\\client1\\f\" 0x40 0x2 7 NT_STATUS_OK\n";
        let cases = [
            (
                "NTCreateX \"\\clients\\client1\\..\\..\\etc\" 0x40 0x2 7 NT_STATUS_OK\n",
                "climbs",
            ),
            (
                "NTCreateX \"\\clients\\client1\\\\etc\\passwd\" 0x40 0x2 7 NT_STATUS_OK\n",
                "absolute",
            ),
            (
                "NTCreateX \"etc\\passwd\" 0x40 0x2 7 NT_STATUS_OK\n",
                "does not start",
            ),
            (
                "NTCreateX \"\\clients\\client1\\a\u{1}b\" 0x40 0x2 7 NT_STATUS_OK\n",
                "control byte",
            ),
            ("NTCreateX \"\" 0x40 0x2 7 NT_STATUS_OK\n", "empty"),
            (
                "NTCreateX \"\\clients\\client2\\f\" 0x40 0x2 8 NT_STATUS_OK\n",
                "one client",
            ),
            (
                "ReadX 7 1125899906842620 4096 4096 NT_STATUS_OK\n",
                "largest file",
            ),
            (
                "ReadX 7 18446744073709551615 4096 4096 NT_STATUS_OK\n",
                "overflows",
            ),
            (
                "ReadX 7 0 1099511627776 1 NT_STATUS_OK\n",
                "one operation may move",
            ),
            ("ReadX 7 -1 4096 4096 NT_STATUS_OK\n", "not a number"),
            ("ReadX 7 0 4096 NT_STATUS_OK\n", "takes 4 field"),
            ("ReadX 8 0 4096 4096 NT_STATUS_OK\n", "not open"),
            ("Close 0 NT_STATUS_OK\n", "not open"),
            ("Close 99999999999 NT_STATUS_OK\n", "not from 0"),
            (
                "NTCreateX \"\\clients\\client1\\g\" 0x40 0x2 0 NT_STATUS_OK\n",
                "fnum 0",
            ),
            ("Close 7 NT_STATUS_BOGUS\n", "not one plumb maps"),
            ("Close 7 OK\n", "must be its NT status"),
            ("Close\n", "without its fields"),
            (
                "Frobnicate 7 NT_STATUS_OK\n",
                "unknown operation 'Frobnicate'",
            ),
            ("WriteX 7 0 10 5 NT_STATUS_OK\n", "stops here"),
            (
                "Unlink \"\\clients\\client1\\nope\" 0x6 NT_STATUS_OK\n",
                "stops here",
            ),
            (
                "NTCreateX \"\\clients\\client1\\g\" 0x40 0x9 9 NT_STATUS_OK\n",
                "disposition",
            ),
            (
                "NTCreateX \"\\clients\\client1\\g\" 0x40 0x2 7 NT_STATUS_OK\n",
                "again",
            ),
            ("Sleep 18446744073709551615 NT_STATUS_OK\n", "latest time"),
            ("99999999999 Close 7 NT_STATUS_OK\n", "latest"),
            (
                "Rename \"\\clients\\client1\\f\" \"\\clients\" NT_STATUS_OK\n",
                "above",
            ),
            (
                "Unlink \"\\clients\\client1\" 0x6 NT_STATUS_OK\n",
                "a name is needed",
            ),
            ("Close \"7 NT_STATUS_OK\n", "closing quote"),
        ];
        for (line, what) in cases {
            let e = convert("h.txt", &format!("{ok}{line}")).unwrap_err();
            assert_eq!(e.line, 2, "{line}: {e}");
            assert!(e.to_string().starts_with("h.txt:2: "), "{e}");
            assert!(e.message.contains(what), "{line}: {e}");
        }
        let long = format!("{ok}# {}\n", "x".repeat(1 << 20));
        assert!(convert("h", &long).unwrap_err().message.contains("at most"));
        assert!(convert("h", "# nothing\n\n")
            .unwrap_err()
            .message
            .contains("no operation"));
    }

    #[test]
    fn readdir_calls_follow_the_directory_size() {
        let few: Vec<String> = (0..10).map(|i| format!("f{i}")).collect();
        assert_eq!(getdents_calls(few.iter(), None), 2);
        assert_eq!(getdents_calls(few.iter(), Some(3)), 1);
        assert_eq!(getdents_calls(few.iter(), Some(0)), 0);
        let many: Vec<String> = (0..2000).map(|i| format!("file{i:08}")).collect();
        // 2002 entries of 32 bytes: two full buffers and a part, then the end.
        assert_eq!(getdents_calls(many.iter(), None), 3);
    }
}
