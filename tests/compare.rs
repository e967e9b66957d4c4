//! `plumb compare` on result files with known samples, and on real runs.

use crate::util::{plumb, workdir};
use serde_json::json;
use std::path::Path;

/// A minimal result document with one scenario and the given metrics.
fn result(label: &str, metrics: &[(&str, &str, &str, &[f64])]) -> serde_json::Value {
    let ms: Vec<_> = metrics
        .iter()
        .map(|(name, unit, better, samples)| {
            let mut s = samples.to_vec();
            s.sort_by(f64::total_cmp);
            json!({ "name": name, "unit": unit, "better": better, "value": s[s.len() / 2], "samples": samples })
        })
        .collect();
    json!({
        "schema": "plumb.result.v1", "plumb_version": "0.1.0", "label": label,
        "started": "2026-11-30T10:00:00+00:00", "finished": "2026-11-30T10:01:00+00:00",
        "host": { "hostname": format!("host-{label}"), "os": "Linux", "kernel": "6.18", "arch": "x86_64",
                  "cpu_model": "Test CPU", "cpus": 4, "memory_bytes": 8589934592u64 },
        "target": null,
        "scenarios": [{ "name": "s", "pack": "p", "source_sha256": null, "params": {}, "repeat": 5,
                        "metrics": ms, "jobs": [], "tables": [], "error": null }]
    })
}

fn write(dir: &Path, name: &str, v: &serde_json::Value) -> String {
    std::fs::write(dir.join(name), serde_json::to_string(v).unwrap()).unwrap();
    name.to_string()
}

fn compare_json(dir: &Path, files: &[&str]) -> serde_json::Value {
    let mut args = vec!["compare"];
    args.extend_from_slice(files);
    args.extend(["--format", "json"]);
    let r = plumb(dir, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    r.json()
}

fn row<'a>(c: &'a serde_json::Value, metric: &str) -> &'a serde_json::Value {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("{metric}: {c}"))
}

#[test]
fn values_ratios_winners_and_noise() {
    let dir = workdir();
    let a = write(
        dir.path(),
        "a.json",
        &result(
            "A",
            &[
                ("iops", "IOPS", "higher", &[100.0, 101.0, 99.0, 100.5, 99.5]),
                (
                    "lat",
                    "ns",
                    "lower",
                    &[1000.0, 1010.0, 990.0, 1005.0, 995.0],
                ),
                (
                    "noisy",
                    "IOPS",
                    "higher",
                    &[80.0, 100.0, 120.0, 90.0, 110.0],
                ),
                ("single", "IOPS", "higher", &[100.0]),
                ("only_a", "IOPS", "higher", &[1.0, 2.0]),
            ],
        ),
    );
    let b = write(
        dir.path(),
        "b.json",
        &result(
            "B",
            &[
                (
                    "iops",
                    "IOPS",
                    "higher",
                    &[120.0, 121.0, 119.0, 120.5, 119.5],
                ),
                (
                    "lat",
                    "ns",
                    "lower",
                    &[1200.0, 1210.0, 1190.0, 1205.0, 1195.0],
                ),
                (
                    "noisy",
                    "IOPS",
                    "higher",
                    &[84.0, 104.0, 124.0, 94.0, 114.0],
                ),
                ("single", "IOPS", "higher", &[150.0]),
                ("only_b", "IOPS", "higher", &[3.0, 4.0]),
            ],
        ),
    );
    let c = compare_json(dir.path(), &[&a, &b]);
    assert_eq!(c["schema"], "plumb.compare.v1");
    assert_eq!(c["runs"], json!(["A", "B"]));
    let iops = row(&c, "iops");
    assert_eq!(iops["cells"][0]["verdict"], "baseline");
    assert_eq!(iops["cells"][1]["value"], 120.0);
    assert!((iops["cells"][1]["ratio"].as_f64().unwrap() - 1.2).abs() < 1e-9);
    assert_eq!(iops["cells"][1]["verdict"], "better");
    // Lower is better: 20% more latency is worse.
    assert_eq!(row(&c, "lat")["cells"][1]["verdict"], "worse");
    // Medians differ (100 vs 104) but the spreads overlap: no winner.
    let noisy = &row(&c, "noisy")["cells"][1];
    assert_eq!(noisy["verdict"], "within_noise");
    let ci = noisy["ratio_ci"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() < 1.0 && ci[1].as_f64().unwrap() > 1.0);
    // One sample: a ratio, but no claim.
    assert_eq!(row(&c, "single")["cells"][1]["verdict"], "unknown");
    // Missing on one side is shown, not dropped.
    assert_eq!(row(&c, "only_a")["cells"][1]["verdict"], "missing");
    assert_eq!(row(&c, "only_b")["cells"][0]["verdict"], "missing");
    assert!(row(&c, "only_b")["cells"][0]["value"].is_null());
    // The table says the same in words, with units scaled.
    let t = plumb(dir.path(), &["compare", &a, &b]);
    assert!(
        t.stdout.contains("within noise")
            && t.stdout.contains("better")
            && t.stdout.contains("missing"),
        "{}",
        t.stdout
    );
    assert!(
        t.stdout.contains("1.20 µs"),
        "ns scaled to µs: {}",
        t.stdout
    );
    assert!(
        t.stdout.contains("host-A") && t.stdout.contains("Test CPU"),
        "machine table: {}",
        t.stdout
    );
}

