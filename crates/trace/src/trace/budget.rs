//! How many bytes a replay may write, worked out once from the trace (an
//! upper bound the byte budget and the free-space check use) and enforced
//! again as the replay runs, so no mistake in the estimate can write past
//! what was granted.
//!
//! The model: each file of the trace occupies at most the largest extent
//! anything gave it — its size when first seen, the end of every write,
//! `fallocate` and `ftruncate` — and appending writes and copies add their
//! length (their offset is wherever the file ends). Handle ids are never
//! reused (the parser checks it), so each handle belongs to one file.
//! A rename or a link away from a name leaves the data under another name
//! and the old name free to hold a new file of the same extent: each one
//! adds the old name's extent once more. That holds whatever order the
//! threads play in, since it uses only the final extents and the count.
//!
//! Everything here is worked out one operation at a time, in the trace's
//! order ([`Estimate`]), so a replay streaming its trace knows it after
//! one pass, holding per file and per open handle, never per operation.

use super::format::{FileEntry, Op, OpKind, Reach, Trace};
use std::collections::HashMap;
use std::sync::Mutex;

/// How an operation can grow the files on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Growth {
    /// The file reaches at least this extent.
    To {
        /// File id.
        file: u32,
        /// End of the extent.
        end: u64,
    },
    /// The file grows by up to this many bytes.
    By {
        /// File id.
        file: u32,
        /// Bytes added.
        len: u64,
    },
}

/// The file (and whether it was opened to append) behind every open
/// handle, followed in the trace's order: an open, dup or inherit that
/// succeeded in the recording adds one, a close that succeeded drops it
/// (its id is never used again), so it holds at most the handles open at
/// once.
#[derive(Default)]
pub struct Targets(HashMap<u32, (u32, bool)>);

impl Targets {
    /// Follows `op` (the next in the trace's order) and tells how it can
    /// grow a file, if it can (what the table of operations says it may
    /// reach, on the file behind its handle).
    pub fn follow(&mut self, op: &Op) -> Option<Growth> {
        // A call that failed in the recording made no handle: the parser
        // refuses any later use of it, and the replay keeps none.
        let made = op.failed.is_none();
        match &op.kind {
            OpKind::Open {
                handle,
                file,
                flags,
            } if made => {
                self.0.insert(*handle, (*file, flags.append));
            }
            // A duplicate writes to the same file as the original.
            OpKind::Dup { from, to } | OpKind::Inherit { from, to } if made => {
                if let Some(target) = self.0.get(from).copied() {
                    self.0.insert(*to, target);
                }
            }
            _ => {}
        }
        let growth = self.growth(&op.kind);
        if let (OpKind::Close { handle }, None) = (&op.kind, op.failed) {
            self.0.remove(handle);
        }
        growth
    }

    fn growth(&self, kind: &OpKind) -> Option<Growth> {
        let target = |h: u32| self.0.get(&h).copied();
        Some(match kind.reach()? {
            Reach::Write {
                handle,
                offset,
                len,
            } => {
                let (file, append) = target(handle)?;
                if append {
                    Growth::By { file, len }
                } else {
                    Growth::To {
                        file,
                        end: offset.saturating_add(len),
                    }
                }
            }
            Reach::HandleTo { handle, end } => Growth::To {
                file: target(handle)?.0,
                end,
            },
            Reach::HandleBy { handle, len } => Growth::By {
                file: target(handle)?.0,
                len,
            },
            Reach::FileTo { file, end } => Growth::To { file, end },
        })
    }
}

/// Per file, the furthest any write, `fallocate` or `ftruncate` reached
/// (from its size when first seen) and the bytes appended, apart; the sum
/// of both over the files. Kept apart, the sum bounds the files in
/// whatever order the writes run (an append after a positional write past
/// the end lands beyond it). Every addition saturates, so the sum stays an
/// upper bound however large the trace's numbers are.
#[derive(Default)]
struct Extents {
    /// (furthest end reached, bytes appended) per file id.
    per_file: Vec<(u64, u64)>,
    total: u64,
}

impl Extents {
    /// Takes in the files declared since the last call, each at its size
    /// when first seen (as the lay-out makes it).
    fn declare(&mut self, files: &[FileEntry]) {
        for f in files.iter().skip(self.per_file.len()) {
            let size = f.size.unwrap_or(0);
            self.per_file.push((size, 0));
            self.total = self.total.saturating_add(size);
        }
    }

    /// The most file `file` may hold.
    fn extent(&self, file: usize) -> u64 {
        self.per_file
            .get(file)
            .map_or(0, |(reach, appended)| reach.saturating_add(*appended))
    }

    /// Bytes `g` adds to the total.
    fn delta(&self, g: Growth) -> u64 {
        match g {
            Growth::To { file, end } => self
                .per_file
                .get(file as usize)
                .map_or(end, |(reach, _)| end.saturating_sub(*reach)),
            Growth::By { len, .. } => len,
        }
    }

