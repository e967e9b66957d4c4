//! The WebAssembly adapter: WASI preview 2 components run by wasmtime, the
//! WIT interface (wit/) bound to the host API, and the compiled-component
//! cache.
//!
//! Layer 11 of 15: it may use `plumb-base`, `plumb-model`, `plumb-io`, `plumb-trace`, `plumb-prims`, `plumb-api` (and `plumb-script` in its tests only, which hold the Rhai and WIT adapters side by side); the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod wasm;

use plumb_api::api;
use plumb_base::{cache, gate, stats, terminal, units};
use plumb_io::runner;
use plumb_model::model;
use plumb_prims::{cpu, mem, net};
#[cfg(test)]
use plumb_script::script;
use plumb_trace::trace;
