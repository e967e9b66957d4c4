//! Traces of real applications: the plumb-trace format, recording under
//! strace, conversion (strace logs, fio iologs, dbench load files), and
//! faithful replay inside the sandbox.
//!
//! Layer 6 of 15: it may use `plumb-base`, `plumb-sandbox`, `plumb-io`; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod trace;

use plumb_base::{gate, units};
use plumb_io::buffer;
use plumb_sandbox::sandbox;
