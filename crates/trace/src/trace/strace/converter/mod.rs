//! The conversion proper: follows descriptors as the kernel keeps them (per
//! fd table: threads share one, forks copy it, exec closes close-on-exec
//! descriptors), file positions and sizes, and turns each system call on a
//! path under the root into a trace operation — failed ones with their
//! errno.
//!
//! This file holds the state and the dispatch of a call by family:
//! `process.rs` (what a call does to the descriptor tables: forks, exec,
//! chdir, dups), `fd_calls.rs` (calls on a descriptor), `path_calls.rs`
//! (calls on paths), with `files.rs` (paths, file ids and what the calls
//! saw of them) and `handles.rs` (descriptors to trace handles).

mod fd_calls;
mod files;
mod handles;
mod path_calls;
mod process;

use super::descriptors::Tables;
use super::error::LogError;
use super::syntax::{decorated, normalise, parse_call, Call};
use crate::trace::format::{EntryKind, FileEntry, Op, OpKind, Trace, Tracer};
use crate::trace::limits::{MAX_FILE_BYTES, MAX_OPS, MAX_THREADS};
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
    error: Option<LogError>,
    /// Per thread: the operations of a call applied when it began (see
    /// [`Converter::apply_at_entry`]), waiting for its outcome.
    at_entry: HashMap<u64, std::ops::Range<usize>>,
}

/// One completed call being converted: its thread, when it started (µs
/// into the log), how long it took, the call, and its errno if it failed.
struct Event<'c> {
    tid: u64,
    start: u64,
    dur: u64,
    c: &'c Call,
    failed: Option<i32>,
}

impl Event<'_> {
    /// Argument `i` of the call.
    fn arg(&self, i: usize) -> Option<&String> {
        self.c.args.get(i)
    }

    /// The call's name.
    fn name(&self) -> &str {
        &self.c.name
    }
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

    /// Thread `tid` ended (strace's `+++ exited` or `+++ killed`): a later
    /// thread given the same id starts afresh.
    pub(super) fn exited(&mut self, tid: u64) {
        self.tables.exited(tid);
        self.cwd.remove(&tid);
    }

    /// The bound the last call broke, if any: the log cannot become a trace.
    pub(super) fn take_error(&mut self) -> Option<LogError> {
        self.error.take()
    }

    fn fail(&mut self, error: LogError) {
        self.error.get_or_insert(error);
    }

    /// `v` if it is within the largest file a trace may describe; else
    /// records the error and gives 0.
    fn bounded(&mut self, v: u64, what: &'static str) -> u64 {
        if v > MAX_FILE_BYTES {
            self.fail(LogError::PastLargest { what, value: v });
            return 0;
        }
        v
    }

    /// The end of `offset + len`, within bounds (else the error is recorded).
    fn end(&mut self, offset: u64, len: u64) -> u64 {
        match offset.checked_add(len) {
            Some(e) => self.bounded(e, "offset + length"),
            None => {
                self.fail(LogError::Overflow { offset, len });
                0
            }
        }
    }

    /// The trace: spanning the whole log (`span_us`, from its first line,
    /// the program's start), so the time the program spent before its
    /// first kept operation and after its last is think time too.
    pub(super) fn finish(self, tracer: Option<Tracer>, span_us: u64) -> Trace {
        let mut ops = self.ops;
        ops.sort_by_key(|(o, seq)| (o.start_us, *seq));
        let ops: Vec<Op> = ops.into_iter().map(|(o, _)| o).collect();
        let duration_us = ops
            .iter()
            .map(|o| o.start_us.saturating_add(o.dur_us))
            .max()
            .unwrap_or(0)
            .max(span_us);
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
            self.fail(LogError::TooManyThreads);
            return 0;
        }
        self.threads.push(tid);
        let i = self.threads.len() as u32 - 1;
        self.thread_ids.insert(tid, i);
        i
    }

    /// Adds an operation of the call being converted.
    fn push(&mut self, tid: u64, start: u64, dur: u64, kind: OpKind, failed: Option<i32>) {
        self.push_at(tid, start, self.seq, dur, kind, failed);
    }

    /// Adds the operation `kind` of event `ev`, with the outcome `failed`.
    fn emit(&mut self, ev: &Event, kind: OpKind, failed: Option<i32>) {
        self.push(ev.tid, ev.start, ev.dur, kind, failed);
    }

    /// Adds an operation at log position `seq` (among equal start times).
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
            self.fail(LogError::TooManyOps);
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
        if failed.is_none() {
            self.descriptors_changed(tid, start, dur, c);
        }
        let ev = Event {
            tid,
            start,
            dur,
            c,
            failed,
        };
        match c.name.as_str() {
            "open" | "openat" | "openat2" | "creat" => self.open(&ev),
            "read" | "pread64" | "readv" | "preadv" | "preadv2" | "write" | "pwrite64"
            | "writev" | "pwritev" | "pwritev2" => self.transfer(&ev),
            "lseek" => self.lseek(&ev),
            "fsync" | "fdatasync" | "fstat" | "getdents64" | "fchmod" => self.on_handle(&ev),
            "close" => self.close(&ev),
            "sync_file_range" => self.sync_file_range(&ev),
            "ftruncate" => self.ftruncate(&ev),
            "fallocate" => self.fallocate(&ev),
            "mmap" if ev.arg(4).is_some_and(|fd| !fd.starts_with('-')) => self.mmap(&ev),
            "copy_file_range" | "sendfile" if failed.is_none() => self.copy(&ev),
            "newfstatat" | "statx" | "stat" | "lstat" => self.stat(&ev),
            "access" | "faccessat" | "faccessat2" | "statfs" | "readlink" | "readlinkat"
            | "truncate" | "chmod" | "fchmodat" | "utimensat" => self.path_meta(&ev),
            "rename" | "renameat" | "renameat2" | "link" | "linkat" => self.rename_or_link(&ev),
            "symlink" | "symlinkat" => self.symlink(&ev),
            "unlink" | "unlinkat" | "mkdir" | "mkdirat" | "rmdir" => self.unlink_or_dir(&ev),
            _ => {}
        }
    }
}
