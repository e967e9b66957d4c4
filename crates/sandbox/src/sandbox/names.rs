//! What a scenario does to names beneath the run directory: make, remove,
//! rename, link, stat and list them, each charged to (or refunded from)
//! the run's account.

use super::sys::{bad, cstr, fstat, fstatat, io, last_name, os, read_dir_fd, remove_tree};
use super::{account, Metering, RunDir, SandboxError, Stat, INODE_BYTES};
use std::os::fd::AsRawFd;

impl RunDir {
    /// Charges one new inode named by `rel`'s last component: the inode,
    /// its block and its directory entry ([`account`]). Returns the bytes
    /// charged, to refund if the creation fails.
    pub(super) fn charge_new(&self, op: &'static str, rel: &str) -> Result<u64, SandboxError> {
        let bytes = INODE_BYTES + account::entry_bytes(last_name(rel).as_bytes());
        self.account
            .charge(op, bytes, 1)
            .map(|()| bytes)
            .map_err(|source| SandboxError::Budget {
                path: rel.to_string(),
                source,
            })
    }

    /// Gives back the inode a removed name `st` described, when it was the
    /// last name (or a directory): its block and the inode itself.
    pub(super) fn refund_removed(&self, st: &Stat) {
        if self.metering == Metering::Exact && (st.is_dir || st.links <= 1) {
            self.account.refund(INODE_BYTES, 1);
        }
    }

