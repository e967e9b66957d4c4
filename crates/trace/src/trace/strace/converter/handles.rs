//! Descriptors as trace handles: each open file description (its file,
//! position and append flag) and the handles that share it; a descriptor
//! argument's handle, made on first use for a fork's copy (an `inherit`)
//! or a descriptor opened before the log began (an implicit open).

use super::super::descriptors::Slot;
use super::super::syntax::decorated;
use super::{Converter, Description, Seen};
use crate::trace::format::{EntryKind, OpKind, OpenFlags};

impl Converter {
    /// A new handle on a new open file description of `file`.
    pub(super) fn new_handle(&mut self, file: u32, append: bool) -> u32 {
        self.descriptions.push(Description {
            file,
            pos: 0,
            append,
        });
        self.handles.push(self.descriptions.len() - 1);
        self.handles.len() as u32 - 1
    }

    /// A new handle sharing `h`'s open file description (dup, fork).
    pub(super) fn shared_handle(&mut self, h: u32) -> u32 {
        self.handles.push(self.handles[h as usize]);
        self.handles.len() as u32 - 1
    }

    pub(super) fn desc(&mut self, h: u32) -> &mut Description {
        &mut self.descriptions[self.handles[h as usize]]
    }

    /// The handle a descriptor argument names in `tid`'s table: a copy
    /// inherited at fork becomes a handle of its own now (an `inherit`
    /// operation at the time of the fork); a descriptor under the root the
    /// trace never saw opened gets an implicit open. None for descriptors
    /// that are not files under the root.
    pub(super) fn handle(&mut self, tid: u64, arg: Option<&String>, start: u64) -> Option<u32> {
        let (fd, path) = decorated(arg?);
        let fd: i64 = fd.parse().ok()?;
        match self.tables.get(tid, fd) {
            Some(Slot::Held { handle, .. }) => return Some(handle),
            Some(Slot::Inherited {
                from,
                cloexec,
                at_us,
                seq,
            }) => {
                let h = self.shared_handle(from);
                self.push_at(tid, at_us, seq, 0, OpKind::Inherit { from, to: h }, None);
                self.tables.set(tid, fd, Slot::Held { handle: h, cloexec });
                return Some(h);
            }
            Some(Slot::Other) => return None,
            None => {}
        }
        let rel = self.relative(path.as_deref()?)?;
        let file = self.file(&rel, Seen::Exists(EntryKind::File, None));
        let directory = self.files[file as usize].kind == EntryKind::Dir;
        let h = self.new_handle(file, false);
        self.tables.set(
            tid,
            fd,
            Slot::Held {
                handle: h,
                cloexec: false,
            },
        );
        self.push(
            tid,
            start,
            0,
            OpKind::Open {
                handle: h,
                file,
                flags: OpenFlags {
                    read: true,
                    write: !directory,
                    directory,
                    implicit: true,
                    ..Default::default()
                },
            },
            None,
        );
        Some(h)
    }
}
