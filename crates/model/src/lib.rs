//! The data every renderer and comparison reads: job results, run reports,
//! result documents (plumb.result.v1), machines, comparisons and templates'
//! tables. Serializable; no I/O.
//!
//! Layer 3 of 15: it may use `plumb-base`; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod model;

use plumb_base::stats;
