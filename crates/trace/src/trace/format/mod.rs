//! plumb's trace format, version 5: a text file, one line per record.
//!
//! ```text
//! plumb-trace 5
//! duration_us 1523400
//! tracer strace 1700000 9120            how the recording was made (below)
//! untraced 610000                       the program's time without it
//! file 0 f 1048576 data/app.db         id, kind, size at first touch ("-"
//! file 1 f - data/app.db-journal       when it did not exist yet), path
//! file 2 d 0 data                      (a directory that existed)
//! file 3 l 0 data/cur current.db       a symlink and its target
//! thread 0 4711                        index, original thread id
//! op 0 120 35 open 0 0 rw,creat        thread, start µs, duration µs, op, args
//! op 0 160 12 pwrite 0 4096 4096       handle, offset, length
//! op 0 175 3 stat 1 =ENOENT            a call that failed, with its errno
//! op 0 180 2 lock 0 0 4096 w @LockX    a step begins here (below)
//! op 0 190 9 map 0 0 1048576 r         handle, offset, length, r|w
//! ```
//!
//! Kinds: `f` file, `d` directory, `l` symlink. `tracer NAME WALL_US CALLS`
//! says the program ran WALL_US µs under the tracer, which saw CALLS system
//! calls: think time in the trace includes the tracer's slowdown.
//! `untraced WALL_US` (version 4) says the same command ran WALL_US µs
//! without the tracer (`plumb trace record` runs it again to know): a
//! replay scales the think time by untraced / traced wall time, so that at
//! `--speed 1` it takes about the application's own time.
//!
//! Operations and their arguments (`h` = handle opened by an `open`, a
//! `dup` or an `inherit`, `f` = file id):
//! `open h f FLAGS` (FLAGS: r, w or rw, then any of creat, trunc, append,
//! excl, direct, sync, dsync, dir, implicit — `implicit` marks a descriptor
//! the program had before the trace began and is not counted as an
//! operation), `read|pread|readv|preadv h off len`,
//! `write|pwrite|writev|pwritev h off len`, `lseek h off`, `fsync h`,
//! `fdatasync h`, `sync_file_range h off len`, `ftruncate h len`,
//! `fallocate h off len`, `close h`, `fstat h`, `mmap h len` (versions 1
//! to 4: noted, not replayed), `copy h_in h_out len`, `readdir h len` (getdents64 with a
//! buffer of len bytes), `dup h_from h_to` (dup, dup2, dup3, fcntl
//! F_DUPFD), `inherit h_from h_to` (a child process's copy of a parent's
//! descriptor, made by the kernel at fork: not counted), `fchmod h MODE`,
//! `stat f`, `access f`, `statfs f`, `readlink f`, `utimes f`,
//! `chmod f MODE` (octal), `truncate f len`, `unlink f`, `mkdir f`,
//! `rmdir f`, `rename f_from f_to [noreplace|exchange]`, `link f_from f_to`,
//! `symlink f TARGET`; version 3 adds `lock h off len r|w` (a POSIX
//! byte-range lock, `len` 0 to the end of the file) and `unlock h off len`;
//! version 5 adds `map h off len r|w`, an `mmap(2)` of a file range (`w`: a
//! shared writable map, whose stores reach the file; `r`: read-only or
//! private), which a replay maps the same way and touches page by page.
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
//! written as version 2 unless it needs version 3 (locks or steps), 4
//! (the untraced time) or 5 (maps), so older plumbs read what they can;
//! version-1 traces (`file ID SIZE PATH`, no failed calls) and versions 2
//! to 4 still load.
//!
//! # In the code
//!
//! The operations are defined once, in the table of `ops.rs`: each one's
//! names, version, fields and the kind of argument each field is
//! (`args.rs`: how it is read, checked and written back), and what it
//! means for reports and the byte budget. The macro of `table.rs` makes
//! [`OpKind`] from it, with its reading (`parse.rs` reads the other
//! records), its writing (`write.rs`), its name, and its counting.
//! Records are read one line at a time (`parse.rs`'s [`Reader`] keeps what
//! a line needs of those above: the file and thread tables, the open
//! handles) and hands each operation back as it comes: [`Trace::parse`]
//! holds them all, a replay's [`stream`] holds none. Errors are typed ([`ParseError`]), each naming its line
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
pub mod stream;
mod think;
mod write;