#[test]
fn regression_gate_names_the_metric() {
    let dir = workdir();
    let a = write(
        dir.path(),
        "a.json",
        &result(
            "A",
            &[
                ("iops", "IOPS", "higher", &[100.0, 101.0, 99.0]),
                ("bw", "bytes/s", "higher", &[10.0, 10.1, 9.9]),
            ],
        ),
    );
    let b = write(
        dir.path(),
        "b.json",
        &result(
            "B",
            &[
                ("iops", "IOPS", "higher", &[80.0, 80.8, 79.2]),
                ("bw", "bytes/s", "higher", &[10.5, 10.6, 10.4]),
            ],
        ),
    );
    let r = plumb(dir.path(), &["compare", &a, &b, "--fail-if-slower", "10%"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("iops") && r.stderr.contains("20.0% worse"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("s bw"), "bw improved: {}", r.stderr);
    let r = plumb(dir.path(), &["compare", &a, &b, "--fail-if-slower", "25%"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn bad_files_are_clear_errors() {
    let dir = workdir();
    let good = write(
        dir.path(),
        "a.json",
        &result("A", &[("iops", "IOPS", "higher", &[1.0])]),
    );
    std::fs::write(
        dir.path().join("broken.json"),
        "{\n  \"schema\": \"plumb.result.v1\",\n  oops\n}",
    )
    .unwrap();
    let r = plumb(dir.path(), &["compare", &good, "broken.json"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("broken.json:3:"), "{}", r.stderr);
    let mut future = result("F", &[("iops", "IOPS", "higher", &[1.0])]);
    future["schema"] = json!("plumb.result.v9");
    let f = write(dir.path(), "future.json", &future);
    let r = plumb(dir.path(), &["compare", &good, &f]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("plumb.result.v9") && r.stderr.contains("upgrade"),
        "{}",
        r.stderr
    );
}

#[test]
fn two_real_quick_runs_compare_in_markdown() {
    let dir = workdir();
    for label in ["vm-a", "vm-b"] {
        let r = plumb(
            dir.path(),
            &[
                "run",
                "quick",
                "-p",
                "size=8M",
                "-p",
                "runtime=1s",
                "-p",
                "files=50",
                "--repeat",
                "2",
                "--label",
                label,
                "--json",
                &format!("{label}.json"),
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    // Scenarios run twice in one workspace: each must clean up after itself.
    let a: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("vm-a.json")).unwrap())
            .unwrap();
    for s in a["scenarios"].as_array().unwrap() {
        assert!(s["error"].is_null(), "{s}");
        for m in s["metrics"].as_array().unwrap() {
            assert_eq!(m["samples"].as_array().unwrap().len(), 2, "{m}");
        }
    }
    let c = compare_json(dir.path(), &["vm-a.json", "vm-b.json"]);
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 16, "every metric of the quick pack");
    for r in rows {
        assert!(r["cells"][1]["ratio"].as_f64().is_some(), "{r}");
        assert_ne!(r["cells"][1]["verdict"], "missing", "{r}");
    }
    let md = plumb(
        dir.path(),
        &["compare", "vm-a.json", "vm-b.json", "--format", "markdown"],
    );
    assert_eq!(md.code, 0);
    let table: Vec<&str> = md.stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert!(table.len() > 16);
    let header_at = table.iter().position(|l| l.contains("scenario")).unwrap();
    let header_cols = table[header_at].matches('|').count();
    let sep = table[header_at + 1];
    assert!(
        sep.contains("---"),
        "a separator row follows the header: {sep}"
    );
    assert_eq!(sep.matches('|').count(), header_cols);
    for l in table.iter().filter(|l| l.contains("quick/")) {
        assert_eq!(l.matches('|').count(), header_cols, "{l}");
    }
    assert!(md.stdout.contains("| vm-a") || md.stdout.contains("vm-a |"));
}

/// A pack whose one metric is a constant times its `n` parameter.
const SCALE_PACK: &str = r#"name = "scale"
version = "1"
scenarios = ["s.rhai"]
[params.n]
default = 1
"#;

/// Runs the pack folder `pack` three times with `-p n=N` into
/// `LABEL.json`, its run directory under `d/t`.
fn run_with_n(d: &Path, pack: &str, label: &str, n: &str) {
    let r = plumb(
        d,
        &[
            "run",
            pack,
            "--target",
            "t",
            "--repeat",
            "3",
            "-p",
            &format!("n={n}"),
            "--label",
            label,
            "--json",
            &format!("{label}.json"),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn runs_with_other_parameters_are_not_comparable() {
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir(d.join("scale")).unwrap();
    std::fs::write(d.join("scale/pack.toml"), SCALE_PACK).unwrap();
    std::fs::write(
        d.join("scale/s.rhai"),
        r#"report::metric("value", parse_int(param("n", "1")) * 10.0, "n", "higher");"#,
    )
    .unwrap();
    std::fs::create_dir(d.join("t")).unwrap();
    for (label, n) in [("a", "1"), ("b", "1"), ("c", "2")] {
        run_with_n(d, "scale/", label, n);
    }
    // Same parameters: a verdict as always.
    let same = compare_json(d, &["a.json", "b.json"]);
    let cell = &row(&same, "value")["cells"][1];
    assert_eq!(cell["verdict"], "within_noise", "{same}");
    assert!(cell.get("not_comparable").is_none(), "{same}");
    // Other parameters: no ratio, no verdict, the reason.
    let other = compare_json(d, &["a.json", "c.json"]);
    let cell = &row(&other, "value")["cells"][1];
    assert_eq!(cell["verdict"], "not_comparable", "{other}");
    assert_eq!(cell["ratio"], serde_json::Value::Null, "{other}");
    assert_eq!(cell["not_comparable"], "params differ: n 1 vs 2", "{other}");
    let table = plumb(d, &["compare", "a.json", "c.json"]);
    assert!(
        table
            .stdout
            .contains("not comparable (params differ: n 1 vs 2)"),
        "{}",
        table.stdout
    );
    assert!(
        table.stdout.contains("1 cell(s) not comparable"),
        "{}",
        table.stdout
    );
    // The gate ignores it (twice the value would be a 100% "regression" the
    // other way round) unless told otherwise.
    let gate = plumb(
        d,
        &["compare", "c.json", "a.json", "--fail-if-slower", "10%"],
    );
    assert_eq!(gate.code, 0, "{}", gate.stderr);
    let gate = plumb(
        d,
        &[
            "compare",
            "c.json",
            "a.json",
            "--fail-if-slower",
            "10%",
            "--allow-mismatch",
        ],
    );
    assert_eq!(gate.code, 1, "{}", gate.stderr);
}

/// The statistics a reader can trust: two runs without labels get two
/// column names, two samples a side give no verdict (and say which
/// `--repeat` would), and the gate never fires on a row within noise or
/// without a verdict.
#[test]
fn unlabelled_runs_few_samples_and_noise_are_never_a_verdict() {
    let dir = workdir();
    let d = dir.path();
    let unlabelled = |samples: &[f64], started: &str| {
        let mut v = result("x", &[("iops", "IOPS", "higher", samples)]);
        v["label"] = serde_json::Value::Null;
        v["host"]["hostname"] = json!("vm");
        v["started"] = json!(started);
        v["scenarios"][0]["repeat"] = json!(samples.len());
        v
    };
    // Two unlabelled runs on one host name: different column names.
    let a = write(
        d,
        "monday.json",
        &unlabelled(&[100.0, 101.0], "2026-12-01T09:00:00+00:00"),
    );
    let b = write(
        d,
        "tuesday.json",
        &unlabelled(&[50.0, 51.0], "2026-12-02T09:00:00+00:00"),
    );
    let c = compare_json(d, &[&a, &b]);
    let runs = c["runs"].as_array().unwrap();
    assert_ne!(runs[0], runs[1], "{c}");
    assert!(
        runs[0].as_str().unwrap().contains("2026-12-01")
            && runs[1].as_str().unwrap().contains("2026-12-02"),
        "host name and start time: {c}"
    );
    // The same start too (one file copied): the file's stem tells them apart.
    let b2 = write(
        d,
        "copy.json",
        &unlabelled(&[50.0, 51.0], "2026-12-01T09:00:00+00:00"),
    );
    let c2 = compare_json(d, &[&a, &b2]);
    assert_eq!(c2["runs"], json!(["monday", "copy"]), "{c2}");

    // Half the IOPS, but two samples a side: a ratio, no verdict, and the
    // --repeat that would give one.
    let cell = &row(&c, "iops")["cells"][1];
    assert_eq!(cell["verdict"], "unknown", "{c}");
    assert!((cell["ratio"].as_f64().unwrap() - 0.5).abs() < 0.01, "{c}");
    assert_eq!(cell["repeat_for_verdict"], 3, "{c}");
    let t = plumb(d, &["compare", &a, &b]);
    assert!(
        t.stdout.contains("no verdict") && t.stdout.contains("--repeat 3"),
        "{}",
        t.stdout
    );
    assert!(!t.stdout.contains("worse"), "{}", t.stdout);
    // The gate does not judge it, and says why.
    let gate = plumb(d, &["compare", &a, &b, "--fail-if-slower", "10%"]);
    assert_eq!(gate.code, 0, "{}", gate.stderr);
    assert!(
        gate.stderr.contains("not judged") && gate.stderr.contains("--repeat 3"),
        "{}",
        gate.stderr
    );

    // Five samples a side, the median 15% lower, the spread wide: within
    // noise, and the gate at 10% stays quiet.
    let wide = write(
        d,
        "wide-a.json",
        &result(
            "A",
            &[("iops", "IOPS", "higher", &[60.0, 80.0, 100.0, 120.0, 140.0])],
        ),
    );
    let wide_b = write(
        d,
        "wide-b.json",
        &result(
            "B",
            &[("iops", "IOPS", "higher", &[45.0, 65.0, 85.0, 105.0, 125.0])],
        ),
    );
    let c = compare_json(d, &[&wide, &wide_b]);
    assert_eq!(
        row(&c, "iops")["cells"][1]["verdict"],
        "within_noise",
        "{c}"
    );
    let gate = plumb(d, &["compare", &wide, &wide_b, "--fail-if-slower", "10%"]);
    assert_eq!(gate.code, 0, "{}", gate.stderr);
}

/// A parameter the scenario never reads does not set runs apart.
#[test]
fn a_parameter_the_scenario_never_reads_keeps_runs_comparable() {
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir(d.join("pk")).unwrap();
    std::fs::write(
        d.join("pk/pack.toml"),
        "name = \"pk\"\nversion = \"1\"\nscenarios = [\"reads.rhai\", \"ignores.rhai\"]\n[params.n]\ndefault = 1\n",
    )
    .unwrap();
    std::fs::write(
        d.join("pk/reads.rhai"),
        r#"report::metric("value", parse_int(param("n", "1")) * 10.0, "n", "higher");"#,
    )
    .unwrap();
    std::fs::write(
        d.join("pk/ignores.rhai"),
        r#"report::metric("value", 10.0, "n", "higher");"#,
    )
    .unwrap();
    std::fs::create_dir(d.join("t")).unwrap();
    for (label, n) in [("a", "1"), ("b", "2")] {
        run_with_n(d, "pk/", label, n);
    }
    let c = compare_json(d, &["a.json", "b.json"]);
    let cells = |scenario: &str| {
        c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["scenario"] == format!("pk/{scenario}"))
            .unwrap_or_else(|| panic!("{scenario}: {c}"))["cells"][1]
            .clone()
    };
    assert_eq!(cells("reads")["verdict"], "not_comparable", "{c}");
    assert_eq!(cells("ignores")["verdict"], "within_noise", "{c}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("b.json")).unwrap()).unwrap();
    assert_eq!(doc["scenarios"][0]["params_read"], json!(["n"]), "{doc}");
    assert_eq!(doc["scenarios"][1]["params_read"], json!([]), "{doc}");
}

#[test]
fn a_partial_figure_is_never_compared() {
    let dir = workdir();
    let d = dir.path();
    let samples: &[f64] = &[100.0, 101.0, 99.0, 100.0, 102.0];
    let a = write(
        d,
        "a.json",
        &result("a", &[("iops", "IOPS", "higher", samples)]),
    );
    let mut stopped = result(
        "b",
        &[("iops", "IOPS", "higher", &[50.0, 51.0, 49.0, 50.0, 52.0])],
    );
    stopped["scenarios"][0]["metrics"][0]["marks"] = json!(["partial"]);
    let b = write(d, "b.json", &stopped);
    let c = compare_json(d, &[&a, &b]);
    let cell = &row(&c, "iops")["cells"][1];
    assert_eq!(cell["verdict"], "not_comparable", "{c}");
    assert!(
        cell["not_comparable"].as_str().unwrap().contains("partial"),
        "{c}"
    );
    // And the gate does not fire on it.
    let r = plumb(d, &["compare", &a, &b, "--fail-if-slower", "10%"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}
