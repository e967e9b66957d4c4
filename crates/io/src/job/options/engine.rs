//! The engine options ([`crate::job::spec::EngineOpts`]).

use super::{OptionDef, OptionError, Problem};
use crate::job::spec::{CpuMode, JobSpec, StatType};
use crate::job::values::{parse_bool, parse_count_in, parse_percent, ValueError};

/// Longest `cpuio` burst (`cpuchunks`, µs): a burst runs to its end before
/// the job sees a stop, so it stays under a second.
pub const MAX_CPU_CHUNK_US: u64 = 1_000_000;

/// The engine options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[
    opt!(
        "hipri",
        [],
        true,
        "pvsync2: polled completion (RWF_HIPRI)",
        |j, v| {
            j.engine.hipri = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "hipri_percentage",
        [],
        false,
        "pvsync2: share of I/Os with RWF_HIPRI (0-100)",
        |j, v| {
            j.engine.hipri_percentage = parse_percent(v)?;
            Ok(())
        }
    ),
    opt!(
        "uncached",
        [],
        false,
        "pvsync2: buffered I/O whose pages are dropped once done (RWF_DONTCACHE)",
        |j, v| {
            j.engine.uncached = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "nowait",
        [],
        true,
        "pvsync2: fail with EAGAIN instead of blocking (RWF_NOWAIT)",
        |j, v| {
            j.engine.nowait = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "stat_type",
        [],
        false,
        "filestat: stat, lstat or statx",
        |j, v| {
            j.engine.stat_type = match v {
                "stat" => StatType::Stat,
                "lstat" => StatType::Lstat,
                "statx" => StatType::Statx,
                _ => return Err(expected(v, "stat, lstat or statx")),
            };
            Ok(())
        }
    ),
    opt!(
        "cpuload",
        [],
        false,
        "cpuio: percent of one CPU each thread burns (1-100)",
        |j, v| {
            j.engine.cpuload = parse_count_in(v, 1, 100)?;
            Ok(())
        }
    ),
    opt!(
        "cpumode",
        [],
        false,
        "cpuio: noop (spin) or qsort",
        |j, v| {
            j.engine.cpumode = match v {
                "noop" => CpuMode::Noop,
                "qsort" => CpuMode::Qsort,
                _ => return Err(expected(v, "noop or qsort")),
            };
            Ok(())
        }
    ),
    opt!(
        "cpuchunks",
        ["cpuio_chunks"],
        false,
        "cpuio: microseconds of one CPU burst",
        |j, v| {
            j.engine.cpuchunks = parse_count_in(v, 1, MAX_CPU_CHUNK_US)?;
            Ok(())
        }
    ),
    opt!(
        "exit_on_io_done",
        [],
        true,
        "cpuio: end the job once the I/O jobs are done",
        |_, v| {
            parse_bool(v)?;
            Ok(())
        }
    ),
];

/// A value that is not one of the words the option takes.
fn expected(value: &str, words: &str) -> ValueError {
    ValueError::Expected {
        value: value.into(),
        expected: words.into(),
    }
}

/// Checks the engine options against each other and the rest of the job.
pub(super) fn validate(job: &JobSpec) -> Result<(), OptionError> {
    if job.ioengine == "cpuio" && job.engine.cpuload == 0 {
        return Err(OptionError {
            option: "cpuload".into(),
            problem: Problem::Value(ValueError::Expected {
                value: "0".into(),
                expected: "the percent of a CPU to burn (cpuio needs cpuload=1..100)".into(),
            }),
        });
    }
    Ok(())
}
