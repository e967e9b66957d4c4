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
        Self::of(results.iter().map(|r| r.dir(dir)))
    }

    /// The span of the entries' figures `dirs` in one direction (fio's
    /// `mixed` too), or `None` when none moved a byte.
    pub fn of<'a>(dirs: impl Iterator<Item = &'a DirResult>) -> Option<DirSpan> {
        let active: Vec<&DirResult> = dirs.filter(|d| d.io_bytes > 0).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A result that moved `bytes` in direction `dir` at `bw` bytes/s in `ms`.
    fn moved(dir: usize, bytes: u64, bw: u64, ms: u64) -> JobResult {
        let mut r = JobResult::default();
        let d = if dir == 0 { &mut r.read } else { &mut r.write };
        d.io_bytes = bytes;
        d.bw_bytes = bw;
        d.runtime_ms = ms;
        d.total_ios = 1;
        r
    }

    #[test]
    fn a_direction_spans_only_the_entries_that_moved_bytes_in_it() {
        let results = [
            moved(0, 16 << 20, 2_000 << 20, 8),
            moved(1, 16 << 20, 5_000 << 20, 3),
        ];
        let read = DirSpan::over(&results, 0).unwrap();
        assert_eq!(read.bw_bytes, (2_000 << 20, 2_000 << 20));
        assert_eq!(read.runtime_ms, (8, 8));
        assert_eq!(read.io_bytes, 16 << 20);
        assert_eq!(read.aggregate_bw_bytes, 2_000 << 20);
        let write = DirSpan::over(&results, 1).unwrap();
        assert_eq!(write.bw_bytes, (5_000 << 20, 5_000 << 20));
        assert_eq!(write.runtime_ms, (3, 3));
        assert_eq!(DirSpan::over(&results[..1], 1), None);
    }

    #[test]
    fn the_aggregate_is_all_bytes_over_the_longest_runtime() {
        // 100 MB in 1 s and 100 MB in 2 s: 200 MB over 2 s.
        let results = [
            moved(0, 100_000_000, 100_000_000, 1000),
            moved(0, 100_000_000, 50_000_000, 2000),
        ];
        let span = DirSpan::over(&results, 0).unwrap();
        assert_eq!(span.aggregate_bw_bytes, 100_000_000);
        assert_eq!(span.bw_bytes, (50_000_000, 100_000_000));
        assert_eq!(span.runtime_ms, (1000, 2000));
        // Bytes without a measurable runtime give no rate, and no overflow.
        let huge = [moved(0, u64::MAX, 0, 0), moved(0, u64::MAX, 0, 0)];
        let span = DirSpan::over(&huge, 0).unwrap();
        assert_eq!(span.io_bytes, u64::MAX);
        assert_eq!(span.aggregate_bw_bytes, 0);
    }
}
