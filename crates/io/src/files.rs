//! The files of a job: names, sizes and regions (fio's rules), the free-space
//! check, block-device detection and the layout with incompressible data.
//! Every operation on a file goes through the job's [`FileSpace`].

mod space;

pub use space::{FileSpace, Found, FsInfo, SpaceError};

use crate::job::spec::{Dir, Fallocate, JobSpec};
use crate::units::{format_bytes_binary, SizeSpec};
use crate::workload::{fill_random, stamp_block, Region};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The largest end a job's region may have: `off_t` is signed, so no file
/// (and no `pread`/`pwrite` offset) reaches past `i64::MAX`.
pub const MAX_FILE_END: u64 = i64::MAX as u64;

/// One file a job clone uses.
#[derive(Debug, Clone)]
pub struct FilePlan {
    /// Where the file is, within `space`.
    pub path: PathBuf,
    /// How the path is resolved and the file opened.
    pub space: FileSpace,
    /// The part the job works on.
    pub region: Region,
    /// True for block devices.
    pub is_device: bool,
    /// Size before the run (0 when missing).
    pub existing: u64,
}

impl FilePlan {
    /// The size the file must have for the job. [`plan_files`] keeps it at
    /// most [`MAX_FILE_END`]; a hand-made plan saturates instead of wrapping.
    pub fn needed_end(&self) -> u64 {
        self.region.start.saturating_add(self.region.len)
    }
}

/// A problem with a job's files, found before anything is written.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A size or name option cannot be resolved.
    #[error("job '{job}': option '{option}': {problem}")]
    Option {
        /// The job.
        job: String,
        /// The option at fault.
        option: &'static str,
        /// Why.
        problem: PlanProblem,
    },
    /// The files would not fit.
    #[error("not enough space in {dir}: the jobs need {needed} for their files but only {free} are free")]
    NoSpace {
        /// Directory of the files.
        dir: String,
        /// Bytes to lay out, formatted.
        needed: String,
        /// Bytes free, formatted.
        free: String,
    },
    /// A write job on a block device without `--allow-device`.
    #[error("job '{job}' would write to block device {path}: pass --allow-device to allow it")]
    DeviceWrite {
        /// The job.
        job: String,
        /// The device.
        path: String,
    },
    /// A file an option names cannot be used: outside the run directory,
    /// a FIFO, a device in a scenario, or the OS refused to look at it.
    #[error("job '{job}': option '{option}': {source}")]
    Path {
        /// The job.
        job: String,
        /// The option the name came from.
        option: &'static str,
        /// What is wrong.
        source: SpaceError,
    },
    /// An error on a file while laying it out, opening or removing it.
    #[error(transparent)]
    Space(#[from] SpaceError),
    /// Ctrl-C or SIGTERM during layout.
    #[error("interrupted while laying out files")]
    Interrupted,
    /// The scenario's deadline passed during layout.
    #[error("the deadline passed while laying out files")]
    Deadline,
}

/// Why a job's files cannot be planned from its options.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanProblem {
    /// `filename` names no file.
    #[error("no file name given")]
    NoName,
    /// A size in percent of a file that does not exist.
    #[error("a percentage needs an existing file or device, and {} does not exist", first.display())]
    PercentOfNothing {
        /// The job's first file.
        first: PathBuf,
    },
    /// No size, and no file to take it from.
    #[error("no size given and {} does not exist", first.display())]
    NoSize {
        /// The job's first file.
        first: PathBuf,
    },
    /// Less per file than one block.
    #[error("{} per file is smaller than the block size ({})", format_bytes_binary(*per_file as f64), format_bytes_binary(*block as f64))]
    BelowBlock {
        /// Bytes per file.
        per_file: u64,
        /// The largest block size.
        block: u64,
    },
    /// A region ending past [`MAX_FILE_END`].
    #[error(
        "offset + size is beyond the largest file size ({offset} + {len} > {MAX_FILE_END} bytes)"
    )]
    BeyondLargest {
        /// Where the region starts.
        offset: u64,
        /// Its length.
        len: u64,
    },
}

/// Why a long file operation must stop early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Ctrl-C, SIGTERM or a caller's stop request.
    Interrupted,
    /// The scenario's deadline.
    Deadline,
}

/// The option a job's file names come from: `filename`, else `directory`,
/// else `name`.
fn naming_option(job: &JobSpec) -> &'static str {
    if job.filename.is_some() {
        "filename"
    } else if job.directory.is_some() {
        "directory"
    } else {
        "name"
    }
}

