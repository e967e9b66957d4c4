//! Conversions between the WIT world's records and the host API's types:
//! option records into the API's options structs (a `none` field keeps the
//! struct's default), typed results into result records. Field for field,
//! with no default or rule of their own.

use super::bindings::plumb::bench::{
    cpu as wcpu, fs as wfs, io as wio, mem as wmem, net as wnet, report as wreport, sys as wsys,
    types as wtypes,
};
use crate::api;
use crate::api::options::{Bytes, Number, Seconds};
use crate::model::document::Better;
use crate::model::result::{DirResult, JobResult};
use crate::stats::LatencySummary;

mod trace;

/// Overwrites `field` with `value` when the guest gave one.
fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}

impl From<wfs::OpenOptions> for api::OpenOptions {
    fn from(o: wfs::OpenOptions) -> Self {
        let mut f = api::OpenOptions::default();
        set(&mut f.read, o.read);
        set(&mut f.write, o.write);
        set(&mut f.create, o.create);
        set(&mut f.truncate, o.truncate);
        set(&mut f.append, o.append);
        set(&mut f.direct, o.direct);
        set(
            &mut f.pattern,
            o.pattern.map(|p| match p {
                wfs::Pattern::Random => api::Pattern::Random,
                wfs::Pattern::Zero => api::Pattern::Zero,
            }),
        );
        f
    }
}

impl From<wfs::WriteOptions> for api::WriteOptions {
    fn from(o: wfs::WriteOptions) -> Self {
        let mut w = api::WriteOptions::default();
        set(&mut w.bs, o.bs.map(Bytes));
        set(&mut w.direct, o.direct);
        set(&mut w.fsync, o.fsync);
        w
    }
}

impl From<wfs::ReadOptions> for api::ReadOptions {
    fn from(o: wfs::ReadOptions) -> Self {
        let mut r = api::ReadOptions::default();
        set(&mut r.bs, o.bs.map(Bytes));
        set(&mut r.direct, o.direct);
        r
    }
}

impl From<wfs::CopyOptions> for api::CopyOptions {
    fn from(o: wfs::CopyOptions) -> Self {
        let mut c = api::CopyOptions::default();
        set(
            &mut c.method,
            o.method.map(|m| match m {
                wfs::CopyMethod::ReadWrite => api::CopyMethod::ReadWrite,
                wfs::CopyMethod::CopyFileRange => api::CopyMethod::CopyFileRange,
            }),
        );
        set(&mut c.bs, o.bs.map(Bytes));
        set(&mut c.fsync, o.fsync);
        c
    }
}

impl From<wfs::CreateOptions> for api::CreateOptions {
    fn from(o: wfs::CreateOptions) -> Self {
        let mut c = api::CreateOptions::default();
        set(&mut c.threads, o.threads);
        set(&mut c.write_size, o.write_size.map(Bytes));
        set(&mut c.fsync, o.fsync);
        set(&mut c.dirs, o.dirs);
        c
    }
}

impl From<wio::GroupOptions> for api::GroupOptions {
    fn from(o: wio::GroupOptions) -> Self {
        let mut g = api::GroupOptions::default();
        set(&mut g.group_reporting, o.group_reporting);
        g
    }
}

impl From<wreport::Better> for Better {
    fn from(b: wreport::Better) -> Self {
        match b {
            wreport::Better::HigherIsBetter => Better::Higher,
            wreport::Better::LowerIsBetter => Better::Lower,
        }
    }
}

impl From<wcpu::CpuOptions> for api::CpuOptions {
    fn from(o: wcpu::CpuOptions) -> Self {
        let mut c = api::CpuOptions::default();
        set(&mut c.kernel, o.kernel);
        set(&mut c.threads, o.threads);
        set(&mut c.duration, o.duration.map(Seconds));
        c.baseline = o.baseline.map(Number);
        c.cpu_max_prime = o.cpu_max_prime.map(Bytes);
        c.buffer = o.buffer.map(Bytes);
        c.items = o.items.map(Bytes);
        c.n = o.n.map(Bytes);
        c
    }
}

