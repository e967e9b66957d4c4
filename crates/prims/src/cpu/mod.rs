//! CPU kernels timed natively on N threads: the rate per thread and in total,
//! and how well it scales. Each kernel prepares its data per thread (outside
//! the timing) and then does one "event" of work at a time; the runner
//! schedules and times the events. The algorithms come from well-kept crates
//! (sha2, blake3, lz4_flex, matrixmultiply, serde_json, std's sorts).

mod corpus;
mod kernels;
mod prime;

use crate::halt::Halt;
use crate::meter::Meter;
use serde::Serialize;
use std::time::{Duration, Instant};

/// One thread's prepared work: does one event and says how much work that was.
pub trait Work: Send {
    /// Runs one event; returns a value so the work cannot be optimised away.
    fn event(&mut self) -> u64;
    /// Units of work in one event (bytes, elements, FLOPs or 1).
    fn work_per_event(&self) -> f64;
}

/// A kernel: its name, what its rate counts, and how to prepare its work.
pub struct Kernel {
    /// Stable lowercase name.
    pub name: &'static str,
    /// What one event is, for `plumb list`-style help.
    pub about: &'static str,
    /// The rate's unit (work per second, scaled).
    pub unit: &'static str,
    /// Work units per unit of the rate (1e6 for MB/s, 1e9 for GFLOP/s).
    pub scale: f64,
    /// Name of the kernel's size parameter (e.g. sysbench's `cpu_max_prime`).
    pub param: &'static str,
    /// Default of that parameter.
    pub default_param: u64,
    /// Smallest and largest accepted parameter. The largest keeps one event
    /// (the unit between two checks of the deadline and the stop flag) to a
    /// fraction of a second on a modest core.
    pub param_range: (u64, u64),
    /// Bytes of memory one thread's prepared work holds for a parameter value.
    pub memory: fn(u64) -> u64,
    /// Prepares one thread's work for a parameter value.
    pub prepare: fn(u64) -> Box<dyn Work>,
}

/// Every kernel plumb has.
pub static KERNELS: &[Kernel] = &[
    prime::KERNEL,
    kernels::SHA256,
    kernels::BLAKE3,
    kernels::LZ4_COMPRESS,
    kernels::LZ4_DECOMPRESS,
    kernels::SORT_U64,
    kernels::SORT_STRING,
    kernels::MATMUL,
    kernels::JSON_PARSE,
    kernels::JSON_SERIALIZE,
];

/// What `cpu::kernels()` lists about a kernel.
#[derive(Debug, Clone, Serialize)]
pub struct KernelInfo {
    /// Name.
    pub name: &'static str,
    /// The rate's unit.
    pub unit: &'static str,
    /// What one event is.
    pub about: &'static str,
    /// Its size parameter.
    pub param: &'static str,
    /// The parameter's default.
    pub default: u64,
}

/// Every kernel, described.
pub fn catalogue() -> Vec<KernelInfo> {
    KERNELS
        .iter()
        .map(|k| KernelInfo {
            name: k.name,
            unit: k.unit,
            about: k.about,
            param: k.param,
            default: k.default_param,
        })
        .collect()
}

/// Finds a kernel by name, or says which exist (quoting at most 40
/// characters of a name that came from a script or a guest).
pub fn kernel(name: &str) -> Result<&'static Kernel, UnknownKernel> {
    KERNELS
        .iter()
        .find(|k| k.name == name)
        .ok_or_else(|| UnknownKernel {
            name: name.chars().take(40).collect(),
        })
}

/// A kernel name that is not one of [`kernels`] (its first 40 characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kernel '{name}' is not one of: {}", KERNELS.iter().map(|k| k.name).collect::<Vec<_>>().join(", "))]
pub struct UnknownKernel {
    /// The name given, at most 40 characters of it.
    pub name: String,
}

/// What a CPU run measured.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CpuResult {
    /// Kernel name.
    pub kernel: String,
    /// Threads used.
    pub threads: u32,
    /// The kernel's parameter value.
    pub param: u64,
    /// Unit of `rate` and `per_thread`.
    pub unit: String,
    /// Rate summed over threads, in `unit`.
    pub rate: f64,
    /// Rate of each thread, in `unit`.
    pub per_thread: Vec<f64>,
    /// Events per second summed over threads.
    pub events_per_sec: f64,
    /// Total events.
    pub events: u64,
    /// Wall time of the timed phase in seconds.
    pub seconds: f64,
    /// Single-thread rate measured just before (equal to `rate` at 1 thread).
    pub single_thread_rate: f64,
    /// `rate / (threads × single_thread_rate)`: 1.0 is perfect scaling.
    pub efficiency: f64,
    /// In a scenario: when the timed phase began, on the scenario's clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_s: Option<f64>,
    /// In a scenario: when it ended, on the scenario's clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_s: Option<f64>,
}

pub use crate::gate::MAX_THREADS;

