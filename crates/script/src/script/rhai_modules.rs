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

fn io_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "io";
    let mut m = Module::new();
    native!(m, "job", h, |opts: Map| -> Dynamic {
        let pairs = option_pairs(&opts)?;
        let result = h.borrow_mut().job(pairs).map_err(api)?;
        to_map(&result)
    });
    native!(m, "start", h, |opts: Map| -> JobHandle {
        let pairs = option_pairs(&opts)?;
        h.borrow_mut().start_job(pairs).map_err(api)
    });
    native!(m, "group", h, |jobs: Array| -> Array {
        group(&h, jobs, Map::new())
    });
    native!(m, "group", h, |jobs: Array, o: Map| -> Array {
        group(&h, jobs, o)
    });
    m
}

/// `io::group(jobs)` and `io::group(jobs, #{ group_reporting: true })`.
fn group(h: &Shared, jobs: Array, o: Map) -> R<Array> {
    let o: GroupOptions = options("io::group", o)?;
    let pairs = jobs
        .into_iter()
        .enumerate()
        .map(|(i, j)| match j.try_cast::<Map>() {
            Some(m) => option_pairs(&m),
            None => Err(err(format!(
                "io::group: job {} is not an options map",
                i + 1
            ))),
        })
        .collect::<R<Vec<_>>>()?;
    let results = h.borrow_mut().group(pairs, &o).map_err(api)?;
    results.iter().map(to_map).collect()
}

/// The handle types of background work: `Job` (`io::start`), `CopyTask`
/// (`fs::start_copy`), `CpuTask` (`cpu::start`) and `ThroughputTask`
/// (`net::start_throughput`), each with `name`, `done`, `progress`, `wait`
/// and `stop`.
fn register_task_types(engine: &mut Engine, host: &Shared) {
    register_task_type::<JobResult>(engine, host, "Job", to_map, |p| to_map(&p));
    register_task_type::<Transfer>(
        engine,
        host,
        "CopyTask",
        |t| transfer_map(*t),
        |p| to_map(&p),
    );
    register_task_type::<CpuResult>(engine, host, "CpuTask", to_map, |p| {
        to_map(&CpuProgress::from(p))
    });
    register_task_type::<Throughput>(engine, host, "ThroughputTask", to_map, |p| to_map(&p));
}

fn register_task_type<T: Clone + Send + Sync + std::fmt::Debug + 'static>(
    engine: &mut Engine,
    host: &Shared,
    name: &str,
    result: fn(&T) -> R<Dynamic>,
    progress: fn(LiveProgress) -> R<Dynamic>,
) {
    engine.register_type_with_name::<Task<T>>(name);
    engine.register_fn("name", |j: &mut Task<T>| j.name());
    engine.register_fn("done", |j: &mut Task<T>| j.done());
    engine.register_fn("progress", move |j: &mut Task<T>| progress(j.progress()));
    let h = host.clone();
    engine.register_fn("wait", move |j: &mut Task<T>| -> R<Dynamic> {
        result(&j.wait(&mut h.borrow_mut()).map_err(api)?)
    });
    let h = host.clone();
    engine.register_fn("stop", move |j: &mut Task<T>| -> R<Dynamic> {
        result(&j.stop(&mut h.borrow_mut()).map_err(api)?)
    });
}

/// A transfer as a map: the API's [`TransferReport`], serialized.
fn transfer_map(t: Transfer) -> R<Dynamic> {
    to_map(&TransferReport::from(t))
}

/// A storm as a map: the API's [`StormReport`], serialized.
fn storm_map(s: Storm) -> R<Dynamic> {
    to_map(&StormReport::from(s))
}

