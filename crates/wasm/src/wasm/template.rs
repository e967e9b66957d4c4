//! Comparison templates as WebAssembly components of the
//! `plumb:bench/compare-template` world: `render(comparison)` returns
//! tables. The guest gets no host API, WASI's stdout and stderr (shown as
//! its log), at most [`limits::WASM_MEMORY`] of memory and [`limits::TIME`].

use super::engine::{built_for_other, component, show_log};
use super::error::WasmError;
use super::limiter::GuestLimiter;
use crate::model::comparison::Verdict;
use crate::model::document::Better;
use crate::model::template::{check_tables, limits, MadeTable, TemplateInput};
use std::time::Instant;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

mod bindings {
    wasmtime::component::bindgen!({ path: "../../wit", world: "compare-template" });
}

use bindings::plumb::bench::comparison as wit;
use bindings::CompareTemplatePre;

/// The most a template may print (stdout and stderr each).
const MAX_OUTPUT: usize = 64 << 10;

struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: GuestLimiter,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Runs the component `bytes`' `render` on `input`; the error says what
/// stopped it (its own error, the time or memory limit, a trap).
pub fn render(
    file: &str,
    bytes: &[u8],
    input: &TemplateInput,
) -> Result<Vec<MadeTable>, WasmError> {
    let pre = prepare(file, bytes)?;
    let stdout = MemoryOutputPipe::new(MAX_OUTPUT);
    let stderr = MemoryOutputPipe::new(MAX_OUTPUT);
    let state = State {
        wasi: WasiCtxBuilder::new()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .build(),
        table: ResourceTable::new(),
        limiter: GuestLimiter::new(limits::WASM_MEMORY),
    };
    let mut store = Store::new(pre.engine(), state);
    store.limiter(|s| &mut s.limiter);
    let started = Instant::now();
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        if started.elapsed() > limits::TIME {
            return Err(wasmtime::Trap::Interrupt.into());
        }
        Ok(UpdateDeadline::Continue(1))
    });
    let outcome = pre
        .instantiate(&mut store)
        .and_then(|t| t.call_render(&mut store, &to_wit(input)));
    show_log(stdout, stderr, MAX_OUTPUT);
    let file = file.to_string();
    let tables = match outcome {
        Ok(Ok(tables)) => tables,
        Ok(Err(msg)) => {
            return Err(WasmError::RenderFailed {
                file,
                message: crate::terminal::clean_text(&msg).into_owned(),
            })
        }
        Err(_) if store.data().limiter.hit() => return Err(WasmError::TemplateMemory { file }),
        Err(e)
            if matches!(
                e.downcast_ref::<wasmtime::Trap>(),
                Some(wasmtime::Trap::Interrupt)
            ) =>
        {
            return Err(WasmError::TemplateTime { file })
        }
        Err(e) => {
            return Err(WasmError::TemplateTrap {
                file,
                trap: format!("{e:?}"),
            })
        }
    };
    let tables: Vec<MadeTable> = tables
        .into_iter()
        .map(|t| MadeTable {
            title: t.title,
            header: t.header,
            rows: t.rows,
            notes: t.notes,
        })
        .collect();
    check_tables(&tables).map_err(|error| WasmError::Tables { file, error })?;
    Ok(tables)
}

/// A verdict as the WIT enum.
fn verdict(v: Verdict) -> wit::Verdict {
    match v {
        Verdict::Baseline => wit::Verdict::Baseline,
        Verdict::Better => wit::Verdict::Better,
        Verdict::Worse => wit::Verdict::Worse,
        Verdict::WithinNoise => wit::Verdict::WithinNoise,
        Verdict::Unknown => wit::Verdict::Unknown,
        Verdict::Missing => wit::Verdict::Missing,
        Verdict::NotComparable => wit::Verdict::NotComparable,
    }
}

fn to_wit(input: &TemplateInput) -> wit::Comparison {
    wit::Comparison {
        runs: input
            .runs
            .iter()
            .map(|r| wit::Run {
                title: r.title.clone(),
                label: r.label.clone(),
                hostname: r.hostname.clone(),
                cpu_model: r.cpu_model.clone(),
                cpus: r.cpus,
                memory_bytes: r.memory_bytes,
                kernel: r.kernel.clone(),
                os: r.os.clone(),
                arch: r.arch.clone(),
                filesystem: r.filesystem.clone(),
                device: r.device.clone(),
                device_model: r.device_model.clone(),
                started: r.started.clone(),
                plumb_version: r.plumb_version.clone(),
                pack_version: r.pack_version.clone(),
                params: r
                    .params
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            })
            .collect(),
        rows: input
            .rows
            .iter()
            .map(|r| wit::Row {
                scenario: r.scenario.clone(),
                pack: r.pack.clone(),
                metric: r.metric.clone(),
                unit: r.unit.clone(),
                better: match r.better {
                    Better::Higher => wit::Better::HigherIsBetter,
                    Better::Lower => wit::Better::LowerIsBetter,
                },
                cells: r
                    .cells
                    .iter()
                    .map(|c| wit::Cell {
                        value: c.value,
                        samples: c.samples.clone(),
                        ratio: c.ratio,
                        ci_low: c.ci_low,
                        ci_high: c.ci_high,
                        verdict: verdict(c.verdict),
                        not_comparable: c.not_comparable.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Compiles (or loads from the cache) and links a template: `plumb check`.
pub fn check(file: &str, bytes: &[u8]) -> Result<(), WasmError> {
    prepare(file, bytes).map(|_| ())
}

/// A linked template, ready to instantiate.
fn prepare(file: &str, bytes: &[u8]) -> Result<CompareTemplatePre<State>, WasmError> {
    let (component, _) = component(file, bytes)?;
    let why = |e: wasmtime::Error| format!("{e:#}");
    let mut linker: Linker<State> = Linker::new(component.engine());
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(|e| WasmError::Linker {
        file: file.to_string(),
        why: e.to_string(),
    })?;
    let pre = linker.instantiate_pre(&component).map_err(|e| {
        built_for_other(file, &component).unwrap_or_else(|| WasmError::TemplateImports {
            file: file.to_string(),
            why: why(e),
        })
    })?;
    CompareTemplatePre::new(pre).map_err(|e| {
        built_for_other(file, &component).unwrap_or_else(|| WasmError::NoRender {
            file: file.to_string(),
            why: why(e),
        })
    })
}
