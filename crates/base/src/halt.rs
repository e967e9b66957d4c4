//! When a long operation must end early: a stop flag (Ctrl-C, SIGTERM or a
//! caller) and an optional deadline, checked together.
//!
//! Primitives that can run long (CPU kernels, memory walks, network loops)
//! take a [`Halt`] and poll it at a bounded interval, so the one rule "stop
//! at the deadline or on a signal" lives here rather than in each adapter.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why an operation stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Halted {
    /// The stop flag was raised (a signal, or a caller).
    #[error("interrupted")]
    Interrupted,
    /// The deadline passed.
    #[error("the deadline passed")]
    Deadline,
}

/// The longest a [`Halt::sleep`] sleeps between two checks.
const SLEEP_SLICE: Duration = Duration::from_millis(20);

/// A stop flag and a deadline, polled by long operations.
#[derive(Debug, Clone)]
pub struct Halt {
    stop: Arc<AtomicBool>,
    /// A second stop flag (a background task's own `stop`).
    also: Option<Arc<AtomicBool>>,
    deadline: Option<Instant>,
}

impl Halt {
    /// Stops on `stop`, or at `deadline` when there is one.
    pub fn new(stop: Arc<AtomicBool>, deadline: Option<Instant>) -> Halt {
        Halt {
            stop,
            also: None,
            deadline,
        }
    }

    /// Stops on `flag` too.
    pub fn or_on(mut self, flag: Arc<AtomicBool>) -> Halt {
        self.also = Some(flag);
        self
    }

    /// Stops on `stop`, or `after` from now (no deadline when that is
    /// beyond what the clock can represent).
    pub fn after(stop: Arc<AtomicBool>, after: Duration) -> Halt {
        Halt::new(stop, Instant::now().checked_add(after))
    }

    /// Fails when the operation must stop now.
    pub fn check(&self) -> Result<(), Halted> {
        if self.stop.load(Ordering::Relaxed)
            || self
                .also
                .as_ref()
                .is_some_and(|f| f.load(Ordering::Relaxed))
        {
            return Err(Halted::Interrupted);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Halted::Deadline);
        }
        Ok(())
    }

    /// True when the operation must stop now.
    pub fn due(&self) -> bool {
        self.check().is_err()
    }

    /// Time left before the deadline (`Duration::MAX` without one).
    pub fn time_left(&self) -> Duration {
        self.deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        })
    }

    /// Sleeps `for_` (any length), waking every few milliseconds to check;
    /// fails as soon as the operation must stop.
    pub fn sleep(&self, for_: Duration) -> Result<(), Halted> {
        let start = Instant::now();
        loop {
            self.check()?;
            let left = for_.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(SLEEP_SLICE));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_sleep_ends_at_the_deadline() {
        let h = Halt::after(Arc::new(AtomicBool::new(false)), Duration::from_millis(50));
        let t = Instant::now();
        assert_eq!(h.sleep(Duration::MAX), Err(Halted::Deadline));
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn the_stop_flag_ends_a_sleep() {
        let stop = Arc::new(AtomicBool::new(true));
        let h = Halt::after(stop, Duration::MAX);
        assert_eq!(h.sleep(Duration::from_secs(3600)), Err(Halted::Interrupted));
        assert_eq!(h.time_left(), Duration::MAX);
    }
}
