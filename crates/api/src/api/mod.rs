//! The host API: one Rust definition of every operation a scenario can call.
//!
//! Each operation is a method of [`Host`] taking one options struct that
//! owns its defaults and rules (see [`options`]) and returning a typed
//! result or an [`ApiError`] with a category. The two runtimes, Rhai
//! (`script/`) and WebAssembly components (`wasm/`), are thin adapters over
//! it: they convert values and nothing else. Every path goes through the
//! [`RunDir`] sandbox, every write through the byte budget, every long
//! operation checks the deadline and the stop flag.

pub mod background;
pub mod capabilities;
pub mod clock;
pub mod compute;
pub mod fs;
pub mod io;
pub mod net;
pub mod options;
pub mod report;
pub mod scenario_error;
pub mod trace;

use crate::sandbox::{Account, OverBudget, RunDir, SandboxError};
pub use capabilities::{BudgetError, Capabilities, Capability, CapabilityError};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use compute::{BandwidthOptions, CpuOptions, LatencyOptions};
pub use fs::{
    CopyMethod, CopyOptions, CreateOptions, FileHandle, HandleBudget, OpenOptions, Pattern,
    ReadOptions, WriteOptions,
};
pub use io::GroupOptions;
pub use net::{ConnectOptions, RttOptions, ThroughputOptions, WaitOptions};
pub use report::ScenarioReport;
pub use trace::{ReplayOptions, ReplayThreads};

/// Why an operation was refused or failed; scripts can catch it.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A sandbox rule (paths stay in the run directory).
    #[error(transparent)]
    Sandbox(SandboxError),
    /// The scenario would write more bytes, or make more inodes, than it
    /// may.
    #[error("{}{source}", path.as_deref().map(|p| format!("'{p}': ")).unwrap_or_default())]
    Budget {
        /// The path whose creation was refused, when it was one.
        path: Option<String>,
        /// The refused charge.
        source: OverBudget,
    },
    /// A bad argument.
    #[error("{0}")]
    Invalid(String),
    /// Something the pack did not declare (a capability) or the run did not
    /// grant (a network address).
    #[error("{0}")]
    Denied(String),
    /// The operation ran and failed: a job's I/O error, a thread that died,
    /// a replay that could not go on.
    #[error("{op}: {message}")]
    Failed {
        /// The host function (`io::job`, `cpu::run`, …).
        op: &'static str,
        /// What went wrong.
        message: String,
    },
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
    /// A network measurement failed (with its partial figures).
    #[error(transparent)]
    Net(#[from] crate::net::NetError),
}

/// The category of an [`ApiError`], kept when the error crosses a runtime
/// (a Rhai error value carries it as its tag; the WIT `error` variant has
/// one case per category).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// [`ApiError::Sandbox`].
    Sandbox = 1,
    /// [`ApiError::Budget`].
    Budget,
    /// [`ApiError::Invalid`].
    Invalid,
    /// [`ApiError::Denied`].
    Denied,
    /// [`ApiError::Os`].
    Os,
    /// [`ApiError::Deadline`].
    Deadline,
    /// [`ApiError::Interrupted`].
    Interrupted,
    /// [`ApiError::Net`].
    Net,
    /// [`ApiError::Failed`].
    Failed,
}

impl ErrorKind {
    /// Every category, in code order.
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::Sandbox,
        ErrorKind::Budget,
        ErrorKind::Invalid,
        ErrorKind::Denied,
        ErrorKind::Os,
        ErrorKind::Deadline,
        ErrorKind::Interrupted,
        ErrorKind::Net,
        ErrorKind::Failed,
    ];

    /// A small non-zero number for the category (0 means "none").
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The category of a [`ErrorKind::code`], if it is one.
    pub fn from_code(code: i32) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The category's name, as result files record it (`sandbox`, `os`, …).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Sandbox => "sandbox",
            ErrorKind::Budget => "budget",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Denied => "denied",
            ErrorKind::Os => "os",
            ErrorKind::Deadline => "deadline",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Net => "net",
            ErrorKind::Failed => "failed",
        }
    }
}

impl From<SandboxError> for ApiError {
    /// A refused charge is a budget error wherever it was refused.
    fn from(e: SandboxError) -> ApiError {
        match e {
            SandboxError::Budget { path, source } => ApiError::Budget {
                path: Some(path),
                source,
            },
            e => ApiError::Sandbox(e),
        }
    }
}

impl From<OverBudget> for ApiError {
    fn from(source: OverBudget) -> ApiError {
        ApiError::Budget { path: None, source }
    }
}

