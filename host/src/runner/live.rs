//! A run's live totals for whoever started it in the background: the
//! watcher publishes the summed counters of every job thread every 50 ms,
//! and [`LiveTotals::snapshot`] turns them into figures since the start and
//! over the last second.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How far back samples are kept: enough for "the last second".
const KEEP: Duration = Duration::from_millis(1500);

/// The live counters of a run, shared with its starter.
#[derive(Debug)]
pub struct LiveTotals {
    started: Instant,
    samples: Mutex<VecDeque<Sample>>,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Instant,
    ios: [u64; 2],
    bytes: [u64; 2],
}

/// Figures of one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct LiveDirection {
    /// I/Os done since the start (of the measured phase).
    pub ios: u64,
    /// Bytes moved since the start.
    pub bytes: u64,
    /// I/Os per second since the start.
    pub iops: f64,
    /// Bytes per second since the start.
    pub bw_bytes: f64,
    /// I/Os per second over the last second.
    pub iops_last_second: f64,
    /// Bytes per second over the last second.
    pub bw_bytes_last_second: f64,
}

/// What a background run has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct LiveProgress {
    /// Seconds since it started.
    pub elapsed: f64,
    /// Reads.
    pub read: LiveDirection,
    /// Writes.
    pub write: LiveDirection,
}

impl Default for LiveTotals {
    fn default() -> Self {
        LiveTotals {
            started: Instant::now(),
            samples: Mutex::new(VecDeque::new()),
        }
    }
}

impl LiveTotals {
    /// Records the run's summed counters now.
    pub fn record(&self, ios: [u64; 2], bytes: [u64; 2]) {
        let now = Instant::now();
        let mut samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        samples.push_back(Sample {
            at: now,
            ios,
            bytes,
        });
        while samples
            .front()
            .is_some_and(|s| now.duration_since(s.at) > KEEP)
        {
            samples.pop_front();
        }
    }

    /// The figures so far: totals and rates since the start, and rates over
    /// the samples of about the last second.
    pub fn snapshot(&self) -> LiveProgress {
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let elapsed = self.started.elapsed().as_secs_f64();
        let Some(last) = samples.back().copied() else {
            return LiveProgress {
                elapsed,
                ..LiveProgress::default()
            };
        };
        let since = last.at.duration_since(self.started).as_secs_f64();
        // The oldest sample at most a second before the last.
        let base = samples
            .iter()
            .find(|s| last.at.duration_since(s.at) <= Duration::from_secs(1))
            .copied()
            .unwrap_or(last);
        let window = last.at.duration_since(base.at).as_secs_f64();
        let dir = |d: usize| {
            let per = |v: u64, secs: f64| if secs > 0.0 { v as f64 / secs } else { 0.0 };
            LiveDirection {
                ios: last.ios[d],
                bytes: last.bytes[d],
                iops: per(last.ios[d], since),
                bw_bytes: per(last.bytes[d], since),
                iops_last_second: per(last.ios[d].saturating_sub(base.ios[d]), window),
                bw_bytes_last_second: per(last.bytes[d].saturating_sub(base.bytes[d]), window),
            }
        };
        LiveProgress {
            elapsed,
            read: dir(0),
            write: dir(1),
        }
    }
}
