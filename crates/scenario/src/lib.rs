//! Scenarios and packs: pack manifests, bundles, git packs, signatures in
//! minisign's formats, assertions and comparison templates, and running a
//! scenario under its limits.
//!
//! Layer 12 of 15: it may use `plumb-base`, `plumb-sandbox`, `plumb-model`, `plumb-api`, `plumb-script`, `plumb-wasm`; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod scenario;

use plumb_api::api;
use plumb_base::{cache, child, input, save, terminal, units};
use plumb_model::model;
use plumb_sandbox::sandbox;
use plumb_script::script;
use plumb_wasm::wasm;
