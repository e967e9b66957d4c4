//! Where a calibration's copy lives, and the copies a killed `plumb trace
//! record` left behind.
//!
//! A copy of the root is `PLACE/.plumb-calibrate-DEV-INO-PID-N` (the root
//! directory's device and inode, the recording process, a counter), with
//! the owner mark `….owner` beside it, written first (the mark of
//! `plumb_sandbox`'s run directories: PID, start time, boot and host, so a
//! reused PID is not taken for the owner). PLACE is the root's parent
//! directory when it is on the root's file system (the untraced run is
//! then measured on the same disk), else the temporary directory; never a
//! place under the root. The next recording of the same root looks in
//! those places: it removes a copy whose owner is gone and names every
//! copy it finds.

use super::remove::remove_tree;
use plumb_sandbox::sandbox::{Owner, MARK_SUFFIX};
use std::fmt;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Most names read in one place while looking for leftovers (the
/// temporary directory is shared and may be huge).
const MAX_SCAN: usize = 1_000_000;

/// How the copies of the root of `meta` begin.
pub(super) fn prefix(meta: &Metadata) -> String {
    format!(".plumb-calibrate-{}-{}-", meta.dev(), meta.ino())
}

/// A place for a copy of `root` (of `meta`), and whether it is on the
/// root's file system.
pub(super) struct Place {
    pub(super) dir: PathBuf,
    pub(super) same_fs: bool,
}

/// Where a copy of `root` (of `meta`) may go, best first: see the module's
/// doc.
pub(super) fn places(root: &Path, meta: &Metadata) -> Vec<Place> {
    let mut out: Vec<Place> = Vec::new();
    let parent = root
        .parent()
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.dev() == meta.dev()));
    if let Some(p) = parent {
        out.push(Place {
            dir: p.to_path_buf(),
            same_fs: true,
        });
    }
    if let Ok(tmp) = std::fs::canonicalize(std::env::temp_dir()) {
        let same_fs = std::fs::metadata(&tmp).is_ok_and(|m| m.dev() == meta.dev());
        if !out.iter().any(|p| p.dir == tmp) {
            out.push(Place { dir: tmp, same_fs });
        }
    }
    out.retain(|p| !p.dir.starts_with(root));
    out
}

/// A copy found by [`leftovers`], and what became of it.
#[derive(Debug)]
pub enum Leftover {
    /// Its owner is gone: removed.
    Removed {
        /// Where it was.
        path: PathBuf,
        /// The plumb process that made it.
        pid: u32,
    },
    /// Its owner is gone, but it could not be removed.
    Stuck {
        /// Where it is.
        path: PathBuf,
        /// The plumb process that made it.
        pid: u32,
        /// Why.
        error: std::io::Error,
    },
    /// Its owner runs (another recording of the same root): left alone.
    InUse {
        /// Where it is.
        path: PathBuf,
        /// The plumb process that made it.
        pid: u32,
    },
    /// No readable owner mark beside it: left alone.
    Unmarked {
        /// Where it is.
        path: PathBuf,
    },
    /// `TMPDIR/plumb-calibrate-XXXXXX` of an earlier plumb, which put
    /// trees back from there: it may hold the files of a tree whose putting
    /// back was cut short, so it is left alone.
    Legacy {
        /// Where it is.
        path: PathBuf,
    },
}

impl Leftover {
    /// Where the copy is (or was).
    pub fn path(&self) -> &Path {
        match self {
            Leftover::Removed { path, .. }
            | Leftover::Stuck { path, .. }
            | Leftover::InUse { path, .. }
            | Leftover::Unmarked { path }
            | Leftover::Legacy { path } => path,
        }
    }
}

impl fmt::Display for Leftover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Leftover::Removed { path, pid } => write!(
                f,
                "removed {}: a copy of this root left by plumb process {pid}, which was killed while calibrating",
                path.display()
            ),
            Leftover::Stuck { path, pid, error } => write!(
                f,
                "{}: a copy of this root left by plumb process {pid}, which was killed while calibrating, could not be removed ({error}); your tree is whole: remove the copy by hand",
                path.display()
            ),
            Leftover::InUse { path, pid } => write!(
                f,
                "{}: a copy of this root that plumb process {pid} is calibrating with (left alone)",
                path.display()
            ),
            Leftover::Unmarked { path } => write!(
                f,
                "{}: a copy of this root without its owner mark (left alone: remove it when no plumb uses it)",
                path.display()
            ),
            Leftover::Legacy { path } => write!(
                f,
                "{}: left by an earlier plumb, whose calibration put trees back from such a copy; it may hold files a cut-short putting back did not return (left alone: compare it with your tree, then remove it)",
                path.display()
            ),
        }
    }
}

