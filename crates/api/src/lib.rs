//! The host API: the one definition of every operation a scenario can call
//! (options, defaults, validation, the sandbox and budget checks), shared by
//! the Rhai and WebAssembly adapters.
//!
//! Layer 9 of 15: it may use `plumb-base`, `plumb-sandbox`, `plumb-model`, `plumb-metrics`, `plumb-io`, `plumb-trace`, `plumb-prims`; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod api;
pub mod sysinfo;

use plumb_base::{gate, halt, meter, stats, units};
use plumb_io::{buffer, files, job, runner, workload};
use plumb_metrics::metrics;
use plumb_model::model;
use plumb_prims::{cpu, mem, net};
use plumb_sandbox::sandbox;
use plumb_trace::trace;
