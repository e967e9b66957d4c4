//! The host API as scripts see it: every host function can be called.

use crate::util::{doc, metric, run_scripts, script, workdir};
use std::collections::BTreeSet;

#[test]
fn every_host_function_is_reachable_from_rhai() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "all.rhai",
        r#"
        let f = fs::open("a.dat", #{ write: true, create: true });
        report::metric("w", f.write_at(0, 8192), "B", "higher");
        f.append(4096);
        f.fsync();
        f.fdatasync();
        f.fallocate(16384);
        f.truncate(12288);
        report::metric("size", f.size(), "B", "higher");
        report::metric("r", f.read_at(0, 4096), "B", "higher");
        f.close();
        let w = fs::write_file("b.dat", "64k", #{ bs: "16k", fsync: true });
        let r = fs::read_file("b.dat", #{ bs: "16k" });
        report::metric("rf", r.bytes, "B", "higher");
        fs::copy("b.dat", "c.dat", #{ method: "copy_file_range" });
        fs::copy("b.dat", "d.dat");
        fs::mkdir("sub");
        fs::rename("d.dat", "sub/d.dat");
        report::metric("exists", if fs::exists("sub/d.dat") { 1 } else { 0 }, "", "higher");
        report::metric("listed", fs::list(".").len(), "", "higher");
        report::metric("stat", fs::stat("c.dat").size, "B", "higher");
        fs::remove("c.dat");
        fs::remove_all("sub");
        fs::sync_all();
        fs::fsync_dir(".");
        try { fs::drop_caches(); } catch (e) { report::note(e); }
        fs::evict("b.dat");
        report::metric("room", fs::room(), "B", "higher");
        let c = fs::create_files("many", 10, 100);
        let st = fs::stat_files("many");
        let rm = fs::remove_files("many");
        report::metric("storm", c.ops + st.ops + rm.ops, "ops", "higher");
        let t0 = time::now();
        time::sleep(0.01);
        let m = time::measure(|| 41 + 1);
        report::metric("measured", m.result, "", "higher");
        report::table("t", ["a", "b"], [[1, 2], [3, 4]]);
        report::phase("jobs");
        report::metric("param", param("n", 5), "", "higher");
        let info = sys::info();
        report::metric("cpus", info.cpus, "", "higher");
        report::metric("cpu_time", sys::cpu_time(), "s", "lower");
        let j = io::job(#{ name: "j", rw: "randread", size: "1M", bs: "4k", ioengine: "psync" });
        report::metric("job_ios", j.read.total_ios, "", "higher");
        let g = io::group([#{ name: "g1", rw: "read", size: "256k", bs: "4k", ioengine: "psync" },
                           #{ name: "g2", rw: "write", size: "256k", bs: "4k", ioengine: "psync" }]);
        report::metric("group", g.len() * 1000 + g[0].read.total_ios, "", "higher");
        let h = io::start(#{ name: "bg", rw: "read", size: "256k", bs: "4k", ioengine: "psync" });
        report::metric("bg_ios", h.wait().read.total_ios, "", "higher");
        let sc = fs::start_copy("b.dat", "copied.dat", #{ fsync: true });
        report::metric("bg_copy", sc.wait().bytes, "B", "higher");
        let c = cpu::run(#{ threads: 1, duration: 0.05, cpu_max_prime: 1000 });
        let hog = cpu::start(#{ threads: 1, duration: 0.05, cpu_max_prime: 1000 });
        report::metric("bg_cpu", if hog.wait().events > 0 { 1 } else { 0 }, "", "higher");
        report::series("s", "x", [[0, 1], [1, 2.5]]);
        report::counter("tour_calls", 2);
        report::gauge("tour_level", -1.5);
        try { report::counter("tour_level", 1); } catch (e) { if e.contains("counter or a gauge") { report::metric("clash", 1, "", "higher"); } }
        report::metric("kernels", cpu::kernels().len(), "", "higher");
        let bw = mem::bandwidth(#{ block_size: "4K", total_size: "4M", duration: 5 });
        report::metric("mem_bytes", bw.bytes, "B", "higher");
        let lat = mem::latency(#{ min_size: "16K", max_size: "64K", time_per_size: 0.01 });
        report::metric("lat_points", lat.points.len(), "", "higher");
        let peer = net::local_peer();
        let tp = net::throughput(#{ addr: peer, duration: 0.1 });
        let btp = net::start_throughput(#{ addr: peer, duration: 0.1 });
        report::metric("bg_net", if btp.wait().bytes > 0 { 1 } else { 0 }, "", "higher");
        let rt = net::rtt(#{ addr: peer, count: 5 });
        let ct = net::connect_time(#{ addr: peer, count: 3 });
        let wp = net::wait_for_port(#{ addr: peer, timeout: 1 });
        try { trace::replay("no.trace", #{ speed: "max" }); } catch (e) { if e.contains("no.trace") { report::metric("trace_refused", 1, "", "higher"); } }
        report::metric("net", (if tp.bytes > 0 { 1 } else { 0 }) + rt.rtt.count + ct.connect.count + wp.attempts, "", "higher");
        report::metric("elapsed", time::now() - t0, "s", "lower");
        "#,
    );
    let (r, _) = run_scripts(dir.path(), &[&s, "-p", "n=7", "--json", "all.json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let d = doc(&dir.path().join("all.json"));
    let m = |n: &str| metric(&d, "all", n).unwrap_or_else(|| panic!("metric {n}: {d}"));
    assert_eq!(m("w"), 8192.0);
    assert_eq!(m("size"), 12288.0);
    assert_eq!(m("r"), 4096.0);
    assert_eq!(m("rf"), 65536.0);
    assert_eq!(m("exists"), 1.0);
    assert_eq!(m("stat"), 65536.0);
    assert_eq!(m("storm"), 30.0);
    assert_eq!(m("measured"), 42.0);
    assert_eq!(m("param"), 7.0);
    assert_eq!(m("job_ios"), 256.0);
    assert_eq!(m("group"), 2064.0, "two results, g1's 64 reads");
    assert_eq!(m("bg_ios"), 64.0);
    assert_eq!(m("bg_copy"), 65536.0);
    assert_eq!(m("bg_cpu"), 1.0);
    assert_eq!(m("bg_net"), 1.0);
    assert_eq!(d["scenarios"][0]["series"][0]["points"][1][1], 2.5);
    // The phase begun before the jobs names them, and lasts to the end.
    assert_eq!(d["scenarios"][0]["phases"][0]["name"], "jobs");
    assert!(d["scenarios"][0]["phases"][0].get("ended_s").is_none());
    assert_eq!(d["scenarios"][0]["jobs"][0]["case"], "jobs");
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    assert_eq!(m("cpus"), cpus, "the CPUs this process may use");
    assert!(m("cpu_time") > 0.0, "plumb has used some CPU");
    assert_eq!(m("kernels"), 10.0);
    assert_eq!(m("mem_bytes"), 4194304.0, "stops at total_size");
    assert_eq!(m("lat_points"), 3.0);
    assert_eq!(m("net"), 10.0);
    assert_eq!(m("trace_refused"), 1.0);
    assert_eq!(m("clash"), 1.0, "a name is a counter or a gauge");
    assert_eq!(d["scenarios"][0]["tables"][0]["rows"][1][1], "4");
    // Every function the Rhai modules register is exercised above.
    let src = std::fs::read_to_string(dir.path().join("all.rhai")).unwrap();
    let registered: BTreeSet<&str> = plumb::script::rhai_modules::host_functions()
        .iter()
        .map(String::as_str)
        .collect();
    assert!(registered.len() > 30, "{registered:?}");
    let called = module_calls(&src);
    assert_eq!(
        registered, called,
        "the registered host functions and the functions this script calls differ"
    );
}

/// The `module::function` names called in Rhai source `src` (a name followed
/// by `(`, so `fs::stat` is not found inside `fs::stat_files`).
fn module_calls(src: &str) -> BTreeSet<&str> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut calls = BTreeSet::new();
    for (at, _) in src.match_indices("::") {
        let start = src[..at].rfind(|c| !ident(c)).map_or(0, |i| i + 1);
        let after = &src[at + 2..];
        let len = after.find(|c| !ident(c)).unwrap_or(after.len());
        if start < at && len > 0 && after[len..].starts_with('(') {
            calls.insert(&src[start..at + 2 + len]);
        }
    }
    calls
}
