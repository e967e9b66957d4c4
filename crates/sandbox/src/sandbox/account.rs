//! What a run may leave on disk: bytes and inodes, one account per run.
//!
//! Every byte a scenario writes is charged before it is written, and every
//! inode the run directory creates (a file, a directory, a symlink) is
//! charged as it is created: one inode, plus the block it takes
//! ([`INODE_BYTES`]) and its name's entry in the parent directory
//! ([`entry_bytes`]), against the bytes. So a run of empty files and
//! directories costs what it really takes on disk, and the count of
//! inodes has its own bound, so a long run cannot exhaust the
//! filesystem's inode table whatever its bytes.
//!
//! Accounts nest: a pack's account has its own limits (what the pack
//! declared) and charges the run's account as well, so the bound given on
//! the command line holds for the whole run, however many packs or
//! scripts it runs. When a pack's directory is deleted its charges go back
//! to the run ([`Account::close`]); a kept directory keeps them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes charged for each inode created: one filesystem block, what ext4,
/// xfs and btrfs give an empty directory and the least a file with data
/// takes (an empty file takes no block, but its inode table entry costs
/// about as much, and the inode count is bounded too).
pub const INODE_BYTES: u64 = 4096;

/// The most inodes a run may create when no bound is given: far above what
/// any built-in scenario makes, and lowered to half the filesystem's free
/// inodes when that is less ([`default_inodes`]).
pub const DEFAULT_MAX_INODES: u64 = 1_000_000;

/// Bytes a name takes in its directory (ext4's `ext4_dir_entry_2`: 8 bytes
/// of header and the name, rounded up to 4): charged with every inode and
/// every hard link, since a directory grows with its entries and does not
/// shrink when they go.
pub fn entry_bytes(name: &[u8]) -> u64 {
    (8 + name.len() as u64).next_multiple_of(4)
}

/// The default inode bound for a run in `dir`: [`DEFAULT_MAX_INODES`], or
/// half the inodes free there when that is less (at least 1). A filesystem
/// that does not count inodes (btrfs reports 0) gets the default.
pub fn default_inodes(dir: &std::path::Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return DEFAULT_MAX_INODES;
    };
    // SAFETY: statvfs fills the zeroed struct; `c` is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 || st.f_files == 0 {
        return DEFAULT_MAX_INODES;
    }
    (st.f_favail / 2).clamp(1, DEFAULT_MAX_INODES)
}

/// The two things an account counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes of data, blocks and directory entries.
    Bytes,
    /// Inodes created.
    Inodes,
}

/// A charge the account (or the run's, above it) refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} budget exceeded: {op} needs {need} {} but only {left} of the {limit} allowed are left (rule: {})",
    match .unit { Unit::Bytes => "byte", Unit::Inodes => "inode" },
    match .unit { Unit::Bytes => "bytes", Unit::Inodes => "inode(s)" },
    match .unit { Unit::Bytes => "--max-bytes / free space", Unit::Inodes => "--max-inodes / free inodes" })]
pub struct OverBudget {
    /// The operation.
    pub op: &'static str,
    /// What ran out.
    pub unit: Unit,
    /// What the operation needs.
    pub need: u64,
    /// What was left.
    pub left: u64,
    /// The bound.
    pub limit: u64,
}

/// A counter with a bound, taken from and given back atomically.
#[derive(Debug)]
struct Meter {
    limit: u64,
    used: AtomicU64,
}

impl Meter {
    fn new(limit: u64) -> Meter {
        Meter {
            limit,
            used: AtomicU64::new(0),
        }
    }

    /// Takes `n`, or says how much was left.
    fn take(&self, n: u64) -> Result<(), u64> {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                u.checked_add(n).filter(|t| *t <= self.limit)
            })
            .map(|_| ())
            .map_err(|u| self.limit.saturating_sub(u))
    }

    fn give(&self, n: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(n))
            });
    }

    fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }
}

/// Bytes and inodes a run directory may still take, and the account above
/// it, if any, that every charge is taken from too.
#[derive(Debug)]
pub struct Account {
    bytes: Meter,
    inodes: Meter,
    parent: Option<Arc<Account>>,
}

impl Account {
    /// A run's account: at most `max_bytes` and `max_inodes`.
    pub fn new(max_bytes: u64, max_inodes: u64) -> Arc<Account> {
        Arc::new(Account {
            bytes: Meter::new(max_bytes),
            inodes: Meter::new(max_inodes),
            parent: None,
        })
    }

    /// An account within `parent` with bounds of its own (a pack's
    /// declaration): a charge must fit both.
    pub fn within(parent: &Arc<Account>, max_bytes: u64, max_inodes: u64) -> Arc<Account> {
        Arc::new(Account {
            bytes: Meter::new(max_bytes),
            inodes: Meter::new(max_inodes),
            parent: Some(parent.clone()),
        })
    }

