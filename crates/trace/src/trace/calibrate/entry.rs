//! One entry of a copy: a regular file's data with its holes kept, and an
//! entry's attributes (owner, extended attributes, mode, times) given to
//! its copy.

use super::copy::Tally;
use super::CalibrateError;
use rustix::fs::{AtFlags, Mode, SeekFrom, Timespec, Timestamps, XattrFlags, CWD};
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The most bytes the kernel holds in one extended attribute's value
/// (`XATTR_SIZE_MAX`), and in the list of an entry's names
/// (`XATTR_LIST_MAX`): buffers of this size never come back short.
const XATTR_MAX: usize = 64 * 1024;

/// What one read and write moves when `copy_file_range` cannot.
const CHUNK: usize = 1 << 20;

/// The most bytes charged and copied at once (so a stop is heard between
/// two pieces of a large file).
const PIECE: u64 = 64 << 20;

fn at(path: &Path) -> impl FnOnce(io::Error) -> CalibrateError + '_ {
    move |source| CalibrateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens `path` (a directory with `dir`) for reading without following a
/// symlink in its place and, where the kernel lets this process, without
/// changing its access time: copying is not reading as far as the user's
/// tree is concerned.
pub(super) fn open_quietly(path: &Path, dir: bool) -> Result<File, CalibrateError> {
    let flags = libc::O_NOFOLLOW | if dir { libc::O_DIRECTORY } else { 0 };
    let open = |extra: i32| {
        OpenOptions::new()
            .read(true)
            .custom_flags(flags | extra)
            .open(path)
    };
    match open(libc::O_NOATIME) {
        // O_NOATIME is for the file's owner (or CAP_FOWNER) only.
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(0),
        r => r,
    }
    .map_err(at(path))
}

/// Copies the regular file `src` (of `meta`) to the new file `dst`: only
/// its data, each range charged to `tally` before it is copied; its holes
/// stay holes (the copy is truncated to the size). At most `meta.len()`
/// bytes are read, however the file grows meanwhile.
pub(super) fn copy_data(
    src: &Path,
    meta: &Metadata,
    dst: &Path,
    tally: &mut Tally<'_>,
) -> Result<(), CalibrateError> {
    let from = open_quietly(src, false)?;
    let to = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dst)
        .map_err(at(dst))?;
    let size = meta.len();
    let mut pos = 0;
    while pos < size {
        let Some((start, end)) = next_data(&from, pos, size).map_err(at(src))? else {
            break;
        };
        let end = end.min(start.saturating_add(PIECE));
        tally.bytes(end - start)?;
        copy_range(&from, &to, start, end).map_err(at(dst))?;
        pos = end;
    }
    to.set_len(size).map_err(at(dst))
}

/// The next range of data at or after `pos` (ending at most at `size`),
/// or None when only a hole is left. A file system that cannot tell holes
/// apart gives all of it as data.
fn next_data(file: &File, pos: u64, size: u64) -> io::Result<Option<(u64, u64)>> {
    let start = match rustix::fs::seek(file, SeekFrom::Data(pos)) {
        Ok(s) => s,
        // No data past pos.
        Err(rustix::io::Errno::NXIO) => return Ok(None),
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::OPNOTSUPP) => {
            return Ok(Some((pos, size)))
        }
        Err(e) => return Err(e.into()),
    };
    if start >= size {
        return Ok(None);
    }
    let end = match rustix::fs::seek(file, SeekFrom::Hole(start)) {
        Ok(e) => e.min(size),
        Err(e) => return Err(e.into()),
    };
    Ok(Some((start, end.max(start))))
}

