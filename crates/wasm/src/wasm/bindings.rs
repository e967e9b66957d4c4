//! The `plumb:bench` world bound to [`Host`]: each WIT function converts its
//! arguments (records into options structs, see `convert.rs`), calls the one
//! Rust definition of the operation and converts the typed result back.

use super::limiter::GuestLimiter;
pub use crate::api::compute::CpuHandle;
pub use crate::api::fs::CopyHandle;
pub use crate::api::io::JobHandle;
pub use crate::api::net::ThroughputHandle;
pub use crate::api::FileHandle;
use crate::api::{ApiError, Host};
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "scenario",
    imports: { default: trappable },
    with: {
        "plumb:bench/fs.file": crate::api::FileHandle,
        "plumb:bench/io.job-handle": crate::api::io::JobHandle,
        "plumb:bench/fs.copy-handle": crate::api::fs::CopyHandle,
        "plumb:bench/cpu.cpu-handle": crate::api::compute::CpuHandle,
        "plumb:bench/net.throughput-handle": crate::api::net::ThroughputHandle,
    },
});

use self::plumb::bench::types::{
    Error, OsError, Progress as WitProgress, Storm as WitStorm, Transfer as WitTransfer,
};
use crate::api::fs::{StormReport, TransferReport};

/// What a guest's store holds.
pub struct State {
    /// The host API.
    pub host: Host,
    /// Open file resources.
    pub table: ResourceTable,
    /// WASI: stdout, stderr, clocks, random; nothing else.
    pub wasi: WasiCtx,
    /// The guest's limits (memory in total, memories, instances, tables), and whether memory's was hit.
    pub limiter: GuestLimiter,
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
            ApiError::Denied(m) => Error::Denied(m),
            e @ ApiError::Failed { .. } => Error::Failed(e.to_string()),
            e @ ApiError::Deadline(_) => Error::Deadline(e.to_string()),
            ApiError::Interrupted => Error::Interrupted,
            ApiError::Net(n) => Error::Net(n.to_string()),
        }
    }
}

type Out<T> = wasmtime::Result<Result<T, Error>>;

/// The guest's answer: the operation's result converted to its record, or
/// its error.
fn done<T, W: From<T>>(r: Result<T, ApiError>) -> Out<W> {
    Ok(r.map(W::from).map_err(Error::from))
}

/// The API's transfer report as the WIT record, field for field.
fn transfer(t: crate::api::fs::Transfer) -> WitTransfer {
    let t = TransferReport::from(t);
    WitTransfer {
        bytes: t.bytes,
        seconds: t.seconds,
        bw_bytes: t.bw_bytes,
        started_s: t.started_s,
        ended_s: t.ended_s,
        cached: t.cached,
    }
}

/// The API's storm report as the WIT record, field for field.
fn storm(s: crate::api::fs::Storm) -> WitStorm {
    let s = StormReport::from(s);
    WitStorm {
        ops: s.ops,
        seconds: s.seconds,
        ops_per_sec: s.ops_per_sec,
        started_s: s.started_s,
        ended_s: s.ended_s,
    }
}

impl plumb::bench::types::Host for State {}

impl plumb::bench::io::Host for State {
    fn job(&mut self, options: Vec<(String, String)>) -> Out<plumb::bench::io::JobResult> {
        done(self.host.job(options))
    }
    fn group(
        &mut self,
        jobs: Vec<Vec<(String, String)>>,
        options: plumb::bench::io::GroupOptions,
    ) -> Out<Vec<plumb::bench::io::JobResult>> {
        Ok(self
            .host
            .group(jobs, &options.into())
            .map(|rs| rs.into_iter().map(Into::into).collect())
            .map_err(Error::from))
    }
    fn start(&mut self, options: Vec<(String, String)>) -> Out<Resource<JobHandle>> {
        match self.host.start_job(options) {
            Ok(h) => Ok(Ok(self.table.push(h)?)),
            Err(e) => Ok(Err(e.into())),
        }
    }
}

