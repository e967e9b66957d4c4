//! A counter of operations and bytes, each way, that work other than a job
//! (a copy, a CPU kernel, a network stream) adds to as it goes, and that
//! whoever started the work samples for its live figures. It knows nothing
//! of jobs, so the primitives that count into it need nothing above it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Counters that background work other than jobs (a copy, a CPU hog, a
/// network stream) adds to as it goes; sampled into [`LiveTotals`].
#[derive(Debug, Default)]
pub struct Meter {
    used: AtomicBool,
    ios: [AtomicU64; 2],
    bytes: [AtomicU64; 2],
}

impl Meter {
    /// Counts `ios` operations moving `bytes` in direction `dir` (0 read or
    /// received, 1 written or sent).
    pub fn add(&self, dir: usize, ios: u64, bytes: u64) {
        self.ios[dir].fetch_add(ios, Ordering::Relaxed);
        self.bytes[dir].fetch_add(bytes, Ordering::Relaxed);
        self.used.store(true, Ordering::Relaxed);
    }

    /// The totals so far, once anything was counted.
    pub fn totals(&self) -> Option<([u64; 2], [u64; 2])> {
        self.used.load(Ordering::Relaxed).then(|| {
            (
                [0, 1].map(|d| self.ios[d].load(Ordering::Relaxed)),
                [0, 1].map(|d| self.bytes[d].load(Ordering::Relaxed)),
            )
        })
    }
}
