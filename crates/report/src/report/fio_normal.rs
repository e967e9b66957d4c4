//! fio's normal text output, laid out so a reader of fio runs recognises it.

use crate::job::spec::{BlockSize, Dir, JobSpec};
use crate::model::result::{DirResult, JobResult, BATCH_LABELS, DEPTH_LABELS};
use crate::model::run::{DirSpan, GroupReport, RunReport};
use crate::report::fio_num::{fio_num, Base};
use crate::stats::{LatencySummary, FIO_PERCENTILES};
use crate::terminal::{clean, clean_text};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The header fio prints before running (one line per job, then the version).
pub fn header(jobs: &[JobSpec]) -> String {
    let mut out = String::new();
    let mut group = 0;
    for (i, j) in jobs.iter().enumerate() {
        if i > 0 && (j.stonewall || j.new_group) {
            group += 1;
        }
        let _ = writeln!(
            out,
            "{}: (g={group}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
            clean(&j.name),
            j.rw.name(),
            block_size_range(&j.bs[0]),
            block_size_range(&j.bs[1]),
            block_size_range(&j.bs[1]),
            j.ioengine,
            j.iodepth
        );
    }
    let threads: u32 = jobs.iter().map(|j| j.numjobs).sum();
    let _ = writeln!(out, "{}", super::fio_version());
    let _ = writeln!(
        out,
        "Starting {threads} thread{}",
        if threads == 1 { "" } else { "s" }
    );
    out
}

/// A block size range as fio's header writes it (`4096B-4096B`,
/// `128KiB-128KiB`).
fn block_size_range(bs: &BlockSize) -> String {
    format!(
        "{}-{}",
        fio_num(bs.min(), Base::Binary, "B"),
        fio_num(bs.max(), Base::Binary, "B")
    )
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
        if dr.total_ios == 0 || r.mixed_only {
            continue;
        }
        dir_block(out, d.name(), dr);
    }
    if let Some(m) = r.mixed.as_ref() {
        dir_block(out, "mixed", m);
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
    depth_lines(out, r);
}

/// fio's queue-depth block: depths, submission and completion batches,
/// what was issued, and the latency target (plumb has none: fio's
/// defaults).
fn depth_lines(out: &mut String, r: &JobResult) {
    let _ = writeln!(
        out,
        "  IO depths    : {}",
        buckets(&DEPTH_LABELS, &r.iodepth_level)
    );
    let _ = writeln!(
        out,
        "     submit    : {}",
        buckets(&BATCH_LABELS, &r.iodepth_submit)
    );
    let _ = writeln!(
        out,
        "     complete  : {}",
        buckets(&BATCH_LABELS, &r.iodepth_complete)
    );
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},0,0 short={},{},0,0 dropped=0,0,0,0",
        r.read.total_ios, r.write.total_ios, r.read.short_ios, r.write.short_ios
    );
    let _ = writeln!(
        out,
        "     latency   : target=0, window=0, percentile=100.00%, depth={}",
        r.iodepth
    );
}

/// `label=percent%` for each of fio's seven buckets, in order.
fn buckets(labels: &[&str; 7], percents: &BTreeMap<String, f64>) -> String {
    labels
        .iter()
        .map(|k| format!("{k}={:.1}%", percents.get(*k).copied().unwrap_or(0.0)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn dir_block(out: &mut String, name: &str, d: &DirResult) {
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={} ({})({}/{}msec)",
        fio_num(d.iops.round() as u64, Base::Decimal, ""),
        fio_num(d.bw_bytes, Base::Binary, "B/s"),
        fio_num(d.bw_bytes, Base::Decimal, "B/s"),
        fio_num(d.io_bytes, Base::Binary, "B"),
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

/// fio's "Run status group N (all jobs):" block: per direction the
/// aggregate bandwidth, the range over the entries that did I/O in it, the
/// bytes moved and the range of runtimes.
fn group_status(out: &mut String, g: &GroupReport) {
    let _ = writeln!(out, "\nRun status group {} (all jobs):", g.id);
    let mixed_only = g.results.iter().any(|r| r.mixed_only);
    for d in Dir::BOTH {
        let Some(span) = &g.spans[d.index()] else {
            continue;
        };
        if mixed_only {
            continue;
        }
        let label = if d == Dir::Read { "   READ" } else { "  WRITE" };
        let _ = writeln!(out, "{label}: {}", status_line(span));
    }
    // unified_rw_reporting: the MIXED line over the entries' `mixed`.
    if let Some(span) = DirSpan::of(g.results.iter().filter_map(|r| r.mixed.as_ref())) {
        let _ = writeln!(out, "  MIXED: {}", status_line(&span));
    }
}

/// One direction's figures after the label, in fio's words and units:
/// `bw=AGG (AGG), MIN-MAX (MIN-MAX), io=IO (IO), run=MIN-MAXmsec`.
fn status_line(span: &DirSpan) -> String {
    let in_both = |n: u64, unit: &str| {
        (
            fio_num(n, Base::Binary, unit),
            fio_num(n, Base::Decimal, unit),
        )
    };
    let (agg, agg_si) = in_both(span.aggregate_bw_bytes, "B/s");
    let (lo, lo_si) = in_both(span.bw_bytes.0, "B/s");
    let (hi, hi_si) = in_both(span.bw_bytes.1, "B/s");
    let (io, io_si) = in_both(span.io_bytes, "B");
    format!(
        "bw={agg} ({agg_si}), {lo}-{hi} ({lo_si}-{hi_si}), io={io} ({io_si}), run={}-{}msec",
        span.runtime_ms.0, span.runtime_ms.1
    )
}