/// A background task's resource: the same five methods whatever the work,
/// with its result and progress converted.
macro_rules! task_resource {
    ($trait:path, $handle:ty, $progress:ty, $result:ty, $convert:expr) => {
        impl $trait for State {
            fn name(&mut self, j: Resource<$handle>) -> wasmtime::Result<String> {
                Ok(self.table.get(&j)?.name())
            }
            fn done(&mut self, j: Resource<$handle>) -> wasmtime::Result<bool> {
                Ok(self.table.get(&j)?.done())
            }
            fn progress(&mut self, j: Resource<$handle>) -> wasmtime::Result<$progress> {
                Ok(<$progress>::from(self.table.get(&j)?.progress()))
            }
            fn wait(&mut self, j: Resource<$handle>) -> Out<$result> {
                let j = self.table.get(&j)?.clone();
                Ok(j.wait(&mut self.host).map($convert).map_err(Error::from))
            }
            fn stop(&mut self, j: Resource<$handle>) -> Out<$result> {
                let j = self.table.get(&j)?.clone();
                Ok(j.stop(&mut self.host).map($convert).map_err(Error::from))
            }
            fn drop(&mut self, j: Resource<$handle>) -> wasmtime::Result<()> {
                // Dropping a handle does not stop the work: the scenario's end does.
                self.table.delete(j)?;
                Ok(())
            }
        }
    };
}

task_resource!(
    plumb::bench::io::HostJobHandle,
    JobHandle,
    WitProgress,
    plumb::bench::io::JobResult,
    Into::into
);
task_resource!(
    plumb::bench::fs::HostCopyHandle,
    CopyHandle,
    WitProgress,
    WitTransfer,
    transfer
);
task_resource!(
    plumb::bench::cpu::HostCpuHandle,
    CpuHandle,
    plumb::bench::cpu::CpuProgress,
    plumb::bench::cpu::CpuResult,
    Into::into
);
task_resource!(
    plumb::bench::net::HostThroughputHandle,
    ThroughputHandle,
    WitProgress,
    plumb::bench::net::ThroughputResult,
    Into::into
);

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
        match self.host.open(&path, o.into()) {
            Ok(f) => Ok(Ok(self.table.push(f)?)),
            Err(e) => Ok(Err(e.into())),
        }
    }
    fn write_file(
        &mut self,
        path: String,
        size: u64,
        o: plumb::bench::fs::WriteOptions,
    ) -> Out<WitTransfer> {
        done(self.host.write_file(&path, size, &o.into()).map(transfer))
    }
    fn read_file(&mut self, path: String, o: plumb::bench::fs::ReadOptions) -> Out<WitTransfer> {
        done(self.host.read_file(&path, &o.into()).map(transfer))
    }
    fn copy(
        &mut self,
        src: String,
        dst: String,
        o: plumb::bench::fs::CopyOptions,
    ) -> Out<WitTransfer> {
        done(self.host.copy(&src, &dst, &o.into()).map(transfer))
    }
    fn start_copy(
        &mut self,
        src: String,
        dst: String,
        o: plumb::bench::fs::CopyOptions,
    ) -> Out<Resource<CopyHandle>> {
        match self.host.start_copy(&src, &dst, &o.into()) {
            Ok(h) => Ok(Ok(self.table.push(h)?)),
            Err(e) => Ok(Err(e.into())),
        }
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
        done(self.host.stat(&path))
    }
    fn exists(&mut self, path: String) -> Out<bool> {
        done(self.host.exists(&path))
    }
    fn sync_all(&mut self) -> wasmtime::Result<()> {
        self.host.sync_all();
        Ok(())
    }
    fn fsync_dir(&mut self, path: String) -> Out<()> {
        done(self.host.fsync_dir(&path))
    }
    fn drop_caches(&mut self) -> Out<()> {
        done(self.host.drop_caches())
    }
    fn evict(&mut self, path: String) -> Out<()> {
        done(self.host.evict(&path))
    }
    fn room(&mut self) -> Out<u64> {
        done(self.host.room())
    }
    fn create_files(
        &mut self,
        dir: String,
        count: u64,
        size: u64,
        o: plumb::bench::fs::CreateOptions,
    ) -> Out<WitStorm> {
        done(
            self.host
                .create_files(&dir, count, size, &o.into())
                .map(storm),
        )
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
    fn metric(
        &mut self,
        name: String,
        value: f64,
        unit: String,
        better: plumb::bench::report::Better,
        marks: Vec<plumb::bench::report::Mark>,
    ) -> Out<()> {
        use crate::model::document::Mark;
        let marks = marks
            .into_iter()
            .map(|m| match m {
                plumb::bench::report::Mark::Loopback => Mark::Loopback,
                plumb::bench::report::Mark::Cached => Mark::Cached,
            })
            .collect();
        done(self.host.metric(&name, value, &unit, better.into(), marks))
    }
    fn table(&mut self, title: String, header: Vec<String>, rows: Vec<Vec<String>>) -> Out<()> {
        done(self.host.table(&title, header, rows))
    }
    fn note(&mut self, text: String) -> Out<()> {
        done(self.host.note(&text))
    }
    fn phase(&mut self, name: String) -> Out<()> {
        done(self.host.phase(&name))
    }
    fn counter(&mut self, name: String, amount: f64) -> Out<()> {
        done(self.host.counter(&name, amount))
    }
    fn gauge(&mut self, name: String, value: f64) -> Out<()> {
        done(self.host.gauge(&name, value))
    }
    fn series(&mut self, name: String, unit: String, points: Vec<(f64, f64)>) -> Out<()> {
        done(self.host.series(&name, &unit, points))
    }
}

