//! The files of a job: names, sizes and regions (fio's rules), the free-space
//! check, block-device detection and the layout with incompressible data.

use crate::job::spec::{Dir, JobSpec};
use crate::units::{format_bytes_binary, SizeSpec};
use crate::workload::{fill_random, stamp_block, Region};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// One file a job clone uses.
#[derive(Debug, Clone)]
pub struct FilePlan {
    /// Where the file is.
    pub path: PathBuf,
    /// The part the job works on.
    pub region: Region,
    /// True for block devices.
    pub is_device: bool,
    /// Size before the run (0 when missing).
    pub existing: u64,
}

impl FilePlan {
    /// The size the file must have for the job.
    pub fn needed_end(&self) -> u64 {
        self.region.start + self.region.len
    }
}

/// A problem with a job's files, found before anything is written.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A size or name option cannot be resolved.
    #[error("job '{job}': option '{option}': {message}")]
    Option {
        /// The job.
        job: String,
        /// The option at fault.
        option: &'static str,
        /// Why.
        message: String,
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
    /// An OS error on a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Ctrl-C or SIGTERM during layout.
    #[error("interrupted while laying out files")]
    Interrupted,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> FileError + '_ {
    move |source| FileError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The files and regions of clone `clone` of `job`, following fio's naming.
pub fn plan_files(job: &JobSpec, clone: u32, diskless: bool) -> Result<Vec<FilePlan>, FileError> {
    let opt_err = |option: &'static str, message: String| FileError::Option {
        job: job.name.clone(),
        option,
        message,
    };
    let dir = job.directory.as_deref().map(PathBuf::from);
    let paths: Vec<PathBuf> = match &job.filename {
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
                let name = format!("{}.{}.{}", job.name, clone, f);
                dir.as_ref()
                    .map(|d| d.join(&name))
                    .unwrap_or_else(|| PathBuf::from(name))
            })
            .collect(),
    };
    if paths.is_empty() {
        return Err(opt_err("filename", "no file name given".into()));
    }
    let mut existing = Vec::new();
    let mut devices = Vec::new();
    for p in &paths {
        let (size, dev) = if diskless {
            (0, false)
        } else {
            existing_size(p)?
        };
        existing.push(size);
        devices.push(dev);
    }
    let n = paths.len() as u64;
    let first_existing = existing.iter().copied().max().unwrap_or(0);
    let resolve_pct = |spec: SizeSpec, option: &'static str| -> Result<u64, FileError> {
        match spec {
            SizeSpec::Percent(_) if first_existing == 0 => Err(opt_err(
                option,
                format!(
                    "a percentage needs an existing file or device, and {} does not exist",
                    paths[0].display()
                ),
            )),
            s => Ok(s.resolve(first_existing)),
        }
    };
    let offset = resolve_pct(job.offset, "offset")?;
    let per_file = match (job.filesize, job.size) {
        (Some(fs), _) => resolve_pct(fs, "filesize")?,
        (None, Some(size)) => resolve_pct(size, "size")? / n,
        (None, None) if first_existing > offset => first_existing - offset,
        (None, None) => {
            return Err(opt_err(
                "size",
                format!("no size given and {} does not exist", paths[0].display()),
            ));
        }
    };
    let min_bs = job.min_bs();
    let len = per_file / min_bs * min_bs;
    if len == 0 || len < job.max_bs() {
        return Err(opt_err(
            "size",
            format!(
                "{} per file is smaller than the block size ({})",
                format_bytes_binary(per_file as f64),
                format_bytes_binary(job.max_bs() as f64)
            ),
        ));
    }
    Ok(paths
        .into_iter()
        .zip(existing)
        .zip(devices)
        .map(|((path, existing), is_device)| FilePlan {
            path,
            region: Region { start: offset, len },
            is_device,
            existing,
        })
        .collect())
}

