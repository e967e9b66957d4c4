//! Saving result files so that a failure never costs the old file: every
//! result writer (`plumb run --json`, `plumb fio --json/--output`, charts,
//! `trace replay --json`) goes through [`write_atomic`].
//!
//! The text goes to a new file beside the destination (created with
//! `O_EXCL` under a unique name), is flushed to the disk, renamed over the
//! destination and the directory is flushed too. Any failure removes the
//! temporary file and leaves whatever was at the destination untouched.

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
    if path.is_dir() {
        return Err(fail(
            "not a file",
            io::Error::new(io::ErrorKind::IsADirectory, "it is a directory"),
        ));
    }
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
}
