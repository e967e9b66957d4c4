//! Live totals of background work for whoever started it: for a job, the
//! runner's watcher publishes the summed counters of every job thread every
//! 50 ms (and their latency buckets every 200 ms); other work (a copy, a
//! CPU kernel, a network test) adds to a [`Meter`](plumb_base::meter::Meter) that its task samples as
//! often. [`LiveTotals::snapshot`] turns either into figures since the
//! start and over the last second.

use super::worker::LiveCounters;
use crate::metrics::{JobFigures, Latency};
use crate::stats::live_latency::{LivePercentiles, BUCKETS};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How far back samples are kept: enough for "the last second".
const KEEP: Duration = Duration::from_millis(1500);

/// How often latency buckets are kept with a sample (they are large).
const LATENCY_EVERY: Duration = Duration::from_millis(200);

/// The live counters of a run, shared with its starter.
#[derive(Debug)]
pub struct LiveTotals {
    started: Instant,
    samples: Mutex<VecDeque<Sample>>,
}

#[derive(Debug, Clone)]
struct Sample {
    at: Instant,
    ios: [u64; 2],
    bytes: [u64; 2],
    /// Cumulative latency bucket counts per direction, on some samples.
    latency: Option<Box<[Vec<u64>; 2]>>,
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
    /// Completion latency percentiles since the start (jobs only).
    pub latency: Option<LivePercentiles>,
    /// Completion latency percentiles over about the last second (jobs only).
    pub latency_last_second: Option<LivePercentiles>,
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
        self.push(ios, bytes, None::<fn(usize, &mut [u64])>);
    }

    /// Records the run's summed counters now, and its latency buckets when
    /// the last ones kept are old enough: `fill(direction, sums)` adds the
    /// counts of every thread to `sums`.
    pub fn record_with_latency(
        &self,
        ios: [u64; 2],
        bytes: [u64; 2],
        fill: impl Fn(usize, &mut [u64]),
    ) {
        self.push(ios, bytes, Some(fill));
    }

    fn push(&self, ios: [u64; 2], bytes: [u64; 2], fill: Option<impl Fn(usize, &mut [u64])>) {
        let now = Instant::now();
        let mut samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let due = samples
            .iter()
            .rev()
            .find(|s| s.latency.is_some())
            .is_none_or(|s| now.duration_since(s.at) >= LATENCY_EVERY);
        let latency = fill.filter(|_| due).map(|fill| {
            Box::new([0, 1].map(|d| {
                let mut sums = vec![0u64; BUCKETS];
                fill(d, &mut sums);
                sums
            }))
        });
        samples.push_back(Sample {
            at: now,
            ios,
            bytes,
            latency,
        });
        // Keep the last latency sample however old, and the samples of the
        // last KEEP.
        while samples.len() > 1
            && samples
                .front()
                .is_some_and(|s| now.duration_since(s.at) > KEEP)
            && (samples[0].latency.is_none() || samples.iter().skip(1).any(|s| s.latency.is_some()))
        {
            samples.pop_front();
        }
    }

    /// The figures so far: totals and rates since the start, and rates over
    /// the samples of about the last second.
    pub fn snapshot(&self) -> LiveProgress {
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let elapsed = self.started.elapsed().as_secs_f64();
        let Some(last) = samples.back() else {
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
            .unwrap_or(last);
        // Latency: the newest buckets, and the oldest within about a second
        // before them.
        let newest = samples
            .iter()
            .rev()
            .find_map(|s| Some((s.at, s.latency.as_ref()?)));
        // The base: the oldest within 1.1 s of the newest; else (the watcher
        // stalled) the newest one before it; else — a run younger than its
        // first set of buckets — zeros, its whole life being its last second.
        let zeros = [vec![0u64; BUCKETS], vec![0u64; BUCKETS]];
        let older = newest.map(|(at, _)| {
            let before = || samples.iter().filter(|s| s.at < at);
            before()
                .filter(|s| at.duration_since(s.at) <= Duration::from_millis(1100))
                .find_map(|s| s.latency.as_deref())
                .or_else(|| before().filter_map(|s| s.latency.as_deref()).next_back())
                .unwrap_or(&zeros)
        });
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
                latency: newest.map(|(_, n)| LivePercentiles::of(&n[d])),
                latency_last_second: newest.zip(older).map(|((_, n), o)| {
                    let recent: Vec<u64> = n[d]
                        .iter()
                        .zip(&o[d])
                        .map(|(a, b)| a.saturating_sub(*b))
                        .collect();
                    LivePercentiles::of(&recent)
                }),
            }
        };
        LiveProgress {
            elapsed,
            read: dir(0),
            write: dir(1),
        }
    }
}

/// A job's figures for `/metrics` from its clones' live counters: I/Os and
/// bytes summed, and the latency buckets when the clones keep them.
pub fn figures_of(clones: &[LiveCounters]) -> JobFigures {
    let mut f = JobFigures::default();
    let mut sums = vec![0u64; BUCKETS];
    for d in 0..2 {
        sums.fill(0);
        let mut sum_ns = 0u64;
        for c in clones {
            f.ios[d] = f.ios[d].saturating_add(c.ios[d].load(Ordering::Relaxed));
            f.bytes[d] = f.bytes[d].saturating_add(c.bytes[d].load(Ordering::Relaxed));
            if let Some(l) = &c.latency {
                l[d].add_to(&mut sums);
                sum_ns = sum_ns.saturating_add(l[d].sum_ns());
            }
        }
        f.latency[d] = Latency::from_live(&sums, sum_ns);
    }
    f
}
