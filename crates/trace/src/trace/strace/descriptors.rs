//! Descriptor tables as the kernel keeps them: threads made with
//! CLONE_FILES share one, a fork copies it, exec closes the close-on-exec
//! descriptors. A fork's copies are handed out lazily: a child's copy of a
//! parent's descriptor becomes a handle of its own (an `inherit` operation
//! dated at the fork) only when the child uses it, so the many descriptors
//! a child never touches before exec leave no trace.

use std::collections::HashMap;

/// What a descriptor number holds in one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// A trace handle.
    Held {
        /// The handle.
        handle: u32,
        /// Closed at exec.
        cloexec: bool,
    },
    /// A fork's copy of the parent's handle `from`, not used yet.
    Inherited {
        /// The parent's handle.
        from: u32,
        /// Closed at exec.
        cloexec: bool,
        /// When the fork began, µs into the log.
        at_us: u64,
        /// The fork's position in the log.
        seq: u64,
    },
    /// Not a file under the root (a pipe, socket, O_PATH descriptor, ...).
    Other,
}

impl Slot {
    fn cloexec(&self) -> bool {
        match self {
            Slot::Held { cloexec, .. } | Slot::Inherited { cloexec, .. } => *cloexec,
            Slot::Other => false,
        }
    }

    fn with_cloexec(self, on: bool) -> Slot {
        match self {
            Slot::Held { handle, .. } => Slot::Held {
                handle,
                cloexec: on,
            },
            Slot::Inherited {
                from, at_us, seq, ..
            } => Slot::Inherited {
                from,
                cloexec: on,
                at_us,
                seq,
            },
            Slot::Other => Slot::Other,
        }
    }
}

/// Every process's descriptor table, by thread id.
#[derive(Default)]
pub(super) struct Tables {
    table_of: HashMap<u64, usize>,
    tables: Vec<HashMap<i64, Slot>>,
}

impl Tables {
    /// The table of thread `tid` (a new, empty one for a thread not seen
    /// before: its descriptors were opened before the log began).
    fn table(&mut self, tid: u64) -> &mut HashMap<i64, Slot> {
        let next = self.tables.len();
        let i = *self.table_of.entry(tid).or_insert(next);
        if i == next {
            self.tables.push(HashMap::new());
        }
        &mut self.tables[i]
    }

    pub(super) fn get(&mut self, tid: u64, fd: i64) -> Option<Slot> {
        self.table(tid).get(&fd).copied()
    }

    pub(super) fn set(&mut self, tid: u64, fd: i64, slot: Slot) {
        self.table(tid).insert(fd, slot);
    }

    pub(super) fn remove(&mut self, tid: u64, fd: i64) {
        self.table(tid).remove(&fd);
    }

    /// A thread made with CLONE_FILES: one table for both. Under load
    /// strace can print the new thread's first calls before the clone's
    /// result: what the thread opened meanwhile went into a table of its
    /// own, which joins the parent's (the two were one table all along).
    pub(super) fn share(&mut self, parent: u64, child: u64) {
        self.table(parent);
        let i = self.table_of[&parent];
        match self.table_of.get(&child).copied() {
            Some(j) if j != i => {
                let early = std::mem::take(&mut self.tables[j]);
                self.tables[i].extend(early);
                self.move_threads(j, i);
            }
            _ => {
                self.table_of.insert(child, i);
            }
        }
    }

    /// A fork: the child gets a copy whose handles are inherited lazily.
    /// What the child opened before strace printed the fork's result (see
    /// [`Tables::share`]) is kept over the copy.
    pub(super) fn fork(&mut self, parent: u64, child: u64, at_us: u64, seq: u64) {
        let mut copy: HashMap<i64, Slot> = self
            .table(parent)
            .iter()
            .map(|(&fd, &slot)| {
                let slot = match slot {
                    Slot::Held { handle, cloexec } => Slot::Inherited {
                        from: handle,
                        cloexec,
                        at_us,
                        seq,
                    },
                    other => other,
                };
                (fd, slot)
            })
            .collect();
        let early = self.table_of.get(&child).copied();
        if let Some(j) = early {
            copy.extend(std::mem::take(&mut self.tables[j]));
        }
        self.tables.push(copy);
        let new = self.tables.len() - 1;
        match early {
            Some(j) => self.move_threads(j, new),
            None => {
                self.table_of.insert(child, new);
            }
        }
    }

    /// Every thread using table `from` uses table `to` instead.
    fn move_threads(&mut self, from: usize, to: usize) {
        for t in self.table_of.values_mut().filter(|t| **t == from) {
            *t = to;
        }
    }

    /// Thread `tid` ended: its id no longer names its table (the kernel
    /// may give the id to a new process later in the log).
    pub(super) fn exited(&mut self, tid: u64) {
        self.table_of.remove(&tid);
    }

    /// A successful exec closes the close-on-exec descriptors.
    pub(super) fn exec(&mut self, tid: u64) {
        self.table(tid).retain(|_, s| !s.cloexec());
    }

    pub(super) fn set_cloexec(&mut self, tid: u64, fd: i64, on: bool) {
        if let Some(s) = self.table(tid).get_mut(&fd) {
            *s = s.with_cloexec(on);
        }
    }

    /// close_range(first, last): closes the range, or marks it close-on-exec.
    pub(super) fn close_range(&mut self, tid: u64, first: i64, last: i64, cloexec: bool) {
        let t = self.table(tid);
        if cloexec {
            for (_, s) in t.iter_mut().filter(|(fd, _)| (first..=last).contains(*fd)) {
                *s = s.with_cloexec(true);
            }
        } else {
            t.retain(|fd, _| !(first..=last).contains(fd));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forks_copy_lazily_threads_share_exec_closes_cloexec() {
        let mut t = Tables::default();
        t.set(
            1,
            3,
            Slot::Held {
                handle: 0,
                cloexec: false,
            },
        );
        t.set(
            1,
            4,
            Slot::Held {
                handle: 1,
                cloexec: true,
            },
        );
        t.share(1, 2);
        assert_eq!(
            t.get(2, 3),
            Some(Slot::Held {
                handle: 0,
                cloexec: false
            })
        );
        t.fork(1, 10, 500, 7);
        assert_eq!(
            t.get(10, 3),
            Some(Slot::Inherited {
                from: 0,
                cloexec: false,
                at_us: 500,
                seq: 7
            })
        );
        t.remove(10, 3);
        assert!(t.get(1, 3).is_some(), "the parent keeps its descriptor");
        t.exec(10);
        assert_eq!(t.get(10, 4), None, "close-on-exec");
        t.close_range(1, 0, 10, false);
        assert_eq!(t.get(2, 4), None, "threads share the table");
    }
}
