//! fio's normal text output, laid out so a reader of fio runs recognises it.

use crate::job::spec::{BlockSize, Dir, JobSpec};
use crate::model::result::{DirResult, JobResult};
use crate::model::run::{GroupReport, RunReport};
use crate::stats::{LatencySummary, FIO_PERCENTILES};
use crate::terminal::{clean, clean_text};
use crate::units::{format_bytes_binary, format_bytes_decimal, format_count};
use std::fmt::Write;

/// The header fio prints before running (one line per job, then the version).
pub fn header(jobs: &[JobSpec]) -> String {
    let mut out = String::new();
    let mut group = 0;
    for (i, j) in jobs.iter().enumerate() {
        if i > 0 && (j.stonewall || j.new_group) {
            group += 1;
        }
        let bs = |b: &BlockSize| format!("{}B-{}B", b.min(), b.max());
        let _ = writeln!(
            out,
            "{}: (g={group}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
            clean(&j.name),
            j.rw.name(),
            bs(&j.bs[0]),
            bs(&j.bs[1]),
            bs(&j.bs[0]),
            j.ioengine,
            j.iodepth
        );
    }
    let threads: u32 = jobs.iter().map(|j| j.numjobs).sum();
    let _ = writeln!(out, "plumb-{}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(
        out,
        "Starting {threads} thread{}",
        if threads == 1 { "" } else { "s" }
    );
    out
}

/// The results: one block per reported job, then a status line per group.
pub fn render(report: &RunReport) -> String {
    let mut out = String::new();
    for g in &report.groups {
        for r in &g.results {
            job_block(&mut out, r);
        }
    }
    for g in &report.groups {
        group_status(&mut out, g);
    }
    if !report.disk_util.is_empty() {
        let _ = writeln!(out, "\nDisk stats (read/write):");
        for d in &report.disk_util {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
                d.name,
                d.read_ios,
                d.write_ios,
                d.read_merges,
                d.write_merges,
                d.read_ticks,
                d.write_ticks,
                d.in_queue,
                d.util
            );
        }
    }
    out
}

fn job_block(out: &mut String, r: &JobResult) {
    let when = chrono::Local::now().format("%a %b %e %H:%M:%S %Y");
    let _ = writeln!(
        out,
        "\n{}: (groupid={}, jobs={}): err={:2}: pid={}: {when}",
        clean(&r.name),
        r.groupid,
        r.jobs,
        r.errno,
        std::process::id()
    );
    if let Some(e) = &r.error {
        let _ = writeln!(out, "  error: {}", clean_text(e));
    }
    for d in Dir::BOTH {
        let dr = r.dir(d.index());
        if dr.total_ios == 0 {
            continue;
        }
        dir_block(out, d.name(), dr);
    }
    if r.sync.total_ios > 0 {
        let _ = writeln!(out, "  fsync/fdatasync/sync_file_range:");
        lat_line(out, "sync", &r.sync.lat);
    }
    if r.verified_blocks > 0 {
        let _ = writeln!(
            out,
            "  verify: {} blocks checked, {} failed",
            r.verified_blocks, r.verify_errors
        );
    }
    for (unit, map) in [
        ("nsec", &r.latency_ns),
        ("usec", &r.latency_us),
        ("msec", &r.latency_ms),
    ] {
        let mut entries: Vec<(&String, &f64)> = map.iter().filter(|(_, v)| **v >= 0.01).collect();
        entries.sort_by_key(|(k, _)| {
            k.trim_start_matches(">=")
                .parse::<u64>()
                .unwrap_or(u64::MAX)
        });
        let parts: Vec<String> = entries
            .iter()
            .map(|(k, v)| format!("{k}={v:.2}%"))
            .collect();
        if !parts.is_empty() {
            let _ = writeln!(out, "  lat ({unit})   : {}", parts.join(", "));
        }
    }
    let _ = writeln!(
        out,
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, majf={}, minf={}",
        r.usr_cpu, r.sys_cpu, r.ctx, r.majf, r.minf
    );
    let depths: Vec<String> = ["1", "2", "4", "8", "16", "32", ">=64"]
        .iter()
        .map(|k| {
            format!(
                "{k}={:.1}%",
                r.iodepth_level.get(*k).copied().unwrap_or(0.0)
            )
        })
        .collect();
    let _ = writeln!(out, "  IO depths    : {}", depths.join(", "));
}

