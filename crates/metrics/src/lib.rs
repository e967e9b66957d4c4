//! A run's live figures served at /metrics in the OpenMetrics text format
//! (--metrics-listen): the board the runner publishes on and the HTTP
//! endpoint.
//!
//! Layer 4 of 15: it may use `plumb-base`; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod metrics;

use plumb_base::{stats, terminal};
