//! The primitives other than disk I/O: CPU kernels, memory bandwidth and
//! latency, and TCP streams, RTT and connect times against plumb serve.
//!
//! Layer 7 of 15: it may use `plumb-base`; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod cpu;
pub mod mem;
pub mod net;

use plumb_base::{gate, halt, headroom, meter, terminal, units};
