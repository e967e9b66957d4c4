//! Showing a copy at the root's path to one process and its children: a
//! private mount namespace (`unshare(CLONE_NEWNS)`, every mount made
//! private so nothing propagates back) in which the copy is bind-mounted
//! over the root. Other processes, plumb included, still see the user's
//! tree. Root (`CAP_SYS_ADMIN`) may do this; another user where the
//! kernel gives unprivileged user namespaces, in one that maps the user
//! to itself (the program's capabilities there end at its `exec`).
//!
//! The code that runs between `fork` and `exec` must not allocate: every
//! path and map line is made before.
//!
//! The same kind of namespace, on a thread of plumb's own, lets the copy
//! read the user's tree without moving its access times
//! ([`without_atime`]).

use super::CalibrateError;
use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// The identity maps `ID ID 1` of this process's user and group, for a
/// user namespace, written before any fork.
#[derive(Clone, Copy)]
struct Maps {
    uid: Line,
    gid: Line,
}

/// One short line in a fixed buffer.
#[derive(Clone, Copy)]
struct Line {
    buf: [u8; 40],
    len: usize,
}

impl Line {
    /// `ID ID 1`.
    fn identity(id: u32) -> Line {
        let text = format!("{id} {id} 1");
        let mut buf = [0u8; 40];
        buf[..text.len()].copy_from_slice(text.as_bytes());
        Line {
            buf,
            len: text.len(),
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Maps {
    fn mine() -> Maps {
        Maps {
            uid: Line::identity(rustix::process::geteuid().as_raw()),
            gid: Line::identity(rustix::process::getegid().as_raw()),
        }
    }
}

/// The error of the last system call (no allocation).
fn last() -> io::Error {
    io::Error::last_os_error()
}

/// Writes `data` to the file `path` (a /proc file). No allocation.
fn write_proc(path: &CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(last());
    }
    // SAFETY: `data` is valid for its length; fd is open.
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let err = last();
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    if n < 0 || n as usize != data.len() {
        return Err(err);
    }
    Ok(())
}

/// Moves this (single-threaded) process into a mount namespace of its
/// own whose mounts are all private. Without the right to, it tries a
/// user namespace that maps it to itself. No allocation.
fn private_mounts(maps: &Maps) -> io::Result<()> {
    // SAFETY: unshare and mount take flags and NUL-terminated strings.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            if last().raw_os_error() != Some(libc::EPERM) {
                return Err(last());
            }
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                return Err(last());
            }
            write_proc(c"/proc/self/setgroups", b"deny")?;
            write_proc(c"/proc/self/uid_map", maps.uid.bytes())?;
            write_proc(c"/proc/self/gid_map", maps.gid.bytes())?;
        }
        let none: *const libc::c_char = std::ptr::null();
        if libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(last());
        }
    }
    Ok(())
}

/// Whether this process may show a copy at the root's path: a child is
/// forked that only tries [`private_mounts`] and exits; the reason when
/// not.
pub fn check_hiding() -> Result<(), CalibrateError> {
    let maps = Maps::mine();
    // SAFETY: the child only makes system calls (no allocation, no lock)
    // and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(CalibrateError::Namespace(last()));
    }
    if pid == 0 {
        let code = match private_mounts(&maps) {
            Ok(()) => 0,
            Err(e) => e.raw_os_error().unwrap_or(255).clamp(1, 255),
        };
        // SAFETY: ends the child without running the parent's handlers.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for the child forked above.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        if last().raw_os_error() != Some(libc::EINTR) {
            return Err(CalibrateError::Namespace(last()));
        }
    }
    match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
        Some(0) => Ok(()),
        Some(255) | None => Err(CalibrateError::Namespace(io::Error::other(
            "the check ended abnormally",
        ))),
        Some(errno) => Err(CalibrateError::Namespace(io::Error::from_raw_os_error(
            errno,
        ))),
    }
}

/// `struct mount_attr` of `mount_setattr(2)` (Linux 5.12).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `MOUNT_ATTR_NOATIME`, and `MOUNT_ATTR__ATIME`, the field it is one
/// value of.
const MOUNT_ATTR_NOATIME: u64 = 0x10;
const MOUNT_ATTR_ATIME_FIELD: u64 = 0x70;

/// Gives the calling thread a mount namespace of its own in which every
/// mount reads without updating access times.
fn quiet_mounts() -> io::Result<()> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_NOATIME,
        attr_clr: MOUNT_ATTR_ATIME_FIELD,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: unshare, mount and mount_setattr take flags, NUL-terminated
    // strings and a struct of the size given.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(last());
        }
        let none: *const libc::c_char = std::ptr::null();
        if libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(last());
        }
        if libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c"/".as_ptr(),
            libc::AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        ) != 0
        {
            return Err(last());
        }
    }
    Ok(())
}

/// Runs `f` on a thread of its own that sees every mount as `noatime`
/// (in a mount namespace of its own, which ends with the thread): what it
/// reads keeps its access time, symlinks included (whose target no
/// `O_NOATIME` can read). Where this cannot be set up (not root, a kernel
/// before 5.12), `f` runs all the same on that thread, and the reads that
/// `O_NOATIME` spares (what this process owns, or all as root) are the
/// only ones that leave access times alone.
pub(super) fn without_atime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = quiet_mounts();
            f()
        })
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn cstring(path: &Path) -> Result<CString, CalibrateError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| CalibrateError::Io {
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"),
    })
}

/// `program` with `args`, to be run in a mount namespace of its own where
/// `copy` is bind-mounted over `root`, from the directory `cwd` as seen
/// there (so a `cwd` under the root is the copy's). A failure to set this
/// up is the spawn's error.
pub(super) fn command(
    copy: &Path,
    root: &Path,
    cwd: &Path,
    program: &str,
    args: &[String],
) -> Result<Command, CalibrateError> {
    let (copy, root, cwd) = (cstring(copy)?, cstring(root)?, cstring(cwd)?);
    let maps = Maps::mine();
    let mut cmd = Command::new(program);
    cmd.args(args);
    let setup = move || -> io::Result<()> {
        private_mounts(&maps)?;
        // SAFETY: NUL-terminated paths made before the fork.
        unsafe {
            if libc::mount(
                copy.as_ptr(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            ) != 0
            {
                return Err(last());
            }
            // The directory the process was in is the user's, under the
            // copy now: enter it again by name.
            if libc::chdir(cwd.as_ptr()) != 0 {
                return Err(last());
            }
        }
        Ok(())
    };
    // SAFETY: `setup` makes system calls only, on data made before the
    // fork (no allocation, no lock).
    unsafe { cmd.pre_exec(setup) };
    Ok(cmd)
}
