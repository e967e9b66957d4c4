//! Scenarios and packs: loading a pack (a folder, a built-in or a lone
//! script) with its manifest, parameters and capabilities; compiling each
//! scenario before anything runs; running it with a fresh [`Host`] in the
//! runtime it is written for (a Rhai script or a WebAssembly component); and
//! checking a pack's assertions on what it reported.

pub mod assertions;
pub mod bundle;
pub mod git;
pub mod pack;
pub mod params;
pub mod signature;
pub mod template;
pub mod trust;

use crate::api::scenario_error::ScenarioError;
use crate::api::{Host, ScenarioReport};
use crate::scenario::pack::ScenarioSource;
use crate::script::rhai_engine::{self, ScriptLimits};
use crate::script::ScriptError;
use crate::wasm;

/// A scenario ready to run.
pub enum Compiled {
    /// A checked Rhai script.
    Rhai(rhai::AST),
    /// A component that targets the `plumb:bench/scenario` world.
    Wasm(wasm::Compiled),
}

/// A scenario that does not compile; the message names the file (and for
/// Rhai the line and column).
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// A component that is not one, or does not target the world.
    #[error("{0}")]
    Wasm(#[from] crate::wasm::WasmError),
    /// A Rhai script that does not parse or check.
    #[error(transparent)]
    Rhai(#[from] ScriptError),
}

/// Compiles and checks a scenario.
pub fn compile(s: &ScenarioSource) -> Result<Compiled, CompileError> {
    match &s.wasm {
        Some(bytes) => wasm::compile(&s.file, bytes)
            .map(Compiled::Wasm)
            .map_err(CompileError::Wasm),
        None => Ok(Compiled::Rhai(rhai_engine::check(&s.file, &s.source)?)),
    }
}

/// Runs a compiled scenario on `host`; returns what it reported and, if it
/// failed, why.
pub fn run(
    s: &ScenarioSource,
    compiled: &Compiled,
    host: Host,
    memory: usize,
) -> (ScenarioReport, Result<(), ScenarioError>) {
    match compiled {
        Compiled::Rhai(_) => {
            let limits = ScriptLimits {
                max_heap_bytes: memory,
                ..ScriptLimits::default()
            };
            rhai_engine::run(&s.file, &s.source, host, &limits)
        }
        Compiled::Wasm(c) => {
            let (host, outcome) = wasm::run(&s.file, c, host, wasm::WasmLimits { memory });
            (host.report, outcome)
        }
    }
}
