//! CPU and memory operations of the host API: `cpu::run`, `mem::bandwidth`
//! and `mem::latency`, each with its options, defaults and rules.

use super::background::{Task, TaskKind};
use super::options::{by_name, Bytes, Number, Seconds};
use super::{ApiError, Capability, Host};
use crate::cpu::{CpuError, CpuResult};
use crate::halt::Halt;
use crate::mem::{BandwidthResult, LatencyError, LatencyResult, Oper, Scope};
use crate::meter::Meter;
use crate::runner::live::LiveProgress;
use serde::Deserialize;
use std::time::Duration;

/// `cpu::run`: a kernel on N threads for a while. The kernel's size
/// parameter goes under its own name (`cpu_max_prime` for `prime`, `buffer`
/// for the hashes and compressors, `items` for the sorts and JSON, `n` for
/// `matmul`), in Rhai's map as in the WIT record.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CpuOptions {
    /// The kernel (`cpu::kernels()` lists them); default `prime`.
    pub kernel: String,
    /// Threads, each with its own data; default 1.
    pub threads: u32,
    /// How long to run (capped by the scenario's deadline); default 10 s.
    pub duration: Seconds,
    /// A 1-thread rate to compute the scaling efficiency against, instead
    /// of a 1-thread phase of a quarter of the duration.
    pub baseline: Option<Number>,
    /// `prime`'s upper bound (sysbench's `--cpu-max-prime`).
    pub cpu_max_prime: Option<Bytes>,
    /// Bytes per event of the hash and compression kernels.
    pub buffer: Option<Bytes>,
    /// Items per event of the sort and JSON kernels.
    pub items: Option<Bytes>,
    /// Matrix order of `matmul`.
    pub n: Option<Bytes>,
}

impl Default for CpuOptions {
    fn default() -> Self {
        CpuOptions {
            kernel: "prime".into(),
            threads: 1,
            duration: Seconds(10.0),
            baseline: None,
            cpu_max_prime: None,
            buffer: None,
            items: None,
            n: None,
        }
    }
}

/// [`CpuOptions`] checked: the kernel's parameter resolved by name.
#[derive(Debug, Clone)]
pub struct CpuRun {
    /// The kernel's name.
    pub kernel: String,
    /// Threads, at least 1 (the pack's `threads` still applies).
    pub threads: u32,
    /// Duration before the deadline cap.
    pub duration: Duration,
    /// The kernel's size parameter, when given.
    pub param: Option<u64>,
    /// The 1-thread rate, when given.
    pub baseline: Option<f64>,
}

impl CpuOptions {
    /// Checks the options: only the kernel's own parameter given (the
    /// API's rule, since the map names parameters), then the primitive's one
    /// check of the kernel, threads, parameter range, baseline and memory
    /// ([`crate::cpu::check`]), and a positive duration.
    pub fn validate(&self) -> Result<CpuRun, ApiError> {
        let call = "cpu::run";
        let k = crate::cpu::kernel(&self.kernel)
            .map_err(|e| ApiError::Invalid(format!("{call}: {e}")))?;
        let given = [
            ("cpu_max_prime", self.cpu_max_prime),
            ("buffer", self.buffer),
            ("items", self.items),
            ("n", self.n),
        ];
        if let Some((name, _)) = given.iter().find(|(n, v)| v.is_some() && *n != k.param) {
            return Err(ApiError::Invalid(format!(
                "{call}: unknown option '{name}' for kernel {} (its parameter is {})",
                k.name, k.param
            )));
        }
        let param = given
            .iter()
            .find(|(n, _)| *n == k.param)
            .and_then(|(_, v)| v.map(|b| b.0));
        let baseline = self.baseline.map(|b| b.0);
        crate::cpu::check(&self.kernel, self.threads, param, baseline)
            .map_err(|e| cpu_error(call, e))?;
        Ok(CpuRun {
            kernel: k.name.to_string(),
            threads: self.threads,
            duration: self.duration.positive(call, "duration")?,
            param,
            baseline,
        })
    }
}

