//! `JobResult`: what a job did, with fio's numbers and fio's meaning.
//!
//! Built once from the runner's statistics; every output format (fio's text,
//! fio's JSON, plumb's result file) renders from it.

use crate::stats::{LatencySummary, TimelinePoint};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Figures for one direction (`read` or `write`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DirResult {
    /// Bytes transferred.
    pub io_bytes: u64,
    /// Bytes per second over the runtime.
    pub bw_bytes: u64,
    /// I/Os per second over the runtime.
    pub iops: f64,
    /// Runtime in milliseconds.
    pub runtime_ms: u64,
    /// I/Os completed.
    pub total_ios: u64,
    /// I/Os that moved fewer bytes than asked.
    pub short_ios: u64,
    /// Completion latency in ns, from issue to completion (fio's `clat`).
    pub lat: LatencySummary,
    /// Submission latency in ns, from queueing to issue (fio's `slat`).
    pub slat: LatencySummary,
    /// Total latency in ns, from queueing to completion (fio's `lat`).
    pub total_lat: LatencySummary,
    /// Per-second IOPS samples: smallest.
    pub iops_min: f64,
    /// Per-second IOPS samples: largest.
    pub iops_max: f64,
    /// Per-second IOPS samples: mean.
    pub iops_mean: f64,
    /// Per-second IOPS samples: standard deviation.
    pub iops_stddev: f64,
    /// Per-second bandwidth samples in bytes/s: smallest.
    pub bw_min: f64,
    /// Per-second bandwidth samples in bytes/s: largest.
    pub bw_max: f64,
    /// Per-second bandwidth samples in bytes/s: mean.
    pub bw_mean: f64,
    /// Per-second bandwidth samples in bytes/s: standard deviation.
    pub bw_stddev: f64,
    /// Number of per-second samples.
    pub samples: u64,
}

/// fsync/fdatasync calls made by the job.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SyncResult {
    /// Number of syncs.
    pub total_ios: u64,
    /// Their latency in ns.
    pub lat: LatencySummary,
}

/// What steady state came to, for fio's `steadystate` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyOutcome {
    /// The criterion as fio writes it (`iops:10.000000%`).
    pub ss: String,
    /// The window in seconds.
    pub duration: u64,
    /// True once attained.
    pub attained: bool,
    /// The window's figure against the bound (a percentage of the mean for
    /// a percentage bound).
    pub criterion: String,
    /// Largest deviation from the mean (not slope criteria).
    pub max_deviation: f64,
    /// Slope of the least-squares line per sample (slope criteria).
    pub slope: f64,
    /// Mean bandwidth over the window, bytes/s.
    pub bw_mean: u64,
    /// Mean IOPS over the window.
    pub iops_mean: u64,
    /// The window's IOPS samples.
    pub iops: Vec<u64>,
    /// The window's bandwidth samples, bytes/s.
    pub bw: Vec<u64>,
}

/// The result of one job (or of a group of clones reported together).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct JobResult {
    /// The job's name.
    pub name: String,
    /// Reporting group.
    pub groupid: u32,
    /// Threads whose figures are summed here.
    pub jobs: u32,
    /// Engine used.
    pub ioengine: String,
    /// Pattern (`randrw`, …).
    pub rw: String,
    /// I/Os in flight.
    pub iodepth: u32,
    /// The read direction's figures (zero when the job did not read).
    pub read: DirResult,
    /// The write direction's figures (zero when the job did not write).
    pub write: DirResult,
    /// fsync/fdatasync calls the job issued, and their latency.
    pub sync: SyncResult,
    /// User CPU as a percentage of the runtime (averaged over threads, as fio).
    pub usr_cpu: f64,
    /// System CPU as a percentage of the runtime.
    pub sys_cpu: f64,
    /// CPU seconds used (user + system), summed over threads.
    pub cpu_seconds: f64,
    /// Context switches.
    pub ctx: u64,
    /// Major page faults.
    pub majf: u64,
    /// Minor page faults.
    pub minf: u64,
    /// Runtime in milliseconds.
    pub runtime_ms: u64,
    /// Blocks checked by verify.
    pub verified_blocks: u64,
    /// Blocks that failed verify.
    pub verify_errors: u64,
    /// errno of the first failure, 0 when none (fio's `error`).
    pub errno: i32,
    /// What went wrong, if anything.
    pub error: Option<String>,
    /// Percent of I/Os issued at each queue depth (fio's `iodepth_level`).
    pub iodepth_level: BTreeMap<String, f64>,
    /// Percent of submissions by how many I/Os each handed to the kernel
    /// (fio's `iodepth_submit`: "4" is 1 to 4, …). A synchronous engine
    /// submits one at a time: all in "4", as in fio.
    #[serde(default)]
    pub iodepth_submit: BTreeMap<String, f64>,
    /// Percent of reaps by how many completions each returned (fio's
    /// `iodepth_complete`, same buckets).
    #[serde(default)]
    pub iodepth_complete: BTreeMap<String, f64>,
    /// Percent of I/Os whose total latency falls in each ns bucket (fio's `latency_ns`).
    pub latency_ns: BTreeMap<String, f64>,
    /// The same in µs buckets (fio's `latency_us`).
    pub latency_us: BTreeMap<String, f64>,
    /// The same in ms buckets (fio's `latency_ms`).
    pub latency_ms: BTreeMap<String, f64>,
    /// I/O per second over the run.
    pub timeline: Vec<TimelinePoint>,
    /// In a scenario: when the measured phase began, in seconds on the
    /// scenario's clock (`time::now()`); the timeline's zero. Results of
    /// jobs run together share the clock, so their timelines align.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_s: Option<f64>,
    /// In a scenario: `started_s` plus the runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_s: Option<f64>,
    /// In a scenario with phases (`report::phase`): the phase the job
    /// started in, which tells apart jobs of one name run in several cases
    /// (interference's `probe` quiet and beside each neighbour). Absent
    /// outside a phase and in documents older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// In a repeated scenario (`--repeat`): which run of it (from 1) the
    /// job belongs to. Absent in documents older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// fio's steady state (`ss=`): what the window came to, and whether
    /// the job stopped because it was attained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<SteadyOutcome>,
    /// When the job's I/O began, in ms since the epoch (fio's `job_start`);
    /// 0 when unknown.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub job_start_ms: u64,
    /// With `continue_on_error`: the errors the job went on after (fio's
    /// `total_err`, with the errno of the first in `first_error`); absent
    /// without it, as in fio's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continued_errors: Option<ContinuedErrors>,
    /// The options as given.
    pub options: BTreeMap<String, String>,
    /// Reads and writes summed as one direction (fio's `mixed`), with
    /// `unified_rw_reporting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixed: Option<DirResult>,
    /// True when `mixed` replaces the directions in fio's outputs
    /// (`unified_rw_reporting=mixed`), false when it joins them (`both`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mixed_only: bool,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// Errors a job went on after (`continue_on_error`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct ContinuedErrors {
    /// How many (fio's `total_err`).
    pub total: u64,
    /// errno of the first, 0 when none (fio's `first_error`).
    pub first_errno: i32,
}

impl JobResult {
    /// The figures of a direction by index (0 read, 1 write).
    pub fn dir(&self, i: usize) -> &DirResult {
        if i == 0 {
            &self.read
        } else {
            &self.write
        }
    }
}

/// fio's queue-depth buckets.
pub const DEPTH_LABELS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];

/// fio's submission and completion batch buckets (`iodepth_submit`,
/// `iodepth_complete`): "4" holds batches of 1 to 4 I/Os, "8" of 5 to 8, …
pub const BATCH_LABELS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];
