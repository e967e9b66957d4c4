//! fio's JSON output layout (`--output-format=json`), so tools written for
//! fio read plumb's output unchanged.

use crate::model::result::{DirResult, JobResult};
use crate::model::run::RunReport;
use crate::stats::LatencySummary;
use serde_json::{json, Map, Value};
use std::time::UNIX_EPOCH;

/// The whole document: `fio version`, `timestamp`, `jobs[]`.
pub fn render(report: &RunReport) -> Value {
    let ts = report
        .started
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let jobs: Vec<Value> = report.results().map(job).collect();
    json!({
        "fio version": super::fio_version(),
        "timestamp": ts,
        "timestamp_ms": report.started.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0),
        "time": chrono::Local::now().format("%a %b %e %H:%M:%S %Y").to_string(),
        "jobs": jobs,
        "disk_util": report.disk_util.iter().map(|d| json!({
            "name": d.name,
            "read_ios": d.read_ios,
            "write_ios": d.write_ios,
            "read_merges": d.read_merges,
            "write_merges": d.write_merges,
            "read_ticks": d.read_ticks,
            "write_ticks": d.write_ticks,
            "in_queue": d.in_queue,
            "util": d.util,
        })).collect::<Vec<_>>(),
    })
}

/// fio's `steadystate` block: the criterion, whether it was attained, and
/// the window's samples.
fn steadystate(ss: &crate::model::result::SteadyOutcome) -> Value {
    json!({
        "ss": ss.ss,
        "duration": ss.duration,
        "attained": u8::from(ss.attained),
        "criterion": ss.criterion,
        "max_deviation": ss.max_deviation,
        "slope": ss.slope,
        "data": {
            "bw_mean": ss.bw_mean,
            "iops_mean": ss.iops_mean,
            "iops": ss.iops,
            "bw": ss.bw,
        },
    })
}

fn job(r: &JobResult) -> Value {
    let options: Map<String, Value> = r
        .options
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let mut out = json!({
        "jobname": r.name,
        "groupid": r.groupid,
        "job_start": r.job_start_ms,
        "error": r.errno,
        "eta": 0,
        "elapsed": r.runtime_ms.div_ceil(1000),
        "job options": options,
        "read": dir(&r.read),
        "write": dir(&r.write),
        "trim": dir(&DirResult::default()),
        "sync": {
            "total_ios": r.sync.total_ios,
            "lat_ns": lat(&r.sync.lat, false),
        },
        "job_runtime": r.runtime_ms,
        "usr_cpu": r.usr_cpu,
        "sys_cpu": r.sys_cpu,
        "ctx": r.ctx,
        "majf": r.majf,
        "minf": r.minf,
        "iodepth_level": r.iodepth_level,
        "iodepth_submit": r.iodepth_submit,
        "iodepth_complete": r.iodepth_complete,
        "latency_ns": r.latency_ns,
        "latency_us": r.latency_us,
        "latency_ms": r.latency_ms,
    });
    if let Value::Object(fields) = &mut out {
        fields.extend(latency_target_defaults(r.iodepth));
        if let Some(ss) = &r.steadystate {
            fields.insert("steadystate".into(), steadystate(ss));
        }
        // unified_rw_reporting: fio's `mixed` replaces the directions and
        // sync (`mixed`), or joins them (`both`).
        if let Some(m) = &r.mixed {
            if r.mixed_only {
                for key in ["read", "write", "trim", "sync"] {
                    fields.remove(key);
                }
            }
            fields.insert("mixed".into(), dir(m));
        }
        if let Some(e) = &r.continued_errors {
            fields.insert("total_err".into(), json!(e.total));
            fields.insert("first_error".into(), json!(e.first_errno));
        }
    }
    out
}

/// fio's `latency_*` keys of a job without `latency_target` (plumb has
/// none): the depth is the job's `iodepth` (fio's `latency_qd` starts
/// there), no target, no window, the 100th percentile. fio 3.33 prints
/// `latency_target` and `latency_window`; later versions add the same
/// values with their units in the name (`_ns`, `_us`).
fn latency_target_defaults(iodepth: u32) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("latency_depth".into(), json!(iodepth));
    fields.insert("latency_target".into(), json!(0));
    fields.insert("latency_target_ns".into(), json!(0));
    fields.insert("latency_percentile".into(), json!(100.0));
    fields.insert("latency_window".into(), json!(0));
    fields.insert("latency_window_us".into(), json!(0));
    fields
}

fn dir(d: &DirResult) -> Value {
    json!({
        "io_bytes": d.io_bytes,
        "io_kbytes": d.io_bytes / 1024,
        "bw_bytes": d.bw_bytes,
        "bw": d.bw_bytes / 1024,
        "iops": d.iops,
        "runtime": d.runtime_ms,
        "total_ios": d.total_ios,
        "short_ios": d.short_ios,
        "drop_ios": 0,
        "slat_ns": lat(&d.slat, false),
        "clat_ns": lat(&d.lat, true),
        "lat_ns": lat(&d.total_lat, false),
        "bw_min": (d.bw_min / 1024.0) as u64,
        "bw_max": (d.bw_max / 1024.0) as u64,
        "bw_agg": if d.total_ios > 0 { 100.0 } else { 0.0 },
        "bw_mean": d.bw_mean / 1024.0,
        "bw_dev": d.bw_stddev / 1024.0,
        "bw_samples": d.samples,
        "iops_min": d.iops_min as u64,
        "iops_max": d.iops_max as u64,
        "iops_mean": d.iops_mean,
        "iops_stddev": d.iops_stddev,
        "iops_samples": d.samples,
    })
}

fn lat(l: &LatencySummary, with_percentiles: bool) -> Value {
    let mut v = json!({
        "min": l.min,
        "max": l.max,
        "mean": l.mean,
        "stddev": l.stddev,
        "N": l.samples,
    });
    if with_percentiles && l.samples > 0 {
        v["percentile"] = json!(l.percentiles);
    }
    v
}
