//! Files of a run directory held open past the call that opened them (a
//! scenario's file handles, a background job's or copy's files), so that
//! removing one gives its bytes back to the budget only when they are
//! really freed: when the last descriptor on it closes, not when its name
//! goes. Without this, a scenario could remove a file it keeps open, be
//! given its bytes back, and write them again elsewhere while the open
//! file still takes its space, as often as it has descriptors.
//!
//! A removal asks [`Holds::removed`] what it freed: nothing for a held
//! inode (which is marked removed), its size otherwise. The last [`Held`]
//! descriptor of a marked inode to close reads the inode's size then (what
//! writes through a handle added after the removal was charged too) and
//! leaves it in [`Holds::take_released`] for the budget to take back.

use super::Stat;
use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Lets the process hold as many descriptors as its hard limit allows.
/// Holds keep one descriptor per held inode beside the users' own (a job
/// of N files needs 2N), and a replayed trace keeps every descriptor its
/// processes held: the usual soft limit of 1024, under a hard limit far
/// above it, failed a job of 700 files with EMFILE. Called when a run
/// directory is opened, so all of these, which work beneath one, have it.
pub fn raise_descriptor_limit() {
    // SAFETY: getrlimit/setrlimit fill and read a plain struct.
    unsafe {
        let mut l: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

/// One inode: a file's identity whatever names it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Inode {
    /// Device number of its filesystem.
    pub dev: u64,
    /// Inode number on it.
    pub ino: u64,
}

/// How many held descriptors an inode has, and whether its last name was
/// removed while they were open.
#[derive(Debug, Default)]
struct Holders {
    count: usize,
    removed: bool,
}

/// The inodes of one run directory held open, shared by its clones.
#[derive(Debug, Default)]
pub struct Holds {
    open: Mutex<HashMap<Inode, Holders>>,
    /// Bytes freed by closing removed files, not yet given back.
    released: AtomicU64,
}

impl Holds {
    fn lock(&self) -> MutexGuard<'_, HashMap<Inode, Holders>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds `fd` (of any kind; only regular files are ever counted free).
    pub fn hold(self: &Arc<Self>, fd: OwnedFd) -> std::io::Result<Held> {
        let inode = super::fstat(fd.as_raw_fd())?.inode;
        self.lock().entry(inode).or_default().count += 1;
        Ok(Held {
            fd,
            inode,
            holds: self.clone(),
        })
    }

    /// Bytes that removing the name `st` described frees now: its
    /// [`Stat::freed_by_removal`], or nothing while the inode is held
    /// (then its bytes are released when the last holder closes). Call it
    /// after the name is gone.
    pub fn removed(&self, st: &Stat) -> u64 {
        let freed = st.freed_by_removal();
        if freed == 0 {
            return 0;
        }
        match self.lock().get_mut(&st.inode) {
            Some(h) => {
                h.removed = true;
                0
            }
            None => freed,
        }
    }

    /// True when `inode` is held by more than one descriptor: truncating
    /// it through one of them frees nothing the budget may give back, as
    /// another holder (a job rewriting its region, a copy, a second handle)
    /// may grow it again without a charge.
    pub fn shared(&self, inode: Inode) -> bool {
        self.lock().get(&inode).is_some_and(|h| h.count > 1)
    }

    /// Bytes freed by closing removed files since the last call.
    pub fn take_released(&self) -> u64 {
        self.released.swap(0, Ordering::Relaxed)
    }

    /// One holder of `inode` closes `fd` (after this returns).
    fn release(&self, inode: Inode, fd: RawFd) {
        let mut open = self.lock();
        let Some(h) = open.get_mut(&inode) else {
            return;
        };
        h.count = h.count.saturating_sub(1);
        if h.count > 0 {
            return;
        }
        let removed = h.removed;
        open.remove(&inode);
        // Still under the lock: a removal racing this close either marked
        // the inode before (counted here) or finds it unheld after (and
        // counts it itself). The size is what the file holds now.
        if removed {
            if let Ok(st) = super::fstat(fd) {
                if st.links == 0 {
                    let bytes = st.freed_by_removal();
                    let _ = self
                        .released
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| {
                            Some(r.saturating_add(bytes))
                        });
                }
            }
        }
    }
}

/// A descriptor counted in its run directory's [`Holds`] until dropped.
#[derive(Debug)]
pub struct Held {
    fd: OwnedFd,
    inode: Inode,
    holds: Arc<Holds>,
}

impl Held {
    /// The inode it holds.
    pub fn inode(&self) -> Inode {
        self.inode
    }

    /// What the held file is now (`fstat` of the descriptor: no name is
    /// looked up, so a rename since the open cannot change the answer).
    pub fn stat(&self) -> std::io::Result<Stat> {
        super::fstat(self.fd.as_raw_fd())
    }
}

impl AsRawFd for Held {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for Held {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.holds.release(self.inode, self.fd.as_raw_fd());
    }
}
