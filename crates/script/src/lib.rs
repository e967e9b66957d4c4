//! The Rhai adapter: a thin layer converting Rhai values to the host API's
//! options and its results back.
//!
//! Layer 10 of 15: it may use `plumb-base`, `plumb-model`, `plumb-io`, `plumb-prims`, `plumb-api`; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod script;

use plumb_api::api;
use plumb_base::{gate, halt, heap, terminal, units};
use plumb_io::{job, runner};
use plumb_model::model;
use plumb_prims::{cpu, net};
