//! Calls every function the `plumb:bench/scenario` world imports, once or
//! more, and checks the shape of each result (and that refusals come back
//! in the right error category). Run by the tests in a pack that ships
//! `tiny.trace`; it reports `calls` (how many imports answered as expected)
//! and fails, listing them, when any did not.

wit_bindgen::generate!({ world: "scenario", path: "../../wit" });

use plumb::bench::report::Better;
use plumb::bench::types::Error;
use plumb::bench::{cpu, fs, io, mem, net, params, report, sys, time, trace};
use std::collections::BTreeSet;

/// What the tour saw: the functions that answered as expected, and what
/// went wrong with the others.
#[derive(Default)]
struct Tour {
    ok: BTreeSet<&'static str>,
    problems: Vec<String>,
}

impl Tour {
    /// Records `func` as exercised when `good` holds, else the problem.
    fn check(&mut self, func: &'static str, good: bool, what: impl std::fmt::Debug) {
        if good {
            self.ok.insert(func);
        } else {
            self.problems.push(format!("{func}: {what:?}"));
        }
    }

    /// Records `func` from a result that must be `Ok` and pass `shape`.
    fn ok<T: std::fmt::Debug>(&mut self, func: &'static str, r: Result<T, Error>, shape: impl Fn(&T) -> bool) -> Option<T> {
        match r {
            Ok(v) if shape(&v) => {
                self.ok.insert(func);
                Some(v)
            }
            Ok(v) => {
                self.problems.push(format!("{func}: unexpected result {v:?}"));
                None
            }
            Err(e) => {
                self.problems.push(format!("{func}: {e:?}"));
                None
            }
        }
    }
}

fn file_options(write: bool) -> fs::OpenOptions {
    fs::OpenOptions { read: Some(true), write: Some(write), create: Some(write), truncate: None, append: None, direct: None, pattern: Some(fs::Pattern::Zero) }
}

fn files(t: &mut Tour) {
    let w = t.ok("fs.write-file", fs::write_file("a.dat", 1 << 20, fs::WriteOptions { bs: Some(64 << 10), direct: None, fsync: Some(true) }), |x| x.bytes == 1 << 20 && x.seconds >= 0.0 && (x.ended_s - x.started_s - x.seconds).abs() < 1e-6);
    let _ = w;
    t.ok("fs.read-file", fs::read_file("a.dat", fs::ReadOptions { bs: None, direct: None }), |x| x.bytes == 1 << 20);
    t.ok("fs.copy", fs::copy("a.dat", "b.dat", fs::CopyOptions { method: Some(fs::CopyMethod::CopyFileRange), bs: None, fsync: None }), |x| x.bytes == 1 << 20);
    if let Some(c) = t.ok("fs.start-copy", fs::start_copy("a.dat", "c.dat", fs::CopyOptions { method: Some(fs::CopyMethod::ReadWrite), bs: Some(64 << 10), fsync: Some(true) }), |_| true) {
        t.ok("copy-handle.name", Ok(c.name()), |n| n == "a.dat → c.dat");
        t.ok("copy-handle.wait", c.wait(), |x| x.bytes == 1 << 20);
        t.ok("copy-handle.done", Ok(c.done()), |d| *d);
        t.ok("copy-handle.stop", c.stop(), |x| x.bytes == 1 << 20);
        t.ok("copy-handle.progress", Ok(c.progress()), |p| p.write.bytes <= 1 << 20 && p.read.latency.is_none());
    }
    let escape = fs::start_copy("a.dat", "../out.dat", fs::CopyOptions { method: None, bs: None, fsync: None });
    t.check("fs.start-copy", matches!(escape, Err(Error::Sandbox(_))), &escape.map(|c| c.name()));
    t.ok("fs.rename", fs::rename("b.dat", "c.dat"), |_| true);
    t.ok("fs.exists", fs::exists("c.dat"), |e| *e);
    t.ok("fs.stat", fs::stat("c.dat"), |s| s.size == 1 << 20 && !s.is_dir && !s.is_symlink && s.mtime > 0);
    t.ok("fs.remove", fs::remove("c.dat"), |_| true);
    t.ok("fs.mkdir", fs::mkdir("d"), |_| true);
    t.ok("fs.create-files", fs::create_files("d", 20, 4096, fs::CreateOptions { threads: Some(2), write_size: None, fsync: Some(true), dirs: None }), |s| s.ops == 20 && s.ops_per_sec > 0.0);
    t.ok("fs.list", fs::list("d"), |names| names.len() == 20);
    t.ok("fs.stat-files", fs::stat_files("d"), |s| s.ops == 20);
    t.ok("fs.remove-files", fs::remove_files("d"), |s| s.ops == 20);
    t.ok("fs.remove-all", fs::remove_all("d"), |_| true);
    fs::sync_all();
    t.check("fs.sync-all", true, ());
    t.ok("fs.evict", fs::evict("a.dat"), |_| true);
    t.ok("fs.room", fs::room(), |bytes| *bytes > 0);
    t.ok("fs.fsync-dir", fs::fsync_dir("."), |_| true);
    let not_dir = fs::fsync_dir("a.dat");
    t.check("fs.fsync-dir", matches!(not_dir, Err(Error::Os(_)) | Err(Error::Sandbox(_))), &not_dir);
    // Not declared by the pack: refused with its category.
    let dropped = fs::drop_caches();
    t.check("fs.drop-caches", matches!(dropped, Err(Error::Denied(_))), &dropped);
    // A path outside the run directory is a sandbox error.
    let escaped = fs::open("/etc/passwd", file_options(false)).map(|_| ());
    t.check("fs.open", matches!(escaped, Err(Error::Sandbox(_)) | Err(Error::Os(_))), &escaped);

    let Some(f) = t.ok("fs.open", fs::open("f.dat", file_options(true)), |_| true) else { return };
    t.ok("file.write-at", f.write_at(0, 8192), |n| *n == 8192);
    t.ok("file.append", f.append(4096), |n| *n == 4096);
    t.ok("file.read-at", f.read_at(4096, 4096), |n| *n == 4096);
    t.ok("file.fsync", f.fsync(), |_| true);
    t.ok("file.fdatasync", f.fdatasync(), |_| true);
    t.ok("file.fallocate", f.fallocate(16384), |_| true);
    t.ok("file.truncate", f.truncate(4096), |_| true);
    t.ok("file.size", f.size(), |n| *n == 4096);
    f.close();
    let closed = f.size();
    t.check("file.close", closed.is_err(), &closed);
}

