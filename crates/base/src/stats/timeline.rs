//! The timeline of I/Os and bytes, per direction: per second, or per 10 or
//! 100 ms for a job shorter than a few seconds ([`LEVELS`]).

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// One interval of a job: a second, or less in a short job ([`LEVELS`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TimelinePoint {
    /// Start of the interval, in ms since the measured part of the job started.
    pub t_ms: u64,
    /// Length of the interval in ms (one of [`LEVELS`]; less for a last
    /// partial one).
    pub duration_ms: u64,
    /// True for the last interval when the job ended inside one: its
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

/// The intervals of a timeline and how long each is kept, in ms: a job
/// is sampled every 10 ms for its first half second, every 100 ms up to
/// 5 s, then every second (fio's per-second samples), the finer points
/// summed into the coarser ones when the job outlasts them. A job of a
/// fraction of a second is not a single dot, and a long one keeps one
/// point a second.
pub const LEVELS: [(u64, u64); 3] = [(10, 500), (100, 5000), (COARSE_MS, u64::MAX)];
/// The interval of a long job's timeline, in ms.
pub const COARSE_MS: u64 = 1000;

/// The interval of `points`: the shortest of [`LEVELS`] that none of them
/// is longer than (a partial last point is shorter than its interval).
pub fn interval_of(points: &[TimelinePoint]) -> u64 {
    let longest = points
        .iter()
        .map(|p| p.duration_ms)
        .max()
        .unwrap_or(COARSE_MS);
    LEVELS
        .iter()
        .map(|(interval, _)| *interval)
        .find(|i| longest <= *i)
        .unwrap_or(COARSE_MS)
}

/// `points` summed into intervals of `to_ms` (a multiple of theirs): each
/// new point covers what it sums, the last one partial when shorter than
/// `to_ms`.
pub fn coarsen(points: &[TimelinePoint], to_ms: u64) -> Vec<TimelinePoint> {
    let to_ms = to_ms.max(1);
    let mut out: Vec<TimelinePoint> = Vec::new();
    for p in points {
        let t_ms = p.t_ms / to_ms * to_ms;
        match out.last_mut() {
            Some(o) if o.t_ms == t_ms => {
                o.duration_ms = o.duration_ms.saturating_add(p.duration_ms);
                o.read_ios = o.read_ios.saturating_add(p.read_ios);
                o.read_bytes = o.read_bytes.saturating_add(p.read_bytes);
                o.write_ios = o.write_ios.saturating_add(p.write_ios);
                o.write_bytes = o.write_bytes.saturating_add(p.write_bytes);
            }
            _ => out.push(TimelinePoint { t_ms, ..p.clone() }),
        }
    }
    for o in &mut out {
        o.duration_ms = o.duration_ms.min(to_ms);
        o.partial = o.duration_ms < to_ms;
    }
    out
}

/// Accumulates completions and closes a point every interval, from the
/// finest of [`LEVELS`] on, summing its points into the next level's as
/// the job outlasts each.
#[derive(Debug, Clone)]
pub struct Timeline {
    start: Instant,
    level: usize,
    next_tick: Instant,
    current: TimelinePoint,
    points: Vec<TimelinePoint>,
}

impl Timeline {
    /// Starts a timeline at `start`.
    pub fn new(start: Instant) -> Self {
        let first = LEVELS[0].0;
        Timeline {
            start,
            level: 0,
            next_tick: start + Duration::from_millis(first),
            current: TimelinePoint {
                duration_ms: first,
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

    /// Closes every interval that ended before `now`.
    pub fn tick(&mut self, now: Instant) {
        while now >= self.next_tick {
            let (interval, kept_for) = LEVELS[self.level];
            let t_ms = self.current.t_ms + interval;
            if t_ms >= kept_for && self.level + 1 < LEVELS.len() {
                // Long enough for the next level: the points so far summed
                // into its intervals (each level's span is a whole number of
                // the next one's intervals).
                self.points.push(std::mem::take(&mut self.current));
                self.level += 1;
                let coarser = LEVELS[self.level].0;
                self.points = coarsen(&self.points, coarser);
                self.current = TimelinePoint {
                    t_ms,
                    duration_ms: coarser,
                    ..TimelinePoint::default()
                };
                self.next_tick = self.start + Duration::from_millis(t_ms + coarser);
                continue;
            }
            let next = TimelinePoint {
                t_ms,
                duration_ms: interval,
                ..TimelinePoint::default()
            };
            self.points.push(std::mem::replace(&mut self.current, next));
            self.next_tick += Duration::from_millis(interval);
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
        // 5000 IOPS for 7.05 s: 5 I/Os every millisecond.
        for ms in 0..7050u64 {
            t.add(t0 + Duration::from_millis(ms), 0, 5, 5 * 4096);
        }
        let points = t.finish(t0 + Duration::from_millis(7050));
        assert_eq!(points.len(), 8, "{points:?}");
        assert!(points[..7].iter().enumerate().all(|(i, p)| !p.partial
            && p.duration_ms == 1000
            && p.t_ms == i as u64 * 1000
            && p.read_ios == 5000));
        let last = &points[7];
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

    #[test]
    fn a_job_under_half_a_second_is_sampled_every_10_ms() {
        let t0 = Instant::now();
        let mut t = Timeline::new(t0);
        for ms in 0..305u64 {
            t.add(t0 + Duration::from_millis(ms), 0, 1, 4096);
        }
        let points = t.finish(t0 + Duration::from_millis(305));
        assert_eq!(points.len(), 31, "{points:?}");
        assert!(points[..30]
            .iter()
            .all(|p| p.duration_ms == 10 && p.read_ios == 10));
        assert_eq!((points[30].duration_ms, points[30].partial), (5, true));
        assert_eq!(interval_of(&points), 10);
    }

    #[test]
    fn a_short_job_is_sampled_every_tenth_of_a_second() {
        let t0 = Instant::now();
        let mut t = Timeline::new(t0);
        for ms in 0..1230u64 {
            t.add(t0 + Duration::from_millis(ms), 1, 2, 2 * 4096);
        }
        let points = t.finish(t0 + Duration::from_millis(1230));
        assert_eq!(points.len(), 13, "{points:?}");
        assert!(points[..12].iter().enumerate().all(|(i, p)| !p.partial
            && p.duration_ms == LEVELS[1].0
            && p.t_ms == i as u64 * LEVELS[1].0
            && p.write_ios == 200));
        assert_eq!(points[12].duration_ms, 30);
        assert_eq!(points[12].iops(1), 2000.0);
        // Summed into seconds: one full, one partial of 230 ms.
        let seconds = coarsen(&points, COARSE_MS);
        assert_eq!(seconds.len(), 2, "{seconds:?}");
        assert_eq!((seconds[0].duration_ms, seconds[0].partial), (1000, false));
        assert_eq!(seconds[0].write_ios, 2000);
        assert_eq!((seconds[1].duration_ms, seconds[1].partial), (230, true));
    }
}