/// The paths of clone `clone`'s files, following fio's naming: the
/// `filename` list (`:`-separated, relative ones in `directory`), else
/// `filename_format` (default `$jobname.$jobnum.$filenum`) for each of
/// `nrfiles`.
fn file_paths(job: &JobSpec, clone: u32) -> Vec<PathBuf> {
    let dir = job.directory.as_deref().map(PathBuf::from);
    match &job.filename {
        Some(names) => names
            .split(':')
            .filter(|n| !n.is_empty())
            .map(|n| match (&dir, Path::new(n).is_absolute()) {
                (Some(d), false) => d.join(n),
                _ => PathBuf::from(n),
            })
            .collect(),
        None => (0..job.nrfiles)
            .map(|f| {
                let name = format_file_name(job, clone, f);
                dir.as_ref()
                    .map(|d| d.join(&name))
                    .unwrap_or_else(|| PathBuf::from(name))
            })
            .collect(),
    }
}

/// A file's name from `filename_format`: `$jobname`, `$jobnum` (the
/// clone), `$filenum` and `$clientuid` (empty: plumb runs no fio client)
/// replaced wherever they appear, in any case, as fio does.
fn format_file_name(job: &JobSpec, clone: u32, file: u32) -> String {
    let Some(format) = job.pattern.filename_format.as_deref() else {
        return format!("{}.{}.{}", job.name, clone, file);
    };
    let keys: [(&str, String); 4] = [
        ("$jobname", job.name.clone()),
        ("$jobnum", clone.to_string()),
        ("$filenum", file.to_string()),
        ("$clientuid", String::new()),
    ];
    let mut out = String::with_capacity(format.len());
    let mut rest = format;
    'scan: while !rest.is_empty() {
        if rest.starts_with('$') {
            for (key, value) in &keys {
                if rest
                    .get(..key.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(key))
                {
                    out.push_str(value);
                    rest = &rest[key.len()..];
                    continue 'scan;
                }
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The region every file of `job` works on: its offset and length, sizes
/// given as percentages resolved against the largest `existing` file;
/// `first` names the first file in messages.
fn plan_region(
    job: &JobSpec,
    clone: u32,
    count: u64,
    existing: u64,
    first: &Path,
) -> Result<Region, FileError> {
    let opt_err = |option: &'static str, problem: PlanProblem| FileError::Option {
        job: job.name.clone(),
        option,
        problem,
    };
    let resolve_pct = |spec: SizeSpec, option: &'static str| -> Result<u64, FileError> {
        match spec {
            SizeSpec::Percent(_) if existing == 0 => Err(opt_err(
                option,
                PlanProblem::PercentOfNothing {
                    first: first.to_path_buf(),
                },
            )),
            s => Ok(s.resolve(existing)),
        }
    };
    // Clone N starts N × offset_increment further (fio's get_start_offset);
    // past the largest file, the end check below names the offset.
    let increment = resolve_pct(job.pattern.offset_increment, "offset_increment")?;
    let offset = resolve_pct(job.offset, "offset")?
        .saturating_add(u64::from(clone).saturating_mul(increment));
    let per_file = match (job.filesize, job.size) {
        (Some(fs), _) => resolve_pct(fs, "filesize")?,
        (None, Some(size)) => resolve_pct(size, "size")? / count,
        (None, None) if existing > offset => existing - offset,
        (None, None) => {
            return Err(opt_err(
                "size",
                PlanProblem::NoSize {
                    first: first.to_path_buf(),
                },
            ));
        }
    };
    let min_bs = job.min_bs();
    let len = per_file / min_bs * min_bs;
    if len == 0 || len < job.max_bs() {
        return Err(opt_err(
            "size",
            PlanProblem::BelowBlock {
                per_file,
                block: job.max_bs(),
            },
        ));
    }
    match offset.checked_add(len) {
        Some(end) if end <= MAX_FILE_END => Ok(Region { start: offset, len }),
        _ => Err(opt_err(
            "offset",
            PlanProblem::BeyondLargest { offset, len },
        )),
    }
}

/// The files and regions of clone `clone` of `job`, following fio's naming;
/// every name is resolved in `space` (beneath the run directory in a scenario).
pub fn plan_files(
    job: &JobSpec,
    clone: u32,
    diskless: bool,
    space: &FileSpace,
) -> Result<Vec<FilePlan>, FileError> {
    let option = naming_option(job);
    let paths = file_paths(job, clone);
    let Some(first) = paths.first() else {
        return Err(FileError::Option {
            job: job.name.clone(),
            option: "filename",
            problem: PlanProblem::NoName,
        });
    };
    let mut existing = Vec::new();
    let mut devices = Vec::new();
    for p in &paths {
        let found = if diskless {
            None
        } else {
            space.probe(p).map_err(|source| FileError::Path {
                job: job.name.clone(),
                option,
                source,
            })?
        };
        existing.push(found.map_or(0, |f| f.size));
        devices.push(found.is_some_and(|f| f.is_device));
    }
    let largest = existing.iter().copied().max().unwrap_or(0);
    let region = plan_region(job, clone, paths.len() as u64, largest, first)?;
    Ok(paths
        .iter()
        .cloned()
        .zip(existing)
        .zip(devices)
        .map(|((path, existing), is_device)| FilePlan {
            path,
            space: space.clone(),
            region,
            is_device,
            existing,
        })
        .collect())
}

/// Refuses device writes without permission and layouts that would not fit.
pub fn check_plans(
    plans: &[(&JobSpec, Vec<FilePlan>)],
    allow_device: bool,
) -> Result<(), FileError> {
    let mut growth: BTreeMap<PathBuf, (FileSpace, u64, u64)> = BTreeMap::new();
    for (job, files) in plans {
        for f in files {
            if f.is_device {
                if job.rw.does(Dir::Write) && !allow_device {
                    return Err(FileError::DeviceWrite {
                        job: job.name.clone(),
                        path: f.path.display().to_string(),
                    });
                }
                continue;
            }
            let entry =
                growth
                    .entry(f.path.clone())
                    .or_insert((f.space.clone(), f.existing, f.existing));
            entry.2 = entry.2.max(f.needed_end());
        }
    }
    // Sum growth per filesystem, keyed by the device of the parent directory.
    let mut per_fs: BTreeMap<u64, (PathBuf, FsInfo, u64)> = BTreeMap::new();
    for (path, (space, existing, end)) in &growth {
        let fs = space.fs_of(path)?;
        let e = per_fs.entry(fs.dev).or_insert((parent_dir(path), fs, 0));
        e.2 = e.2.saturating_add(end.saturating_sub(*existing));
    }
    for (dir, fs, needed) in per_fs.values() {
        if *needed > fs.free {
            return Err(FileError::NoSpace {
                dir: dir.display().to_string(),
                needed: format_bytes_binary(*needed as f64),
                free: format_bytes_binary(fs.free as f64),
            });
        }
    }
    Ok(())
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Bytes available to an unprivileged writer on the filesystem holding `dir`.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(std::io::Error::other)?;
    // SAFETY: statvfs fills the zeroed struct for a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// A file to create or extend before the jobs start.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The file, within `space`.
    pub path: PathBuf,
    /// Where it is resolved.
    pub space: FileSpace,
    /// Its size now.
    pub from: u64,
    /// The size the jobs need.
    pub to: u64,
    /// Write data into it (a job reads it, or writes with `overwrite=1`);
    /// otherwise only allocate it, as fio does for jobs that only write:
    /// their writes then allocate as they go, not overwrite.
    pub fill: bool,
    /// How a file that is not filled is allocated (`fallocate=`).
    pub fallocate: Fallocate,
}

/// Whether a job needs its files' blocks written before it runs: it reads
/// them, or it writes with fio's `overwrite=1`.
fn needs_data(job: &JobSpec) -> bool {
    job.rw.does(Dir::Read)
        || job
            .given
            .iter()
            .any(|(k, v)| k == "overwrite" && !matches!(v.trim(), "0" | "false"))
}

/// Files to lay out: each regular file that must grow, with its final size.
pub fn layout_list(plans: &[(&JobSpec, Vec<FilePlan>)]) -> Vec<Layout> {
    let mut out: BTreeMap<PathBuf, Layout> = BTreeMap::new();
    for (job, files) in plans {
        // create_on_open: a file only written is made when the job opens it.
        if job.pattern.create_on_open && !needs_data(job) {
            continue;
        }
        for f in files.iter().filter(|f| !f.is_device) {
            let e = out.entry(f.path.clone()).or_insert(Layout {
                path: f.path.clone(),
                space: f.space.clone(),
                from: f.existing,
                to: 0,
                fill: false,
                fallocate: job.pattern.fallocate,
            });
            e.to = e.to.max(f.needed_end());
            e.fill |= needs_data(job);
        }
    }
    out.into_values().filter(|l| l.to > l.from).collect()
}

/// Writes files from their current size to their needed size with
/// incompressible, non-duplicate data. `should_stop` is polled before every
/// chunk (stop flag, deadline); when it says stop, or anything fails, the
/// files this call created are removed again.
pub fn lay_out(
    files: &[Layout],
    should_stop: impl Fn() -> Option<StopReason>,
    mut progress: impl FnMut(u64),
) -> Result<(), FileError> {
    let mut created: Vec<&Layout> = Vec::new();
    let result = (|| {
        const CHUNK: usize = 1 << 20;
        let mut buf = vec![0u8; CHUNK];
        fill_random(&mut buf, 0x5eed);
        let mut seq = 0u64;
        for l in files {
            let mut f = match l.space.create_new(&l.path)? {
                Some(f) => {
                    created.push(l);
                    f
                }
                None => l.space.open(&l.path, libc::O_WRONLY, 0)?,
            };
            let io_err = |source| SpaceError::Io {
                path: l.path.display().to_string(),
                source,
            };
            if !l.fill {
                // Allocated, not written (fio's layout for jobs that only
                // write): their writes then allocate as they go, or not.
                allocate(&f, l).map_err(io_err)?;
                progress(l.to - l.from);
                continue;
            }
            let mut pos = l.from;
            use std::io::Seek;
            f.seek(std::io::SeekFrom::Start(pos)).map_err(io_err)?;
            while pos < l.to {
                match should_stop() {
                    Some(StopReason::Interrupted) => return Err(FileError::Interrupted),
                    Some(StopReason::Deadline) => return Err(FileError::Deadline),
                    None => {}
                }
                let n = usize::try_from(l.to - pos).map_or(CHUNK, |left| left.min(CHUNK));
                for (i, block) in buf[..n].chunks_mut(4096).enumerate() {
                    seq += 1;
                    stamp_block(block, pos + (i as u64) * 4096, seq, false);
                }
                f.write_all(&buf[..n]).map_err(io_err)?;
                pos += n as u64;
                progress(n as u64);
            }
            f.sync_all().map_err(io_err)?;
        }
        Ok(())
    })();
    if result.is_err() {
        for l in &created {
            let _ = l.space.remove(&l.path);
        }
    }
    result
}

/// Gives a file that is not filled its size the way `fallocate=` says:
/// reserved blocks (`posix`/`native`; only sized where the filesystem
/// cannot reserve), blocks reserved past an unchanged size then sized
/// (`keep`), or only sized and sparse (`none`, `truncate`).
fn allocate(f: &File, l: &Layout) -> std::io::Result<()> {
    let len = i64::try_from(l.to - l.from).unwrap_or(i64::MAX);
    let from = i64::try_from(l.from).unwrap_or(i64::MAX);
    match l.fallocate {
        Fallocate::None | Fallocate::Truncate => return f.set_len(l.to),
        // SAFETY (both): a valid descriptor; offsets within i64 above.
        Fallocate::Posix => match unsafe { libc::posix_fallocate(f.as_raw_fd(), from, len) } {
            0 => return Ok(()),
            libc::EOPNOTSUPP | libc::EINVAL => {}
            e => return Err(std::io::Error::from_raw_os_error(e)),
        },
        Fallocate::Keep => {
            let r = unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, from, len) };
            if r != 0 {
                let e = std::io::Error::last_os_error();
                if !matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EINVAL)) {
                    return Err(e);
                }
            }
        }
    }
    f.set_len(l.to)
}

/// Opens a job's file for its I/O (in its space, never blocking on a FIFO).
pub fn open_for_job(plan: &FilePlan, job: &JobSpec) -> Result<File, FileError> {
    let mut flags = if job.rw.does(Dir::Write) {
        libc::O_RDWR
    } else {
        libc::O_RDONLY
    };
    if job.direct {
        flags |= libc::O_DIRECT;
    }
    if job.pattern.create_on_open && !plan.is_device {
        flags |= libc::O_CREAT;
    }
    let f = plan.space.open(&plan.path, flags, 0o644)?;
    if job.invalidate && !plan.is_device {
        // SAFETY: advisory call on an open descriptor.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    Ok(f)
}

/// Removes a job's file after the job (`unlink`), in its space.
pub fn unlink(plan: &FilePlan) -> Result<(), FileError> {
    Ok(plan.space.remove(&plan.path)?)
}