impl ApiError {
    /// The error's category. The system refusing a path the sandbox let
    /// through (a missing file, a permission) is an OS error, as in WIT.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ApiError::Sandbox(s) if s.errno().is_some() => ErrorKind::Os,
            ApiError::Sandbox(_) => ErrorKind::Sandbox,
            ApiError::Budget { .. } => ErrorKind::Budget,
            ApiError::Invalid(_) => ErrorKind::Invalid,
            ApiError::Denied(_) => ErrorKind::Denied,
            ApiError::Os { .. } => ErrorKind::Os,
            ApiError::Deadline(_) => ErrorKind::Deadline,
            ApiError::Interrupted => ErrorKind::Interrupted,
            ApiError::Net(_) => ErrorKind::Net,
            ApiError::Failed { .. } => ErrorKind::Failed,
        }
    }
}

/// Limits a scenario runs under.
#[derive(Debug, Clone)]
pub struct Limits {
    /// How long the scenario may run.
    pub timeout: Duration,
}

/// A pack's run directory, whose account bounds what its scenarios may
/// write and create, shared by the pack's scenarios (so a `prepare`
/// scenario's files are there for the next one).
#[derive(Debug)]
pub struct Workspace {
    dir: RunDir,
    declared: Option<Capabilities>,
    net: Mutex<Vec<String>>,
    peer: Mutex<Option<crate::net::server::ServerHandle>>,
    data: BTreeMap<String, String>,
}

impl Workspace {
    /// Charges `bytes` against the budget, or refuses them (`op` names the
    /// operation) when they would pass it.
    pub(crate) fn charge(&self, op: &'static str, bytes: u64) -> Result<(), ApiError> {
        Ok(self.account().charge_bytes(op, bytes)?)
    }

    /// The run directory's account: the bytes and inodes it may still take.
    pub fn account(&self) -> &Arc<Account> {
        self.dir.account()
    }

    /// A workspace in `dir`, bounded by `dir`'s account; `declared` holds a
    /// pack's capabilities (None for a lone script: no limits beyond bytes
    /// and inodes); `net` lists the `HOST:PORT` addresses granted
    /// (`--allow-net`).
    pub fn new(dir: RunDir, declared: Option<Capabilities>, net: Vec<String>) -> Workspace {
        Workspace {
            dir,
            declared,
            net: Mutex::new(net),
            peer: Mutex::new(None),
            data: BTreeMap::new(),
        }
    }

    /// The pack's data files (traces and the like), readable by name.
    pub fn with_data(mut self, data: BTreeMap<String, String>) -> Workspace {
        self.data = data;
        self
    }

    /// The run directory.
    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    /// Gives the run directory back (to delete or keep it).
    pub fn into_dir(self) -> RunDir {
        self.dir
    }
}

/// Everything a running scenario can reach.
#[derive(Debug)]
pub struct Host {
    space: Arc<Workspace>,
    params: BTreeMap<String, String>,
    limits: Limits,
    started: Instant,
    stop: Arc<AtomicBool>,
    /// Open files and their buffer memory, bounded per scenario.
    handles: Arc<HandleBudget>,
    /// What the scenario reported so far.
    pub report: ScenarioReport,
    /// Work started in the background (`io::start`, `fs::start_copy`, …).
    background: background::Background,
    /// What the scenario is doing, for the run's progress line.
    activity: Arc<crate::runner::activity::Activity>,
    /// Where its jobs' figures and its own series go for `/metrics`
    /// (`--metrics-listen`), if anywhere.
    metrics: Option<crate::metrics::Scope>,
}

impl Host {
    /// A host for one scenario in the pack's workspace.
    pub fn new(
        space: Arc<Workspace>,
        params: BTreeMap<String, String>,
        limits: Limits,
        stop: Arc<AtomicBool>,
    ) -> Host {
        Host {
            space,
            params,
            limits,
            started: Instant::now(),
            stop,
            handles: Arc::default(),
            report: ScenarioReport::default(),
            background: background::Background::default(),
            activity: Arc::default(),
            metrics: None,
        }
    }

    /// Publishes the scenario's jobs and its own series (`report::counter`,
    /// `report::gauge`) to `scope`, which `/metrics` shows.
    pub fn with_metrics(mut self, scope: Option<crate::metrics::Scope>) -> Host {
        self.metrics = scope;
        self
    }

    /// Publishes what the scenario does to `activity` (which a progress
    /// printer reads).
    pub fn with_activity(mut self, activity: Arc<crate::runner::activity::Activity>) -> Host {
        self.activity = activity;
        self
    }

    /// What the scenario is doing, for the run's progress line.
    pub fn activity(&self) -> &crate::runner::activity::Activity {
        &self.activity
    }

    /// The scenario's count of open files and their buffer memory.
    pub fn handle_budget(&self) -> &Arc<HandleBudget> {
        &self.handles
    }

    /// The sandboxed run directory.
    pub fn run_dir(&self) -> &RunDir {
        &self.space.dir
    }

