//! The host API as Rhai static modules (`io`, `fs`, `time`, `cpu`, `mem`,
//! `net`, `trace`, `report`, `sys`) and the global `param`. Each function
//! only converts values: an options map becomes the operation's options
//! struct through serde (the struct owns defaults and rules, and refuses
//! unknown keys), the typed result becomes a map. No default, rule or
//! operation lives here.

use super::values::{err, option_pairs, param_value, serde_message, to_bytes, to_seconds};
use crate::api::background::Task;
use crate::api::compute::CpuProgress;
use crate::api::fs::{Storm, StormReport, Transfer, TransferReport};
use crate::api::io::{GroupOptions, JobHandle};
use crate::api::{ApiError, FileHandle, Host};
use crate::cpu::CpuResult;
use crate::model::document::{Better, Mark};
use crate::model::result::JobResult;
use crate::net::Throughput;
use crate::runner::live::LiveProgress;
use rhai::{Array, Dynamic, Engine, EvalAltResult, FnPtr, Map, Module, NativeCallContext};
use serde::de::DeserializeOwned;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

type Shared = Rc<RefCell<Host>>;

/// Registers a module function whose errors carry the position of the call
/// (Rhai leaves it empty for namespaced native functions), and which says
/// on each call that the scenario is in it (`NS::name`, `NS` being the
/// module's name in scope) for the progress line. The body sees the
/// scenario's host as `$h`, taken from the engine's tag (see [`register`]),
/// so the modules themselves hold no host and can be listed without one.
macro_rules! native {
    ($m:expr, $name:expr, $h:ident, || -> $ret:ty { $($body:tt)* }) => {
        $m.set_native_fn($name, move |ctx: NativeCallContext| -> R<$ret> {
            // A closure, so the body can use `?`.
            #[allow(clippy::redundant_closure_call, unused_variables)]
            let result = (|| -> R<$ret> {
                let $h = host_of(&ctx)?;
                if let Ok(host) = $h.try_borrow() {
                    host.activity().enter(NS, $name);
                }
                // Bound, so the body's temporaries (borrows of the host)
                // end before the host does.
                let out: R<$ret> = { $($body)* };
                out
            })();
            placed(&ctx, result)
        })
    };
    ($m:expr, $name:expr, $h:ident, |$($arg:ident : $ty:ty),*| -> $ret:ty { $($body:tt)* }) => {
        $m.set_native_fn($name, move |ctx: NativeCallContext, $($arg: $ty),*| -> R<$ret> {
            // A closure, so the body can use `?`.
            #[allow(clippy::redundant_closure_call, unused_variables)]
            let result = (|| -> R<$ret> {
                let $h = host_of(&ctx)?;
                if let Ok(host) = $h.try_borrow() {
                    host.activity().enter(NS, $name);
                }
                // Bound, so the body's temporaries (borrows of the host)
                // end before the host does.
                let out: R<$ret> = { $($body)* };
                out
            })();
            placed(&ctx, result)
        })
    };
}

mod compute;
mod fs;
mod io;
mod report;

use compute::{cpu_module, mem_module, net_module, trace_module};
use fs::{fs_module, register_file_type, transfer_map};
use io::{io_module, register_task_types};
use report::{report_module, sys_module, time_module};

/// The scenario's host, which [`register`] keeps in the engine's tag.
fn host_of(ctx: &NativeCallContext) -> R<Shared> {
    ctx.tag()
        .and_then(|t| t.clone().try_cast::<Shared>())
        .ok_or_else(|| err("the host API is not available in this engine"))
}

/// Gives an error without a position the position of the call.
fn placed<T>(ctx: &NativeCallContext, r: R<T>) -> R<T> {
    r.map_err(|mut e| {
        if e.position().is_none() {
            e.set_position(ctx.call_position());
        }
        e
    })
}
type R<T> = Result<T, Box<EvalAltResult>>;

/// A file handle as scripts see it.
pub type ScriptFile = Rc<RefCell<FileHandle>>;

/// A host error as a script sees it: its message (a string scripts can
/// catch and inspect), tagged with its category so that an uncaught one
/// keeps it (see `rhai_engine::stopped_by`).
fn api(e: ApiError) -> Box<EvalAltResult> {
    let mut value = Dynamic::from(e.to_string());
    value.set_tag(e.kind().code());
    Box::new(EvalAltResult::ErrorRuntime(value, rhai::Position::NONE))
}

fn to_map<T: serde::Serialize>(v: &T) -> R<Dynamic> {
    rhai::serde::to_dynamic(v)
}

/// An options map as the operation's options struct (absent keys take the
/// struct's defaults; an unknown key or a value of the wrong kind is an
/// error naming the call).
fn options<T: DeserializeOwned>(call: &str, map: Map) -> R<T> {
    rhai::serde::from_dynamic(&Dynamic::from_map(map))
        .map_err(|e| err(format!("{call}: {}", serde_message(*e))))
}

