//! plumb: a benchmark workbench for storage, CPU and network.
//!
//! This crate is the `plumb` command: [`cli`] parses the arguments, calls
//! the library crates and prints for the user (it is the only place that
//! prints and picks exit codes). The layers below it are crates of their
//! own, each allowed only the ones under it (docs/reference/layout.md):
//!
//! 1. `plumb-base`: units, the thread gate, the stop rule, statistics,
//!    atomic saves, safe terminal text, caches;
//! 2. `plumb-sandbox`: the run directory and its budget;
//! 3. `plumb-model`: results, run reports, result documents;
//! 4. `plumb-metrics`: the live /metrics endpoint;
//! 5. `plumb-io`: buffers, engines, the job model, workloads, files, the runner;
//! 6. `plumb-trace`: recording, converting and replaying traces;
//! 7. `plumb-prims`: CPU, memory and network primitives;
//! 8. `plumb-report`: tables, charts, the HTML report, comparisons;
//! 9. `plumb-api`: the host API, one definition per operation;
//! 10. `plumb-script` and 11. `plumb-wasm`: the Rhai and WebAssembly adapters;
//! 12. `plumb-scenario`: scenarios and packs;
//! 13. `plumb-session`: a run of packs, its grants, journal and `--resume`;
//! 14. `plumb-fleet`: many machines over OpenSSH.
//!
//! Their modules are re-exported here under the paths they always had
//! (`plumb::engine`, `plumb::api`, …) for the CLI and the tests.
#![deny(missing_docs)]

pub mod cli;

pub use cli::ExitCode;
pub use plumb_api::{api, sysinfo};
pub use plumb_base::{
    cache, gate, halt, headroom, heap, input, meter, save, scratch, stats, terminal, units,
};
pub use plumb_fleet::fleet;
pub use plumb_io::{buffer, engine, files, job, runner, workload};
pub use plumb_metrics::metrics;
pub use plumb_model::model;
pub use plumb_prims::{cpu, mem, net};
pub use plumb_report::{compare, report};
pub use plumb_sandbox::sandbox;
pub use plumb_scenario::scenario;
pub use plumb_script::script;
pub use plumb_session::session;
pub use plumb_trace::trace;
pub use plumb_wasm::wasm;
