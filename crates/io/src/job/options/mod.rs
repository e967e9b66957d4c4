//! The option table: fio's option names as data, each with help and a setter.
//!
//! An option not in this table is an error with a "did you mean"; options that
//! only tune fio's own bookkeeping are accepted with no effect (they still
//! appear among the options given).

/// One [`OptionDef`]: name, aliases, flag, help line and setter.
macro_rules! opt {
    ($name:expr, [$($alias:expr),*], $flag:expr, $help:expr, $setter:expr) => {
        OptionDef { name: $name, aliases: &[$($alias),*], flag: $flag, help: $help, setter: $setter }
    };
}

mod data;
mod engine;
mod logs;
mod pacing;
mod pattern;
mod placement;
mod steady;
mod table;
mod verify;

/// Every option table, one per area of the job: the core (`table`), then
/// the pattern, pacing, placement, data, engine, log, verify and
/// steady-state options.
pub static TABLES: &[&[OptionDef]] = &[
    table::OPTIONS,
    pattern::OPTIONS,
    pacing::OPTIONS,
    placement::OPTIONS,
    data::OPTIONS,
    engine::OPTIONS,
    logs::OPTIONS,
    verify::OPTIONS,
    steady::OPTIONS,
];

/// Every option plumb understands, over all tables.
pub fn all_options() -> impl Iterator<Item = &'static OptionDef> {
    TABLES.iter().flat_map(|t| t.iter())
}

use super::spec::{BlockSize, Dir, JobSpec, Verify};
use super::values::ValueError;
use crate::units::format_bytes_binary;
use std::time::Duration;

/// A bad option or value, naming the option.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("option '{option}': {problem}")]
pub struct OptionError {
    /// The option as the user wrote it.
    pub option: String,
    /// What is wrong.
    pub problem: Problem,
}

/// What is wrong with an option, a job or a job file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Problem {
    /// Its value is refused.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// Not an option plumb has; `hint` names the closest one.
    #[error("plumb does not support this option{}", hint.as_ref().map(|s| format!("; did you mean '{s}'?")).unwrap_or_default())]
    Unsupported {
        /// The known option closest to it.
        hint: Option<&'static str>,
    },
    /// Given without a value, and not a flag.
    #[error("needs a value")]
    NeedsValue,
    /// A job without a name.
    #[error("every job needs a name")]
    Unnamed,
    /// Verification of jobs whose block size varies.
    #[error("plumb verifies fixed block sizes only (drop bsrange/bssplit)")]
    VerifyVariableBlocks,
    /// Verification of a job that both reads and writes.
    #[error("plumb verifies read-only or write-only jobs (not rw/randrw)")]
    VerifyMixed,
    /// `time_based` without `runtime`.
    #[error("needs a runtime")]
    NoRuntime,
    /// Both `fsync` and `fdatasync`.
    #[error("give fsync or fdatasync, not both")]
    BothSyncs,
    /// I/O buffers above [`MAX_BUFFER_BYTES_PER_CLONE`] per clone.
    #[error("iodepth {iodepth} × block size {} needs {} of I/O buffers per job, above the {} limit", format_bytes_binary(*block as f64), format_bytes_binary(*buffers as f64), format_bytes_binary(MAX_BUFFER_BYTES_PER_CLONE as f64))]
    Buffers {
        /// The queue depth.
        iodepth: u32,
        /// The largest block size.
        block: u64,
        /// The buffers it takes, in bytes.
        buffers: u64,
    },
    /// A job file's section header without its `]`.
    #[error("a section header must end with ']'")]
    OpenSection,
    /// A job file's option before its first section.
    #[error("an option before any [section]")]
    NoSection,
    /// More threads in all than a run allows (`--max-jobs`, at most [`MAX_NUMJOBS`]).
    #[error("the jobs add up to {total} threads, above the limit of {max} per run")]
    TooManyThreads {
        /// Threads the jobs ask for.
        total: u64,
        /// The limit.
        max: u64,
    },
    /// A job file's section name longer than fio reads.
    #[error("a section name of {0} bytes, above fio's 255")]
    LongSectionName(usize),
    /// An `include` line that cannot be followed.
    #[error("{0}")]
    Include(String),
    /// A value whose `${VAR}`, keyword or arithmetic does not expand.
    #[error(transparent)]
    Expand(#[from] crate::job::expand::ExpandError),
}

