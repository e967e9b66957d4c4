//! `io::start`: a job running in the background while the scenario goes on,
//! as a [`Task`] whose result is the job's. Its progress carries live
//! latency percentiles (since the start and over the last second) beside
//! the rates, published by the runner's watcher.

use super::{ApiError, Host};
use crate::api::background::{Task, TaskKind};
use crate::files::FileError;
use crate::model::result::JobResult;
use crate::runner::{prepare_in, RunError, RunOptions};

/// A background job, as scripts and guests hold it.
pub type JobHandle = Task<JobResult>;

impl Host {
    /// Starts a job in the background and returns at once.
    pub fn start_job(&mut self, options: Vec<(String, String)>) -> Result<JobHandle, ApiError> {
        let job = self.job_spec("io::start", options)?;
        self.task_room("io::start", &job.name, job.numjobs)?;
        // The charge is planned in a space of its own, dropped at once: the
        // job's thread plans again in its own space and holds the files it
        // finds from then on (a file this plan found, removed before the
        // thread's plan, is given back and laid out anew, charged).
        let charged = self
            .admit(
                "io::start",
                std::slice::from_ref(&job),
                &self.job_space("io::start")?,
            )?
            .bytes_to_lay_out();
        let space = self.job_space("io::start")?;
        let record: fn(&mut Host, &JobResult) = if job.create_only {
            |_, _| {}
        } else {
            |host, r| host.report.job_or_keep_refusal("io::start", r.clone())
        };
        let kind = TaskKind {
            op: "io::start",
            on_result: record,
            describe: describe_job,
        };
        let timeout = self.limits.timeout;
        let workspace = self.workspace();
        let name = job.name.clone();
        let threads = job.numjobs;
        let metrics = self.metrics.clone();
        let started_task = self.spawn_task(kind, &name, threads, move |ctx| {
            let opts = RunOptions {
                stop: ctx.scenario_stop.clone(),
                stop_this: Some(ctx.stop.clone()),
                live: Some(ctx.live.clone()),
                metrics,
                ..RunOptions::default()
            };
            let jobs = [job];
            let failed = |e: FileError| super::run_error("io::start", timeout, e);
            // Planned again on this thread, which owns its jobs. The files
            // may have changed since the charge (a script that removes them
            // at once): what this plan lays out beyond it is charged now.
            let prepared =
                prepare_in(&jobs, false, &space).map_err(|RunError::Files(e)| failed(e))?;
            workspace.charge(
                "io::start",
                prepared.bytes_to_lay_out().saturating_sub(charged),
            )?;
            let report = prepared
                .with_deadline(ctx.deadline)
                .run(&opts)
                .map_err(|RunError::Files(e)| failed(e))?;
            // A job stopped before it began has no group: an empty result
            // under its name.
            let result = report
                .groups
                .into_iter()
                .next()
                .map(|g| super::stamped(ctx.clock, g))
                .unwrap_or_else(|| JobResult {
                    name: jobs[0].name.clone(),
                    ..JobResult::default()
                });
            super::succeeded("io::start", &jobs[0].name, result)
        });
        if started_task.is_err() {
            // Nothing was laid out: the charge goes back.
            self.refund(charged);
        }
        started_task
    }
}

/// A job's result in a few words.
fn describe_job(r: &JobResult) -> String {
    format!(
        "{} reads, {} writes in {:.2} s",
        r.read.total_ios,
        r.write.total_ios,
        r.runtime_ms as f64 / 1000.0
    )
}
