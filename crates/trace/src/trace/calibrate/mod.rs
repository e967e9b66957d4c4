//! `plumb trace record`'s calibration, without touching the user's tree:
//! the command is recorded on the root (the run the user asked for, whose
//! effects stay), and its untraced runs each start from a copy of the root
//! as it was before, which a private mount namespace shows at the root's
//! path (the command sees the same paths; nobody else sees the copy).
//!
//! - [`Snapshot::take`] copies the root before the traced run: files with
//!   their data (holes stay holes), hard links as links, directories,
//!   symlinks as they are, and every entry's owner, extended attributes,
//!   mode and times (read without changing access times: through a
//!   `noatime` view of the mounts, or `O_NOATIME` where that cannot be
//!   had); within [`MAX_COPY_BYTES`] of data and
//!   [`MAX_COPY_ENTRIES`] entries, and nothing but those kinds.
//! - [`Snapshot::run_copy`] makes, for each untraced run, a fresh copy of
//!   the snapshot, and [`RunCopy::command`] the command that runs on it.
//! - Dropping them removes the copies. A copy left by a killed recording
//!   is found, named and (its owner gone) removed by the next recording
//!   of the same root ([`leftovers`]). The root is never written, so a kill
//!   at any moment leaves it whole.

mod copy;
mod entry;
mod hide;
mod leftover;
mod remove;

pub use copy::{MAX_COPY_BYTES, MAX_COPY_ENTRIES};
pub use hide::check_hiding;
pub use leftover::Leftover;

use plumb_sandbox::sandbox::{Owner, MARK_SUFFIX};
use remove::remove_tree;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

/// Why there is no calibration.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// The root is larger than a calibration copies.
    #[error("the root holds more than {max_mib} MiB of data or {MAX_COPY_ENTRIES} entries", max_mib = MAX_COPY_BYTES >> 20)]
    TooLarge,
    /// Something that is not a file, a directory or a symlink.
    #[error("{0} is not a file, a directory or a symlink")]
    Special(PathBuf),
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// Where.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// An extended attribute could not be read or given to the copy.
    #[error("{path}: extended attribute {name}: {source}")]
    Xattr {
        /// Where.
        path: PathBuf,
        /// The attribute.
        name: String,
        /// The error.
        source: io::Error,
    },
    /// No place outside the root took the copy.
    #[error(
        "no place for a copy of the root (its parent directory, the temporary directory): {0}"
    )]
    NoPlace(String),
    /// A signal stopped the copy.
    #[error("interrupted")]
    Interrupted,
    /// The copy cannot be shown at the root's path.
    #[error("cannot make a private mount namespace to show the copy at the root's path ({0})")]
    Namespace(io::Error),
}

fn at(path: &Path) -> impl FnOnce(io::Error) -> CalibrateError + '_ {
    move |source| CalibrateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The copies of `root` that killed recordings left: see
/// [`Leftover`]. Removes those whose owner is gone.
pub fn leftovers(root: &Path) -> Vec<Leftover> {
    match std::fs::metadata(root) {
        Ok(meta) => leftover::leftovers(root, &meta),
        Err(_) => Vec::new(),
    }
}

/// A copy of the root as it was, in a directory of its own marked with
/// this process (see [`leftovers`]); removed when dropped.
#[derive(Debug)]
pub struct Snapshot {
    root: PathBuf,
    /// `.plumb-calibrate-…`: `tree` (the copy) and `run` (a run's copy).
    dir: PathBuf,
    mark: PathBuf,
    same_fs: bool,
}

