//! What a person reads: run tables, Markdown, CSV, JSON, SVG charts and the
//! HTML report, and comparisons of result files that refuse unlike with like.
//!
//! Layer 8 of 15: it may use `plumb-base`, `plumb-model`, `plumb-io`, `plumb-trace`; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod compare;
pub mod report;

use plumb_base::{save, stats, terminal, units};
use plumb_io::job;
use plumb_model::model;
use plumb_trace::trace;
