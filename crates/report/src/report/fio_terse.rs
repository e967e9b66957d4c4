//! fio's terse (semicolon-separated, version 3) output: one line per job.

use crate::model::result::{DirResult, JobResult};
use crate::model::run::RunReport;
use crate::stats::{LatencySummary, FIO_PERCENTILES};

/// One line per reported job, fields in fio's terse v3 order.
pub fn render(report: &RunReport) -> String {
    let mut out = String::new();
    for r in report.results() {
        let mut f: Vec<String> = vec![
            "3".into(),
            super::fio_version(),
            crate::terminal::cleaned(&r.name),
            r.groupid.to_string(),
            r.errno.to_string(),
        ];
        match (&r.mixed, r.mixed_only) {
            // unified_rw_reporting=mixed: one block, as fio's.
            (Some(m), true) => dir_fields(&mut f, m),
            _ => {
                dir_fields(&mut f, &r.read);
                dir_fields(&mut f, &r.write);
            }
        }
        f.push(format!("{:.6}%", r.usr_cpu));
        f.push(format!("{:.6}%", r.sys_cpu));
        f.extend([r.ctx.to_string(), r.majf.to_string(), r.minf.to_string()]);
        for k in ["1", "2", "4", "8", "16", "32", ">=64"] {
            f.push(format!(
                "{:.1}%",
                r.iodepth_level.get(k).copied().unwrap_or(0.0)
            ));
        }
        buckets(&mut f, r, false);
        buckets(&mut f, r, true);
        for d in &report.disk_util {
            f.extend([
                d.name.clone(),
                d.read_ios.to_string(),
                d.write_ios.to_string(),
                d.read_merges.to_string(),
                d.write_merges.to_string(),
                d.read_ticks.to_string(),
                d.write_ticks.to_string(),
                d.in_queue.to_string(),
                format!("{:.2}%", d.util),
            ]);
        }
        out.push_str(&f.join(";"));
        out.push('\n');
    }
    out
}

fn dir_fields(f: &mut Vec<String>, d: &DirResult) {
    f.push((d.io_bytes / 1024).to_string());
    f.push((d.bw_bytes / 1024).to_string());
    f.push(format!("{}", d.iops.round() as u64));
    f.push(d.runtime_ms.to_string());
    lat_fields(f, &d.slat);
    lat_fields(f, &d.lat);
    for p in FIO_PERCENTILES {
        let v = d
            .lat
            .percentiles
            .get(&format!("{p:.6}"))
            .copied()
            .unwrap_or(0);
        f.push(format!("{p:.6}%={}", v / 1000));
    }
    for _ in FIO_PERCENTILES.len()..20 {
        f.push("0%=0".into());
    }
    lat_fields(f, &d.total_lat);
    f.push(format!("{}", (d.bw_min / 1024.0) as u64));
    f.push(format!("{}", (d.bw_max / 1024.0) as u64));
    f.push(format!("{:.6}%", if d.total_ios > 0 { 100.0 } else { 0.0 }));
    f.push(format!("{:.6}", d.bw_mean / 1024.0));
    f.push(format!("{:.6}", d.bw_stddev / 1024.0));
}

/// Latency in µs: min, max, mean, stddev.
fn lat_fields(f: &mut Vec<String>, l: &LatencySummary) {
    f.push((l.min / 1000).to_string());
    f.push((l.max / 1000).to_string());
    f.push(format!("{:.6}", l.mean / 1000.0));
    f.push(format!("{:.6}", l.stddev / 1000.0));
}

fn buckets(f: &mut Vec<String>, r: &JobResult, ms: bool) {
    let (map, keys): (_, &[&str]) = if ms {
        (
            &r.latency_ms,
            &[
                "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
            ],
        )
    } else {
        (
            &r.latency_us,
            &[
                "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
            ],
        )
    };
    for k in keys {
        f.push(format!("{:.2}%", map.get(*k).copied().unwrap_or(0.0)));
    }
}
