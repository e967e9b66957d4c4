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
        let mut due = Duration::ZERO;
        if let Some(iops) = self.iops[d] {
            due = due.max(Duration::from_secs_f64(self.ios[d] as f64 / iops as f64));
        }
        if let Some(bps) = self.bytes_per_sec[d] {
            due = due.max(Duration::from_secs_f64(self.bytes[d] as f64 / bps as f64));
        }
        let at = self.start + due;
        (at > now).then(|| at - now)
    }

    /// Records that an I/O of `len` bytes was issued in `dir`.
    pub fn issued(&mut self, dir: Dir, len: u64) {
        self.ios[dir.index()] += 1;
        self.bytes[dir.index()] += len;
    }
}
