//! What a successful call does to the descriptor tables: forks and
//! threads, exec, the working directory, duplicates, ranges closed, and
//! descriptors that are not files under the root (pipes, sockets, ...).

use super::super::descriptors::Slot;
use super::super::syntax::{decorated, normalise, num, unquote, Call};
use super::Converter;
use crate::trace::format::OpKind;

impl Converter {
    /// What a successful call did to the descriptor tables: forks, chdir,
    /// exec, duplicates, and descriptors that are not files under the root.
    pub(super) fn descriptors_changed(&mut self, tid: u64, start: u64, dur: u64, c: &Call) {
        let a = &c.args;
        let name = c.name.as_str();
        let ret = c.ret.unwrap_or(0);
        match name {
            "clone" | "clone3" | "fork" | "vfork" => {
                let child = ret as u64;
                let threads = a.iter().any(|x| x.contains("CLONE_FILES"));
                if threads && name != "fork" && name != "vfork" {
                    self.tables.share(tid, child);
                } else {
                    self.tables.fork(tid, child, start, self.seq);
                }
                // A child whose calls came first already showed its own.
                let cwd = self.cwd_of(tid);
                self.cwd.entry(child).or_insert(cwd);
            }
            "execve" | "execveat" => self.tables.exec(tid),
            "chdir" => {
                if let Some(p) = a.first().and_then(|p| unquote(p)) {
                    let new = if p.starts_with('/') {
                        p
                    } else {
                        format!("{}/{p}", self.cwd_of(tid))
                    };
                    self.cwd.insert(tid, normalise(&new));
                }
            }
            "fchdir" => {
                if let Some((_, Some(dir))) = a.first().map(|d| decorated(d)) {
                    self.cwd.insert(tid, dir);
                }
            }
            "dup" | "dup2" | "dup3" | "fcntl" | "fcntl64" => self.dup(tid, start, dur, c),
            "close_range" => {
                let first = num(a.first()).unwrap_or(0);
                let last = num(a.get(1)).map_or(i64::MAX, |l| l.min(i64::MAX as u64) as i64);
                let cloexec = a.get(2).is_some_and(|f| f.contains("CLOSE_RANGE_CLOEXEC"));
                self.tables
                    .close_range(tid, first.min(i64::MAX as u64) as i64, last, cloexec);
            }
            "pipe" | "pipe2" | "socketpair" => self.pipes(tid, c),
            "open" | "openat" | "openat2" | "creat" | "getdents64" => {}
            _ => {
                // Any other call returning a descriptor (socket, eventfd,
                // memfd, accept, ...) makes that number something else.
                if c.ret_path.is_some()
                    && ret >= 0
                    && !name.contains("read")
                    && !name.contains("write")
                {
                    self.tables.set(tid, ret, Slot::Other);
                }
            }
        }
    }

    /// `dup`, `dup2`, `dup3`, `fcntl(F_DUPFD*)`: a new handle sharing the
    /// old one's file; `fcntl(F_SETFD)`: the close-on-exec flag.
    fn dup(&mut self, tid: u64, start: u64, dur: u64, c: &Call) {
        let a = &c.args;
        let name = c.name.as_str();
        let cloexec = a
            .iter()
            .any(|x| x.contains("O_CLOEXEC") || x.contains("F_DUPFD_CLOEXEC"));
        let is_dup =
            !name.starts_with("fcntl") || a.get(1).is_some_and(|x| x.starts_with("F_DUPFD"));
        if name.starts_with("fcntl") && a.get(1).is_some_and(|x| x == "F_SETFD") {
            let on = a.get(2).is_some_and(|x| x.contains("FD_CLOEXEC"));
            if let Some(fd) = a.first().and_then(|x| decorated(x).0.parse().ok()) {
                self.tables.set_cloexec(tid, fd, on);
            }
        }
        if !is_dup {
            return;
        }
        let new_fd = c.ret.unwrap_or(0);
        let same = a.first().map(|x| decorated(x).0) == a.get(1).map(|x| decorated(x).0);
        if (name == "dup2" || name == "dup3") && same {
            return; // dup2(fd, fd) changes nothing.
        }
        self.tables.remove(tid, new_fd);
        if let Some(from) = self.handle(tid, a.first(), start) {
            let to = self.shared_handle(from);
            self.tables.set(
                tid,
                new_fd,
                Slot::Held {
                    handle: to,
                    cloexec,
                },
            );
            self.push(tid, start, dur, OpKind::Dup { from, to }, None);
        } else {
            self.tables.set(tid, new_fd, Slot::Other);
        }
    }

    /// `pipe`, `pipe2`, `socketpair`: the new descriptors, listed in the
    /// array argument, are not files.
    fn pipes(&mut self, tid: u64, c: &Call) {
        let list = if c.name == "socketpair" {
            c.args.get(3)
        } else {
            c.args.first()
        };
        for fd in list
            .map(|l| {
                l.trim_matches(['[', ']'])
                    .split(", ")
                    .filter_map(|x| decorated(x).0.parse::<i64>().ok())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
        {
            self.tables.set(tid, fd, Slot::Other);
        }
    }
}
