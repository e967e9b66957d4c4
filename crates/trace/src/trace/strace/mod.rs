//! Converts an `strace -f -ttt -T -y` log into a [`Trace`]: the file
//! operations of every thread, in order, with start times and durations,
//! keeping only paths under the recording's root. Data is never recorded,
//! only sizes and offsets (offsets of plain `read`/`write` are worked out
//! from the file position, as the kernel did).

mod converter;
mod descriptors;
mod error;
mod syntax;

use super::format::{Trace, Tracer};
use super::limits::{MAX_LOG_LINE, MAX_TIME_US};
use converter::Converter;
pub use error::{LogError, StraceError};
use std::collections::HashMap;
use syntax::{parse_call, split_pid};

/// The strace options a log must be captured with.
pub const STRACE_OPTIONS: &[&str] = &["-f", "-ttt", "-T", "-y", "-s", "0"];

/// The system calls plumb converts (`?`: not every architecture has it).
/// Besides the file calls: those that make, copy or close descriptors (so
/// descriptor numbers are followed as the kernel reuses them), processes
/// and exec (close-on-exec).
pub const SYSCALLS: &str = "?open,openat,?openat2,?creat,read,pread64,readv,preadv,?preadv2,write,pwrite64,writev,pwritev,?pwritev2,lseek,fsync,fdatasync,sync_file_range,ftruncate,fallocate,close,?close_range,?fstat,?newfstatat,?stat,?lstat,?statx,mmap,copy_file_range,sendfile,?rename,renameat,?renameat2,?unlink,unlinkat,?mkdir,mkdirat,?rmdir,?link,linkat,?symlink,symlinkat,?readlink,readlinkat,truncate,?chmod,fchmodat,fchmod,utimensat,?access,faccessat,?faccessat2,statfs,getdents64,dup,?dup2,dup3,fcntl,?pipe,pipe2,socket,socketpair,accept,accept4,eventfd2,?memfd_create,epoll_create1,inotify_init1,timerfd_create,signalfd4,?pidfd_open,execve,execveat,chdir,fchdir,clone,?clone3,?fork,?vfork";

/// Converts a log; paths outside `root` (an absolute, normalised directory)
/// are left out. `cwd` is the working directory the command started in;
/// `wall_us` how long the traced program ran, when known (else the log's
/// span is given as the time under the tracer).
pub fn convert(
    name: &str,
    log: &str,
    root: &str,
    cwd: &str,
    wall_us: Option<u64>,
) -> Result<Trace, StraceError> {
    let mut r = LogReader {
        c: Converter::new(root, cwd),
        t0: None,
        starts: HashMap::new(),
        pending: HashMap::new(),
        calls: 0,
        last_ts: 0.0,
    };
    for (i, raw) in log.lines().enumerate() {
        r.line(raw).map_err(|cause| StraceError {
            file: name.to_string(),
            line: i + 1,
            cause,
        })?;
    }
    // Both within [0, MAX_TIME_US] (checked per line): the cast cannot saturate.
    let span_us = ((r.last_ts - r.t0.unwrap_or(r.last_ts)) * 1e6)
        .round()
        .max(0.0) as u64;
    let tracer = Tracer {
        name: "strace".into(),
        wall_us: wall_us.unwrap_or(span_us).min(MAX_TIME_US),
        calls: r.calls,
    };
    Ok(r.c.finish(Some(tracer), span_us))
}

/// Reading the log line by line: the first timestamp, and per thread the
/// start of a call strace printed in two halves and its first half.
struct LogReader {
    c: Converter,
    t0: Option<f64>,
    starts: HashMap<u64, f64>,
    /// Per thread: the first half of an unfinished call, and whether it
    /// was applied when it began.
    pending: HashMap<u64, (String, bool)>,
    calls: u64,
    last_ts: f64,
}