/// Most clones of one job (`numjobs`): each is a thread with its own buffers
/// and files, and thousands already exceed what a benchmark can schedule.
pub const MAX_NUMJOBS: u64 = 4096;
/// Deepest queue per clone (`iodepth`): libaio's default system-wide
/// `aio-max-nr`; io_uring's own ring limit is lower and is the engine's to report.
pub const MAX_IODEPTH: u64 = 65536;
/// Most files per clone (`nrfiles`): each is an open descriptor.
pub const MAX_NRFILES: u64 = 65536;
/// Most I/O buffer memory one clone may ask for (`iodepth` × largest block).
pub const MAX_BUFFER_BYTES_PER_CLONE: u64 = 4 << 30;
/// Longest `runtime` or `ramp_time`: a year is past any benchmark, and a
/// bound keeps deadline arithmetic (`start + runtime`) far from overflow.
pub const MAX_JOB_DURATION: Duration = Duration::from_secs(365 * 86400);

/// Sets an option's value on a job.
type Setter = fn(&mut JobSpec, &str) -> Result<(), ValueError>;

/// One supported option.
pub struct OptionDef {
    /// fio's name.
    pub name: &'static str,
    /// Other names fio accepts.
    pub aliases: &'static [&'static str],
    /// True when the option is a flag that may be given without a value.
    pub flag: bool,
    /// One line of help.
    pub help: &'static str,
    setter: Setter,
}

/// Options accepted for compatibility that only tune fio's own bookkeeping.
pub const BOOKKEEPING_ONLY: &[&str] = &[
    "verify_async",
    "verify_async_cpus",
    "log_compression",
    "log_compression_cpus",
    "log_entries",
    "gtod_reduce",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "description",
    "random_generator",
    "allrandrepeat",
    "kb_base",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "iodepth_low",
    "overwrite",
    "clocksource",
];

/// Options plumb accepts although it does not reproduce the effect they
/// have in fio, each with the reason; `plumb fio` warns about each, and
/// refuses them with `--warnings-fatal`.
pub const WITHOUT_EFFECT: &[(&str, &str)] = &[
    (
        "latency_target",
        "plumb does not search the queue depth: the job runs at its iodepth",
    ),
    ("latency_window", "used only by latency_target's search"),
    ("latency_percentile", "used only by latency_target's search"),
    ("latency_run", "used only by latency_target's search"),
    (
        "io_submit_mode",
        "plumb's job thread submits (offload's submitter thread is not reproduced; \
         rated I/Os keep their schedule either way)",
    ),
    (
        "exit_on_io_done",
        "a cpuio job runs for its own runtime: plumb does not end it when the other jobs end",
    ),
];

/// The reason `name` is accepted without effect, if it is.
pub fn without_effect(name: &str) -> Option<&'static str> {
    WITHOUT_EFFECT
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, why)| *why)
}

/// Options that write files by a name of their own, beside the job's files
/// (`write_iolog`, fio's logs, `verify_dump`): `plumb fio` writes them as
/// fio does, and scenarios refuse them (their names would escape the run
/// directory's resolver).
pub const WRITES_HOST_FILES: &[&str] = &[
    "write_iolog",
    "write_bw_log",
    "write_iops_log",
    "write_lat_log",
    "write_hist_log",
    "verify_dump",
];

/// Finds an option by name or alias.
pub fn find_option(name: &str) -> Option<&'static OptionDef> {
    all_options().find(|o| o.name == name || o.aliases.contains(&name))
}

/// True when `name` is a known option (supported or bookkeeping-only).
pub fn is_known(name: &str) -> bool {
    find_option(name).is_some() || BOOKKEEPING_ONLY.contains(&name)
}

/// The known option closest to `name`, for "did you mean".
pub fn suggest(name: &str) -> Option<&'static str> {
    all_options()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .chain(BOOKKEEPING_ONLY.iter().copied())
        .map(|cand| (strsim::jaro_winkler(name, cand), cand))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// Applies one `name[=value]` option to a job.
pub fn apply(job: &mut JobSpec, name: &str, value: Option<&str>) -> Result<(), OptionError> {
    let err = |problem: Problem| OptionError {
        option: name.to_string(),
        problem,
    };
    if BOOKKEEPING_ONLY.contains(&name) {
        job.given
            .push((name.to_string(), value.unwrap_or("").to_string()));
        return Ok(());
    }
    let Some(def) = find_option(name) else {
        return Err(err(Problem::Unsupported {
            hint: suggest(name),
        }));
    };
    let value = match value {
        Some(v) => v.trim(),
        None if def.flag => "1",
        None => return Err(err(Problem::NeedsValue)),
    };
    if value.is_empty() && !def.flag {
        return Err(err(Problem::NeedsValue));
    }
    (def.setter)(job, if value.is_empty() { "1" } else { value })
        .map_err(|e| err(Problem::Value(e)))?;
    job.given.push((def.name.to_string(), value.to_string()));
    Ok(())
}

