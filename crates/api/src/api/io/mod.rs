//! `io::job`, `io::group` and `io::start`: declarative fio-style jobs run
//! natively inside the run directory — one and waited for, several at once
//! (one fio group), or one in the background behind a [`JobHandle`].

mod background;

pub use background::JobHandle;

use super::clock::Clock;
use super::{ApiError, Capability, Host};
use crate::files::{FileError, FileSpace};
use crate::job::options::job_from_pairs;
use crate::job::spec::JobSpec;
use crate::model::document::{Better, Mark};
use crate::model::result::JobResult;
use crate::model::run::{GroupReport, RunReport};
use crate::runner::{prepare_in, PreparedRun, RunError, RunOptions};
use std::collections::BTreeSet;
use std::time::Instant;

/// The most jobs one `io::group` runs.
pub const MAX_GROUP_JOBS: usize = 64;

/// `io::group`'s options (the WIT record `group-options`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GroupOptions {
    /// One result merged from every job, as fio's `group_reporting`,
    /// instead of one result per job.
    pub group_reporting: bool,
}

impl Host {
    /// Runs one job given as fio `name=value` options; files live in the run directory.
    pub fn job(&mut self, options: Vec<(String, String)>) -> Result<JobResult, ApiError> {
        let job = self.job_spec("io::job", options)?;
        let report = self.run_now("io::job", std::slice::from_ref(&job))?;
        let result = report
            .groups
            .into_iter()
            .next()
            .map(|g| stamped(self.clock(), g))
            .unwrap_or_default();
        self.job_done(&job, result)
    }

    /// Runs several jobs at once, as fio runs the jobs of one group; one
    /// result per job (its clones merged), or one for all of them with
    /// `group_reporting`.
    pub fn group(
        &mut self,
        jobs: Vec<Vec<(String, String)>>,
        options: &GroupOptions,
    ) -> Result<Vec<JobResult>, ApiError> {
        let group_reporting = options.group_reporting;
        if jobs.is_empty() || jobs.len() > MAX_GROUP_JOBS {
            return Err(ApiError::Invalid(format!(
                "io::group: {} jobs; a group has 1 to {MAX_GROUP_JOBS}",
                jobs.len()
            )));
        }
        let mut specs = Vec::with_capacity(jobs.len());
        for (i, options) in jobs.into_iter().enumerate() {
            let mut job = self.job_spec("io::group", options)?;
            // All at once; each job its own reporting group unless merged.
            job.stonewall = false;
            job.new_group = i > 0 && !group_reporting;
            job.group_reporting = group_reporting;
            specs.push(job);
        }
        let names: std::collections::BTreeSet<&str> =
            specs.iter().map(|j| j.name.as_str()).collect();
        if names.len() < specs.len() {
            return Err(ApiError::Invalid(
                "io::group: two jobs have the same name; give each its own".into(),
            ));
        }
        let report = self.run_now("io::group", &specs)?;
        let totals: Vec<JobResult> = report
            .groups
            .into_iter()
            .map(|g| stamped(self.clock(), g))
            .collect();
        if group_reporting {
            let merged = totals.into_iter().next().unwrap_or_default();
            return Ok(vec![self.job_done(&specs[0], merged)?]);
        }
        specs
            .iter()
            .zip(totals)
            .map(|(job, result)| self.job_done(job, result))
            .collect()
    }

    /// A job's options as a job: refused options, capabilities, and the
    /// runtime capped at the time left.
    fn job_spec(&self, op: &str, options: Vec<(String, String)>) -> Result<JobSpec, ApiError> {
        if let Some((k, _)) = options
            .iter()
            .find(|(k, _)| plumb_io::job::options::WRITES_HOST_FILES.contains(&k.as_str()))
        {
            return Err(ApiError::Invalid(format!(
                "{op}: option '{k}' is not allowed in scenarios: it writes files outside the run directory (use report:: for results)"
            )));
        }
        let mut job =
            job_from_pairs(options).map_err(|e| ApiError::Invalid(format!("{op}: {e}")))?;
        if job.direct {
            self.allow(Capability::DirectIo)?;
        }
        if job.runtime.is_none_or(|r| r > self.time_left()) {
            job.runtime = Some(self.time_left());
        }
        Ok(job)
    }

    /// The run directory as the space job files are planned in: every
    /// name is resolved beneath its descriptor (escapes, FIFOs and devices
    /// are refused there).
    fn job_space(&self, op: &str) -> Result<FileSpace, ApiError> {
        FileSpace::sandboxed(self.run_dir()).map_err(|source| ApiError::Os {
            op: format!("{op}: run directory"),
            source,
        })
    }

