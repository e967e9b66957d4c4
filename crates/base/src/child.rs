//! Children plumb starts on input it did not write — `ansible-inventory`
//! on an inventory, `git` on a repository named by a URL — run with both a
//! time limit and a memory limit ([`Limits`]), so that no inventory or
//! repository makes one run for ever or take the machine's memory (an
//! inventory range such as `h[0:99999999]` made `ansible-inventory` grow by
//! about 160 MB a second until the machine ran out).
//!
//! The memory limit is `RLIMIT_DATA`, set in the child before it starts:
//! since Linux 4.7 it counts every private writable mapping (the heap,
//! anonymous `mmap`, thread stacks), which is what a program's data can
//! grow into, and not the address space it only reserves (glibc's
//! per-thread malloc arenas, a Go runtime's arenas) or the files it maps
//! to read (git maps its pack files in windows of up to 1 GiB). `RLIMIT_AS`
//! counts those too, so a bound tight enough to matter would refuse
//! ordinary clones; a cgroup would need privileges plumb does not have.
//! A child at its limit sees its allocations fail: Python raises
//! `MemoryError`, git says `Out of memory`, and either ends; what it said
//! then is recognised ([`ran_out_of_memory`]) so the error names the limit.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The memory a child on foreign input may use: generous for real
/// inventories and pack repositories (`ansible-inventory` on a 100-host
/// inventory peaks near 45 MB; `git clone` of a small repository near
/// 20 MB), far below what a hostile one would take.
pub const MEMORY_LIMIT: u64 = 512 << 20;

/// What a child may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long it may run before it is killed.
    pub time: Duration,
    /// Bytes of data memory it may have (`RLIMIT_DATA`).
    pub memory: u64,
}

impl Limits {
    /// `time` and [`MEMORY_LIMIT`].
    pub fn new(time: Duration) -> Limits {
        Limits {
            time,
            memory: MEMORY_LIMIT,
        }
    }

