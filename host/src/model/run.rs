//! What one run of jobs produced, as renderers and the scenario API read it:
//! per reporting group, each job's result and the group's merged total, and
//! what the devices under the files did.

use crate::model::result::JobResult;
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
    /// Smallest and largest runtime in ms among the group's threads.
    pub runtime_range_ms: (u64, u64),
    /// Per-thread bandwidth range per direction (bytes/s).
    pub bw_range: [(u64, u64); 2],
    /// When the group's measured phase began (its timelines' zero).
    pub measured_from: Option<std::time::Instant>,
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
