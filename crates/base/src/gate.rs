//! The gate every thread of a run passes, and threads that start together.
//!
//! **One cap on the run's threads.** Whatever starts a thread — a job's
//! clones (`plumb fio`, `io::job`, `io::group`, `io::start`), a background
//! task, the CPU and memory kernels, network streams and the loopback
//! peer's connections, trace replay clients, a script's own thread — takes
//! a [`Permit`] from one counter before the thread exists and gives it back
//! when the thread ends. A run (one plumb process) never has more than
//! [`max_threads`] such threads at once: past it the start is refused with
//! an error naming the cap, and a start the system refuses (out of PIDs,
//! `RLIMIT_NPROC`) is an error too, never a panic or an abort. Operations
//! check [`room`] before they lay anything out, so a refusal changes
//! nothing.
//!
//! **Threads that prepare apart and start together** ([`run_together`]):
//! the timed phase of the CPU kernels and of the memory bandwidth test.
//! Unlike a `Barrier`, the start line never waits for a thread that could
//! not be started or that died while preparing: the run then ends with an
//! error, and the threads already waiting are sent home without timing
//! anything.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread::{JoinHandle, Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

/// Most threads one gated run starts (a CPU kernel or a memory test).
pub const MAX_THREADS: u32 = 1024;

/// The run's thread cap when none is set: enough for the largest job fio
/// allows (4096 clones), lowered on a machine whose limits are lower
/// (see [`default_max_threads`]).
pub const DEFAULT_MAX_THREADS: u32 = 4096;

/// Stack of each gated thread. The kernels keep their data on the heap, so a
/// small stack serves; with the default 2 MiB, the 4096 threads a scenario may
/// run in the background would reserve 8 GiB of address space.
const STACK_BYTES: usize = 256 * 1024;

/// Threads running under the cap, and the cap (0: not set yet, the default
/// applies).
struct ThreadCount {
    running: AtomicU32,
    max: AtomicU32,
}

static THREADS: ThreadCount = ThreadCount {
    running: AtomicU32::new(0),
    max: AtomicU32::new(0),
};

/// Why a thread was not started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The run's cap would be passed.
    #[error("{wanted} more thread(s) beside the {running} the run has would pass its cap of {max} threads at once (rule: --max-threads, by default {DEFAULT_MAX_THREADS} or half the machine's process limit when lower)")]
    Cap {
        /// Threads asked for.
        wanted: u32,
        /// Threads already running under the cap.
        running: u32,
        /// The cap.
        max: u32,
    },
    /// The system refused the thread.
    #[error("the system refused a new thread: {0} (lower the thread count, or raise the process limit: ulimit -u, pid_max)")]
    Os(std::io::Error),
}

/// Why threads that start together did not run ([`run_together`]).
#[derive(Debug, thiserror::Error)]
pub enum TogetherError {
    /// The run's cap leaves no room for them all.
    #[error("cannot start {threads} {label} threads: {source}")]
    NoRoom {
        /// What the threads are for.
        label: String,
        /// How many were asked for.
        threads: u32,
        /// Why there is no room.
        source: SpawnError,
    },
    /// One could not be started (those started were abandoned).
    #[error("could not start {label} thread {index}: {source}")]
    Spawn {
        /// What the threads are for.
        label: String,
        /// Which thread.
        index: usize,
        /// Why.
        source: SpawnError,
    },
    /// One panicked.
    #[error("a {label} thread failed")]
    Failed {
        /// What the threads are for.
        label: String,
    },
}

/// Sets the run's thread cap (`--max-threads`); 0 restores the default.
pub fn set_max_threads(max: u32) {
    THREADS.max.store(max, Ordering::Relaxed);
}

/// The run's thread cap: the one set, else [`default_max_threads`].
pub fn max_threads() -> u32 {
    match THREADS.max.load(Ordering::Relaxed) {
        0 => default_max_threads(),
        n => n,
    }
}

/// [`DEFAULT_MAX_THREADS`], or half of the lowest of the machine's
/// `threads-max`, `pid_max` and the soft `RLIMIT_NPROC` when that is lower
/// (the other half is left to everything else the user runs), at least 1.
pub fn default_max_threads() -> u32 {
    let proc_limit = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    // SAFETY: getrlimit fills the struct it is given.
    let nproc = unsafe {
        let mut l: libc::rlimit = std::mem::zeroed();
        (libc::getrlimit(libc::RLIMIT_NPROC, &mut l) == 0 && l.rlim_cur != libc::RLIM_INFINITY)
            .then_some(l.rlim_cur)
    };
    [
        proc_limit("/proc/sys/kernel/threads-max"),
        proc_limit("/proc/sys/kernel/pid_max"),
        nproc,
    ]
    .into_iter()
    .flatten()
    .fold(u64::from(DEFAULT_MAX_THREADS), |max, limit| {
        max.min(limit / 2)
    })
    .max(1) as u32
}

/// Threads running under the cap now.
pub fn running_threads() -> u32 {
    THREADS.running.load(Ordering::Relaxed)
}

/// Fails when `wanted` more threads would not fit under the cap now (a
/// check before work is laid out; starting them takes permits still).
pub fn room(wanted: u32) -> Result<(), SpawnError> {
    let (running, max) = (running_threads(), max_threads());
    match running.checked_add(wanted) {
        Some(total) if total <= max => Ok(()),
        _ => Err(SpawnError::Cap {
            wanted,
            running,
            max,
        }),
    }
}

/// Threads taken under the cap, given back when dropped.
#[derive(Debug)]
pub struct Permit {
    threads: u32,
}

