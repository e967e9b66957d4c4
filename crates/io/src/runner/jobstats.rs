//! Raw statistics of a job thread, mergeable across clones and groups, and
//! their summary into a [`JobResult`].

use crate::job::spec::{JobSpec, UnifiedReporting};
use crate::model::result::{
    ContinuedErrors, DirResult, JobResult, SyncResult, BATCH_LABELS, DEPTH_LABELS,
};
use crate::stats::{coarsen, interval_of, CpuUsage, LatencyRecorder, TimelinePoint, COARSE_MS};
use std::collections::BTreeMap;
use std::time::Duration;

/// What one direction did.
#[derive(Debug, Clone, Default)]
pub struct DirStats {
    /// Completion latency: from issue (submit returned) to completion (fio's clat).
    pub clat: LatencyRecorder,
    /// Submission latency: from queueing to issue (fio's slat).
    pub slat: LatencyRecorder,
    /// Total latency: from queueing to completion (fio's lat).
    pub lat: LatencyRecorder,
    /// Bytes moved.
    pub bytes: u64,
    /// I/Os completed.
    pub ios: u64,
    /// Short I/Os.
    pub short: u64,
}

/// Everything a job thread (or a merge of them) measured.
#[derive(Debug, Clone, Default)]
pub struct JobStats {
    /// Reads and writes.
    pub dirs: [DirStats; 2],
    /// fsync/fdatasync latencies.
    pub sync: LatencyRecorder,
    /// Longest runtime among merged threads.
    pub runtime: Duration,
    /// Sum of merged threads' runtimes (the base of CPU percentages).
    pub runtime_sum: Duration,
    /// CPU used.
    pub cpu: CpuUsage,
    /// Per-interval figures (seconds, or tenths in a short job), summed
    /// across merged threads.
    pub timeline: Vec<TimelinePoint>,
    /// When the measured phase began (the timeline's zero): the earliest
    /// among merged threads.
    pub measured_from: Option<std::time::Instant>,
    /// Threads merged.
    pub threads: u32,
    /// I/Os issued at each queue depth bucket (1, 2, 4, 8, 16, 32, >=64), as fio.
    pub depth_counts: [u64; 7],
    /// Submissions by how many I/Os each handed to the kernel, in fio's
    /// buckets (0, 1–4, 5–8, 9–16, 17–32, 33–64, more): [`batch_bucket`].
    pub submit_counts: [u64; 7],
    /// Reaps by how many completions each returned, in the same buckets.
    pub complete_counts: [u64; 7],
    /// Blocks verified.
    pub verified: u64,
    /// Blocks that failed verification.
    pub verify_errors: u64,
    /// What steady state came to (`ss=`), from the clone that sampled it.
    pub steady: Option<crate::model::result::SteadyOutcome>,
    /// errno of the first error.
    pub errno: i32,
    /// First error message.
    pub error: Option<String>,
    /// Errors the job went on after (`continue_on_error`).
    pub total_err: u64,
    /// errno of the first of them.
    pub first_error: i32,
    /// When the job's I/O began (after `startdelay` and `wait_for`): the
    /// earliest among merged threads.
    pub job_start: Option<std::time::SystemTime>,
}

impl JobStats {
    /// Counts an I/O the engine completed inside `queue` (a synchronous
    /// engine): issued at depth 1, submitted and reaped alone, as fio
    /// counts an engine without a commit hook.
    pub fn count_inline_io(&mut self) {
        self.depth_counts[depth_bucket(1)] += 1;
        self.submit_counts[batch_bucket(1)] += 1;
        self.complete_counts[batch_bucket(1)] += 1;
    }