impl From<crate::cpu::CpuResult> for wcpu::CpuResult {
    fn from(r: crate::cpu::CpuResult) -> Self {
        wcpu::CpuResult {
            kernel: r.kernel,
            threads: r.threads,
            param: r.param,
            unit: r.unit,
            rate: r.rate,
            per_thread: r.per_thread,
            events_per_sec: r.events_per_sec,
            events: r.events,
            seconds: r.seconds,
            single_thread_rate: r.single_thread_rate,
            efficiency: r.efficiency,
            // Always set in a scenario, the only place guests run.
            started_s: r.started_s.unwrap_or_default(),
            ended_s: r.ended_s.unwrap_or_default(),
        }
    }
}

impl From<crate::cpu::KernelInfo> for wcpu::KernelInfo {
    fn from(k: crate::cpu::KernelInfo) -> Self {
        wcpu::KernelInfo {
            name: k.name.into(),
            unit: k.unit.into(),
            about: k.about.into(),
            param: k.param.into(),
            default: k.default,
        }
    }
}

fn oper_in(o: wmem::Oper) -> crate::mem::Oper {
    match o {
        wmem::Oper::Read => crate::mem::Oper::Read,
        wmem::Oper::Write => crate::mem::Oper::Write,
        wmem::Oper::Copy => crate::mem::Oper::Copy,
    }
}

fn scope_in(s: wmem::Scope) -> crate::mem::Scope {
    match s {
        wmem::Scope::Global => crate::mem::Scope::Global,
        wmem::Scope::Local => crate::mem::Scope::Local,
    }
}

impl From<wmem::BandwidthOptions> for api::BandwidthOptions {
    fn from(o: wmem::BandwidthOptions) -> Self {
        let mut b = api::BandwidthOptions::default();
        set(&mut b.oper, o.oper.map(oper_in));
        set(&mut b.block_size, o.block_size.map(Bytes));
        set(&mut b.total_size, o.total_size.map(Bytes));
        set(&mut b.scope, o.scope.map(scope_in));
        set(&mut b.threads, o.threads);
        set(&mut b.duration, o.duration.map(Seconds));
        b
    }
}

impl From<crate::mem::BandwidthResult> for wmem::BandwidthResult {
    fn from(r: crate::mem::BandwidthResult) -> Self {
        wmem::BandwidthResult {
            oper: match r.oper {
                crate::mem::Oper::Read => wmem::Oper::Read,
                crate::mem::Oper::Write => wmem::Oper::Write,
                crate::mem::Oper::Copy => wmem::Oper::Copy,
            },
            block_size: r.block_size,
            scope: match r.scope {
                crate::mem::Scope::Global => wmem::Scope::Global,
                crate::mem::Scope::Local => wmem::Scope::Local,
            },
            threads: r.threads,
            mib_per_sec: r.mib_per_sec,
            per_thread: r.per_thread,
            bytes: r.bytes,
            events: r.events,
            seconds: r.seconds,
        }
    }
}

impl From<wmem::LatencyOptions> for api::LatencyOptions {
    fn from(o: wmem::LatencyOptions) -> Self {
        let mut l = api::LatencyOptions::default();
        set(&mut l.min_size, o.min_size.map(Bytes));
        set(&mut l.max_size, o.max_size.map(Bytes));
        set(&mut l.steps_per_doubling, o.steps_per_doubling);
        set(&mut l.time_per_size, o.time_per_size.map(Seconds));
        l
    }
}

impl From<crate::mem::LatencyResult> for wmem::LatencyResult {
    fn from(r: crate::mem::LatencyResult) -> Self {
        wmem::LatencyResult {
            points: r
                .points
                .into_iter()
                .map(|p| wmem::LatencyPoint {
                    size: p.size,
                    ns: p.ns,
                })
                .collect(),
            plateaus: r
                .plateaus
                .into_iter()
                .map(|p| wmem::Plateau {
                    from: p.from,
                    to: p.to,
                    ns: p.ns,
                })
                .collect(),
        }
    }
}

fn direction_in(d: wnet::Direction) -> crate::net::Direction {
    match d {
        wnet::Direction::Send => crate::net::Direction::Send,
        wnet::Direction::Recv => crate::net::Direction::Recv,
        wnet::Direction::Both => crate::net::Direction::Both,
    }
}

fn direction_out(d: crate::net::Direction) -> wnet::Direction {
    match d {
        crate::net::Direction::Send => wnet::Direction::Send,
        crate::net::Direction::Recv => wnet::Direction::Recv,
        crate::net::Direction::Both => wnet::Direction::Both,
    }
}