impl Permit {
    /// Takes `threads` under the cap, or refuses when they would pass it.
    pub fn take(threads: u32) -> Result<Permit, SpawnError> {
        let max = max_threads();
        THREADS
            .running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                r.checked_add(threads).filter(|t| *t <= max)
            })
            .map(|_| Permit { threads })
            .map_err(|running| SpawnError::Cap {
                wanted: threads,
                running,
                max,
            })
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        THREADS.running.fetch_sub(self.threads, Ordering::AcqRel);
    }
}

/// A thread to start under the cap: [`thread`], then `spawn` or
/// `spawn_scoped`. The thread holds its permit until its body returns (or
/// unwinds); a refused start gives it back at once.
#[derive(Debug)]
pub struct Spawn {
    name: String,
    stack: Option<usize>,
}

/// A thread named `name` (shown by debuggers and `top -H`; a NUL, which
/// the system cannot take in a name, is dropped).
pub fn thread(name: impl Into<String>) -> Spawn {
    let mut name = name.into();
    name.retain(|c| c != '\0');
    Spawn { name, stack: None }
}

impl Spawn {
    /// Gives the thread a stack of `bytes` (reserved, not committed).
    pub fn stack_size(mut self, bytes: usize) -> Spawn {
        self.stack = Some(bytes);
        self
    }

    fn builder(&self) -> std::thread::Builder {
        let b = std::thread::Builder::new().name(self.name.clone());
        match self.stack {
            Some(bytes) => b.stack_size(bytes),
            None => b,
        }
    }

    /// Starts the thread, or says why it could not.
    pub fn spawn<F, T>(self, body: F) -> Result<JoinHandle<T>, SpawnError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let permit = Permit::take(1)?;
        self.builder()
            .spawn(move || {
                let _held = permit;
                body()
            })
            .map_err(SpawnError::Os)
    }

    /// Starts the thread in `scope`, or says why it could not.
    pub fn spawn_scoped<'scope, 'env, F, T>(
        self,
        scope: &'scope Scope<'scope, 'env>,
        body: F,
    ) -> Result<ScopedJoinHandle<'scope, T>, SpawnError>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let permit = Permit::take(1)?;
        self.builder()
            .spawn_scoped(scope, move || {
                let _held = permit;
                body()
            })
            .map_err(SpawnError::Os)
    }
}

/// Runs `body` on `threads` named threads (all of them fitting under the
/// run's cap, or none started). Each calls the `start` function
/// it is given once its preparation is done; `start` returns true when every
/// thread is ready (time from there) and false when the run is abandoned
/// (return at once). Returns what each thread returned and the wall seconds
/// from the start to the last thread's end.
pub fn run_together<T: Send>(
    label: &str,
    threads: u32,
    body: impl Fn(usize, &dyn Fn() -> bool) -> T + Sync,
) -> Result<(Vec<T>, f64), TogetherError> {
    room(threads).map_err(|source| TogetherError::NoRoom {
        label: label.into(),
        threads,
        source,
    })?;
    let gate = Gate::default();
    let ready = AtomicU32::new(0);
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(threads as usize);
        let mut failure = None;
        for i in 0..threads as usize {
            let (gate, ready, body) = (&gate, &ready, &body);
            let spawned = thread(format!("{label}-{i}"))
                .stack_size(STACK_BYTES)
                .spawn_scoped(s, move || {
                    let start = || {
                        ready.fetch_add(1, Ordering::Release);
                        gate.wait()
                    };
                    body(i, &start)
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    failure = Some(TogetherError::Spawn {
                        label: label.into(),
                        index: i,
                        source: e,
                    });
                    break;
                }
            }
        }
        // Wait until every started thread is prepared (or one has ended early).
        while failure.is_none()
            && (ready.load(Ordering::Acquire) as usize) < handles.len()
            && !handles.iter().any(|h| h.is_finished())
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        gate.open(failure.is_none() && !handles.iter().any(|h| h.is_finished()));
        let t0 = Instant::now();
        let mut out = Vec::with_capacity(handles.len());
        for h in handles {
            match h.join() {
                Ok(v) => out.push(v),
                Err(_) => {
                    failure.get_or_insert_with(|| TogetherError::Failed {
                        label: label.into(),
                    });
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok((out, t0.elapsed().as_secs_f64())),
        }
    })
}

/// The start line: threads wait until it opens to "go" or to "abandon".
#[derive(Default)]
struct Gate {
    state: Mutex<Option<bool>>,
    opened: Condvar,
}

impl Gate {
    fn open(&self, go: bool) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = Some(go);
        self.opened.notify_all();
    }

    fn wait(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(go) = *state {
                return go;
            }
            state = self.opened.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_dies_while_preparing_ends_the_run_without_a_hang() {
        let r = run_together("t", 4, |i, start| {
            if i == 2 {
                panic!("preparing failed");
            }
            start()
        });
        assert_eq!(r.unwrap_err().to_string(), "a t thread failed");
    }

    #[test]
    fn threads_past_the_cap_are_refused_naming_it() {
        let e = Permit::take(u32::MAX).unwrap_err().to_string();
        assert!(e.contains("--max-threads"), "{e}");
        assert!(room(u32::MAX).is_err());
        let e = run_together("t", u32::MAX, |_, start| start())
            .unwrap_err()
            .to_string();
        assert!(e.contains("cap of"), "{e}");
    }

    #[test]
    fn a_name_with_a_nul_starts_a_thread_rather_than_panicking() {
        let h = thread("a\0b").spawn(|| std::thread::current().name().map(String::from));
        assert_eq!(h.unwrap().join().unwrap().as_deref(), Some("ab"));
    }

    #[test]
    fn all_threads_start_when_all_are_ready() {
        let (started, _) = run_together("t", 3, |_, start| start()).unwrap();
        assert_eq!(started, vec![true; 3]);
    }
}