fn fs_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "fs";
    let mut m = Module::new();
    native!(m, "open", h, |path: &str| -> ScriptFile {
        let f = h.borrow_mut().open(path, Default::default()).map_err(api)?;
        Ok(Rc::new(RefCell::new(f)))
    });
    native!(m, "open", h, |path: &str, o: Map| -> ScriptFile {
        let f = h
            .borrow_mut()
            .open(path, options("fs::open", o)?)
            .map_err(api)?;
        Ok(Rc::new(RefCell::new(f)))
    });
    native!(m, "write_file", h, |path: &str, size: Dynamic| -> Dynamic {
        let size = to_bytes("fs::write_file size", &size)?;
        transfer_map(
            h.borrow_mut()
                .write_file(path, size, &Default::default())
                .map_err(api)?,
        )
    });
    native!(m, "write_file", h, |path: &str,
                                 size: Dynamic,
                                 o: Map|
     -> Dynamic {
        let size = to_bytes("fs::write_file size", &size)?;
        let o = options("fs::write_file", o)?;
        transfer_map(h.borrow_mut().write_file(path, size, &o).map_err(api)?)
    });
    native!(m, "read_file", h, |path: &str| -> Dynamic {
        transfer_map(
            h.borrow_mut()
                .read_file(path, &Default::default())
                .map_err(api)?,
        )
    });
    native!(m, "read_file", h, |path: &str, o: Map| -> Dynamic {
        let o = options("fs::read_file", o)?;
        transfer_map(h.borrow_mut().read_file(path, &o).map_err(api)?)
    });
    native!(m, "copy", h, |src: &str, dst: &str| -> Dynamic {
        transfer_map(
            h.borrow_mut()
                .copy(src, dst, &Default::default())
                .map_err(api)?,
        )
    });
    native!(m, "copy", h, |src: &str, dst: &str, o: Map| -> Dynamic {
        let o = options("fs::copy", o)?;
        transfer_map(h.borrow_mut().copy(src, dst, &o).map_err(api)?)
    });
    native!(m, "start_copy", h, |src: &str,
                                 dst: &str|
     -> Task<Transfer> {
        h.borrow_mut()
            .start_copy(src, dst, &Default::default())
            .map_err(api)
    });
    native!(m, "start_copy", h, |src: &str,
                                 dst: &str,
                                 o: Map|
     -> Task<Transfer> {
        let o = options("fs::start_copy", o)?;
        h.borrow_mut().start_copy(src, dst, &o).map_err(api)
    });

    native!(m, "rename", h, |a: &str, b: &str| -> () {
        h.borrow_mut().rename(a, b).map_err(api)
    });
    native!(m, "remove", h, |p: &str| -> () {
        h.borrow_mut().remove(p).map_err(api)
    });
    native!(m, "remove_all", h, |p: &str| -> () {
        h.borrow_mut().remove_all(p).map_err(api)
    });
    native!(m, "mkdir", h, |p: &str| -> () {
        h.borrow_mut().mkdir(p).map_err(api)
    });
    native!(m, "list", h, |p: &str| -> Array {
        let names = h.borrow().list(p).map_err(api)?;
        Ok(names.into_iter().map(Dynamic::from).collect())
    });
    native!(m, "stat", h, |p: &str| -> Dynamic {
        let st = h.borrow().stat(p).map_err(api)?;
        to_map(&st)
    });
    native!(m, "exists", h, |p: &str| -> bool {
        h.borrow().exists(p).map_err(api)
    });
    native!(m, "sync_all", h, || -> () {
        h.borrow_mut().sync_all();
        Ok(())
    });
    native!(m, "fsync_dir", h, |p: &str| -> () {
        h.borrow_mut().fsync_dir(p).map_err(api)
    });
    native!(m, "evict", h, |p: &str| -> () {
        h.borrow_mut().evict(p).map_err(api)
    });
    native!(m, "room", h, || -> i64 {
        let bytes = h.borrow_mut().room().map_err(api)?;
        Ok(i64::try_from(bytes).unwrap_or(i64::MAX))
    });
    native!(m, "drop_caches", h, || -> () {
        h.borrow_mut().drop_caches().map_err(api)
    });
    native!(m, "create_files", h, |dir: &str,
                                   count: i64,
                                   size: Dynamic|
     -> Dynamic {
        let size = to_bytes("fs::create_files size", &size)?;
        let count = u64::try_from(count).map_err(|_| err("fs::create_files: count is negative"))?;
        storm_map(
            h.borrow_mut()
                .create_files(dir, count, size, &Default::default())
                .map_err(api)?,
        )
    });
    native!(m, "create_files", h, |dir: &str,
                                   count: i64,
                                   size: Dynamic,
                                   o: Map|
     -> Dynamic {
        let size = to_bytes("fs::create_files size", &size)?;
        let count = u64::try_from(count).map_err(|_| err("fs::create_files: count is negative"))?;
        let o = options("fs::create_files", o)?;
        storm_map(
            h.borrow_mut()
                .create_files(dir, count, size, &o)
                .map_err(api)?,
        )
    });
    native!(m, "stat_files", h, |dir: &str| -> Dynamic {
        storm_map(h.borrow_mut().stat_files(dir).map_err(api)?)
    });
    native!(m, "remove_files", h, |dir: &str| -> Dynamic {
        storm_map(h.borrow_mut().remove_files(dir).map_err(api)?)
    });
    m
}