/// `mem::bandwidth`, with sysbench memory's defaults (1 KiB blocks, 100 GiB
/// in total, a global block, writes, 1 thread, 10 s).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BandwidthOptions {
    /// Read, write or copy every word of the block.
    #[serde(deserialize_with = "by_name")]
    pub oper: Oper,
    /// Bytes per event.
    pub block_size: Bytes,
    /// Bytes to move in total.
    pub total_size: Bytes,
    /// One block shared by all threads, or one each.
    #[serde(deserialize_with = "by_name")]
    pub scope: Scope,
    /// Threads moving blocks at once.
    pub threads: u32,
    /// Time limit (capped by the deadline).
    pub duration: Seconds,
}

impl Default for BandwidthOptions {
    fn default() -> Self {
        let d = crate::mem::BandwidthOptions::default();
        BandwidthOptions {
            oper: d.oper,
            block_size: Bytes(d.block_size),
            total_size: Bytes(d.total_size),
            scope: d.scope,
            threads: d.threads,
            duration: Seconds(d.duration.as_secs_f64()),
        }
    }
}

impl BandwidthOptions {
    /// The primitive's options; the primitive checks sizes against memory.
    pub fn validate(&self) -> Result<crate::mem::BandwidthOptions, ApiError> {
        let call = "mem::bandwidth";
        Ok(crate::mem::BandwidthOptions {
            oper: self.oper,
            block_size: self.block_size.0,
            total_size: self.total_size.0,
            scope: self.scope,
            // The primitive checks the threads (1 to its most) and sizes.
            threads: self.threads,
            duration: self.duration.positive(call, "duration")?,
        })
    }
}

/// `mem::latency`: the pointer-chase curve from `min_size` to `max_size`
/// (defaults 16 KiB to 1 GiB, powers of two, 0.2 s per size).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LatencyOptions {
    /// Smallest working set.
    pub min_size: Bytes,
    /// Largest working set.
    pub max_size: Bytes,
    /// Sizes per doubling (1 = powers of two).
    pub steps_per_doubling: u32,
    /// Time spent timing each size.
    pub time_per_size: Seconds,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        let d = crate::mem::LatencyOptions::default();
        LatencyOptions {
            min_size: Bytes(d.min_size),
            max_size: Bytes(d.max_size),
            steps_per_doubling: d.steps_per_doubling,
            time_per_size: Seconds(d.time_per_size.as_secs_f64()),
        }
    }
}

impl LatencyOptions {
    /// The primitive's options; the primitive checks the size range.
    pub fn validate(&self) -> Result<crate::mem::LatencyOptions, ApiError> {
        let call = "mem::latency";
        Ok(crate::mem::LatencyOptions {
            min_size: self.min_size.0,
            max_size: self.max_size.0,
            // The primitive checks the steps (1 to 8) and the size range.
            steps_per_doubling: self.steps_per_doubling,
            time_per_size: self.time_per_size.positive(call, "time_per_size")?,
        })
    }
}

impl Host {
    /// Runs a CPU kernel (its duration capped by the deadline).
    pub fn cpu(&mut self, o: &CpuOptions) -> Result<CpuResult, ApiError> {
        let run = o.validate()?;
        self.allow(Capability::Threads(run.threads))?;
        let d = run.duration.min(self.time_left());
        let mut r = run_cpu(&run, d, &self.halt(), None)?;
        self.check()?;
        (r.started_s, r.ended_s) = self.clock().ending_now(r.seconds).fields();
        Ok(r)
    }

