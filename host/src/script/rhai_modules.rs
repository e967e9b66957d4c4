//! The host API as Rhai static modules (`io`, `fs`, `time`, `report`, `sys`)
//! and the global `param`. Each function only converts values and calls
//! [`Host`]; no operation is implemented here.

use super::values::{
    err, flag, known_keys, option_pairs, param_value, size_field, to_bytes, to_seconds,
};
use crate::api::{ApiError, FileHandle, Host, OpenOptions};
use rhai::{Array, Dynamic, Engine, EvalAltResult, FnPtr, Map, Module, NativeCallContext};
use std::cell::RefCell;
use std::rc::Rc;

type Shared = Rc<RefCell<Host>>;

/// Registers a module function whose errors carry the position of the call
/// (Rhai leaves it empty for namespaced native functions).
macro_rules! native {
    ($m:expr, $name:expr, || -> $ret:ty { $($body:tt)* }) => {
        $m.set_native_fn($name, move |ctx: NativeCallContext| -> R<$ret> {
            // A closure, so the body can use `?`.
            #[allow(clippy::redundant_closure_call)]
            let result = (|| -> R<$ret> { $($body)* })();
            placed(&ctx, result)
        })
    };
    ($m:expr, $name:expr, |$($arg:ident : $ty:ty),*| -> $ret:ty { $($body:tt)* }) => {
        $m.set_native_fn($name, move |ctx: NativeCallContext, $($arg: $ty),*| -> R<$ret> {
            // A closure, so the body can use `?`.
            #[allow(clippy::redundant_closure_call)]
            let result = (|| -> R<$ret> { $($body)* })();
            placed(&ctx, result)
        })
    };
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

fn api(e: ApiError) -> Box<EvalAltResult> {
    err(e.to_string())
}

fn to_map<T: serde::Serialize>(v: &T) -> R<Dynamic> {
    rhai::serde::to_dynamic(v)
}

/// Every namespaced host function, for `plumb check` and the parity test.
pub const HOST_FUNCTIONS: &[&str] = &[
    "io::job",
    "fs::open",
    "fs::write_file",
    "fs::read_file",
    "fs::copy",
    "fs::rename",
    "fs::remove",
    "fs::remove_all",
    "fs::mkdir",
    "fs::list",
    "fs::stat",
    "fs::exists",
    "fs::sync_all",
    "fs::drop_caches",
    "fs::evict",
    "fs::create_files",
    "fs::stat_files",
    "fs::remove_files",
    "cpu::run",
    "cpu::kernels",
    "mem::bandwidth",
    "mem::latency",
    "net::throughput",
    "net::rtt",
    "net::connect_time",
    "net::wait_for_port",
    "net::local_peer",
    "trace::replay",
    "time::now",
    "time::sleep",
    "time::measure",
    "report::metric",
    "report::table",
    "report::note",
    "sys::info",
    "sys::cpu_time",
];

/// Registers the host API on `engine` for one scenario's host.
pub fn register(engine: &mut Engine, host: &Shared) {
    engine.register_static_module("io", io_module(host).into());
    engine.register_static_module("fs", fs_module(host).into());
    engine.register_static_module("time", time_module(host).into());
    engine.register_static_module("cpu", cpu_module(host).into());
    engine.register_static_module("mem", mem_module(host).into());
    engine.register_static_module("net", net_module(host).into());
    engine.register_static_module("trace", trace_module(host).into());
    engine.register_static_module("report", report_module(host).into());
    engine.register_static_module("sys", sys_module(host).into());
    register_file_type(engine, host);
    let h = host.clone();
    engine.register_fn("param", move |name: &str, default: Dynamic| -> R<Dynamic> {
        match h.borrow().param(name) {
            Some(text) => param_value(name, text, &default),
            None => Ok(default),
        }
    });
}

fn io_module(host: &Shared) -> Module {
    let mut m = Module::new();
    let h = host.clone();
    native!(m, "job", |opts: Map| -> Dynamic {
        let pairs = option_pairs(&opts)?;
        let result = h.borrow_mut().job(pairs).map_err(api)?;
        to_map(&result)
    });
    m
}

fn transfer_map(t: crate::api::fs::Transfer) -> Map {
    let mut m = Map::new();
    m.insert("bytes".into(), (t.bytes as i64).into());
    m.insert("seconds".into(), t.seconds.into());
    m.insert("bw_bytes".into(), t.bw_bytes().into());
    m
}

fn storm_map(s: crate::api::fs::Storm) -> Map {
    let mut m = Map::new();
    m.insert("ops".into(), (s.ops as i64).into());
    m.insert("seconds".into(), s.seconds.into());
    m.insert("ops_per_sec".into(), s.ops_per_sec().into());
    m
}

fn fs_module(host: &Shared) -> Module {
    let mut m = Module::new();
    let h = host.clone();
    let open = move |path: &str, o: Map| -> R<ScriptFile> {
        known_keys(
            "fs::open",
            &o,
            &[
                "read", "write", "create", "truncate", "append", "direct", "pattern",
            ],
        )?;
        let zero = match o.get("pattern").map(|p| p.to_string()) {
            None => false,
            Some(p) if p == "zero" => true,
            Some(p) if p == "random" => false,
            Some(p) => {
                return Err(err(format!(
                    "fs::open: pattern '{p}' is not \"random\" or \"zero\""
                )))
            }
        };
        let opts = OpenOptions {
            read: flag(&o, "read", true)?,
            write: flag(&o, "write", false)?,
            create: flag(&o, "create", false)?,
            truncate: flag(&o, "truncate", false)?,
            append: flag(&o, "append", false)?,
            direct: flag(&o, "direct", false)?,
            zero,
        };
        let f = h.borrow_mut().open(path, opts).map_err(api)?;
        Ok(Rc::new(RefCell::new(f)))
    };
    let open2 = open.clone();
    native!(m, "open", |path: &str| -> ScriptFile {
        open2(path, Map::new())
    });
    native!(m, "open", |path: &str, o: Map| -> ScriptFile {
        open(path, o)
    });

    let h = host.clone();
    let write_file = move |path: &str, size: Dynamic, o: Map| -> R<Map> {
        known_keys("fs::write_file", &o, &["bs", "direct", "fsync"])?;
        let size = to_bytes("fs::write_file size", &size)?;
        let bs = size_field(&o, "bs", 1 << 20)?;
        let t = h
            .borrow_mut()
            .write_file(
                path,
                size,
                bs,
                flag(&o, "direct", false)?,
                flag(&o, "fsync", false)?,
            )
            .map_err(api)?;
        Ok(transfer_map(t))
    };
    let wf2 = write_file.clone();
    native!(m, "write_file", |path: &str, size: Dynamic| -> Map {
        wf2(path, size, Map::new())
    });
    native!(m, "write_file", |path: &str,
                              size: Dynamic,
                              o: Map|
     -> Map { write_file(path, size, o) });

    let h = host.clone();
    let read_file = move |path: &str, o: Map| -> R<Map> {
        known_keys("fs::read_file", &o, &["bs", "direct"])?;
        let bs = size_field(&o, "bs", 1 << 20)?;
        let t = h
            .borrow_mut()
            .read_file(path, bs, flag(&o, "direct", false)?)
            .map_err(api)?;
        Ok(transfer_map(t))
    };
    let rf2 = read_file.clone();
    native!(m, "read_file", |path: &str| -> Map {
        rf2(path, Map::new())
    });
    native!(m, "read_file", |path: &str, o: Map| -> Map {
        read_file(path, o)
    });

    let h = host.clone();
    let copy = move |src: &str, dst: &str, o: Map| -> R<Map> {
        known_keys("fs::copy", &o, &["method", "bs"])?;
        let method = o
            .get("method")
            .map(|v| v.to_string())
            .unwrap_or_else(|| "read-write".into());
        let bs = size_field(&o, "bs", 1 << 20)?;
        let t = h.borrow_mut().copy(src, dst, &method, bs).map_err(api)?;
        Ok(transfer_map(t))
    };
    let c2 = copy.clone();
    native!(m, "copy", |src: &str, dst: &str| -> Map {
        c2(src, dst, Map::new())
    });
    native!(m, "copy", |src: &str, dst: &str, o: Map| -> Map {
        copy(src, dst, o)
    });

    let h = host.clone();
    native!(m, "rename", |a: &str, b: &str| -> () {
        h.borrow_mut().rename(a, b).map_err(api)
    });
    let h = host.clone();
    native!(m, "remove", |p: &str| -> () {
        h.borrow_mut().remove(p).map_err(api)
    });
    let h = host.clone();
    native!(m, "remove_all", |p: &str| -> () {
        h.borrow_mut().remove_all(p).map_err(api)
    });
    let h = host.clone();
    native!(m, "mkdir", |p: &str| -> () {
        h.borrow_mut().mkdir(p).map_err(api)
    });
    let h = host.clone();
    native!(m, "list", |p: &str| -> Array {
        let names = h.borrow().list(p).map_err(api)?;
        Ok(names.into_iter().map(Dynamic::from).collect())
    });
    let h = host.clone();
    native!(m, "stat", |p: &str| -> Map {
        let st = h.borrow().stat(p).map_err(api)?;
        let mut m = Map::new();
        m.insert("size".into(), (st.size as i64).into());
        m.insert("is_dir".into(), st.is_dir.into());
        m.insert("is_symlink".into(), st.is_symlink.into());
        m.insert("mtime".into(), st.mtime.into());
        Ok(m)
    });
    let h = host.clone();
    native!(m, "exists", |p: &str| -> bool {
        h.borrow().exists(p).map_err(api)
    });
    let h = host.clone();
    native!(m, "sync_all", || -> () {
        h.borrow_mut().sync_all();
        Ok(())
    });
    let h = host.clone();
    native!(m, "evict", |p: &str| -> () {
        h.borrow_mut().evict(p).map_err(api)
    });
    let h = host.clone();
    native!(m, "drop_caches", || -> () {
        h.borrow_mut().drop_caches().map_err(api)
    });
    let h = host.clone();
    native!(m, "create_files", |dir: &str,
                                count: i64,
                                size: Dynamic|
     -> Map {
        let size = to_bytes("fs::create_files size", &size)?;
        let count = u64::try_from(count).map_err(|_| err("fs::create_files: count is negative"))?;
        Ok(storm_map(
            h.borrow_mut().create_files(dir, count, size).map_err(api)?,
        ))
    });
    let h = host.clone();
    native!(m, "stat_files", |dir: &str| -> Map {
        Ok(storm_map(h.borrow_mut().stat_files(dir).map_err(api)?))
    });
    let h = host.clone();
    native!(m, "remove_files", |dir: &str| -> Map {
        Ok(storm_map(h.borrow_mut().remove_files(dir).map_err(api)?))
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

fn cpu_module(host: &Shared) -> Module {
    let mut m = Module::new();
    let h = host.clone();
    native!(m, "run", |o: Map| -> Dynamic {
        let kernel = o
            .get("kernel")
            .map(|k| k.to_string())
            .unwrap_or_else(|| "prime".into());
        let k = crate::cpu::kernel(&kernel).map_err(|e| err(format!("cpu::run: {e}")))?;
        known_keys(
            "cpu::run",
            &o,
            &["kernel", "threads", "duration", "baseline", k.param],
        )?;
        let threads = positive_int(&o, "cpu::run", "threads", 1)?;
        let secs = o
            .get("duration")
            .map(|d| to_seconds("cpu::run duration", d))
            .transpose()?
            .unwrap_or(10.0);
        let param = o
            .get(k.param)
            .map(|p| to_bytes(&format!("cpu::run {}", k.param), p))
            .transpose()?;
        let baseline = match o.get("baseline") {
            None => None,
            Some(b) => Some(
                b.as_float()
                    .or_else(|_| b.as_int().map(|i| i as f64))
                    .map_err(|_| err("cpu::run: baseline must be a number (a 1-thread rate)"))?,
            ),
        };
        let r = h
            .borrow_mut()
            .cpu(&kernel, threads, secs, param, baseline)
            .map_err(api)?;
        to_map(&r)
    });
    native!(m, "kernels", || -> Dynamic {
        to_map(&crate::cpu::catalogue())
    });
    m
}

fn mem_module(host: &Shared) -> Module {
    let mut m = Module::new();
    let h = host.clone();
    native!(m, "bandwidth", |o: Map| -> Dynamic {
        let f = "mem::bandwidth";
        known_keys(
            f,
            &o,
            &[
                "oper",
                "block_size",
                "total_size",
                "scope",
                "threads",
                "duration",
            ],
        )?;
        let mut b = crate::mem::BandwidthOptions {
            threads: positive_int(&o, f, "threads", 1)?,
            ..Default::default()
        };
        if let Some(v) = o.get("oper") {
            b.oper = v
                .to_string()
                .parse()
                .map_err(|e| err(format!("{f}: {e}")))?;
        }
        if let Some(v) = o.get("scope") {
            b.scope = v
                .to_string()
                .parse()
                .map_err(|e| err(format!("{f}: {e}")))?;
        }
        if let Some(v) = o.get("block_size") {
            b.block_size = to_bytes(&format!("{f} block_size"), v)?;
        }
        if let Some(v) = o.get("total_size") {
            b.total_size = to_bytes(&format!("{f} total_size"), v)?;
        }
        if let Some(v) = o.get("duration") {
            b.duration = duration(&format!("{f} duration"), v)?;
        }
        let r = h.borrow_mut().mem_bandwidth(b).map_err(api)?;
        to_map(&r)
    });
    let h = host.clone();
    native!(m, "latency", |o: Map| -> Dynamic {
        let f = "mem::latency";
        known_keys(
            f,
            &o,
            &[
                "min_size",
                "max_size",
                "steps_per_doubling",
                "time_per_size",
            ],
        )?;
        let mut l = crate::mem::LatencyOptions::default();
        if let Some(v) = o.get("min_size") {
            l.min_size = to_bytes(&format!("{f} min_size"), v)?;
        }
        if let Some(v) = o.get("max_size") {
            l.max_size = to_bytes(&format!("{f} max_size"), v)?;
        }
        l.steps_per_doubling = positive_int(&o, f, "steps_per_doubling", 1)?;
        if let Some(v) = o.get("time_per_size") {
            l.time_per_size = duration(&format!("{f} time_per_size"), v)?;
        }
        let r = h.borrow_mut().mem_latency(&l).map_err(api)?;
        to_map(&r)
    });
    m
}

/// The required `addr` of a network call.
fn address(o: &Map, func: &str) -> R<String> {
    o.get("addr")
        .map(|a| a.to_string())
        .ok_or_else(|| err(format!("{func}: addr (\"HOST:PORT\") is required")))
}

/// An optional duration option with a default.
fn duration_or(o: &Map, func: &str, key: &str, default: f64) -> R<std::time::Duration> {
    match o.get(key) {
        Some(v) => duration(&format!("{func} {key}"), v),
        None => Ok(std::time::Duration::from_secs_f64(default)),
    }
}

/// An optional interval (zero allowed) with a default.
fn interval_or(o: &Map, func: &str, default: f64) -> R<std::time::Duration> {
    match o.get("interval") {
        Some(v) => {
            let secs = to_seconds(&format!("{func} interval"), v)?;
            if !(0.0..3600.0).contains(&secs) {
                return Err(err(format!(
                    "{func}: interval {secs} must be 0 to 3600 seconds"
                )));
            }
            Ok(std::time::Duration::from_secs_f64(secs))
        }
        None => Ok(std::time::Duration::from_secs_f64(default)),
    }
}

fn net_module(host: &Shared) -> Module {
    let mut m = Module::new();
    let h = host.clone();
    native!(m, "throughput", |o: Map| -> Dynamic {
        let f = "net::throughput";
        known_keys(
            f,
            &o,
            &["addr", "streams", "duration", "direction", "buffer"],
        )?;
        let addr = address(&o, f)?;
        let direction = match o.get("direction") {
            Some(d) => d
                .to_string()
                .parse()
                .map_err(|e| err(format!("{f}: {e}")))?,
            None => crate::net::Direction::Send,
        };
        let buffer = size_field(&o, "buffer", 128 << 10)?;
        let opts = crate::net::ThroughputOptions {
            streams: positive_int(&o, f, "streams", 1)?,
            duration: duration_or(&o, f, "duration", 10.0)?,
            direction,
            buffer: usize::try_from(buffer).unwrap_or(usize::MAX),
        };
        let r = h.borrow_mut().net_throughput(&addr, opts).map_err(api)?;
        to_map(&r)
    });
    let h = host.clone();
    native!(m, "rtt", |o: Map| -> Dynamic {
        let f = "net::rtt";
        known_keys(f, &o, &["addr", "count", "size", "interval"])?;
        let addr = address(&o, f)?;
        let count = positive_int(&o, f, "count", 1000)?;
        let size = size_field(&o, "size", 64)?;
        let interval = interval_or(&o, f, 0.0)?;
        let r = h
            .borrow_mut()
            .net_rtt(&addr, count.into(), size, interval)
            .map_err(api)?;
        to_map(&r)
    });
    let h = host.clone();
    native!(m, "connect_time", |o: Map| -> Dynamic {
        let f = "net::connect_time";
        known_keys(f, &o, &["addr", "count", "timeout", "interval"])?;
        let addr = address(&o, f)?;
        let count = positive_int(&o, f, "count", 10)?;
        let timeout = duration_or(&o, f, "timeout", 5.0)?;
        let interval = interval_or(&o, f, 0.0)?;
        let r = h
            .borrow_mut()
            .net_connect_time(&addr, count.into(), timeout, interval)
            .map_err(api)?;
        to_map(&r)
    });
    let h = host.clone();
    native!(m, "wait_for_port", |o: Map| -> Dynamic {
        let f = "net::wait_for_port";
        known_keys(f, &o, &["addr", "timeout", "interval"])?;
        let addr = address(&o, f)?;
        let timeout = duration_or(&o, f, "timeout", 60.0)?;
        let interval = interval_or(&o, f, 0.1)?;
        let r = h
            .borrow_mut()
            .net_wait_for_port(&addr, timeout, interval)
            .map_err(api)?;
        to_map(&r)
    });
    let h = host.clone();
    native!(m, "local_peer", || -> String {
        h.borrow_mut().local_peer().map_err(api)
    });
    m
}

fn trace_module(host: &Shared) -> Module {
    let mut m = Module::new();
    let h = host.clone();
    let replay = move |path: &str, o: Map| -> R<Dynamic> {
        let f = "trace::replay";
        known_keys(f, &o, &["speed", "threads"])?;
        let speed = match o.get("speed") {
            None => crate::trace::Speed::Factor(1.0),
            Some(v) => v
                .to_string()
                .parse()
                .map_err(|e| err(format!("{f}: {e}")))?,
        };
        let keep_threads = match o.get("threads").map(|v| v.to_string()) {
            None => true,
            Some(t) if t == "keep" => true,
            Some(t) if t == "1" => false,
            Some(t) => return Err(err(format!("{f}: threads '{t}' is not \"keep\" or 1"))),
        };
        let opts = crate::trace::ReplayOptions {
            speed,
            keep_threads,
        };
        let r = h.borrow_mut().trace_replay(path, opts).map_err(api)?;
        to_map(&r)
    };
    let replay2 = replay.clone();
    native!(m, "replay", |path: &str| -> Dynamic {
        replay2(path, Map::new())
    });
    native!(m, "replay", |path: &str, o: Map| -> Dynamic {
        replay(path, o)
    });
    m
}

/// A positive duration option.
fn duration(what: &str, v: &Dynamic) -> R<std::time::Duration> {
    let secs = to_seconds(what, v)?;
    if !(secs > 0.0 && secs < 1e9) {
        return Err(err(format!(
            "{what}: {secs} must be a positive number of seconds"
        )));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// An optional positive integer option that fits u32.
fn positive_int(o: &Map, func: &str, key: &str, default: u32) -> R<u32> {
    match o.get(key) {
        None => Ok(default),
        Some(t) => t
            .as_int()
            .ok()
            .and_then(|t| u32::try_from(t).ok())
            .filter(|t| *t > 0)
            .ok_or_else(|| err(format!("{func}: {key} must be a positive integer, not {t}"))),
    }
}

fn time_module(host: &Shared) -> Module {
    let mut m = Module::new();
    let h = host.clone();
    native!(m, "now", || -> f64 { Ok(h.borrow().now()) });
    let h = host.clone();
    native!(m, "sleep", |d: Dynamic| -> () {
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

fn report_module(host: &Shared) -> Module {
    let mut m = Module::new();
    let h = host.clone();
    native!(m, "metric", |name: &str,
                          value: Dynamic,
                          unit: &str,
                          better: &str|
     -> () {
        let v = value
            .as_float()
            .or_else(|_| value.as_int().map(|i| i as f64))
            .map_err(|_| {
                err(format!(
                    "report::metric '{name}': the value must be a number"
                ))
            })?;
        h.borrow_mut().metric(name, v, unit, better).map_err(api)
    });
    let h = host.clone();
    native!(m, "table", |title: &str,
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
    let h = host.clone();
    native!(m, "note", |text: &str| -> () {
        h.borrow_mut().note(text).map_err(api)
    });
    m
}

fn sys_module(host: &Shared) -> Module {
    let mut m = Module::new();
    let h = host.clone();
    native!(m, "cpu_time", || -> f64 { Ok(h.borrow().cpu_time()) });
    native!(m, "info", || -> Dynamic {
        to_map(&crate::sysinfo::host_info())
    });
    m
}
