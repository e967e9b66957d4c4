//! Names and metadata: rename, list, stat, remove, mkdir, cache control,
//! and the stat and remove storms (the create storm is [`super::create`]).

use super::{percent, resident, Storm};
use crate::api::{os_err, ApiError, Capability, Host};
use std::os::fd::AsRawFd;
use std::time::Instant;

/// A path's metadata as scripts read it (a Rhai map, the WIT record
/// `file-stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FileStat {
    /// Size in bytes.
    pub size: u64,
    /// True for directories.
    pub is_dir: bool,
    /// True for symlinks (never followed).
    pub is_symlink: bool,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
}

impl From<crate::sandbox::Stat> for FileStat {
    fn from(st: crate::sandbox::Stat) -> Self {
        FileStat {
            size: st.size,
            is_dir: st.is_dir,
            is_symlink: st.is_symlink,
            mtime: st.mtime,
        }
    }
}

impl Host {
    /// Renames a file or directory.
    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), ApiError> {
        Ok(self.run_dir().rename(from, to)?)
    }

    /// Names in a directory, sorted.
    pub fn list(&self, path: &str) -> Result<Vec<String>, ApiError> {
        Ok(self.run_dir().list(path)?)
    }

    /// Metadata of a path (a final symlink is not followed).
    pub fn stat(&self, path: &str) -> Result<FileStat, ApiError> {
        Ok(self.run_dir().stat(path)?.into())
    }

    /// True when the path exists in the run directory.
    pub fn exists(&self, path: &str) -> Result<bool, ApiError> {
        Ok(self.run_dir().exists(path)?)
    }

    /// Removes a file or empty directory; a file's bytes go back to the
    /// budget once its last link is gone and no handle, job or copy holds
    /// it open (then when the last of those closes); a directory's or a
    /// symlink's size was never charged, so it is not refunded.
    pub fn remove(&mut self, path: &str) -> Result<(), ApiError> {
        let freed = self.run_dir().remove(path)?;
        self.refund(freed);
        Ok(())
    }

    /// Removes a directory tree (or a file); the files' bytes go back to
    /// the budget as [`Host::remove`]'s do, also those removed before an
    /// error stopped it.
    pub fn remove_all(&mut self, path: &str) -> Result<(), ApiError> {
        match self.run_dir().remove_all(path) {
            Ok(freed) => {
                self.refund(freed);
                Ok(())
            }
            Err((e, freed)) => {
                self.refund(freed);
                Err(e.into())
            }
        }
    }

    /// Creates a directory.
    pub fn mkdir(&mut self, path: &str) -> Result<(), ApiError> {
        Ok(self.run_dir().mkdir(path)?)
    }

    /// Syncs every filesystem (sync(2)).
    pub fn sync_all(&mut self) {
        // SAFETY: plain syscall.
        unsafe { libc::sync() };
    }

    /// Drops the page cache (root only).
    pub fn drop_caches(&mut self) -> Result<(), ApiError> {
        self.allow(Capability::Root)?;
        self.sync_all();
        std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(os_err(
            "drop_caches (needs root): writing /proc/sys/vm/drop_caches",
        ))
    }

    /// Makes a directory's entries durable (fsync of the directory, as a
    /// database does after creating or renaming a file in it).
    pub fn fsync_dir(&mut self, path: &str) -> Result<(), ApiError> {
        let fd = self
            .run_dir()
            .open(path, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        // SAFETY: a plain syscall on a descriptor owned here.
        if unsafe { libc::fsync(fd.as_raw_fd()) } != 0 {
            return Err(os_err(format!("fsync_dir '{path}'"))(
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// Evicts one file from the page cache without root: writes it back
    /// (fsync), drops its pages (`POSIX_FADV_DONTNEED`), and checks with
    /// `mincore` that they went; pages that stayed (mapped or locked by
    /// another process) are noted, and a buffered read of the file then
    /// is marked cached.
    pub fn evict(&mut self, path: &str) -> Result<(), ApiError> {
        let fd = self.run_dir().open(path, libc::O_RDONLY, 0)?;
        let size = self.run_dir().stat(path)?.size;
        let left = resident::drop_pages(fd.as_raw_fd(), size)
            .map_err(os_err(format!("evict '{path}'")))?;
        if left.cached() {
            self.note_once(&format!("evict {path}"), &format!(
                "evict '{path}': {} of the file stayed in the page cache (mapped or locked elsewhere)",
                percent(left.share())
            ))?;
        }
        Ok(())
    }

    /// Bytes the scenario may still write: the least of what its byte
    /// budget (the pack's `max_bytes`, `--max-bytes`) has left and the
    /// target's free space now.
    pub fn room(&mut self) -> Result<u64, ApiError> {
        let free = crate::files::free_bytes(self.run_dir().path())
            .map_err(os_err("fs::room: statvfs of the run directory"))?;
        Ok(self.space.account().bytes_left().min(free))
    }

    /// Stats every entry of `dir`.
    pub fn stat_files(&mut self, dir: &str) -> Result<Storm, ApiError> {
        let names = self.run_dir().list(dir)?;
        let t = Instant::now();
        for (i, n) in names.iter().enumerate() {
            if i % 256 == 0 {
                self.check()?;
            }
            self.run_dir().stat(&format!("{dir}/{n}"))?;
        }
        Ok(Storm::measured(names.len() as u64, t, self.clock()))
    }

    /// Removes every file of `dir` (the directory stays).
    pub fn remove_files(&mut self, dir: &str) -> Result<Storm, ApiError> {
        let names = self.run_dir().list(dir)?;
        let t = Instant::now();
        for (i, n) in names.iter().enumerate() {
            if i % 256 == 0 {
                self.check()?;
            }
            self.remove(&format!("{dir}/{n}"))?;
        }
        Ok(Storm::measured(names.len() as u64, t, self.clock()))
    }
}