    /// Plans `jobs` in `space`, checks the threads they add to what runs
    /// already and charges the bytes their layout writes.
    fn admit<'a>(
        &mut self,
        op: &'static str,
        jobs: &'a [JobSpec],
        space: &'a FileSpace,
    ) -> Result<PreparedRun<'a>, ApiError> {
        let threads = jobs.iter().fold(0u32, |n, j| n.saturating_add(j.numjobs));
        self.allow(Capability::Threads(threads))?;
        let prepared =
            prepare_in(jobs, false, space).map_err(|RunError::Files(e)| file_err(op, e))?;
        self.charge(op, prepared.bytes_to_lay_out())?;
        Ok(prepared)
    }

    /// Runs `jobs` on this thread until they end.
    fn run_now(&mut self, op: &'static str, jobs: &[JobSpec]) -> Result<RunReport, ApiError> {
        let space = self.job_space(op)?;
        let prepared = self.admit(op, jobs, &space)?;
        let opts = RunOptions {
            progress: true,
            stop: self.stop_flag().clone(),
            activity: Some(self.activity.clone()),
            metrics: self.metrics.clone(),
            ..RunOptions::default()
        };
        let report = prepared
            .with_deadline(Instant::now() + self.time_left())
            .run(&opts)
            .map_err(|RunError::Files(e)| self.run_err(op, e))?;
        if let Err(stopped) = self.check() {
            self.keep_partial(op, report);
            return Err(stopped);
        }
        Ok(report)
    }

    /// What jobs a stop cut short (Ctrl-C, the deadline) measured until
    /// then, as fio prints its statistics when interrupted: each job's
    /// result is kept in the scenario's report, with its usual figures per
    /// direction as metrics marked partial (`JOB.read_iops`, `_bw`,
    /// `_lat_mean`, `_lat_p99`) and a note saying how long it ran. The
    /// scenario's own code after the job never runs, so these are the only
    /// figures it has. What the report has no room for is left out: the
    /// stop is what the scenario ends with.
    fn keep_partial(&mut self, op: &'static str, report: RunReport) {
        let clock = self.clock();
        for g in report.groups {
            let r = stamped(clock, g);
            let measured = [("read", &r.read), ("write", &r.write)]
                .into_iter()
                .filter(|(_, d)| d.total_ios > 0);
            let mut any = false;
            for (dir, d) in measured {
                any = true;
                let figures = [
                    ("iops", d.iops, "IOPS", Better::Higher),
                    ("bw", d.bw_bytes as f64, "bytes/s", Better::Higher),
                    ("lat_mean", d.lat.mean / 1000.0, "us", Better::Lower),
                    ("lat_p99", d.lat.p99 as f64 / 1000.0, "us", Better::Lower),
                ];
                for (what, value, unit, better) in figures {
                    let name = format!("{}.{dir}_{what}", r.name);
                    let marks = BTreeSet::from([Mark::Partial]);
                    let _ = self.metric(&name, value, unit, better, marks);
                }
            }
            if !any {
                continue;
            }
            let _ = self.note(&format!(
                "{op} '{}' was stopped after {:.1} s: its figures are partial",
                r.name,
                r.runtime_ms as f64 / 1000.0
            ));
            self.report.job_or_keep_refusal(op, r);
        }
    }

    /// A run's error as the scenario sees it.
    fn run_err(&self, op: &'static str, e: FileError) -> ApiError {
        run_error(op, self.limits.timeout, e)
    }

    /// A finished job's result: an error if it failed, else recorded in
    /// the scenario's report and returned.
    fn job_done(&mut self, job: &JobSpec, result: JobResult) -> Result<JobResult, ApiError> {
        let result = succeeded("io::job", &job.name, result)?;
        if !job.create_only {
            self.report.job("io::job", result.clone())?;
        }
        Ok(result)
    }
}

/// A group's merged result with its start and end on the scenario's clock.
fn stamped(clock: Clock, g: GroupReport) -> JobResult {
    let mut r = g.total;
    if let Some(from) = g.measured_from {
        let start = clock.at(from);
        r.started_s = Some(start);
        r.ended_s = Some(start + r.runtime_ms as f64 / 1000.0);
    }
    r
}

/// A job's result, or the error it ended with (named after `op` and the job).
fn succeeded(op: &'static str, name: &str, result: JobResult) -> Result<JobResult, ApiError> {
    match &result.error {
        Some(e) => Err(ApiError::Failed {
            op,
            message: format!("'{name}' failed: {e}"),
        }),
        None => Ok(result),
    }
}

/// A run's error as a scenario whose deadline is `timeout` sees it.
fn run_error(op: &'static str, timeout: std::time::Duration, e: FileError) -> ApiError {
    match e {
        FileError::Deadline => ApiError::Deadline(timeout),
        e => file_err(op, e),
    }
}

fn file_err(op: &str, e: FileError) -> ApiError {
    match e {
        FileError::Interrupted => ApiError::Interrupted,
        other => ApiError::Invalid(format!("{op}: {other}")),
    }
}