    fn apply(&mut self, g: Growth) {
        let delta = self.delta(g);
        if let Some((reach, appended)) = match g {
            Growth::To { file, .. } | Growth::By { file, .. } => {
                self.per_file.get_mut(file as usize)
            }
        } {
            match g {
                Growth::To { .. } => *reach = reach.saturating_add(delta),
                Growth::By { .. } => *appended = appended.saturating_add(delta),
            }
        }
        self.total = self.total.saturating_add(delta);
    }
}

/// The estimates of one client's replay, taken in one operation at a
/// time in the trace's order: the bytes it may write and the names it
/// may make.
#[derive(Default)]
pub struct Estimate {
    targets: Targets,
    extents: Extents,
    /// Per file: renames and links away from its name.
    moved_away: Vec<u64>,
    /// The names operations may make.
    made: Metadata,
}

impl Estimate {
    /// Takes in `op`, the next operation of the trace whose head (files)
    /// has been read up to it.
    pub fn op(&mut self, head: &Trace, op: &Op) {
        self.extents.declare(&head.files);
        if let Some(g) = self.targets.follow(op) {
            self.extents.apply(g);
        }
        if let OpKind::Rename { from, .. } | OpKind::Link { from, .. } = &op.kind {
            let from = *from as usize;
            if self.moved_away.len() <= from {
                self.moved_away.resize(from + 1, 0);
            }
            self.moved_away[from] = self.moved_away[from].saturating_add(1);
        }
        if let Some(name) = op.kind.makes() {
            let path = head.files.get(name.file as usize).map_or("", |f| &f.path);
            self.made.add(path, name.inode);
        }
    }

    /// Bytes the replay may write at most (lay-out included); saturates at
    /// `u64::MAX`, which no budget or disk admits.
    pub fn bytes(&mut self, head: &Trace) -> u64 {
        self.extents.declare(&head.files);
        self.moved_away
            .iter()
            .enumerate()
            .fold(self.extents.total, |sum, (file, n)| {
                sum.saturating_add(self.extents.extent(file).saturating_mul(*n))
            })
    }

    /// An upper bound of what the replay may charge for metadata: every
    /// entry of the file table that existed (the lay-out makes it), each
    /// directory on any entry's path, and every operation that may make a
    /// name (an open that creates, `mkdir`, `symlink`, `link`), as if none
    /// were ever removed.
    pub fn metadata(&self, head: &Trace) -> Metadata {
        let mut m = self.made;
        let mut dirs = std::collections::HashSet::new();
        for f in &head.files {
            if f.size.is_some() {
                m.add(&f.path, true);
            }
            let mut at = f.path.as_str();
            while let Some((parent, _)) = at.rsplit_once('/') {
                if !parent.is_empty() && dirs.insert(parent) {
                    m.add(parent, true);
                }
                at = parent;
            }
        }
        m
    }

    /// The estimates of a trace held whole.
    fn of(t: &Trace) -> Estimate {
        let mut e = Estimate::default();
        for op in &t.ops {
            e.op(t, op);
        }
        e
    }
}

/// Bytes the replay of `t` may write at most (see [`Estimate::bytes`]).
pub fn bytes_needed(t: &Trace) -> u64 {
    Estimate::of(t).bytes(t)
}

/// What the inodes a replay makes may take, at most: the bytes (each
/// inode's block and its name's directory entry, as the run directory's
/// account charges them) and the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Metadata {
    /// Bytes charged for blocks and directory entries.
    pub bytes: u64,
    /// Inodes created.
    pub inodes: u64,
}

impl Metadata {
    /// One more name, with its inode when `inode`.
    pub fn add(&mut self, path: &str, inode: bool) {
        let name = path.rsplit('/').next().unwrap_or(path);
        let entry = crate::sandbox::INODE_BYTES * u64::from(inode)
            + crate::sandbox::entry_bytes(name.as_bytes());
        self.bytes = self.bytes.saturating_add(entry);
        self.inodes = self.inodes.saturating_add(u64::from(inode));
    }

    /// Every client's (saturating).
    pub fn times(self, n: u64) -> Metadata {
        Metadata {
            bytes: self.bytes.saturating_mul(n),
            inodes: self.inodes.saturating_mul(n),
        }
    }
}

/// The replay's running account: refuses an operation that would take the
/// files past `limit` bytes, before it runs. What each operation may grow
/// is worked out where the trace is read, in its order ([`Targets`]), and
/// charged here as the operation runs, in whatever order the threads run.
pub struct Allowance {
    limit: u64,
    extents: Mutex<Extents>,
}

