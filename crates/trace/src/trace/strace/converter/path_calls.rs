//! Calls on paths: opens, stats, the calls that look at or change a
//! path's metadata, renames and links, symlinks, unlinks and directories.
//! What each call saw of a path as it was before the call (it existed, of
//! which kind, or not) is noted for the lay-out.

use super::super::descriptors::Slot;
use super::super::syntax::{mode, num, unquote};
use super::files::stat_seen;
use super::{Converter, Event, Seen};
use crate::trace::format::{EntryKind, OpKind, OpenFlags, RenameMode};

impl Converter {
    /// The quoted path argument `path` of the call, resolved against its
    /// directory-descriptor argument `dirfd` (or the working directory).
    fn path_at(&self, ev: &Event, dirfd: Option<usize>, path: usize) -> Option<String> {
        self.path_arg(ev.tid, dirfd.and_then(|d| ev.arg(d)), ev.arg(path))
    }

    /// `open`, `openat`, `openat2`, `creat`.
    pub(super) fn open(&mut self, ev: &Event) {
        let (c, failed) = (ev.c, ev.failed);
        let a = &c.args;
        let (dirfd, path, flags) = match ev.name() {
            "open" => (None, a.first(), a.get(1).cloned()),
            "creat" => (
                None,
                a.first(),
                Some("O_WRONLY|O_CREAT|O_TRUNC".to_string()),
            ),
            _ => (a.first(), a.get(1), a.get(2).cloned()),
        };
        // With -y, the returned descriptor names the file opened.
        let rel = match &c.ret_path {
            Some(p) if p.starts_with('/') => self.relative(p),
            _ => self.path_arg(ev.tid, dirfd, path),
        };
        let fd = c.ret.filter(|_| failed.is_none());
        let text = flags.unwrap_or_default();
        let has = |f: &str| text.split(['|', ',', '{', '}', '=', ' ']).any(|w| w == f);
        let Some(rel) = rel.filter(|_| !has("O_PATH") && !has("O_TMPFILE")) else {
            if let Some(fd) = fd {
                self.tables.set(ev.tid, fd, Slot::Other);
            }
            return;
        };
        let flags = OpenFlags {
            read: has("O_RDONLY") || has("O_RDWR"),
            write: has("O_WRONLY") || has("O_RDWR"),
            create: has("O_CREAT"),
            truncate: has("O_TRUNC"),
            append: has("O_APPEND"),
            exclusive: has("O_EXCL"),
            direct: has("O_DIRECT"),
            sync: has("O_SYNC"),
            dsync: has("O_DSYNC"),
            directory: has("O_DIRECTORY"),
            implicit: false,
        };
        let file = self.file(&rel, open_seen(failed, &flags));
        if failed.is_none() {
            if flags.truncate || (flags.create && !self.state[file as usize].known) {
                self.modified(file, 0);
            }
            if flags.create {
                self.state[file as usize].known = true;
            }
        }
        let h = self.new_handle(file, flags.append);
        if let Some(fd) = fd {
            let cloexec = has("O_CLOEXEC");
            self.tables
                .set(ev.tid, fd, Slot::Held { handle: h, cloexec });
        }
        let kind = OpKind::Open {
            handle: h,
            file,
            flags,
        };
        self.emit(ev, kind, failed);
    }

    /// `stat`, `lstat`, `newfstatat`, `statx`: of a path, or of a
    /// descriptor when the path is empty.
    pub(super) fn stat(&mut self, ev: &Event) {
        let a = &ev.c.args;
        let (dirfd, path, statbuf) = match ev.name() {
            "stat" | "lstat" => (None, a.first(), a.get(1)),
            "statx" => (a.first(), a.get(1), a.get(4)),
            _ => (a.first(), a.get(1), a.get(2)),
        };
        let p = path.and_then(|p| unquote(p)).unwrap_or_default();
        if p.is_empty() && dirfd.is_some() {
            if let Some(h) = self.handle(ev.tid, dirfd, ev.start) {
                let file = self.desc(h).file;
                self.stat_seen(file, statbuf.filter(|_| ev.failed.is_none()));
                self.emit(ev, OpKind::Fstat { handle: h }, ev.failed);
            }
        } else if let Some(rel) = self.resolve(ev.tid, dirfd, &p) {
            let seen = match ev.failed {
                None => stat_seen(statbuf),
                Some(libc::ENOENT) => Seen::Missing,
                Some(_) => Seen::Unknown,
            };
            let f = self.file(&rel, seen);
            self.emit(ev, OpKind::Stat { file: f }, ev.failed);
        }
    }

    /// `access`, `faccessat`, `statfs`, `readlink`, `truncate`, `chmod`,
    /// `fchmodat`, `utimensat`: a look at or a change of one path.
    pub(super) fn path_meta(&mut self, ev: &Event) {
        let (name, failed) = (ev.name(), ev.failed);
        let rel = match name {
            "access" | "statfs" | "readlink" | "truncate" | "chmod" => self.path_at(ev, None, 0),
            _ => self.path_at(ev, Some(0), 1),
        };
        let Some(rel) = rel else { return };
        let seen = match failed {
            None if name.starts_with("readlink") => Seen::Exists(EntryKind::Symlink, None),
            None => Seen::Exists(EntryKind::File, None),
            Some(libc::ENOENT) => Seen::Missing,
            Some(_) => Seen::Unknown,
        };
        let f = self.file(&rel, seen);
        let kind = match name {
            "access" | "faccessat" | "faccessat2" => OpKind::Access { file: f },
            "statfs" => OpKind::Statfs { file: f },
            "readlink" | "readlinkat" => OpKind::Readlink { file: f },
            "utimensat" => OpKind::Utimes { file: f },
            "truncate" => {
                let len = num(ev.arg(1)).unwrap_or(0);
                let len = self.bounded(len, "truncate length");
                if failed.is_none() {
                    self.modified(f, len);
                }
                OpKind::Truncate { file: f, len }
            }
            "chmod" => OpKind::Chmod {
                file: f,
                mode: mode(ev.arg(1)),
            },
            _ => OpKind::Chmod {
                file: f,
                mode: mode(ev.arg(2)),
            },
        };
        self.emit(ev, kind, failed);
    }

