//! Where a job's files live, and every operation on them.
//!
//! `plumb fio` works on plain paths with fio's semantics ([`FileSpace::Host`]);
//! scenarios work inside their run directory ([`FileSpace::Sandboxed`]): every
//! name, whatever option it came from, is resolved beneath the run directory's
//! descriptor with `openat2(RESOLVE_BENEATH)`, and only regular files are
//! accepted. No path string is ever joined to the run directory and reopened.

use crate::sandbox::{Held, Inode, RunDir, SandboxError};
use std::collections::HashMap;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The file system a job's files are resolved in.
#[derive(Debug, Clone)]
pub enum FileSpace {
    /// Plain paths as fio takes them (relative to the working directory).
    Host,
    /// Relative paths beneath a run directory; anything else is refused.
    Sandboxed(Arc<JobDir>),
}

/// A run directory as jobs use it. Every file a job opens in it stays
/// held ([`Held`]) until the last clone of the space is dropped, after the
/// job's own descriptors: removing a job's file while the job runs gives
/// its bytes back to the budget only once the job is done with it.
///
/// A file found when the job was planned is held from then on, and its
/// name must still lead to the same file when the job opens it: a job
/// charged for the file it found never writes a new one made under that
/// name since (the scenario removed or replaced it) without a charge.
#[derive(Debug)]
pub struct JobDir {
    dir: RunDir,
    held: Mutex<HashMap<Inode, Held>>,
    /// The files found by [`FileSpace::probe`], by name.
    planned: Mutex<HashMap<String, Inode>>,
}

impl JobDir {
    /// Counts `f`, whose inode is `inode` (from its metadata), as held until
    /// the space is dropped. Only the first open of an inode duplicates its
    /// descriptor; later ones find it held.
    fn hold(&self, f: &File, inode: Inode) -> std::io::Result<()> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let std::collections::hash_map::Entry::Vacant(slot) = held.entry(inode) {
            slot.insert(self.dir.hold_copy(f.as_fd())?);
        }
        Ok(())
    }

    /// Remembers that `name` was found as `inode` when the job was planned.
    fn plan(&self, name: &str, inode: Inode) {
        let mut planned = self.planned.lock().unwrap_or_else(|p| p.into_inner());
        planned.insert(name.to_string(), inode);
    }

    /// Refuses `name` opened as `inode` when it was planned as another file.
    fn check_planned(&self, name: &str, inode: Inode) -> Result<(), SpaceError> {
        let planned = self.planned.lock().unwrap_or_else(|p| p.into_inner());
        match planned.get(name) {
            Some(found) if *found != inode => Err(SpaceError::Changed {
                path: name.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Whether `name` was found when the job was planned (so a later open
    /// that finds nothing there means the scenario removed it in between).
    fn was_planned(&self, name: &str) -> bool {
        let planned = self.planned.lock().unwrap_or_else(|p| p.into_inner());
        planned.contains_key(name)
    }

    /// The job removed `name` itself: a file it makes there next is its own.
    fn forget(&self, name: &str) {
        let mut planned = self.planned.lock().unwrap_or_else(|p| p.into_inner());
        planned.remove(name);
    }
}

/// What a file operation found wrong.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    /// The sandbox refused the path (escape, bad name) or the OS failed on it.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The operating system refused, naming the file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The name leads to another file than the job was planned with (the
    /// scenario removed or replaced it in between).
    #[error("{path} was removed or replaced after the job was planned; the job does not write a file it was not charged for")]
    Changed {
        /// The file.
        path: String,
    },
    /// The file is of a kind jobs may not use here.
    #[error("{path} is a {kind}; {allowed}")]
    Kind {
        /// The file.
        path: String,
        /// What it is (`FIFO`, `socket`, ...).
        kind: &'static str,
        /// What is accepted instead.
        allowed: &'static str,
    },
}

/// An existing file or device as found before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// Size in bytes (a block device's capacity).
    pub size: u64,
    /// True for block devices.
    pub is_device: bool,
}

/// The filesystem a file will live on: its id and the bytes free on it.
#[derive(Debug, Clone, Copy)]
pub struct FsInfo {
    /// Device number of the filesystem.
    pub dev: u64,
    /// Bytes available to an unprivileged writer.
    pub free: u64,
}

const HOST_ALLOWED: &str = "plumb fio needs a regular file, a block device or a character device";
const SANDBOX_ALLOWED: &str = "scenarios may only use regular files inside the run directory";

fn io_err(path: &Path, source: std::io::Error) -> SpaceError {
    SpaceError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The path as the sandbox takes it (names are UTF-8 there).
fn rel(path: &Path) -> Result<&str, SpaceError> {
    path.to_str().ok_or_else(|| {
        SpaceError::Sandbox(SandboxError::BadPath {
            path: path.display().to_string(),
            why: "it is not UTF-8",
        })
    })
}

fn is_enoent(e: &SandboxError) -> bool {
    e.errno() == Some(libc::ENOENT)
}

/// The kind of a file that is neither regular nor a directory, for errors.
fn odd_kind(ft: std::fs::FileType) -> Option<&'static str> {
    if ft.is_fifo() {
        Some("FIFO")
    } else if ft.is_socket() {
        Some("socket")
    } else if ft.is_block_device() {
        Some("block device")
    } else if ft.is_char_device() {
        Some("character device")
    } else if ft.is_dir() {
        Some("directory")
    } else {
        None
    }
}

/// Capacity of an open block device.
fn device_size(f: &File, path: &Path) -> Result<u64, SpaceError> {
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), 0x8008_1272, &mut size) };
    if r < 0 {
        return Err(io_err(path, std::io::Error::last_os_error()));
    }
    Ok(size)
}

