//! Scratch files plumb keeps outside a run directory for a while (the
//! fleet agent's log of `plumb serve`, strace's log while recording). They
//! are never created by a guessable name in a directory others can write
//! (`/tmp`, `$TMPDIR`, the current directory), where a symlink planted
//! under that name would be written through: each lives in a
//! [`ScratchDir`], a directory `mkdtemp` makes (a fresh random name, mode
//! 0700, never an existing path), removed with what it holds when dropped.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// A private directory of this process, removed when dropped.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// Makes `PARENT/PREFIXxxxxxx` (six random characters), mode 0700.
    pub fn new(parent: &Path, prefix: &str) -> std::io::Result<ScratchDir> {
        let mut template = parent
            .join(format!("{prefix}XXXXXX"))
            .into_os_string()
            .into_vec();
        if template.contains(&0) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a NUL byte in the path",
            ));
        }
        template.push(0);
        // SAFETY: `template` is a NUL-terminated buffer mkdtemp may rewrite
        // in place (only its six trailing X's).
        if unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) }.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        template.pop();
        Ok(ScratchDir {
            path: PathBuf::from(OsString::from_vec(template)),
        })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Creates the file `path` for writing: a new file (never one already
/// there, nor through a symlink in its place), mode 0600.
pub fn create_new(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_scratch_directory_is_new_private_and_removed() {
        let t = tempfile::tempdir().unwrap();
        let d = ScratchDir::new(t.path(), "plumb-x-").unwrap();
        let path = d.path().to_path_buf();
        assert!(path
            .file_name()
            .unwrap()
            .as_bytes()
            .starts_with(b"plumb-x-"));
        let m = std::fs::symlink_metadata(&path).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.mode() & 0o777, 0o700);
        let f = path.join("log");
        create_new(&f).unwrap();
        assert!(create_new(&f).is_err(), "never an existing file");
        std::os::unix::fs::symlink(t.path().join("victim"), path.join("link")).unwrap();
        assert!(create_new(&path.join("link")).is_err());
        assert!(
            !t.path().join("victim").exists(),
            "nothing made through a symlink"
        );
        drop(d);
        assert!(!path.exists());
    }
}