/// The keys a host function's options map accepts.
#[derive(Debug, Clone, Copy)]
pub enum OptionKeys {
    /// The fields of the function's options struct, as serde reads them.
    Fields(&'static [&'static str]),
    /// fio's option table (`io::job`, `io::start` and each job of
    /// `io::group`), with its own "did you mean".
    Fio,
}

/// The options map each host function here takes, by its name: the
/// struct [`options`] builds for it (so the keys come from the struct's one
/// definition), or fio's table for jobs. What `plumb check` holds literal
/// maps against; None for functions without an options map.
pub fn option_keys(call: &str) -> Option<OptionKeys> {
    use crate::api::*;
    use OptionKeys::Fields;
    Some(match call {
        // io::group's own options map (`group_reporting`) is fio's option too.
        "io::job" | "io::start" | "io::group" => OptionKeys::Fio,
        "fs::open" => Fields(super::lint::fields::<OpenOptions>()),
        "fs::write_file" => Fields(super::lint::fields::<WriteOptions>()),
        "fs::read_file" => Fields(super::lint::fields::<ReadOptions>()),
        "fs::copy" | "fs::start_copy" => Fields(super::lint::fields::<CopyOptions>()),
        "fs::create_files" => Fields(super::lint::fields::<CreateOptions>()),
        "cpu::run" | "cpu::start" => Fields(super::lint::fields::<CpuOptions>()),
        "mem::bandwidth" => Fields(super::lint::fields::<BandwidthOptions>()),
        "mem::latency" => Fields(super::lint::fields::<LatencyOptions>()),
        "net::throughput" | "net::start_throughput" => {
            Fields(super::lint::fields::<ThroughputOptions>())
        }
        "net::rtt" => Fields(super::lint::fields::<RttOptions>()),
        "net::connect_time" => Fields(super::lint::fields::<ConnectOptions>()),
        "net::wait_for_port" => Fields(super::lint::fields::<WaitOptions>()),
        "trace::replay" => Fields(super::lint::fields::<ReplayOptions>()),
        _ => return None,
    })
}

/// The host API's modules by namespace, without a host: what a script may
/// call as `namespace::function`.
fn modules() -> [(&'static str, Module); 9] {
    [
        ("io", io_module()),
        ("fs", fs_module()),
        ("time", time_module()),
        ("cpu", cpu_module()),
        ("mem", mem_module()),
        ("net", net_module()),
        ("trace", trace_module()),
        ("report", report_module()),
        ("sys", sys_module()),
    ]
}

/// Every namespaced host function (`fs::write_file`), read from what the
/// modules register: `plumb check` refuses calls to anything else, and the
/// tests compare it with the WIT.
pub fn host_functions() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| host_arities().keys().cloned().collect())
}

/// Every namespaced host function with the numbers of arguments it takes
/// (`fs::write_file` → {2, 3}: its options map may be left out), read from
/// what the modules register: what the host API reference shows and checks
/// against the WIT.
pub fn host_arities() -> &'static BTreeMap<String, BTreeSet<usize>> {
    static ARITIES: std::sync::OnceLock<BTreeMap<String, BTreeSet<usize>>> =
        std::sync::OnceLock::new();
    ARITIES.get_or_init(|| {
        let mut engine = Engine::new_raw();
        for (name, module) in modules() {
            engine.register_static_module(name, module.into());
        }
        let mut arities: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
        for sig in engine.gen_fn_signatures(false) {
            let Some((name, rest)) = sig.split_once('(') else {
                continue;
            };
            if !name.contains("::") {
                continue;
            }
            // `(a: T, b: U) -> R`: the arguments up to the closing parenthesis.
            let args = rest.split_once(')').map_or("", |(args, _)| args).trim();
            let count = if args.is_empty() {
                0
            } else {
                args.split(", ").count()
            };
            arities.entry(name.to_string()).or_default().insert(count);
        }
        arities
    })
}

/// Registers the host API on `engine` for one scenario's host: the modules,
/// the `File` type's methods and the global `param`; the host goes in the
/// engine's tag, where the module functions find it.
pub fn register(engine: &mut Engine, host: &Shared) {
    engine.set_default_tag(Dynamic::from(host.clone()));
    for (name, module) in modules() {
        engine.register_static_module(name, module.into());
    }
    register_file_type(engine, host);
    register_task_types(engine, host);
    let h = host.clone();
    engine.register_fn("param", move |name: &str, default: Dynamic| -> R<Dynamic> {
        match h.borrow_mut().param(name) {
            Some(text) => param_value(name, text, &default),
            None => Ok(default),
        }
    });
}