/// Bytes available to an unprivileged writer on the filesystem of `fd`.
fn free_on(fd: &impl AsRawFd) -> std::io::Result<u64> {
    // SAFETY: fstatvfs fills the zeroed struct for an open descriptor.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatvfs(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

impl FileSpace {
    /// A space inside `dir`, sharing its descriptor (not its path).
    pub fn sandboxed(dir: &RunDir) -> std::io::Result<FileSpace> {
        Ok(FileSpace::Sandboxed(Arc::new(JobDir {
            dir: dir.try_clone()?,
            held: Mutex::default(),
            planned: Mutex::default(),
        })))
    }

    /// True when paths are resolved beneath a run directory.
    pub fn is_sandboxed(&self) -> bool {
        matches!(self, FileSpace::Sandboxed(_))
    }

    /// The size and kind of an existing file, or `None` when it does not exist.
    /// FIFOs, sockets and directories are refused (and, in a sandbox, devices).
    /// In a sandbox the file found is held from then on (see [`JobDir`]).
    pub fn probe(&self, path: &Path) -> Result<Option<Found>, SpaceError> {
        let file = match self {
            FileSpace::Host => match std::fs::metadata(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(io_err(path, e)),
                Ok(m) => {
                    self.refuse(m.file_type(), path)?;
                    if !m.file_type().is_block_device() {
                        return Ok(Some(Found {
                            size: m.len(),
                            is_device: false,
                        }));
                    }
                    let f = self.open(path, libc::O_RDONLY, 0)?;
                    return Ok(Some(Found {
                        size: device_size(&f, path)?,
                        is_device: true,
                    }));
                }
            },
            FileSpace::Sandboxed(s) => match s.dir.open(rel(path)?, libc::O_PATH, 0) {
                Err(e) if is_enoent(&e) => return Ok(None),
                Err(e) => return Err(e.into()),
                Ok(fd) => File::from(fd),
            },
        };
        let m = file.metadata().map_err(|e| io_err(path, e))?;
        self.refuse(m.file_type(), path)?;
        // Held from the moment it is planned, not only once the job opens
        // it: a truncation in between (through another handle) must find
        // it shared and give nothing back, or the job would write the
        // bytes again uncharged.
        if let FileSpace::Sandboxed(s) = self {
            let inode = Inode {
                dev: m.dev(),
                ino: m.ino(),
            };
            s.hold(&file, inode).map_err(|e| io_err(path, e))?;
            s.plan(rel(path)?, inode);
        }
        Ok(Some(Found {
            size: m.len(),
            is_device: false,
        }))
    }

    /// Opens a file with `open(2)` flags. The open never blocks on a FIFO
    /// (it is done with `O_NONBLOCK`, which is cleared again), and FIFOs and
    /// sockets — in a sandbox anything but a regular file — are refused.
    pub fn open(&self, path: &Path, flags: i32, mode: u32) -> Result<File, SpaceError> {
        let flags = flags | libc::O_NONBLOCK | libc::O_CLOEXEC;
        let fd: OwnedFd = match self {
            FileSpace::Host => {
                let mut o = std::fs::OpenOptions::new();
                let acc = flags & libc::O_ACCMODE;
                o.read(acc != libc::O_WRONLY)
                    .write(acc != libc::O_RDONLY)
                    .mode(mode)
                    .custom_flags(flags & !libc::O_ACCMODE & !libc::O_CREAT & !libc::O_EXCL);
                if flags & libc::O_EXCL != 0 {
                    o.create_new(true);
                } else if flags & libc::O_CREAT != 0 {
                    o.create(true);
                }
                o.open(path).map_err(|e| io_err(path, e))?.into()
            }
            FileSpace::Sandboxed(s) => {
                let name = rel(path)?;
                s.dir.open(name, flags, mode).map_err(|e| {
                    if is_enoent(&e) && s.was_planned(name) {
                        SpaceError::Changed {
                            path: name.to_string(),
                        }
                    } else {
                        e.into()
                    }
                })?
            }
        };
        let f = File::from(fd);
        let meta = f.metadata().map_err(|e| io_err(path, e))?;
        self.refuse(meta.file_type(), path)?;
        if let FileSpace::Sandboxed(s) = self {
            let inode = Inode {
                dev: meta.dev(),
                ino: meta.ino(),
            };
            s.check_planned(rel(path)?, inode)?;
            s.hold(&f, inode).map_err(|e| io_err(path, e))?;
        }
        // SAFETY: F_SETFL on an open descriptor with flags read from it.
        let r = unsafe {
            let fl = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
            if fl < 0 {
                fl
            } else {
                libc::fcntl(f.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK)
            }
        };
        if r < 0 {
            return Err(io_err(path, std::io::Error::last_os_error()));
        }
        Ok(f)
    }

    /// Refuses FIFOs, sockets and directories, and in a sandbox devices too.
    fn refuse(&self, ft: std::fs::FileType, path: &Path) -> Result<(), SpaceError> {
        let device = ft.is_block_device() || ft.is_char_device();
        match odd_kind(ft) {
            Some(kind) if self.is_sandboxed() || !device => Err(SpaceError::Kind {
                path: path.display().to_string(),
                kind,
                allowed: if self.is_sandboxed() {
                    SANDBOX_ALLOWED
                } else {
                    HOST_ALLOWED
                },
            }),
            _ => Ok(()),
        }
    }

    /// Creates a file that does not exist yet; `Ok(None)` when it exists.
    pub fn create_new(&self, path: &Path) -> Result<Option<File>, SpaceError> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
        match self.open(path, flags, 0o644) {
            Ok(f) => Ok(Some(f)),
            Err(SpaceError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::AlreadyExists =>
            {
                Ok(None)
            }
            Err(SpaceError::Sandbox(e)) if e.errno() == Some(libc::EEXIST) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes a file (in a sandbox a final symlink is removed, not followed).
    pub fn remove(&self, path: &Path) -> Result<(), SpaceError> {
        match self {
            FileSpace::Host => std::fs::remove_file(path).map_err(|e| io_err(path, e)),
            FileSpace::Sandboxed(s) => {
                s.dir.remove(rel(path)?)?;
                s.forget(rel(path)?);
                Ok(())
            }
        }
    }

    /// The filesystem the file is (or will be) on, from its parent directory.
    pub fn fs_of(&self, path: &Path) -> Result<FsInfo, SpaceError> {
        let parent = parent_of(path);
        let dir = match self {
            FileSpace::Host => File::open(&parent).map_err(|e| io_err(&parent, e))?,
            FileSpace::Sandboxed(s) => File::from(s.dir.open(
                rel(&parent)?,
                libc::O_PATH | libc::O_DIRECTORY,
                0,
            )?),
        };
        let dev = dir.metadata().map_err(|e| io_err(&parent, e))?.dev();
        let free = free_on(&dir).map_err(|e| io_err(&parent, e))?;
        Ok(FsInfo { dev, free })
    }

    /// The whole-disk device under a file, for disk statistics. In a sandbox
    /// every file is on the run directory's filesystem.
    pub fn disk(&self, path: &Path) -> Option<String> {
        match self {
            FileSpace::Host => crate::stats::disk::disk_for_path(path),
            FileSpace::Sandboxed(s) => crate::stats::disk::disk_for_path(s.dir.path()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Account;

    /// A file the job found at its plan and the scenario removed before the
    /// job opened it is refused as changed, whatever the open's flags (an
    /// open without O_CREAT found nothing and said only "No such file").
    #[test]
    fn a_planned_file_removed_before_the_open_is_refused_as_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let run = RunDir::create(tmp.path(), Account::new(1 << 20, 100)).unwrap();
        let space = FileSpace::sandboxed(&run).unwrap();
        let f = space.create_new(Path::new("f")).unwrap().unwrap();
        drop(f);
        assert!(space.probe(Path::new("f")).unwrap().is_some());
        run.remove("f").unwrap();
        let e = space
            .open(Path::new("f"), libc::O_WRONLY, 0o600)
            .unwrap_err();
        assert!(matches!(e, SpaceError::Changed { .. }), "{e}");
        // A name never planned that is missing stays the OS's own error.
        let e = space.open(Path::new("g"), libc::O_RDONLY, 0).unwrap_err();
        assert!(!matches!(e, SpaceError::Changed { .. }), "{e}");
    }
}
