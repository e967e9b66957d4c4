//! When a replay stops before its end, and why: a signal, the deadline, a
//! full disk, the byte grant, or a thread that could not run. Every long
//! step of the replay (laying out, think time, waiting for another thread)
//! asks [`Guard::halted`] at least every [`POLL`].

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The longest a replay step goes without looking at the stop flag and the deadline.
pub const POLL: Duration = Duration::from_millis(20);

/// Waits on `cv` for at most [`POLL`] (so the waiter looks at the guard
/// again), taking the state back even if another thread panicked holding
/// it.
pub fn wait_a_poll<'a, T>(cv: &Condvar, state: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    match cv.wait_timeout(state, POLL) {
        Ok((state, _)) => state,
        Err(p) => p.into_inner().0,
    }
}

/// What a replay must stay within.
#[derive(Debug, Clone, Copy)]
pub struct Bounds<'a> {
    /// Set by SIGINT/SIGTERM (or the runner): stop soon.
    pub stop: &'a AtomicBool,
    /// Stop at this instant, if set.
    pub deadline: Option<Instant>,
    /// Bytes the replay's files may take (lay-out included).
    pub max_bytes: u64,
}

/// Why a replay stopped early.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", content = "message", rename_all = "snake_case")]
pub enum Halt {
    /// The stop flag was set (a signal).
    Interrupted,
    /// The deadline passed.
    Deadline,
    /// The file system ran out of space (ENOSPC or EDQUOT).
    DiskFull(String),
    /// An operation would have written past the byte grant.
    Budget(String),
    /// A replay thread could not be started or died.
    Failed(String),
}

impl std::fmt::Display for Halt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Halt::Interrupted => write!(f, "interrupted"),
            Halt::Deadline => write!(f, "the deadline passed"),
            Halt::DiskFull(m) => write!(f, "the disk is full: {m}"),
            Halt::Budget(m) => write!(f, "{m}"),
            Halt::Failed(m) => write!(f, "{m}"),
        }
    }
}

/// The replay's shared stop state: the first reason to halt wins.
pub struct Guard<'a> {
    bounds: Bounds<'a>,
    halted: AtomicBool,
    why: Mutex<Option<Halt>>,
}

impl<'a> Guard<'a> {
    /// A guard for a replay within `bounds`.
    pub fn new(bounds: Bounds<'a>) -> Guard<'a> {
        Guard {
            bounds,
            halted: AtomicBool::new(false),
            why: Mutex::new(None),
        }
    }

    /// Halts the replay for `why` (unless it already halted).
    pub fn halt(&self, why: Halt) {
        let mut w = self.why.lock().unwrap_or_else(|p| p.into_inner());
        if w.is_none() {
            *w = Some(why);
        }
        self.halted.store(true, Ordering::Relaxed);
    }

    /// True once the replay must stop: a halt, the stop flag, the deadline.
    pub fn halted(&self) -> bool {
        if self.halted.load(Ordering::Relaxed) {
            return true;
        }
        if self.bounds.stop.load(Ordering::Relaxed) {
            self.halt(Halt::Interrupted);
            return true;
        }
        if self.bounds.deadline.is_some_and(|d| Instant::now() >= d) {
            self.halt(Halt::Deadline);
            return true;
        }
        false
    }

    /// Why the replay halted, if it did.
    pub fn reason(&self) -> Option<Halt> {
        self.why.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Sleeps until `t0 + due_s` seconds in slices of at most [`POLL`];
    /// returns early (false) when the replay halts.
    pub fn sleep_until(&self, t0: Instant, due_s: f64) -> bool {
        loop {
            if self.halted() {
                return false;
            }
            let left = due_s - t0.elapsed().as_secs_f64();
            if left.is_nan() || left <= 50e-6 {
                return true;
            }
            std::thread::sleep(Duration::from_secs_f64(left.min(POLL.as_secs_f64())));
        }
    }

    /// The bytes granted.
    pub fn max_bytes(&self) -> u64 {
        self.bounds.max_bytes
    }
}
