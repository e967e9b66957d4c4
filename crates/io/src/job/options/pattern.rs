//! The pattern options ([`crate::job::spec::PatternOpts`]): `rw=` modifiers,
//! strided zones, alignment, I/O counts, file service and naming, layout.

use super::{OptionDef, OptionError, Problem, MAX_NRFILES};
use crate::files::MAX_FILE_END;
use crate::job::spec::{
    Dir, Distribution, Fallocate, FileService, JobSpec, Pattern, Sequencer, UnifiedReporting,
    Verify, ZoneMode,
};
use crate::job::values::{
    parse_block, parse_bool, parse_count, parse_count_in, parse_distribution,
    parse_distribution_param, parse_percent, set_per_dir, ValueError,
};
use crate::units::{parse_size, parse_size_spec, SizeSpec};

/// The pattern options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[
    opt!(
        "rw_sequencer",
        [],
        false,
        "sequential or identical: the I/Os between random ones of rw=randread:N",
        |j, v| {
            j.pattern.sequencer = match v {
                "sequential" => Sequencer::Sequential,
                "identical" => Sequencer::Identical,
                _ => return Err(expected(v, "sequential or identical")),
            };
            Ok(())
        }
    ),
    opt!(
        "zonemode",
        [],
        false,
        "none or strided (zonesize of every zonerange, then skip zoneskip)",
        |j, v| {
            j.pattern.zonemode = match v {
                "none" => ZoneMode::None,
                "strided" => ZoneMode::Strided,
                "zbd" => return Err(expected(
                    v,
                    "none or strided (zbd needs zoned block devices, which plumb does not drive)",
                )),
                _ => return Err(expected(v, "none or strided")),
            };
            Ok(())
        }
    ),
    opt!(
        "zonesize",
        [],
        false,
        "bytes of I/O in each zone (zonemode=strided)",
        |j, v| {
            j.pattern.zone_size = offset_bytes(v)?;
            Ok(())
        }
    ),
    opt!(
        "zonerange",
        [],
        false,
        "length of each zone (default zonesize)",
        |j, v| {
            j.pattern.zone_range = offset_bytes(v)?;
            Ok(())
        }
    ),
    opt!(
        "zoneskip",
        [],
        false,
        "bytes skipped after each zone",
        |j, v| {
            j.pattern.zone_skip = offset_bytes(v)?;
            Ok(())
        }
    ),
    opt!(
        "blockalign",
        ["ba"],
        false,
        "alignment of random offsets, or read,write alignments",
        |j, v| { set_per_dir(&mut j.pattern.blockalign, v, |s| parse_block(s).map(Some)) }
    ),
    opt!(
        "bs_unaligned",
        ["bs_unaligned"],
        true,
        "bsrange sizes need not be multiples of the smallest",
        |j, v| {
            j.pattern.bs_unaligned = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "offset_increment",
        [],
        false,
        "clone N starts N × this after offset (size or percent)",
        |j, v| {
            let spec = parse_size_spec(v)?;
            if let SizeSpec::Bytes(b) = spec {
                offset_bytes(&b.to_string())?;
            }
            j.pattern.offset_increment = spec;
            Ok(())
        }
    ),
    opt!(
        "number_ios",
        [],
        false,
        "stop after this many I/Os",
        |j, v| {
            j.pattern.number_ios = parse_count(v, 0)?;
            Ok(())
        }
    ),
    opt!(
        "percentage_random",
        [],
        false,
        "percent of random I/Os in random patterns, or read,write percents",
        |j, v| { set_per_dir(&mut j.pattern.percentage_random, v, parse_percent) }
    ),
    opt!(
        "file_service_type",
        [],
        false,
        "roundrobin, sequential, random[:N]; zipf:θ, pareto:h, normal:σ",
        |j, v| {
            let (service, nr) = parse_file_service(v)?;
            j.pattern.file_service = service;
            j.pattern.file_service_nr = nr;
            Ok(())
        }
    ),
    opt!(
        "filename_format",
        [],
        false,
        "file names from $jobname, $jobnum, $filenum, $clientuid",
        |j, v| {
            j.pattern.filename_format = Some(v.to_string());
            Ok(())
        }
    ),
    opt!(
        "openfiles",
        ["open_files"],
        false,
        "at most this many files open at once",
        |j, v| {
            j.pattern.openfiles = parse_count_in(v, 1, MAX_NRFILES)?;
            Ok(())
        }
    ),
    opt!(
        "create_on_open",
        [],
        true,
        "create files when the job opens them, not before the run",
        |j, v| {
            j.pattern.create_on_open = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "fallocate",
        [],
        false,
        "none, native, posix, keep, truncate, 0, 1: how files a job only writes are allocated",
        |j, v| {
            j.pattern.fallocate = match v {
                "none" | "0" => Fallocate::None,
                "native" | "posix" | "1" => Fallocate::Posix,
                "keep" => Fallocate::Keep,
                "truncate" => Fallocate::Truncate,
                _ => {
                    return Err(expected(
                        v,
                        "one of none, native, posix, keep, truncate, 0, 1",
                    ))
                }
            };
            Ok(())
        }
    ),
    opt!(
        "unified_rw_reporting",
        [],
        false,
        "none, mixed or both: report reads and writes summed as 'mixed'",
        |j, v| {
            j.pattern.unified_rw_reporting = match v {
                "none" | "0" => UnifiedReporting::None,
                "mixed" | "1" => UnifiedReporting::Mixed,
                "both" => UnifiedReporting::Both,
                _ => return Err(expected(v, "none, mixed, both, 0 or 1")),
            };
            Ok(())
        }
    ),
];

fn expected(value: &str, what: &str) -> ValueError {
    ValueError::Expected {
        value: value.into(),
        expected: what.into(),
    }
}

/// A byte count that can serve as an offset or a length in a file: at most
/// [`MAX_FILE_END`].
fn offset_bytes(v: &str) -> Result<u64, ValueError> {
    let b = parse_size(v)?;
    if b > MAX_FILE_END {
        return Err(ValueError::OutOfRange {
            value: b,
            min: 0,
            max: MAX_FILE_END,
        });
    }
    Ok(b)
}

/// `rw=`/`readwrite=`: the pattern, with fio's modifier after a `:` — for
/// a sequential pattern the bytes added after each I/O (`read:-8k`
/// backwards, `write:112k` with holes), for a random one the number of
/// I/Os per random offset (`randread:8`).
pub(super) fn set_rw(job: &mut JobSpec, v: &str) -> Result<(), ValueError> {
    let (name, modifier) = match v.split_once(':') {
        Some((n, m)) => (n, Some(m.trim())),
        None => (v, None),
    };
    let rw = Pattern::parse(name.trim()).ok_or_else(|| ValueError::Pattern(v.into()))?;
    let (mut seq_add, mut seq_nr) = (0i64, 1u32);
    match modifier {
        None => {}
        Some(m) if rw.is_random() => {
            seq_nr = parse_count_in(m, 1, u32::MAX as u64)?;
        }
        Some(m) => {
            let (negative, bytes) = match m.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, m.strip_prefix('+').unwrap_or(m)),
            };
            // MAX_FILE_END is i64::MAX: the cast is exact.
            let add = offset_bytes(bytes)? as i64;
            seq_add = if negative { -add } else { add };
        }
    }
    job.rw = rw;
    job.pattern.seq_add = seq_add;
    job.pattern.seq_nr = seq_nr;
    Ok(())
}