    /// Makes `cmd` start with the memory limit (in the child, before it
    /// runs the program; its own children inherit it), or the limit
    /// plumb itself runs under when that is lower. The time limit is
    /// [`wait`]'s.
    pub fn apply(&self, cmd: &mut Command) {
        let bytes = self.memory as libc::rlim_t;
        // SAFETY: getrlimit and setrlimit are async-signal-safe; the
        // closure only reads a copied integer and its own stack.
        unsafe {
            cmd.pre_exec(move || {
                let mut now = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::getrlimit(libc::RLIMIT_DATA, &mut now) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let cap = bytes.min(now.rlim_max);
                let r = libc::rlimit {
                    rlim_cur: cap.min(now.rlim_cur),
                    rlim_max: cap,
                };
                if libc::setrlimit(libc::RLIMIT_DATA, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    /// The memory limit as messages say it (`512 MiB`).
    pub fn memory_text(&self) -> String {
        format!("{} MiB", self.memory >> 20)
    }
}

/// How waiting for a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// It ended by itself.
    Exited(ExitStatus),
    /// `stop` was set; the child was killed.
    Stopped,
    /// The limit passed; the child was killed.
    TimedOut,
}

impl Waited {
    /// Its exit code when it ended by itself: the code, or -1 when a
    /// signal ended it.
    pub fn code(&self) -> Option<i32> {
        match self {
            Waited::Exited(s) => Some(s.code().unwrap_or(-1)),
            _ => None,
        }
    }
}

/// Waits for `child`, polling `stop`; kills it (and reaps it) when `stop`
/// is set or `limit` passes.
pub fn wait(child: &mut Child, limit: Duration, stop: &AtomicBool) -> Waited {
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Waited::Exited(status);
        }
        let why = if stop.load(Ordering::Relaxed) {
            Waited::Stopped
        } else if start.elapsed() >= limit {
            Waited::TimedOut
        } else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        let _ = child.kill();
        let _ = child.wait();
        return why;
    }
}

/// How a child measured by [`wait_measured`] ended, with the most memory
/// it had resident at once (`ru_maxrss`), in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// How it ended.
    pub status: ExitStatus,
    /// Its peak resident memory, in bytes.
    pub peak: u64,
}

impl Ended {
    /// Whether it failed at its memory limit `limits`: it failed and said
    /// so ([`ran_out_of_memory`]), or it failed with its peak resident
    /// memory within an eighth of the limit (a program may say nothing
    /// useful: Python's `MemoryError` has no text, and a parser that
    /// catches it reports only that it failed).
    pub fn out_of_memory(&self, limits: &Limits, stderr: &str) -> bool {
        !self.status.success()
            && (ran_out_of_memory(self.status, stderr)
                || self.peak >= limits.memory - limits.memory / 8)
    }
}

/// [`wait`], reaping the child with `wait4` to learn its peak memory as
/// well. Once it returns, `child` is reaped: its handle is not to be
/// waited for again.
pub fn wait_measured(
    child: &mut Child,
    limit: Duration,
    stop: &AtomicBool,
) -> Result<Ended, Waited> {
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    loop {
        let mut raw = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own child, with valid pointers.
        let r = unsafe { libc::wait4(pid, &mut raw, libc::WNOHANG, &mut usage) };
        if r == pid {
            return Ok(Ended {
                status: ExitStatus::from_raw(raw),
                peak: u64::try_from(usage.ru_maxrss)
                    .unwrap_or(0)
                    .saturating_mul(1024),
            });
        }
        if r < 0 {
            // Reaped elsewhere (it cannot be here): no figure to give.
            return match child.try_wait() {
                Ok(Some(status)) => Ok(Ended { status, peak: 0 }),
                _ => Err(Waited::Stopped),
            };
        }
        let why = if stop.load(Ordering::Relaxed) {
            Waited::Stopped
        } else if start.elapsed() >= limit {
            Waited::TimedOut
        } else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        let _ = child.kill();
        let _ = child.wait();
        return Err(why);
    }
}

/// Whether a child that failed with `status` ran out of memory, by what
/// it said on `stderr` (an allocation that failed, in the words of
/// Python, git, C and C++ programs) or the signal that ended it (a program
/// that did not check an allocation crashes: SIGSEGV, SIGBUS, SIGABRT).
pub fn ran_out_of_memory(status: ExitStatus, stderr: &str) -> bool {
    const SAID: [&str; 7] = [
        "memoryerror",
        "out of memory",
        "memory exhausted",
        "cannot allocate memory",
        "malloc failed",
        "bad_alloc",
        "memory allocation failed",
    ];
    let lower = stderr.to_ascii_lowercase();
    SAID.iter().any(|s| lower.contains(s))
        || status
            .signal()
            .is_some_and(|s| [libc::SIGSEGV, libc::SIGBUS, libc::SIGABRT].contains(&s))
}

/// A bounded child that did not end well.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    /// It could not be started.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// It ran past its time limit and was killed.
    #[error("{program} took longer than {} s, its time limit here", .limit.as_secs())]
    TimedOut {
        /// The program.
        program: String,
        /// The limit.
        limit: Duration,
    },
    /// `stop` was set; it was killed.
    #[error("{program} was stopped")]
    Stopped {
        /// The program.
        program: String,
    },
    /// It failed when its allocations failed at the memory limit.
    #[error(
        "{program} ran out of memory: plumb runs it with at most {limit} of data memory ({said})"
    )]
    OutOfMemory {
        /// The program.
        program: String,
        /// The limit, as text (`512 MiB`).
        limit: String,
        /// The last of what it said.
        said: String,
    },
}

/// What a bounded child printed, once it ended by itself.
#[derive(Debug)]
pub struct Output {
    /// How it ended.
    pub status: ExitStatus,
    /// The first bytes of its stdout (at most what [`run`] was given).
    pub stdout: Vec<u8>,
    /// The last [`MAX_STDERR`] bytes of its stderr.
    pub stderr: Vec<u8>,
}

/// How much of a child's stderr [`run`] keeps: its last bytes, where the
/// reason for failing is.
pub const MAX_STDERR: usize = 16 << 10;

