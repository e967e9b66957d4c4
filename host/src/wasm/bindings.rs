//! The `plumb:bench` world bound to [`Host`]: each WIT function converts its
//! arguments and calls the one Rust definition of the operation.

pub use crate::api::FileHandle;
use crate::api::{ApiError, Host, OpenOptions};
use serde::Serialize;
use std::time::Duration;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime::StoreLimits;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

wasmtime::component::bindgen!({
    path: "wit",
    world: "scenario",
    imports: { default: trappable },
    with: { "plumb:bench/fs.file": crate::api::FileHandle },
});

use self::plumb::bench::types::{Error, OsError, Storm as WitStorm, Transfer as WitTransfer};

/// What a guest's store holds.
pub struct State {
    /// The host API.
    pub host: Host,
    /// Open file resources.
    pub table: ResourceTable,
    /// WASI: stdout, stderr, clocks, random; nothing else.
    pub wasi: WasiCtx,
    /// Memory limits.
    pub limits: StoreLimits,
    /// Set when the guest went over its memory limit.
    pub limits_hit: bool,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl From<ApiError> for Error {
    fn from(e: ApiError) -> Error {
        match e {
            ApiError::Sandbox(s) => match s.errno() {
                Some(errno) => Error::Os(OsError {
                    op: "sandbox".into(),
                    errno,
                    message: s.to_string(),
                }),
                None => Error::Sandbox(s.to_string()),
            },
            e @ ApiError::Budget { .. } => Error::Budget(e.to_string()),
            ApiError::Invalid(m) => Error::Invalid(m),
            ApiError::Os { op, source } => Error::Os(OsError {
                errno: source.raw_os_error().unwrap_or(0),
                message: format!("{op}: {source}"),
                op,
            }),
            e @ ApiError::Deadline(_) => Error::Deadline(e.to_string()),
            ApiError::Interrupted => Error::Interrupted,
            ApiError::Net(n) => Error::Net(n.to_string()),
        }
    }
}

type Out<T> = wasmtime::Result<Result<T, Error>>;

fn done<T>(r: Result<T, ApiError>) -> Out<T> {
    Ok(r.map_err(Error::from))
}

fn json<T: Serialize>(r: Result<T, ApiError>) -> Out<String> {
    done(r.map(|v| serde_json::to_string(&v).expect("results serialise")))
}

fn seconds(what: &str, s: f64) -> Result<Duration, ApiError> {
    if (0.0..1e9).contains(&s) {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(ApiError::Invalid(format!(
            "{what}: {s} is not a number of seconds"
        )))
    }
}

fn transfer(t: crate::api::fs::Transfer) -> WitTransfer {
    WitTransfer {
        bytes: t.bytes,
        seconds: t.seconds,
        bw_bytes: t.bw_bytes(),
    }
}

fn storm(s: crate::api::fs::Storm) -> WitStorm {
    WitStorm {
        ops: s.ops,
        seconds: s.seconds,
        ops_per_sec: s.ops_per_sec(),
    }
}

impl plumb::bench::types::Host for State {}

impl plumb::bench::io::Host for State {
    fn job(&mut self, options: Vec<(String, String)>) -> Out<String> {
        json(self.host.job(options))
    }
}

impl plumb::bench::fs::HostFile for State {
    fn read_at(&mut self, f: Resource<FileHandle>, offset: u64, len: u64) -> Out<u64> {
        let f = self.table.get_mut(&f)?;
        done(f.read_at(offset, len))
    }
    fn write_at(&mut self, f: Resource<FileHandle>, offset: u64, len: u64) -> Out<u64> {
        let f = self.table.get_mut(&f)?;
        done(f.write_at(&mut self.host, offset, len))
    }
    fn append(&mut self, f: Resource<FileHandle>, len: u64) -> Out<u64> {
        let f = self.table.get_mut(&f)?;
        done(f.append(&mut self.host, len))
    }
    fn fsync(&mut self, f: Resource<FileHandle>) -> Out<()> {
        done(self.table.get_mut(&f)?.fsync())
    }
    fn fdatasync(&mut self, f: Resource<FileHandle>) -> Out<()> {
        done(self.table.get_mut(&f)?.fdatasync())
    }
    fn truncate(&mut self, f: Resource<FileHandle>, len: u64) -> Out<()> {
        let f = self.table.get_mut(&f)?;
        done(f.truncate(&mut self.host, len))
    }
    fn fallocate(&mut self, f: Resource<FileHandle>, len: u64) -> Out<()> {
        let f = self.table.get_mut(&f)?;
        done(f.fallocate(&mut self.host, len))
    }
    fn size(&mut self, f: Resource<FileHandle>) -> Out<u64> {
        done(self.table.get(&f)?.size())
    }
    fn close(&mut self, f: Resource<FileHandle>) -> wasmtime::Result<()> {
        self.table.get_mut(&f)?.close();
        Ok(())
    }
    fn drop(&mut self, f: Resource<FileHandle>) -> wasmtime::Result<()> {
        self.table.delete(f)?.close();
        Ok(())
    }
}

impl plumb::bench::fs::Host for State {
    fn open(
        &mut self,
        path: String,
        o: plumb::bench::fs::OpenOptions,
    ) -> Out<Resource<FileHandle>> {
        let opts = OpenOptions {
            read: o.read,
            write: o.write,
            create: o.create,
            truncate: o.truncate,
            append: o.append,
            direct: o.direct,
            zero: o.zero,
        };
        match self.host.open(&path, opts) {
            Ok(f) => Ok(Ok(self.table.push(f)?)),
            Err(e) => Ok(Err(e.into())),
        }
    }
    fn write_file(
        &mut self,
        path: String,
        size: u64,
        bs: u64,
        direct: bool,
        fsync: bool,
    ) -> Out<WitTransfer> {
        done(
            self.host
                .write_file(&path, size, bs, direct, fsync)
                .map(transfer),
        )
    }
    fn read_file(&mut self, path: String, bs: u64, direct: bool) -> Out<WitTransfer> {
        done(self.host.read_file(&path, bs, direct).map(transfer))
    }
    fn copy(&mut self, src: String, dst: String, method: String, bs: u64) -> Out<WitTransfer> {
        done(self.host.copy(&src, &dst, &method, bs).map(transfer))
    }
    fn rename(&mut self, src: String, dst: String) -> Out<()> {
        done(self.host.rename(&src, &dst))
    }
    fn remove(&mut self, path: String) -> Out<()> {
        done(self.host.remove(&path))
    }
    fn remove_all(&mut self, path: String) -> Out<()> {
        done(self.host.remove_all(&path))
    }
    fn mkdir(&mut self, path: String) -> Out<()> {
        done(self.host.mkdir(&path))
    }
    fn list(&mut self, path: String) -> Out<Vec<String>> {
        done(self.host.list(&path))
    }
    fn stat(&mut self, path: String) -> Out<plumb::bench::fs::FileStat> {
        done(self.host.stat(&path).map(|st| plumb::bench::fs::FileStat {
            size: st.size,
            is_dir: st.is_dir,
            is_symlink: st.is_symlink,
            mtime: st.mtime,
        }))
    }
    fn exists(&mut self, path: String) -> Out<bool> {
        done(self.host.exists(&path))
    }
    fn sync_all(&mut self) -> wasmtime::Result<()> {
        self.host.sync_all();
        Ok(())
    }
    fn drop_caches(&mut self) -> Out<()> {
        done(self.host.drop_caches())
    }
    fn evict(&mut self, path: String) -> Out<()> {
        done(self.host.evict(&path))
    }
    fn create_files(&mut self, dir: String, count: u64, size: u64) -> Out<WitStorm> {
        done(self.host.create_files(&dir, count, size).map(storm))
    }
    fn stat_files(&mut self, dir: String) -> Out<WitStorm> {
        done(self.host.stat_files(&dir).map(storm))
    }
    fn remove_files(&mut self, dir: String) -> Out<WitStorm> {
        done(self.host.remove_files(&dir).map(storm))
    }
}

impl plumb::bench::time::Host for State {
    fn now(&mut self) -> wasmtime::Result<f64> {
        Ok(self.host.now())
    }
    fn sleep(&mut self, s: f64) -> Out<()> {
        done(self.host.sleep(s))
    }
}

impl plumb::bench::report::Host for State {
    fn metric(&mut self, name: String, value: f64, unit: String, better: String) -> Out<()> {
        done(self.host.metric(&name, value, &unit, &better))
    }
    fn table(&mut self, title: String, header: Vec<String>, rows: Vec<Vec<String>>) -> Out<()> {
        done(self.host.table(&title, header, rows))
    }
    fn note(&mut self, text: String) -> wasmtime::Result<()> {
        // The WIT `note` returns nothing: a refused note stops the guest
        // with the error.
        self.host.note(&text)?;
        Ok(())
    }
}

impl plumb::bench::params::Host for State {
    fn get(&mut self, name: String) -> wasmtime::Result<Option<String>> {
        Ok(self.host.param(&name).map(str::to_string))
    }
}

impl plumb::bench::sys::Host for State {
    fn info(&mut self) -> wasmtime::Result<String> {
        Ok(serde_json::to_string(&crate::sysinfo::host_info())?)
    }
    fn cpu_time(&mut self) -> wasmtime::Result<f64> {
        Ok(self.host.cpu_time())
    }
}

impl plumb::bench::cpu::Host for State {
    fn run(
        &mut self,
        kernel: String,
        threads: u32,
        seconds: f64,
        param: Option<u64>,
        baseline: Option<f64>,
    ) -> Out<String> {
        json(self.host.cpu(&kernel, threads, seconds, param, baseline))
    }
    fn kernels(&mut self) -> wasmtime::Result<String> {
        Ok(serde_json::to_string(&crate::cpu::catalogue())?)
    }
}

impl plumb::bench::mem::Host for State {
    fn bandwidth(
        &mut self,
        oper: String,
        block_size: u64,
        total_size: u64,
        scope: String,
        threads: u32,
        secs: f64,
    ) -> Out<String> {
        let o = (|| {
            Ok(crate::mem::BandwidthOptions {
                oper: oper.parse().map_err(ApiError::Invalid)?,
                block_size,
                total_size,
                scope: scope.parse().map_err(ApiError::Invalid)?,
                threads,
                duration: seconds("mem.bandwidth seconds", secs)?,
            })
        })();
        json(o.and_then(|o| self.host.mem_bandwidth(o)))
    }
    fn latency(&mut self, min_size: u64, max_size: u64, steps: u32, per_size: f64) -> Out<String> {
        let o = seconds("mem.latency seconds-per-size", per_size).map(|time_per_size| {
            crate::mem::LatencyOptions {
                min_size,
                max_size,
                steps_per_doubling: steps,
                time_per_size,
            }
        });
        json(o.and_then(|o| self.host.mem_latency(&o)))
    }
}

impl plumb::bench::net::Host for State {
    fn throughput(
        &mut self,
        addr: String,
        streams: u32,
        secs: f64,
        direction: String,
        buffer: u64,
    ) -> Out<String> {
        let o = (|| {
            Ok(crate::net::ThroughputOptions {
                streams,
                duration: seconds("net.throughput seconds", secs)?,
                direction: direction.parse().map_err(ApiError::Invalid)?,
                buffer: usize::try_from(buffer).unwrap_or(usize::MAX),
            })
        })();
        json(o.and_then(|o| self.host.net_throughput(&addr, o)))
    }
    fn rtt(&mut self, addr: String, count: u64, size: u64, interval: f64) -> Out<String> {
        let i = seconds("net.rtt interval", interval);
        json(i.and_then(|i| self.host.net_rtt(&addr, count, size, i)))
    }
    fn connect_time(
        &mut self,
        addr: String,
        count: u64,
        timeout: f64,
        interval: f64,
    ) -> Out<String> {
        let t = seconds("net.connect-time timeout", timeout)
            .and_then(|t| Ok((t, seconds("net.connect-time interval", interval)?)));
        json(t.and_then(|(t, i)| self.host.net_connect_time(&addr, count, t, i)))
    }
    fn wait_for_port(&mut self, addr: String, timeout: f64, interval: f64) -> Out<String> {
        let t = seconds("net.wait-for-port timeout", timeout)
            .and_then(|t| Ok((t, seconds("net.wait-for-port interval", interval)?)));
        json(t.and_then(|(t, i)| self.host.net_wait_for_port(&addr, t, i)))
    }
    fn local_peer(&mut self) -> Out<String> {
        done(self.host.local_peer())
    }
}

impl plumb::bench::trace::Host for State {
    fn replay(&mut self, name: String, speed: String, keep_threads: bool) -> Out<String> {
        let o = speed
            .parse()
            .map_err(ApiError::Invalid)
            .map(|speed| crate::trace::ReplayOptions {
                speed,
                keep_threads,
            });
        json(o.and_then(|o| self.host.trace_replay(&name, o)))
    }
}