fn register_file_type(engine: &mut Engine, host: &Shared) {
    engine.register_type_with_name::<ScriptFile>("File");
    engine.register_fn(
        "read_at",
        |f: &mut ScriptFile, off: i64, len: i64| -> R<i64> {
            f.borrow_mut()
                .read_at(off, len)
                .map(|n| n as i64)
                .map_err(api)
        },
    );
    let h = host.clone();
    engine.register_fn(
        "write_at",
        move |f: &mut ScriptFile, off: i64, len: i64| -> R<i64> {
            f.borrow_mut()
                .write_at(&mut h.borrow_mut(), off, len)
                .map(|n| n as i64)
                .map_err(api)
        },
    );
    let h = host.clone();
    engine.register_fn("append", move |f: &mut ScriptFile, len: i64| -> R<i64> {
        f.borrow_mut()
            .append(&mut h.borrow_mut(), len)
            .map(|n| n as i64)
            .map_err(api)
    });
    engine.register_fn("fsync", |f: &mut ScriptFile| -> R<()> {
        f.borrow_mut().fsync().map_err(api)
    });
    engine.register_fn("fdatasync", |f: &mut ScriptFile| -> R<()> {
        f.borrow_mut().fdatasync().map_err(api)
    });
    let h = host.clone();
    engine.register_fn("truncate", move |f: &mut ScriptFile, len: i64| -> R<()> {
        f.borrow_mut()
            .truncate(&mut h.borrow_mut(), len)
            .map_err(api)
    });
    let h = host.clone();
    engine.register_fn("fallocate", move |f: &mut ScriptFile, len: i64| -> R<()> {
        f.borrow_mut()
            .fallocate(&mut h.borrow_mut(), len)
            .map_err(api)
    });
    engine.register_fn("size", |f: &mut ScriptFile| -> R<i64> {
        f.borrow().size().map(|n| n as i64).map_err(api)
    });
    engine.register_fn("close", |f: &mut ScriptFile| f.borrow_mut().close());
}

fn cpu_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "cpu";
    let mut m = Module::new();
    native!(m, "run", h, |o: Map| -> Dynamic {
        to_map(&h.borrow_mut().cpu(&options("cpu::run", o)?).map_err(api)?)
    });
    native!(m, "start", h, |o: Map| -> Task<CpuResult> {
        h.borrow_mut()
            .start_cpu(&options("cpu::start", o)?)
            .map_err(api)
    });
    native!(m, "kernels", h, || -> Dynamic {
        to_map(&h.borrow().cpu_kernels())
    });
    m
}

