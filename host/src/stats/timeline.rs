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
    /// True for the last interval when the job ended inside a second: its
    /// counts cover `duration_ms` only, and its rates are normalised by it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
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
            self.current.partial = true;
            self.points.push(self.current);
        }
        self.points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_last_partial_interval_is_marked_and_its_rate_normalised() {
        let t0 = Instant::now();
        let mut t = Timeline::new(t0);
        // 5000 IOPS for 3.05 s: 5 I/Os every millisecond.
        for ms in 0..3050u64 {
            t.add(t0 + Duration::from_millis(ms), 0, 5, 5 * 4096);
        }
        let points = t.finish(t0 + Duration::from_millis(3050));
        assert_eq!(points.len(), 4, "{points:?}");
        assert!(points[..3]
            .iter()
            .all(|p| !p.partial && p.duration_ms == 1000));
        let last = &points[3];
        assert!(last.partial);
        assert_eq!(last.duration_ms, 50);
        assert_eq!(last.read_ios, 250);
        assert_eq!(last.iops(0), 5000.0, "not a collapse to {}", last.iops(0));
        assert_eq!(last.bw_bytes(0), 5000.0 * 4096.0);
        // The mark is in the JSON of the partial point only.
        assert!(serde_json::to_string(last)
            .unwrap()
            .contains("\"partial\":true"));
        assert!(!serde_json::to_string(&points[0])
            .unwrap()
            .contains("partial"));
    }
}