/// `random_distribution`: the distribution, and for zipf, pareto and
/// normal fio's optional base after a second `:` (`zipf:1.2:0.25`): where
/// in the region, as a fraction in [0, 1], the hottest block lands.
pub(super) fn set_random_distribution(job: &mut JobSpec, v: &str) -> Result<(), ValueError> {
    let skewed = ["zipf:", "pareto:", "normal:", "gauss:"]
        .iter()
        .any(|k| v.starts_with(k));
    let (dist, base) = match v.rsplit_once(':') {
        Some((head, base)) if skewed && head.contains(':') => (head, Some(base)),
        _ => (v, None),
    };
    job.random_distribution = parse_distribution(dist)?;
    job.pattern.random_base = match base {
        None => None,
        Some(b) => match b.trim().parse::<f64>() {
            Ok(x) if (0.0..=1.0).contains(&x) => Some(x),
            _ => {
                return Err(expected(
                    v,
                    "a base between 0 and 1 after the parameter, e.g. zipf:1.2:0.25",
                ))
            }
        },
    };
    Ok(())
}

/// Most I/Os on one file before switching (`file_service_type=...:N`).
const MAX_FILE_SERVICE_NR: u64 = 1 << 30;

/// `file_service_type`: a kind, and after a `:` the I/Os per switch
/// (uniform kinds) or the distribution's parameter (zipf, pareto, normal).
fn parse_file_service(v: &str) -> Result<(FileService, u32), ValueError> {
    let (kind, param) = match v.split_once(':') {
        Some((k, p)) => (k, Some(p)),
        None => (v, None),
    };
    let nr = |p: Option<&str>| p.map_or(Ok(1), |p| parse_count_in(p, 1, MAX_FILE_SERVICE_NR));
    Ok(match kind {
        "roundrobin" => (FileService::RoundRobin, nr(param)?),
        "sequential" => (FileService::Sequential, nr(param)?),
        "random" => (FileService::Random, nr(param)?),
        "zipf" | "pareto" | "normal" | "gauss" => {
            // fio's defaults when no parameter is given.
            let default = match kind {
                "zipf" => "1.1",
                "pareto" => "0.2",
                // fio's gauss without a σ; plumb's normal needs one.
                _ => "25",
            };
            let d = match parse_distribution_param(kind, param.unwrap_or(default), v)? {
                Distribution::Zipf(t) => FileService::Zipf(t),
                Distribution::Pareto(h) => FileService::Pareto(h),
                Distribution::Normal(s) => FileService::Normal(s),
                _ => return Err(expected(v, "zipf:θ, pareto:h or normal:σ")),
            };
            (d, 1)
        }
        _ => {
            return Err(expected(
                v,
                "roundrobin, sequential, random[:N], zipf:θ, pareto:h or normal:σ",
            ))
        }
    })
}

