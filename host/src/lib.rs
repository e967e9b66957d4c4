//! plumb: a benchmark workbench for storage, CPU and network.
//!
//! The layers, from the edge inwards:
//! - [`cli`]: one file per `plumb` command; the only place that prints for
//!   the user and picks exit codes.
//! - [`scenario`] (packs, compiling, assertions) with its two runtimes,
//!   [`script`] (Rhai) and [`wasm`] (WebAssembly components), both thin
//!   adapters over [`api`], the one definition of every host operation.
//! - [`runner`] runs fio-style jobs ([`job`]) on the [`engine`]s; [`trace`]
//!   records and replays application I/O; [`cpu`], [`mem`], [`net`] are the
//!   other primitives; [`fleet`] drives many machines over ssh;
//!   [`files`], [`sandbox`], [`buffer`] and [`halt`] are
//!   what they all stand on; [`metrics`] serves a run's live figures to
//!   Prometheus.
//! - [`model`] is the data every renderer ([`report`]) and [`compare`]
//!   reads: job results, run reports, result documents, machines.
#![deny(missing_docs)]

pub mod api;
pub mod buffer;
pub mod cache;
pub mod cli;
pub mod compare;
pub mod cpu;
pub mod engine;
pub mod files;
pub mod fleet;
pub mod gate;
pub mod halt;
pub mod headroom;
pub mod heap;
pub mod input;
pub mod job;
pub mod mem;
pub mod meter;
pub mod metrics;
pub mod model;
pub mod net;
pub mod report;
pub mod runner;
pub mod sandbox;
pub mod save;
pub mod scenario;
pub mod scratch;
pub mod script;
pub mod stats;
pub mod sysinfo;
pub mod terminal;
pub mod trace;
pub mod units;
pub mod wasm;
pub mod workload;

pub use cli::ExitCode;
