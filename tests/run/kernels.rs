//! CPU kernels and memory measurements run from a scenario.

use crate::util::{doc, metric, run_scripts, script, workdir};

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
        try { cpu::run(#{ threads: 0 }); } catch (e) { if e.contains("threads must be between 1 and") { refused += 1; } }
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
