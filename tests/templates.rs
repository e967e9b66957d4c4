//! Comparison templates: the `cloud-compare` pack's layout in every output
//! format, from real runs and from result files with known samples; packs
//! carrying their template in folders and bundles; templates that fail
//! falling back to the generic table.

use crate::util::{plumb, run_scripts, workdir, CLOUD_COMPARE_SMALL};
use serde_json::json;
use std::path::Path;

/// A `cloud-compare` result document with the given (scenario, metric,
/// unit, better, samples), as `plumb run cloud-compare` writes them.
fn cloud_run(label: &str, metrics: &[(&str, &str, &str, &str, &[f64])]) -> serde_json::Value {
    let mut scenarios: Vec<serde_json::Value> = Vec::new();
    for (scenario, name, unit, better, samples) in metrics {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let m = json!({ "name": name, "unit": unit, "better": better,
                        "value": sorted[sorted.len() / 2], "samples": samples });
        match scenarios.iter_mut().find(|s| s["name"] == *scenario) {
            Some(s) => s["metrics"].as_array_mut().unwrap().push(m),
            None => scenarios.push(json!({
                "name": scenario, "pack": "cloud-compare", "pack_origin": "builtin",
                "pack_version": "1", "source_sha256": null,
                "params": { "size": "4G", "dd_size": "1G" }, "repeat": samples.len(),
                "metrics": [m], "jobs": [], "tables": [], "error": null
            })),
        }
    }
    json!({
        "schema": "plumb.result.v1", "plumb_version": "0.1.0", "label": label,
        "started": "2026-12-01T10:00:00+00:00", "finished": "2026-12-01T10:05:00+00:00",
        "host": { "hostname": format!("{label}.example"), "os": "Debian", "kernel": "6.1", "arch": "x86_64",
                  "cpu_model": format!("CPU of {label}"), "cpus": 4, "memory_bytes": 8589934592u64 },
        "target": null,
        "scenarios": scenarios
    })
}

fn write(dir: &Path, name: &str, v: &serde_json::Value) -> String {
    std::fs::write(dir.join(name), serde_json::to_string(v).unwrap()).unwrap();
    name.to_string()
}

/// Two cloud-compare runs: B writes twice as fast (clearly), both have the
/// same ioping latency (noise), and B's copy took one sample only.
fn two_cloud_runs(dir: &Path) -> (String, String) {
    let a = cloud_run(
        "vm-a",
        &[
            (
                "dd",
                "write_bw",
                "MiB/s",
                "higher",
                &[100.0, 101.0, 99.0, 100.5],
            ),
            (
                "ioping",
                "lat_avg",
                "us",
                "lower",
                &[200.0, 210.0, 190.0, 205.0],
            ),
            ("big-file", "copy_seconds", "s", "lower", &[12.0]),
        ],
    );
    let b = cloud_run(
        "vm-b",
        &[
            (
                "dd",
                "write_bw",
                "MiB/s",
                "higher",
                &[200.0, 202.0, 198.0, 201.0],
            ),
            (
                "ioping",
                "lat_avg",
                "us",
                "lower",
                &[205.0, 195.0, 200.0, 208.0],
            ),
            ("big-file", "copy_seconds", "s", "lower", &[6.0]),
        ],
    );
    (write(dir, "a.json", &a), write(dir, "b.json", &b))
}

