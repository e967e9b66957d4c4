//! WebAssembly scenarios: components targeting the `plumb:bench/scenario`
//! world (see `wit/`), run by wasmtime with WASI preview 2. The guest gets
//! stdout and stderr (shown as the scenario's log), a clock and random
//! numbers; no environment, no sockets, no filesystem: everything else goes
//! through the host API, the same [`crate::api::Host`] Rhai uses.

mod bindings;
mod cache;
mod convert;
mod engine;
mod error;
mod limiter;
pub mod template;
mod version;

pub use engine::{check, compile, run, Compiled, WasmLimits};
pub use error::{EngineError, WasmError};

#[cfg(test)]
mod reference;
