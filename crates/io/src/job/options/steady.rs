//! fio's steady-state options ([`crate::job::spec::SteadyOpts`]).

use super::{OptionDef, OptionError, Problem, MAX_JOB_DURATION};
use crate::job::spec::{JobSpec, SteadyLimit, SteadyMetric, SteadyOpts};
use crate::job::values::ValueError;
use crate::units::{parse_duration_at_most, parse_size};
use std::time::Duration;

/// Most samples in a window: they are kept in memory and fitted each interval.
const MAX_WINDOW: usize = 100_000;

/// The steady-state options as given, before they make a [`SteadyOpts`]
/// (fio's defaults: no window, so not watched; no ramp; a sample a second).
fn opts(j: &mut JobSpec) -> &mut SteadyOpts {
    j.steady.get_or_insert(SteadyOpts {
        metric: SteadyMetric::Iops,
        slope: false,
        limit: SteadyLimit::Percent(0.0),
        dur: Duration::ZERO,
        ramp: Duration::ZERO,
        interval: Duration::from_secs(1),
    })
}

/// `iops:10%`, `bw_slope:0.1%`, `iops:500` (absolute), `bw:20m`.
fn criterion(j: &mut JobSpec, v: &str) -> Result<(), ValueError> {
    let bad = || ValueError::Expected {
        value: v.into(),
        expected: "iops, iops_slope, bw or bw_slope with a limit, e.g. iops:10% or bw_slope:0.1%"
            .into(),
    };
    let (kind, limit) = v.split_once(':').ok_or_else(bad)?;
    let (metric, slope) = match kind {
        "iops" => (SteadyMetric::Iops, false),
        "iops_slope" => (SteadyMetric::Iops, true),
        "bw" => (SteadyMetric::Bw, false),
        "bw_slope" => (SteadyMetric::Bw, true),
        _ => return Err(bad()),
    };
    let limit = match limit.strip_suffix('%') {
        Some(p) => {
            let p: f64 = p.trim().parse().map_err(|_| bad())?;
            if !(p.is_finite() && (0.0..=100.0).contains(&p)) {
                return Err(bad());
            }
            SteadyLimit::Percent(p)
        }
        None if metric == SteadyMetric::Bw => SteadyLimit::Absolute(parse_size(limit)? as f64),
        None => {
            let a: f64 = limit.trim().parse().map_err(|_| bad())?;
            if !(a.is_finite() && a >= 0.0) {
                return Err(bad());
            }
            SteadyLimit::Absolute(a)
        }
    };
    let o = opts(j);
    o.metric = metric;
    o.slope = slope;
    o.limit = limit;
    Ok(())
}

/// The steady-state options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[
    opt!(
        "ss",
        ["steadystate"],
        false,
        "stop at steady state: iops|iops_slope|bw|bw_slope:LIMIT[%]",
        criterion
    ),
    opt!(
        "ss_dur",
        ["steadystate_duration"],
        false,
        "steady state's window (e.g. 30s)",
        |j, v| {
            opts(j).dur = parse_duration_at_most(v, MAX_JOB_DURATION)?;
            Ok(())
        }
    ),
    opt!(
        "ss_ramp",
        ["steadystate_ramp_time"],
        false,
        "time before steady state's first sample",
        |j, v| {
            opts(j).ramp = parse_duration_at_most(v, MAX_JOB_DURATION)?;
            Ok(())
        }
    ),
    opt!(
        "ss_interval",
        ["steadystate_check_interval"],
        false,
        "time between steady state's samples (default 1s)",
        |j, v| {
            let d = parse_duration_at_most(v, MAX_JOB_DURATION)?;
            if d < Duration::from_millis(10) {
                return Err(ValueError::Expected {
                    value: v.into(),
                    expected: "an interval of at least 10ms".into(),
                });
            }
            opts(j).interval = d;
            Ok(())
        }
    ),
];

/// A steady state needs its criterion and a window that fits in memory;
/// without `ss_dur` (fio's default of 0) it is not watched.
pub(super) fn validate(job: &JobSpec) -> Result<(), OptionError> {
    let Some(ss) = &job.steady else {
        return Ok(());
    };
    let err = |value: String, expected: &str| OptionError {
        option: "ss".into(),
        problem: Problem::Value(ValueError::Expected {
            value,
            expected: expected.into(),
        }),
    };
    if ss.limit == SteadyLimit::Percent(0.0) && !job.given.iter().any(|(k, _)| k == "ss") {
        return Err(err(
            "ss_dur/ss_ramp/ss_interval".into(),
            "given with ss=CRITERION:LIMIT",
        ));
    }
    let window = ss.window();
    if !ss.dur.is_zero() && window > MAX_WINDOW {
        return Err(err(
            format!("{} samples", window),
            "a window (ss_dur / ss_interval) of at most 100000 samples",
        ));
    }
    Ok(())
}