fn dir_block(out: &mut String, name: &str, d: &DirResult) {
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={}/s ({}/s)({}/{}msec)",
        format_count(d.iops),
        format_bytes_binary(d.bw_bytes as f64),
        format_bytes_decimal(d.bw_bytes as f64),
        format_bytes_binary(d.io_bytes as f64),
        d.runtime_ms
    );
    let l = &d.lat;
    let (unit, div) = lat_unit(l);
    for (label, x) in [("slat", &d.slat), ("clat", &d.lat), (" lat", &d.total_lat)] {
        lat_line(out, label, x);
    }
    let _ = writeln!(out, "    clat percentiles ({unit}):");
    let entries: Vec<String> = FIO_PERCENTILES
        .iter()
        .filter_map(|p| {
            l.percentiles
                .get(&format!("{p:.6}"))
                .map(|v| format!("{p:5.2}th=[{:5}]", v / div))
        })
        .collect();
    for chunk in entries.chunks(4) {
        let _ = writeln!(out, "     | {}", chunk.join(", "));
    }
    if d.samples > 0 {
        let _ = writeln!(
            out,
            "   bw (  KiB/s): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}, samples={}",
            d.bw_min / 1024.0,
            d.bw_max / 1024.0,
            d.bw_mean / 1024.0,
            d.bw_stddev / 1024.0,
            d.samples
        );
        let _ = writeln!(
            out,
            "   iops        : min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}, samples={}",
            d.iops_min, d.iops_max, d.iops_mean, d.iops_stddev, d.samples
        );
    }
}

/// One `label (unit): min=, max=, avg=, stdev=` line, like fio's.
/// One latency line, as fio prints it; none for a latency never measured
/// (a synchronous engine's slat).
fn lat_line(out: &mut String, label: &str, l: &LatencySummary) {
    if l.samples == 0 {
        return;
    }
    let (unit, div) = lat_unit(l);
    let _ = writeln!(
        out,
        "    {label} ({unit}): min={}, max={}, avg={:.2}, stdev={:.2}, N={}",
        l.min / div,
        l.max / div,
        l.mean / div as f64,
        l.stddev / div as f64,
        l.samples
    );
}

/// fio's choice of unit: nsec below 10 µs, usec below 10 ms, msec above.
fn lat_unit(l: &LatencySummary) -> (&'static str, u64) {
    // fio moves to a coarser unit only when min, max, mean and stdev all exceed 1000.
    let all_above = |div: f64| {
        l.min as f64 / div > 1000.0
            && l.max as f64 / div > 1000.0
            && l.mean / div > 1000.0
            && l.stddev / div > 1000.0
    };
    if !all_above(1.0) {
        ("nsec", 1)
    } else if !all_above(1000.0) {
        ("usec", 1_000)
    } else {
        ("msec", 1_000_000)
    }
}

fn group_status(out: &mut String, g: &GroupReport) {
    let _ = writeln!(out, "\nRun status group {} (all jobs):", g.id);
    for d in Dir::BOTH {
        let t = g.total.dir(d.index());
        if t.total_ios == 0 {
            continue;
        }
        let (lo, hi) = g.bw_range[d.index()];
        let label = if d == Dir::Read { "   READ" } else { "  WRITE" };
        let _ = writeln!(
            out,
            "{label}: bw={}/s ({}/s), {}/s-{}/s ({}/s-{}/s), io={} ({}), run={}-{}msec",
            format_bytes_binary(t.bw_bytes as f64),
            format_bytes_decimal(t.bw_bytes as f64),
            format_bytes_binary(lo as f64),
            format_bytes_binary(hi as f64),
            format_bytes_decimal(lo as f64),
            format_bytes_decimal(hi as f64),
            format_bytes_binary(t.io_bytes as f64),
            format_bytes_decimal(t.io_bytes as f64),
            g.runtime_range_ms.0,
            g.runtime_range_ms.1
        );
    }
}