    /// Adds another thread's statistics.
    pub fn merge(&mut self, other: &JobStats) {
        for (a, b) in self.dirs.iter_mut().zip(&other.dirs) {
            a.clat.merge(&b.clat);
            a.slat.merge(&b.slat);
            a.lat.merge(&b.lat);
            a.bytes += b.bytes;
            a.ios += b.ios;
            a.short += b.short;
        }
        self.sync.merge(&other.sync);
        self.runtime = self.runtime.max(other.runtime);
        self.measured_from = match (self.measured_from, other.measured_from) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.runtime_sum += other.runtime_sum;
        self.cpu = self.cpu.add(&other.cpu);
        // Threads that ran for different lengths of time may keep
        // intervals of different lengths: summed into the longer one.
        let mut theirs = std::borrow::Cow::Borrowed(&other.timeline);
        let (mine, other_interval) = (interval_of(&self.timeline), interval_of(&other.timeline));
        if self.timeline.is_empty() {
            // Nothing to merge with yet: take theirs as it is.
        } else if mine < other_interval {
            self.timeline = coarsen(&self.timeline, other_interval);
        } else if other_interval < mine {
            theirs = std::borrow::Cow::Owned(coarsen(&other.timeline, mine));
        }
        if self.timeline.len() < theirs.len() {
            self.timeline.resize(theirs.len(), TimelinePoint::default());
        }
        for (a, b) in self.timeline.iter_mut().zip(theirs.iter()) {
            a.t_ms = b.t_ms;
            a.duration_ms = a.duration_ms.max(b.duration_ms);
            a.read_ios += b.read_ios;
            a.read_bytes += b.read_bytes;
            a.write_ios += b.write_ios;
            a.write_bytes += b.write_bytes;
        }
        // An interval is partial when every thread's was: the flag is
        // kept from the longest, not lost where one thread had no point.
        let interval = interval_of(&self.timeline);
        for a in &mut self.timeline {
            a.partial = a.duration_ms < interval;
        }
        self.threads += other.threads;
        add_counts(&mut self.depth_counts, &other.depth_counts);
        add_counts(&mut self.submit_counts, &other.submit_counts);
        add_counts(&mut self.complete_counts, &other.complete_counts);
        self.verified += other.verified;
        self.verify_errors += other.verify_errors;
        if self.steady.is_none() {
            self.steady = other.steady.clone();
        }
        self.total_err += other.total_err;
        if self.first_error == 0 {
            self.first_error = other.first_error;
        }
        self.job_start = match (self.job_start, other.job_start) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if self.error.is_none() {
            self.error.clone_from(&other.error);
            self.errno = other.errno;
        }
    }

    /// Reads and writes as one direction (fio's `mixed`).
    fn mixed(&self) -> DirStats {
        let mut m = self.dirs[0].clone();
        let w = &self.dirs[1];
        m.clat.merge(&w.clat);
        m.slat.merge(&w.slat);
        m.lat.merge(&w.lat);
        m.bytes += w.bytes;
        m.ios += w.ios;
        m.short += w.short;
        m
    }

