//! `plumb trace record`'s calibration: the command run once without the
//! tracer, so the trace knows the application's own wall time (a replay at
//! `--speed 1` then takes about that long, not the tracer's).
//!
//! Both runs must start from the tree the user had, so the root is copied
//! first (files with their bytes, modes and times, directories, symlinks
//! as they are) into the temporary directory, the command is recorded,
//! the root is put back as it was, and the command runs untraced (after
//! the traced run, as warm as a replay would be). A root that holds something else
//! (a FIFO, a device, a socket) or more than [`MAX_COPY_BYTES`] or
//! [`MAX_COPY_ENTRIES`] is not calibrated: the replay's reference is then
//! the traced run, and it says so.

use std::fs;
use std::io;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

/// Most bytes of the root copied to calibrate.
pub(super) const MAX_COPY_BYTES: u64 = 1 << 30;
/// Most entries of the root copied to calibrate.
pub(super) const MAX_COPY_ENTRIES: u64 = 100_000;

/// Why the root cannot be copied to calibrate.
#[derive(Debug, thiserror::Error)]
pub(super) enum CopyError {
    /// The root is larger than a calibration copies.
    #[error("the root holds more than {max_mib} MiB or {MAX_COPY_ENTRIES} entries", max_mib = MAX_COPY_BYTES >> 20)]
    TooLarge,
    /// Something that is not a file, a directory or a symlink.
    #[error("{0} is not a file, a directory or a symlink")]
    Special(PathBuf),
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// Where.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

fn at(path: &Path) -> impl FnOnce(io::Error) -> CopyError + '_ {
    move |source| CopyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What a copy has taken so far, against the limits.
#[derive(Default)]
struct Tally {
    bytes: u64,
    entries: u64,
}

impl Tally {
    fn add(&mut self, bytes: u64) -> Result<(), CopyError> {
        self.bytes = self.bytes.saturating_add(bytes);
        self.entries += 1;
        if self.bytes > MAX_COPY_BYTES || self.entries > MAX_COPY_ENTRIES {
            return Err(CopyError::TooLarge);
        }
        Ok(())
    }
}

/// The entries of `dir` but `skip`.
fn entries(dir: &Path, skip: &Path) -> Result<Vec<PathBuf>, CopyError> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).map_err(at(dir))? {
        let p = e.map_err(at(dir))?.path();
        if p != skip {
            out.push(p);
        }
    }
    Ok(out)
}

/// Copies what is in `from` (but `skip`) into the directory `to`: files
/// with their bytes, mode and times, directories, symlinks as they are
/// (never followed).
fn copy_into(from: &Path, to: &Path, skip: &Path, tally: &mut Tally) -> Result<(), CopyError> {
    for src in entries(from, skip)? {
        let Some(name) = src.file_name() else {
            continue;
        };
        let dst = to.join(name);
        let meta = fs::symlink_metadata(&src).map_err(at(&src))?;
        let kind = meta.file_type();
        tally.add(if kind.is_file() { meta.len() } else { 0 })?;
        if kind.is_symlink() {
            symlink(fs::read_link(&src).map_err(at(&src))?, &dst).map_err(at(&dst))?;
            continue;
        }
        if kind.is_dir() {
            fs::create_dir(&dst).map_err(at(&dst))?;
            copy_into(&src, &dst, skip, tally)?;
        } else if kind.is_file() {
            fs::copy(&src, &dst).map_err(at(&dst))?;
        } else {
            return Err(CopyError::Special(src));
        }
        let perms = fs::Permissions::from_mode(meta.permissions().mode());
        fs::set_permissions(&dst, perms).map_err(at(&dst))?;
        set_times(&dst, &meta).map_err(at(&dst))?;
    }
    Ok(())
}

