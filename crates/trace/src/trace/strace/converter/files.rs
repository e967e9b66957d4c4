//! Paths and files: a path under the root relative to it, resolved
//! against a directory descriptor or the working directory; a file id per
//! path; what each call saw of a file before anything changed it (its
//! first state is what the lay-out recreates).

use super::super::syntax::{decorated, normalise, stat_field, unquote};
use super::{Converter, FileState, Seen};
use crate::trace::format::{EntryKind, FileEntry};
use crate::trace::limits::MAX_FILES;

impl Converter {
    /// The path relative to the root, if it is under it.
    pub(super) fn relative(&self, abs: &str) -> Option<String> {
        if !abs.starts_with('/') {
            return None; // pipe:[…], socket:[…], anon_inode:…
        }
        let abs = normalise(abs);
        if self.root == "/" {
            return Some(abs[1..].to_string()).filter(|s| !s.is_empty());
        }
        abs.strip_prefix(&self.root)?
            .strip_prefix('/')
            .map(str::to_string)
            .filter(|s| !s.is_empty())
    }

    pub(super) fn cwd_of(&self, tid: u64) -> String {
        self.cwd
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| self.start_cwd.clone())
    }

    /// Resolves a path argument against a decorated dirfd or the cwd.
    pub(super) fn resolve(&self, tid: u64, dirfd: Option<&String>, path: &str) -> Option<String> {
        if path.starts_with('/') {
            return self.relative(path);
        }
        let base = match dirfd.map(|d| decorated(d)) {
            Some((_, Some(dir))) => dir,
            _ => self.cwd_of(tid),
        };
        self.relative(&format!("{base}/{path}"))
    }

    /// A quoted path argument `path` (against `dirfd`) under the root.
    pub(super) fn path_arg(
        &self,
        tid: u64,
        dirfd: Option<&String>,
        path: Option<&String>,
    ) -> Option<String> {
        path.and_then(|p| unquote(p))
            .and_then(|p| self.resolve(tid, dirfd, &p))
    }

    /// The file id of `rel`, noting what the call saw of it.
    pub(super) fn file(&mut self, rel: &str, seen: Seen) -> u32 {
        let id = match self.file_ids.get(rel) {
            Some(f) => *f,
            None => {
                if self.files.len() >= MAX_FILES {
                    self.fail(super::LogError::TooManyFiles);
                    return 0;
                }
                self.files.push(FileEntry::file(rel, None));
                self.state.push(FileState::default());
                let id = self.files.len() as u32 - 1;
                self.file_ids.insert(rel.to_string(), id);
                id
            }
        };
        self.saw(id, seen);
        id
    }

    /// Notes what a call saw of file `f` as it was before the call: only
    /// what is seen before anything changed it describes its first state.
    pub(super) fn saw(&mut self, f: u32, seen: Seen) {
        let st = self.state[f as usize];
        if st.modified {
            return;
        }
        match seen {
            Seen::Exists(kind, size) => {
                let size = size.map(|s| self.bounded(s, "file size"));
                let entry = &mut self.files[f as usize];
                if !st.known || entry.size.is_some() {
                    entry.kind = kind;
                    let grown = size.unwrap_or(0).max(st.size);
                    entry.size = Some(grown);
                    self.state[f as usize].size = grown;
                }
                self.state[f as usize].known = true;
            }
            Seen::Missing => self.state[f as usize].known = true,
            Seen::Unknown => {}
        }
    }

    /// File `f` now has `new_size` bytes by the program's own doing.
    pub(super) fn modified(&mut self, f: u32, new_size: u64) {
        let st = &mut self.state[f as usize];
        st.known = true;
        st.modified = true;
        st.size = new_size;
    }

    /// The size and kind a stat buffer shows.
    pub(super) fn stat_seen(&mut self, f: u32, statbuf: Option<&String>) {
        if statbuf.is_some() {
            self.saw(f, stat_seen(statbuf));
        }
    }
}

/// What a stat buffer says of a path: its kind and size.
pub(super) fn stat_seen(statbuf: Option<&String>) -> Seen {
    let kind = match statbuf {
        Some(b) if b.contains("S_IFDIR") => EntryKind::Dir,
        Some(b) if b.contains("S_IFLNK") => EntryKind::Symlink,
        _ => EntryKind::File,
    };
    let size = stat_field(statbuf, "st_size=").or_else(|| stat_field(statbuf, "stx_size="));
    Seen::Exists(kind, if kind == EntryKind::File { size } else { None })
}
