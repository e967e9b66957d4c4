//! Calls on a descriptor: reads and writes (offsets of plain ones from the
//! file position, as the kernel keeps it), seeks, syncs, truncation,
//! allocation, mappings, copies, closes, and the rest that take a handle.

use super::super::syntax::{decorated, has_flag, mode, num, num_or_hex};
use super::{Converter, Event, Seen};
use crate::trace::format::{EntryKind, OpKind};
use crate::trace::limits::{MAX_FILE_BYTES, MAX_IO_BYTES};

impl Converter {
    /// The handle of the call's descriptor argument `i`, if it is a file
    /// under the root.
    fn handle_arg(&mut self, ev: &Event, i: usize) -> Option<u32> {
        self.handle(ev.tid, ev.arg(i), ev.start)
    }

    /// `lseek`: the new position, which `SEEK_END` by 0 shows is the size.
    pub(super) fn lseek(&mut self, ev: &Event) {
        let Some(h) = self.handle_arg(ev, 0) else {
            return;
        };
        let Some(ret) = ev.c.ret.filter(|_| ev.failed.is_none()) else {
            let offset = self.desc(h).pos;
            self.emit(ev, OpKind::Lseek { handle: h, offset }, ev.failed);
            return;
        };
        let pos = self.bounded(ret as u64, "lseek offset");
        self.desc(h).pos = pos;
        let file = self.desc(h).file;
        if ev.arg(2).is_some_and(|w| w == "SEEK_END") && ev.arg(1).is_some_and(|o| o == "0") {
            self.saw(file, Seen::Exists(EntryKind::File, Some(pos)));
        }
        let kind = OpKind::Lseek {
            handle: h,
            offset: pos,
        };
        self.emit(ev, kind, None);
    }

    /// `fsync`, `fdatasync`, `fstat`, `getdents64`, `fchmod`.
    pub(super) fn on_handle(&mut self, ev: &Event) {
        let Some(h) = self.handle_arg(ev, 0) else {
            return;
        };
        let kind = match ev.name() {
            "fsync" => OpKind::Fsync { handle: h },
            "fdatasync" => OpKind::Fdatasync { handle: h },
            "fchmod" => OpKind::Fchmod {
                handle: h,
                mode: mode(ev.arg(1)),
            },
            "getdents64" => {
                let len = num(ev.arg(2)).unwrap_or(0).min(MAX_IO_BYTES);
                OpKind::Readdir { handle: h, len }
            }
            _ => {
                let file = self.desc(h).file;
                self.stat_seen(file, ev.arg(1));
                OpKind::Fstat { handle: h }
            }
        };
        self.emit(ev, kind, ev.failed);
    }

    /// `close`: the descriptor is released unless the call failed.
    pub(super) fn close(&mut self, ev: &Event) {
        let fd = ev.arg(0).and_then(|x| decorated(x).0.parse::<i64>().ok());
        if let Some(h) = self.handle_arg(ev, 0) {
            if ev.failed.is_none() {
                if let Some(fd) = fd {
                    self.tables.remove(ev.tid, fd);
                }
            }
            self.emit(ev, OpKind::Close { handle: h }, ev.failed);
        } else if let Some(fd) = fd.filter(|_| ev.failed.is_none()) {
            self.tables.remove(ev.tid, fd);
        }
    }

    /// `sync_file_range`.
    pub(super) fn sync_file_range(&mut self, ev: &Event) {
        let Some(h) = self.handle_arg(ev, 0) else {
            return;
        };
        let (offset, len) = (num(ev.arg(1)).unwrap_or(0), num(ev.arg(2)).unwrap_or(0));
        self.end(offset, len);
        let kind = OpKind::SyncFileRange {
            handle: h,
            offset,
            len,
        };
        self.emit(ev, kind, ev.failed);
    }

    /// `ftruncate`: the file's new size.
    pub(super) fn ftruncate(&mut self, ev: &Event) {
        let Some(h) = self.handle_arg(ev, 0) else {
            return;
        };
        let len = num(ev.arg(1)).unwrap_or(0);
        let len = self.bounded(len, "ftruncate length");
        if ev.failed.is_none() {
            let file = self.desc(h).file;
            self.modified(file, len);
        }
        self.emit(ev, OpKind::Ftruncate { handle: h, len }, ev.failed);
    }

    /// `fallocate`: the file at least as long as the range's end.
    pub(super) fn fallocate(&mut self, ev: &Event) {
        let Some(h) = self.handle_arg(ev, 0) else {
            return;
        };
        let (offset, len) = (num(ev.arg(2)).unwrap_or(0), num(ev.arg(3)).unwrap_or(0));
        let end = self.end(offset, len);
        if ev.failed.is_none() {
            let file = self.desc(h).file;
            let size = self.state[file as usize].size.max(end);
            self.modified(file, size);
        }
        let kind = OpKind::Fallocate {
            handle: h,
            offset,
            len,
        };
        self.emit(ev, kind, ev.failed);
    }