/// Gives `path` the access and modification times of `meta`, by name
/// (whatever its mode).
fn set_times(path: &Path, meta: &fs::Metadata) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let times = [
        libc::timespec {
            tv_sec: meta.atime(),
            tv_nsec: meta.atime_nsec(),
        },
        libc::timespec {
            tv_sec: meta.mtime(),
            tv_nsec: meta.mtime_nsec(),
        },
    ];
    // SAFETY: a valid C string and two timespecs, as utimensat takes.
    let r = unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), times.as_ptr(), 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A copy of the root, put back with [`Snapshot::restore`].
pub(super) struct Snapshot {
    root: PathBuf,
    copy: PathBuf,
    /// What is left alone in the root: the scratch directory holding the
    /// copy, when it lies in the root.
    skip: PathBuf,
}

impl Snapshot {
    /// Copies `root` into `scratch/root` (the scratch directory itself is
    /// neither copied nor removed when it lies in the root).
    pub(super) fn take(root: &Path, scratch: &Path) -> Result<Snapshot, CopyError> {
        let copy = scratch.join("root");
        fs::create_dir(&copy).map_err(at(&copy))?;
        copy_into(root, &copy, scratch, &mut Tally::default())?;
        Ok(Snapshot {
            root: root.to_path_buf(),
            copy,
            skip: scratch.to_path_buf(),
        })
    }

    /// Puts the root back as it was: removes what is in it now (never
    /// following a symlink), then copies the snapshot back.
    pub(super) fn restore(&self) -> Result<(), CopyError> {
        for p in entries(&self.root, &self.skip)? {
            let meta = fs::symlink_metadata(&p).map_err(at(&p))?;
            if meta.is_dir() {
                fs::remove_dir_all(&p).map_err(at(&p))?;
            } else {
                fs::remove_file(&p).map_err(at(&p))?;
            }
        }
        copy_into(&self.copy, &self.root, &self.skip, &mut Tally::default())
    }

    /// Writes back to the disk what putting the root back wrote (`syncfs`),
    /// so an untraced run starts on a file system as clean as the traced
    /// run had, not behind the copy's writeback (a program that syncs would
    /// wait for it). Best effort: a root that cannot be opened is left.
    pub(super) fn settle(&self) {
        if let Ok(dir) = fs::File::open(&self.root) {
            // SAFETY: a valid descriptor, open for the call's length.
            unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&dir)) };
        }
    }

    /// Where the copy is (for a message when it could not be restored).
    pub(super) fn path(&self) -> &Path {
        &self.copy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_puts_the_tree_back_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        fs::create_dir_all(root.join("d/e")).unwrap();
        fs::write(root.join("d/e/f"), "data").unwrap();
        fs::set_permissions(root.join("d/e/f"), fs::Permissions::from_mode(0o600)).unwrap();
        symlink("/etc/passwd", root.join("abs")).unwrap();
        let scratch = root.join(".scratch");
        fs::create_dir(&scratch).unwrap();
        let before = fs::metadata(root.join("d/e/f"))
            .unwrap()
            .modified()
            .unwrap();
        let snap = Snapshot::take(&root, &scratch).unwrap();
        assert!(
            !snap.path().join(".scratch").exists(),
            "the scratch is not copied"
        );
        fs::remove_dir_all(root.join("d")).unwrap();
        fs::write(root.join("new"), "x").unwrap();
        fs::remove_file(root.join("abs")).unwrap();
        snap.restore().unwrap();
        assert_eq!(fs::read_to_string(root.join("d/e/f")).unwrap(), "data");
        let meta = fs::metadata(root.join("d/e/f")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(meta.modified().unwrap(), before);
        assert_eq!(
            fs::read_link(root.join("abs")).unwrap(),
            Path::new("/etc/passwd")
        );
        assert!(!root.join("new").exists());
        assert!(scratch.is_dir(), "the scratch is left alone");
    }

    #[test]
    fn a_fifo_is_not_copied() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        fs::create_dir(&root).unwrap();
        let fifo = std::ffi::CString::new(root.join("p").to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let scratch = dir.path().join("s");
        fs::create_dir(&scratch).unwrap();
        let e = Snapshot::take(&root, &scratch).err().unwrap();
        assert!(e.to_string().contains("not a file"), "{e}");
    }
}
