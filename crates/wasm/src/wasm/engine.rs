//! The engine (one per process, with an epoch ticker), compiling through the
//! cache, checking a component against the world, and running it under its
//! limits: memory, the scenario deadline (epochs) and Ctrl-C.

use super::bindings::{Scenario, ScenarioPre, State};
use super::cache;
use super::error::{EngineError, WasmError};
use super::limiter::GuestLimiter;
use super::version::{other_version, WIT_VERSION};
use crate::api::scenario_error::{ScenarioError, ScenarioErrorKind};
use crate::api::Host;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, UpdateDeadline, WasmBacktraceDetails};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::WasiCtxBuilder;

/// How often the epoch advances.
const TICK: Duration = Duration::from_millis(10);
/// The most a guest may print (stdout and stderr each).
const MAX_OUTPUT: usize = 1 << 20;

/// Limits of one guest.
#[derive(Debug, Clone, Copy)]
pub struct WasmLimits {
    /// Bytes all the guest's linear memories may hold together (every
    /// memory of every instance it makes; see `limiter.rs` for the caps on
    /// how many it may make).
    pub memory: usize,
}

/// The process's engine; a background thread (one of the run's, under its
/// cap) advances its epoch. Fails, for good, when either cannot be made.
pub(super) fn engine(file: &str) -> Result<&'static Engine, WasmError> {
    static ENGINE: OnceLock<Result<Engine, EngineError>> = OnceLock::new();
    ENGINE
        .get_or_init(start_engine)
        .as_ref()
        .map_err(|why| WasmError::NoEngine {
            file: file.to_string(),
            why: why.clone(),
        })
}

fn start_engine() -> Result<Engine, EngineError> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.wasm_backtrace_details(WasmBacktraceDetails::Enable);
    let engine = Engine::new(&config).map_err(|e| EngineError::Config(e.to_string()))?;
    let ticker = engine.clone();
    crate::gate::thread("plumb-epoch")
        .spawn(move || loop {
            std::thread::sleep(TICK);
            ticker.increment_epoch();
        })
        .map_err(|e| EngineError::EpochThread(e.to_string()))?;
    Ok(engine)
}

fn linker(file: &str) -> Result<Linker<State>, WasmError> {
    let mut linker = Linker::new(engine(file)?);
    let failed = |e: wasmtime::Error| WasmError::Linker {
        file: file.to_string(),
        why: e.to_string(),
    };
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(failed)?;
    Scenario::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s).map_err(failed)?;
    Ok(linker)
}

/// Largest component compiled, a scenario's or a comparison template's,
/// in bytes. Compiling (Cranelift, on several threads) takes time and
/// memory in proportion to the code and cannot be stopped half-way, so a
/// component is bounded before it is parsed at all; real guests are a few
/// MiB at most.
pub const MAX_COMPONENT_BYTES: usize = 16 << 20;

/// Refuses a component larger than [`MAX_COMPONENT_BYTES`], naming both sizes.
pub(super) fn check_size(file: &str, bytes: &[u8]) -> Result<(), WasmError> {
    if bytes.len() > MAX_COMPONENT_BYTES {
        return Err(WasmError::TooLarge {
            file: file.to_string(),
            bytes: bytes.len(),
        });
    }
    Ok(())
}

/// `bytes` bounded in size, then compiled (or loaded from the cache) by
/// the process's engine: what a scenario and a template both start from;
/// true when it came from the cache.
pub(super) fn component(file: &str, bytes: &[u8]) -> Result<(Component, bool), WasmError> {
    check_size(file, bytes)?;
    cache::load_or_compile(engine(file)?, bytes).map_err(|e| WasmError::NotAComponent {
        file: file.to_string(),
        why: format!("{e:#}"),
    })
}

/// A compiled component, ready to instantiate.
pub struct Compiled {
    pre: ScenarioPre<State>,
    /// True when it came from the cache.
    pub cached: bool,
}

/// Compiles (or loads from the cache) and checks a component against the
/// `plumb:bench/scenario` world; errors name what is missing.
pub fn compile(file: &str, bytes: &[u8]) -> Result<Compiled, WasmError> {
    let (component, cached) = component(file, bytes)?;
    // `instantiate_pre` only fails when an import is missing or has
    // another type than the world's; either is most often a guest built
    // for another version of the world.
    let pre = linker(file)?.instantiate_pre(&component).map_err(|e| {
        built_for_other(file, &component).unwrap_or_else(|| WasmError::ScenarioImports {
            file: file.to_string(),
            why: format!("{e:#}"),
        })
    })?;
    let pre = ScenarioPre::new(pre).map_err(|e| {
        built_for_other(file, &component).unwrap_or_else(|| WasmError::NoRun {
            file: file.to_string(),
            why: format!("{e:#}"),
        })
    })?;
    Ok(Compiled { pre, cached })
}

/// The error for a component that imports another version of the
/// `plumb:bench` package than this plumb's, if it does.
pub(super) fn built_for_other(file: &str, component: &Component) -> Option<WasmError> {
    other_version(component, component.engine()).map(|built_for| WasmError::OtherVersion {
        file: file.to_string(),
        built_for,
        provides: WIT_VERSION,
    })
}