/// Size of an existing file or block device, and whether it is a device.
fn existing_size(path: &Path) -> Result<(u64, bool), FileError> {
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_block_device() => {
            let f = File::open(path).map_err(io_err(path))?;
            let mut size: u64 = 0;
            // SAFETY: BLKGETSIZE64 writes a u64.
            let r = unsafe { libc::ioctl(f.as_raw_fd(), 0x8008_1272, &mut size) };
            if r < 0 {
                return Err(io_err(path)(std::io::Error::last_os_error()));
            }
            Ok((size, true))
        }
        Ok(m) if m.is_dir() => Err(io_err(path)(std::io::Error::from_raw_os_error(
            libc::EISDIR,
        ))),
        Ok(m) => Ok((m.len(), false)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((0, false)),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// Refuses device writes without permission and layouts that would not fit.
pub fn check_plans(
    plans: &[(&JobSpec, Vec<FilePlan>)],
    allow_device: bool,
) -> Result<(), FileError> {
    let mut growth: BTreeMap<PathBuf, (u64, u64)> = BTreeMap::new();
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
            let entry = growth
                .entry(f.path.clone())
                .or_insert((f.existing, f.existing));
            entry.1 = entry.1.max(f.needed_end());
        }
    }
    // Sum growth per filesystem, keyed by the device of the parent directory.
    let mut per_fs: BTreeMap<u64, (PathBuf, u64)> = BTreeMap::new();
    for (path, (existing, end)) in &growth {
        let parent = parent_dir(path);
        let meta = std::fs::metadata(&parent).map_err(io_err(&parent))?;
        let e = per_fs.entry(meta.dev()).or_insert((parent.clone(), 0));
        e.1 += end.saturating_sub(*existing);
    }
    for (dir, needed) in per_fs.values() {
        let free = free_bytes(dir).map_err(io_err(dir))?;
        if *needed > free {
            return Err(FileError::NoSpace {
                dir: dir.display().to_string(),
                needed: format_bytes_binary(*needed as f64),
                free: format_bytes_binary(free as f64),
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

/// Files to lay out: each regular file that must grow, with its final size.
pub fn layout_list(plans: &[(&JobSpec, Vec<FilePlan>)]) -> Vec<(PathBuf, u64, u64)> {
    let mut out: BTreeMap<PathBuf, (u64, u64)> = BTreeMap::new();
    for (_, files) in plans {
        for f in files.iter().filter(|f| !f.is_device) {
            let e = out.entry(f.path.clone()).or_insert((f.existing, 0));
            e.1 = e.1.max(f.needed_end());
        }
    }
    out.into_iter()
        .filter(|(_, (from, to))| to > from)
        .map(|(p, (from, to))| (p, from, to))
        .collect()
}

/// Writes files from their current size to their needed size with
/// incompressible, non-duplicate data; removes files it created if it fails.
pub fn lay_out(
    files: &[(PathBuf, u64, u64)],
    stop: &AtomicBool,
    mut progress: impl FnMut(u64),
) -> Result<(), FileError> {
    let mut created: Vec<PathBuf> = Vec::new();
    let result = (|| {
        const CHUNK: usize = 1 << 20;
        let mut buf = vec![0u8; CHUNK];
        fill_random(&mut buf, 0x5eed);
        let mut seq = 0u64;
        for (path, from, to) in files {
            if *from == 0 && !path.exists() {
                created.push(path.clone());
            }
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o644)
                .open(path)
                .map_err(io_err(path))?;
            let mut pos = *from;
            use std::io::Seek;
            f.seek(std::io::SeekFrom::Start(pos))
                .map_err(io_err(path))?;
            while pos < *to {
                if stop.load(Ordering::Relaxed) {
                    return Err(FileError::Interrupted);
                }
                let n = ((*to - pos) as usize).min(CHUNK);
                for (i, block) in buf[..n].chunks_mut(4096).enumerate() {
                    seq += 1;
                    stamp_block(block, pos + (i as u64) * 4096, seq, false);
                }
                f.write_all(&buf[..n]).map_err(io_err(path))?;
                pos += n as u64;
                progress(n as u64);
            }
            f.sync_all().map_err(io_err(path))?;
        }
        Ok(())
    })();
    if result.is_err() {
        for p in &created {
            let _ = std::fs::remove_file(p);
        }
    }
    result
}

/// Opens a job's file for its I/O.
pub fn open_for_job(plan: &FilePlan, job: &JobSpec) -> Result<File, FileError> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    if job.rw.does(Dir::Write) {
        opts.write(true);
    }
    if job.direct {
        opts.custom_flags(libc::O_DIRECT);
    }
    let f = opts.open(&plan.path).map_err(io_err(&plan.path))?;
    if job.invalidate && !plan.is_device {
        // SAFETY: advisory call on an open descriptor.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    Ok(f)
}