impl Snapshot {
    /// Copies the directory `root` (an absolute, canonical path), but the
    /// paths in `skip`, into a new directory beside it (see
    /// [`leftovers`] for where); `stop` ends the copy soon.
    pub fn take(
        root: &Path,
        skip: &[PathBuf],
        stop: &AtomicBool,
    ) -> Result<Snapshot, CalibrateError> {
        let meta = std::fs::metadata(root).map_err(at(root))?;
        let me = Owner::me().map_err(at(Path::new("/proc/self/stat")))?;
        let prefix = leftover::prefix(&meta);
        let pid = std::process::id();
        let mut last = String::from("none is outside the root");
        for place in leftover::places(root, &meta) {
            match make(&place.dir, &format!("{prefix}{pid}-"), &me) {
                Ok((dir, mark)) => {
                    let snap = Snapshot {
                        root: root.to_path_buf(),
                        dir,
                        mark,
                        same_fs: place.same_fs,
                    };
                    let tree = snap.tree();
                    hide::without_atime(|| copy::copy_tree(root, &tree, skip, stop))?;
                    return Ok(snap);
                }
                Err(e) => last = format!("{}: {e}", place.dir.display()),
            }
        }
        Err(CalibrateError::NoPlace(last))
    }

    fn tree(&self) -> PathBuf {
        self.dir.join("tree")
    }

    /// The directory holding the copy.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Whether the copy is on the root's file system (else the untraced
    /// runs are measured on the temporary directory's).
    pub fn on_root_filesystem(&self) -> bool {
        self.same_fs
    }

    /// A fresh copy of the snapshot for one untraced run (the snapshot
    /// stays as it was for the next); `stop` ends the copy soon.
    pub fn run_copy(&self, stop: &AtomicBool) -> Result<RunCopy<'_>, CalibrateError> {
        let path = self.dir.join("run");
        remove_tree(&path).map_err(at(&path))?;
        let copy = RunCopy { snap: self, path };
        // Read quietly too: the next run's copy takes the snapshot's times.
        let tree = self.tree();
        hide::without_atime(|| copy::copy_tree(&tree, &copy.path, &[], stop))?;
        Ok(copy)
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        // The mark goes last: a copy left half removed is still found.
        if remove_tree(&self.dir).is_ok() {
            let _ = std::fs::remove_file(&self.mark);
        }
    }
}

/// Makes the mark `DIR/PREFIXn.owner` then the directory `DIR/PREFIXn`
/// (mode 0700) for the first free n: creations that never follow or reuse
/// what is there, so a name planted in a shared directory only moves on
/// to the next.
fn make(dir: &Path, prefix: &str, me: &Owner) -> io::Result<(PathBuf, PathBuf)> {
    use std::os::unix::fs::DirBuilderExt;
    let mut last = io::Error::other("no free name");
    for n in 0..100u32 {
        let path = dir.join(format!("{prefix}{n}"));
        let mark = dir.join(format!("{prefix}{n}{MARK_SUFFIX}"));
        match me.write(&mark) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok((path, mark)),
            Err(e) => {
                let _ = std::fs::remove_file(&mark);
                if e.kind() != io::ErrorKind::AlreadyExists {
                    return Err(e);
                }
                last = e;
            }
        }
    }
    Err(last)
}

/// One untraced run's copy of the snapshot; removed when dropped.
#[derive(Debug)]
pub struct RunCopy<'a> {
    snap: &'a Snapshot,
    path: PathBuf,
}

impl RunCopy<'_> {
    /// `program` with `args`, to run on this copy seen at the root's path
    /// (in a private mount namespace), from the directory `cwd` (an
    /// absolute path, under the root or not). Nothing of this shows to
    /// other processes; a namespace that cannot be made fails the spawn.
    pub fn command(
        &self,
        program: &str,
        args: &[String],
        cwd: &Path,
    ) -> Result<Command, CalibrateError> {
        hide::command(&self.path, &self.snap.root, cwd, program, args)
    }

    /// Writes back to the disk what making the copy wrote (`syncfs`), so
    /// the untraced run starts on a file system as clean as the traced run
    /// had, not behind the copy's writeback. Best effort.
    pub fn settle(&self) {
        if let Ok(dir) = std::fs::File::open(&self.path) {
            let _ = rustix::fs::syncfs(&dir);
        }
    }
}

impl Drop for RunCopy<'_> {
    fn drop(&mut self) {
        let _ = remove_tree(&self.path);
    }
}