fn mem_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "mem";
    let mut m = Module::new();
    native!(m, "bandwidth", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .mem_bandwidth(&options("mem::bandwidth", o)?)
                .map_err(api)?,
        )
    });
    native!(m, "latency", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .mem_latency(&options("mem::latency", o)?)
                .map_err(api)?,
        )
    });
    m
}

fn net_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "net";
    let mut m = Module::new();
    native!(m, "throughput", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .net_throughput(&options("net::throughput", o)?)
                .map_err(api)?,
        )
    });
    native!(m, "start_throughput", h, |o: Map| -> Task<Throughput> {
        h.borrow_mut()
            .start_throughput(&options("net::start_throughput", o)?)
            .map_err(api)
    });
    native!(m, "rtt", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .net_rtt(&options("net::rtt", o)?)
                .map_err(api)?,
        )
    });
    native!(m, "connect_time", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .net_connect_time(&options("net::connect_time", o)?)
                .map_err(api)?,
        )
    });
    native!(m, "wait_for_port", h, |o: Map| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .net_wait_for_port(&options("net::wait_for_port", o)?)
                .map_err(api)?,
        )
    });
    native!(m, "local_peer", h, || -> String {
        h.borrow_mut().local_peer().map_err(api)
    });
    m
}

fn trace_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "trace";
    let mut m = Module::new();
    native!(m, "replay", h, |path: &str| -> Dynamic {
        to_map(
            &h.borrow_mut()
                .trace_replay(path, &Default::default())
                .map_err(api)?,
        )
    });
    native!(m, "replay", h, |path: &str, o: Map| -> Dynamic {
        let o = options("trace::replay", o)?;
        to_map(&h.borrow_mut().trace_replay(path, &o).map_err(api)?)
    });
    m
}

fn time_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "time";
    let mut m = Module::new();
    native!(m, "now", h, || -> f64 { Ok(h.borrow().now()) });
    native!(m, "sleep", h, |d: Dynamic| -> () {
        let secs = to_seconds("time::sleep", &d)?;
        h.borrow().sleep(secs).map_err(api)
    });
    m.set_native_fn("measure", |ctx: NativeCallContext, f: FnPtr| -> R<Map> {
        let t = std::time::Instant::now();
        let result: Dynamic = f.call_within_context(&ctx, ())?;
        let mut m = Map::new();
        m.insert("seconds".into(), t.elapsed().as_secs_f64().into());
        m.insert("result".into(), result);
        Ok(m)
    });
    m
}

/// A metric's value (a number) and its direction (`"higher"`/`"lower"`).
fn metric_args(name: &str, value: Dynamic, better: &str) -> R<(f64, Better)> {
    let v = value
        .as_float()
        .or_else(|_| value.as_int().map(|i| i as f64))
        .map_err(|_| {
            err(format!(
                "report::metric '{name}': the value must be a number"
            ))
        })?;
    let better = better
        .parse()
        .map_err(|e| err(format!("report::metric: {e}")))?;
    Ok((v, better))
}

/// The number given to `report::counter` or `report::gauge` (an integer or
/// a float).
fn series_value(call: &str, name: &str, value: Dynamic) -> R<f64> {
    value
        .as_float()
        .or_else(|_| value.as_int().map(|i| i as f64))
        .map_err(|_| err(format!("{call} '{name}': the value must be a number")))
}

/// The marks of `report::metric`'s fifth argument: the result map of the
/// measurement the figure came from (its `loopback` and `cached` flags),
/// or an array of mark names (`["loopback"]`).
fn metric_marks(name: &str, from: Dynamic) -> R<BTreeSet<Mark>> {
    let mut marks = BTreeSet::new();
    if let Some(map) = from.read_lock::<Map>() {
        for mark in [Mark::Loopback, Mark::Cached] {
            if map
                .get(mark.name())
                .is_some_and(|f| f.as_bool() == Ok(true))
            {
                marks.insert(mark);
            }
        }
        return Ok(marks);
    }
    let Some(names) = from.read_lock::<Array>() else {
        return Err(err(format!(
            "report::metric '{name}': the fifth argument is the measurement's result (a map) or an array of marks, not {}",
            from.type_name()
        )));
    };
    for n in names.iter() {
        let text = n
            .clone()
            .into_immutable_string()
            .map_err(|_| err(format!("report::metric '{name}': a mark must be a string")))?;
        marks.insert(
            text.parse()
                .map_err(|e| err(format!("report::metric '{name}': {e}")))?,
        );
    }
    Ok(marks)
}