impl plumb::bench::params::Host for State {
    fn get(&mut self, name: String) -> wasmtime::Result<Option<String>> {
        Ok(self.host.param(&name).map(str::to_string))
    }
}

impl plumb::bench::sys::Host for State {
    fn info(&mut self) -> wasmtime::Result<plumb::bench::sys::HostInfo> {
        Ok(self.host.sys_info().into())
    }
    fn cpu_time(&mut self) -> wasmtime::Result<f64> {
        Ok(self.host.cpu_time())
    }
}

impl plumb::bench::cpu::Host for State {
    fn run(&mut self, o: plumb::bench::cpu::CpuOptions) -> Out<plumb::bench::cpu::CpuResult> {
        done(self.host.cpu(&o.into()))
    }
    fn start(&mut self, o: plumb::bench::cpu::CpuOptions) -> Out<Resource<CpuHandle>> {
        match self.host.start_cpu(&o.into()) {
            Ok(h) => Ok(Ok(self.table.push(h)?)),
            Err(e) => Ok(Err(e.into())),
        }
    }
    fn kernels(&mut self) -> wasmtime::Result<Vec<plumb::bench::cpu::KernelInfo>> {
        Ok(self
            .host
            .cpu_kernels()
            .into_iter()
            .map(Into::into)
            .collect())
    }
}

impl plumb::bench::mem::Host for State {
    fn bandwidth(
        &mut self,
        o: plumb::bench::mem::BandwidthOptions,
    ) -> Out<plumb::bench::mem::BandwidthResult> {
        done(self.host.mem_bandwidth(&o.into()))
    }
    fn latency(
        &mut self,
        o: plumb::bench::mem::LatencyOptions,
    ) -> Out<plumb::bench::mem::LatencyResult> {
        done(self.host.mem_latency(&o.into()))
    }
}

impl plumb::bench::net::Host for State {
    fn throughput(
        &mut self,
        o: plumb::bench::net::ThroughputOptions,
    ) -> Out<plumb::bench::net::ThroughputResult> {
        done(self.host.net_throughput(&o.into()))
    }
    fn start_throughput(
        &mut self,
        o: plumb::bench::net::ThroughputOptions,
    ) -> Out<Resource<ThroughputHandle>> {
        match self.host.start_throughput(&o.into()) {
            Ok(h) => Ok(Ok(self.table.push(h)?)),
            Err(e) => Ok(Err(e.into())),
        }
    }
    fn rtt(&mut self, o: plumb::bench::net::RttOptions) -> Out<plumb::bench::net::RttResult> {
        done(self.host.net_rtt(&o.into()))
    }
    fn connect_time(
        &mut self,
        o: plumb::bench::net::ConnectOptions,
    ) -> Out<plumb::bench::net::ConnectResult> {
        done(self.host.net_connect_time(&o.into()))
    }
    fn wait_for_port(
        &mut self,
        o: plumb::bench::net::WaitOptions,
    ) -> Out<plumb::bench::net::PortWait> {
        done(self.host.net_wait_for_port(&o.into()))
    }
    fn local_peer(&mut self) -> Out<String> {
        done(self.host.local_peer())
    }
}

impl plumb::bench::trace::Host for State {
    fn replay(
        &mut self,
        name: String,
        o: plumb::bench::trace::ReplayOptions,
    ) -> Out<plumb::bench::trace::ReplayResult> {
        done(self.host.trace_replay(&name, &o.into()))
    }
}
