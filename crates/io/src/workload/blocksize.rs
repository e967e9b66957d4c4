//! Picking the size of the next I/O from `bs`, `bsrange` or `bssplit`.

use crate::job::spec::BlockSize;
use rand::{Rng, RngCore};

/// Draws block sizes for one direction.
#[derive(Debug, Clone)]
pub enum BlockSizePicker {
    /// Always the same size.
    Fixed(u64),
    /// A random multiple of `lo` in `[lo, lo * steps]`.
    Range {
        /// The smallest size and the step.
        lo: u64,
        /// How many multiples of `lo` are possible.
        steps: u64,
    },
    /// Any size in `[lo, hi]` (`bsrange` with `bs_unaligned`).
    Unaligned {
        /// The smallest size.
        lo: u64,
        /// The largest size.
        hi: u64,
    },
    /// A size drawn by percentile: entry `p` is the size for a draw of `p` in 0..100.
    Split(Box<[u64; 100]>),
}

impl BlockSizePicker {
    /// Builds a picker for a direction's block size option; `unaligned`
    /// (`bs_unaligned`) lets a range give any size, not only multiples of
    /// its smallest.
    pub fn new(bs: &BlockSize, unaligned: bool) -> Self {
        match bs {
            BlockSize::Fixed(b) => BlockSizePicker::Fixed(*b),
            BlockSize::Range(lo, hi) if unaligned => {
                BlockSizePicker::Unaligned { lo: *lo, hi: *hi }
            }
            BlockSize::Range(lo, hi) => BlockSizePicker::Range {
                lo: *lo,
                steps: (hi / lo).max(1),
            },
            BlockSize::Split(parts) => {
                let mut table = Box::new([0u64; 100]);
                let mut i = 0usize;
                for (size, pct) in parts {
                    for _ in 0..*pct {
                        if i < 100 {
                            table[i] = *size;
                            i += 1;
                        }
                    }
                }
                let last = parts.last().map(|p| p.0).unwrap_or(4096);
                for slot in table.iter_mut().skip(i) {
                    *slot = last;
                }
                BlockSizePicker::Split(table)
            }
        }
    }

    /// The smallest size this picker gives.
    pub fn min(&self) -> u64 {
        match self {
            BlockSizePicker::Fixed(b) => *b,
            BlockSizePicker::Range { lo, .. } | BlockSizePicker::Unaligned { lo, .. } => *lo,
            BlockSizePicker::Split(table) => table.iter().copied().min().unwrap_or(4096),
        }
    }

    /// The next I/O size.
    #[inline]
    pub fn pick(&self, rng: &mut impl RngCore) -> u64 {
        match self {
            BlockSizePicker::Fixed(b) => *b,
            BlockSizePicker::Range { lo, steps } => lo * rng.random_range(1..=*steps),
            BlockSizePicker::Unaligned { lo, hi } => rng.random_range(*lo..=*hi),
            BlockSizePicker::Split(table) => table[rng.random_range(0..100usize)],
        }
    }
}
