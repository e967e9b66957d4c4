//! What one run of jobs produced, as renderers and the scenario API read it:
//! per reporting group, each job's result and the group's merged total, and
//! what the devices under the files did.

use crate::model::result::{DirResult, JobResult};
use crate::stats::DiskUtil;
use std::time::SystemTime;

/// The results of one reporting group.
#[derive(Debug, Clone)]
pub struct GroupReport {
    /// Group number (fio's `groupid`).
    pub id: u32,
    /// One entry per job thread, or one for the whole group with `group_reporting`.
    pub results: Vec<JobResult>,
    /// Every job of the group merged (fio's "Run status group" line).
    pub total: JobResult,
    /// Per direction (read, write): the spread of the reported entries that
    /// did I/O in it (fio's "Run status" line); `None` when none did.
    pub spans: [Option<DirSpan>; 2],
    /// When the group's measured phase began (its timelines' zero).
    pub measured_from: Option<std::time::Instant>,
}

/// One direction of a group's "Run status" line. As fio's
/// (`show_run_stats`), the minimum and maximum are taken only over the
/// reported entries (threads, or the group's total with
/// `group_reporting`) that moved bytes in this direction: a job that only
/// writes does not make the READ line's minimum 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirSpan {
    /// Bytes moved in this direction by the whole group.
    pub io_bytes: u64,
    /// The group's bandwidth: its bytes over its longest runtime (bytes/s).
    pub aggregate_bw_bytes: u64,
    /// Lowest and highest bandwidth of one entry (bytes/s).
    pub bw_bytes: (u64, u64),
    /// Shortest and longest runtime of one entry (ms).
    pub runtime_ms: (u64, u64),
}

impl DirSpan {
    /// The span of direction `dir` (0 read, 1 write) over `results`, or
    /// `None` when no entry moved a byte in it.
    pub fn over(results: &[JobResult], dir: usize) -> Option<DirSpan> {
        let active: Vec<&DirResult> = results
            .iter()
            .map(|r| r.dir(dir))
            .filter(|d| d.io_bytes > 0)
            .collect();
        let bw = active.iter().map(|d| d.bw_bytes);
        let run = active.iter().map(|d| d.runtime_ms);
        let io_bytes = active
            .iter()
            .fold(0u64, |sum, d| sum.saturating_add(d.io_bytes));
        Some(DirSpan {
            io_bytes,
            aggregate_bw_bytes: aggregate_bw(io_bytes, &active),
            bw_bytes: (bw.clone().min()?, bw.max()?),
            runtime_ms: (run.clone().min()?, run.max()?),
        })
    }
}

/// fio's `agg`: all bytes over the longest runtime among `active`. The
/// runtime is taken exactly from each entry's own bytes and bandwidth, not
/// from its whole milliseconds, so one entry's aggregate is its own
/// bandwidth. 0 when no entry has a measurable runtime.
fn aggregate_bw(io_bytes: u64, active: &[&DirResult]) -> u64 {
    let longest_s = active
        .iter()
        .filter(|d| d.bw_bytes > 0)
        .map(|d| d.io_bytes as f64 / d.bw_bytes as f64)
        .fold(0.0, f64::max);
    if longest_s > 0.0 {
        // A float to integer cast saturates.
        (io_bytes as f64 / longest_s) as u64
    } else {
        0
    }
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Reporting groups, in the order their first job appears.
    pub groups: Vec<GroupReport>,
    /// True when a stop was requested before the jobs ended.
    pub interrupted: bool,
    /// When the run started (before the layout).
    pub started: SystemTime,
    /// When the run ended (after the last set, its `unlink` files removed).
    pub finished: SystemTime,
    /// What the devices under the jobs' files did during the run.
    pub disk_util: Vec<DiskUtil>,
}

impl RunReport {
    /// All reported job entries in order.
    pub fn results(&self) -> impl Iterator<Item = &JobResult> {
        self.groups.iter().flat_map(|g| g.results.iter())
    }

    /// True when any job failed (I/O error or verify failure).
    pub fn failed(&self) -> bool {
        self.results().any(|r| r.error.is_some())
    }
}
