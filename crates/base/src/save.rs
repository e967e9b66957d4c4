//! Saving result files so that a failure never costs the old file: every
//! result writer (`plumb run --json`, `plumb fio --json/--output`, charts,
//! `trace replay --json`) goes through [`write_atomic`].
//!
//! The text goes to a new file beside the destination (created with
//! `O_EXCL` under a unique name), is flushed to the disk, renamed over the
//! destination and the directory is flushed too. Any failure removes the
//! temporary file and leaves whatever was at the destination untouched.
//!
//! A destination that exists and is not a regular file (`/dev/stdout`, a
//! terminal, `/dev/null`, a pipe) is written in place: renaming over it
//! would replace the device node or the symlink itself. A symlink to a
//! regular file has its target replaced, and stays a symlink.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A failed save: the destination and what went wrong.
#[derive(Debug)]
pub struct SaveError {
    /// The file that was to be written.
    pub path: PathBuf,
    /// The step that failed.
    pub step: &'static str,
    /// The system's reason.
    pub source: io::Error,
}

impl fmt::Display for SaveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {} (nothing was changed there)",
            self.path.display(),
            self.step,
            self.source
        )
    }
}

impl std::error::Error for SaveError {}

/// Replaces `path` with `bytes`, all or nothing (see the module comment).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SaveError> {
    let fail = |step, source| SaveError {
        path: path.to_path_buf(),
        step,
        source,
    };
    let name = path.file_name().ok_or_else(|| {
        fail(
            "not a file name",
            io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"),
        )
    })?;
    let path = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(fail(
                "not a file",
                io::Error::new(io::ErrorKind::IsADirectory, "it is a directory"),
            ))
        }
        Ok(m) if !m.is_file() => {
            return write_in_place(path, bytes).map_err(|(step, e)| fail(step, e))
        }
        // A symlink (or a path through one) to a regular file: replace the file it names.
        Ok(_) => std::fs::canonicalize(path).map_err(|e| fail("resolve", e))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok() {
                return Err(fail(
                    "resolve",
                    io::Error::new(io::ErrorKind::NotFound, "a symlink to nothing"),
                ));
            }
            path.to_path_buf()
        }
        Err(e) => return Err(fail("inspect", e)),
    };
    let path = path.as_path();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, mut file) =
        create_temp(&dir, name).map_err(|e| fail("create a temporary file", e))?;
    let written = file
        .write_all(bytes)
        .map_err(|e| ("write", e))
        .and_then(|()| file.sync_all().map_err(|e| ("flush to disk", e)))
        .and_then(|()| {
            drop(file);
            std::fs::rename(&tmp, path).map_err(|e| ("rename over", e))
        });
    if let Err((step, e)) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(step, e));
    }
    // The new name is in place; flushing the directory makes the rename durable.
    File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| fail("flush the directory", e))
}

/// Writes to an existing device or pipe: opened without blocking (a pipe
/// with no reader is an error, not a hang), then written in full.
fn write_in_place(path: &Path, bytes: &[u8]) -> Result<(), (&'static str, io::Error)> {
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| ("open", e))?;
    // Back to blocking writes now that the open did not wait for a reader.
    // SAFETY: fcntl on a descriptor owned by `file`.
    unsafe {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    let mut file = file;
    file.write_all(bytes).map_err(|e| ("write", e))?;
    file.flush().map_err(|e| ("write", e))
}

/// Creates `.NAME.PID.N.tmp` in `dir`, never reusing an existing file.
fn create_temp(dir: &Path, name: &std::ffi::OsStr) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut tries = 0;
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        tries += 1;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.{n}.tmp", std::process::id()));
        let tmp = dir.join(tmp_name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 100 => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        std::fs::write(&p, "old").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_directory_or_a_missing_parent_is_an_error_naming_the_path() {
        let d = tempfile::tempdir().unwrap();
        let e = write_atomic(d.path(), b"x").unwrap_err();
        assert!(e.to_string().starts_with(&d.path().display().to_string()));
        let missing = d.path().join("no/such/x.json");
        let e = write_atomic(&missing, b"x").unwrap_err();
        assert_eq!(e.path, missing);
        assert_eq!(e.source.kind(), io::ErrorKind::NotFound);
        assert!(write_atomic(Path::new("/"), b"x").is_err());
    }

    #[test]
    fn devices_are_written_in_place_and_never_replaced() {
        use std::os::unix::fs::FileTypeExt;
        write_atomic(Path::new("/dev/null"), b"x").unwrap();
        let e = write_atomic(Path::new("/dev/full"), b"x").unwrap_err();
        assert_eq!(e.source.raw_os_error(), Some(libc::ENOSPC), "{e}");
        for dev in ["/dev/null", "/dev/full"] {
            let m = std::fs::symlink_metadata(dev).unwrap();
            assert!(m.file_type().is_char_device(), "{dev} is still a device");
        }
    }

    #[test]
    fn a_symlink_keeps_pointing_at_the_replaced_file() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real.json");
        let link = d.path().join("link.json");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        let dangling = d.path().join("dangling.json");
        std::os::unix::fs::symlink(d.path().join("nowhere/x"), &dangling).unwrap();
        assert!(write_atomic(&dangling, b"x").is_err());
    }
}
