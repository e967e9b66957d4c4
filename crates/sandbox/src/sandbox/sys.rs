//! The system calls and small helpers beneath the run directory's
//! operations: errors naming the path, `fstatat`, directory listing,
//! depth-first removal.

use super::{Inode, SandboxError, Stat};
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The last component of `rel` (what names the inode in its directory).
pub(super) fn last_name(rel: &str) -> &str {
    let trimmed = rel.trim_end_matches('/');
    trimmed.rsplit_once('/').map_or(trimmed, |(_, n)| n)
}

/// The error of a path that is not a usable name, saying why.
pub(super) fn bad(rel: &str, why: &'static str) -> SandboxError {
    SandboxError::BadPath {
        path: rel.to_string(),
        why,
    }
}

/// The error of an operation the system refused on `rel`.
pub(super) fn io(source: std::io::Error, op: &'static str, rel: &str) -> SandboxError {
    SandboxError::Io {
        op,
        path: rel.to_string(),
        source,
    }
}

/// A libc call's return `r` as a result: 0 is success, else the last OS
/// error of operation `op` on `rel`.
pub(super) fn os(r: i32, op: &'static str, rel: &str) -> Result<(), SandboxError> {
    if r == 0 {
        Ok(())
    } else {
        Err(io(std::io::Error::last_os_error(), op, rel))
    }
}

/// `bytes` as a C string; a NUL inside is `EINVAL`.
pub(super) fn cstr(bytes: &[u8]) -> std::io::Result<CString> {
    CString::new(bytes).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

/// Rejects what is never a valid scenario path; escapes are left to openat2.
pub(super) fn check(rel: &str) -> Result<CString, SandboxError> {
    if rel.is_empty() {
        return Err(bad(rel, "it is empty"));
    }
    if rel.starts_with('/') {
        return Err(SandboxError::Escape {
            path: rel.to_string(),
        });
    }
    cstr(rel.as_bytes()).map_err(|_| bad(rel, "it contains a NUL byte"))
}

/// A `libc::stat` as a [`Stat`].
pub(super) fn stat_of(st: &libc::stat) -> Stat {
    let kind = st.st_mode & libc::S_IFMT;
    Stat {
        size: st.st_size as u64,
        is_dir: kind == libc::S_IFDIR,
        is_symlink: kind == libc::S_IFLNK,
        mtime: st.st_mtime,
        links: st.st_nlink,
        inode: Inode {
            dev: st.st_dev,
            ino: st.st_ino,
        },
    }
}

/// The [`Stat`] of `name` in `dir`, never following a symlink.
pub(super) fn fstatat(dir: RawFd, name: &CStr) -> std::io::Result<Stat> {
    // SAFETY: fstatat fills the zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stat_of(&st))
}

/// The [`Stat`] of an open descriptor.
pub(super) fn fstat(fd: RawFd) -> std::io::Result<Stat> {
    // SAFETY: fstat fills the zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stat_of(&st))
}

/// Entry names of an open directory (without `.` and `..`).
pub(super) fn read_dir_fd(fd: RawFd) -> std::io::Result<Vec<String>> {
    // SAFETY: fdopendir takes ownership of a duplicate; closedir releases it.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let dirp = unsafe { libc::fdopendir(dup) };
    if dirp.is_null() {
        let e = std::io::Error::last_os_error();
        unsafe { libc::close(dup) };
        return Err(e);
    }
    unsafe { libc::rewinddir(dirp) };
    let mut names = Vec::new();
    loop {
        // SAFETY: readdir returns entries owned by `dirp` until the next call.
        let ent = unsafe { libc::readdir(dirp) };
        if ent.is_null() {
            break;
        }
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        if name != "." && name != ".." {
            names.push(name);
        }
    }
    unsafe { libc::closedir(dirp) };
    Ok(names)
}

/// Removes `name` in `dir`: a file or symlink directly, a directory depth
/// first; `removed` is told of each file or symlink removed, as it was.
pub(super) fn remove_tree(
    dir: RawFd,
    name: &CStr,
    removed: &mut dyn FnMut(&Stat),
) -> std::io::Result<()> {
    let st = fstatat(dir, name)?;
    if st.is_dir {
        // SAFETY: opens the subdirectory relative to `dir` without following symlinks.
        let fd = unsafe {
            libc::openat(
                dir,
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a new descriptor owned here.
        let sub = unsafe { OwnedFd::from_raw_fd(fd) };
        for child in read_dir_fd(sub.as_raw_fd())? {
            remove_tree(sub.as_raw_fd(), &cstr(child.as_bytes())?, removed)?;
        }
        // SAFETY: valid descriptor and C string.
        if unsafe { libc::unlinkat(dir, name.as_ptr(), libc::AT_REMOVEDIR) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        removed(&st);
    } else if unsafe { libc::unlinkat(dir, name.as_ptr(), 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    } else {
        removed(&st);
    }
    Ok(())
}
