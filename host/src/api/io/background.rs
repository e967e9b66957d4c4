//! `io::start`: a job running in the background while the scenario goes on,
//! behind a [`JobHandle`] (`wait`, `stop`, `progress`, `done`). Background
//! jobs count against the pack's threads and byte budget like any job, stop
//! with the scenario's stop flag and at its deadline (their runtime is
//! capped at the time left), and are stopped and joined when the scenario
//! ends — a handle never waited on is stopped then, its result kept with a
//! note — so no job outlives its scenario or its run directory.

use super::{ApiError, Host};
use crate::files::FileError;
use crate::job::spec::JobSpec;
use crate::model::result::JobResult;
use crate::model::run::RunReport;
use crate::runner::live::{LiveProgress, LiveTotals};
use crate::runner::{prepare_in, RunError, RunOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

/// The most background jobs one scenario may start.
pub const MAX_BACKGROUND_JOBS: usize = 64;

/// The most threads the background jobs of one scenario may run at once
/// (whatever the pack declares).
pub const MAX_BACKGROUND_THREADS: u32 = 4096;

/// A background job, as scripts and guests hold it.
#[derive(Debug, Clone)]
pub struct JobHandle {
    slot: Arc<Mutex<Slot>>,
}

#[derive(Debug)]
struct Slot {
    job: JobSpec,
    stop: Arc<AtomicBool>,
    live: Arc<LiveTotals>,
    thread: Option<JoinHandle<Result<RunReport, FileError>>>,
    /// The result once joined (kept: `wait` again gives it again; an error
    /// again by its message).
    outcome: Option<Result<JobResult, String>>,
}

impl Slot {
    /// True while its threads may still run.
    fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

/// The background jobs of one scenario.
#[derive(Debug, Default)]
pub struct Background {
    slots: Vec<Arc<Mutex<Slot>>>,
}

fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

impl Background {
    /// Threads the background jobs still running use.
    pub fn threads(&self) -> u32 {
        self.slots
            .iter()
            .map(|s| lock(s))
            .filter(|s| s.running())
            .fold(0u32, |n, s| n.saturating_add(s.job.numjobs))
    }

    /// Raises every job's stop flag and joins their threads.
    fn stop_all(&mut self) {
        for s in &self.slots {
            lock(s).stop.store(true, Ordering::Relaxed);
        }
        for s in &self.slots {
            if let Some(t) = lock(s).thread.take() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop_all();
    }
}

impl Host {
    /// Starts a job in the background and returns at once.
    pub fn start_job(&mut self, options: Vec<(String, String)>) -> Result<JobHandle, ApiError> {
        let job = self.job_spec("io::start", options)?;
        if self.background.slots.len() >= MAX_BACKGROUND_JOBS {
            return Err(ApiError::Invalid(format!(
                "io::start: a scenario may start at most {MAX_BACKGROUND_JOBS} background jobs"
            )));
        }
        let busy = self.background_threads();
        if busy.saturating_add(job.numjobs) > MAX_BACKGROUND_THREADS {
            return Err(ApiError::Invalid(format!(
                "io::start: '{}' needs {} threads beside the {busy} background jobs hold; at most {MAX_BACKGROUND_THREADS} run in the background",
                job.name, job.numjobs
            )));
        }
        let space = self.job_space("io::start")?;
        self.admit("io::start", std::slice::from_ref(&job), &space)?;
        let stop = Arc::new(AtomicBool::new(false));
        let live = Arc::new(LiveTotals::default());
        let opts = RunOptions {
            stop: self.stop_flag().clone(),
            stop_this: Some(stop.clone()),
            live: Some(live.clone()),
            ..RunOptions::default()
        };
        let deadline = Instant::now() + self.time_left();
        let jobs = vec![job.clone()];
        let thread = std::thread::Builder::new()
            .name(format!(
                "bg-{}",
                job.name.chars().take(12).collect::<String>()
            ))
            .spawn(move || {
                // Planned again on this thread, which owns its jobs (the plan
                // is deterministic: the same files, sizes and budget).
                let prepared = prepare_in(&jobs, false, &space).map_err(|RunError::Files(e)| e)?;
                prepared
                    .with_deadline(deadline)
                    .run(&opts)
                    .map_err(|RunError::Files(e)| e)
            })
            .map_err(|e| ApiError::Failed {
                op: "io::start",
                message: format!("cannot start a thread for '{}': {e}", job.name),
            })?;
        let slot = Arc::new(Mutex::new(Slot {
            job,
            stop,
            live,
            thread: Some(thread),
            outcome: None,
        }));
        self.background.slots.push(slot.clone());
        Ok(JobHandle { slot })
    }

    /// Threads of background jobs still running (they count against the
    /// pack's `threads` beside a new operation's).
    pub fn background_threads(&self) -> u32 {
        self.background.threads()
    }

    /// Stops every background job not waited on, keeps their results in the
    /// report with a note each, and joins every thread: called when the
    /// scenario ends, however it ends.
    pub fn end_background(&mut self) {
        let slots = std::mem::take(&mut self.background.slots);
        for slot in &slots {
            lock(slot).stop.store(true, Ordering::Relaxed);
        }
        for slot in slots {
            let handle = JobHandle { slot };
            if lock(&handle.slot).outcome.is_some() {
                continue;
            }
            let name = handle.name();
            let outcome = handle.finish(self);
            let what = match &outcome {
                Ok(_) => "its result so far is kept".to_string(),
                Err(e) => format!("it failed: {e}"),
            };
            let _ = self.note(&format!(
                "io::start job '{name}' was not waited on: stopped at the end of the scenario; {what}"
            ));
        }
    }
}

impl JobHandle {
    /// The job's name.
    pub fn name(&self) -> String {
        lock(&self.slot).job.name.clone()
    }

    /// True once the job has ended (on its own or stopped).
    pub fn done(&self) -> bool {
        let s = lock(&self.slot);
        s.outcome.is_some() || !s.running()
    }

    /// What it has done so far: totals and rates since its start and over
    /// the last second.
    pub fn progress(&self) -> LiveProgress {
        lock(&self.slot).live.snapshot()
    }

    /// Waits for the job to end and returns its result (recorded in the
    /// scenario's report the first time).
    pub fn wait(&self, host: &mut Host) -> Result<JobResult, ApiError> {
        self.finish(host)
    }

    /// Stops the job early and returns its result so far.
    pub fn stop(&self, host: &mut Host) -> Result<JobResult, ApiError> {
        lock(&self.slot).stop.store(true, Ordering::Relaxed);
        self.finish(host)
    }

    /// Joins the thread once, converts and records its result.
    fn finish(&self, host: &mut Host) -> Result<JobResult, ApiError> {
        let mut s = lock(&self.slot);
        match &s.outcome {
            Some(Ok(r)) => return Ok(r.clone()),
            Some(Err(message)) => {
                return Err(ApiError::Failed {
                    op: "io::start",
                    message: message.clone(),
                })
            }
            None => {}
        }
        let joined = match s.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r.map_err(|e| host.run_err("io::start", e)),
            Some(Err(_)) | None => Err(ApiError::Failed {
                op: "io::start",
                message: format!("'{}': the job's thread failed", s.job.name),
            }),
        };
        let job = s.job.clone();
        let outcome = joined.and_then(|report| {
            let result = report
                .groups
                .into_iter()
                .next()
                .map(|g| host.stamped(g))
                .unwrap_or_default();
            host.job_done(&job, result)
        });
        s.outcome = Some(
            outcome
                .as_ref()
                .map(Clone::clone)
                .map_err(ToString::to_string),
        );
        outcome
    }
}