fn job(t: &mut Tour) {
    let options: Vec<(String, String)> = [("name", "tour"), ("filename", "j.dat"), ("rw", "randread"), ("bs", "4k"), ("size", "1m"), ("io_size", "256k"), ("ioengine", "psync")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    t.ok("io.job", io::job(&options), |r| {
        r.name == "tour" && r.rw == "randread" && r.read.total_ios == 64 && r.read.io_bytes == 256 << 10 && r.write.total_ios == 0 && r.read.clat.samples == 64 && r.read.clat.p50_ns > 0 && r.read.clat.p50_ns <= r.read.clat.p99_ns && r.jobs == 1
    });
    let bad = io::job(&[("rw".to_string(), "sideways".to_string())]);
    t.check("io.job", matches!(bad, Err(Error::Invalid(_))), &bad);

    let pairs = |kv: &[(&str, &str)]| kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    let a = pairs(&[("name", "ga"), ("rw", "randread"), ("bs", "4k"), ("size", "1m"), ("io_size", "256k")]);
    let b = pairs(&[("name", "gb"), ("rw", "write"), ("bs", "64k"), ("size", "1m")]);
    t.ok("io.group", io::group(&[a.clone(), b.clone()], io::GroupOptions { group_reporting: None }), |rs| {
        rs.len() == 2 && rs[0].name == "ga" && rs[0].read.total_ios == 64 && rs[1].name == "gb" && rs[1].write.io_bytes == 1 << 20
    });
    t.ok("io.group", io::group(&[a, b], io::GroupOptions { group_reporting: Some(true) }), |rs| rs.len() == 1 && rs[0].read.total_ios == 64 && rs[0].write.io_bytes == 1 << 20);

    let bg = pairs(&[("name", "bg"), ("rw", "randread"), ("bs", "4k"), ("size", "1m"), ("time_based", "1"), ("runtime", "30s"), ("ioengine", "psync")]);
    let Some(h) = t.ok("io.start", io::start(&bg), |_| true) else { return };
    t.ok("job-handle.name", Ok(h.name()), |n| n == "bg");
    t.ok("job-handle.done", Ok(h.done()), |d| !*d);
    // Wait until the watcher has published a second of figures.
    let t0 = time::now();
    while h.progress().read.ios == 0 && time::now() - t0 < 5.0 {
        let _ = time::sleep(0.05);
    }
    t.ok("job-handle.progress", Ok(h.progress()), |p| p.elapsed > 0.0 && p.read.ios > 0 && p.read.iops > 0.0 && p.write.ios == 0);
    // Latency buckets are kept every 200 ms: wait for a set with samples.
    while h.progress().read.latency.map_or(true, |l| l.samples == 0) && time::now() - t0 < 5.0 {
        let _ = time::sleep(0.05);
    }
    t.ok("job-handle.progress", Ok(h.progress()), |p| {
        p.read.latency.is_some_and(|l| l.samples > 0 && l.p50 > 0 && l.p50 <= l.p99 && l.p99 <= l.p999) && p.write.latency.is_some_and(|l| l.samples == 0)
    });
    t.ok("job-handle.stop", h.stop(), |r| r.read.total_ios > 0 && r.runtime_ms < 30_000);
    t.ok("job-handle.wait", h.wait(), |r| r.read.total_ios > 0);
    t.ok("job-handle.done", Ok(h.done()), |d| *d);
}

fn compute(t: &mut Tour) {
    let kernels = t.ok("cpu.kernels", Ok(cpu::kernels()), |k| k.len() >= 10 && k.iter().any(|k| k.name == "prime" && k.param == "cpu_max_prime" && k.default > 0));
    let _ = kernels;
    let options = cpu::CpuOptions { kernel: Some("prime".into()), threads: Some(2), duration: Some(0.2), cpu_max_prime: Some(2000), baseline: None, buffer: None, items: None, n: None };
    t.ok("cpu.run", cpu::run(&options), |r| r.kernel == "prime" && r.threads == 2 && r.per_thread.len() == 2 && r.param == 2000 && r.rate > 0.0 && r.efficiency > 0.0);
    if let Some(h) = t.ok("cpu.start", cpu::start(&cpu::CpuOptions { duration: Some(30.0), threads: Some(1), ..options.clone() }), |_| true) {
        t.ok("cpu-handle.name", Ok(h.name()), |n| n == "prime");
        let t0 = time::now();
        while h.progress().events == 0 && time::now() - t0 < 5.0 {
            let _ = time::sleep(0.05);
        }
        t.ok("cpu-handle.progress", Ok(h.progress()), |p| p.events > 0 && p.events_per_sec > 0.0 && p.elapsed > 0.0);
        t.ok("cpu-handle.stop", h.stop(), |r| r.kernel == "prime" && r.events > 0 && r.seconds < 30.0 && r.ended_s > r.started_s);
        t.ok("cpu-handle.done", Ok(h.done()), |d| *d);
        t.ok("cpu-handle.wait", h.wait(), |r| r.events > 0);
    }
    let zero = cpu::run(&cpu::CpuOptions { threads: Some(0), ..options });
    t.check("cpu.run", matches!(zero, Err(Error::Invalid(_))), &zero);

    let bw = mem::BandwidthOptions { oper: Some(mem::Oper::Read), block_size: Some(4096), total_size: Some(4 << 20), scope: Some(mem::Scope::Local), threads: Some(1), duration: Some(1.0) };
    t.ok("mem.bandwidth", mem::bandwidth(bw), |r| r.oper == mem::Oper::Read && r.scope == mem::Scope::Local && r.bytes == 4 << 20 && r.mib_per_sec > 0.0 && r.per_thread.len() == 1);
    let lat = mem::LatencyOptions { min_size: Some(16 << 10), max_size: Some(64 << 10), steps_per_doubling: Some(1), time_per_size: Some(0.02) };
    t.ok("mem.latency", mem::latency(lat), |r| r.points.len() == 3 && r.points.iter().all(|p| p.ns > 0.0));
}

fn network(t: &mut Tour) {
    let Some(peer) = t.ok("net.local-peer", net::local_peer(), |a| a.starts_with("127.0.0.1:")) else { return };
    t.ok("net.wait-for-port", net::wait_for_port(&net::WaitOptions { addr: peer.clone(), timeout: Some(5.0), interval: None }), |w| w.attempts >= 1);
    t.ok("net.rtt", net::rtt(&net::RttOptions { addr: peer.clone(), count: Some(20), size: Some(256), interval: None }), |r| r.size == 256 && r.rtt.count == 20 && r.rtt.p50_us > 0.0);
    t.ok("net.connect-time", net::connect_time(&net::ConnectOptions { addr: peer.clone(), count: Some(3), timeout: None, interval: None }), |r| r.connect.count == 3 && r.failures == 0);
    let options = net::ThroughputOptions { addr: peer, streams: Some(2), duration: Some(0.3), direction: Some(net::Direction::Both), buffer: None };
    t.ok("net.throughput", net::throughput(&options), |r| r.streams.len() == 4 && r.bytes > 0 && r.send_gbps > 0.0 && r.recv_gbps > 0.0);
    let long = net::ThroughputOptions { duration: Some(30.0), streams: Some(1), direction: Some(net::Direction::Send), ..options };
    if let Some(h) = t.ok("net.start-throughput", net::start_throughput(&long), |_| true) {
        let t0 = time::now();
        while h.progress().write.bytes == 0 && time::now() - t0 < 5.0 {
            let _ = time::sleep(0.05);
        }
        t.ok("throughput-handle.progress", Ok(h.progress()), |p| p.write.bytes > 0 && p.read.bytes == 0);
        t.ok("throughput-handle.stop", h.stop(), |r| r.bytes > 0 && r.seconds < 30.0 && r.ended_s > r.started_s);
        t.ok("throughput-handle.done", Ok(h.done()), |d| *d);
        t.ok("throughput-handle.wait", h.wait(), |r| r.bytes > 0);
        t.ok("throughput-handle.name", Ok(h.name()), |n| n.starts_with("127.0.0.1:"));
    }
    let denied = net::rtt(&net::RttOptions { addr: "127.0.0.1:9".into(), count: None, size: None, interval: None });
    t.check("net.rtt", matches!(denied, Err(Error::Denied(_))), &denied);
}

fn replay(t: &mut Tour) {
    let options = trace::ReplayOptions { speed: Some(trace::Speed::Max), threads: Some(trace::ReplayThreads::One), clients: None, mmap: None };
    t.ok("trace.replay", trace::replay("tiny.trace", options), |r| r.total_ops == 3 && r.ops.iter().any(|o| o.op == "pread" && o.bytes == 4096) && r.first_divergence.is_none() && r.divergences == 0);
}

fn others(t: &mut Tour) {
    let t0 = time::now();
    t.ok("time.sleep", time::sleep(0.01), |_| true);
    let t1 = time::now();
    t.check("time.now", t1 - t0 >= 0.01 && t0 >= 0.0, (t0, t1));
    let negative = time::sleep(-1.0);
    t.check("time.sleep", matches!(negative, Err(Error::Invalid(_))), &negative);
    let info = sys::info();
    t.check("sys.info", info.cpus >= 1 && info.memory_bytes > 0 && !info.kernel.is_empty(), &info);
    let cpu = sys::cpu_time();
    t.check("sys.cpu-time", cpu > 0.0, cpu);
    t.check("params.get", params::get("greeting").as_deref() == Some("hi") && params::get("nothing").is_none(), params::get("greeting"));
    t.ok("report.table", report::table("tour", &["a".into(), "b".into()], &[vec!["1".into(), "2".into()]]), |_| true);
    let ragged = report::table("bad", &["a".into()], &[vec!["1".into(), "2".into()]]);
    t.check("report.table", matches!(ragged, Err(Error::Invalid(_))), &ragged);
    t.ok("report.note", report::note("the tour ran"), |_| true);
    t.ok("report.phase", report::phase("tour"), |_| true);
    let unnamed = report::phase("");
    t.check("report.phase", matches!(unnamed, Err(Error::Invalid(_))), &unnamed);
    let long = report::note(&"x".repeat(10_000));
    t.check("report.note", matches!(long, Err(Error::Invalid(_))), &long);
    t.ok("report.series", report::series("tour", "x", &[(0.0, 1.0), (1.0, 2.5)]), |_| true);
    let nan = report::series("tour", "x", &[(0.0, f64::NAN)]);
    t.check("report.series", matches!(nan, Err(Error::Invalid(_))), &nan);
    let nan = report::metric("nan", f64::NAN, "", Better::HigherIsBetter, &[]);
    t.check("report.metric", matches!(nan, Err(Error::Invalid(_))), &nan);
    t.ok("report.counter", report::counter("tour_calls", 3.0), |_| true);
    let negative = report::counter("tour_calls", -1.0);
    t.check("report.counter", matches!(negative, Err(Error::Invalid(_))), &negative);
    t.ok("report.gauge", report::gauge("tour_level", -2.5), |_| true);
    let clash = report::gauge("tour_calls", 1.0);
    t.check("report.gauge", matches!(clash, Err(Error::Invalid(_))), &clash);
}

struct ApiTour;

impl Guest for ApiTour {
    fn run() -> Result<(), String> {
        let mut t = Tour::default();
        files(&mut t);
        job(&mut t);
        compute(&mut t);
        network(&mut t);
        replay(&mut t);
        others(&mut t);
        report::metric("calls", t.ok.len() as f64, "", Better::HigherIsBetter, &[]).map_err(|e| format!("{e:?}"))?;
        t.check("report.metric", true, ());
        for name in &t.ok {
            println!("ok {name}");
        }
        if t.problems.is_empty() {
            Ok(())
        } else {
            Err(t.problems.join("; "))
        }
    }
}

export!(ApiTour);
