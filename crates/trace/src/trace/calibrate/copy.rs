//! The copy of a tree: directories, regular files (their data, holes
//! kept), symlinks as they are (never followed), hard links as links, and
//! each entry's owner, extended attributes, mode and times; within
//! [`MAX_COPY_BYTES`] of data and [`MAX_COPY_ENTRIES`] entries.

use super::entry::{copy_attributes, copy_data, open_quietly};
use super::CalibrateError;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::Metadata;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Most bytes of data (what the files hold, their holes not counted, each
/// hard-linked file once) a calibration copies.
pub const MAX_COPY_BYTES: u64 = 1 << 30;
/// Most entries (files, directories, symlinks, links) a calibration copies.
pub const MAX_COPY_ENTRIES: u64 = 100_000;

/// What a copy has taken so far, against the limits, and the flag that
/// stops it.
pub(super) struct Tally<'a> {
    bytes: u64,
    entries: u64,
    stop: &'a AtomicBool,
}

impl Tally<'_> {
    /// Charges `n` more bytes of data.
    pub(super) fn bytes(&mut self, n: u64) -> Result<(), CalibrateError> {
        self.bytes = self.bytes.saturating_add(n);
        self.check()
    }

    /// Charges one more entry.
    fn entry(&mut self) -> Result<(), CalibrateError> {
        self.entries += 1;
        self.check()
    }

    fn check(&self) -> Result<(), CalibrateError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(CalibrateError::Interrupted);
        }
        if self.bytes > MAX_COPY_BYTES || self.entries > MAX_COPY_ENTRIES {
            return Err(CalibrateError::TooLarge);
        }
        Ok(())
    }
}

/// What is left to do, in order (a stack: a directory's attributes are
/// set after everything in it, whose copying touches its times).
enum Step {
    /// Copy what the directory `src` holds into the new directory `dst`.
    Fill { src: PathBuf, dst: PathBuf },
    /// Give `dst` the attributes of `src` (of `meta`).
    Finish {
        src: PathBuf,
        meta: Metadata,
        dst: PathBuf,
    },
}