/// An operation the allowance refused.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the replay would write more than the {limit} bytes it was granted ({used} used, this operation adds {adds})")]
pub struct OverBudget {
    /// The grant.
    pub limit: u64,
    /// Bytes accounted so far.
    pub used: u64,
    /// What the operation would add.
    pub adds: u64,
}

impl Allowance {
    /// An account starting from the laid-out files (`head`'s), granted
    /// `limit` bytes.
    pub fn new(head: &Trace, limit: u64) -> Allowance {
        let mut extents = Extents::default();
        extents.declare(&head.files);
        Allowance {
            limit,
            extents: Mutex::new(extents),
        }
    }

    /// Charges growth `g` (what [`Targets::follow`] said of an
    /// operation), or refuses it.
    pub fn charge(&self, g: Option<Growth>) -> Result<(), OverBudget> {
        let Some(g) = g else {
            return Ok(());
        };
        let mut x = self.extents.lock().unwrap_or_else(|p| p.into_inner());
        let adds = x.delta(g);
        if x.total.saturating_add(adds) > self.limit {
            return Err(OverBudget {
                limit: self.limit,
                used: x.total,
                adds,
            });
        }
        x.apply(g);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(ops: &str) -> Trace {
        Trace::parse(
            "t",
            &format!(
                "plumb-trace 1\nduration_us 10\nfile 0 100 a\nfile 1 - b\nthread 0 1\n{ops}end {}\n",
                ops.lines().count()
            ),
        )
        .unwrap()
    }

    #[test]
    fn the_estimate_is_an_upper_bound_that_never_overflows() {
        let t = trace("op 0 0 1 open 0 1 w,creat\nop 0 1 1 pwrite 0 0 4096\nop 0 2 1 pwrite 0 0 4096\nop 0 3 1 ftruncate 0 8192\n");
        assert_eq!(bytes_needed(&t), 100 + 8192);
        let a = trace("op 0 0 1 open 0 1 w,append\nop 0 1 1 write 0 0 10\nop 0 2 1 write 0 0 10\n");
        assert_eq!(bytes_needed(&a), 120, "appends add up");
        let max = crate::trace::limits::MAX_FILE_BYTES;
        let big = Trace {
            files: vec![crate::trace::format::FileEntry::file("x", Some(max)); 50_000],
            ..Trace::default()
        };
        assert_eq!(bytes_needed(&big), u64::MAX, "saturates");
    }

    #[test]
    fn a_name_renamed_away_is_counted_again_for_what_it_holds_next() {
        // b is written, renamed over a, then made again and written: two
        // files of 4096 bytes stand at the end (a's 100 were replaced).
        let t = trace("op 0 0 1 open 0 1 w,creat\nop 0 1 1 pwrite 0 0 4096\nop 0 2 1 rename 1 0\nop 0 3 1 open 1 1 w,creat\nop 0 4 1 pwrite 1 0 4096\n");
        assert_eq!(bytes_needed(&t), 100 + 2 * 4096);
        // A huge file renamed away again and again saturates, never wraps.
        let max = crate::trace::limits::MAX_FILE_BYTES;
        let renames = "op 0 1 1 rename 0 1\n".repeat(20_000);
        let mut many = trace(&renames);
        many.files[0].size = Some(max);
        assert_eq!(bytes_needed(&many), u64::MAX, "saturates");
    }

    #[test]
    fn every_name_a_trace_may_make_is_counted() {
        let mkdirs: String = (0..3).map(|i| format!("op 0 {i} 1 mkdir 1\n")).collect();
        let t = trace(&mkdirs);
        // a laid out (b did not exist), three mkdir records.
        let m = Estimate::of(&t).metadata(&t);
        assert_eq!(m.inodes, 4);
        assert_eq!(m.bytes, 4 * (4096 + 12));
        assert_eq!(m.times(u64::MAX).bytes, u64::MAX, "saturates");
        let nested = Trace::parse(
            "t",
            "plumb-trace 1\nduration_us 10\nfile 0 1 d/e/f\nfile 1 1 d/g\nthread 0 1\nend 0\n",
        )
        .unwrap();
        let m = Estimate::of(&nested).metadata(&nested);
        assert_eq!(m.inodes, 4, "f, g, d/e and d");
    }

    #[test]
    fn the_allowance_refuses_what_passes_the_limit() {
        let t = trace(
            "op 0 0 1 open 0 1 w,creat\nop 0 1 1 pwrite 0 0 4096\nop 0 2 1 pwrite 0 4096 4096\n",
        );
        let a = Allowance::new(&t, 100 + 6000);
        let mut targets = Targets::default();
        let g: Vec<Option<Growth>> = t.ops.iter().map(|op| targets.follow(op)).collect();
        assert!(a.charge(g[1]).is_ok());
        assert!(a.charge(g[1]).is_ok(), "same extent: nothing new");
        let e = a.charge(g[2]).unwrap_err();
        assert_eq!((e.used, e.adds), (4196, 4096));
    }
}
