//! The host API: one Rust definition of every operation a scenario can call.
//!
//! The runtimes (Rhai today) are thin adapters over [`Host`]: they translate
//! values and nothing else. Every path goes through the [`RunDir`] sandbox,
//! every write through the byte budget, every long operation checks the
//! deadline and the stop flag.

pub mod fs;
pub mod io;
pub mod report;

use crate::sandbox::{RunDir, SandboxError};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use fs::{FileHandle, OpenOptions};
pub use report::ScenarioReport;

/// Why an operation was refused or failed; scripts can catch it.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A sandbox rule (paths stay in the run directory).
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The scenario would write more than it may.
    #[error("byte budget exceeded: {op} needs {need} bytes but only {left} of the {limit} allowed are left (rule: --max-bytes / free space)")]
    Budget {
        /// The operation.
        op: &'static str,
        /// Bytes it needs.
        need: u64,
        /// Bytes left.
        left: u64,
        /// The whole budget.
        limit: u64,
    },
    /// A bad argument.
    #[error("{0}")]
    Invalid(String),
    /// The operating system refused.
    #[error("{op}: {source}")]
    Os {
        /// What was being done.
        op: String,
        /// The error.
        source: std::io::Error,
    },
    /// The scenario's deadline passed.
    #[error("the scenario ran past its deadline of {0:?} (rule: --timeout)")]
    Deadline(Duration),
    /// Ctrl-C or SIGTERM.
    #[error("interrupted")]
    Interrupted,
}

/// Limits a scenario runs under.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The most bytes the scenario may write in total.
    pub max_bytes: u64,
    /// How long the scenario may run.
    pub timeout: Duration,
}

/// Everything a running scenario can reach.
#[derive(Debug)]
pub struct Host {
    run_dir: RunDir,
    params: BTreeMap<String, String>,
    limits: Limits,
    started: Instant,
    stop: Arc<AtomicBool>,
    written: u64,
    /// What the scenario reported so far.
    pub report: ScenarioReport,
}

impl Host {
    /// A host for one scenario in `run_dir`.
    pub fn new(
        run_dir: RunDir,
        params: BTreeMap<String, String>,
        limits: Limits,
        stop: Arc<AtomicBool>,
    ) -> Host {
        Host {
            run_dir,
            params,
            limits,
            started: Instant::now(),
            stop,
            written: 0,
            report: ScenarioReport::default(),
        }
    }

    /// The sandboxed run directory.
    pub fn run_dir(&self) -> &RunDir {
        &self.run_dir
    }

    /// Gives the run directory back when the scenario is over.
    pub fn into_parts(self) -> (RunDir, ScenarioReport) {
        (self.run_dir, self.report)
    }

    /// A parameter given with `-p` or by the pack, if set.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// Seconds since the scenario started (monotonic).
    pub fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Sleeps, waking early on a stop request or the deadline.
    pub fn sleep(&self, seconds: f64) -> Result<(), ApiError> {
        if !(seconds >= 0.0 && seconds.is_finite()) {
            return Err(ApiError::Invalid(format!(
                "sleep: {seconds} is not a duration in seconds"
            )));
        }
        let until = Instant::now() + Duration::from_secs_f64(seconds);
        while Instant::now() < until {
            self.check()?;
            std::thread::sleep((until - Instant::now()).min(Duration::from_millis(20)));
        }
        self.check()
    }

    /// Fails when the scenario must stop (deadline or signal).
    pub fn check(&self) -> Result<(), ApiError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(ApiError::Interrupted);
        }
        if self.started.elapsed() > self.limits.timeout {
            return Err(ApiError::Deadline(self.limits.timeout));
        }
        Ok(())
    }

    /// The stop flag shared with the runner.
    pub fn stop_flag(&self) -> &Arc<AtomicBool> {
        &self.stop
    }

    /// Time left before the deadline.
    pub fn time_left(&self) -> Duration {
        self.limits.timeout.saturating_sub(self.started.elapsed())
    }

    /// Reserves `bytes` of the write budget, or refuses.
    pub fn charge(&mut self, op: &'static str, bytes: u64) -> Result<(), ApiError> {
        let left = self.limits.max_bytes.saturating_sub(self.written);
        if bytes > left {
            return Err(ApiError::Budget {
                op,
                need: bytes,
                left,
                limit: self.limits.max_bytes,
            });
        }
        self.written += bytes;
        Ok(())
    }

    /// Gives back budget for bytes freed (files removed or truncated).
    pub fn refund(&mut self, bytes: u64) {
        self.written = self.written.saturating_sub(bytes);
    }
}

/// Turns an OS error into an [`ApiError`] naming the operation.
pub(crate) fn os_err(op: impl Into<String>) -> impl FnOnce(std::io::Error) -> ApiError {
    let op = op.into();
    move |source| ApiError::Os { op, source }
}
