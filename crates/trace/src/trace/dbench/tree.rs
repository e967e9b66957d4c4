//! The client's directory as the lines change it (a local, case-sensitive
//! file system, starting empty), and what reading a directory of it costs
//! in `getdents64` calls.

use super::GETDENTS_BYTES;
use std::collections::{BTreeSet, HashMap, HashSet};

/// The directory `p` is in ("" for the client's directory).
pub(super) fn parent(p: &str) -> &str {
    p.rsplit_once('/').map_or("", |(d, _)| d)
}

/// The last name of `p`.
pub(super) fn base(p: &str) -> &str {
    p.rsplit_once('/').map_or(p, |(_, b)| b)
}

/// `name` in directory `dir`.
pub(super) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// What a path of the model is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

/// The client's directory as the lines change it: a local, case-sensitive
/// file system, starting empty. Paths are relative ("" is the directory).
pub(super) struct Fs {
    /// Directories and the names in each.
    dirs: HashMap<String, BTreeSet<String>>,
    files: HashSet<String>,
}

impl Fs {
    pub(super) fn new() -> Fs {
        Fs {
            dirs: HashMap::from([(String::new(), BTreeSet::new())]),
            files: HashSet::new(),
        }
    }

    /// What `p` is, or the errno a lookup of it fails with.
    pub(super) fn kind(&self, p: &str) -> Result<Kind, i32> {
        if self.dirs.contains_key(p) {
            return Ok(Kind::Dir);
        }
        if self.files.contains(p) {
            return Ok(Kind::File);
        }
        for (i, _) in p.match_indices('/') {
            let above = &p[..i];
            if self.files.contains(above) {
                return Err(libc::ENOTDIR);
            }
            if !self.dirs.contains_key(above) {
                return Err(libc::ENOENT);
            }
        }
        Err(libc::ENOENT)
    }

    pub(super) fn dir(&self, p: &str) -> Result<(), i32> {
        match self.kind(p)? {
            Kind::Dir => Ok(()),
            Kind::File => Err(libc::ENOTDIR),
        }
    }

    pub(super) fn names(&self, d: &str) -> impl Iterator<Item = &String> {
        self.dirs.get(d).into_iter().flatten()
    }

    fn add(&mut self, p: &str, kind: Kind) {
        if let Some(names) = self.dirs.get_mut(parent(p)) {
            names.insert(base(p).to_string());
        }
        match kind {
            Kind::File => {
                self.files.insert(p.to_string());
            }
            Kind::Dir => {
                self.dirs.insert(p.to_string(), BTreeSet::new());
            }
        }
    }

    fn remove(&mut self, p: &str) {
        if let Some(names) = self.dirs.get_mut(parent(p)) {
            names.remove(base(p));
        }
        self.files.remove(p);
        self.dirs.remove(p);
    }

    /// `open(2)` of a file read-write: with `O_CREAT`, made when missing.
    pub(super) fn open_file(&mut self, p: &str, create: bool) -> Result<(), i32> {
        match self.kind(p) {
            Ok(Kind::File) => Ok(()),
            Ok(Kind::Dir) => Err(libc::EISDIR),
            Err(libc::ENOENT) if create => {
                self.dir(parent(p))?;
                self.add(p, Kind::File);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    pub(super) fn mkdir(&mut self, p: &str) -> Result<(), i32> {
        match self.kind(p) {
            Ok(_) => Err(libc::EEXIST),
            Err(libc::ENOENT) => {
                self.dir(parent(p))?;
                self.add(p, Kind::Dir);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    pub(super) fn unlink(&mut self, p: &str) -> Result<(), i32> {
        match self.kind(p)? {
            Kind::Dir => Err(libc::EISDIR),
            Kind::File => {
                self.remove(p);
                Ok(())
            }
        }
    }

    pub(super) fn rmdir(&mut self, p: &str) -> Result<(), i32> {
        match self.kind(p)? {
            Kind::File => Err(libc::ENOTDIR),
            Kind::Dir if p.is_empty() => Err(libc::EBUSY),
            Kind::Dir if self.names(p).next().is_some() => Err(libc::ENOTEMPTY),
            Kind::Dir => {
                self.remove(p);
                Ok(())
            }
        }
    }

    pub(super) fn rename(&mut self, a: &str, b: &str) -> Result<(), i32> {
        let ka = self.kind(a)?;
        self.dir(parent(b))?;
        if a == b {
            return Ok(());
        }
        if a.is_empty() || b.is_empty() {
            return Err(libc::EBUSY);
        }
        let kb = self.kind(b).ok();
        match (ka, kb) {
            (Kind::File, Some(Kind::Dir)) => return Err(libc::EISDIR),
            (Kind::Dir, Some(Kind::File)) => return Err(libc::ENOTDIR),
            (Kind::Dir, Some(Kind::Dir)) if self.names(b).next().is_some() => {
                return Err(libc::ENOTEMPTY)
            }
            (Kind::Dir, _) if b.starts_with(&format!("{a}/")) => return Err(libc::EINVAL),
            _ => {}
        }
        if kb.is_some() {
            self.remove(b);
        }
        match ka {
            Kind::File => {
                self.remove(a);
                self.add(b, Kind::File);
            }
            Kind::Dir => {
                // The whole subtree moves: every name under a is re-keyed.
                let from = format!("{a}/");
                let moved_dirs: Vec<String> = self
                    .dirs
                    .keys()
                    .filter(|k| k.starts_with(&from))
                    .cloned()
                    .collect();
                let moved_files: Vec<String> = self
                    .files
                    .iter()
                    .filter(|k| k.starts_with(&from))
                    .cloned()
                    .collect();
                let names = self.dirs.get(a).cloned().unwrap_or_default();
                self.remove(a);
                self.add(b, Kind::Dir);
                if let Some(n) = self.dirs.get_mut(b) {
                    *n = names;
                }
                for d in moved_dirs {
                    if let Some(n) = self.dirs.remove(&d) {
                        self.dirs.insert(format!("{b}/{}", &d[from.len()..]), n);
                    }
                }
                for f in moved_files {
                    self.files.remove(&f);
                    self.files.insert(format!("{b}/{}", &f[from.len()..]));
                }
            }
        }
        Ok(())
    }
}

/// How many `getdents64` calls reading `names` (after `.` and `..`) take
/// with glibc's buffer: up to `stop` entries when given (`readdir` stops
/// asking once it has them), else through to the empty call at the end.
pub(super) fn getdents_calls<'a>(
    names: impl Iterator<Item = &'a String>,
    stop: Option<usize>,
) -> u64 {
    // linux_dirent64: 19 bytes of header, the name and its NUL, 8-aligned.
    let size = |len: usize| ((19 + len + 1 + 7) & !7) as u64;
    let mut calls = 1;
    let mut used = 0u64;
    let mut entries = 0usize;
    if stop == Some(0) {
        return 0;
    }
    for len in [1, 2].into_iter().chain(names.map(|n| n.len())) {
        if stop.is_some_and(|s| entries >= s) {
            return calls;
        }
        let s = size(len);
        if used + s > GETDENTS_BYTES {
            calls += 1;
            used = 0;
        }
        used += s;
        entries += 1;
    }
    if stop.is_some_and(|s| entries >= s) {
        calls
    } else {
        calls + 1
    }
}