fn net_latency(l: crate::net::Latency) -> wnet::Latency {
    wnet::Latency {
        count: l.count,
        min_us: l.min_us,
        mean_us: l.mean_us,
        p50_us: l.p50_us,
        p90_us: l.p90_us,
        p99_us: l.p99_us,
        p999_us: l.p999_us,
        max_us: l.max_us,
    }
}

impl From<wnet::ThroughputOptions> for api::ThroughputOptions {
    fn from(o: wnet::ThroughputOptions) -> Self {
        let mut t = api::ThroughputOptions {
            addr: o.addr,
            ..Default::default()
        };
        set(&mut t.streams, o.streams);
        set(&mut t.duration, o.duration.map(Seconds));
        set(&mut t.direction, o.direction.map(direction_in));
        set(&mut t.buffer, o.buffer.map(Bytes));
        t
    }
}

impl From<crate::net::Throughput> for wnet::ThroughputResult {
    fn from(r: crate::net::Throughput) -> Self {
        wnet::ThroughputResult {
            addr: r.addr,
            streams: r
                .streams
                .into_iter()
                .map(|s| wnet::StreamResult {
                    direction: direction_out(s.direction),
                    bytes: s.bytes,
                    seconds: s.seconds,
                    gbps: s.gbps,
                    intervals: s.intervals,
                    retransmits: s.retransmits,
                })
                .collect(),
            send_gbps: r.send_gbps,
            recv_gbps: r.recv_gbps,
            total_gbps: r.total_gbps,
            bytes: r.bytes,
            seconds: r.seconds,
            intervals: r.intervals,
            retransmits: r.retransmits,
            loopback: r.loopback,
            // Always set in a scenario, the only place guests run.
            started_s: r.started_s.unwrap_or_default(),
            ended_s: r.ended_s.unwrap_or_default(),
        }
    }
}

impl From<wnet::RttOptions> for api::RttOptions {
    fn from(o: wnet::RttOptions) -> Self {
        let mut r = api::RttOptions {
            addr: o.addr,
            ..Default::default()
        };
        set(&mut r.count, o.count);
        set(&mut r.size, o.size.map(Bytes));
        set(&mut r.interval, o.interval.map(Seconds));
        r
    }
}

impl From<crate::net::RttResult> for wnet::RttResult {
    fn from(r: crate::net::RttResult) -> Self {
        wnet::RttResult {
            addr: r.addr,
            size: r.size,
            rtt: net_latency(r.rtt),
            loopback: r.loopback,
        }
    }
}

impl From<wnet::ConnectOptions> for api::ConnectOptions {
    fn from(o: wnet::ConnectOptions) -> Self {
        let mut c = api::ConnectOptions {
            addr: o.addr,
            ..Default::default()
        };
        set(&mut c.count, o.count);
        set(&mut c.timeout, o.timeout.map(Seconds));
        set(&mut c.interval, o.interval.map(Seconds));
        c
    }
}

impl From<crate::net::ConnectTime> for wnet::ConnectResult {
    fn from(r: crate::net::ConnectTime) -> Self {
        wnet::ConnectResult {
            addr: r.addr,
            failures: r.failures,
            connect: net_latency(r.connect),
            loopback: r.loopback,
        }
    }
}

impl From<wnet::WaitOptions> for api::WaitOptions {
    fn from(o: wnet::WaitOptions) -> Self {
        let mut w = api::WaitOptions {
            addr: o.addr,
            ..Default::default()
        };
        set(&mut w.timeout, o.timeout.map(Seconds));
        set(&mut w.interval, o.interval.map(Seconds));
        w
    }
}

impl From<crate::net::PortWait> for wnet::PortWait {
    fn from(r: crate::net::PortWait) -> Self {
        wnet::PortWait {
            addr: r.addr,
            seconds: r.seconds,
            attempts: r.attempts,
        }
    }
}

fn latency_summary(l: LatencySummary) -> wio::LatencySummary {
    wio::LatencySummary {
        min_ns: l.min,
        max_ns: l.max,
        mean_ns: l.mean,
        stddev_ns: l.stddev,
        samples: l.samples,
        p50_ns: l.p50,
        p90_ns: l.p90,
        p95_ns: l.p95,
        p99_ns: l.p99,
        p999_ns: l.p99_9,
        p9999_ns: l.p99_99,
    }
}

