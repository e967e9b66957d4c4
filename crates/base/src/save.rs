//! Saving result files so that a failure never costs the old file: every
//! result writer (`plumb run --json`, `plumb fio --json/--output`, charts,
//! `trace replay --json`, `plumb report`'s page) goes through [`Dir::write`]
//! or [`write_atomic`], which share one way of replacing a file.
//!
//! The text goes to a new file beside the destination (created with
//! `O_EXCL` under a unique name), is flushed to the disk, renamed over the
//! destination and the directory is flushed too. Any failure removes the
//! temporary file and leaves whatever was at the destination untouched.
//! The directory is held open from the start, so every step lands in the
//! one directory whatever happens to its path meanwhile, and the rename
//! replaces the name itself: a symlink put in its place is replaced, never
//! written through.
//!
//! Two rules for what is found at the destination:
//! - [`Dir::write`] (a published page and its charts, where the folder may
//!   be a stranger's): only a regular file or nothing; a symlink, a
//!   directory, a device or a pipe in its place is refused
//!   ([`SaveError::refused`]), and a subfolder ([`Dir::sub`]) is never
//!   entered through a symlink either.
//! - [`write_atomic`] (result files the user names): a destination that
//!   exists and is not a regular file (`/dev/stdout`, a terminal,
//!   `/dev/null`, a pipe) is written in place: renaming over it would
//!   replace the device node or the symlink itself. A symlink to a regular
//!   file has its target replaced, and stays a symlink.

use std::ffi::{CString, OsStr, OsString};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
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
    /// Whether what is in the destination's place was refused (bad input,
    /// not a failure to write): see [`Dir::check`].
    refused: bool,
}

impl SaveError {
    /// A failure of `step` to write `path`.
    fn failed(path: &Path, step: &'static str, source: io::Error) -> SaveError {
        SaveError {
            path: path.to_path_buf(),
            step,
            source,
            refused: false,
        }
    }

    /// `path` refused: what is in its place (`what`) is not written through.
    fn refusal(path: &Path, what: &'static str) -> SaveError {
        SaveError {
            path: path.to_path_buf(),
            step: what,
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                "refused: plumb never writes through it nor replaces it; remove it or name another place",
            ),
            refused: true,
        }
    }

    /// Whether what is in the destination's place was refused (bad input,
    /// not a failure to write; see [`Dir::check`]).
    pub fn refused(&self) -> bool {
        self.refused
    }
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

/// `name` as a C string for the `*at` calls (a file name holds no NUL).
fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// The result of a libc call that returns -1 on failure.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// What is at a name, seen without following a symlink there.
enum Found {
    /// Nothing.
    Nothing,
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link.
    Link,
    /// A device, a pipe or a socket.
    Other,
}

/// A directory held open, to write files in (see the module comment).
#[derive(Debug)]
pub struct Dir {
    /// The open directory.
    fd: OwnedFd,
    /// Its path, for messages.
    path: PathBuf,
}

impl Dir {
    /// The directory that holds `path` (its parent, `.` when it names
    /// none), followed as the user wrote it, and `path`'s file name.
    pub fn of(path: &Path) -> Result<(Dir, &OsStr), SaveError> {
        let name = path.file_name().ok_or_else(|| {
            SaveError::failed(
                path,
                "not a file name",
                io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"),
            )
        })?;
        let parent = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let dir = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(parent)
            .map_err(|e| SaveError::failed(path, "open its directory", e))?;
        Ok((
            Dir {
                fd: dir.into(),
                path: parent.to_path_buf(),
            },
            name,
        ))
    }

    /// The path of `name` in this directory, for messages.
    fn at(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }

    /// What is at `name`, its symlink not followed.
    fn find(&self, name: &OsStr) -> io::Result<Found> {
        let c = c_name(name)?;
        // SAFETY: an all-zero `stat` is a valid value to be filled in.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid directory descriptor, C string and stat buffer.
        let ret = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if let Err(e) = check(ret) {
            return match e.kind() {
                io::ErrorKind::NotFound => Ok(Found::Nothing),
                _ => Err(e),
            };
        }
        Ok(match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Found::File,
            libc::S_IFDIR => Found::Directory,
            libc::S_IFLNK => Found::Link,
            _ => Found::Other,
        })
    }

    /// The directory `name` in this one, made when missing; a symlink (or
    /// anything but a directory) in its place is refused, never entered.
    pub fn sub(&self, name: &OsStr) -> Result<Dir, SaveError> {
        let path = self.at(name);
        let fail = |step, e| SaveError::failed(&path, step, e);
        let c = c_name(name).map_err(|e| fail("name", e))?;
        // SAFETY: a valid directory descriptor and C string.
        if let Err(e) = check(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) }) {
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(fail("make the directory", e));
            }
        }
        // SAFETY: a valid directory descriptor and C string; the new
        // descriptor is owned below.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        match check(fd) {
            // SAFETY: `fd` was just opened and is owned by nothing else.
            Ok(fd) => Ok(Dir {
                fd: unsafe { OwnedFd::from_raw_fd(fd) },
                path,
            }),
            Err(e) => Err(match self.find(name) {
                Ok(Found::Link) => SaveError::refusal(&path, "a symbolic link in its place"),
                Ok(Found::File | Found::Other) => {
                    SaveError::refusal(&path, "not a directory in its place")
                }
                _ => fail("open the directory", e),
            }),
        }
    }

    /// Whether [`Dir::write`] may write `name`: nothing or a regular file
    /// is there; a symlink, a directory, a device or a pipe is refused.
    /// For a caller that writes several files and must refuse before it
    /// writes the first.
    pub fn check(&self, name: &OsStr) -> Result<(), SaveError> {
        let path = self.at(name);
        match self.find(name) {
            Ok(Found::Nothing | Found::File) => Ok(()),
            Ok(Found::Link) => Err(SaveError::refusal(&path, "a symbolic link in its place")),
            Ok(Found::Directory) => Err(SaveError::refusal(&path, "a directory in its place")),
            Ok(Found::Other) => Err(SaveError::refusal(&path, "not a regular file in its place")),
            Err(e) => Err(SaveError::failed(&path, "inspect", e)),
        }
    }

    /// Replaces the file `name` in this directory with `bytes`, all or
    /// nothing, after [`Dir::check`]: what it refuses is left as it is.
    pub fn write(&self, name: &OsStr, bytes: &[u8]) -> Result<(), SaveError> {
        self.check(name)?;
        self.replace(name, bytes)
    }

    /// Writes `bytes` to a new temporary file in this directory, flushes
    /// it, renames it over `name` (whatever is there now: the name is
    /// replaced, not followed) and flushes the directory; the temporary
    /// file is removed on any failure.
    fn replace(&self, name: &OsStr, bytes: &[u8]) -> Result<(), SaveError> {
        let path = self.at(name);
        let fail = |step, e| SaveError::failed(&path, step, e);
        let (tmp, mut file) = self
            .create_temp(name)
            .map_err(|e| fail("create a temporary file", e))?;
        let c = c_name(name).map_err(|e| fail("name", e))?;
        let dirfd = self.fd.as_raw_fd();
        let written = file
            .write_all(bytes)
            .map_err(|e| ("write", e))
            .and_then(|()| file.sync_all().map_err(|e| ("flush to disk", e)))
            .and_then(|()| {
                drop(file);
                // SAFETY: a valid directory descriptor and C strings.
                check(unsafe { libc::renameat(dirfd, tmp.as_ptr(), dirfd, c.as_ptr()) })
                    .map_err(|e| ("rename over", e))
            });
        if let Err((step, e)) = written {
            // SAFETY: a valid directory descriptor and C string.
            unsafe { libc::unlinkat(dirfd, tmp.as_ptr(), 0) };
            return Err(fail(step, e));
        }
        // The new name is in place; flushing the directory makes the rename durable.
        // SAFETY: a valid descriptor.
        check(unsafe { libc::fsync(dirfd) })
            .map(drop)
            .map_err(|e| fail("flush the directory", e))
    }

    /// Creates `.NAME.PID.N.tmp` in this directory, never reusing an
    /// existing file nor following a symlink.
    fn create_temp(&self, name: &OsStr) -> io::Result<(CString, File)> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut tries = 0;
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            tries += 1;
            let mut tmp_name = OsString::from(".");
            tmp_name.push(name);
            tmp_name.push(format!(".{}.{n}.tmp", std::process::id()));
            let tmp = c_name(&tmp_name)?;
            // SAFETY: a valid directory descriptor and C string; the new
            // descriptor is owned below.
            let fd = unsafe {
                libc::openat(
                    self.fd.as_raw_fd(),
                    tmp.as_ptr(),
                    libc::O_WRONLY
                        | libc::O_CREAT
                        | libc::O_EXCL
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC,
                    0o644 as libc::c_uint,
                )
            };
            match check(fd) {
                // SAFETY: `fd` was just opened and is owned by nothing else.
                Ok(fd) => return Ok((tmp, unsafe { File::from_raw_fd(fd) })),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 100 => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Replaces `path` with `bytes`, all or nothing (see the module comment).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SaveError> {
    let fail = |step, source| SaveError::failed(path, step, source);
    let resolved = match std::fs::metadata(path) {
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
    let (dir, name) = Dir::of(&resolved).map_err(|e| SaveError {
        path: path.to_path_buf(),
        ..e
    })?;
    dir.replace(name, bytes).map_err(|e| SaveError {
        path: path.to_path_buf(),
        ..e
    })
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
        let fd = file.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    let mut file = file;
    file.write_all(bytes).map_err(|e| ("write", e))?;
    file.flush().map_err(|e| ("write", e))
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

    #[test]
    fn dir_write_refuses_what_is_not_a_regular_file_and_changes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real.txt");
        std::fs::write(&real, "keep").unwrap();
        let link = d.path().join("page.html");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let (dir, name) = Dir::of(&link).unwrap();
        let e = dir.write(name, b"page").unwrap_err();
        assert!(
            e.refused() && e.to_string().contains("symbolic link"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "keep");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        // A link to nothing: nothing is made where it points.
        let dangling = d.path().join("new.html");
        std::os::unix::fs::symlink(d.path().join("made.html"), &dangling).unwrap();
        assert!(dir
            .write(dangling.file_name().unwrap(), b"x")
            .unwrap_err()
            .refused());
        assert!(!d.path().join("made.html").exists());
        // A directory in the place.
        std::fs::create_dir(d.path().join("sub.html")).unwrap();
        assert!(dir.write("sub.html".as_ref(), b"x").unwrap_err().refused());
        // A regular file is replaced; nothing else is left.
        dir.write("real.txt".as_ref(), b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        let mut names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["new.html", "page.html", "real.txt", "sub.html"]);
    }

    #[test]
    fn a_sub_directory_is_made_or_entered_but_never_through_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, d.path().join("r-charts")).unwrap();
        let (dir, _) = Dir::of(&d.path().join("r.md")).unwrap();
        let e = dir.sub("r-charts".as_ref()).unwrap_err();
        assert!(
            e.refused() && e.to_string().contains("symbolic link"),
            "{e}"
        );
        std::fs::write(d.path().join("file"), "").unwrap();
        assert!(dir.sub("file".as_ref()).unwrap_err().refused());
        let charts = dir.sub("s-charts".as_ref()).unwrap();
        charts.write("a.svg".as_ref(), b"<svg/>").unwrap();
        assert_eq!(
            std::fs::read(d.path().join("s-charts/a.svg")).unwrap(),
            b"<svg/>"
        );
        // Made once, entered the next time.
        dir.sub("s-charts".as_ref()).unwrap();
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }
}