fn report_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "report";
    let mut m = Module::new();
    native!(m, "metric", h, |name: &str,
                             value: Dynamic,
                             unit: &str,
                             better: &str|
     -> () {
        let (v, better) = metric_args(name, value, better)?;
        h.borrow_mut()
            .metric(name, v, unit, better, BTreeSet::new())
            .map_err(api)
    });
    native!(m, "metric", h, |name: &str,
                             value: Dynamic,
                             unit: &str,
                             better: &str,
                             from: Dynamic|
     -> () {
        let (v, better) = metric_args(name, value, better)?;
        let marks = metric_marks(name, from)?;
        h.borrow_mut()
            .metric(name, v, unit, better, marks)
            .map_err(api)
    });
    native!(m, "table", h, |title: &str,
                            header: Array,
                            rows: Array|
     -> () {
        let header: Vec<String> = header.iter().map(|c| c.to_string()).collect();
        let rows = rows
            .into_iter()
            .map(|r| {
                r.into_typed_array::<Dynamic>()
                    .map(|cells| cells.iter().map(|c| c.to_string()).collect::<Vec<_>>())
                    .map_err(|_| {
                        err(format!(
                            "report::table '{title}': every row must be an array"
                        ))
                    })
            })
            .collect::<R<Vec<_>>>()?;
        h.borrow_mut().table(title, header, rows).map_err(api)
    });
    native!(m, "note", h, |text: &str| -> () {
        h.borrow_mut().note(text).map_err(api)
    });
    native!(m, "phase", h, |name: &str| -> () {
        h.borrow_mut().phase(name).map_err(api)
    });
    native!(m, "counter", h, |name: &str, amount: Dynamic| -> () {
        let v = series_value("report::counter", name, amount)?;
        h.borrow_mut().counter(name, v).map_err(api)
    });
    native!(m, "gauge", h, |name: &str, value: Dynamic| -> () {
        let v = series_value("report::gauge", name, value)?;
        h.borrow_mut().gauge(name, v).map_err(api)
    });
    native!(m, "series", h, |name: &str,
                             unit: &str,
                             points: Array|
     -> () {
        let points = series_points(name, points)?;
        h.borrow_mut().series(name, unit, points).map_err(api)
    });
    m
}

/// `[[x, y], …]` (integers or floats) as points; the count is bounded
/// before anything is converted.
fn series_points(name: &str, points: Array) -> R<Vec<(f64, f64)>> {
    Host::series_length(name, points.len()).map_err(api)?;
    let number = |v: &Dynamic| {
        v.as_float()
            .ok()
            .or_else(|| v.as_int().ok().map(|i| i as f64))
    };
    points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let pair = p.read_lock::<Array>().and_then(|a| match a.as_slice() {
                [x, y] => number(x).zip(number(y)),
                _ => None,
            });
            pair.ok_or_else(|| {
                err(format!(
                    "report::series '{name}': point {i} is not [x, y] with two numbers"
                ))
            })
        })
        .collect()
}

fn sys_module() -> Module {
    /// The module's name, for the progress line.
    const NS: &str = "sys";
    let mut m = Module::new();
    native!(m, "cpu_time", h, || -> f64 { Ok(h.borrow().cpu_time()) });
    native!(m, "info", h, || -> Dynamic {
        to_map(&h.borrow().sys_info())
    });
    m
}
