//! The pacing options ([`crate::job::spec::Pacing`]).

use super::{OptionDef, OptionError, Problem, MAX_JOB_DURATION};
use crate::job::spec::{ErrorClasses, ExitWhat, JobSpec, RateProcess, SubmitMode, ThinkCount};
use crate::job::values::{parse_bool, parse_count, parse_count_in, set_opt_per_dir, ValueError};
use crate::units::{parse_duration_with_default, parse_size};
use std::time::Duration;

/// Heaviest flow weight (fio's `FLOW_MAX_WEIGHT`).
pub const MAX_FLOW_WEIGHT: u64 = 1000;

/// A duration whose bare number is in `unit_us` microseconds, at most
/// [`MAX_JOB_DURATION`].
fn duration(v: &str, unit_us: u64) -> Result<Duration, ValueError> {
    let d = parse_duration_with_default(v, unit_us)?;
    if d > MAX_JOB_DURATION {
        return Err(ValueError::Expected {
            value: v.into(),
            expected: format!("a time of at most {} s", MAX_JOB_DURATION.as_secs()),
        });
    }
    Ok(d)
}

/// A bare number in microseconds (fio's `thinktime`, `latency_target` ...).
fn micros(v: &str) -> Result<Duration, ValueError> {
    duration(v, 1)
}

/// One of `choices` (name, value), or an error listing them.
fn one_of<T: Copy>(v: &str, choices: &[(&str, T)]) -> Result<T, ValueError> {
    let lower = v.to_ascii_lowercase();
    choices
        .iter()
        .find(|(name, _)| *name == lower)
        .map(|(_, t)| *t)
        .ok_or_else(|| ValueError::Expected {
            value: v.into(),
            expected: format!(
                "one of {}",
                choices
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
}

/// fio's `startdelay=irange(time)`: one time or `lo-hi`, seconds by default.
fn parse_startdelay(v: &str) -> Result<(Duration, Duration), ValueError> {
    let secs = |s: &str| duration(s.trim(), 1_000_000);
    let (lo, hi) = match v.split_once('-') {
        Some((lo, hi)) => (secs(lo)?, secs(hi)?),
        None => {
            let d = secs(v)?;
            (d, d)
        }
    };
    if lo > hi {
        return Err(ValueError::Reversed(v.into()));
    }
    Ok((lo, hi))
}

/// errno names `ignore_error` takes (fio takes any the C library knows; these
/// are the ones an I/O can return).
const ERRNO_NAMES: &[(&str, i32)] = &[
    ("EPERM", libc::EPERM),
    ("ENOENT", libc::ENOENT),
    ("EINTR", libc::EINTR),
    ("EIO", libc::EIO),
    ("ENXIO", libc::ENXIO),
    ("E2BIG", libc::E2BIG),
    ("EBADF", libc::EBADF),
    ("EAGAIN", libc::EAGAIN),
    ("ENOMEM", libc::ENOMEM),
    ("EACCES", libc::EACCES),
    ("EFAULT", libc::EFAULT),
    ("EBUSY", libc::EBUSY),
    ("EEXIST", libc::EEXIST),
    ("ENODEV", libc::ENODEV),
    ("EINVAL", libc::EINVAL),
    ("ENFILE", libc::ENFILE),
    ("EMFILE", libc::EMFILE),
    ("EFBIG", libc::EFBIG),
    ("ENOSPC", libc::ENOSPC),
    ("ESPIPE", libc::ESPIPE),
    ("EROFS", libc::EROFS),
    ("EPIPE", libc::EPIPE),
    ("ERANGE", libc::ERANGE),
    ("ENOTSUP", libc::ENOTSUP),
    ("EOPNOTSUPP", libc::EOPNOTSUPP),
    ("ETIMEDOUT", libc::ETIMEDOUT),
    ("ECANCELED", libc::ECANCELED),
    ("EILSEQ", libc::EILSEQ),
    ("EDQUOT", libc::EDQUOT),
    ("ENODATA", libc::ENODATA),
    ("EOVERFLOW", libc::EOVERFLOW),
    ("EBADMSG", libc::EBADMSG),
    ("EREMOTEIO", libc::EREMOTEIO),
    ("EMEDIUMTYPE", libc::EMEDIUMTYPE),
    ("ENOMEDIUM", libc::ENOMEDIUM),
];

/// Most errno values per class in `ignore_error`.
const MAX_IGNORED_ERRORS: usize = 64;

/// One class's list of `ignore_error`: errno names or numbers, `:`-separated.
fn parse_errnos(v: &str) -> Result<Vec<i32>, ValueError> {
    let mut out = Vec::new();
    for item in v.split(':').map(str::trim).filter(|s| !s.is_empty()) {
        let errno = match item.parse::<u64>() {
            Ok(n) if (1..=4095).contains(&n) => n as i32,
            Ok(_) => {
                return Err(ValueError::Expected {
                    value: item.into(),
                    expected: "an errno between 1 and 4095".into(),
                })
            }
            Err(_) => ERRNO_NAMES
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(item))
                .map(|(_, n)| *n)
                .ok_or_else(|| ValueError::Expected {
                    value: item.into(),
                    expected: "an errno name (EIO, ENOSPC, ...) or number".into(),
                })?,
        };
        if out.len() >= MAX_IGNORED_ERRORS {
            return Err(ValueError::Expected {
                value: v.into(),
                expected: format!("at most {MAX_IGNORED_ERRORS} errors per class"),
            });
        }
        out.push(errno);
    }
    Ok(out)
}

/// `ignore_error=READ,WRITE,VERIFY`, each a `:`-separated errno list.
fn parse_ignore_error(v: &str) -> Result<[Vec<i32>; 3], ValueError> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return Err(ValueError::TooManyDirections(v.into()));
    }
    let mut out = [Vec::new(), Vec::new(), Vec::new()];
    for (slot, part) in out.iter_mut().zip(parts) {
        *slot = parse_errnos(part)?;
    }
    Ok(out)
}

