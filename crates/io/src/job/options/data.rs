//! The data options ([`crate::job::spec::DataOpts`]).

use super::{OptionDef, OptionError, Problem};
use crate::buffer::{huge_pages, IoMem, MAX_MEM_ALIGN};
use crate::data::parse_pattern;
use crate::job::spec::{DedupeMode, JobSpec};
use crate::job::values::{parse_bool, parse_count_in, parse_percent, ValueError};

/// The data options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[
    opt!(
        "buffer_pattern",
        [],
        false,
        "fill write buffers with a pattern: 0xHEX, decimal, \"text\", 'file', written back to back",
        |j, v| {
            let bytes = parse_pattern(v).map_err(|e| ValueError::Expected {
                value: v.into(),
                expected: format!("a pattern ({e})"),
            })?;
            j.data.buffer_pattern = Some(bytes.into());
            // As fio: a pattern is written as it is.
            j.data.scramble_buffers = false;
            j.data.zero_buffers = false;
            Ok(())
        }
    ),
    opt!(
        "zero_buffers",
        [],
        true,
        "fill write buffers with zeros",
        |j, v| {
            j.data.zero_buffers = parse_bool(v)?;
            j.data.zero_given = true;
            Ok(())
        }
    ),
    opt!(
        "refill_buffers",
        [],
        true,
        "new buffer content before every write",
        |j, v| {
            j.data.refill_buffers = Some(parse_bool(v)?);
            Ok(())
        }
    ),
    opt!(
        "scramble_buffers",
        [],
        true,
        "lightly change every write so blocks do not dedupe (default 1)",
        |j, v| {
            j.data.scramble_buffers = parse_bool(v)?;
            j.data.scramble_given = true;
            Ok(())
        }
    ),
    opt!(
        "buffer_compress_percentage",
        [],
        false,
        "write buffers that compress by this percentage",
        |j, v| {
            j.data.compress_percentage = parse_percent(v)?;
            Ok(())
        }
    ),
    opt!(
        "buffer_compress_chunk",
        [],
        false,
        "bytes of each random-then-fixed chunk (0: the block; default 512)",
        |j, v| {
            j.data.compress_chunk = u64::from(parse_count_in(v, 0, 1 << 30)?);
            Ok(())
        }
    ),
    opt!(
        "dedupe_percentage",
        [],
        false,
        "percentage of writes that repeat an earlier buffer",
        |j, v| {
            j.data.dedupe_percentage = parse_percent(v)?;
            Ok(())
        }
    ),
    opt!(
        "dedupe_mode",
        [],
        false,
        "repeat (the last unique buffer) or working_set",
        |j, v| {
            j.data.dedupe_mode = match v {
                "repeat" => DedupeMode::Repeat,
                "working_set" => DedupeMode::WorkingSet,
                _ => {
                    return Err(ValueError::Expected {
                        value: v.into(),
                        expected: "repeat or working_set".into(),
                    })
                }
            };
            Ok(())
        }
    ),
    opt!(
        "dedupe_working_set_percentage",
        [],
        false,
        "dedupe working set, in percent of the job's size (default 5)",
        |j, v| {
            j.data.dedupe_working_set_percentage = parse_percent(v)?;
            Ok(())
        }
    ),
    opt!(
        "dedupe_global",
        [],
        true,
        "share the dedupe working set between the jobs that set this",
        |j, v| {
            j.data.dedupe_global = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "mem",
        ["iomem"],
        false,
        "I/O buffer memory: malloc, shm, shmhuge, mmap, mmaphuge, mmapshared",
        |j, v| {
            let (kind, file) = match v.split_once(':') {
                Some((k, f)) => (k, Some(f)),
                None => (v, None),
            };
            let expected = || ValueError::Expected {
                value: v.into(),
                expected: format!(
                    "one of {} (anonymous memory only: plumb maps no file)",
                    IoMem::NAMES.join(", ")
                ),
            };
            if kind == "cudamalloc" {
                return Err(ValueError::Expected {
                    value: v.into(),
                    expected: "available: cudamalloc is GPU memory for fio's rdma engine, which plumb does not have".into(),
                });
            }
            if file.is_some() {
                return Err(expected());
            }
            j.data.iomem = IoMem::parse(kind).ok_or_else(expected)?;
            Ok(())
        }
    ),
    opt!(
        "mem_align",
        ["iomem_align"],
        false,
        "start the I/O buffers this many bytes past a page boundary",
        |j, v| {
            j.data.mem_align = u64::from(parse_count_in(v, 0, MAX_MEM_ALIGN)?);
            Ok(())
        }
    ),
];

/// Checks the data options against each other and the rest of the job,
/// as fio's `fixup_options` does, and that the huge pages an `iomem` kind
/// needs exist at all.
pub(super) fn validate(job: &JobSpec) -> Result<(), OptionError> {
    let d = &job.data;
    let err = |option: &str, value: String, expected: &str| OptionError {
        option: option.into(),
        problem: Problem::Value(ValueError::Expected {
            value,
            expected: expected.into(),
        }),
    };
    if d.dedupe_percentage > 0 && d.dedupe_mode == DedupeMode::WorkingSet {
        if job.size.is_none() {
            return Err(err(
                "dedupe_mode",
                "working_set".into(),
                "usable without a size (the working set is a share of it: give size=)",
            ));
        }
        if job.nrfiles != 1 {
            return Err(err(
                "dedupe_mode",
                "working_set".into(),
                "usable with more than one file per job (nrfiles=1)",
            ));
        }
        if d.dedupe_percentage + d.dedupe_working_set_percentage > 100 {
            return Err(err(
                "dedupe_working_set_percentage",
                d.dedupe_working_set_percentage.to_string(),
                "reachable with dedupe_percentage: the two add up to more than 100",
            ));
        }
    }
    if d.iomem.needs_huge_pages() {
        let (total, _, _) = huge_pages();
        if total == 0 {
            return Err(err(
                "iomem",
                d.iomem.name().into(),
                "usable here: no huge pages are reserved (/proc/sys/vm/nr_hugepages is 0; reserve some, or use iomem=malloc)",
            ));
        }
    }
    Ok(())
}
