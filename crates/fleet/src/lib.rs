//! Many machines over the user's own OpenSSH: inventories, the copy of plumb
//! to each host, remote runs, and the fleet's results.
//!
//! Layer 14 of 15: it may use `plumb-base`, `plumb-sandbox`, `plumb-model`, `plumb-prims`, `plumb-report`, `plumb-scenario`; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod fleet;

use plumb_api::api;
use plumb_base::{cache, child, halt, input, save, scratch, terminal, units};
use plumb_model::model;
use plumb_prims::net;
use plumb_report::{compare, report};
use plumb_sandbox::sandbox;
use plumb_scenario::scenario;
