//! The per-second timeline of I/Os and bytes, per direction.

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// One interval (normally a second) of a job.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TimelinePoint {
    /// Start of the interval, in ms since the measured part of the job started.
    pub t_ms: u64,
    /// Length of the interval in ms (1000, except a last partial one).
    pub duration_ms: u64,
    /// Reads completed in the interval.
    pub read_ios: u64,
    /// Bytes read in the interval.
    pub read_bytes: u64,
    /// Writes completed in the interval.
    pub write_ios: u64,
    /// Bytes written in the interval.
    pub write_bytes: u64,
}

impl TimelinePoint {
    /// I/Os per second in the interval for a direction index (0 read, 1 write).
    pub fn iops(&self, dir: usize) -> f64 {
        let ios = if dir == 0 {
            self.read_ios
        } else {
            self.write_ios
        };
        ios as f64 * 1000.0 / self.duration_ms.max(1) as f64
    }

    /// Bytes per second in the interval for a direction index.
    pub fn bw_bytes(&self, dir: usize) -> f64 {
        let b = if dir == 0 {
            self.read_bytes
        } else {
            self.write_bytes
        };
        b as f64 * 1000.0 / self.duration_ms.max(1) as f64
    }
}

/// Accumulates completions and closes a point every second.
#[derive(Debug, Clone)]
pub struct Timeline {
    start: Instant,
    next_tick: Instant,
    current: TimelinePoint,
    points: Vec<TimelinePoint>,
}

impl Timeline {
    /// Starts a timeline at `start`.
    pub fn new(start: Instant) -> Self {
        Timeline {
            start,
            next_tick: start + Duration::from_secs(1),
            current: TimelinePoint {
                duration_ms: 1000,
                ..TimelinePoint::default()
            },
            points: Vec::new(),
        }
    }

    /// Adds completions seen at `now` in direction index `dir`.
    #[inline]
    pub fn add(&mut self, now: Instant, dir: usize, ios: u64, bytes: u64) {
        if now >= self.next_tick {
            self.tick(now);
        }
        if dir == 0 {
            self.current.read_ios += ios;
            self.current.read_bytes += bytes;
        } else {
            self.current.write_ios += ios;
            self.current.write_bytes += bytes;
        }
    }

    /// Closes every second that ended before `now`.
    pub fn tick(&mut self, now: Instant) {
        while now >= self.next_tick {
            let next = TimelinePoint {
                t_ms: self.current.t_ms + 1000,
                duration_ms: 1000,
                ..TimelinePoint::default()
            };
            self.points.push(std::mem::replace(&mut self.current, next));
            self.next_tick += Duration::from_secs(1);
        }
    }

    /// All points, with a last partial interval ending at `end` if it saw I/O.
    pub fn finish(mut self, end: Instant) -> Vec<TimelinePoint> {
        self.tick(end);
        let partial_ms = (end.saturating_duration_since(self.start).as_millis() as u64)
            .saturating_sub(self.current.t_ms);
        if partial_ms > 0 && (self.current.read_ios + self.current.write_ios) > 0 {
            self.current.duration_ms = partial_ms;
            self.points.push(self.current);
        }
        self.points
    }
}