pub use entries::{EntryKind, FileEntry, OpenFlags, RenameMode};
pub use error::{ParseError, StepError, TraceError};
pub use ops::{NewName, OpKind, Reach, NAMES};
pub use parse::{Parsed, Reader};
pub use steps::{Steps, MAX_STEPS};
pub use think::ThinkTally;

/// The first line of a version-2 trace: what this plumb writes unless
/// the trace needs version 3.
pub const MAGIC: &str = "plumb-trace 2";
/// The first line of a trace with locks or steps.
pub const MAGIC_V3: &str = "plumb-trace 3";
/// The first line of a trace with the untraced time.
pub const MAGIC_V4: &str = "plumb-trace 4";
/// The first line of a trace with maps (`map`).
pub const MAGIC_V5: &str = "plumb-trace 5";
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
    /// Wall time of the same command run without the tracer, µs (version
    /// 4), when it was measured.
    pub untraced_us: Option<u64>,
    /// Named steps (version 3; empty when the trace has none).
    pub steps: Steps,
}

impl Trace {
    /// The oldest version that holds the trace: 5 with maps, 4 with the
    /// untraced time, 3 with locks or steps, else 2.
    pub fn version(&self) -> u32 {
        let ops = self.ops.iter().map(|o| o.kind.since()).max().unwrap_or(0);
        let steps = if self.steps.starts.is_empty() { 0 } else { 3 };
        let untraced = if self.untraced_us.is_some() { 4 } else { 0 };
        ops.max(steps).max(untraced).max(2)
    }