impl LogReader {
    /// Reads one line of the log.
    fn line(&mut self, raw: &str) -> Result<(), LogError> {
        if raw.len() > MAX_LOG_LINE {
            return Err(LogError::LongLine(raw.len()));
        }
        let line = raw.trim_end();
        if line.is_empty() {
            return Ok(());
        }
        let (tid, rest) = split_pid(line);
        let (ts, rest) = rest
            .split_once(' ')
            .and_then(|(t, r)| t.parse::<f64>().ok().map(|t| (t, r)))
            .ok_or(LogError::NoTimestamp)?;
        if !(ts.is_finite() && ts >= 0.0) {
            return Err(LogError::BadTimestamp(ts));
        }
        let t0 = *self.t0.get_or_insert(ts);
        self.last_ts = self.last_ts.max(ts);
        if ts - t0 > MAX_TIME_US as f64 / 1e6 {
            return Err(LogError::LateTimestamp { ts });
        }
        if rest.starts_with("+++ exited") || rest.starts_with("+++ killed") {
            self.c.exited(tid);
            return Ok(());
        }
        if rest.starts_with("+++") || rest.starts_with("---") {
            return Ok(());
        }
        let rel_us = |t: f64| ((t - t0) * 1e6).round().max(0.0) as u64;
        let mut applied_at_entry = false;
        let call = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            let early = releases_descriptors(head);
            if early {
                // Within [0, MAX_TIME_US] (checked above): the cast cannot saturate.
                self.c.apply_at_entry(tid, rel_us(ts), head);
                if let Some(e) = self.c.take_error() {
                    return Err(e);
                }
            }
            self.pending.insert(tid, (head.to_string(), early));
            self.starts.insert(tid, ts);
            return Ok(());
        } else if let Some(tail) = rest.strip_prefix("<... ") {
            let Some((_, after)) = tail.split_once(" resumed>") else {
                return Err(LogError::BadResumed);
            };
            match self.pending.remove(&tid) {
                Some((head, early)) => {
                    applied_at_entry = early;
                    format!("{head}{after}")
                }
                // The start was before the log began.
                None => return Ok(()),
            }
        } else {
            self.starts.insert(tid, ts);
            rest.to_string()
        };
        let start = self.starts.remove(&tid).unwrap_or(ts);
        self.calls += 1;
        self.call(tid, rel_us(start), &call, applied_at_entry)
    }

    /// Converts one whole call of thread `tid`, which started `start` µs
    /// into the log.
    fn call(
        &mut self,
        tid: u64,
        start: u64,
        call: &str,
        applied_at_entry: bool,
    ) -> Result<(), LogError> {
        let Some(sys) = parse_call(call) else {
            return Err(LogError::BadCall(short(call)));
        };
        let dur = sys.dur.unwrap_or(0.0);
        if !(dur.is_finite() && (0.0..=MAX_TIME_US as f64 / 1e6).contains(&dur)) {
            return Err(LogError::BadDuration(dur));
        }
        // Both within [0, MAX_TIME_US]: the casts cannot saturate.
        let dur_us = (dur * 1e6).round() as u64;
        if applied_at_entry {
            self.c.finish_at_entry(tid, dur_us, &sys);
        } else {
            self.c.apply(tid, start, dur_us, &sys);
        }
        match self.c.take_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Whether the call whose first half is `head` releases descriptors when it
/// begins (so it is applied then, not when strace prints its end).
fn releases_descriptors(head: &str) -> bool {
    head.starts_with("close(") || head.starts_with("close_range(")
}

fn short(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::OpKind;

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
        let t = convert("log", LOG, "/tmp/stt", "/tmp/stt", None).unwrap();
        let names: Vec<&str> = t.ops.iter().map(|o| o.kind.name()).collect();
        assert_eq!(
            names,
            [
                "open", "pwrite", "write", "lseek", "read", "fsync", "close", "open", "write",
                "close", "mkdir", "rename", "stat", "open", "unlink"
            ]
        );
        // The open that failed is kept, with its errno.
        assert_eq!(t.ops[13].failed, Some(libc::ENOENT));
        assert!(t
            .ops
            .iter()
            .enumerate()
            .all(|(i, o)| (i == 13) == o.failed.is_some()));
        let tracer = t.tracer.as_ref().unwrap();
        assert_eq!((tracer.name.as_str(), tracer.calls), ("strace", 17));
        assert_eq!(t.threads, vec![3746, 3789]);
        let paths: Vec<&str> = t.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.dat", "b.dat", "d", "d/c.dat", "missing"]);
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
            "the trace starts at the log's first line"
        );
        assert_eq!(t.ops[8].start_us, 1347);
        assert_eq!(t.ops[8].dur_us, 12);
        assert_eq!(t.ops[8].thread, 1);
        // The whole log, from its first line (the program's start) to its
        // last: the time around the operations is the program's too.
        assert_eq!(t.duration_us, 9706);
    }

    /// A close that another thread's open overtakes: the kernel freed the
    /// number when the close began, so the open's descriptor is its own and
    /// the close closes the file it named.
    #[test]
    fn a_close_overtaken_by_another_threads_open_closes_its_own_file() {
        let log = r#"3746  1796043420.982403 openat(AT_FDCWD</tmp/stt>, "a.dat", O_RDWR|O_CREAT, 0644) = 5</tmp/stt/a.dat> <0.000010>
3746  1796043420.983312 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD, child_tid=0x7f80c4b14990, exit_signal=0} => {parent_tid=[3789]}, 88) = 3789 <0.000061>
3746  1796043420.983500 close(5</tmp/stt/a.dat> <unfinished ...>
3789  1796043420.983510 openat(AT_FDCWD</tmp/stt>, "b.dat", O_WRONLY|O_CREAT, 0644) = 5</tmp/stt/b.dat> <0.000010>
3746  1796043420.983530 <... close resumed>) = 0 <0.000030>
3789  1796043420.983600 write(5</tmp/stt/b.dat>, ""..., 10) = 10 <0.000006>
3789  1796043420.983700 close(5</tmp/stt/b.dat>) = 0 <0.000005>
"#;
        let t = convert("log", log, "/tmp/stt", "/tmp/stt", None).unwrap();
        let kinds: Vec<(u32, &OpKind)> = t.ops.iter().map(|o| (o.thread, &o.kind)).collect();
        assert!(
            matches!(
                kinds[..],
                [
                    (
                        0,
                        OpKind::Open {
                            handle: 0,
                            file: 0,
                            ..
                        }
                    ),
                    (0, OpKind::Close { handle: 0 }),
                    (
                        1,
                        OpKind::Open {
                            handle: 1,
                            file: 1,
                            ..
                        }
                    ),
                    (1, OpKind::Write { handle: 1, .. }),
                    (1, OpKind::Close { handle: 1 }),
                ]
            ),
            "{kinds:?}"
        );
        assert_eq!(t.ops[1].dur_us, 30, "the close keeps its duration");
        assert!(t.ops.iter().all(|o| o.failed.is_none()));
        assert_eq!(t.tracer.as_ref().unwrap().calls, 6);
    }

    /// The names of `t`'s operations with their threads, implicit opens
    /// marked.
    #[test]
    fn maps_keep_their_range_and_whether_stores_reach_the_file() {
        let log = r#"10  1796043420.000100 openat(AT_FDCWD</r>, "d.bin", O_RDWR) = 3</r/d.bin> <0.000010>
10  1796043420.000200 mmap(NULL, 262144, PROT_READ|PROT_WRITE, MAP_SHARED, 3</r/d.bin>, 0) = 0x7f0000000000 <0.000008>
10  1796043420.000300 mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, 3</r/d.bin>, 0x10000) = 0x7f0000100000 <0.000006>
10  1796043420.000400 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE, 3</r/d.bin>, 0x2000) = 0x7f0000200000 <0.000006>
10  1796043420.000500 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED_VALIDATE, 3</r/d.bin>, 0x100) = -1 EINVAL (Invalid argument) <0.000003>
10  1796043420.000600 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f0000300000 <0.000003>
10  1796043420.000700 openat(AT_FDCWD</r>, "/usr/lib/libc.so.6", O_RDONLY|O_CLOEXEC) = 4</usr/lib/libc.so.6> <0.000010>
10  1796043420.000800 mmap(NULL, 2000000, PROT_READ, MAP_PRIVATE|MAP_DENYWRITE, 4</usr/lib/libc.so.6>, 0) = 0x7f0000400000 <0.000006>
10  1796043420.000900 close(3</r/d.bin>) = 0 <0.000003>
"#;
        let t = convert("log", log, "/r", "/r", None).unwrap();
        let maps: Vec<(u64, u64, bool, Option<i32>)> = t
            .ops
            .iter()
            .filter_map(|o| match o.kind {
                OpKind::Map {
                    offset, len, write, ..
                } => Some((offset, len, write, o.failed)),
                _ => None,
            })
            .collect();
        // Anonymous maps and files outside the root are left out; a private
        // writable map's stores never reach the file; a failed map is kept
        // with its errno.
        assert_eq!(
            maps,
            [
                (0, 262144, true, None),
                (65536, 65536, false, None),
                (8192, 4096, false, None),
                (256, 4096, true, Some(libc::EINVAL)),
            ]
        );
        assert!(t.to_text().starts_with("plumb-trace 5\n"));
        // A map past the largest file a trace may describe fails the
        // conversion, naming it.
        let far = log.replace(", 0x10000)", ", 0x4000000001000)");
        let e = convert("log", &far, "/r", "/r", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("mmap offset"), "{e}");
        // A failed probe past that size is left out, and so is a failure a
        // replay could not meet again (a noexec mount's EPERM).
        for (from, to) in [
            (
                "mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED_VALIDATE, 3</r/d.bin>, 0x100) = -1 EINVAL",
                "mmap(NULL, 18446744073709547520, PROT_READ, MAP_PRIVATE, 3</r/d.bin>, 0) = -1 ENOMEM",
            ),
            (
                " = -1 EINVAL (Invalid argument)",
                " = -1 EPERM (Operation not permitted)",
            ),
        ] {
            let t = convert("log", &log.replace(from, to), "/r", "/r", None).unwrap();
            let maps = t
                .ops
                .iter()
                .filter(|o| matches!(o.kind, OpKind::Map { .. }));
            assert_eq!(maps.count(), 3, "{to}");
        }
    }

    fn listed(t: &crate::trace::format::Trace) -> Vec<(u32, &'static str)> {
        t.ops
            .iter()
            .map(|o| {
                let name = match &o.kind {
                    OpKind::Open { flags, .. } if flags.implicit => "implicit open",
                    k => k.name(),
                };
                (o.thread, name)
            })
            .collect()
    }

    /// Under load strace can print a new thread's first calls before the
    /// clone's result: what the thread opened meanwhile stays its own (it
    /// was not re-opened implicitly at its next use), and the parent's
    /// descriptors are the thread's too.
    #[test]
    fn a_threads_calls_printed_before_its_clone_returns_keep_their_descriptors() {
        let log = r#"3746  1796043420.982403 openat(AT_FDCWD</tmp/stt>, "a.dat", O_RDWR|O_CREAT, 0644) = 3</tmp/stt/a.dat> <0.000010>
3746  1796043420.983312 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD, child_tid=0x7f80c4b14990, exit_signal=0} <unfinished ...>
3789  1796043420.983400 openat(AT_FDCWD</tmp/stt>, "b.dat", O_WRONLY|O_CREAT, 0644) = 4</tmp/stt/b.dat> <0.000010>
3746  1796043420.983450 <... clone3 resumed> => {parent_tid=[3789]}, 88) = 3789 <0.000061>
3789  1796043420.983600 write(4</tmp/stt/b.dat>, ""..., 10) = 10 <0.000006>
3789  1796043420.983650 write(3</tmp/stt/a.dat>, ""..., 10) = 10 <0.000006>
3746  1796043420.983700 write(4</tmp/stt/b.dat>, ""..., 5) = 5 <0.000006>
3789  1796043420.983800 close(4</tmp/stt/b.dat>) = 0 <0.000005>
"#;
        let t = convert("log", log, "/tmp/stt", "/tmp/stt", None).unwrap();
        assert_eq!(
            listed(&t),
            [
                (0, "open"),
                (1, "open"),
                (1, "write"),
                (1, "write"),
                (0, "write"),
                (1, "close"),
            ]
        );
        // Both threads wrote through the thread's one handle on b.dat.
        let handle = |i: usize| match &t.ops[i].kind {
            OpKind::Write { handle, .. } => *handle,
            k => panic!("{k:?}"),
        };
        assert_eq!(handle(2), handle(4));
    }

    /// The same for a forked child: its early opens are kept, and the
    /// parent's descriptors come to it as inherited copies.
    #[test]
    fn a_childs_calls_printed_before_its_fork_returns_keep_their_descriptors() {
        let log = r#"3746  1796043420.982403 openat(AT_FDCWD</tmp/stt>, "a.dat", O_RDWR|O_CREAT, 0644) = 3</tmp/stt/a.dat> <0.000010>
3746  1796043420.983312 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD <unfinished ...>
3790  1796043420.983400 openat(AT_FDCWD</tmp/stt/sub>, "c.dat", O_WRONLY|O_CREAT, 0644) = 5</tmp/stt/sub/c.dat> <0.000010>
3746  1796043420.983450 <... clone resumed>, child_tidptr=0x7f80c4b14a10) = 3790 <0.000061>
3790  1796043420.983600 write(5</tmp/stt/sub/c.dat>, ""..., 10) = 10 <0.000006>
3790  1796043420.983650 write(3</tmp/stt/a.dat>, ""..., 10) = 10 <0.000006>
3790  1796043420.983700 openat(AT_FDCWD, "d.dat", O_WRONLY|O_CREAT, 0644) = 6</tmp/stt/sub/d.dat> <0.000010>
3790  1796043420.983800 close(5</tmp/stt/sub/c.dat>) = 0 <0.000005>
"#;
        let t = convert("log", log, "/tmp/stt", "/tmp/stt", None).unwrap();
        // The inherit is placed at the fork, before the child's first call;
        // no implicit open.
        assert_eq!(
            listed(&t),
            [
                (0, "open"),
                (1, "inherit"),
                (1, "open"),
                (1, "write"),
                (1, "write"),
                (1, "open"),
                (1, "close"),
            ]
        );
        // The child's working directory is its own, not the parent's.
        let paths: Vec<&str> = t.files.iter().map(|f| f.path.as_str()).collect();
        assert!(paths.contains(&"sub/d.dat"), "{paths:?}");
    }

    /// A thread id the kernel gives again after its thread ended names a
    /// new process: nothing of the old one's descriptors carries over.
    #[test]
    fn a_thread_id_given_again_after_an_exit_starts_afresh() {
        let log = r#"3746  1796043420.982403 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f80c4b14a10) = 3790 <0.000061>
3790  1796043420.982500 openat(AT_FDCWD</tmp/stt>, "old.dat", O_WRONLY|O_CREAT, 0644) = 7</tmp/stt/old.dat> <0.000010>
3790  1796043420.982600 +++ exited with 0 +++
3746  1796043420.983312 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f80c4b14a10) = 3790 <0.000061>
3790  1796043420.983650 write(7</tmp/stt/new.dat>, ""..., 10) = 10 <0.000006>
"#;
        let t = convert("log", log, "/tmp/stt", "/tmp/stt", None).unwrap();
        let OpKind::Write { handle, .. } = t.ops.last().unwrap().kind else {
            panic!("{:?}", t.ops);
        };
        let opened = t.ops.iter().find_map(|o| match &o.kind {
            OpKind::Open {
                handle: h, file, ..
            } if *h == handle => Some(*file),
            _ => None,
        });
        assert_eq!(
            opened.map(|f| t.files[f as usize].path.as_str()),
            Some("new.dat"),
            "{:?}",
            t.ops
        );
    }
}
