//! Why a component, a scenario's or a comparison template's, cannot be
//! compiled, linked or (for a template) rendered. Each message names the
//! file and the rule.

use crate::model::template::{limits, TableError};
use crate::units::format_bytes_binary;

/// Why a component cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WasmError {
    /// The process's engine (or the thread advancing its epoch) could not
    /// be made; that stays so for the process.
    #[error("{file}: {why}")]
    NoEngine {
        /// The component.
        file: String,
        /// Why, from wasmtime or the OS.
        why: EngineError,
    },
    /// Larger than [`super::engine::MAX_COMPONENT_BYTES`].
    #[error(
        "{file}: the component is {} ({bytes} bytes), more than the {} a component may be (rule: component size limit)",
        format_bytes_binary(*bytes as f64),
        format_bytes_binary(super::engine::MAX_COMPONENT_BYTES as f64)
    )]
    TooLarge {
        /// The component.
        file: String,
        /// Its size.
        bytes: usize,
    },
    /// Not a component wasmtime compiles.
    #[error("{file}: not a WebAssembly component plumb can run: {why}")]
    NotAComponent {
        /// The component.
        file: String,
        /// wasmtime's reason.
        why: String,
    },
    /// WASI or the host API could not be added to the linker.
    #[error("{file}: {why}")]
    Linker {
        /// The component.
        file: String,
        /// wasmtime's reason.
        why: String,
    },
    /// A component built against another version of the `plumb:bench`
    /// package than this plumb provides.
    #[error("{file}: the component was built for plumb:bench@{built_for}, and this plumb provides plumb:bench@{provides}: rebuild it against the wit/ of this plumb")]
    OtherVersion {
        /// The component.
        file: String,
        /// The version its imports name (or `no version`).
        built_for: String,
        /// This plumb's version.
        provides: &'static str,
    },
    /// A scenario importing more than the world and WASI.
    #[error("{file}: it imports something plumb does not provide ({why}); a scenario may import only the plumb:bench/scenario world and WASI preview 2")]
    ScenarioImports {
        /// The component.
        file: String,
        /// wasmtime's reason.
        why: String,
    },
    /// A scenario without the world's `run`.
    #[error("{file}: the component does not export the plumb:bench/scenario world's `run` function: {why}")]
    NoRun {
        /// The component.
        file: String,
        /// wasmtime's reason.
        why: String,
    },
    /// A template importing more than WASI.
    #[error("{file}: it imports something plumb does not give templates ({why}); a template may import only WASI preview 2")]
    TemplateImports {
        /// The component.
        file: String,
        /// wasmtime's reason.
        why: String,
    },
    /// A template without the world's `render`.
    #[error("{file}: the component does not export the plumb:bench/compare-template world's `render` function: {why}")]
    NoRender {
        /// The component.
        file: String,
        /// wasmtime's reason.
        why: String,
    },
    /// The template's `render` returned its own error (escaped).
    #[error("{file}: render failed: {message}")]
    RenderFailed {
        /// The component.
        file: String,
        /// Its message, made safe to print.
        message: String,
    },
    /// The template grew past its memory limit.
    #[error("{file}: the template went over its memory limit of {} MiB", limits::WASM_MEMORY >> 20)]
    TemplateMemory {
        /// The component.
        file: String,
    },
    /// The template ran past its time limit.
    #[error("{file}: the template ran longer than {} s (rule: template time limit)", limits::TIME.as_secs())]
    TemplateTime {
        /// The component.
        file: String,
    },
    /// The template trapped.
    #[error("{file}: the template trapped: {trap}")]
    TemplateTrap {
        /// The component.
        file: String,
        /// The trap with the guest's backtrace.
        trap: String,
    },
    /// The tables the template returned break the tables' limits.
    #[error("{file}: {error}")]
    Tables {
        /// The component.
        file: String,
        /// The limit broken.
        error: TableError,
    },
}

/// Why the process's WebAssembly engine cannot run anything.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EngineError {
    /// wasmtime refused the configuration.
    #[error("the WebAssembly engine cannot start: {0}")]
    Config(String),
    /// The thread advancing the epoch (the deadline's clock) did not start.
    #[error("the WebAssembly engine's epoch thread cannot start: {0}")]
    EpochThread(String),
}
