//! A run session: the packs and scenarios of one `plumb run`, resolved,
//! trusted, compiled and granted before anything runs; each run in the
//! sandboxed run directory of its pack, under the run's byte and inode
//! account; the results gathered into one document, journalled scenario by
//! scenario and continued with `--resume`.
//!
//! Layer 13 of 15: it may use `plumb-base`, `plumb-sandbox`, `plumb-model`, `plumb-metrics`, `plumb-io`, `plumb-api`, `plumb-scenario`; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod session;

use plumb_api::{api, sysinfo};
use plumb_base::{gate, save, terminal, units};
use plumb_io::{files, runner};
use plumb_model::model;
use plumb_sandbox::sandbox;
use plumb_scenario::scenario;