fn direction_result(d: DirResult) -> wio::DirectionResult {
    wio::DirectionResult {
        io_bytes: d.io_bytes,
        bw_bytes: d.bw_bytes,
        iops: d.iops,
        runtime_ms: d.runtime_ms,
        total_ios: d.total_ios,
        short_ios: d.short_ios,
        clat: latency_summary(d.lat),
        slat: latency_summary(d.slat),
        total_lat: latency_summary(d.total_lat),
        iops_min: d.iops_min,
        iops_max: d.iops_max,
        iops_mean: d.iops_mean,
        iops_stddev: d.iops_stddev,
        bw_min: d.bw_min,
        bw_max: d.bw_max,
        bw_mean: d.bw_mean,
        bw_stddev: d.bw_stddev,
    }
}

impl From<JobResult> for wio::JobResult {
    fn from(r: JobResult) -> Self {
        wio::JobResult {
            name: r.name,
            ioengine: r.ioengine,
            rw: r.rw,
            iodepth: r.iodepth,
            jobs: r.jobs,
            read: direction_result(r.read),
            write: direction_result(r.write),
            sync_ios: r.sync.total_ios,
            sync_lat: latency_summary(r.sync.lat),
            usr_cpu: r.usr_cpu,
            sys_cpu: r.sys_cpu,
            cpu_seconds: r.cpu_seconds,
            runtime_ms: r.runtime_ms,
            verified_blocks: r.verified_blocks,
            verify_errors: r.verify_errors,
            timeline: r
                .timeline
                .into_iter()
                .map(|p| wio::TimelinePoint {
                    t_ms: p.t_ms,
                    duration_ms: p.duration_ms,
                    read_ios: p.read_ios,
                    read_bytes: p.read_bytes,
                    write_ios: p.write_ios,
                    write_bytes: p.write_bytes,
                    partial: p.partial,
                })
                .collect(),
            started_s: r.started_s,
            ended_s: r.ended_s,
        }
    }
}

impl From<api::fs::FileStat> for wfs::FileStat {
    fn from(st: api::fs::FileStat) -> Self {
        wfs::FileStat {
            size: st.size,
            is_dir: st.is_dir,
            is_symlink: st.is_symlink,
            mtime: st.mtime,
        }
    }
}

impl From<crate::model::machine::HostInfo> for wsys::HostInfo {
    fn from(h: crate::model::machine::HostInfo) -> Self {
        wsys::HostInfo {
            hostname: h.hostname,
            os: h.os,
            kernel: h.kernel,
            arch: h.arch,
            cpu_model: h.cpu_model,
            cpus: h.cpus,
            memory_bytes: h.memory_bytes,
        }
    }
}

impl From<crate::stats::live_latency::LivePercentiles> for wtypes::LiveLatency {
    fn from(p: crate::stats::live_latency::LivePercentiles) -> Self {
        wtypes::LiveLatency {
            samples: p.samples,
            p50: p.p50,
            p90: p.p90,
            p99: p.p99,
            p999: p.p99_9,
        }
    }
}

impl From<crate::runner::live::LiveDirection> for wtypes::LiveDirection {
    fn from(d: crate::runner::live::LiveDirection) -> Self {
        wtypes::LiveDirection {
            ios: d.ios,
            bytes: d.bytes,
            iops: d.iops,
            bw_bytes: d.bw_bytes,
            iops_last_second: d.iops_last_second,
            bw_bytes_last_second: d.bw_bytes_last_second,
            latency: d.latency.map(Into::into),
            latency_last_second: d.latency_last_second.map(Into::into),
        }
    }
}

impl From<crate::runner::live::LiveProgress> for wtypes::Progress {
    fn from(p: crate::runner::live::LiveProgress) -> Self {
        wtypes::Progress {
            elapsed: p.elapsed,
            read: p.read.into(),
            write: p.write.into(),
        }
    }
}

impl From<crate::runner::live::LiveProgress> for wcpu::CpuProgress {
    fn from(p: crate::runner::live::LiveProgress) -> Self {
        let p = api::compute::CpuProgress::from(p);
        wcpu::CpuProgress {
            elapsed: p.elapsed,
            events: p.events,
            events_per_sec: p.events_per_sec,
            events_per_sec_last_second: p.events_per_sec_last_second,
        }
    }
}