/// This user's directory `path`, not a symlink.
fn mine(path: &Path) -> bool {
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.is_dir() && m.uid() == rustix::process::geteuid().as_raw())
}

/// The leftover copies of `root` (of `meta`) in the places a copy goes:
/// those whose owner is gone are removed (the mark last), the others left;
/// each is named. Also names the copies of earlier plumbs in the
/// temporary directory ([`Leftover::Legacy`]).
pub(super) fn leftovers(root: &Path, meta: &Metadata) -> Vec<Leftover> {
    let prefix = prefix(meta);
    let mut out = Vec::new();
    for place in places(root, meta) {
        let Ok(listing) = std::fs::read_dir(&place.dir) else {
            continue;
        };
        for entry in listing.take(MAX_SCAN).flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            let path = place.dir.join(name);
            if is_legacy(name) && mine(&path) {
                out.push(Leftover::Legacy { path });
                continue;
            }
            if !name.starts_with(&prefix) || !mine(&path) {
                continue;
            }
            let mark = place.dir.join(format!("{name}{MARK_SUFFIX}"));
            out.push(judge(path, &mark));
        }
    }
    out
}

/// What becomes of the copy `path` whose owner mark is `mark`.
fn judge(path: PathBuf, mark: &Path) -> Leftover {
    let Some(owner) = Owner::read(mark) else {
        return Leftover::Unmarked { path };
    };
    let pid = owner.pid();
    if owner.alive() {
        return Leftover::InUse { path, pid };
    }
    match remove_tree(&path) {
        Ok(()) => {
            let _ = std::fs::remove_file(mark);
            Leftover::Removed { path, pid }
        }
        Err(error) => Leftover::Stuck { path, pid, error },
    }
}

/// A name `plumb-calibrate-XXXXXX` (six letters or digits, as `mkdtemp`
/// makes them): the copies of plumbs before this one.
fn is_legacy(name: &str) -> bool {
    name.strip_prefix("plumb-calibrate-")
        .is_some_and(|rest| rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy named as a recording of `root` by `pid` makes it, with a mark
    /// holding `mark` (none when None).
    fn planted(place: &Path, root: &Path, pid: &str, mark: Option<&str>) -> PathBuf {
        let meta = std::fs::metadata(root).unwrap();
        let name = format!("{}{pid}-0", prefix(&meta));
        std::fs::create_dir_all(place.join(&name).join("tree")).unwrap();
        if let Some(m) = mark {
            std::fs::write(place.join(format!("{name}{MARK_SUFFIX}")), m).unwrap();
        }
        place.join(name)
    }

    #[test]
    fn copies_of_gone_owners_are_removed_and_every_copy_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        // A PID above the kernel's pid_max: gone.
        let gone = planted(dir.path(), &root, "4194305", Some("4194305 1\n"));
        let me = Owner::me().unwrap();
        let live = planted(dir.path(), &root, &std::process::id().to_string(), None);
        me.write(&PathBuf::from(format!("{}{MARK_SUFFIX}", live.display())))
            .unwrap();
        let unmarked = planted(dir.path(), &root, "7", None);
        // Another root's copy is not looked at.
        let other = dir.path().join(".plumb-calibrate-1-2-3-0");
        std::fs::create_dir(&other).unwrap();
        // (The temporary directory is looked at too: only what is here counts.)
        let found: Vec<Leftover> = leftovers(&root, &std::fs::metadata(&root).unwrap())
            .into_iter()
            .filter(|l| l.path().starts_with(dir.path()))
            .collect();
        let said: Vec<String> = found.iter().map(|l| l.to_string()).collect();
        assert_eq!(found.len(), 3, "{said:?}");
        assert!(!gone.exists(), "{said:?}");
        assert!(!PathBuf::from(format!("{}{MARK_SUFFIX}", gone.display())).exists());
        assert!(said
            .iter()
            .any(|s| s.starts_with(&format!("removed {}", gone.display()))));
        assert!(live.exists() && unmarked.exists() && other.exists());
        assert!(said.iter().any(|s| s.contains(&format!(
            "plumb process {} is calibrating",
            std::process::id()
        ))));
        assert!(said
            .iter()
            .any(|s| s.starts_with(&unmarked.display().to_string())
                && s.contains("without its owner mark")));
    }

    #[test]
    fn only_mkdtemp_names_are_taken_for_earlier_plumbs_copies() {
        assert!(is_legacy("plumb-calibrate-Ab12Cd"));
        assert!(!is_legacy("plumb-calibrate-Ab12C"));
        assert!(!is_legacy("plumb-calibrate-Ab12Cd7"));
        assert!(!is_legacy("plumb-calibrate-Ab-2Cd"));
        assert!(!is_legacy(".plumb-calibrate-1-2-3-0"));
    }
}
