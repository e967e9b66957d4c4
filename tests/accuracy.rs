//! Does the engine really do what the options say? Counted from fio-style
//! iologs that plumb writes, and from strace where the kernel can tell.

use crate::util::{fio_json, iolog, plumb_bin, require_tool, succeed, workdir};
use std::collections::HashMap;

/// Calls of `name` in an `strace -c` summary.
pub fn strace_count(summary: &str, name: &str) -> u64 {
    summary
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.last() == Some(&name) && cols.len() >= 5)
                .then(|| cols[3].parse::<u64>().ok())
                .flatten()
        })
        .sum()
}

#[test]
fn rwmix_ratio_is_kept() {
    let dir = workdir();
    fio_json(
        dir.path(),
        &[
            "--name=mix",
            "--ioengine=null",
            "--rw=randrw",
            "--rwmixread=70",
            "--bs=4k",
            "--size=80M",
            "--write_iolog=log",
        ],
    );
    let log = iolog(&dir.path().join("log"));
    let reads = log.iter().filter(|l| l.1 == "read").count() as f64;
    let writes = log.iter().filter(|l| l.1 == "write").count() as f64;
    assert_eq!(reads + writes, 20480.0);
    let share = reads / (reads + writes);
    assert!((share - 0.70).abs() < 0.015, "read share {share}");
}

#[test]
fn bssplit_mix_is_kept() {
    let dir = workdir();
    fio_json(
        dir.path(),
        &[
            "--name=split",
            "--ioengine=null",
            "--rw=randread",
            "--bssplit=4k/20:16k/30:64k/50",
            "--size=512M",
            "--write_iolog=log",
        ],
    );
    let mut log = iolog(&dir.path().join("log"));
    // The last I/O is cut to what is left of the byte budget, as fio does.
    log.pop();
    let mut by_size: HashMap<u64, f64> = HashMap::new();
    for l in &log {
        *by_size.entry(l.3).or_default() += 1.0;
        assert_eq!(l.2 % 4096, 0, "offsets aligned to the smallest size");
    }
    let n = log.len() as f64;
    for (size, pct) in [(4096u64, 0.20), (16384, 0.30), (65536, 0.50)] {
        let got = by_size.get(&size).copied().unwrap_or(0.0) / n;
        assert!(
            (got - pct).abs() < 0.02,
            "{size}: {got} of I/Os, want {pct}"
        );
    }
    assert_eq!(by_size.len(), 3);
}

/// Share of accesses that fall on the hottest `frac` of the blocks.
fn hot_share(log: &[(String, String, u64, u64)], frac: f64, blocks: u64) -> f64 {
    let mut counts: HashMap<u64, u64> = HashMap::new();
    for l in log {
        *counts.entry(l.2 / 4096).or_default() += 1;
    }
    let mut c: Vec<u64> = counts.into_values().collect();
    c.sort_unstable_by(|a, b| b.cmp(a));
    let top = (blocks as f64 * frac) as usize;
    c.iter().take(top).sum::<u64>() as f64 / log.len() as f64
}

fn skewed(dist: &str) -> Vec<(String, String, u64, u64)> {
    let dir = workdir();
    // 10,000 blocks, 200,000 accesses.
    fio_json(
        dir.path(),
        &[
            "--name=skew",
            "--ioengine=null",
            "--rw=randread",
            "--bs=4k",
            "--size=40000k",
            "--io_size=800000k",
            &format!("--random_distribution={dist}"),
            "--write_iolog=log",
        ],
    );
    iolog(&dir.path().join("log"))
}

#[test]
fn zipf_hot_set_matches_theory() {
    let theta: f64 = 1.2;
    let n = 10_000u64;
    let h = |k: u64| (1..=k).map(|i| (i as f64).powf(-theta)).sum::<f64>();
    let want = h(n / 10) / h(n);
    let log = skewed("zipf:1.2");
    assert_eq!(log.len(), 200_000);
    let got = hot_share(&log, 0.10, n);
    assert!(
        (got - want).abs() < 0.02,
        "hottest 10% took {got}, theory {want}"
    );
}

#[test]
fn pareto_sends_80_percent_to_20_percent() {
    let got = hot_share(&skewed("pareto:0.2"), 0.20, 10_000);
    assert!((got - 0.80).abs() < 0.03, "hottest 20% took {got}");
}

#[test]
fn normal_concentrates_around_one_sigma() {
    // σ = 10% of the blocks: the central 20% (±1σ) hold about 68%.
    let got = hot_share(&skewed("normal:10"), 0.20, 10_000);
    assert!((got - 0.683).abs() < 0.03, "hottest 20% took {got}");
}

