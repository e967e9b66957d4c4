//! Background work and groups (`io::start`, `fs::start_copy`, `cpu::start`,
//! `net::start_throughput`, `io::group`) through the real binary: work
//! beside the foreground, live progress, stopping on request, at the
//! scenario's end, on an error, at the deadline and on SIGINT — each within
//! about a second, leaving no files and keeping partial results.

use crate::util::{
    doc, entries, pack_folder, plumb, plumb_signalled_timed, run_scripts, script, workdir,
};
use std::time::{Duration, Instant};

/// A time-based job's options running `secs` seconds on an 8 MiB file.
fn job(name: &str, rw: &str, secs: u32) -> String {
    format!(
        "#{{ name: \"{name}\", rw: \"{rw}\", bs: \"4k\", size: \"8M\", time_based: true, runtime: \"{secs}s\", iodepth: 4, ioengine: \"psync\" }}"
    )
}

/// The `jobs` of the result document's first scenario, as (name, read I/Os, write I/Os, runtime ms).
fn jobs_of(d: &serde_json::Value) -> Vec<(String, u64, u64, u64)> {
    d["scenarios"][0]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["name"].as_str().unwrap().to_string(),
                j["read"]["total_ios"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
                j["runtime_ms"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_background_job_runs_beside_the_foreground_and_stops_on_request() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "bg.rhai",
        &format!(
            r#"
let h = io::start({});
if h.done() {{ throw "done at once"; }}
// Foreground work while it runs.
let f = fs::write_file("fg.dat", "2M", #{{ fsync: true }});
let t0 = time::now();
while h.progress().read.ios == 0 && time::now() - t0 < 5.0 {{ time::sleep(0.05); }}
time::sleep(1.2);
let p = h.progress();
report::metric("progress_ios", p.read.ios, "", "higher");
report::metric("progress_last_second", p.read.iops_last_second, "iops", "higher");
report::metric("progress_writes", p.write.ios, "", "higher");
let t1 = time::now();
let r = h.stop();
report::metric("stop_seconds", time::now() - t1, "s", "lower");
report::metric("stopped_ios", r.read.total_ios, "", "higher");
report::metric("stopped_runtime_ms", r.runtime_ms, "ms", "lower");
report::metric("done_after", if h.done() {{ 1 }} else {{ 0 }}, "", "higher");
report::metric("wait_again_ios", h.wait().read.total_ios, "", "higher");
report::metric("fg_bytes", f.bytes, "B", "higher");
"#,
            job("bg", "randread", 60)
        ),
    );
    let (r, target) = run_scripts(dir.path(), &[&s, "--json", "r.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("r.json"));
    let m = |n: &str| crate::util::metric(&d, "bg", n).unwrap();
    assert!(m("progress_ios") > 0.0 && m("progress_last_second") > 0.0);
    assert_eq!(m("progress_writes"), 0.0);
    assert!(m("stop_seconds") < 1.0, "stop took {} s", m("stop_seconds"));
    assert!(m("stopped_ios") >= m("progress_ios"));
    assert!(m("stopped_runtime_ms") < 10_000.0);
    assert_eq!(m("done_after"), 1.0);
    assert_eq!(m("wait_again_ios"), m("stopped_ios"));
    assert_eq!(m("fg_bytes"), 2097152.0);
    // The job's result is recorded once.
    let jobs = jobs_of(&d);
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].0, "bg");
    assert!(entries(&target).is_empty());
}

#[test]
fn a_group_runs_its_jobs_at_once_with_a_result_each_or_merged() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "g.rhai",
        &format!(
            r#"
let t0 = time::now();
let rs = io::group([{}, {}]);
report::metric("seconds", time::now() - t0, "s", "lower");
report::metric("count", rs.len(), "", "higher");
report::metric("a_reads", rs[0].read.total_ios, "", "higher");
report::metric("b_writes", rs[1].write.total_ios, "", "higher");
report::metric("a_writes", rs[0].write.total_ios, "", "higher");
let m = io::group([{}, {}], #{{ group_reporting: true }});
report::metric("merged_count", m.len(), "", "higher");
report::metric("merged_reads", m[0].read.total_ios, "", "higher");
report::metric("merged_writes", m[0].write.total_ios, "", "higher");
"#,
            job("a", "randread", 2),
            job("b", "randwrite", 2),
            job("c", "randread", 1),
            job("d", "randwrite", 1)
        ),
    );
    let (r, _) = run_scripts(dir.path(), &[&s, "--json", "g.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("g.json"));
    let m = |n: &str| crate::util::metric(&d, "g", n).unwrap();
    // Two 2 s jobs at once take about 2 s (layout included), not 4.
    assert!(m("seconds") < 3.5, "the group took {} s", m("seconds"));
    assert_eq!(m("count"), 2.0);
    assert!(m("a_reads") > 0.0 && m("b_writes") > 0.0);
    assert_eq!(m("a_writes"), 0.0, "a's result is a's own");
    assert_eq!(m("merged_count"), 1.0);
    assert!(m("merged_reads") > 0.0 && m("merged_writes") > 0.0);
    let names: Vec<String> = jobs_of(&d).into_iter().map(|j| j.0).collect();
    assert_eq!(
        names,
        ["a", "b", "c"],
        "recorded: each job, then the merged one"
    );
    // On one clock: the two jobs of a group start together and run 2 s.
    let jobs = d["scenarios"][0]["jobs"].as_array().unwrap();
    let at = |i: usize, k: &str| {
        jobs[i][k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k}: {}", jobs[i]))
    };
    assert!(
        (at(0, "started_s") - at(1, "started_s")).abs() < 0.3,
        "{jobs:?}"
    );
    for i in 0..2 {
        let span = at(i, "ended_s") - at(i, "started_s");
        assert!((span - 2.0).abs() < 0.2, "job {i} spans {span} s");
        assert!(
            at(i, "ended_s") <= m("seconds") + 0.5,
            "ends within the scenario's clock"
        );
    }
    // The merged group started after the first one ended.
    assert!(at(2, "started_s") >= at(0, "ended_s"));
    // Bad groups are errors naming the call.
    for (bad, why) in [
        ("io::group([])", "1 to 64"),
        ("io::group([1])", "job 1 is not an options map"),
        (
            &format!(
                "io::group([{}, {}])",
                job("x", "read", 1),
                job("x", "read", 1)
            ),
            "same name",
        ),
        (
            &format!("io::group([{}], #{{ colour: 1 }})", job("y", "read", 1)),
            "unknown field `colour`, expected `group_reporting`",
        ),
    ] {
        let f = script(dir.path(), "bad.rhai", bad);
        let (r, _) = run_scripts(dir.path(), &[&f]);
        assert_eq!(r.code, 1, "{bad}: {}", r.stderr);
        assert!(
            r.stderr.contains(why) && r.stderr.contains("io::group"),
            "{bad}: {}",
            r.stderr
        );
    }
}

/// Runs `text` as a scenario with `extra` arguments; returns the run, the
/// seconds it took, and the result document.
fn timed(
    dir: &std::path::Path,
    text: &str,
    extra: &[&str],
) -> (crate::util::Run, f64, serde_json::Value) {
    let s = script(dir, "s.rhai", text);
    let mut args = vec![s.as_str(), "--json", "s.json"];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let (r, target) = run_scripts(dir, &args);
    let secs = started.elapsed().as_secs_f64();
    assert!(
        entries(&target).is_empty(),
        "files left: {:?}",
        entries(&target)
    );
    (r, secs, doc(&dir.join("s.json")))
}

/// A metric of the result document's first scenario.
fn metric(d: &serde_json::Value, name: &str) -> f64 {
    d["scenarios"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .and_then(|m| m["value"].as_f64())
        .unwrap_or_else(|| panic!("no metric {name} in {d}"))
}

#[test]
fn copies_cpu_hogs_and_streams_run_in_the_background_with_progress() {
    let dir = workdir();
    let text = r#"
        fs::write_file("src.dat", 8 * 1024 * 1024);
        let c = fs::start_copy("src.dat", "dst.dat", #{ bs: "64k" });
        let t = c.wait();
        report::metric("copied", t.bytes, "B", "higher");
        report::metric("copy_written", c.progress().write.bytes, "B", "higher");
        report::metric("dst_size", fs::stat("dst.dat").size, "B", "higher");
        // Every result says when it ran, on the clock of time::now.
        report::metric("copy_span_error", t.ended_s - t.started_s - t.seconds, "s", "lower");
        report::metric("copy_ended", t.ended_s, "s", "lower");
        report::metric("copy_waited", time::now(), "s", "lower");
        let hog_start = time::now();
        let hog = cpu::start(#{ kernel: "prime", duration: 30, cpu_max_prime: 2000 });
        let n = net::start_throughput(#{ addr: net::local_peer(), duration: 30 });
        // Foreground work goes on beside them.
        let r = fs::read_file("src.dat");
        report::metric("fg_read", r.bytes, "B", "higher");
        report::metric("fg_read_started", r.started_s, "s", "lower");
        time::sleep(1.3);
        let hp = hog.progress();
        let np = n.progress();
        report::metric("hog_events", hp.events, "", "higher");
        report::metric("hog_last_second", hp.events_per_sec_last_second, "", "higher");
        report::metric("net_sent", np.write.bytes, "B", "higher");
        report::metric("net_last_second", np.write.bw_bytes_last_second, "B/s", "higher");
        report::metric("hog_done", if hog.done() { 1 } else { 0 }, "", "higher");
        let t0 = time::now();
        let hr = hog.stop();
        let nr = n.stop();
        let t1 = time::now();
        report::metric("stop_s", t1 - t0, "s", "lower");
        report::metric("hog_started_late", hr.started_s - hog_start, "s", "lower");
        report::metric("net_started_late", nr.started_s - hog_start, "s", "lower");
        report::metric("hog_ended_at_stop", if hr.ended_s >= t0 && hr.ended_s <= t1 { 1 } else { 0 }, "", "higher");
        report::metric("net_ended_at_stop", if nr.ended_s >= t0 && nr.ended_s <= t1 { 1 } else { 0 }, "", "higher");
        report::metric("hog_span_error", hr.ended_s - hr.started_s - hr.seconds, "s", "lower");
        report::metric("hog_secs", hr.seconds, "s", "lower");
        report::metric("hog_rate", hr.rate, "", "higher");
        report::metric("net_secs", nr.seconds, "s", "lower");
        report::metric("net_bytes", nr.bytes, "B", "higher");
        report::metric("both_done", if hog.done() && n.done() { 1 } else { 0 }, "", "higher");
    "#;
    let (r, _, d) = timed(dir.path(), text, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(metric(&d, "copied"), 8.0 * 1048576.0);
    assert_eq!(metric(&d, "copy_written"), 8.0 * 1048576.0);
    assert_eq!(metric(&d, "dst_size"), 8.0 * 1048576.0);
    assert_eq!(metric(&d, "fg_read"), 8.0 * 1048576.0);
    assert!(metric(&d, "hog_events") > 0.0, "{d}");
    assert!(metric(&d, "hog_last_second") > 0.0, "{d}");
    assert!(metric(&d, "net_sent") > 0.0, "{d}");
    assert!(metric(&d, "net_last_second") > 0.0, "{d}");
    assert_eq!(metric(&d, "hog_done"), 0.0, "a 30 s hog still runs");
    assert!(metric(&d, "stop_s") < 1.0, "{d}");
    let hog_secs = metric(&d, "hog_secs");
    assert!(hog_secs > 1.0 && hog_secs < 5.0, "{d}");
    assert!(metric(&d, "hog_rate") > 0.0, "{d}");
    let net_secs = metric(&d, "net_secs");
    assert!(net_secs > 1.0 && net_secs < 5.0, "{d}");
    assert!(metric(&d, "net_bytes") > 0.0, "{d}");
    assert_eq!(metric(&d, "both_done"), 1.0);
    // One clock for all of them: the copy ended before it was waited on
    // and the foreground read began after; the hog and the streams began
    // when they were started and ended when they were stopped.
    assert!(metric(&d, "copy_span_error").abs() < 1e-6, "{d}");
    assert!(metric(&d, "copy_ended") <= metric(&d, "copy_waited"), "{d}");
    assert!(
        metric(&d, "fg_read_started") >= metric(&d, "copy_waited"),
        "{d}"
    );
    for late in ["hog_started_late", "net_started_late"] {
        let l = metric(&d, late);
        assert!((-0.02..0.3).contains(&l), "{late}: {l} s ({d})");
    }
    assert_eq!(metric(&d, "hog_ended_at_stop"), 1.0, "{d}");
    assert_eq!(metric(&d, "net_ended_at_stop"), 1.0, "{d}");
    assert!(metric(&d, "hog_span_error").abs() < 1e-6, "{d}");
}

#[test]
fn a_background_copy_is_charged_and_sandboxed_like_a_copy() {
    let dir = workdir();
    for (text, expect) in [
        (
            r#"fs::write_file("a", 4096); fs::start_copy("a", "../out");"#,
            "host/sandbox",
        ),
        (
            r#"fs::write_file("a", 4096); fs::start_copy("/etc/passwd", "b");"#,
            "host/sandbox",
        ),
        (
            r#"fs::write_file("a", 600000); fs::start_copy("a", "b");"#,
            "host/budget",
        ),
        (
            r#"fs::write_file("a", 4096); fs::start_copy("a", "b", #{ bs: 0 });"#,
            "host/invalid",
        ),
        (
            r#"fs::write_file("a", 4096); cpu::start(#{ threads: 0 });"#,
            "host/invalid",
        ),
        (
            r#"net::start_throughput(#{ addr: "127.0.0.1:9", duration: 1 });"#,
            "host/denied",
        ),
    ] {
        let (r, _, d) = timed(dir.path(), text, &["--max-bytes", "1M"]);
        assert_eq!(r.code, 1, "{text}: {}", r.stderr);
        assert_eq!(
            d["scenarios"][0]["error_kind"], expect,
            "{text}: {}",
            r.stderr
        );
        assert!(!dir.path().join("out").exists());
    }
}

#[test]
fn a_task_that_failed_unwaited_fails_the_scenario_and_finished_ones_free_their_place() {
    let dir = workdir();
    // Nothing listens on port 1: the stream fails, nobody waits on it.
    let (r, _, d) = timed(
        dir.path(),
        r#"let n = net::start_throughput(#{ addr: "127.0.0.1:1", duration: 5 }); time::sleep(0.5);"#,
        &["--allow-net", "127.0.0.1:1"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(d["scenarios"][0]["error_kind"], "failed", "{}", r.stderr);
    let error = d["scenarios"][0]["error"].as_str().unwrap();
    assert!(
        error.contains("net::start_throughput") && error.contains("it failed"),
        "{error}"
    );
    // Waited on, the same failure is the script's to handle.
    let (r, _, _) = timed(
        dir.path(),
        r#"let n = net::start_throughput(#{ addr: "127.0.0.1:1", duration: 5 });
           try { n.wait(); } catch (e) { print("handled"); }"#,
        &["--allow-net", "127.0.0.1:1"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Tasks waited on free their place: 200 copies one after another.
    let (r, _, d) = timed(
        dir.path(),
        r#"fs::write_file("a", 4096);
           for i in 0..200 { fs::start_copy("a", "b").wait(); }
           report::metric("copies", 200, "", "higher");"#,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(metric(&d, "copies"), 200.0);
}

/// Starts one of each kind of background work beside three jobs; each
/// runs for a minute unless stopped. The source of the copy is sparse and
/// copied 4 KiB at a time, so the copy runs for seconds.
fn every_kind() -> String {
    format!(
        r#"let a = io::start({}); let b = io::start({}); let c = io::start({});
        let f = fs::open("sparse", #{{ write: true, create: true }}); f.truncate(256 * 1024 * 1024); f.close();
        let cp = fs::start_copy("sparse", "copy", #{{ bs: "4k" }});
        let hog = cpu::start(#{{ kernel: "prime", duration: 60, cpu_max_prime: 2000 }});
        let n = net::start_throughput(#{{ addr: net::local_peer(), duration: 60 }});
        time::sleep(1.0);"#,
        job("a", "randread", 60),
        job("b", "randwrite", 60),
        job("c", "read", 60)
    )
}

#[test]
fn every_kind_of_background_work_stops_with_the_scenario() {
    let dir = workdir();
    let all = every_kind();
    let (r, secs, d) = timed(dir.path(), &all, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The event comes 1 s in (plus the start); everything started runs 60 s.
    // 1.4-1.6 s here; the bound leaves room for a loaded 2-core CI machine
    // (2.36 s was seen there) and still fails any work that outlives its stop.
    assert!(secs < 4.0, "took {secs} s");
    let notes: Vec<&str> = d["scenarios"][0]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    // One note per work left running, and the loopback peer's.
    assert_eq!(notes.len(), 7, "{notes:?}");
    assert!(notes[0].contains("measure loopback"), "{notes:?}");
    for op in [
        "io::start",
        "fs::start_copy",
        "cpu::start",
        "net::start_throughput",
    ] {
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with(op) && n.contains("was not waited on")),
            "{op}: {notes:?}"
        );
    }
    assert!(notes.iter().any(|n| n.contains("Gbit/s")), "{notes:?}");

    let (r, secs, d) = timed(dir.path(), &format!("{all} throw \"boom\";"), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(secs < 4.0, "took {secs} s");
    assert_eq!(jobs_of(&d).len(), 3, "partial results kept");

    let (r, secs, d) = timed(
        dir.path(),
        &format!("{all} time::sleep(100.0);"),
        &["--timeout", "3s"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(d["scenarios"][0]["error_kind"], "deadline");
    assert!(secs < 6.0, "took {secs} s");
    assert_eq!(jobs_of(&d).len(), 3, "partial results kept");
}

#[test]
fn background_jobs_stop_when_the_scenario_ends_fails_or_runs_out_of_time() {
    let dir = workdir();
    let three = format!(
        "let a = io::start({}); let b = io::start({}); let c = io::start({}); time::sleep(1.0);",
        job("a", "randread", 60),
        job("b", "randwrite", 60),
        job("c", "read", 60)
    );
    // Never waited on: stopped at the end, results kept with a note each.
    let (r, secs, d) = timed(dir.path(), &three, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(secs < 6.0, "took {secs} s");
    let jobs = jobs_of(&d);
    assert_eq!(jobs.len(), 3, "{jobs:?}");
    assert!(
        jobs.iter().all(|j| j.1 + j.2 > 0 && j.3 < 10_000),
        "{jobs:?}"
    );
    let notes = d["scenarios"][0]["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes[0].as_str().unwrap().contains("was not waited on"));

    // An error right after starting them.
    let (r, secs, d) = timed(dir.path(), &format!("{three} throw \"boom\";"), &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("boom"));
    assert!(secs < 6.0, "took {secs} s");
    assert_eq!(jobs_of(&d).len(), 3, "partial results kept");

    // The deadline, while the foreground sleeps.
    let (r, secs, d) = timed(
        dir.path(),
        &format!("{three} time::sleep(100.0);"),
        &["--timeout", "3s"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(d["scenarios"][0]["error_kind"], "deadline");
    assert!(secs < 8.0, "took {secs} s");
    assert_eq!(jobs_of(&d).len(), 3, "partial results kept");
}

#[test]
fn sigint_stops_background_jobs_and_leaves_no_files() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "s.rhai",
        &format!(
            "{} print(\"all running\"); time::sleep(100.0);",
            every_kind()
        ),
    );
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let (out, after_signal) = plumb_signalled_timed(
        dir.path(),
        &["run", &s, "--target", "target", "--json", "s.json"],
        "all running",
        libc::SIGINT,
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every task stopped and joined, the run directory removed and the
    // results written within a second of the signal.
    assert!(after_signal < Duration::from_secs(1), "{after_signal:?}");
    assert!(entries(&dir.path().join("target")).is_empty());
    let d = doc(&dir.path().join("s.json"));
    assert_eq!(jobs_of(&d).len(), 3, "partial results kept");
}

#[test]
fn background_threads_count_against_the_pack() {
    let dir = workdir();
    pack_folder(
        dir.path(),
        "p",
        "name = \"p\"\nscenarios = [\"s.rhai\"]\n[capabilities]\nthreads = 2\n",
        &[(
            "s.rhai",
            &format!(
                "let a = io::start({});\nlet b = io::start({});\ntime::sleep(1.0);\nlet c = io::start({});\n",
                job("a", "randread", 30),
                job("b", "randread", 30),
                job("c", "randread", 30)
            ),
        )],
    );
    let r = plumb(
        dir.path(),
        &["run", "p", "--target", ".", "--json", "p.json"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("beside the 2 its background tasks hold"),
        "{}",
        r.stderr
    );
    // The two that started were stopped and kept.
    assert_eq!(jobs_of(&doc(&dir.path().join("p.json"))).len(), 2);
}

#[test]
fn a_background_job_and_the_foreground_share_a_device_iops_cap() {
    if !crate::util::privileged(
        "a_background_job_and_the_foreground_share_a_device_iops_cap",
        "a blkio cgroup",
    ) {
        return;
    }
    const CAP: f64 = 2000.0;
    let dir = workdir();
    let group = crate::util::BlkioGroup::new("share");
    group.set(
        "blkio.throttle.read_iops_device",
        &format!("{} {CAP}", crate::util::disk_of(dir.path())),
    );
    let s = script(
        dir.path(),
        "share.rhai",
        r#"
fs::write_file("fg.dat", "32M", #{ direct: true });
let h = io::start(#{ name: "bg", filename: "bg.dat", rw: "randread", bs: "4k", size: "32M", direct: true,
                     iodepth: 4, ioengine: "io_uring", time_based: true, runtime: "20s" });
let f = fs::open("fg.dat", #{ read: true, direct: true });
while h.progress().read.ios == 0 { time::sleep(0.05); }
time::sleep(1.0);
let b0 = h.progress().read.ios;
let t0 = time::now();
let n = 0;
let x = 12345;
while time::now() - t0 < 6.0 {
    x = (x * 1103515245 + 12345) % 2147483648;
    f.read_at((x % 8192) * 4096, 4096);
    n += 1;
}
let secs = time::now() - t0;
let b1 = h.progress().read.ios;
h.stop();
report::metric("fg_iops", n / secs, "iops", "higher");
report::metric("bg_iops", (b1 - b0) / secs, "iops", "higher");
"#,
    );
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > {} && exec \"$0\" run {s} --target target --json share.json",
            group.procs().display()
        ))
        .arg(crate::util::plumb_bin())
        .current_dir(dir.path())
        .env("PLUMB_CACHE_DIR", crate::util::test_cache())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = doc(&dir.path().join("share.json"));
    let fg = crate::util::metric(&d, "share", "fg_iops").unwrap();
    let bg = crate::util::metric(&d, "share", "bg_iops").unwrap();
    assert!(fg > 50.0 && bg > 50.0, "both did I/O: fg {fg}, bg {bg}");
    let sum = fg + bg;
    eprintln!("under a {CAP} IOPS read cap: foreground {fg:.0} + background {bg:.0} = {sum:.0}");
    assert!(
        (sum / CAP - 1.0).abs() <= 0.05,
        "foreground {fg:.0} + background {bg:.0} = {sum:.0} IOPS under a {CAP} IOPS cap"
    );
}

/// Removes the cgroup directory when dropped (after its processes ended).
#[test]
fn the_interference_pack_measures_latency_alone_and_beside_each_neighbour() {
    let dir = workdir();
    let (r, target) = run_scripts(
        dir.path(),
        &[
            "interference",
            "-p",
            "size=64M",
            "-p",
            "runtime=2s",
            "--json",
            "i.json",
            "--svg",
            "charts",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(entries(&target).is_empty());
    let d = doc(&dir.path().join("i.json"));
    let m = |n: &str| crate::util::metric(&d, "interference", n).unwrap_or_else(|| panic!("{n}"));
    let mut inflations = Vec::new();
    for case in ["quiet", "copy", "rand-writes", "fsync-stream"] {
        let (p50, p99, p999) = (
            m(&format!("{case}.p50")),
            m(&format!("{case}.p99")),
            m(&format!("{case}.p99_9")),
        );
        assert!(
            0.5 < p50 && p50 <= p99 && p99 <= p999 && p999 < 1e6,
            "{case}: p50 {p50} p99 {p99} p99.9 {p999} µs"
        );
        assert!(m(&format!("{case}.probe_iops")) > 10.0);
        if case != "quiet" {
            assert!(
                m(&format!("{case}.bg_mib_s")) > 0.0,
                "{case}'s neighbour did work"
            );
            let ratio = m(&format!("{case}.p99_inflation"));
            assert!(
                (ratio - p99 / m("quiet.p99")).abs() < 0.01 * ratio,
                "{case}: inflation {ratio}"
            );
            inflations.push((case, ratio));
        }
    }
    // On a real disk some neighbour slows the probe's p99; which one (the
    // random writes, the durable copy, the fsync stream) depends on the
    // disk and its cache, so only some neighbour is required to be above 1.
    assert!(
        inflations.iter().any(|(_, r)| *r > 1.0),
        "no neighbour slowed the probe: {inflations:?}"
    );
    // Per-second probe p99 and neighbour MiB/s, drawn on one chart.
    let series = d["scenarios"][0]["series"].as_array().unwrap();
    assert_eq!(series.len(), 2, "{series:?}");
    assert_eq!(series[0]["unit"], "µs");
    assert!(
        series[0]["points"].as_array().unwrap().len() >= 4,
        "{series:?}"
    );
    assert!(series[1]["points"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p[1].as_f64().unwrap() > 0.0));
    let chart = std::fs::read_to_string(dir.path().join("charts/series-interference.svg")).unwrap();
    assert!(
        chart.contains("probe p99") && chart.contains("MiB/s"),
        "{chart}"
    );
    let table = &d["scenarios"][0]["tables"][0];
    assert_eq!(table["rows"].as_array().unwrap().len(), 4, "{table}");
    // The background jobs were stopped and recorded beside the probes.
    let names: Vec<String> = jobs_of(&d).into_iter().map(|j| j.0).collect();
    assert_eq!(
        names,
        [
            "probe",
            "probe",
            "probe",
            "rand-writes",
            "probe",
            "fsync-stream"
        ]
    );
}