    /// An `mmap` of a file (`mmap(addr, len, prot, flags, fd, offset)`;
    /// a failed one too, which the replay expects to fail the same way):
    /// its range, and whether its stores reach the file (a shared
    /// writable map). A failed map whose range passes the largest file a
    /// trace may describe (a program probing with an absurd length) is left
    /// out, as is one whose failure a replay could not meet again; a
    /// successful one past that size fails the conversion, naming it.
    pub(super) fn mmap(&mut self, ev: &Event) {
        let Some(h) = self.handle_arg(ev, 4) else {
            return;
        };
        let len = num(ev.arg(1)).unwrap_or(0);
        let offset = num_or_hex(ev.arg(5)).unwrap_or(0);
        let within = offset
            .checked_add(len)
            .is_some_and(|end| end <= MAX_FILE_BYTES);
        // A failure the replay can meet again from what a map record holds
        // (offset, length, kind and the descriptor); one that came from
        // what it does not hold (PROT_EXEC on a noexec mount, MAP_LOCKED's
        // limit, a fixed address) is left out.
        let again = matches!(
            ev.failed,
            None | Some(
                libc::EINVAL
                    | libc::EACCES
                    | libc::EBADF
                    | libc::ENODEV
                    | libc::EOVERFLOW
                    | libc::ENOMEM
            )
        );
        if !again || (ev.failed.is_some() && !within) {
            return;
        }
        let len = self.bounded(len, "mmap length");
        let offset = self.bounded(offset, "mmap offset");
        self.end(offset, len);
        let shared =
            has_flag(ev.arg(3), "MAP_SHARED") || has_flag(ev.arg(3), "MAP_SHARED_VALIDATE");
        let kind = OpKind::Map {
            handle: h,
            offset,
            len,
            write: shared && has_flag(ev.arg(2), "PROT_WRITE"),
        };
        self.emit(ev, kind, ev.failed);
    }

    /// A successful `copy_file_range` or `sendfile` between two files.
    pub(super) fn copy(&mut self, ev: &Event) {
        let (from, to) = if ev.name() == "sendfile" {
            (1, 0)
        } else {
            (0, 2)
        };
        if let (Some(from), Some(to)) = (self.handle_arg(ev, from), self.handle_arg(ev, to)) {
            let len = self.bounded(ev.c.ret.unwrap_or(0) as u64, "copy length");
            self.emit(ev, OpKind::Copy { from, to, len }, None);
        }
    }

    /// A read or write of any kind: at its offset, or at the file position
    /// (the end of the file when appending), which it moves.
    pub(super) fn transfer(&mut self, ev: &Event) {
        let name = ev.name();
        let Some(h) = self.handle_arg(ev, 0) else {
            return;
        };
        let explicit = match name {
            "pread64" | "pwrite64" | "preadv" | "preadv2" | "pwritev" | "pwritev2" => {
                num(ev.arg(3))
            }
            _ => None,
        };
        let d = *self.desc(h);
        let file = d.file;
        let is_write = name.starts_with('w') || name.starts_with("pw");
        let offset = match explicit {
            Some(o) => o,
            None if is_write && d.append => self.state[file as usize].size,
            None => d.pos,
        };
        let call = match name {
            "read" => "read",
            "pread64" => "pread",
            "readv" => "readv",
            "preadv" | "preadv2" => "preadv",
            "write" => "write",
            "pwrite64" => "pwrite",
            "writev" => "writev",
            _ => "pwritev",
        };
        let kind = |handle, offset, len| {
            if is_write {
                OpKind::Write {
                    call,
                    handle,
                    offset,
                    len,
                }
            } else {
                OpKind::Read {
                    call,
                    handle,
                    offset,
                    len,
                }
            }
        };
        if ev.failed.is_some() {
            // What was asked, for the replay to fail the same way.
            let asked = match name {
                "read" | "write" | "pread64" | "pwrite64" => num(ev.arg(2)).unwrap_or(0),
                _ => 0,
            }
            .min(MAX_IO_BYTES);
            let offset = offset.min(MAX_FILE_BYTES - asked);
            self.emit(ev, kind(h, offset, asked), ev.failed);
            return;
        }
        let done = ev.c.ret.unwrap_or(0) as u64;
        let end = self.end(offset, done);
        if explicit.is_none() {
            self.desc(h).pos = end;
        }
        if is_write {
            let size = self.state[file as usize].size.max(end);
            self.modified(file, size);
        } else if done > 0 {
            // A short or empty read only says the file ends somewhere after `offset`.
            self.saw(file, Seen::Exists(EntryKind::File, Some(end)));
        }
        // A transfer larger than one replayed operation may move becomes
        // several, back to back.
        let mut at = offset;
        let mut left = done;
        loop {
            let len = left.min(MAX_IO_BYTES);
            self.emit(ev, kind(h, at, len), None);
            left -= len;
            at = at.saturating_add(len);
            if left == 0 || self.error.is_some() {
                break;
            }
        }
    }
}
