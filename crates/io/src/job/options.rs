//! The option table: fio's option names as data, each with help and a setter.
//!
//! An option not in this table is an error with a "did you mean"; options that
//! only tune fio's own bookkeeping are accepted with no effect (they still
//! appear among the options given).

use super::spec::{BlockSize, Dir, JobSpec, Pattern, Verify};
use super::values::{
    parse_block, parse_bool, parse_bsrange, parse_bssplit, parse_count, parse_count_in,
    parse_distribution, parse_percent, set_opt_per_dir, set_per_dir,
};
use crate::engine;
use crate::units::{format_bytes_binary, parse_duration_at_most, parse_size, parse_size_spec};
use std::time::Duration;

/// A bad option or value, naming the option.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("option '{option}': {message}")]
pub struct OptionError {
    /// The option as the user wrote it.
    pub option: String,
    /// What is wrong.
    pub message: String,
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

type Setter = fn(&mut JobSpec, &str) -> Result<(), String>;

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

macro_rules! opt {
    ($name:expr, [$($alias:expr),*], $flag:expr, $help:expr, $setter:expr) => {
        OptionDef { name: $name, aliases: &[$($alias),*], flag: $flag, help: $help, setter: $setter }
    };
}

/// Every option plumb understands, in fio's names.
pub static OPTIONS: &[OptionDef] = &[
    opt!(
        "name",
        [],
        false,
        "job name; also the base of file names",
        |j, v| {
            j.name = v.to_string();
            Ok(())
        }
    ),
    opt!(
        "filename",
        [],
        false,
        "file(s) to use, ':'-separated",
        |j, v| {
            j.filename = Some(v.to_string());
            Ok(())
        }
    ),
    opt!(
        "directory",
        [],
        false,
        "directory for the job's files",
        |j, v| {
            j.directory = Some(v.to_string());
            Ok(())
        }
    ),
    opt!(
        "size",
        [],
        false,
        "total size of the job's region (e.g. 4G or 50%)",
        |j, v| {
            j.size = Some(parse_size_spec(v)?);
            Ok(())
        }
    ),
    opt!("filesize", [], false, "size of each file", |j, v| {
        j.filesize = Some(parse_size_spec(v)?);
        Ok(())
    }),
    opt!(
        "io_size",
        ["io_limit"],
        false,
        "bytes to transfer per loop (default: size)",
        |j, v| {
            j.io_size = Some(parse_size_spec(v)?);
            Ok(())
        }
    ),
    opt!(
        "offset",
        [],
        false,
        "start of the region in each file",
        |j, v| {
            j.offset = parse_size_spec(v)?;
            Ok(())
        }
    ),
    opt!("nrfiles", [], false, "number of files per job", |j, v| {
        j.nrfiles = parse_count_in(v, 1, MAX_NRFILES)?;
        Ok(())
    }),
    opt!(
        "rw",
        ["readwrite"],
        false,
        "read, write, randread, randwrite, rw, randrw",
        |j, v| {
            // fio allows a suffix like "randread:8" (sequence of N); plumb does not.
            j.rw = Pattern::parse(v).ok_or_else(|| {
            format!("'{v}' is not a pattern (read, write, randread, randwrite, rw, readwrite, randrw)")
        })?;
            Ok(())
        }
    ),
    opt!(
        "rwmixread",
        [],
        false,
        "percent of reads in mixed jobs",
        |j, v| {
            j.rwmixread = parse_percent(v)?;
            Ok(())
        }
    ),
    opt!(
        "rwmixwrite",
        [],
        false,
        "percent of writes in mixed jobs",
        |j, v| {
            j.rwmixread = 100 - parse_percent(v)?;
            Ok(())
        }
    ),
    opt!(
        "bs",
        ["blocksize"],
        false,
        "block size, or read,write sizes (4k or 4k,64k)",
        |j, v| {
            set_per_dir(&mut j.bs, v, |s| {
                let b = parse_block(s)?;
                Ok(BlockSize::Fixed(b))
            })
        }
    ),
    opt!(
        "bsrange",
        ["blocksize_range"],
        false,
        "block size range lo-hi, per direction",
        |j, v| { set_per_dir(&mut j.bs, v, parse_bsrange) }
    ),
    opt!(
        "bssplit",
        [],
        false,
        "weighted block sizes: 4k/50:64k/50, per direction",
        |j, v| { set_per_dir(&mut j.bs, v, parse_bssplit) }
    ),
    opt!(
        "ioengine",
        [],
        false,
        "io_uring, libaio, psync, sync, null",
        |j, v| {
            if engine::find(v).is_none() {
                return Err(format!(
                    "engine '{v}' is not supported (plumb has: {})",
                    engine::names().join(", ")
                ));
            }
            j.ioengine = v.to_string();
            Ok(())
        }
    ),
    opt!(
        "iodepth",
        [],
        false,
        "I/Os in flight (async engines)",
        |j, v| {
            j.iodepth = parse_count_in(v, 1, MAX_IODEPTH)?;
            Ok(())
        }
    ),
    opt!(
        "iodepth_batch_submit",
        ["iodepth_batch"],
        false,
        "submit after this many queued I/Os",
        |j, v| {
            j.iodepth_batch_submit = parse_count_in(v, 0, MAX_IODEPTH)?;
            Ok(())
        }
    ),
    opt!(
        "direct",
        [],
        true,
        "use O_DIRECT (bypass the page cache)",
        |j, v| {
            j.direct = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "buffered",
        [],
        true,
        "use the page cache (the opposite of direct)",
        |j, v| {
            j.direct = !parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("numjobs", [], false, "clones of this job", |j, v| {
        j.numjobs = parse_count_in(v, 1, MAX_NUMJOBS)?;
        Ok(())
    }),
    opt!(
        "group_reporting",
        [],
        true,
        "report a group's jobs as one",
        |j, v| {
            j.group_reporting = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "runtime",
        ["timeout"],
        false,
        "stop after this long (10, 10s, 2m)",
        |j, v| {
            let d = parse_duration_at_most(v, MAX_JOB_DURATION)?;
            j.runtime = if d.is_zero() { None } else { Some(d) };
            Ok(())
        }
    ),
    opt!(
        "time_based",
        [],
        true,
        "run for the whole runtime, looping over the region",
        |j, v| {
            j.time_based = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "ramp_time",
        [],
        false,
        "run this long before statistics start",
        |j, v| {
            j.ramp_time = parse_duration_at_most(v, MAX_JOB_DURATION)?;
            Ok(())
        }
    ),
    opt!(
        "loops",
        [],
        false,
        "repeat the job this many times",
        |j, v| {
            j.loops = parse_count_in(v, 1, u32::MAX as u64)?;
            Ok(())
        }
    ),
    opt!("fsync", [], false, "fsync after every N writes", |j, v| {
        j.fsync = parse_count_in(v, 0, u32::MAX as u64)?;
        Ok(())
    }),
    opt!(
        "fdatasync",
        [],
        false,
        "fdatasync after every N writes",
        |j, v| {
            j.fdatasync = parse_count_in(v, 0, u32::MAX as u64)?;
            Ok(())
        }
    ),
    opt!(
        "end_fsync",
        [],
        true,
        "fsync the files when the job ends",
        |j, v| {
            j.end_fsync = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "random_distribution",
        [],
        false,
        "random, zipf:θ, pareto:h, normal:σ",
        |j, v| {
            j.random_distribution = parse_distribution(v)?;
            Ok(())
        }
    ),
    opt!(
        "randrepeat",
        [],
        true,
        "same random sequence every run",
        |j, v| {
            j.randrepeat = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "randseed",
        [],
        false,
        "seed of the random generators",
        |j, v| {
            j.randseed = parse_count(v, 0)?;
            Ok(())
        }
    ),
    opt!(
        "norandommap",
        [],
        true,
        "random offsets may repeat before all blocks are done",
        |j, v| {
            j.norandommap = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "rate_iops",
        [],
        false,
        "IOPS cap, or read,write caps",
        |j, v| { set_opt_per_dir(&mut j.rate_iops, v, |s| parse_count(s, 1)) }
    ),
    opt!(
        "rate",
        [],
        false,
        "bandwidth cap in bytes/s, or read,write caps",
        |j, v| {
            set_opt_per_dir(&mut j.rate, v, |s| {
                let b = parse_size(s)?;
                if b == 0 {
                    return Err("a rate must be above 0".into());
                }
                Ok(b)
            })
        }
    ),
    opt!(
        "thread",
        [],
        true,
        "run jobs as threads (plumb always does)",
        |j, v| {
            j.thread = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "unlink",
        [],
        true,
        "delete the job's files when it ends",
        |j, v| {
            j.unlink = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("verify", [], false, "crc32c (or 0/none)", |j, v| {
        j.verify = match v {
            "crc32c" | "crc32c-intel" => Verify::Crc32c,
            "0" | "none" => Verify::None,
            other => {
                return Err(format!(
                    "verify method '{other}' is not supported (plumb has: crc32c)"
                ))
            }
        };
        Ok(())
    }),
    opt!(
        "do_verify",
        [],
        true,
        "read back and verify after writing",
        |j, v| {
            j.do_verify = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "stonewall",
        ["wait_for_previous"],
        true,
        "wait for earlier jobs; start a new group",
        |j, v| {
            j.stonewall = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "new_group",
        [],
        true,
        "start a new reporting group",
        |j, v| {
            j.new_group = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "invalidate",
        [],
        true,
        "drop the files' page cache before the job",
        |j, v| {
            j.invalidate = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "write_iolog",
        [],
        false,
        "record every I/O issued to FILE (fio iolog v2)",
        |j, v| {
            j.write_iolog = Some(v.to_string());
            Ok(())
        }
    ),
    opt!(
        "create_only",
        [],
        true,
        "lay out the files and stop",
        |j, v| {
            j.create_only = parse_bool(v)?;
            Ok(())
        }
    ),
];

/// Finds an option by name or alias.
pub fn find_option(name: &str) -> Option<&'static OptionDef> {
    OPTIONS
        .iter()
        .find(|o| o.name == name || o.aliases.contains(&name))
}

/// True when `name` is a known option (supported or bookkeeping-only).
pub fn is_known(name: &str) -> bool {
    find_option(name).is_some() || BOOKKEEPING_ONLY.contains(&name)
}

/// The known option closest to `name`, for "did you mean".
pub fn suggest(name: &str) -> Option<&'static str> {
    OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .chain(BOOKKEEPING_ONLY.iter().copied())
        .map(|cand| (strsim::jaro_winkler(name, cand), cand))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// Applies one `name[=value]` option to a job.
pub fn apply(job: &mut JobSpec, name: &str, value: Option<&str>) -> Result<(), OptionError> {
    let err = |message: String| OptionError {
        option: name.to_string(),
        message,
    };
    if BOOKKEEPING_ONLY.contains(&name) {
        job.given
            .push((name.to_string(), value.unwrap_or("").to_string()));
        return Ok(());
    }
    let Some(def) = find_option(name) else {
        let hint = suggest(name)
            .map(|s| format!("; did you mean '{s}'?"))
            .unwrap_or_default();
        return Err(err(format!("plumb does not support this option{hint}")));
    };
    let value = match value {
        Some(v) => v.trim(),
        None if def.flag => "1",
        None => return Err(err("needs a value".into())),
    };
    if value.is_empty() && !def.flag {
        return Err(err("needs a value".into()));
    }
    (def.setter)(job, if value.is_empty() { "1" } else { value }).map_err(err)?;
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
    let err = |option: &str, message: String| OptionError {
        option: option.to_string(),
        message,
    };
    if job.name.is_empty() {
        return Err(err("name", "every job needs a name".into()));
    }
    if job.verify != Verify::None {
        for d in Dir::BOTH {
            if job.rw.does(d) && !matches!(job.bs[d.index()], BlockSize::Fixed(_)) {
                return Err(err(
                    "verify",
                    "plumb verifies fixed block sizes only (drop bsrange/bssplit)".into(),
                ));
            }
        }
        if job.rw.is_mixed() {
            return Err(err(
                "verify",
                "plumb verifies read-only or write-only jobs (not rw/randrw)".into(),
            ));
        }
    }
    if job.time_based && job.runtime.is_none() {
        return Err(err("time_based", "needs a runtime".into()));
    }
    if job.fsync > 0 && job.fdatasync > 0 {
        return Err(err("fdatasync", "give fsync or fdatasync, not both".into()));
    }
    let buffers = job.buffer_bytes_per_clone();
    if buffers > MAX_BUFFER_BYTES_PER_CLONE {
        return Err(err(
            "iodepth",
            format!(
                "iodepth {} × block size {} needs {} of I/O buffers per job, above the {} limit",
                job.iodepth,
                format_bytes_binary(job.max_bs() as f64),
                format_bytes_binary(buffers as f64),
                format_bytes_binary(MAX_BUFFER_BYTES_PER_CLONE as f64)
            ),
        ));
    }
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
            e.message.contains("did you mean 'iodepth'"),
            "{}",
            e.message
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