#[test]
fn uniform_random_touches_every_block_once() {
    let dir = workdir();
    fio_json(
        dir.path(),
        &[
            "--name=u",
            "--ioengine=null",
            "--rw=randwrite",
            "--bs=4k",
            "--size=4000k",
            "--write_iolog=log",
        ],
    );
    let log = iolog(&dir.path().join("log"));
    let mut offsets: Vec<u64> = log.iter().map(|l| l.2).collect();
    offsets.sort_unstable();
    offsets.dedup();
    assert_eq!(offsets.len(), 1000, "random map: each block once");
    assert_eq!(log.len(), 1000);
}

#[test]
fn fsync_and_fdatasync_counts_are_exact() {
    require_tool("strace", "-V", "strace");
    for (opt, call, every) in [("fsync", "fsync", 4u64), ("fdatasync", "fdatasync", 8)] {
        let dir = workdir();
        // Lay the file out first, so its fsync is not counted.
        fio_json(
            dir.path(),
            &[
                "--name=s",
                "--filename=f",
                "--rw=write",
                "--size=256k",
                "--create_only=1",
            ],
        );
        let out = succeed(
            std::process::Command::new("strace")
                .args([
                    "-f",
                    "-c",
                    "-e",
                    &format!("trace={call},pwrite64"),
                    "-o",
                    "trace.txt",
                ])
                .arg(plumb_bin())
                .args([
                    "fio",
                    "--name=s",
                    "--filename=f",
                    "--ioengine=psync",
                    "--rw=write",
                    "--bs=4k",
                    "--size=256k",
                    &format!("--{opt}={every}"),
                    "--output-format=json",
                    "--write_iolog=log",
                ])
                .current_dir(dir.path()),
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let summary = std::fs::read_to_string(dir.path().join("trace.txt")).unwrap();
        // 64 writes: one sync after every `every` of them.
        // Layout uses write(2), so every pwrite64 is one of the job's 64 writes.
        assert_eq!(strace_count(&summary, "pwrite64"), 64, "{summary}");
        assert_eq!(strace_count(&summary, call), 64 / every, "{opt}: {summary}");
        assert_eq!(
            json["jobs"][0]["sync"]["total_ios"].as_u64(),
            Some(64 / every)
        );
        let log = iolog(&dir.path().join("log"));
        let action = if call == "fsync" { "sync" } else { "datasync" };
        assert_eq!(
            log.iter().filter(|l| l.1 == action).count() as u64,
            64 / every
        );
        // Each sync follows exactly `every` writes.
        let mut since = 0;
        for l in &log {
            if l.1 == "write" {
                since += 1;
            } else {
                assert_eq!(since, every);
                since = 0;
            }
        }
    }
}

#[test]
fn rate_iops_is_held_within_5_percent() {
    let dir = workdir();
    let json = fio_json(
        dir.path(),
        &[
            "--name=r",
            "--ioengine=psync",
            "--filename=r",
            "--rw=randread",
            "--bs=4k",
            "--size=4M",
            "--rate_iops=400",
            "--time_based",
            "--runtime=3",
        ],
    );
    let iops = json["jobs"][0]["read"]["iops"].as_f64().unwrap();
    assert!(
        (iops - 400.0).abs() / 400.0 < 0.05,
        "rate_iops=400 gave {iops}"
    );
    let json = fio_json(
        dir.path(),
        &[
            "--name=b",
            "--ioengine=null",
            "--rw=write",
            "--bs=64k",
            "--size=64M",
            "--rate=8m",
            "--time_based",
            "--runtime=2",
        ],
    );
    let bw = json["jobs"][0]["write"]["bw_bytes"].as_f64().unwrap();
    assert!(
        (bw - 8388608.0).abs() / 8388608.0 < 0.05,
        "rate=8m gave {bw}"
    );
}

#[test]
fn fsync_every_n_writes_syncs_one_file_with_many_files() {
    // fio counts writes per job and syncs the file of the write that reached N.
    let dir = workdir();
    let json = fio_json(
        dir.path(),
        &[
            "--name=m",
            "--nrfiles=4",
            "--rw=randwrite",
            "--bs=4k",
            "--size=256k",
            "--fsync=8",
            "--write_iolog=log",
        ],
    );
    assert_eq!(json["jobs"][0]["sync"]["total_ios"].as_u64(), Some(8));
    let log = iolog(&dir.path().join("log"));
    assert_eq!(log.iter().filter(|l| l.1 == "sync").count(), 8);
}