/// Checks the pattern options against each other and the rest of the job.
pub(super) fn validate(job: &JobSpec) -> Result<(), OptionError> {
    let err = |option: &str, e: ValueError| OptionError {
        option: option.to_string(),
        problem: Problem::Value(e),
    };
    let p = &job.pattern;
    // fio 3.33: zones are strided only when zonemode says so.
    if p.zonemode == ZoneMode::None && p.zone_size > 0 {
        return Err(err(
            "zonesize",
            expected(
                &p.zone_size.to_string(),
                "usable with zonemode=none (give zonemode=strided, as fio 3.33 asks)",
            ),
        ));
    }
    // plumb's verify keeps one mark per block: writes that overlap
    // blocks (offsets off the block size) cannot be checked.
    if job.verify != Verify::None {
        for d in [Dir::Read, Dir::Write] {
            let (Some(ba), true) = (p.blockalign[d.index()], job.rw.does(d)) else {
                continue;
            };
            let bs = job.bs[d.index()].min();
            if ba % bs != 0 {
                return Err(err(
                    "blockalign",
                    expected(
                        &ba.to_string(),
                        &format!("a multiple of the block size ({bs}) with verify"),
                    ),
                ));
            }
        }
    }
    if p.zonemode == ZoneMode::Strided && p.zone_size == 0 {
        return Err(err(
            "zonemode",
            expected("strided", "usable without a zonesize"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::options::apply;

    fn job(opts: &[(&str, &str)]) -> Result<JobSpec, OptionError> {
        let mut j = JobSpec {
            name: "t".into(),
            ..JobSpec::default()
        };
        for (k, v) in opts {
            apply(&mut j, k, Some(v))?;
        }
        super::super::validate(&j)?;
        Ok(j)
    }

    #[test]
    fn rw_modifiers() {
        let j = job(&[("rw", "read:-8k")]).unwrap();
        assert_eq!((j.rw, j.pattern.seq_add), (Pattern::Read, -8192));
        let j = job(&[("rw", "write:112k")]).unwrap();
        assert_eq!(j.pattern.seq_add, 112 * 1024);
        let j = job(&[("rw", "randread:8")]).unwrap();
        assert_eq!((j.rw, j.pattern.seq_nr), (Pattern::RandRead, 8));
        let j = job(&[("rw", "randread:8"), ("rw", "read")]).unwrap();
        assert_eq!((j.pattern.seq_nr, j.pattern.seq_add), (1, 0));
        assert!(job(&[("rw", "randread:0")]).is_err());
        assert!(job(&[("rw", "read:-9999999999999999999999")]).is_err());
        assert!(job(&[("rw", "randread:x")]).is_err());
    }

    #[test]
    fn zones_need_a_size_and_zbd_is_refused() {
        let e = job(&[("zonemode", "zbd")]).unwrap_err();
        assert_eq!(e.option, "zonemode");
        assert!(e.to_string().contains("zbd"), "{e}");
        assert!(job(&[("zonemode", "strided")]).is_err());
        assert!(job(&[("zonemode", "none"), ("zonesize", "1m")]).is_err());
        assert!(job(&[("zonesize", "1m")]).is_err());
        let j = job(&[
            ("zonemode", "strided"),
            ("zonesize", "1m"),
            ("zoneskip", "2m"),
        ])
        .unwrap();
        let z = j.pattern.zones(1).unwrap();
        assert_eq!((z.size, z.range, z.skip), (1 << 20, 1 << 20, 2 << 20));
        assert_eq!(j.pattern.zones(2), None);
    }

    #[test]
    fn file_service_forms() {
        let j = job(&[("file_service_type", "random:8")]).unwrap();
        assert_eq!(
            (j.pattern.file_service, j.pattern.file_service_nr),
            (FileService::Random, 8)
        );
        let j = job(&[("file_service_type", "zipf:1.2")]).unwrap();
        assert_eq!(j.pattern.file_service, FileService::Zipf(1.2));
        let j = job(&[("file_service_type", "gauss")]).unwrap();
        assert!(matches!(j.pattern.file_service, FileService::Normal(_)));
        assert!(job(&[("file_service_type", "random:0")]).is_err());
        assert!(job(&[("file_service_type", "lottery")]).is_err());
    }

    #[test]
    fn verify_needs_whole_block_alignment() {
        let e = job(&[("rw", "randwrite"), ("verify", "crc32c"), ("ba", "512")]).unwrap_err();
        assert_eq!(e.option, "blockalign");
        assert!(job(&[("rw", "randwrite"), ("verify", "crc32c"), ("ba", "8k")]).is_ok());
    }

    #[test]
    fn distribution_base() {
        let j = job(&[("random_distribution", "zipf:1.2:0.25")]).unwrap();
        assert_eq!(j.random_distribution, Distribution::Zipf(1.2));
        assert_eq!(j.pattern.random_base, Some(0.25));
        let j = job(&[("random_distribution", "zipf:1.2")]).unwrap();
        assert_eq!(j.pattern.random_base, None);
        assert!(job(&[("random_distribution", "normal:10:1.5")]).is_err());
        assert!(job(&[("random_distribution", "zipf:1.2:nan")]).is_err());
        assert!(job(&[("random_distribution", "zoned:50/50:50/50:0.5")]).is_err());
    }

    #[test]
    fn per_direction_values() {
        let j = job(&[("ba", "4k,8k"), ("percentage_random", "50,20")]).unwrap();
        assert_eq!(j.pattern.blockalign, [Some(4096), Some(8192)]);
        assert_eq!(j.pattern.percentage_random, [50, 20]);
        assert!(job(&[("percentage_random", "101")]).is_err());
    }
}
