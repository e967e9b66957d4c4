//! The I/O core: aligned buffers, the engines (io_uring, libaio, psync, sync,
//! null), the fio job model and its options, workload generation (patterns,
//! distributions, verification), job files and their layout, and the runner
//! that drives jobs on threads.
//!
//! Layer 5 of 15: it may use `plumb-base`, `plumb-sandbox`, `plumb-model`, `plumb-metrics`; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod buffer;
pub mod data;
pub mod engine;
pub mod files;
pub mod job;
pub mod runner;
pub mod workload;

use plumb_base::{gate, headroom, stats, units};
use plumb_metrics::metrics;
use plumb_model::model;
use plumb_sandbox::sandbox;