/// Why a CPU run did not happen or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    /// The request is out of bounds: unknown kernel, thread count,
    /// parameter range, baseline, or more memory than the machine has.
    #[error(transparent)]
    Invalid(#[from] InvalidCpu),
    /// A thread could not be started or died while running.
    #[error(transparent)]
    Failed(#[from] crate::gate::TogetherError),
}

/// A CPU run out of bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidCpu {
    /// No such kernel.
    #[error(transparent)]
    Kernel(#[from] UnknownKernel),
    /// No thread, or more than [`MAX_THREADS`].
    #[error("threads must be between 1 and {MAX_THREADS}, not {0}")]
    Threads(u32),
    /// The parameter outside the kernel's range.
    #[error("{name} {value} is outside {lo}..={hi} for kernel {kernel}")]
    Param {
        /// The parameter's name.
        name: &'static str,
        /// Its value.
        value: u64,
        /// The least allowed.
        lo: u64,
        /// The most allowed.
        hi: u64,
        /// The kernel.
        kernel: &'static str,
    },
    /// A baseline that is not a positive rate.
    #[error("baseline must be a positive single-thread rate")]
    Baseline,
    /// The threads' data above half the available memory.
    #[error(transparent)]
    Memory(#[from] crate::headroom::TooBig),
}

/// Checks a run before anything starts: a known kernel, 1 to
/// [`MAX_THREADS`] threads, the parameter in the kernel's range, a positive
/// baseline, and the threads' data within half the available memory.
/// Returns the kernel, the parameter (its default when not given) and the
/// bytes of data the threads prepare.
pub fn check(
    name: &str,
    threads: u32,
    param: Option<u64>,
    baseline: Option<f64>,
) -> Result<(&'static Kernel, u64, u64), CpuError> {
    let k = kernel(name).map_err(InvalidCpu::from)?;
    if threads == 0 || threads > MAX_THREADS {
        return Err(InvalidCpu::Threads(threads).into());
    }
    let param = param.unwrap_or(k.default_param);
    let (lo, hi) = k.param_range;
    if !(lo..=hi).contains(&param) {
        return Err(InvalidCpu::Param {
            name: k.param,
            value: param,
            lo,
            hi,
            kernel: k.name,
        }
        .into());
    }
    if baseline.is_some_and(|b| !(b > 0.0 && b.is_finite())) {
        return Err(InvalidCpu::Baseline.into());
    }
    let memory = (k.memory)(param).saturating_mul(threads as u64);
    crate::headroom::check_size(
        &format!("{} threads × the {} kernel's data", threads, k.name),
        memory,
    )
    .map_err(InvalidCpu::from)?;
    Ok((k, param, memory))
}

/// Runs `kernel` on `threads` threads for `duration`, ending early when
/// `halt` says so (each thread checks it between events, and events are
/// bounded by the kernel's parameter range). The scaling efficiency compares
/// with `baseline`, a single-thread rate measured before; without it, and
/// with more than one thread, a single-thread phase of a quarter of the
/// duration runs first. The threads' prepared data must fit in half the
/// available memory. Events are counted in `meter` as they happen (as
/// reads), for a background run's progress.
pub fn run(
    name: &str,
    threads: u32,
    duration: Duration,
    param: Option<u64>,
    baseline: Option<f64>,
    halt: &Halt,
    meter: Option<&Meter>,
) -> Result<CpuResult, CpuError> {
    let (k, param, _) = check(name, threads, param, baseline)?;
    let single = if baseline.is_some() {
        baseline
    } else if threads > 1 {
        let (rates, _, _) =
            timed(k, 1, duration / 4, param, halt, meter).map_err(CpuError::Failed)?;
        Some(rates[0])
    } else {
        None
    };
    let (per_thread, events, seconds) =
        timed(k, threads, duration, param, halt, meter).map_err(CpuError::Failed)?;
    let rate: f64 = per_thread.iter().sum();
    let single_thread_rate = single.unwrap_or(rate);
    Ok(CpuResult {
        kernel: k.name.to_string(),
        threads,
        param,
        unit: k.unit.to_string(),
        rate,
        events_per_sec: events as f64 / seconds.max(1e-9),
        per_thread,
        events,
        seconds,
        single_thread_rate,
        efficiency: rate / (threads as f64 * single_thread_rate).max(1e-12),
        started_s: None,
        ended_s: None,
    })
}

/// Events a thread counts before adding them to a meter.
const METER_EVERY: u64 = 64;

/// Runs the timed phase: every thread prepares its work, all start together,
/// and each counts events until the end (or until `halt`). Returns per-thread
/// rates, events and wall seconds; a thread that cannot start or that fails
/// is an error.
fn timed(
    k: &Kernel,
    threads: u32,
    duration: Duration,
    param: u64,
    halt: &Halt,
    meter: Option<&Meter>,
) -> Result<(Vec<f64>, u64, f64), crate::gate::TogetherError> {
    let (counts, seconds) =
        crate::gate::run_together(&format!("cpu-{}", k.name), threads, |_, start| {
            let mut work = (k.prepare)(param);
            // One untimed event warms caches and faults the buffers in.
            std::hint::black_box(work.event());
            if !start() {
                return (0, 0.0);
            }
            let t0 = Instant::now();
            let mut events = 0u64;
            let mut sink = 0u64;
            while t0.elapsed() < duration && !halt.due() {
                sink = sink.wrapping_add(work.event());
                events += 1;
                if events.is_multiple_of(METER_EVERY) {
                    if let Some(m) = meter {
                        m.add(0, METER_EVERY, 0);
                    }
                }
            }
            if let Some(m) = meter {
                m.add(0, events % METER_EVERY, 0);
            }
            std::hint::black_box(sink);
            let secs = t0.elapsed().as_secs_f64();
            (
                events,
                work.work_per_event() * events as f64 / secs.max(1e-9),
            )
        })?;
    let rates = counts.iter().map(|(_, r)| r / k.scale).collect();
    Ok((rates, counts.iter().map(|(e, _)| e).sum(), seconds))
}
