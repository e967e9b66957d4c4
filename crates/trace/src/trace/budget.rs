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

use super::format::{OpKind, Reach, Trace};
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

/// The file (and whether it was opened to append) behind every handle.
pub struct Targets(HashMap<u32, (u32, bool)>);

impl Targets {
    /// Reads the handles' files off the trace's opens.
    pub fn new(t: &Trace) -> Targets {
        let mut m = HashMap::new();
        for op in &t.ops {
            match &op.kind {
                OpKind::Open {
                    handle,
                    file,
                    flags,
                } => {
                    m.insert(*handle, (*file, flags.append));
                }
                // A duplicate writes to the same file as the original.
                OpKind::Dup { from, to } | OpKind::Inherit { from, to } => {
                    if let Some(target) = m.get(from).copied() {
                        m.insert(*to, target);
                    }
                }
                _ => {}
            }
        }
        Targets(m)
    }

    /// How `kind` can grow a file, if it can (what the table of
    /// operations says it may reach, on the file behind its handle).
    pub fn growth(&self, kind: &OpKind) -> Option<Growth> {
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

/// Extents per file and their sum; every addition saturates, so the sum
/// stays an upper bound however large the trace's numbers are.
struct Extents {
    per_file: Vec<u64>,
    total: u64,
}

impl Extents {
    /// The files as laid out: each at its size when first seen.
    fn initial(t: &Trace) -> Extents {
        let per_file: Vec<u64> = t.files.iter().map(|f| f.size.unwrap_or(0)).collect();
        let total = per_file.iter().fold(0u64, |a, b| a.saturating_add(*b));
        Extents { per_file, total }
    }

    /// Bytes `g` adds to the total.
    fn delta(&self, g: Growth) -> u64 {
        match g {
            Growth::To { file, end } => self
                .per_file
                .get(file as usize)
                .map_or(end, |e| end.saturating_sub(*e)),
            Growth::By { len, .. } => len,
        }
    }

    fn apply(&mut self, g: Growth) {
        let delta = self.delta(g);
        let file = match g {
            Growth::To { file, .. } | Growth::By { file, .. } => file as usize,
        };
        if let Some(e) = self.per_file.get_mut(file) {
            *e = e.saturating_add(delta);
        }
        self.total = self.total.saturating_add(delta);
    }
}

/// Bytes the replay may write at most (lay-out included); saturates at
/// `u64::MAX`, which no budget or disk admits.
pub fn bytes_needed(t: &Trace) -> u64 {
    let targets = Targets::new(t);
    let mut x = Extents::initial(t);
    let mut moved_away = vec![0u64; x.per_file.len()];
    for op in &t.ops {
        if let Some(g) = targets.growth(&op.kind) {
            x.apply(g);
        }
        if let OpKind::Rename { from, .. } | OpKind::Link { from, .. } = &op.kind {
            if let Some(n) = moved_away.get_mut(*from as usize) {
                *n = n.saturating_add(1);
            }
        }
    }
    x.per_file
        .iter()
        .zip(&moved_away)
        .fold(x.total, |sum, (extent, n)| {
            sum.saturating_add(extent.saturating_mul(*n))
        })
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

/// An upper bound of what the replay of `t` may charge for metadata: every
/// entry of the file table that existed (the lay-out makes it), each
/// directory on any entry's path, and every operation that may make a name
/// (an open that creates, `mkdir`, `symlink`, `link`), as if none were
/// ever removed.
pub fn metadata_needed(t: &Trace) -> Metadata {
    let mut m = Metadata::default();
    let mut dirs = std::collections::HashSet::new();
    for f in &t.files {
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
    let path = |file: &u32| t.files.get(*file as usize).map_or("", |f| f.path.as_str());
    for name in t.ops.iter().filter_map(|op| op.kind.makes()) {
        m.add(path(&name.file), name.inode);
    }
    m
}

/// The replay's running account: refuses an operation that would take the
/// files past `limit` bytes, before it runs.
pub struct Allowance {
    targets: Targets,
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
    /// An account starting from the laid-out files, granted `limit` bytes.
    pub fn new(t: &Trace, limit: u64) -> Allowance {
        Allowance {
            targets: Targets::new(t),
            limit,
            extents: Mutex::new(Extents::initial(t)),
        }
    }

    /// Charges what `kind` may add, or refuses it.
    pub fn charge(&self, kind: &OpKind) -> Result<(), OverBudget> {
        let Some(g) = self.targets.growth(kind) else {
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
        let m = metadata_needed(&t);
        assert_eq!(m.inodes, 4);
        assert_eq!(m.bytes, 4 * (4096 + 12));
        assert_eq!(m.times(u64::MAX).bytes, u64::MAX, "saturates");
        let nested = Trace::parse(
            "t",
            "plumb-trace 1\nduration_us 10\nfile 0 1 d/e/f\nfile 1 1 d/g\nthread 0 1\nend 0\n",
        )
        .unwrap();
        assert_eq!(metadata_needed(&nested).inodes, 4, "f, g, d/e and d");
    }

    #[test]
    fn the_allowance_refuses_what_passes_the_limit() {
        let t = trace(
            "op 0 0 1 open 0 1 w,creat\nop 0 1 1 pwrite 0 0 4096\nop 0 2 1 pwrite 0 4096 4096\n",
        );
        let a = Allowance::new(&t, 100 + 6000);
        assert!(a.charge(&t.ops[1].kind).is_ok());
        assert!(a.charge(&t.ops[1].kind).is_ok(), "same extent: nothing new");
        let e = a.charge(&t.ops[2].kind).unwrap_err();
        assert_eq!((e.used, e.adds), (4196, 4096));
    }
}
