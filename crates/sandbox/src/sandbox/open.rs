//! Opening beneath the run directory: `openat2(2)` with
//! `RESOLVE_BENEATH`, the files held open, the parent of a path's last
//! component.

use super::sys::{bad, check, cstr, io, os};
use super::{Held, Inode, Metering, RunDir, SandboxError};
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

pub(super) const RESOLVE_NO_SYMLINKS: u64 = 0x04;
pub(super) const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
pub(super) const RESOLVE_BENEATH: u64 = 0x08;

/// The kernel's `struct open_how`.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

impl RunDir {
    /// Opens `rel` beneath the run directory with `open(2)` flags. With
    /// `O_CREAT`, a file this call creates is charged to the account
    /// ([`RunDir::charge_new`]) before it exists.
    pub fn open(&self, rel: &str, flags: i32, mode: u32) -> Result<OwnedFd, SandboxError> {
        let root = self.root.as_raw_fd();
        if flags & libc::O_CREAT == 0 {
            return self.open_beneath(root, rel, flags, mode, "open");
        }
        if flags & libc::O_EXCL != 0 || self.metering == Metering::UpperBound {
            let charged = self.charge_new("open", rel)?;
            return self
                .open_beneath(root, rel, flags, mode, "open")
                .inspect_err(|_| self.account.refund(charged, 1));
        }
        // An existing file costs nothing: open it as it is, and charge only
        // when this call is the one that creates it.
        match self.open_beneath(root, rel, flags & !libc::O_CREAT, mode, "open") {
            Err(e) if e.errno() == Some(libc::ENOENT) => {}
            done => return done,
        }
        let charged = self.charge_new("open", rel)?;
        match self.open_beneath(root, rel, flags | libc::O_EXCL, mode, "open") {
            Ok(fd) => Ok(fd),
            // Made meanwhile by someone else, or a dangling symlink beneath:
            // open as asked, keeping the charge (at most one inode too many).
            Err(e) if e.errno() == Some(libc::EEXIST) => self
                .open_beneath(root, rel, flags, mode, "open")
                .inspect_err(|_| self.account.refund(charged, 1)),
            Err(e) => {
                self.account.refund(charged, 1);
                Err(e)
            }
        }
    }

    /// Opens `rel` as [`RunDir::open`] does, for a descriptor kept past the
    /// call (a handle, a background job's or copy's file): while it is
    /// open, removing the file frees nothing ([`RunDir::remove`]); its
    /// bytes are released when it closes ([`RunDir::take_released`]).
    pub fn open_held(&self, rel: &str, flags: i32, mode: u32) -> Result<Held, SandboxError> {
        let fd = self.open(rel, flags, mode)?;
        self.holds.hold(fd).map_err(|e| io(e, "open", rel))
    }

    /// Holds a duplicate of `fd`, a file opened beneath this directory, as
    /// [`RunDir::open_held`] would: the file stays counted as open (and its
    /// inode allocated) until the returned [`Held`] is dropped.
    pub fn hold_copy(&self, fd: BorrowedFd<'_>) -> std::io::Result<Held> {
        self.holds.hold(fd.try_clone_to_owned()?)
    }

    /// True when more than one descriptor holds `inode` (see
    /// [`holds::Holds::shared`]): truncating it then refunds nothing.
    pub fn shared(&self, inode: Inode) -> bool {
        self.holds.shared(inode)
    }

    /// Bytes freed since the last call by the closing of held files whose
    /// names were removed while they were open (for the byte budget).
    pub fn take_released(&self) -> u64 {
        self.holds.take_released()
    }

    pub(super) fn open_beneath(
        &self,
        dir: RawFd,
        rel: &str,
        flags: i32,
        mode: u32,
        op: &'static str,
    ) -> Result<OwnedFd, SandboxError> {
        let c = check(rel)?;
        loop {
            let e = match openat2(
                dir,
                &c,
                flags,
                mode,
                RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
            ) {
                Ok(fd) => return Ok(fd),
                Err(e) => e,
            };
            return Err(match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => continue,
                Some(libc::EXDEV) | Some(libc::ELOOP) => SandboxError::Escape {
                    path: rel.to_string(),
                },
                _ => SandboxError::Io {
                    op,
                    path: rel.to_string(),
                    source: e,
                },
            });
        }
    }

    /// The directory holding `rel` (opened beneath the root) and its last component.
    pub(super) fn parent_of(&self, rel: &str) -> Result<(OwnedFd, CString), SandboxError> {
        check(rel)?;
        let trimmed = rel.trim_end_matches('/');
        let (parent, name) = match trimmed.rsplit_once('/') {
            Some((p, n)) => (if p.is_empty() { "/" } else { p }, n),
            None => (".", trimmed),
        };
        if name.is_empty() || name == "." || name == ".." {
            return Err(SandboxError::BadPath {
                path: rel.to_string(),
                why: "it must end in a file or directory name",
            });
        }
        let dir = self.open_beneath(
            self.root.as_raw_fd(),
            parent,
            libc::O_PATH | libc::O_DIRECTORY,
            0,
            "open",
        )?;
        Ok((
            dir,
            cstr(name.as_bytes()).map_err(|_| bad(rel, "it contains a NUL byte"))?,
        ))
    }

    /// A path-taking call on what `rel` names (symlinks followed, but only
    /// beneath the run directory): `f` gets `/proc/self/fd/N` for it.
    pub(super) fn through_path(
        &self,
        rel: &str,
        op: &'static str,
        f: impl FnOnce(&CStr, RawFd) -> i32,
    ) -> Result<(), SandboxError> {
        let fd = self.open_beneath(self.root.as_raw_fd(), rel, libc::O_PATH, 0, op)?;
        let proc_path = cstr(format!("/proc/self/fd/{}", fd.as_raw_fd()).as_bytes())
            .map_err(|e| io(e, op, rel))?;
        os(f(&proc_path, fd.as_raw_fd()), op, rel)
    }
}

/// `openat2(2)` of `rel` beneath `dir` with the given `RESOLVE_*` flags
/// (`O_CLOEXEC` always added).
pub(super) fn openat2(
    dir: RawFd,
    rel: &CStr,
    flags: i32,
    mode: u32,
    resolve: u64,
) -> std::io::Result<OwnedFd> {
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: if flags & libc::O_CREAT != 0 {
            mode as u64
        } else {
            0
        },
        resolve,
    };
    // SAFETY: `how` and `rel` outlive the call; the size matches the struct.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            rel.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}