    /// Starts a CPU kernel in the background (`cpu::start`): a CPU hog
    /// beside a foreground workload. Stopped early, its result is the
    /// rate over the time it ran.
    pub fn start_cpu(&mut self, o: &CpuOptions) -> Result<CpuHandle, ApiError> {
        const OP: &str = "cpu::start";
        let run = o.validate()?;
        self.task_room(OP, &run.kernel, run.threads)?;
        self.allow(Capability::Threads(run.threads))?;
        // Checked here, not on the task's thread: bad options are an error
        // of this call. The kernel's data is held against the scenario's
        // buffers while it runs, so hogs started in a loop cannot add up.
        let (_, _, memory) = crate::cpu::check(&run.kernel, run.threads, run.param, run.baseline)
            .map_err(|e| cpu_error(OP, e))?;
        let lease = self.handle_budget().lease(OP, memory)?;
        let kind = TaskKind {
            op: OP,
            on_result: |_, _| {},
            describe: |r: &CpuResult| format!("{:.1} {} in {:.2} s", r.rate, r.unit, r.seconds),
        };
        let (name, threads) = (run.kernel.clone(), run.threads);
        let d = run.duration.min(self.time_left());
        self.spawn_task(kind, &name, threads, move |ctx| {
            let _lease = lease;
            let mut r = run_cpu(&run, d, &ctx.halt(), Some(&ctx.meter))?;
            (r.started_s, r.ended_s) = ctx.clock.ending_now(r.seconds).fields();
            Ok(r)
        })
    }

    /// Memory bandwidth as `sysbench memory` measures it.
    pub fn mem_bandwidth(&mut self, o: &BandwidthOptions) -> Result<BandwidthResult, ApiError> {
        let mut b = o.validate()?;
        self.allow(Capability::Threads(b.threads))?;
        b.duration = b.duration.min(self.time_left());
        let r = crate::mem::bandwidth(&b, &self.halt()).map_err(|e| match e {
            crate::mem::BandwidthError::Invalid(m) => {
                ApiError::Invalid(format!("mem::bandwidth: {m}"))
            }
            crate::mem::BandwidthError::Failed(m) => ApiError::Failed {
                op: "mem::bandwidth",
                message: m.to_string(),
            },
        })?;
        self.check()?;
        Ok(r)
    }

    /// Memory latency by working-set size (pointer chase); ends with
    /// [`ApiError::Deadline`] or [`ApiError::Interrupted`] when the scenario
    /// must stop mid-curve.
    pub fn mem_latency(&mut self, o: &LatencyOptions) -> Result<LatencyResult, ApiError> {
        let l = o.validate()?;
        let r = crate::mem::latency_curve(&l, &self.halt()).map_err(|e| match e {
            LatencyError::Halted(h) => self.halted(h),
            LatencyError::Invalid(e) => ApiError::Invalid(format!("mem::latency: {e}")),
        })?;
        self.check()?;
        Ok(r)
    }
}

/// Runs a checked CPU kernel for `d`, as `cpu::run`'s errors.
fn run_cpu(
    run: &CpuRun,
    d: Duration,
    halt: &Halt,
    meter: Option<&Meter>,
) -> Result<CpuResult, ApiError> {
    crate::cpu::run(
        &run.kernel,
        run.threads,
        d,
        run.param,
        run.baseline,
        halt,
        meter,
    )
    .map_err(|e| cpu_error("cpu::run", e))
}

/// A kernel's error as the scenario sees it.
fn cpu_error(op: &'static str, e: CpuError) -> ApiError {
    match e {
        CpuError::Invalid(m) => ApiError::Invalid(format!("{op}: {m}")),
        CpuError::Failed(m) => ApiError::Failed {
            op,
            message: m.to_string(),
        },
    }
}

/// A CPU kernel running in the background, as scripts and guests hold it.
pub type CpuHandle = Task<CpuResult>;

/// What a background CPU kernel has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct CpuProgress {
    /// Seconds since it started.
    pub elapsed: f64,
    /// Events (kernel iterations) so far, every thread; with more than one
    /// thread and no baseline, the single-thread phase's events included.
    pub events: u64,
    /// Events per second since the start.
    pub events_per_sec: f64,
    /// Events per second over the last second.
    pub events_per_sec_last_second: f64,
}

impl From<LiveProgress> for CpuProgress {
    fn from(p: LiveProgress) -> Self {
        CpuProgress {
            elapsed: p.elapsed,
            events: p.read.ios,
            events_per_sec: p.read.iops,
            events_per_sec_last_second: p.read.iops_last_second,
        }
    }
}