/// Builds a validated job from `name=value` pairs (the API scenario runtimes use).
pub fn job_from_pairs<K: AsRef<str>, V: AsRef<str>>(
    pairs: impl IntoIterator<Item = (K, V)>,
) -> Result<JobSpec, OptionError> {
    let mut job = JobSpec::default();
    for (k, v) in pairs {
        apply(&mut job, k.as_ref(), Some(v.as_ref()))?;
    }
    if job.name.is_empty() {
        job.name = "job".into();
    }
    validate(&job)?;
    Ok(job)
}

/// Checks the combination of options once all are applied.
pub fn validate(job: &JobSpec) -> Result<(), OptionError> {
    let err = |option: &str, problem: Problem| OptionError {
        option: option.to_string(),
        problem,
    };
    if job.name.is_empty() {
        return Err(err("name", Problem::Unnamed));
    }
    if job.verify != Verify::None {
        for d in Dir::BOTH {
            if job.rw.does(d) && !matches!(job.bs[d.index()], BlockSize::Fixed(_)) {
                return Err(err("verify", Problem::VerifyVariableBlocks));
            }
        }
        if job.rw.is_mixed() {
            return Err(err("verify", Problem::VerifyMixed));
        }
    }
    if job.time_based && job.runtime.is_none() {
        return Err(err("time_based", Problem::NoRuntime));
    }
    if job.fsync > 0 && job.fdatasync > 0 {
        return Err(err("fdatasync", Problem::BothSyncs));
    }
    let buffers = job.buffer_bytes_per_clone();
    if buffers > MAX_BUFFER_BYTES_PER_CLONE {
        return Err(err(
            "iodepth",
            Problem::Buffers {
                iodepth: job.iodepth,
                block: job.max_bs(),
                buffers,
            },
        ));
    }
    pattern::validate(job)?;
    pacing::validate(job)?;
    placement::validate(job)?;
    data::validate(job)?;
    engine::validate(job)?;
    logs::validate(job)?;
    verify::validate(job)?;
    steady::validate(job)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::spec::Distribution;

    fn job(opts: &[(&str, &str)]) -> Result<JobSpec, OptionError> {
        let mut j = JobSpec::default();
        for (k, v) in opts {
            apply(&mut j, k, Some(v))?;
        }
        Ok(j)
    }

    #[test]
    fn bs_per_direction() {
        let j = job(&[("bs", "4k,64k")]).unwrap();
        assert_eq!(j.bs[0], BlockSize::Fixed(4096));
        assert_eq!(j.bs[1], BlockSize::Fixed(65536));
        let j = job(&[("bs", ",8k")]).unwrap();
        assert_eq!(j.bs[0], BlockSize::Fixed(4096));
        assert_eq!(j.bs[1], BlockSize::Fixed(8192));
    }

    #[test]
    fn bssplit_blanks_take_the_rest() {
        let j = job(&[("bssplit", "4k/50:8k/:16k/")]).unwrap();
        assert_eq!(
            j.bs[0],
            BlockSize::Split(vec![(4096, 50), (8192, 25), (16384, 25)])
        );
        assert!(job(&[("bssplit", "4k/50:8k/40")]).is_err());
    }

    #[test]
    fn unknown_option_suggests() {
        let e = job(&[("iodepht", "4")]).unwrap_err();
        assert_eq!(e.option, "iodepht");
        assert!(
            e.problem.to_string().contains("did you mean 'iodepth'"),
            "{}",
            e.problem
        );
    }

    #[test]
    fn rate_single_value_caps_both() {
        let j = job(&[("rate_iops", "500")]).unwrap();
        assert_eq!(j.rate_iops, [Some(500), Some(500)]);
        let j = job(&[("rate", ",1m")]).unwrap();
        assert_eq!(j.rate, [None, Some(1 << 20)]);
    }

    #[test]
    fn pairs_build_a_validated_job() {
        let j = job_from_pairs([("rw", "randrw"), ("bs", "4k"), ("rwmixread", "75")]).unwrap();
        assert_eq!(j.name, "job");
        assert_eq!(j.read_percent(), 75);
        let e = job_from_pairs([("time_based", "1")]).unwrap_err();
        assert_eq!(e.option, "time_based");
    }

    #[test]
    fn distributions() {
        let j = job(&[("random_distribution", "zipf:1.2")]).unwrap();
        assert_eq!(j.random_distribution, Distribution::Zipf(1.2));
        assert!(job(&[("random_distribution", "zoned:50/5")]).is_err());
    }
}