    /// A parameter given with `-p` or by the pack, if set; a parameter
    /// that is set is recorded as read ([`ScenarioReport::params_read`]).
    pub fn param(&mut self, name: &str) -> Option<&str> {
        let (key, value) = self.params.get_key_value(name)?;
        if !self.report.params_read.contains(key) {
            self.report.params_read.insert(key.clone());
        }
        Some(value.as_str())
    }

    /// Seconds since the scenario started (monotonic).
    pub fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The scenario's clock, whose zero is [`Host::now`]'s, for stamping
    /// results with when they ran.
    pub fn clock(&self) -> clock::Clock {
        clock::Clock::new(self.started)
    }

    /// CPU seconds (user + system) this process has used so far, every thread.
    pub fn cpu_time(&self) -> f64 {
        // SAFETY: getrusage fills the zeroed struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        secs(ru.ru_utime) + secs(ru.ru_stime)
    }

    /// The machine the scenario runs on (`sys::info`).
    pub fn sys_info(&self) -> crate::model::machine::HostInfo {
        crate::sysinfo::host_info()
    }

    /// The CPU kernels `cpu::run` knows, with their units and size
    /// parameters (`cpu::kernels`).
    pub fn cpu_kernels(&self) -> Vec<crate::cpu::KernelInfo> {
        crate::cpu::catalogue()
    }

    /// Sleeps, waking early on a stop request or the deadline (any finite
    /// length: a sleep past the deadline ends there with [`ApiError::Deadline`]).
    pub fn sleep(&self, seconds: f64) -> Result<(), ApiError> {
        if !(seconds >= 0.0 && seconds.is_finite()) {
            return Err(ApiError::Invalid(format!(
                "sleep: {seconds} is not a duration in seconds"
            )));
        }
        let wait = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX);
        self.halt().sleep(wait).map_err(|h| self.halted(h))
    }

    /// Fails when the scenario must stop (deadline or signal).
    pub fn check(&self) -> Result<(), ApiError> {
        self.halt().check().map_err(|h| self.halted(h))
    }

    /// The scenario's stop flag and deadline, for long primitives to poll.
    pub fn halt(&self) -> crate::halt::Halt {
        crate::halt::Halt::new(
            self.stop.clone(),
            self.started.checked_add(self.limits.timeout),
        )
    }

    /// The error for an operation that stopped early.
    pub fn halted(&self, why: crate::halt::Halted) -> ApiError {
        match why {
            crate::halt::Halted::Interrupted => ApiError::Interrupted,
            crate::halt::Halted::Deadline => ApiError::Deadline(self.limits.timeout),
        }
    }

    /// The stop flag shared with the runner.
    pub fn stop_flag(&self) -> &Arc<AtomicBool> {
        &self.stop
    }

    /// Time left before the deadline.
    pub fn time_left(&self) -> Duration {
        self.limits.timeout.saturating_sub(self.started.elapsed())
    }

    /// Reserves `bytes` of the write budget, or refuses. Call it before
    /// the write; the check and the reservation are one atomic step, so
    /// scenarios sharing the workspace cannot both take the last bytes.
    pub fn charge(&mut self, op: &'static str, bytes: u64) -> Result<(), ApiError> {
        self.charge_with_inodes(op, bytes, 0)
    }

    /// Reserves `bytes` and `inodes` together, or neither: an estimate of
    /// work whose names are not made through this run directory's own
    /// count (a trace replay's).
    pub fn charge_with_inodes(
        &mut self,
        op: &'static str,
        bytes: u64,
        inodes: u64,
    ) -> Result<(), ApiError> {
        // What removed files freed when their last holder closed comes back
        // first.
        let released = self.run_dir().take_released();
        self.refund(released);
        Ok(self.space.account().charge(op, bytes, inodes)?)
    }

    /// The workspace, for work on other threads that charges the budget
    /// itself ([`Workspace::charge`]).
    pub(crate) fn workspace(&self) -> Arc<Workspace> {
        self.space.clone()
    }

    /// Gives back budget for bytes really freed (files removed or
    /// truncated). Call it only after the operation that freed them
    /// succeeded, with what it freed.
    pub fn refund(&mut self, bytes: u64) {
        self.space.account().refund(bytes, 0);
    }
}

/// Turns an OS error into an [`ApiError`] naming the operation.
pub(crate) fn os_err(op: impl Into<String>) -> impl FnOnce(std::io::Error) -> ApiError {
    let op = op.into();
    move |source| ApiError::Os { op, source }
}

#[cfg(test)]
mod tests {
    /// The WebAssembly host keeps a `Host` in its store, which must be `Send`.
    #[test]
    fn host_is_send() {
        fn send<T: Send>() {}
        send::<super::Host>();
        send::<super::FileHandle>();
    }
}