/// The cells of the row whose first cell starts with `test`.
fn row_of<'a>(table: &'a str, test: &str) -> Vec<&'a str> {
    let line = table
        .lines()
        .find(|l| l.trim_start_matches(['│', '|', ' ']).starts_with(test))
        .unwrap_or_else(|| panic!("no row {test:?} in:\n{table}"));
    line.split(['│', '┆', '|'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn cloud_compare_template_lays_out_the_summary_in_every_format() {
    let dir = workdir();
    let (a, b) = two_cloud_runs(dir.path());
    let t = plumb(dir.path(), &["compare", &a, &b]);
    assert_eq!(t.code, 0, "{}", t.stderr);
    assert!(!t.stderr.contains("template failed"), "{}", t.stderr);
    // The machines, then one row per test as a reader knows it.
    assert!(t.stdout.contains("CPU of vm-a") && t.stdout.contains("CPU of vm-b"));
    let dd = row_of(&t.stdout, "dd write 1G");
    assert_eq!(
        dd,
        [
            "dd write 1G (fdatasync)",
            "100 MiB/s",
            "200 MiB/s ★",
            "vm-b"
        ]
    );
    let ioping = row_of(&t.stdout, "ioping latency");
    assert_eq!(ioping[3], "tie (within noise)", "{ioping:?}");
    let copy = row_of(&t.stdout, "copy 4G file");
    assert_eq!(
        copy,
        [
            "copy 4G file",
            "12.0 s",
            "6.00 s ★",
            "no verdict (--repeat 3)"
        ]
    );
    // Not the generic table.
    assert!(!t.stdout.contains("×"), "{}", t.stdout);

    let md = plumb(dir.path(), &["compare", &a, &b, "--format", "markdown"]);
    assert_eq!(md.code, 0, "{}", md.stderr);
    assert!(md.stdout.contains("### cloud-compare"), "{}", md.stdout);
    assert_eq!(
        row_of(&md.stdout, "dd write 1G"),
        [
            "dd write 1G (fdatasync)",
            "100 MiB/s",
            "200 MiB/s ★",
            "vm-b"
        ]
    );

    let csv = plumb(dir.path(), &["compare", &a, &b, "--format", "csv"]);
    assert_eq!(csv.code, 0, "{}", csv.stderr);
    let mut lines = csv.stdout.lines();
    assert_eq!(lines.next(), Some("table,row,column,value"));
    let records: Vec<&str> = lines.collect();
    assert!(
        records.contains(&"cloud-compare,1,test,dd write 1G (fdatasync)"),
        "{}",
        csv.stdout
    );
    assert!(records.contains(&"cloud-compare,1,vm-b,200 MiB/s ★"));
    assert!(records.contains(&"cloud-compare,1,winner,vm-b"));

    let j = plumb(dir.path(), &["compare", &a, &b, "--format", "json"]);
    assert_eq!(j.code, 0, "{}", j.stderr);
    let v = j.json();
    // The comparison as always, with the template's tables added.
    assert_eq!(v["schema"], "plumb.compare.v1");
    assert_eq!(v["template"]["file"], "cloud-compare/compare.rhai");
    let results = &v["template"]["tables"][1];
    assert_eq!(results["title"], "cloud-compare");
    assert_eq!(results["header"], json!(["test", "vm-a", "vm-b", "winner"]));
    assert_eq!(results["rows"][0][0], "dd write 1G (fdatasync)");

    // --no-template: the generic table, with ratios and verdicts.
    let g = plumb(dir.path(), &["compare", &a, &b, "--no-template"]);
    assert_eq!(g.code, 0, "{}", g.stderr);
    assert!(g.stdout.contains("×2.000"), "{}", g.stdout);
    assert!(!g.stdout.contains("★"));
}

#[test]
fn cloud_compare_template_names_every_test_of_real_runs() {
    let dir = workdir();
    for label in ["one", "two"] {
        let mut args = vec!["cloud-compare", "--label", label, "--json"];
        let file = format!("{label}.json");
        args.push(&file);
        args.extend_from_slice(&CLOUD_COMPARE_SMALL);
        let (r, _) = run_scripts(dir.path(), &args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        crate::util::assert_scaled(&r.stdout);
        // The run ends with cloud-compare's summary of this one machine:
        // a figure per test, no winner.
        let cells = row_of(&r.stdout, "4k random read IOPS");
        assert_eq!(cells.len(), 2, "{cells:?}");
        assert!(cells[1].ends_with(" IOPS"), "{cells:?}");
        assert!(!r.stdout.contains("winner"), "{}", r.stdout);
    }
    let t = plumb(dir.path(), &["compare", "one.json", "two.json"]);
    assert_eq!(t.code, 0, "{}", t.stderr);
    for test in [
        "4k random read IOPS",
        "4k random write IOPS",
        "dd write 8M (fdatasync)",
        "dd read 8M (direct)",
        "ioping latency",
        "copy 16M file",
        "delete 16M file",
        "sysbench fileio rndrw, reads/s",
        "bonnie++ block write",
        "bonnie++ sequential delete",
    ] {
        let cells = row_of(&t.stdout, test);
        // A figure per machine, one of them marked best, and a winner column.
        assert!(cells.len() >= 3, "{test}: {cells:?}");
        assert!(
            cells[1..3]
                .iter()
                .all(|c| c.chars().next().is_some_and(|ch| ch.is_ascii_digit())),
            "{test}: {cells:?}"
        );
        assert_eq!(
            cells.iter().filter(|c| c.ends_with('★')).count(),
            1,
            "{test}: {cells:?}"
        );
    }
    // Every figure the runs hold has a row: none is left to the generic names.
    assert!(!t.stdout.contains("fio-random "), "{}", t.stdout);
}

/// A pack whose one scenario reports `value`, with a template titling its
/// table `title`.
fn pack_with_template(dir: &Path, title: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("pack.toml"),
        "name = \"tabled\"\nversion = \"1\"\nscenarios = [\"s.rhai\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("s.rhai"),
        "report::metric(\"speed\", 10, \"MiB/s\", \"higher\");\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("compare.rhai"),
        format!(
            "fn render(c) {{\n    #{{ title: \"{title}\", header: [\"runs\"], rows: [[c.runs.len()]], notes: \"from the pack\" }}\n}}\n"
        ),
    )
    .unwrap();
}

#[test]
fn a_pack_template_travels_with_its_folder_and_bundle() {
    let dir = workdir();
    let pack = dir.path().join("tabled");
    pack_with_template(&pack, "Tabled layout");
    let check = plumb(dir.path(), &["check", "tabled"]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    assert!(
        check
            .stdout
            .contains("compare.rhai: ok (comparison template)"),
        "{}",
        check.stdout
    );

    // From the folder.
    for f in ["f1.json", "f2.json"] {
        let (r, _) = run_scripts(dir.path(), &["tabled", "--json", f]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let t = plumb(dir.path(), &["compare", "f1.json", "f2.json"]);
    assert_eq!(t.code, 0, "{}", t.stderr);
    assert!(t.stdout.starts_with("Tabled layout\n"), "{}", t.stdout);
    assert!(t.stdout.contains("from the pack"));
    assert_eq!(row_of(&t.stdout, "2"), ["2"]);

    // The bundle holds the template; runs from it use it.
    let b = plumb(
        dir.path(),
        &["pack", "bundle", "tabled", "-o", "tabled.plumbpack"],
    );
    assert_eq!(b.code, 0, "{}", b.stderr);
    let i = plumb(dir.path(), &["pack", "inspect", "tabled.plumbpack"]);
    assert!(
        i.stdout.contains("comparison template: compare.rhai"),
        "{}",
        i.stdout
    );
    for f in ["b1.json", "b2.json"] {
        let (r, _) = run_scripts(dir.path(), &["tabled.plumbpack", "--json", f]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    std::fs::remove_dir_all(&pack).unwrap();
    let t = plumb(dir.path(), &["compare", "b1.json", "b2.json"]);
    assert!(
        t.stdout.starts_with("Tabled layout\n"),
        "{}\n{}",
        t.stdout,
        t.stderr
    );

    // The folder changed since the runs: not its template, and a note why.
    pack_with_template(&pack, "Changed layout");
    let t = plumb(dir.path(), &["compare", "f1.json", "f2.json"]);
    assert_eq!(t.code, 0, "{}", t.stderr);
    assert!(t.stderr.contains("changed since they ran"), "{}", t.stderr);
    assert!(
        t.stdout.contains("speed"),
        "the generic table: {}",
        t.stdout
    );
    assert!(!t.stdout.contains("layout"));
    // Named with --template, it is used.
    let t = plumb(
        dir.path(),
        &["compare", "f1.json", "f2.json", "--template", "tabled"],
    );
    assert!(
        t.stdout.starts_with("Changed layout\n"),
        "{}\n{}",
        t.stdout,
        t.stderr
    );
    let t = plumb(
        dir.path(),
        &[
            "compare",
            "f1.json",
            "f2.json",
            "--template",
            "tabled/compare.rhai",
        ],
    );
    assert!(
        t.stdout.starts_with("Changed layout\n"),
        "{}\n{}",
        t.stdout,
        t.stderr
    );
}

#[test]
fn a_failing_template_gives_a_clear_error_and_the_generic_table() {
    let dir = workdir();
    let (a, b) = two_cloud_runs(dir.path());
    for (name, text, reason) in [
        ("spin.rhai", "fn render(c) { loop { } }", "stopped"),
        (
            "hoard.rhai",
            "fn render(c) { let s = \"x\"; for i in 0..15 { s += s; } let m = #{}; let i = 0; loop { m[i.to_string()] = s + i; i += 1; } }",
            "memory limit",
        ),
        ("none.rhai", "fn other(c) { 1 }", "defines `fn render(comparison)`"),
        ("shape.rhai", "fn render(c) { 42 }", "render returned a i64"),
        ("syntax.rhai", "fn render(c) { let = }", "syntax error"),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
        let started = std::time::Instant::now();
        let r = plumb(dir.path(), &["compare", &a, &b, "--template", name]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(15),
            "{name} ran {:?}",
            started.elapsed()
        );
        assert!(
            r.stderr.contains("the comparison template failed") && r.stderr.contains(name),
            "{name}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(reason), "{name}: {}", r.stderr);
        assert!(
            r.stdout.contains("×2.000") && r.stdout.contains("better"),
            "{name}: the generic table follows: {}",
            r.stdout
        );
    }
    // A template that is not there is an error before anything is printed.
    let r = plumb(
        dir.path(),
        &["compare", &a, &b, "--template", "missing.rhai"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stdout.is_empty() && r.stderr.contains("missing.rhai"),
        "{}",
        r.stderr
    );
    // A pack without one.
    let r = plumb(dir.path(), &["compare", &a, &b, "--template", "quick"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("has no comparison template"),
        "{}",
        r.stderr
    );
}
