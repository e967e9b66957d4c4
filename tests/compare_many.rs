//! `plumb compare` of many runs (a fleet's): past four, a row per run,
//! ranked, with deviations from the fleet median and outliers flagged,
//! within 160 columns.

use crate::util::{plumb, workdir, Run};
use serde_json::json;
use std::path::Path;

/// A result document for host `label` with one scenario, `kernel`, and
/// figures scaled by `speed` (5 samples each, ±1%).
fn result(label: &str, kernel: &str, speed: f64) -> serde_json::Value {
    let metrics = [
        ("sequential_read_bandwidth", "B/s", "higher", 1.2e9),
        ("sequential_write_bandwidth", "B/s", "higher", 9.0e8),
        (
            "random_read_iops_queue_depth_64",
            "IOPS",
            "higher",
            55_000.0,
        ),
        (
            "random_write_iops_queue_depth_64",
            "IOPS",
            "higher",
            60_000.0,
        ),
        ("read_latency_p99", "us", "lower", 180.0),
        ("small_file_creates_per_second", "ops/s", "higher", 21_000.0),
        ("big_file_copy_seconds", "s", "lower", 4.0),
        ("metadata_storm_ops", "ops/s", "higher", 8_000.0),
    ];
    let ms: Vec<_> = metrics
        .iter()
        .map(|(name, unit, better, base)| {
            // Slower hosts take longer where lower is better.
            let centre = if *better == "lower" {
                base / speed
            } else {
                base * speed
            };
            let samples: Vec<f64> = [0.99, 1.0, 1.01, 0.995, 1.005]
                .iter()
                .map(|k| centre * k)
                .collect();
            json!({ "name": name, "unit": unit, "better": better, "value": centre, "samples": samples })
        })
        .collect();
    json!({
        "schema": "plumb.result.v1", "plumb_version": "0.1.0", "label": label,
        "started": "2026-11-30T10:00:00+00:00", "finished": "2026-11-30T10:01:00+00:00",
        "host": { "hostname": label, "os": "Linux", "kernel": kernel, "arch": "x86_64",
                  "cpu_model": "Test CPU", "cpus": 4, "memory_bytes": 8589934592u64 },
        "target": null,
        "scenarios": [{ "name": "disk", "pack": "fleetpack", "source_sha256": null, "params": {},
                        "repeat": 5, "metrics": ms, "jobs": [], "tables": [], "error": null }]
    })
}

/// Writes `n` hosts' results (`node-01` …): host `slow` at a tenth of the
/// speed, the others within ±4% of each other; the first half on kernel
/// 6.1, the rest on 6.18; labelled `ssd` and `zone=…`, one of three zones
/// in turn. Returns the file names.
fn fleet_results(dir: &Path, n: usize, slow: usize) -> Vec<String> {
    (1..=n)
        .map(|i| {
            let label = format!("node-{i:02}");
            let speed = if i == slow {
                0.1
            } else {
                0.96 + 0.08 * ((i * 7) % n) as f64 / n as f64
            };
            let kernel = if i <= n / 2 { "6.1" } else { "6.18" };
            let file = format!("{label}.json");
            let mut doc = result(&label, kernel, speed);
            // As a fleet's inventory gives them: a tag and a zone.
            let zone = ["eu-west-1a", "eu-west-1b", "us-east-1a"][i % 3];
            doc["labels"] = json!(["ssd", format!("zone={zone}")]);
            let text = serde_json::to_string(&doc).unwrap();
            std::fs::write(dir.join(&file), text).unwrap();
            file
        })
        .collect()
}

fn compare(dir: &Path, files: &[String], extra: &[&str]) -> Run {
    let mut args: Vec<&str> = vec!["compare"];
    args.extend(files.iter().map(String::as_str));
    args.extend_from_slice(extra);
    plumb(dir, &args)
}