/// Runs `cmd` (`program` names it in errors) with stdin closed under
/// `limits`, keeping the first `max_stdout` bytes of its stdout (the rest
/// is read and dropped) and the tail of its stderr. A run past the time
/// limit, or one that failed at its memory limit, is an error naming the
/// limit; any other exit, success or not, is the caller's to judge.
pub fn run(
    cmd: &mut Command,
    program: &str,
    limits: Limits,
    max_stdout: usize,
    stop: &AtomicBool,
) -> Result<Output, ChildError> {
    limits.apply(cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|source| ChildError::Spawn {
        program: program.to_string(),
        source,
    })?;
    let out = collect(child.stdout.take().expect("piped"), max_stdout, Keep::Head);
    let err = collect(child.stderr.take().expect("piped"), MAX_STDERR, Keep::Tail);
    let waited = wait_measured(&mut child, limits.time, stop);
    // The child is gone (ended or killed and reaped): the pipes end once
    // its own children let go of them.
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let ended = match waited {
        Ok(e) => e,
        Err(Waited::Stopped) => {
            return Err(ChildError::Stopped {
                program: program.to_string(),
            })
        }
        Err(_) => {
            return Err(ChildError::TimedOut {
                program: program.to_string(),
                limit: limits.time,
            })
        }
    };
    let status = ended.status;
    let text = String::from_utf8_lossy(&stderr);
    if ended.out_of_memory(&limits, &text) {
        return Err(ChildError::OutOfMemory {
            program: program.to_string(),
            limit: limits.memory_text(),
            said: last_line(&text),
        });
    }
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// The last non-empty line of `text`, cleaned for a terminal and cut to
/// 200 characters.
pub fn last_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("");
    crate::terminal::clean(line).chars().take(200).collect()
}

/// Which bytes of a stream [`collect`] keeps.
#[derive(Debug, Clone, Copy)]
pub enum Keep {
    /// The first ones (data: what comes after the bound is dropped).
    Head,
    /// The last ones (messages: the reason for failing comes last).
    Tail,
}

/// Reads a pipe to its end in a thread, keeping at most `max` bytes.
pub fn collect<R: Read + Send + 'static>(
    mut r: R,
    max: usize,
    keep: Keep,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => match keep {
                    Keep::Head => {
                        let room = max.saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                    Keep::Tail => {
                        kept.extend_from_slice(&buf[..n]);
                        if kept.len() > 2 * max {
                            kept.drain(..kept.len() - max);
                        }
                    }
                },
            }
        }
        if kept.len() > max {
            kept.drain(..kept.len() - max);
        }
        kept
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_child_past_its_memory_limit_fails_naming_the_limit() {
        // dd's buffer of 64 MiB is allocated before anything is read: under
        // 16 MiB it cannot be, and dd says so.
        let limits = Limits {
            time: Duration::from_secs(20),
            memory: 16 << 20,
        };
        let never = AtomicBool::new(false);
        let e = run(
            &mut sh("dd if=/dev/zero of=/dev/null bs=64M count=1"),
            "dd",
            limits,
            1024,
            &never,
        )
        .unwrap_err();
        assert!(matches!(e, ChildError::OutOfMemory { .. }), "{e}");
        assert!(e.to_string().contains("at most 16 MiB"), "{e}");
        // The same child with room enough succeeds.
        let ok = run(
            &mut sh("dd if=/dev/zero of=/dev/null bs=64M count=1 2>/dev/null; echo done"),
            "dd",
            Limits::new(Duration::from_secs(20)),
            1024,
            &never,
        )
        .unwrap();
        assert!(ok.status.success());
        assert_eq!(ok.stdout, b"done\n");
    }

    #[test]
    fn a_child_that_fails_silently_at_its_memory_limit_is_told_by_its_peak() {
        // Python's MemoryError has no text: a script that catches it and
        // fails saying nothing is still known by its peak memory.
        let limits = Limits {
            time: Duration::from_secs(30),
            memory: 64 << 20,
        };
        let never = AtomicBool::new(false);
        let silent = "import sys\nb = []\ntry:\n    while True: b.append(bytearray(1 << 20))\nexcept MemoryError:\n    b = None\n    sys.exit(3)\n";
        let e = run(
            Command::new("python3").args(["-c", silent]),
            "python3",
            limits,
            1024,
            &never,
        )
        .unwrap_err();
        assert!(matches!(e, ChildError::OutOfMemory { .. }), "{e}");
    }

    #[test]
    fn a_child_past_its_time_limit_is_killed() {
        let never = AtomicBool::new(false);
        let start = Instant::now();
        let e = run(
            &mut sh("exec sleep 30"),
            "sleep",
            Limits::new(Duration::from_millis(300)),
            1024,
            &never,
        )
        .unwrap_err();
        assert!(matches!(e, ChildError::TimedOut { .. }), "{e}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn output_is_bounded_and_failures_are_the_callers() {
        let never = AtomicBool::new(false);
        let out = run(
            &mut sh("head -c 100000 /dev/zero; echo oops >&2; exit 3"),
            "sh",
            Limits::new(Duration::from_secs(20)),
            10,
            &never,
        )
        .unwrap();
        assert_eq!(out.stdout.len(), 10);
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stderr, b"oops\n");
        assert!(!ran_out_of_memory(out.status, "oops"));
    }
}