/// A per-direction minimum rate in bytes/s (`rate_min`).
fn min_bytes(s: &str) -> Result<u64, ValueError> {
    let b = parse_size(s)?;
    if b == 0 {
        return Err(ValueError::ZeroRate);
    }
    Ok(b)
}

/// The pacing options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[
    opt!(
        "thinktime",
        [],
        false,
        "stall this long (µs) after every thinktime_blocks I/Os",
        |j, v| {
            j.pacing.thinktime = micros(v)?;
            Ok(())
        }
    ),
    opt!(
        "thinktime_spin",
        [],
        false,
        "the part of the think time (µs) spent busy on the CPU",
        |j, v| {
            j.pacing.thinktime_spin = micros(v)?;
            Ok(())
        }
    ),
    opt!(
        "thinktime_blocks",
        [],
        false,
        "I/Os between think times (default 1)",
        |j, v| {
            j.pacing.thinktime_blocks = Some(parse_count_in(v, 1, u32::MAX as u64)?);
            Ok(())
        }
    ),
    opt!(
        "thinktime_blocks_type",
        [],
        false,
        "what thinktime_blocks counts: complete or issue",
        |j, v| {
            j.pacing.thinktime_blocks_type = one_of(
                v,
                &[
                    ("complete", ThinkCount::Complete),
                    ("issue", ThinkCount::Issue),
                ],
            )?;
            Ok(())
        }
    ),
    opt!(
        "thinktime_iotime",
        [],
        false,
        "think after this much time of I/O (s)",
        |j, v| {
            j.pacing.thinktime_iotime = duration(v, 1_000_000)?;
            Ok(())
        }
    ),
    opt!(
        "rate_process",
        [],
        false,
        "how rated I/Os are spaced: linear or poisson",
        |j, v| {
            j.pacing.rate_process = one_of(
                v,
                &[
                    ("linear", RateProcess::Linear),
                    ("poisson", RateProcess::Poisson),
                ],
            )?;
            Ok(())
        }
    ),
    opt!(
        "rate_min",
        ["ratemin"],
        false,
        "least bandwidth (bytes/s) per ratecycle, or read,write; below it the job fails",
        |j, v| { set_opt_per_dir(&mut j.pacing.rate_min, v, min_bytes) }
    ),
    opt!(
        "rate_iops_min",
        [],
        false,
        "least IOPS per ratecycle, or read,write; below it the job fails",
        |j, v| { set_opt_per_dir(&mut j.pacing.rate_iops_min, v, |s| parse_count(s, 1)) }
    ),
    opt!(
        "rate_cycle",
        ["ratecycle"],
        false,
        "window (ms) the minimum rates are averaged over (default 1000)",
        |j, v| {
            let ms = parse_count_in(v, 1, u32::MAX as u64)?;
            j.pacing.ratecycle = Duration::from_millis(u64::from(ms));
            Ok(())
        }
    ),
    opt!(
        "flow",
        [],
        false,
        "weight of the job among the jobs of its flow_id",
        |j, v| {
            j.pacing.flow = parse_count_in(v, 0, MAX_FLOW_WEIGHT)?;
            Ok(())
        }
    ),
    opt!(
        "flow_id",
        [],
        false,
        "the flow the job belongs to",
        |j, v| {
            j.pacing.flow_id = parse_count_in(v, 0, u32::MAX as u64)?;
            Ok(())
        }
    ),
    opt!(
        "flow_sleep",
        [],
        false,
        "wait (µs) when the job is ahead of its flow share",
        |j, v| {
            j.pacing.flow_sleep = micros(v)?;
            Ok(())
        }
    ),
    opt!(
        "startdelay",
        [],
        false,
        "start this long after the run (s), or a random time in lo-hi",
        |j, v| {
            j.pacing.startdelay = parse_startdelay(v)?;
            Ok(())
        }
    ),
    opt!(
        "wait_for",
        [],
        false,
        "start once every clone of the named job has ended",
        |j, v| {
            j.pacing.wait_for = Some(v.to_string());
            Ok(())
        }
    ),
    opt!(
        "exitall",
        [],
        true,
        "when a job ends, stop the others (see exit_what)",
        |j, v| {
            j.pacing.exitall = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "exitall_on_error",
        [],
        true,
        "when a job ends in error, stop the others",
        |j, v| {
            j.pacing.exitall_on_error = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "exit_what",
        [],
        false,
        "what exitall stops: group, stonewall or all",
        |j, v| {
            j.pacing.exit_what = one_of(
                v,
                &[
                    ("group", ExitWhat::Group),
                    ("stonewall", ExitWhat::Stonewall),
                    ("all", ExitWhat::All),
                ],
            )?;
            Ok(())
        }
    ),
    opt!(
        "io_submit_mode",
        [],
        false,
        "who submits: inline (the job) or offload (a submitter thread)",
        |j, v| {
            j.pacing.io_submit_mode = one_of(
                v,
                &[
                    ("inline", SubmitMode::Inline),
                    ("offload", SubmitMode::Offload),
                ],
            )?;
            Ok(())
        }
    ),
    opt!(
        "latency_target",
        [],
        false,
        "find the deepest queue whose latency stays under this (µs)",
        |j, v| {
            let d = micros(v)?;
            j.pacing.latency_target = (!d.is_zero()).then_some(d);
            Ok(())
        }
    ),
    opt!(
        "latency_window",
        [],
        false,
        "how long each depth is measured (µs)",
        |j, v| {
            j.pacing.latency_window = micros(v)?;
            Ok(())
        }
    ),
    opt!(
        "latency_percentile",
        [],
        false,
        "percent of I/Os that must be under latency_target (default 100)",
        |j, v| {
            let p: f64 = v
                .trim_end_matches('%')
                .parse()
                .map_err(|_| ValueError::NotNumber(v.into()))?;
            if !(p > 0.0 && p <= 100.0) {
                return Err(ValueError::NotPercentage(v.into()));
            }
            j.pacing.latency_percentile = p;
            Ok(())
        }
    ),
    opt!(
        "latency_run",
        [],
        true,
        "keep adjusting the depth to the target instead of ending",
        |j, v| {
            j.pacing.latency_run = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "continue_on_error",
        [],
        false,
        "go on after errors: none, read, write, io, verify, all",
        |j, v| {
            j.pacing.continue_on_error = one_of(
                v,
                &[
                    ("none", ErrorClasses::NONE),
                    ("read", ErrorClasses::READ),
                    ("write", ErrorClasses::WRITE),
                    ("io", ErrorClasses::READ.with(ErrorClasses::WRITE)),
                    ("verify", ErrorClasses::VERIFY),
                    ("all", ErrorClasses::ALL),
                    ("0", ErrorClasses::NONE),
                    ("1", ErrorClasses::ALL),
                ],
            )?;
            Ok(())
        }
    ),
    opt!(
        "ignore_error",
        [],
        false,
        "errors to go on after, per class: READ,WRITE,VERIFY lists (EIO:ENOSPC:122)",
        |j, v| {
            j.pacing.ignore_error = parse_ignore_error(v)?;
            Ok(())
        }
    ),
    opt!(
        "error_dump",
        [],
        true,
        "print every error, even those the job goes on after",
        |j, v| {
            j.pacing.error_dump = parse_bool(v)?;
            Ok(())
        }
    ),
];

/// Checks the pacing options against each other and the rest of the job.
pub(super) fn validate(job: &JobSpec) -> Result<(), OptionError> {
    let p = &job.pacing;
    if p.thinktime_spin > p.thinktime {
        return Err(OptionError {
            option: "thinktime_spin".into(),
            problem: Problem::Value(ValueError::Expected {
                value: format!("{} µs", p.thinktime_spin.as_micros()),
                expected: format!("at most thinktime ({} µs)", p.thinktime.as_micros()),
            }),
        });
    }
    if p.wait_for.as_deref() == Some(job.name.as_str()) {
        return Err(OptionError {
            option: "wait_for".into(),
            problem: Problem::Value(ValueError::Expected {
                value: job.name.clone(),
                expected: "the name of another, earlier job".into(),
            }),
        });
    }
    Ok(())
}