    /// An account without bounds, for directories plumb reads but does not
    /// let a scenario write into.
    pub fn unbounded() -> Arc<Account> {
        Account::new(u64::MAX, u64::MAX)
    }

    /// Charges `bytes`, or refuses them whole.
    pub fn charge_bytes(&self, op: &'static str, bytes: u64) -> Result<(), OverBudget> {
        self.charge(op, bytes, 0)
    }

    /// Charges `inodes` new inodes and `bytes` (their blocks and names),
    /// both or neither, here and in every account above.
    pub fn charge(&self, op: &'static str, bytes: u64, inodes: u64) -> Result<(), OverBudget> {
        let over = |unit, need, left, limit| OverBudget {
            op,
            unit,
            need,
            left,
            limit,
        };
        self.inodes
            .take(inodes)
            .map_err(|left| over(Unit::Inodes, inodes, left, self.inodes.limit))?;
        if let Err(left) = self.bytes.take(bytes) {
            self.inodes.give(inodes);
            return Err(over(Unit::Bytes, bytes, left, self.bytes.limit));
        }
        if let Some(p) = &self.parent {
            if let Err(e) = p.charge(op, bytes, inodes) {
                self.bytes.give(bytes);
                self.inodes.give(inodes);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Refuses, without charging anything, what could not be charged now:
    /// the check before work that charges piece by piece as it goes.
    pub fn fits(&self, op: &'static str, bytes: u64, inodes: u64) -> Result<(), OverBudget> {
        self.charge(op, bytes, inodes)?;
        self.refund(bytes, inodes);
        Ok(())
    }

    /// Gives back `bytes` and `inodes` really freed, here and above.
    pub fn refund(&self, bytes: u64, inodes: u64) {
        self.bytes.give(bytes);
        self.inodes.give(inodes);
        if let Some(p) = &self.parent {
            p.refund(bytes, inodes);
        }
    }

    /// Bytes and inodes charged and not given back.
    pub fn used(&self) -> (u64, u64) {
        (self.bytes.used(), self.inodes.used())
    }

    /// Bytes that could be charged now: the least left here and in every
    /// account above.
    pub fn bytes_left(&self) -> u64 {
        let here = self.bytes.limit.saturating_sub(self.bytes.used());
        match &self.parent {
            Some(p) => here.min(p.bytes_left()),
            None => here,
        }
    }

    /// The byte bound.
    pub fn max_bytes(&self) -> u64 {
        self.bytes.limit
    }

    /// The inode bound.
    pub fn max_inodes(&self) -> u64 {
        self.inodes.limit
    }

    /// Closes an account whose files were all deleted: what it still holds
    /// goes back to the accounts above.
    pub fn close(&self) {
        let (bytes, inodes) = self.used();
        self.refund(bytes, inodes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_takes_both_units_or_neither() {
        let run = Account::new(10_000, 3);
        let e = run.charge("mkdir", 20_000, 1).unwrap_err();
        assert_eq!((e.unit, e.need, e.left), (Unit::Bytes, 20_000, 10_000));
        assert_eq!(run.used(), (0, 0), "the inode went back");
        run.charge("mkdir", 4096, 3).unwrap();
        let e = run.charge("mkdir", 1, 1).unwrap_err();
        assert_eq!((e.unit, e.need, e.left, e.limit), (Unit::Inodes, 1, 0, 3));
        assert_eq!(run.used(), (4096, 3));
        assert!(e.to_string().starts_with("inode budget exceeded: mkdir"));
    }

    #[test]
    fn a_pack_charges_the_run_too_and_gives_back_on_close() {
        let run = Account::new(1000, 100);
        let a = Account::within(&run, 800, 100);
        let b = Account::within(&run, 800, 100);
        a.charge_bytes("write", 700).unwrap();
        let e = b.charge_bytes("write", 700).unwrap_err();
        assert_eq!((e.left, e.limit), (300, 1000), "the run's bound speaks");
        assert_eq!(b.used(), (0, 0), "nothing kept from a refused charge");
        b.charge_bytes("write", 300).unwrap();
        let e = a.charge_bytes("write", 100).unwrap_err();
        assert_eq!((e.left, e.limit), (0, 1000), "its own bound would allow it");
        a.close();
        assert_eq!(run.used(), (300, 0));
        b.charge_bytes("write", 500).unwrap();
        let e = b.charge_bytes("write", 1).unwrap_err();
        assert_eq!((e.left, e.limit), (0, 800), "the pack's own bound speaks");
    }

    #[test]
    fn entries_round_up_like_ext4() {
        assert_eq!(entry_bytes(b"a"), 12);
        assert_eq!(entry_bytes(b"abcd"), 12);
        assert_eq!(entry_bytes(b"abcde"), 16);
        assert_eq!(entry_bytes(&[b'x'; 255]), 264);
    }
}