    /// Creates a directory (charged as a new inode).
    pub fn mkdir(&self, rel: &str) -> Result<(), SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        let charged = self.charge_new("mkdir", rel)?;
        // SAFETY: valid descriptor and C string.
        let r = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) };
        os(r, "mkdir", rel).inspect_err(|_| self.account.refund(charged, 1))
    }

    /// Removes a file or an empty directory (a symlink is removed, not
    /// followed). Returns the bytes that freed: a regular file's size when
    /// this was its last name and no held descriptor keeps it open (then
    /// they are released when the last one closes).
    pub fn remove(&self, rel: &str) -> Result<u64, SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        let st = fstatat(dir.as_raw_fd(), &name).map_err(|e| io(e, "remove", rel))?;
        let flag = if st.is_dir { libc::AT_REMOVEDIR } else { 0 };
        // SAFETY: valid descriptor and C string.
        let r = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flag) };
        os(r, "remove", rel)?;
        self.refund_removed(&st);
        Ok(self.holds.removed(&st))
    }

    /// Removes a file or symlink, as `unlink(2)` (a directory is refused
    /// by the kernel, not here); the inode goes back to the account when
    /// this was its last name.
    pub fn unlink(&self, rel: &str) -> Result<(), SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        let st = match self.metering {
            Metering::Exact => fstatat(dir.as_raw_fd(), &name).ok(),
            Metering::UpperBound => None,
        };
        // SAFETY: valid descriptor and C string.
        let r = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
        os(r, "unlink", rel)?;
        if let Some(st) = st {
            self.refund_removed(&st);
        }
        Ok(())
    }

    /// Removes an empty directory (its inode goes back to the account).
    pub fn rmdir(&self, rel: &str) -> Result<(), SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        // SAFETY: valid descriptor and C string.
        let r = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) };
        os(r, "rmdir", rel)?;
        if self.metering == Metering::Exact {
            self.account.refund(INODE_BYTES, 1);
        }
        Ok(())
    }

    /// `renameat2(2)` within the run directory, with its flags
    /// (`RENAME_NOREPLACE`, `RENAME_EXCHANGE` or 0). A target replaced by
    /// the rename gives its inode back when that was its last name (the
    /// moved name's entry is not charged again: the old one's space is
    /// free for it).
    pub fn rename_with(&self, from: &str, to: &str, flags: u32) -> Result<(), SandboxError> {
        let (fd_a, a) = self.parent_of(from)?;
        let (fd_b, b) = self.parent_of(to)?;
        let replaced =
            if flags & libc::RENAME_EXCHANGE != 0 || self.metering == Metering::UpperBound {
                None
            } else {
                let source = fstatat(fd_a.as_raw_fd(), &a).ok();
                fstatat(fd_b.as_raw_fd(), &b)
                    .ok()
                    .filter(|t| source.is_some_and(|s| s.inode != t.inode))
            };
        // SAFETY: valid descriptors and C strings.
        let r = unsafe {
            libc::renameat2(
                fd_a.as_raw_fd(),
                a.as_ptr(),
                fd_b.as_raw_fd(),
                b.as_ptr(),
                flags,
            )
        };
        os(r, "rename", from)?;
        if let Some(t) = replaced {
            self.refund_removed(&t);
        }
        Ok(())
    }

    /// A hard link `to` for the file at `from` (a final symlink is linked
    /// itself, not followed).
    pub fn link(&self, from: &str, to: &str) -> Result<(), SandboxError> {
        let (fd_a, a) = self.parent_of(from)?;
        let (fd_b, b) = self.parent_of(to)?;
        let entry = account::entry_bytes(b.as_bytes());
        self.account
            .charge_bytes("link", entry)
            .map_err(|source| SandboxError::Budget {
                path: to.to_string(),
                source,
            })?;
        // SAFETY: valid descriptors and C strings.
        let r = unsafe {
            libc::linkat(
                fd_a.as_raw_fd(),
                a.as_ptr(),
                fd_b.as_raw_fd(),
                b.as_ptr(),
                0,
            )
        };
        os(r, "link", to).inspect_err(|_| self.account.refund(entry, 0))
    }

    /// A symlink at `rel` holding `target` verbatim (absolute, climbing or
    /// not): making a link follows nothing, and every later resolution
    /// through it stays beneath the run directory ([`SandboxError::Escape`]).
    pub fn symlink(&self, target: &str, rel: &str) -> Result<(), SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        let t = cstr(target.as_bytes()).map_err(|_| bad(target, "it contains a NUL byte"))?;
        let charged = self.charge_new("symlink", rel)?;
        // SAFETY: valid descriptor and C strings.
        let r = unsafe { libc::symlinkat(t.as_ptr(), dir.as_raw_fd(), name.as_ptr()) };
        os(r, "symlink", rel).inspect_err(|_| self.account.refund(charged, 1))
    }

    /// What the symlink at `rel` holds (never followed).
    pub fn readlink(&self, rel: &str) -> Result<String, SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        let mut buf = vec![0u8; libc::PATH_MAX as usize];
        // SAFETY: the buffer and its length match; valid descriptor and C string.
        let n = unsafe {
            libc::readlinkat(
                dir.as_raw_fd(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(io(std::io::Error::last_os_error(), "readlink", rel));
        }
        buf.truncate(n as usize);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// Sets the access and modification times of `rel` to now (a final
    /// symlink is changed itself, not followed).
    pub fn touch(&self, rel: &str) -> Result<(), SandboxError> {
        let (dir, name) = self.parent_of(rel)?;
        // SAFETY: valid descriptor and C string; null times mean now.
        let r = unsafe {
            libc::utimensat(
                dir.as_raw_fd(),
                name.as_ptr(),
                std::ptr::null(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        os(r, "utimes", rel)
    }

    /// `chmod(2)` of `rel`.
    pub fn chmod(&self, rel: &str, mode: u32) -> Result<(), SandboxError> {
        // SAFETY: a valid C string.
        self.through_path(rel, "chmod", |p, _| unsafe {
            libc::chmod(p.as_ptr(), mode)
        })
    }

    /// `truncate(2)` of `rel` to `len` bytes.
    pub fn truncate(&self, rel: &str, len: u64) -> Result<(), SandboxError> {
        let len =
            i64::try_from(len).map_err(|_| bad(rel, "the length does not fit a file size"))?;
        // SAFETY: a valid C string.
        self.through_path(rel, "truncate", |p, _| unsafe {
            libc::truncate(p.as_ptr(), len)
        })
    }

    /// `access(2)` of `rel`: does it exist (following symlinks beneath).
    pub fn access(&self, rel: &str) -> Result<(), SandboxError> {
        // SAFETY: a valid C string.
        self.through_path(rel, "access", |p, _| unsafe {
            libc::access(p.as_ptr(), libc::F_OK)
        })
    }

    /// `statfs(2)` of the file system holding `rel`.
    pub fn statfs(&self, rel: &str) -> Result<(), SandboxError> {
        self.through_path(rel, "statfs", |_, fd| {
            // SAFETY: fstatfs fills the zeroed struct; valid descriptor.
            let mut st: libc::statfs = unsafe { std::mem::zeroed() };
            unsafe { libc::fstatfs(fd, &mut st) }
        })
    }

    /// Removes a directory tree (never following symlinks), or a single
    /// file, and returns the bytes that freed (what [`RunDir::remove`]
    /// would say, summed over what was removed). An error part way comes
    /// with the bytes freed before it, so the caller can still give them
    /// back.
    pub fn remove_all(&self, rel: &str) -> Result<u64, (SandboxError, u64)> {
        let (dir, name) = self.parent_of(rel).map_err(|e| (e, 0))?;
        let mut freed = 0u64;
        let mut count = |st: &Stat| {
            self.refund_removed(st);
            freed = freed.saturating_add(self.holds.removed(st));
        };
        remove_tree(dir.as_raw_fd(), &name, &mut count)
            .map(|()| freed)
            .map_err(|e| (io(e, "remove_all", rel), freed))
    }

    /// Renames within the run directory (replacing the target, like rename(2)).
    pub fn rename(&self, from: &str, to: &str) -> Result<(), SandboxError> {
        self.rename_with(from, to, 0)
    }

    /// Metadata of a path (not following a final symlink).
    pub fn stat(&self, rel: &str) -> Result<Stat, SandboxError> {
        if rel.trim_end_matches('/').is_empty() || rel == "." {
            return fstat(self.root.as_raw_fd()).map_err(|e| io(e, "stat", rel));
        }
        let (dir, name) = self.parent_of(rel)?;
        fstatat(dir.as_raw_fd(), &name).map_err(|e| io(e, "stat", rel))
    }

    /// True when the path exists inside the run directory.
    pub fn exists(&self, rel: &str) -> Result<bool, SandboxError> {
        match self.stat(rel) {
            Ok(_) => Ok(true),
            Err(e) if e.errno() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Names in a directory, sorted.
    pub fn list(&self, rel: &str) -> Result<Vec<String>, SandboxError> {
        let fd = self.open_beneath(
            self.root.as_raw_fd(),
            rel,
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
            "list",
        )?;
        let mut names = read_dir_fd(fd.as_raw_fd()).map_err(|e| io(e, "list", rel))?;
        names.sort();
        Ok(names)
    }
}
