//! `plumb run`, `check` and `list`: scenarios in Rhai against the sandbox.

use crate::util::{doc, entries, metric, plumb, run_scripts, script, workdir};
use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn quick_pack_runs_reports_and_cleans_up() {
    let dir = workdir();
    let (r, target) = run_scripts(
        dir.path(),
        &[
            "quick",
            "-p",
            "size=8M",
            "-p",
            "runtime=1s",
            "-p",
            "files=50",
            "--json",
            "q.json",
            "--label",
            "ci",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    for m in [
        "read_iops",
        "write_bw",
        "direct_read_bw",
        "copy_seconds",
        "create_per_sec",
        "read_lat_p99",
    ] {
        assert!(r.stdout.contains(m), "table lacks {m}:\n{}", r.stdout);
    }
    assert!(
        entries(&target).is_empty(),
        "run directory removed: {:?}",
        entries(&target)
    );
    let d = doc(&dir.path().join("q.json"));
    assert_eq!(d["schema"], "plumb.result.v1");
    assert_eq!(d["label"], "ci");
    assert_eq!(d["scenarios"].as_array().unwrap().len(), 6);
    for s in d["scenarios"].as_array().unwrap() {
        assert!(s["error"].is_null(), "{s}");
        assert_eq!(s["source_sha256"].as_str().unwrap().len(), 64);
        assert_eq!(s["pack"], "quick");
    }
    assert!(metric(&d, "randrw", "read_iops").unwrap() > 0.0);
    assert!(metric(&d, "small-files", "create_per_sec").unwrap() > 0.0);
    assert_eq!(d["scenarios"][0]["jobs"][0]["rw"], "randrw");
}

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
        try { fs::drop_caches(); } catch (e) { report::note(e); }
        fs::evict("b.dat");
        let c = fs::create_files("many", 10, 100);
        let st = fs::stat_files("many");
        let rm = fs::remove_files("many");
        report::metric("storm", c.ops + st.ops + rm.ops, "ops", "higher");
        let t0 = time::now();
        time::sleep(0.01);
        let m = time::measure(|| 41 + 1);
        report::metric("measured", m.result, "", "higher");
        report::table("t", ["a", "b"], [[1, 2], [3, 4]]);
        report::metric("param", param("n", 5), "", "higher");
        let info = sys::info();
        report::metric("cpus", info.cpus, "", "higher");
        report::metric("cpu_time", sys::cpu_time(), "s", "lower");
        let j = io::job(#{ name: "j", rw: "randread", size: "1M", bs: "4k", ioengine: "psync" });
        report::metric("job_ios", j.read.total_ios, "", "higher");
        let c = cpu::run(#{ threads: 1, duration: 0.05, cpu_max_prime: 1000 });
        report::metric("kernels", cpu::kernels().len(), "", "higher");
        let bw = mem::bandwidth(#{ block_size: "4K", total_size: "4M", duration: 5 });
        report::metric("mem_bytes", bw.bytes, "B", "higher");
        let lat = mem::latency(#{ min_size: "16K", max_size: "64K", time_per_size: 0.01 });
        report::metric("lat_points", lat.points.len(), "", "higher");
        let peer = net::local_peer();
        let tp = net::throughput(#{ addr: peer, duration: 0.1 });
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
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    assert_eq!(m("cpus"), cpus, "the CPUs this process may use");
    assert!(m("cpu_time") > 0.0, "plumb has used some CPU");
    assert_eq!(m("kernels"), 10.0);
    assert_eq!(m("mem_bytes"), 4194304.0, "stops at total_size");
    assert_eq!(m("lat_points"), 3.0);
    assert_eq!(m("net"), 10.0);
    assert_eq!(m("trace_refused"), 1.0);
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

#[test]
fn hostile_paths_are_refused_catchably_and_nothing_escapes() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "escape.rhai",
        r#"
        let refused = 0;
        fs::mkdir("a");
        for p in ["../outside.dat", "/tmp/plumb-evil.dat", "a/../../outside.dat"] {
            try { fs::write_file(p, 4096); } catch (e) {
                if e.contains("outside the run directory") { refused += 1; } else { throw e; }
            }
        }
        try { io::job(#{ filename: "../job.dat", size: "1M", rw: "write" }); } catch (e) {
            if e.contains("outside the run directory") { refused += 1; } else { throw e; }
        }
        try { io::job(#{ directory: "/tmp", size: "1M" }); } catch (e) { refused += 1; }
        report::metric("refused", refused, "", "higher");
        "#,
    );
    let (r, target) = run_scripts(dir.path(), &[&s, "--json", "e.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        metric(&doc(&dir.path().join("e.json")), "escape", "refused"),
        Some(5.0)
    );
    assert!(!dir.path().join("outside.dat").exists() && !target.join("outside.dat").exists());
    assert!(!Path::new("/tmp/plumb-evil.dat").exists());
    assert!(entries(&target).is_empty());
}

#[test]
fn limits_end_a_scenario_and_the_run_goes_on() {
    let dir = workdir();
    let cases = [
        ("endless.rhai", "loop { }", "deadline"),
        ("recursion.rhai", "fn f(x) { f(x + 1) } f(0);", "too deep"),
        (
            "string.rhai",
            "let s = \"xxxxxxxx\"; loop { s += s; }",
            "too large",
        ),
        ("array.rhai", "let a = [1]; loop { a += a; }", "too large"),
        (
            "bigjob.rhai",
            "io::job(#{ rw: \"write\", size: \"900T\" });",
            "free",
        ),
        (
            "ok.rhai",
            "report::metric(\"fine\", 1, \"\", \"higher\");",
            "",
        ),
    ];
    let mut args: Vec<String> = cases
        .iter()
        .map(|(n, src, _)| script(dir.path(), n, src))
        .collect();
    args.extend([
        "--timeout".into(),
        "2s".into(),
        "--json".into(),
        "l.json".into(),
    ]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (r, target) = run_scripts(dir.path(), &argv);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let d = doc(&dir.path().join("l.json"));
    for (name, _, needle) in cases {
        let s = d["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name.trim_end_matches(".rhai"))
            .unwrap();
        if needle.is_empty() {
            assert!(s["error"].is_null(), "{s}");
            assert_eq!(metric(&d, "ok", "fine"), Some(1.0));
        } else {
            let e = s["error"]
                .as_str()
                .unwrap_or_else(|| panic!("{name} should fail: {s}"));
            assert!(e.contains(needle), "{name}: {e}");
            assert!(e.contains(name), "{name}: error names the file: {e}");
        }
    }
    assert!(entries(&target).is_empty());
}

#[test]
fn script_errors_name_file_line_and_column() {
    let dir = workdir();
    let s = script(dir.path(), "bad.rhai", "let x = 1;\nlet y = (x + ;\n");
    let (r, target) = run_scripts(dir.path(), &[&s]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("bad.rhai:2:"), "{}", r.stderr);
    assert!(
        r.stderr.contains("let y = (x + ;"),
        "quotes the line: {}",
        r.stderr
    );
    assert!(entries(&target).is_empty(), "nothing ran");
    let c = plumb(dir.path(), &["check", &s]);
    assert_eq!(c.code, 2);
    assert!(c.stderr.contains("bad.rhai:2:"), "{}", c.stderr);
    let u = script(dir.path(), "unknown.rhai", "let f = fs::opn(\"x\");\n");
    let c = plumb(dir.path(), &["check", &u]);
    assert_eq!(c.code, 2);
    assert!(
        c.stderr.contains("unknown.rhai:1:") && c.stderr.contains("fs::opn"),
        "{}",
        c.stderr
    );
    assert!(c.stderr.contains("did you mean fs::open"), "{}", c.stderr);
    let ok = plumb(dir.path(), &["check", "quick"]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
}

#[test]
fn runtime_errors_name_the_place() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "oops.rhai",
        "let a = 1;\nlet b = a + fs::stat(\"missing\").size;\n",
    );
    let (r, _) = run_scripts(dir.path(), &[&s]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("oops.rhai:2:"), "{}", r.stderr);
    assert!(r.stderr.contains("missing"), "{}", r.stderr);
}

#[test]
fn sigint_cleans_up_and_keeps_partial_results() {
    let dir = workdir();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let first = script(
        dir.path(),
        "first.rhai",
        "fs::write_file(\"x.dat\", \"1M\"); report::metric(\"done\", 1, \"\", \"higher\");",
    );
    let second = script(
        dir.path(),
        "second.rhai",
        "fs::write_file(\"y.dat\", \"1M\"); print(\"second is looping\"); loop { time::sleep(0.05); }",
    );
    let out = crate::util::plumb_signalled(
        dir.path(),
        &[
            "run",
            &first,
            &second,
            "--target",
            target.to_str().unwrap(),
            "--json",
            "p.json",
        ],
        "second is looping",
        libc::SIGINT,
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        entries(&target).is_empty(),
        "no files left: {:?}",
        entries(&target)
    );
    let d = doc(&dir.path().join("p.json"));
    assert_eq!(metric(&d, "first", "done"), Some(1.0));
    assert!(d["scenarios"][1]["error"]
        .as_str()
        .unwrap()
        .contains("interrupted"));
}

#[test]
fn packs_declare_params_and_capabilities() {
    let dir = workdir();
    let pack = dir.path().join("mypack");
    std::fs::create_dir(&pack).unwrap();
    std::fs::write(
        pack.join("pack.toml"),
        "name = \"mine\"\nversion = \"0.1\"\ndescription = \"test\"\nscenarios = [\"w.rhai\"]\n\n[params.size]\ndefault = \"64k\"\nunit = \"bytes\"\ndescription = \"file size\"\n\n[capabilities]\nmax_bytes = \"1M\"\n",
    )
    .unwrap();
    std::fs::write(pack.join("w.rhai"), "let s = param(\"size\", \"64k\");\nfs::write_file(\"w.dat\", s);\nreport::metric(\"ok\", 1, \"\", \"higher\");\n").unwrap();
    let (r, _) = run_scripts(
        dir.path(),
        &[
            "mypack", "--repeat", "3", "--json", "m.json", "--format", "csv",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with("scenario,metric,median,unit,min,max,runs,better"),
        "{}",
        r.stdout
    );
    let d = doc(&dir.path().join("m.json"));
    assert_eq!(d["scenarios"][0]["repeat"], 3);
    assert_eq!(
        d["scenarios"][0]["metrics"][0]["samples"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(d["scenarios"][0]["pack_sha256"].as_str().unwrap().len(), 64);
    // More than the pack declared is stopped.
    let (r, _) = run_scripts(dir.path(), &["mypack", "-p", "size=2M"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("byte budget"), "{}", r.stderr);
    // More than the user granted is refused before running.
    let (r, target) = run_scripts(dir.path(), &["mypack", "--max-bytes", "100k"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--max-bytes"), "{}", r.stderr);
    assert!(entries(&target).is_empty());
    // Unknown parameters are bad input.
    let (r, _) = run_scripts(dir.path(), &["mypack", "-p", "sise=1"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("sise"));
    // What the pack did not declare is refused, catchably.
    let strict = dir.path().join("strict");
    std::fs::create_dir(&strict).unwrap();
    std::fs::write(
        strict.join("pack.toml"),
        "name = \"strict\"\nscenarios = [\"s.rhai\"]\n\n[capabilities]\nthreads = 2\n",
    )
    .unwrap();
    std::fs::write(
        strict.join("s.rhai"),
        "let refused = 0;\n\
         try { fs::open(\"x\", #{ write: true, create: true, direct: true }); } catch (e) { if e.contains(\"did not declare\") { refused += 1; } }\n\
         try { io::job(#{ rw: \"read\", size: \"64k\", numjobs: 4 }); } catch (e) { if e.contains(\"did not declare\") { refused += 1; } }\n\
         try { fs::drop_caches(); } catch (e) { if e.contains(\"did not declare\") { refused += 1; } }\n\
         io::job(#{ rw: \"read\", size: \"64k\", numjobs: 2 });\n\
         report::metric(\"refused\", refused, \"\", \"higher\");\n",
    )
    .unwrap();
    let (r, _) = run_scripts(dir.path(), &["strict", "--json", "s.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        metric(&doc(&dir.path().join("s.json")), "s", "refused"),
        Some(3.0)
    );
    let l = plumb(dir.path(), &["list", "mypack"]);
    assert!(l.stdout.contains("-p size=64k"), "{}", l.stdout);
}

#[test]
fn cloud_compare_and_fileio_packs_run_at_small_sizes() {
    let dir = workdir();
    let (r, target) = run_scripts(
        dir.path(),
        &[
            "cloud-compare",
            "fileio",
            "-p",
            "size=16M",
            "-p",
            "dd_size=8M",
            "-p",
            "dd_runs=2",
            "-p",
            "ioping_count=3",
            "-p",
            "ioping_interval=0.05",
            "-p",
            "fileio_size=16M",
            "-p",
            "fileio_time=1s",
            "-p",
            "bonnie_size=4M",
            "-p",
            "bonnie_files=100",
            "-p",
            "file_total_size=16M",
            "-p",
            "time=1s",
            "--json",
            "c.json",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(entries(&target).is_empty());
    let d = doc(&dir.path().join("c.json"));
    let scenarios = d["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 14);
    for s in scenarios {
        assert!(s["error"].is_null(), "{s}");
    }
    // Each figure is present and physically possible on any disk: at least
    // one I/O per second, at most what RAM could do, latencies between one
    // microsecond and one second.
    for (scenario, m, range) in [
        ("fio-random", "randrw.read_iops", 1.0..1e7),
        ("fio-random", "randwrite.write_iops", 1.0..1e7),
        ("dd", "write_bw", 1.0..1e5),
        ("dd", "buffered_read_bw", 1.0..1e5),
        ("ioping", "lat_avg", 1.0..1e6),
        ("sysbench-fileio", "fsyncs_per_sec", 1.0..1e7),
        ("bonnie", "rewrite", 1.0..1e5),
        ("bonnie", "seq_delete", 1.0..1e8),
        ("seqwr", "writes_per_sec", 1.0..1e7),
        ("rndrw", "reads_per_sec", 1.0..1e7),
        ("rndrd", "latency_p95", 0.1..1e6),
    ] {
        let v = metric(&d, scenario, m).unwrap_or_else(|| panic!("{scenario} {m} missing"));
        assert!(range.contains(&v), "{scenario} {m} = {v}, not in {range:?}");
    }
    // A move to another directory of the same filesystem is a rename.
    let moved = metric(&d, "big-file", "move_other_dir_seconds").unwrap();
    assert!((0.0..0.5).contains(&moved), "a rename took {moved} s");
    // dd runs twice: both samples kept.
    let dd = scenarios.iter().find(|s| s["name"] == "dd").unwrap();
    assert_eq!(dd["metrics"][0]["samples"].as_array().unwrap().len(), 2);
    // sysbench's fsync every 100 requests: about one fsync per 100 writes.
    let writes = metric(&d, "rndwr", "writes_per_sec").unwrap();
    let fsyncs = metric(&d, "rndwr", "fsyncs_per_sec").unwrap();
    assert!(
        fsyncs < writes / 50.0,
        "fsyncs {fsyncs}/s for {writes} writes/s"
    );
}

#[test]
fn plumb_run_without_arguments_runs_the_quick_pack_here() {
    let dir = workdir();
    let r = plumb(dir.path(), &["run"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    for s in [
        "quick/randrw",
        "quick/seqwrite",
        "quick/seqread",
        "quick/latency",
        "quick/copy-move-delete",
        "quick/small-files",
    ] {
        assert!(r.stdout.contains(s), "{s} missing:\n{}", r.stdout);
    }
    assert!(
        entries(dir.path()).is_empty(),
        "run directory removed: {:?}",
        entries(dir.path())
    );
}

#[test]
fn sigterm_exits_143_and_cleans_up() {
    let dir = workdir();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let s = script(
        dir.path(),
        "loop.rhai",
        "fs::write_file(\"z.dat\", \"1M\"); print(\"looping\"); loop { time::sleep(0.05); }",
    );
    let out = crate::util::plumb_signalled(
        dir.path(),
        &["run", &s, "--target", target.to_str().unwrap()],
        "looping",
        libc::SIGTERM,
    );
    assert_eq!(out.status.code(), Some(143));
    assert!(entries(&target).is_empty());
}

#[test]
fn assertions_turn_a_run_into_a_check() {
    let dir = workdir();
    let s = script(dir.path(), "m.rhai", "report::metric(\"iops\", 100, \"IOPS\", \"higher\");\nreport::metric(\"lat\", 1500, \"us\", \"lower\");\n");
    let (r, _) = run_scripts(
        dir.path(),
        &[&s, "--assert", "iops >= 50", "--assert", "m.lat <= 2ms"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (r, _) = run_scripts(
        dir.path(),
        &[
            &s,
            "--assert",
            "m.iops >= 1k",
            "--assert",
            "lat < 1ms",
            "--assert",
            "nope > 1",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("m.iops >= 1k")
            && r.stderr.contains("lat < 1ms")
            && r.stderr.contains("no metric named 'nope'"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains("iops"),
        "the table is still printed: {}",
        r.stdout
    );
    let (r, target) = run_scripts(dir.path(), &[&s, "--assert", "iops about 5"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(entries(&target).is_empty());
    // Thresholds declared by a pack.
    let pack = dir.path().join("gated");
    std::fs::create_dir(&pack).unwrap();
    std::fs::write(
        pack.join("pack.toml"),
        "name = \"gated\"\nscenarios = [\"m.rhai\"]\nassert = [\"iops >= 200\"]\n",
    )
    .unwrap();
    std::fs::copy(dir.path().join("m.rhai"), pack.join("m.rhai")).unwrap();
    let (r, _) = run_scripts(dir.path(), &["gated"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("iops >= 200"), "{}", r.stderr);
}

#[test]
fn cpu_kernels_run_on_threads_and_report_scaling() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "cpu.rhai",
        r#"
        let one = cpu::run(#{ kernel: "prime", threads: 1, duration: 0.5, cpu_max_prime: 2000 });
        let two = cpu::run(#{ kernel: "prime", threads: 2, duration: "500ms", cpu_max_prime: 2000 });
        report::metric("one", one.events_per_sec, "events/s", "higher");
        report::metric("two_threads", two.per_thread.len(), "", "higher");
        report::metric("two", two.events_per_sec, "events/s", "higher");
        report::metric("per_thread_sum", two.per_thread.reduce(|s, r| s + r, 0.0) / two.rate, "", "higher");
        report::metric("efficiency", two.efficiency, "", "higher");
        report::metric("efficiency_known", two.rate / (2.0 * two.single_thread_rate), "", "higher");
        report::metric("two_min_thread", if two.per_thread[0] < two.per_thread[1] { two.per_thread[0] } else { two.per_thread[1] }, "", "higher");
        report::metric("two_single", two.single_thread_rate, "", "higher");
        report::metric("two_events_rate", two.events / two.seconds, "", "higher");
        report::metric("one_efficiency", one.efficiency, "", "higher");
        report::metric("one_single", one.single_thread_rate / one.rate, "", "higher");
        let given = cpu::run(#{ kernel: "prime", threads: 2, duration: 0.2, cpu_max_prime: 2000, baseline: one.rate });
        report::metric("given", given.single_thread_rate / one.rate, "", "higher");
        let ok = 0;
        for k in cpu::kernels() {
            let r = cpu::run(#{ kernel: k.name, threads: 2, duration: 0.1 });
            if r.rate > 0.0 && r.unit == k.unit && r.per_thread.len() == 2 && r.events > 0 { ok += 1; }
        }
        report::metric("kernels_ok", ok, "", "higher");
        let m = cpu::run(#{ kernel: "matmul", n: 64, duration: 0.1 });
        report::metric("matmul_n", m.param, "", "higher");
        let refused = 0;
        try { cpu::run(#{ kernel: "nope" }); } catch (e) { if e.contains("sha256") { refused += 1; } }
        try { cpu::run(#{ kernel: "sha256", cpu_max_prime: 5 }); } catch (e) { if e.contains("unknown option 'cpu_max_prime'") { refused += 1; } }
        try { cpu::run(#{ kernel: "matmul", n: 1 }); } catch (e) { if e.contains("n 1 is outside") { refused += 1; } }
        try { cpu::run(#{ threads: 0 }); } catch (e) { if e.contains("threads must be a positive integer") { refused += 1; } }
        report::metric("refused", refused, "", "higher");
        "#,
    );
    let (r, _) = run_scripts(dir.path(), &[&s, "--json", "cpu.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("cpu.json"));
    let m = |n: &str| metric(&d, "cpu", n).unwrap_or_else(|| panic!("metric {n}"));
    assert!(m("one") > 100.0);
    assert_eq!(m("two_threads"), 2.0);
    // Scaling is reported against a single-thread phase of the same call:
    // efficiency = rate / (threads × single-thread rate), 1.0 with 1 thread.
    assert_eq!(m("one_efficiency"), 1.0);
    assert_eq!(m("one_single"), 1.0, "one thread is its own baseline");
    assert!(
        (m("efficiency") / m("efficiency_known") - 1.0).abs() < 1e-12,
        "efficiency {} is rate / (2 × single-thread rate) = {}",
        m("efficiency"),
        m("efficiency_known")
    );
    assert!(
        (m("two") / m("two_events_rate") - 1.0).abs() < 1e-9,
        "events_per_sec is events / seconds"
    );
    // Both threads did work at a single thread's pace within what sharing
    // two cores with the rest of the machine can take away.
    assert!(
        m("two_min_thread") > 0.2 * m("two_single"),
        "slowest thread {} vs single-thread {}",
        m("two_min_thread"),
        m("two_single")
    );
    assert!(
        (m("per_thread_sum") - 1.0).abs() < 1e-9,
        "rate is the sum of threads"
    );
    assert!(m("efficiency") > 0.2 && m("efficiency") < 1.5);
    assert_eq!(m("given"), 1.0, "a given baseline is used as is");
    assert_eq!(m("kernels_ok"), 10.0);
    assert_eq!(m("matmul_n"), 64.0);
    assert_eq!(m("refused"), 4.0);
}

#[test]
fn memory_bandwidth_and_the_latency_curve() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "mem.rhai",
        r#"
        for oper in ["read", "write", "copy"] {
            let b = mem::bandwidth(#{ oper: oper, block_size: "64K", total_size: "64M", threads: 2, scope: "local", duration: 10 });
            report::metric(`${oper}_mib`, b.bytes / 1048576, "MiB", "higher");
            report::metric(`${oper}_rate`, b.mib_per_sec, "MiB/s", "higher");
        }
        let l = mem::latency(#{ min_size: "16K", max_size: "128M", time_per_size: 0.05 });
        report::metric("points", l.points.len(), "", "higher");
        report::metric("first_ns", l.points[0].ns, "ns", "lower");
        report::metric("last_ns", l.points[-1].ns, "ns", "lower");
        report::metric("plateaus", l.plateaus.len(), "", "higher");
        let refused = 0;
        try { mem::bandwidth(#{ oper: "smash" }); } catch (e) { if e.contains("not read, write or copy") { refused += 1; } }
        try { mem::bandwidth(#{ block_size: 4 }); } catch (e) { if e.contains("block_size 4") { refused += 1; } }
        try { mem::latency(#{ max_size: "100T" }); } catch (e) { if e.contains("available memory") { refused += 1; } }
        report::metric("refused", refused, "", "higher");
        "#,
    );
    let (r, _) = run_scripts(dir.path(), &[&s, "--json", "mem.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("mem.json"));
    let m = |n: &str| metric(&d, "mem", n).unwrap_or_else(|| panic!("metric {n}"));
    for oper in ["read", "write", "copy"] {
        assert_eq!(
            m(&format!("{oper}_mib")),
            64.0,
            "{oper} moves exactly total_size"
        );
        assert!(m(&format!("{oper}_rate")) > 100.0);
    }
    // 16K, 32K, ... 128M.
    assert_eq!(m("points"), 14.0);
    assert!(
        m("last_ns") > 3.0 * m("first_ns"),
        "memory is slower than L1: {} vs {} ns",
        m("last_ns"),
        m("first_ns")
    );
    assert!(m("plateaus") >= 2.0, "cache levels show as plateaus");
    assert_eq!(m("refused"), 3.0);
}
