//! `rate` and `rate_iops`: when the next I/O of a direction may be issued.

use crate::job::spec::Dir;
use std::time::{Duration, Instant};

/// Paces I/O so that each direction stays under its IOPS and bandwidth caps.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    iops: [Option<u64>; 2],
    bytes_per_sec: [Option<u64>; 2],
    ios: [u64; 2],
    bytes: [u64; 2],
    start: Instant,
}

impl RateLimiter {
    /// A limiter with per-direction caps; `None` is unlimited.
    pub fn new(iops: [Option<u64>; 2], bytes_per_sec: [Option<u64>; 2]) -> Self {
        RateLimiter {
            iops,
            bytes_per_sec,
            ios: [0; 2],
            bytes: [0; 2],
            start: Instant::now(),
        }
    }

    /// True when no cap is set, so callers can skip the pacing entirely.
    pub fn is_unlimited(&self) -> bool {
        self.iops == [None, None] && self.bytes_per_sec == [None, None]
    }

    /// Restarts the pacing clock (after ramp time, for example).
    pub fn restart(&mut self, now: Instant) {
        self.ios = [0; 2];
        self.bytes = [0; 2];
        self.start = now;
    }

    /// How long to wait before the next I/O in `dir` may be issued.
    pub fn wait_before(&self, dir: Dir, now: Instant) -> Option<Duration> {
        let d = dir.index();
        let secs = |done: u64, per_sec: u64| {
            Duration::try_from_secs_f64(done as f64 / per_sec.max(1) as f64)
                .unwrap_or(Duration::MAX)
        };
        let mut due = Duration::ZERO;
        if let Some(iops) = self.iops[d] {
            due = due.max(secs(self.ios[d], iops));
        }
        if let Some(bps) = self.bytes_per_sec[d] {
            due = due.max(secs(self.bytes[d], bps));
        }
        // Beyond what the clock can hold is "not in this run": wait the longest
        // (callers sleep in short slices and check their deadline).
        let Some(at) = self.start.checked_add(due) else {
            return Some(Duration::MAX);
        };
        (at > now).then(|| at - now)
    }

    /// Records that an I/O of `len` bytes was issued in `dir`.
    pub fn issued(&mut self, dir: Dir, len: u64) {
        self.ios[dir.index()] = self.ios[dir.index()].saturating_add(1);
        self.bytes[dir.index()] = self.bytes[dir.index()].saturating_add(len);
    }
}
