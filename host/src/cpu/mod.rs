//! CPU kernels timed natively on N threads: events per second per thread and
//! in total, and how well it scales. Each kernel is one function that does
//! one "event" of work; the runner schedules and times them.

mod prime;

use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A kernel: does one event of work with its parameter.
pub struct Kernel {
    /// Stable lowercase name.
    pub name: &'static str,
    /// Runs one event; returns a value so the work cannot be optimised away.
    pub run: fn(u64) -> u64,
    /// Default parameter (e.g. sysbench's cpu_max_prime).
    pub default_param: u64,
}

/// Every kernel plumb has.
pub static KERNELS: &[Kernel] = &[prime::KERNEL];

/// What a CPU run measured.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CpuResult {
    /// Kernel name.
    pub kernel: String,
    /// Threads used.
    pub threads: u32,
    /// Events per second summed over threads.
    pub events_per_sec: f64,
    /// Events per second of each thread.
    pub per_thread: Vec<f64>,
    /// Total events.
    pub events: u64,
    /// Wall time in seconds.
    pub seconds: f64,
}

/// Runs `kernel` on `threads` threads for `duration` (stopping early on `stop`).
pub fn run(
    kernel: &str,
    threads: u32,
    duration: Duration,
    param: Option<u64>,
    stop: &Arc<AtomicBool>,
) -> Result<CpuResult, String> {
    let k = KERNELS.iter().find(|k| k.name == kernel).ok_or_else(|| {
        format!(
            "kernel '{kernel}' is not one of: {}",
            KERNELS
                .iter()
                .map(|k| k.name)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    if threads == 0 || threads > 1024 {
        return Err(format!("threads must be between 1 and 1024, not {threads}"));
    }
    let param = param.unwrap_or(k.default_param);
    let start = Instant::now();
    let end = start + duration;
    let counts: Vec<(u64, f64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let t0 = Instant::now();
                    let mut events = 0u64;
                    let mut sink = 0u64;
                    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
                        sink = sink.wrapping_add((k.run)(param));
                        events += 1;
                    }
                    std::hint::black_box(sink);
                    (events, t0.elapsed().as_secs_f64())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("cpu thread"))
            .collect()
    });
    let per_thread: Vec<f64> = counts
        .iter()
        .map(|(e, s)| *e as f64 / s.max(1e-9))
        .collect();
    Ok(CpuResult {
        kernel: k.name.to_string(),
        threads,
        events_per_sec: per_thread.iter().sum(),
        per_thread,
        events: counts.iter().map(|(e, _)| e).sum(),
        seconds: start.elapsed().as_secs_f64(),
    })
}