/// Copies bytes `start..end` of `from` to the same place in `to`, in the
/// kernel when it can; a file that shrinks meanwhile ends the copy early.
fn copy_range(from: &File, to: &File, start: u64, end: u64) -> io::Result<()> {
    let mut off = start;
    while off < end {
        let want = usize::try_from(end - off).unwrap_or(usize::MAX);
        let (mut i, mut o) = (off, off);
        match rustix::fs::copy_file_range(from, Some(&mut i), to, Some(&mut o), want) {
            Ok(0) => return Ok(()),
            Ok(n) => off += n as u64,
            Err(
                rustix::io::Errno::XDEV
                | rustix::io::Errno::INVAL
                | rustix::io::Errno::NOSYS
                | rustix::io::Errno::OPNOTSUPP,
            ) => return copy_by_reads(from, to, off, end),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// [`copy_range`] through a buffer.
fn copy_by_reads(from: &File, to: &File, mut off: u64, end: u64) -> io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    while off < end {
        let want = usize::try_from(end - off).unwrap_or(CHUNK).min(CHUNK);
        let n = from.read_at(&mut buf[..want], off)?;
        if n == 0 {
            return Ok(());
        }
        to.write_all_at(&buf[..n], off)?;
        off += n as u64;
    }
    Ok(())
}

/// Gives the copy `dst` the attributes of `src` (of `meta`): owner,
/// extended attributes, mode (not a symlink's) and times, in that order
/// (a change of owner clears set-id bits and file capabilities, and the
/// times come last because every other change touches them). A change of
/// owner this process may not make (not root) leaves the copy its own.
pub(super) fn copy_attributes(
    src: &Path,
    meta: &Metadata,
    dst: &Path,
) -> Result<(), CalibrateError> {
    let owner = rustix::fs::chownat(
        CWD,
        dst,
        Some(rustix::fs::Uid::from_raw(meta.uid())),
        Some(rustix::fs::Gid::from_raw(meta.gid())),
        AtFlags::SYMLINK_NOFOLLOW,
    );
    match owner {
        Ok(()) => {}
        Err(rustix::io::Errno::PERM) if !rustix::process::geteuid().is_root() => {}
        Err(e) => return Err(at(dst)(e.into())),
    }
    copy_xattrs(src, dst)?;
    if !meta.file_type().is_symlink() {
        rustix::fs::chmodat(
            CWD,
            dst,
            Mode::from_raw_mode(meta.mode() & 0o7777),
            AtFlags::empty(),
        )
        .map_err(|e| at(dst)(e.into()))?;
    }
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: meta.atime(),
            tv_nsec: meta.atime_nsec() as _,
        },
        last_modification: Timespec {
            tv_sec: meta.mtime(),
            tv_nsec: meta.mtime_nsec() as _,
        },
    };
    rustix::fs::utimensat(CWD, dst, &times, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| at(dst)(e.into()))
}

/// Copies every extended attribute of `src` this process can read
/// (`user.*`, ACLs, and as root `trusted.*` and `security.*`) to `dst`,
/// neither followed if a symlink. One the copy cannot take is an error:
/// the untraced run must see what the traced run saw.
fn copy_xattrs(src: &Path, dst: &Path) -> Result<(), CalibrateError> {
    let mut names = vec![0u8; XATTR_MAX];
    let len = match rustix::fs::llistxattr(src, &mut names[..]) {
        Ok(n) => n,
        Err(rustix::io::Errno::NOTSUP) => return Ok(()),
        Err(e) => return Err(at(src)(e.into())),
    };
    names.truncate(len);
    let mut value = vec![0u8; XATTR_MAX];
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name =
            std::ffi::CString::new(name).map_err(|_| at(src)(io::ErrorKind::InvalidData.into()))?;
        let failed = |source: rustix::io::Errno| CalibrateError::Xattr {
            path: src.to_path_buf(),
            name: name.to_string_lossy().into_owned(),
            source: source.into(),
        };
        let n = match rustix::fs::lgetxattr(src, name.as_c_str(), &mut value[..]) {
            Ok(n) => n,
            // Removed since it was listed.
            Err(rustix::io::Errno::NODATA) => continue,
            Err(e) => return Err(failed(e)),
        };
        rustix::fs::lsetxattr(dst, name.as_c_str(), &value[..n], XattrFlags::empty()).map_err(
            |e| CalibrateError::Xattr {
                path: dst.to_path_buf(),
                name: name.to_string_lossy().into_owned(),
                source: e.into(),
            },
        )?;
    }
    Ok(())
}
