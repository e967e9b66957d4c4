//! Statistics gathered while a job runs: latency histograms, the per-second
//! timeline and the CPU the job's threads used.

mod cpu;
pub mod disk;
mod latency;
pub mod live_latency;
mod timeline;

pub use cpu::CpuUsage;
pub use disk::{DiskSnapshot, DiskUtil};
pub use latency::{LatencyRecorder, LatencySummary, FIO_PERCENTILES};
pub use timeline::{coarsen, interval_of, Timeline, TimelinePoint, COARSE_MS, LEVELS};