/// `plumb check` for a component.
pub fn check(file: &str, bytes: &[u8]) -> Result<(), WasmError> {
    compile(file, bytes).map(|_| ())
}

/// Why a guest stopped, from what the host knows: the stop flag, the
/// deadline, the memory limiter; else the trap with the guest's backtrace.
fn stopped_by(
    file: &str,
    e: &wasmtime::Error,
    state: &State,
    limits: WasmLimits,
    started: Instant,
) -> ScenarioError {
    let at = |kind, message: String| ScenarioError::new(kind, within_text(file, &message));
    if state.host.stop_flag().load(Ordering::Relaxed) {
        return at(ScenarioErrorKind::Interrupted, "interrupted".into());
    }
    if state.limiter.hit() {
        return at(
            ScenarioErrorKind::MemoryLimit,
            format!(
                "the guest went over its memory limit of {} for all its memories together (rule: --scenario-memory, alias --wasm-memory)",
                crate::units::format_bytes_binary(limits.memory as f64)
            ),
        );
    }
    let interrupt = matches!(
        e.downcast_ref::<wasmtime::Trap>(),
        Some(wasmtime::Trap::Interrupt)
    );
    if interrupt || state.host.time_left().is_zero() {
        return at(
            ScenarioErrorKind::Deadline,
            format!(
                "the scenario ran past its deadline after {:.1} s (rule: --timeout)",
                started.elapsed().as_secs_f64()
            ),
        );
    }
    // The trap with the guest's backtrace (function names, and file:line
    // when the component has debug info).
    at(ScenarioErrorKind::Trap, format!("the guest trapped: {e:?}"))
}

/// A guest that could not be instantiated within its memory: it makes
/// more memories, instances or tables than a guest may (wasmtime refuses
/// the count), or one of its memories or tables cannot be made.
fn not_instantiated(file: &str, e: &wasmtime::Error) -> ScenarioError {
    use super::limiter::{MAX_INSTANCES, MAX_MEMORIES, MAX_TABLES};
    ScenarioError::new(
        ScenarioErrorKind::Start,
        within_text(
            file,
            &format!(
                "the guest could not be instantiated: {e:#} (a guest may make at most {MAX_MEMORIES} linear memories, {MAX_INSTANCES} instances and {MAX_TABLES} tables)"
            ),
        ),
    )
}

/// Runs a compiled component's `run` with `host` as its host API; returns
/// the host (with what the scenario reported) and the outcome.
pub fn run(
    file: &str,
    compiled: &Compiled,
    host: Host,
    limits: WasmLimits,
) -> (Host, Result<(), ScenarioError>) {
    let stdout = MemoryOutputPipe::new(MAX_OUTPUT);
    let stderr = MemoryOutputPipe::new(MAX_OUTPUT);
    let wasi = WasiCtxBuilder::new()
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .build();
    let state = State {
        host,
        table: ResourceTable::new(),
        wasi,
        limiter: GuestLimiter::new(limits.memory),
    };
    let mut store = Store::new(compiled.pre.engine(), state);
    store.limiter(|s| &mut s.limiter);
    let started = Instant::now();
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|ctx| {
        let host = &ctx.data().host;
        if host.check().is_err() {
            return Err(wasmtime::Trap::Interrupt.into());
        }
        Ok(UpdateDeadline::Continue(1))
    });
    let result = match compiled.pre.instantiate(&mut store) {
        Err(e) if !store.data().limiter.hit() => Err(not_instantiated(file, &e)),
        Err(e) => Err(stopped_by(file, &e, store.data(), limits, started)),
        Ok(scenario) => match scenario.call_run(&mut store) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(msg)) => Err(ScenarioError::new(
                ScenarioErrorKind::Failed,
                within_text(file, &format!("the scenario failed: {msg}")),
            )),
            Err(e) => Err(stopped_by(file, &e, store.data(), limits, started)),
        },
    };
    show_log(stdout, stderr, MAX_OUTPUT);
    let mut state = store.into_data();
    // Background work ends with the scenario, its results kept; a task
    // never waited on that had failed fails the scenario.
    let result = match (result, state.host.end_background()) {
        (Ok(()), Some(note)) => Err(ScenarioError::new(ScenarioErrorKind::Failed, note)),
        (result, _) => result,
    };
    (state.host, result)
}

/// `FILE: message`, the guest's part cut to what the result file holds.
fn within_text(file: &str, message: &str) -> String {
    use crate::model::document::{cut_text, limits};
    format!("{file}: {}", cut_text(message, limits::TEXT / 2))
}

/// Gives what a guest wrote to its stdout and stderr (pipes of at most
/// `max` bytes) to plumb's log (target `plumb::guest`), escaped, saying
/// where a pipe was cut.
pub(super) fn show_log(stdout: MemoryOutputPipe, stderr: MemoryOutputPipe, max: usize) {
    for (pipe, name) in [(stdout, "stdout"), (stderr, "stderr")] {
        let text = String::from_utf8_lossy(&pipe.contents()).into_owned();
        for line in text.lines() {
            // The guest's text is escaped: no control reaches the terminal.
            tracing::info!(target: "plumb::guest", "  | {}", crate::terminal::clean_text(line));
        }
        if text.len() >= max {
            tracing::info!(target: "plumb::guest", "  | (the guest's {name} was cut at {max} bytes)");
        }
    }
}
