//! The table itself: every option plumb understands, in fio's names, each
//! with its aliases, help line and setter.

use super::{OptionDef, MAX_IODEPTH, MAX_JOB_DURATION, MAX_NRFILES, MAX_NUMJOBS};
use crate::engine;
use crate::job::spec::{BlockSize, Verify};
use crate::job::values::{
    parse_block, parse_bool, parse_bsrange, parse_bssplit, parse_count, parse_count_in,
    parse_percent, set_opt_per_dir, set_per_dir, ValueError,
};
use crate::units::{parse_duration_at_most, parse_size, parse_size_spec, SizeSpec};

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
        "read, write, randread, randwrite, rw, randrw; read:-8k (offset step), randread:8 (I/Os per random offset)",
        super::pattern::set_rw
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
        "io_uring, libaio, psync, sync, vsync, pvsync, pvsync2, posixaio, mmap, null, filecreate, filestat, filedelete, ftruncate, falloc, cpuio, net",
        |j, v| {
            if engine::find(v).is_none() {
                return Err(ValueError::Engine {
                    name: v.into(),
                    known: engine::names().join(", "),
                });
            }
            j.ioengine = v.to_string();
            // cpuio does no I/O: without a size it burns until its runtime
            // ends (or a stop), as fio's.
            if v == "cpuio" && j.size.is_none() && j.filesize.is_none() {
                j.size = Some(SizeSpec::Bytes(crate::files::MAX_FILE_END));
            }
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
        "random, zipf:θ[:base], pareto:h[:base], normal:σ[:base], zoned:60/10:40/90, zoned_abs:60/1g:40/3g",
        super::pattern::set_random_distribution
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
                    return Err(ValueError::ZeroRate);
                }
                Ok(b)
            })
        }
    ),
    opt!(
        "thread",
        ["threads"],
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
            other => return Err(ValueError::Verify(other.into())),
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