    /// `rename`, `renameat`, `renameat2`, `link`, `linkat`: the target
    /// holds the source's data afterwards.
    pub(super) fn rename_or_link(&mut self, ev: &Event) {
        let (name, failed) = (ev.name(), ev.failed);
        let (from, to) = if name == "rename" || name == "link" {
            (self.path_at(ev, None, 0), self.path_at(ev, None, 1))
        } else {
            (self.path_at(ev, Some(0), 1), self.path_at(ev, Some(2), 3))
        };
        let (Some(from), Some(to)) = (from, to) else {
            return;
        };
        let flags = ev.arg(4).map(String::as_str).unwrap_or("");
        let f = self.file(
            &from,
            if failed == Some(libc::ENOENT) {
                Seen::Missing
            } else {
                Seen::Exists(EntryKind::File, None)
            },
        );
        let t = self.file(
            &to,
            if failed == Some(libc::EEXIST) {
                Seen::Exists(EntryKind::File, None)
            } else {
                Seen::Unknown
            },
        );
        if failed.is_none() {
            // The target now holds the source's data.
            self.state[t as usize] = self.state[f as usize];
            self.state[t as usize].modified = true;
            self.state[t as usize].known = true;
            if name.starts_with("rename") {
                self.state[f as usize].modified = true;
            }
        }
        let kind = if name.starts_with("link") {
            OpKind::Link { from: f, to: t }
        } else {
            let mode = if flags.contains("RENAME_NOREPLACE") {
                RenameMode::NoReplace
            } else if flags.contains("RENAME_EXCHANGE") {
                RenameMode::Exchange
            } else {
                RenameMode::Replace
            };
            OpKind::Rename {
                from: f,
                to: t,
                mode,
            }
        };
        self.emit(ev, kind, failed);
    }

    /// `symlink`, `symlinkat`.
    pub(super) fn symlink(&mut self, ev: &Event) {
        let failed = ev.failed;
        let rel = if ev.name() == "symlink" {
            self.path_at(ev, None, 1)
        } else {
            self.path_at(ev, Some(1), 2)
        };
        let (Some(target), Some(rel)) = (ev.arg(0).and_then(|t| unquote(t)), rel) else {
            return;
        };
        let seen = if failed == Some(libc::EEXIST) {
            Seen::Exists(EntryKind::File, None)
        } else {
            Seen::Missing
        };
        let f = self.file(&rel, seen);
        if failed.is_none() {
            self.modified(f, 0);
        }
        self.emit(ev, OpKind::Symlink { file: f, target }, failed);
    }

    /// `unlink`, `unlinkat` (`AT_REMOVEDIR`: a rmdir), `mkdir`, `mkdirat`,
    /// `rmdir`.
    pub(super) fn unlink_or_dir(&mut self, ev: &Event) {
        let (name, failed) = (ev.name(), ev.failed);
        let rel = match name {
            "unlinkat" | "mkdirat" => self.path_at(ev, Some(0), 1),
            _ => self.path_at(ev, None, 0),
        };
        let Some(rel) = rel else { return };
        let is_mkdir = name.starts_with("mkdir");
        let is_rmdir = name == "rmdir"
            || (name == "unlinkat" && ev.arg(2).is_some_and(|f| f.contains("AT_REMOVEDIR")));
        let seen = if is_mkdir {
            match failed {
                None => Seen::Missing,
                Some(libc::EEXIST) => Seen::Exists(EntryKind::Dir, None),
                Some(_) => Seen::Unknown,
            }
        } else {
            let kind = if is_rmdir {
                EntryKind::Dir
            } else {
                EntryKind::File
            };
            match failed {
                None => Seen::Exists(kind, None),
                Some(libc::ENOENT) => Seen::Missing,
                Some(libc::ENOTEMPTY) => Seen::Exists(EntryKind::Dir, None),
                Some(_) => Seen::Unknown,
            }
        };
        let f = self.file(&rel, seen);
        let kind = if is_mkdir {
            OpKind::Mkdir { file: f }
        } else if is_rmdir {
            OpKind::Rmdir { file: f }
        } else {
            OpKind::Unlink { file: f }
        };
        if failed.is_none() {
            if is_mkdir && !self.state[f as usize].modified {
                self.files[f as usize].kind = EntryKind::Dir;
            }
            self.modified(f, 0);
        }
        self.emit(ev, kind, failed);
    }
}

/// What an open's outcome says of the path as it was before.
fn open_seen(failed: Option<i32>, flags: &OpenFlags) -> Seen {
    match failed {
        None if flags.directory => Seen::Exists(EntryKind::Dir, None),
        None if !flags.create => Seen::Exists(EntryKind::File, None),
        None => Seen::Unknown,
        Some(libc::ENOENT) => Seen::Missing,
        Some(libc::EEXIST) => Seen::Exists(EntryKind::File, None),
        Some(libc::ENOTDIR) if flags.directory => Seen::Exists(EntryKind::File, None),
        Some(libc::EISDIR) => Seen::Exists(EntryKind::Dir, None),
        Some(_) => Seen::Unknown,
    }
}