    /// Summarises into the result kept and printed.
    pub fn to_result(&self, job: &JobSpec, groupid: u32) -> JobResult {
        let runtime_ms = self.runtime.as_millis() as u64;
        let secs = self.runtime.as_secs_f64();
        let seconds = coarsen(&self.timeline, COARSE_MS);
        // A direction's figures; `dirs` are the timeline's directions its
        // per-second samples sum (both for fio's `mixed`).
        let dir_of = |d: &DirStats, dirs: &[usize]| -> DirResult {
            // fio's per-second samples, whatever the timeline's interval.
            let full: Vec<TimelinePoint> = seconds
                .iter()
                .filter(|p| p.duration_ms >= COARSE_MS)
                .cloned()
                .collect();
            let (iops_s, bw_s): (Vec<f64>, Vec<f64>) = full
                .iter()
                .map(|p| {
                    dirs.iter()
                        .fold((0.0, 0.0), |(i, b), &k| (i + p.iops(k), b + p.bw_bytes(k)))
                })
                .unzip();
            let (iops_min, iops_max, iops_mean, iops_stddev) = spread(&iops_s);
            let (bw_min, bw_max, bw_mean, bw_stddev) = spread(&bw_s);
            DirResult {
                io_bytes: d.bytes,
                bw_bytes: if secs > 0.0 {
                    (d.bytes as f64 / secs) as u64
                } else {
                    0
                },
                iops: if secs > 0.0 { d.ios as f64 / secs } else { 0.0 },
                runtime_ms: if d.ios > 0 { runtime_ms } else { 0 },
                total_ios: d.ios,
                short_ios: d.short,
                lat: d.clat.summary(),
                slat: d.slat.summary(),
                total_lat: d.lat.summary(),
                iops_min,
                iops_max,
                iops_mean,
                iops_stddev,
                bw_min,
                bw_max,
                bw_mean,
                bw_stddev,
                samples: iops_s.len() as u64,
            }
        };
        let base = self.runtime_sum.as_secs_f64();
        let pct = |d: Duration| {
            if base > 0.0 {
                d.as_secs_f64() / base * 100.0
            } else {
                0.0
            }
        };
        let mut all_lat = self.dirs[0].lat.clone();
        all_lat.merge(&self.dirs[1].lat);
        JobResult {
            iodepth_level: distribution(&DEPTH_LABELS, &self.depth_counts),
            iodepth_submit: distribution(&BATCH_LABELS, &self.submit_counts),
            iodepth_complete: distribution(&BATCH_LABELS, &self.complete_counts),
            latency_ns: lat_buckets(&all_lat, 1, &NS_US_EDGES, None),
            latency_us: lat_buckets(&all_lat, 1_000, &NS_US_EDGES, None),
            latency_ms: lat_buckets(&all_lat, 1_000_000, &MS_EDGES, Some(">=2000")),
            name: job.name.clone(),
            groupid,
            jobs: self.threads,
            ioengine: job.ioengine.clone(),
            rw: job.rw.name().to_string(),
            iodepth: job.iodepth,
            read: dir_of(&self.dirs[0], &[0]),
            write: dir_of(&self.dirs[1], &[1]),
            mixed: (job.pattern.unified_rw_reporting != UnifiedReporting::None)
                .then(|| dir_of(&self.mixed(), &[0, 1])),
            mixed_only: job.pattern.unified_rw_reporting == UnifiedReporting::Mixed,
            sync: SyncResult {
                total_ios: self.sync.count(),
                lat: self.sync.summary(),
            },
            usr_cpu: pct(self.cpu.user),
            sys_cpu: pct(self.cpu.system),
            cpu_seconds: (self.cpu.user + self.cpu.system).as_secs_f64(),
            ctx: self.cpu.ctx_switches,
            majf: self.cpu.major_faults,
            minf: self.cpu.minor_faults,
            runtime_ms,
            verified_blocks: self.verified,
            verify_errors: self.verify_errors,
            steadystate: self.steady.clone(),
            // fio: a job that went on after errors reports the first.
            errno: if self.errno == 0 && job.pacing.continues_on_error() {
                self.first_error
            } else {
                self.errno
            },
            error: self.error.clone(),
            job_start_ms: self
                .job_start
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as u64),
            continued_errors: job.pacing.continues_on_error().then_some(ContinuedErrors {
                total: self.total_err,
                first_errno: self.first_error,
            }),
            timeline: self.timeline.clone(),
            // Set by the scenario API, which knows the scenario's clock.
            started_s: None,
            ended_s: None,
            case: None,
            repeat: None,
            options: job.given.iter().cloned().collect(),
        }
    }
}

/// The bucket index of a batch of `n` I/Os submitted or reaped at once,
/// as fio's `io_u_mark_submit` and `io_u_mark_complete`.
#[inline]
pub fn batch_bucket(n: usize) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// Adds each bucket count of `other` to `sum` (saturating).
fn add_counts(sum: &mut [u64; 7], other: &[u64; 7]) {
    for (a, b) in sum.iter_mut().zip(other) {
        *a = a.saturating_add(*b);
    }
}