    /// How much of the recorded think time a replay at speed 1 keeps, so
    /// that it takes the untraced wall time: 1 when that is unknown.
    ///
    /// The replay takes the think time (the trace's length less the time
    /// some call was in progress, on any thread) scaled, plus its calls'
    /// own time. Under the tracer every call's recorded time holds the
    /// tracer's cost too, about what the quickest calls took (the 10th
    /// percentile of all): less that, the calls' time is what the untraced
    /// run spent in them, and the rest of the untraced time is think time.
    /// Between 0 and 1 (the tracer only slows a program down).
    pub fn think_scale(&self) -> f64 {
        let mut tally = ThinkTally::default();
        for o in &self.ops {
            tally.op(o);
        }
        tally.scale(self)
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
                    kind: OpKind::Fsync { handle: 0 },
                },
                Op {
                    thread: 1,
                    start_us: 300,
                    dur_us: 4,
                    failed: Some(libc::ENOENT),
                    kind: OpKind::Stat { file: 1 },
                },
                Op {
                    thread: 0,
                    start_us: 400,
                    dur_us: 2,
                    failed: None,
                    kind: OpKind::Close { handle: 0 },
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
            untraced_us: None,
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
            e.cause
                .to_string()
                .contains("handle 7 is used before it is opened"),
            "{e}"
        );
        let bad = text.replace("op 0 20 300 fsync 0", "op 0 20 300 fsync");
        let e = Trace::parse("app.trace", &bad).unwrap_err();
        assert!(e.to_string().starts_with("app.trace:12: "), "{e}");
        assert!(Trace::parse("x", "hello\n")
            .unwrap_err()
            .cause
            .to_string()
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
            assert!(e.cause.to_string().contains(what), "{op}: {e}");
        }
        let long = format!("{head}# {}\nend 1\n", "x".repeat(1 << 20));
        assert!(Trace::parse("h", &long)
            .unwrap_err()
            .cause
            .to_string()
            .contains("at most"));
        let mut threads = String::from("plumb-trace 1\n");
        for i in 0..=crate::trace::limits::MAX_THREADS {
            threads.push_str(&format!("thread {i} {i}\n"));
        }
        let e = Trace::parse("h", &threads).unwrap_err();
        assert!(e.cause.to_string().contains("threads"), "{e}");
    }

    #[test]
    fn version_1_traces_load_and_may_not_use_version_2_records() {
        let v1 = "plumb-trace 1\nduration_us 10\nfile 0 4096 a\nthread 0 1\nop 0 0 1 open 0 0 r\nop 0 1 1 pread 0 0 4096\nend 2\n";
        let t = Trace::parse("v1", v1).unwrap();
        assert_eq!(t.files[0], FileEntry::file("a", Some(4096)));
        assert_eq!(Trace::parse("v2", &t.to_text()).unwrap(), t);
        let e = Trace::parse("v1", &v1.replace("pread 0 0 4096", "readdir 0 4096")).unwrap_err();
        assert!(e.cause.to_string().contains("version 2"), "{e}");
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
        assert!(e.cause.to_string().contains("version 3"), "{e}");
        let no_steps = "plumb-trace 2\nfile 0 f - a\nthread 0 1\nop 0 0 0 open 0 0 rw,creat\nop 0 1 0 lock 0 0 1 w\nend 2\n";
        let e = Trace::parse("v2", no_steps).unwrap_err();
        assert!(
            e.cause
                .to_string()
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
            assert!(e.cause.to_string().contains(what), "{bad}: {e}");
        }
    }

    #[test]
    fn version_5_holds_maps_with_their_range_and_kind() {
        let mut t = sample();
        let map = |offset, len, write, failed| Op {
            thread: 0,
            start_us: 30,
            dur_us: 4,
            failed,
            kind: OpKind::Map {
                handle: 0,
                offset,
                len,
                write,
            },
        };
        // After thread 0's fsync, before the stat (in start order).
        t.ops.insert(4, map(4096, 8192, true, None));
        t.ops.insert(5, map(100, 4096, false, Some(22)));
        let text = t.to_text();
        assert!(text.starts_with("plumb-trace 5\n"), "{text}");
        assert!(text.contains(" map 0 4096 8192 w\n"), "{text}");
        assert!(text.contains(" map 0 100 4096 r =EINVAL\n"), "{text}");
        assert_eq!(Trace::parse("v5", &text).unwrap(), t);
        // With the untraced time too, still version 5.
        t.untraced_us = Some(400);
        assert!(t.to_text().starts_with("plumb-trace 5\n"));
        // Older versions may not hold a map; a bad kind, a range past the
        // largest file, a cut record are refused.
        for (from, to, want) in [
            ("plumb-trace 5", "plumb-trace 4", "version 5"),
            (" 8192 w\n", " 8192 x\n", "map kind 'x' is not r or w"),
            (" 8192 w\n", " 8192\n", "map without its kind"),
            (" map 0 4096 8192 w", " map 0 1125899906842624 1 w", "past"),
            (
                " map 0 4096 8192 w",
                " map 0 18446744073709551615 2 w",
                "overflow",
            ),
        ] {
            let bad = text.replacen(from, to, 1);
            let e = Trace::parse("bad", &bad).unwrap_err().to_string();
            assert!(e.contains(want), "{to}: {e}");
        }
    }

    #[test]
    fn version_4_holds_the_untraced_time_which_scales_think_time() {
        let mut t = sample();
        assert_eq!(t.think_scale(), 1.0, "no untraced time");
        t.untraced_us = Some(400);
        let text = t.to_text();
        assert!(text.starts_with("plumb-trace 4\n"), "{text}");
        assert!(
            text.contains("\ntracer strace 900 40\nuntraced 400\n"),
            "{text}"
        );
        let back = Trace::parse("v4", &text).unwrap();
        assert_eq!(back, t);
        // Some call was in progress for 321 µs (the write overlaps the
        // pread, the stat the fsync), 309 of them the calls' own (less 2 µs
        // each, what the quickest took): of the 400 µs untraced, 91 are
        // think time, against 500 - 321 recorded.
        assert!((back.think_scale() - 91.0 / 179.0).abs() < 1e-12);
        // Less untraced time than the calls' own: no think time at all.
        let mut quick = back.clone();
        quick.untraced_us = Some(300);
        assert_eq!(quick.think_scale(), 0.0);
        // Never more think time than recorded; none without a tracer record.
        t.untraced_us = Some(5000);
        assert_eq!(t.think_scale(), 1.0);
        t.tracer = None;
        assert_eq!(t.think_scale(), 1.0);
        // Older versions may not hold it; a cut record is refused.
        let v3 = text.replacen("plumb-trace 4", "plumb-trace 3", 1);
        let e = Trace::parse("v3", &v3).unwrap_err();
        assert!(e.cause.to_string().contains("version 4"), "{e}");
        let cut = text.replace("untraced 400", "untraced");
        let e = Trace::parse("cut", &cut).unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(e.cause.to_string().contains("'untraced WALL_US'"), "{e}");
        let far = text.replace("untraced 400", "untraced 18446744073709551615");
        let e = Trace::parse("far", &far).unwrap_err();
        assert!(
            e.cause.to_string().contains("latest a trace may name"),
            "{e}"
        );
    }

    #[test]
    fn a_failed_open_leaves_its_handle_unopened() {
        let text = "plumb-trace 2\nfile 0 f - a\nthread 0 1\nop 0 0 1 open 0 0 r =ENOENT\nop 0 1 1 fstat 0\nend 2\n";
        let e = Trace::parse("f", text).unwrap_err();
        assert!(
            e.cause
                .to_string()
                .contains("handle 0 is used before it is opened"),
            "{e}"
        );
    }

    #[test]
    fn every_operation_of_the_table_reads_and_writes_back_the_same() {
        let ops = [
            "open 0 0 rw,creat",
            "read 0 0 10",
            "pread 0 0 10",
            "readv 0 0 10",
            "preadv 0 0 10",
            "write 0 0 10",
            "pwrite 0 0 10",
            "writev 0 0 10",
            "pwritev 0 0 10",
            "lseek 0 5",
            "fsync 0",
            "fdatasync 0",
            "sync_file_range 0 0 10",
            "ftruncate 0 100",
            "fallocate 0 0 100",
            "fstat 0",
            "mmap 0 4096",
            "open 1 2 w,creat,append",
            "copy 0 1 10",
            "stat 0",
            "unlink 2",
            "mkdir 2 =EEXIST",
            "rmdir 1 =ENOTEMPTY",
            "rename 0 2 noreplace",
            "rename 2 0",
            "open 2 1 r,dir",
            "readdir 2 32768",
            "dup 0 3",
            "inherit 0 4",
            "fchmod 0 644",
            "access 0",
            "statfs 1",
            "readlink 0",
            "utimes 0",
            "chmod 0 600",
            "truncate 0 10",
            "link 0 2",
            "symlink 2 a%20b",
            "lock 0 0 1 w",
            "unlock 0 0 1",
            "map 0 0 4096 r",
            "map 0 4096 8192 w",
            "close 4",
        ];
        let mut text =
            "plumb-trace 5\nduration_us 10\nfile 0 f 4096 a\nfile 1 d 0 d\nfile 2 f - b\nthread 0 1\n"
                .to_string();
        for op in ops {
            text.push_str(&format!("op 0 0 0 {op}\n"));
        }
        text.push_str(&format!("end {}\n", ops.len()));
        let t = Trace::parse("all", &text).unwrap();
        assert_eq!(t.to_text(), text);
        for name in NAMES {
            assert!(
                t.ops.iter().any(|o| o.kind.name() == *name),
                "{name} is not exercised"
            );
        }
        let uncounted: Vec<&str> = t
            .ops
            .iter()
            .filter(|o| !o.kind.counted())
            .map(|o| o.kind.name())
            .collect();
        assert_eq!(uncounted, ["inherit"]);
        let moved: u64 = t.ops.iter().map(|o| o.kind.bytes()).sum();
        assert_eq!(moved, 8 * 10 + 10, "reads, writes and the copy");
        assert_eq!(
            t.ops[18].kind.reach(),
            Some(Reach::HandleBy { handle: 1, len: 10 })
        );
    }
}