/// Copies the directory `from` (everything in it but the paths in
/// `skip`) to `to`, which must not exist: `to` is made with `from`'s
/// attributes. The walk keeps its own list of what is left, so a deep
/// tree takes memory (bounded by the entry limit), not stack.
pub(super) fn copy_tree(
    from: &Path,
    to: &Path,
    skip: &[PathBuf],
    stop: &AtomicBool,
) -> Result<(), CalibrateError> {
    let mut tally = Tally {
        bytes: 0,
        entries: 0,
        stop,
    };
    // Files with several names, by (device, inode): the first copy's path.
    let mut linked: HashMap<(u64, u64), PathBuf> = HashMap::new();
    let top = lstat(from)?;
    std::fs::create_dir(to).map_err(io_at(to))?;
    let mut todo = vec![
        Step::Finish {
            src: from.to_path_buf(),
            meta: top,
            dst: to.to_path_buf(),
        },
        Step::Fill {
            src: from.to_path_buf(),
            dst: to.to_path_buf(),
        },
    ];
    while let Some(step) = todo.pop() {
        let (src, dst) = match step {
            Step::Finish { src, meta, dst } => {
                copy_attributes(&src, &meta, &dst)?;
                continue;
            }
            Step::Fill { src, dst } => (src, dst),
        };
        for name in names(&src)? {
            let from = src.join(&name);
            if skip.contains(&from) {
                continue;
            }
            let to = dst.join(&name);
            let meta = lstat(&from)?;
            tally.entry()?;
            let kind = meta.file_type();
            if kind.is_dir() {
                std::fs::create_dir(&to).map_err(io_at(&to))?;
                todo.push(Step::Finish {
                    src: from.clone(),
                    meta,
                    dst: to.clone(),
                });
                todo.push(Step::Fill { src: from, dst: to });
                continue;
            }
            if kind.is_symlink() {
                let target = std::fs::read_link(&from).map_err(io_at(&from))?;
                std::os::unix::fs::symlink(target, &to).map_err(io_at(&to))?;
            } else if kind.is_file() {
                if meta.nlink() > 1 {
                    let key = (meta.dev(), meta.ino());
                    if let Some(first) = linked.get(&key) {
                        std::fs::hard_link(first, &to).map_err(io_at(&to))?;
                        continue;
                    }
                    linked.insert(key, to.clone());
                }
                copy_data(&from, &meta, &to, &mut tally)?;
            } else {
                return Err(CalibrateError::Special(from));
            }
            copy_attributes(&from, &meta, &to)?;
        }
    }
    Ok(())
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> CalibrateError + '_ {
    move |source| CalibrateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn lstat(path: &Path) -> Result<Metadata, CalibrateError> {
    std::fs::symlink_metadata(path).map_err(io_at(path))
}

/// The names in the directory `dir`, read without changing its access
/// time where the kernel lets this process.
fn names(dir: &Path) -> Result<Vec<PathBuf>, CalibrateError> {
    let fd = open_quietly(dir, true)?;
    let listing = rustix::fs::Dir::new(fd).map_err(|e| io_at(dir)(e.into()))?;
    let mut out = Vec::new();
    for entry in listing {
        let entry = entry.map_err(|e| io_at(dir)(e.into()))?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push(PathBuf::from(OsStr::from_bytes(name)));
        }
        // Bound first: a directory too large to copy is not read to its end.
        if out.len() as u64 > MAX_COPY_ENTRIES {
            return Err(CalibrateError::TooLarge);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileExt, PermissionsExt};

    fn copy(from: &Path, to: &Path, skip: &[PathBuf]) -> Result<(), CalibrateError> {
        copy_tree(from, to, skip, &AtomicBool::new(false))
    }

    #[test]
    fn a_copy_keeps_holes_links_modes_times_and_user_attributes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("d/e")).unwrap();
        std::fs::write(root.join("d/e/f"), "data").unwrap();
        std::fs::hard_link(root.join("d/e/f"), root.join("twin")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("abs")).unwrap();
        // 8 GiB apparent, one block of data: cheap, and charged as a block.
        let sparse = std::fs::File::create(root.join("sparse")).unwrap();
        sparse.set_len(8 << 30).unwrap();
        sparse.write_all_at(b"middle", 4 << 30).unwrap();
        drop(sparse);
        let named = rustix::fs::lsetxattr(
            root.join("d/e/f"),
            "user.plumb",
            b"v",
            rustix::fs::XattrFlags::empty(),
        );
        std::fs::set_permissions(root.join("d/e/f"), PermissionsExt::from_mode(0o604)).unwrap();
        std::fs::set_permissions(root.join("d"), PermissionsExt::from_mode(0o1750)).unwrap();
        let skip = root.join("scratch");
        std::fs::create_dir(&skip).unwrap();
        let to = dir.path().join("copy");
        copy(&root, &to, std::slice::from_ref(&skip)).unwrap();

        assert!(
            !to.join("scratch").exists(),
            "the skipped path is not copied"
        );
        let (a, b) = (
            std::fs::metadata(root.join("d/e/f")).unwrap(),
            std::fs::metadata(to.join("d/e/f")).unwrap(),
        );
        assert_eq!(std::fs::read(to.join("d/e/f")).unwrap(), b"data");
        assert_eq!(b.mode(), a.mode());
        assert_eq!((b.mtime(), b.mtime_nsec()), (a.mtime(), a.mtime_nsec()));
        assert_eq!((b.atime(), b.atime_nsec()), (a.atime(), a.atime_nsec()));
        assert_eq!(b.nlink(), 2, "the pair stays linked");
        assert_eq!(std::fs::metadata(to.join("twin")).unwrap().ino(), b.ino());
        let d = std::fs::metadata(to.join("d")).unwrap();
        assert_eq!(d.mode() & 0o7777, 0o1750);
        assert_eq!(
            std::fs::read_link(to.join("abs")).unwrap(),
            Path::new("/etc/passwd")
        );
        let s = std::fs::metadata(to.join("sparse")).unwrap();
        assert_eq!(s.len(), 8 << 30);
        assert!(s.blocks() * 512 <= 64 << 10, "{} blocks", s.blocks());
        let mut got = [0u8; 6];
        std::fs::File::open(to.join("sparse"))
            .unwrap()
            .read_exact_at(&mut got, 4 << 30)
            .unwrap();
        assert_eq!(&got, b"middle");
        if named.is_ok() {
            let mut v = [0u8; 8];
            let n = rustix::fs::lgetxattr(to.join("d/e/f"), "user.plumb", &mut v[..]).unwrap();
            assert_eq!(&v[..n], b"v");
        }
    }

    #[test]
    fn a_fifo_is_not_copied_nor_opened() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let fifo = std::ffi::CString::new(root.join("p").to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let e = copy(&root, &dir.path().join("c"), &[]).unwrap_err();
        assert!(e.to_string().contains("not a file"), "{e}");
    }

    #[test]
    fn a_stop_ends_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("f"), "x").unwrap();
        let e = copy_tree(&root, &dir.path().join("c"), &[], &AtomicBool::new(true)).unwrap_err();
        assert!(matches!(e, CalibrateError::Interrupted), "{e}");
    }
}