/// Percent of the total per bucket, as fio's `stat_calc_dist`: a bucket
/// that holds anything shows at least 0.1%, and all are 0 when nothing was
/// counted.
fn distribution(labels: &[&str; 7], counts: &[u64; 7]) -> BTreeMap<String, f64> {
    let total = counts.iter().fold(0u64, |sum, n| sum.saturating_add(*n));
    labels
        .iter()
        .zip(counts)
        .map(|(label, &n)| {
            let percent = if total == 0 {
                0.0
            } else if n > 0 {
                (n as f64 * 100.0 / total as f64).max(0.1)
            } else {
                0.0
            };
            (label.to_string(), percent)
        })
        .collect()
}

/// The bucket index of a queue depth, as fio's `io_u_mark_depth`.
#[inline]
pub fn depth_bucket(depth: u32) -> usize {
    match depth {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

const NS_US_EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
const MS_EDGES: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

/// Percent of I/Os per latency bucket in `unit_ns` units, keyed like fio's
/// `latency_us` (the bucket ending at each edge; `>=2000` for the tail).
fn lat_buckets(
    l: &LatencyRecorder,
    unit_ns: u64,
    edges: &[u64],
    tail: Option<&str>,
) -> BTreeMap<String, f64> {
    // Bucket i holds (edge[i-1], edge[i]] in this unit; below the first edge
    // belongs to the finer unit's table except for the nanosecond table.
    let ns_edges: Vec<u64> = std::iter::once(if unit_ns == 1 { 0 } else { unit_ns })
        .chain(edges.iter().map(|e| e * unit_ns))
        .collect();
    let shares = l.bucket_shares(&ns_edges);
    let mut out: std::collections::BTreeMap<String, f64> = edges
        .iter()
        .zip(&shares[1..])
        .map(|(e, s)| (e.to_string(), s * 100.0))
        .collect();
    if let Some(t) = tail {
        out.insert(t.to_string(), shares[edges.len() + 1] * 100.0);
    }
    out
}

/// Min, max, mean and sample standard deviation.
fn spread(v: &[f64]) -> (f64, f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min, max, mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_fall_in_fios_buckets() {
        let edges = [(0, 0), (1, 1), (4, 1), (5, 2), (8, 2), (9, 3), (16, 3)];
        let more = [(17, 4), (32, 4), (33, 5), (64, 5), (65, 6), (usize::MAX, 6)];
        for (n, bucket) in edges.into_iter().chain(more) {
            assert_eq!(batch_bucket(n), bucket, "a batch of {n}");
        }
    }

    #[test]
    fn a_synchronous_io_is_one_submit_and_one_reap_of_one() {
        let mut stats = JobStats::default();
        stats.count_inline_io();
        stats.count_inline_io();
        let submit = distribution(&BATCH_LABELS, &stats.submit_counts);
        assert_eq!(submit["4"], 100.0);
        assert_eq!(submit["0"], 0.0);
        let complete = distribution(&BATCH_LABELS, &stats.complete_counts);
        assert_eq!(complete["4"], 100.0);
        assert_eq!(distribution(&DEPTH_LABELS, &stats.depth_counts)["1"], 100.0);
    }

    #[test]
    fn a_rare_bucket_shows_at_least_a_tenth_of_a_percent() {
        let d = distribution(&BATCH_LABELS, &[0, 9_999, 0, 1, 0, 0, 0]);
        assert_eq!(d["16"], 0.1);
        assert!((d["4"] - 99.99).abs() < 1e-9);
        let none = distribution(&BATCH_LABELS, &[0; 7]);
        assert!(none.values().all(|v| *v == 0.0));
        let full = distribution(&BATCH_LABELS, &[u64::MAX; 7]);
        assert!(full.values().all(|v| v.is_finite()));
    }
}
