//! plumb: a benchmark workbench for storage, CPU and network.
//!
//! The native host: I/O engines, the job model, statistics, results and the
//! `plumb fio` command. Both `plumb fio` and scenarios run [`job::JobSpec`]s
//! through [`runner::prepare`] (or [`runner::prepare_in`]) and get a report.
#![deny(missing_docs)]

pub mod api;
pub mod assertions;
pub mod buffer;
pub mod compare;
pub mod cpu;
pub mod document;
pub mod engine;
pub mod files;
pub mod fio_cmd;
pub mod halt;
pub mod job;
pub mod mem;
pub mod net;
pub mod pack;
pub mod report;
pub mod result;
pub mod run_cmd;
pub mod runner;
pub mod sandbox;
pub mod scenario;
pub mod script;
pub mod serve_cmd;
pub mod stats;
pub mod sysinfo;
pub mod trace;
pub mod trace_cmd;
pub mod units;
pub mod wasm;
pub mod workload;

/// Process exit codes (DESIGN.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Success.
    Ok = 0,
    /// A job or scenario failed, or a threshold was missed.
    Failed = 1,
    /// Bad input: usage, script error, unknown option.
    BadInput = 2,
    /// Stopped by SIGINT.
    Interrupted = 130,
    /// Stopped by SIGTERM.
    Terminated = 143,
}