/// The table's rows, header first (terminal style: lines starting with
/// `│`, cells apart by `┆`; Markdown: `|`), as their cells.
fn rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter(|l| l.starts_with('│') || l.starts_with('|'))
        .map(|l| {
            l.trim_matches(|c| c == '│' || c == '|')
                .split(['│', '┆', '|'])
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn thirty_two_hosts_are_rows_ranked_within_160_columns_with_the_slow_one_flagged() {
    let dir = workdir();
    let files = fleet_results(dir.path(), 32, 17);
    let r = compare(dir.path(), &files, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let widest = r.stdout.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest <= 160, "{widest} columns:\n{}", r.stdout);
    let table = rows(&r.stdout);
    // The header, then a row per host.
    assert_eq!(table.len(), 33, "{}", r.stdout);
    assert_eq!(table[0][0], "rank", "{:?}", table[0]);
    assert_eq!(table[0][1], "run", "{:?}", table[0]);
    // Ranked by the first column (sequential read bandwidth, higher is
    // better): 1 to 32 in order, the slow host last and flagged.
    let ranks: Vec<&str> = table[1..].iter().map(|r| r[0].as_str()).collect();
    let want: Vec<String> = (1..=32).map(|k| k.to_string()).collect();
    assert_eq!(ranks, want, "{}", r.stdout);
    let last = &table[32];
    assert_eq!(last[1], "node-17", "{}", r.stdout);
    assert!(
        last[2].ends_with('!') && last[2].contains("-90%"),
        "{last:?}"
    );
    // Nobody else is an outlier in that column.
    assert!(
        table[1..32].iter().all(|row| !row[2].ends_with('!')),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("outlier: node-17: sequential_read_bandwidth"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("ranked by fleetpack/disk/sequential_read_bandwidth"),
        "{}",
        r.stdout
    );
    // Not every metric fits: the rest are counted, and JSON has them all.
    assert!(
        r.stdout.contains("more metric(s) not shown"),
        "{}",
        r.stdout
    );
    let j = compare(dir.path(), &files, &["--format", "json"]);
    assert_eq!(j.code, 0, "{}", j.stderr);
    assert_eq!(j.json()["rows"].as_array().unwrap().len(), 8);
    assert_eq!(j.json()["runs"].as_array().unwrap().len(), 32);
}

#[test]
fn sort_metrics_and_group_by_choose_the_layout() {
    let dir = workdir();
    let files = fleet_results(dir.path(), 12, 5);
    // Lower is better: the fastest host has the lowest latency and comes
    // first; the slow one is last.
    let r = compare(
        dir.path(),
        &files,
        &[
            "--sort",
            "read_latency_p99",
            "--metrics",
            "big_file_copy_seconds,disk/metadata_storm_ops",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let table = rows(&r.stdout);
    assert_eq!(
        table[0][2..],
        [
            "disk read_latency_p99",
            "disk big_file_copy_seconds",
            "disk metadata_storm_ops"
        ],
        "{}",
        r.stdout
    );
    assert_eq!(table[12][1], "node-05", "{}", r.stdout);
    assert_eq!(table[1][0], "1", "{}", r.stdout);

    // Grouped by kernel: the 6.1 hosts, then the 6.18 ones, each in rank
    // order.
    let r = compare(
        dir.path(),
        &files,
        &["--group-by", "kernel", "--format", "markdown"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let table = rows(&r.stdout);
    assert_eq!(table[0][2], "kernel", "{}", r.stdout);
    let kernels: Vec<&str> = table[2..].iter().map(|r| r[2].as_str()).collect();
    assert_eq!(kernels[..6], ["6.1"; 6], "{}", r.stdout);
    assert_eq!(kernels[6..], ["6.18"; 6], "{}", r.stdout);

    // Grouped by a label key: the zone each inventory gave its host.
    let r = compare(dir.path(), &files, &["--group-by", "zone"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let table = rows(&r.stdout);
    assert_eq!(table[0][2], "zone", "{}", r.stdout);
    let zones: Vec<&str> = table[1..].iter().map(|r| r[2].as_str()).collect();
    assert_eq!(zones[..4], ["eu-west-1a"; 4], "{}", r.stdout);
    assert_eq!(zones[4..8], ["eu-west-1b"; 4], "{}", r.stdout);
    assert_eq!(zones[8..], ["us-east-1a"; 4], "{}", r.stdout);
    // node-03, -06, -09 and -12 are in eu-west-1a, ranked within it.
    let mut first: Vec<&str> = table[1..5].iter().map(|r| r[1].as_str()).collect();
    first.sort_unstable();
    assert_eq!(
        first,
        ["node-03", "node-06", "node-09", "node-12"],
        "{}",
        r.stdout
    );
    // A plain tag is not a key; the error lists the keys there are.
    let r = compare(dir.path(), &files, &["--group-by", "ssd"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("(keys: zone)"), "{}", r.stderr);

    for (args, named) in [
        (&["--sort", "no_such_metric"][..], "--sort no_such_metric"),
        (&["--metrics", "disk/nope"][..], "--metrics disk/nope"),
        (&["--group-by", "colour"][..], "--group-by colour"),
    ] {
        let r = compare(dir.path(), &files, args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(named), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
    }
}

#[test]
fn four_runs_keep_a_column_each() {
    let dir = workdir();
    let files = fleet_results(dir.path(), 4, 2);
    let r = compare(dir.path(), &files, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let header = rows(&r.stdout)
        .into_iter()
        .find(|r| r.first().is_some_and(|c| c == "scenario"))
        .unwrap_or_else(|| panic!("no metric table:\n{}", r.stdout));
    assert_eq!(
        header[3..],
        ["node-01", "node-02", "node-03", "node-04"],
        "{}",
        r.stdout
    );
}
