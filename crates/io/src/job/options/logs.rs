//! The log options ([`crate::job::spec::LogOpts`]): fio's bandwidth, IOPS,
//! latency and histogram logs.

use super::{OptionDef, OptionError};
use crate::job::spec::{JobSpec, LogWindow};
use crate::job::values::{parse_bool, parse_count_in, ValueError};

/// Longest log prefix (a path).
const MAX_PREFIX: usize = 4096;
/// Longest averaging window: an hour.
const MAX_WINDOW_MSEC: u64 = 3_600_000;

/// A log's prefix: given bare (`write_bw_log`, which the parser passes as
/// `1`), the job's name, as fio.
fn prefix(v: &str) -> Result<Option<String>, ValueError> {
    if v.len() > MAX_PREFIX || v.contains('\0') {
        return Err(ValueError::Expected {
            value: v.chars().take(40).collect(),
            expected: format!("a file name prefix of at most {MAX_PREFIX} bytes"),
        });
    }
    Ok(Some(if v == "1" {
        String::new()
    } else {
        v.to_string()
    }))
}

/// The log options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[
    opt!(
        "write_bw_log",
        [],
        true,
        "bandwidth log PREFIX_bw.N.log (KiB/s per I/O or window)",
        |j, v| {
            j.logs.bw = prefix(v)?;
            Ok(())
        }
    ),
    opt!(
        "write_iops_log",
        [],
        true,
        "IOPS log PREFIX_iops.N.log",
        |j, v| {
            j.logs.iops = prefix(v)?;
            Ok(())
        }
    ),
    opt!(
        "write_lat_log",
        [],
        true,
        "latency logs PREFIX_slat/_clat/_lat.N.log (ns)",
        |j, v| {
            j.logs.lat = prefix(v)?;
            Ok(())
        }
    ),
    opt!(
        "write_hist_log",
        [],
        true,
        "clat histogram log PREFIX_clat_hist.N.log (with log_hist_msec)",
        |j, v| {
            j.logs.hist = prefix(v)?;
            Ok(())
        }
    ),
    opt!(
        "log_avg_msec",
        [],
        false,
        "one log entry per window of this many ms (0: every I/O)",
        |j, v| {
            j.logs.avg_msec = parse_count_in(v, 0, MAX_WINDOW_MSEC)?;
            Ok(())
        }
    ),
    opt!(
        "log_hist_msec",
        [],
        false,
        "one histogram log entry per window of this many ms",
        |j, v| {
            j.logs.hist_msec = parse_count_in(v, 0, MAX_WINDOW_MSEC)?;
            Ok(())
        }
    ),
    opt!(
        "log_hist_coarseness",
        [],
        false,
        "0-6: each step halves the histogram log's bins",
        |j, v| {
            j.logs.hist_coarseness = parse_count_in(v, 0, 6)?;
            Ok(())
        }
    ),
    opt!(
        "log_window_value",
        ["log_max_value"],
        false,
        "windowed latency entries: avg, max or both",
        |j, v| {
            j.logs.window = match v {
                "avg" | "0" => LogWindow::Avg,
                "max" | "1" => LogWindow::Max,
                "both" => LogWindow::Both,
                other => {
                    return Err(ValueError::Expected {
                        value: other.into(),
                        expected: "avg, max, both, 0 or 1".into(),
                    })
                }
            };
            Ok(())
        }
    ),
    opt!(
        "log_offset",
        [],
        true,
        "logs carry each I/O's offset",
        |j, v| {
            j.logs.offset = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "log_prio",
        [],
        true,
        "logs show each I/O's priority class and level",
        |j, v| {
            j.logs.prio = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "per_job_logs",
        [],
        true,
        "one log file per thread (else one shared file)",
        |j, v| {
            j.logs.per_job = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "log_unix_epoch",
        [],
        true,
        "log times since the Unix epoch",
        |j, v| {
            j.logs.unix_epoch = parse_bool(v)?;
            Ok(())
        }
    ),
];

/// The log options need no check against each other: a histogram log
/// without `log_hist_msec` is written empty, as fio writes it.
pub(super) fn validate(_job: &JobSpec) -> Result<(), OptionError> {
    Ok(())
}
