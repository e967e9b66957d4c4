//! A latency histogram that a job thread fills while another thread reads
//! it: the live percentiles of a background job (`h.progress()`).
//!
//! The job's own HDR histogram is private to its thread until the job ends;
//! this one is a fixed array of atomic counters in log-linear buckets (16
//! per power of two, so a bucket is at most 6.25% wide and a percentile read
//! from its middle is within about 3% of the exact one). Only jobs started
//! in the background fill one: a foreground job pays nothing for it.

use std::sync::atomic::{AtomicU64, Ordering};

/// Linear sub-buckets per power of two, as bits.
const SUB_BITS: u32 = 4;
/// Linear sub-buckets per power of two.
const SUB: usize = 1 << SUB_BITS;
/// Buckets covering every `u64` nanosecond value.
pub const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

/// The bucket of a latency in nanoseconds: exact below 32 ns, then 16
/// buckets per power of two.
fn bucket(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let top = 63 - ns.leading_zeros();
    let sub = (ns >> (top - SUB_BITS)) as usize & (SUB - 1);
    (top - SUB_BITS + 1) as usize * SUB + sub
}

/// The middle of a bucket's range, in nanoseconds.
fn middle(index: usize) -> u64 {
    if index < SUB {
        return index as u64;
    }
    let shift = (index / SUB - 1) as u32;
    let low = ((SUB + index % SUB) as u64) << shift;
    low.saturating_add((1u64 << shift) / 2)
}

/// Counters of completions per latency bucket, written by one job thread.
#[derive(Debug)]
pub struct LiveLatency {
    counts: Box<[AtomicU64]>,
    /// The sum of every latency counted, in nanoseconds (saturating).
    sum_ns: AtomicU64,
}

impl Default for LiveLatency {
    fn default() -> Self {
        LiveLatency {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
        }
    }
}

impl LiveLatency {
    /// Counts one completion. One thread writes (its clone's), so a plain
    /// load and store suffice; readers may see it a moment late.
    #[inline]
    pub fn record(&self, ns: u64) {
        let c = &self.counts[bucket(ns)];
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        let sum = self.sum_ns.load(Ordering::Relaxed).saturating_add(ns);
        self.sum_ns.store(sum, Ordering::Relaxed);
    }

    /// Adds the counts so far to `sums` (`BUCKETS` long).
    pub fn add_to(&self, sums: &mut [u64]) {
        for (s, c) in sums.iter_mut().zip(self.counts.iter()) {
            *s += c.load(Ordering::Relaxed);
        }
    }

    /// The sum of the latencies counted so far, in nanoseconds.
    pub fn sum_ns(&self) -> u64 {
        self.sum_ns.load(Ordering::Relaxed)
    }
}

/// The upper edges, in nanoseconds, of the fixed buckets a latency
/// histogram is exported with (`/metrics`): every power of two from
/// 1,024 ns (about 1 µs) to 2^34 ns (about 17 s). Each is the lower edge of
/// one of the live buckets, so the exported counts are exact, not
/// interpolated: a bucket counts the latencies below its edge (at whole
/// nanoseconds, "at most edge − 1 ns").
pub const EXPORT_EDGES_NS: [u64; 25] = {
    let mut edges = [0u64; 25];
    let mut i = 0;
    while i < edges.len() {
        edges[i] = 1u64 << (10 + i);
        i += 1;
    }
    edges
};

/// The completions below each of [`EXPORT_EDGES_NS`], from live bucket
/// counts (`BUCKETS` long): cumulative counts, as a Prometheus histogram
/// has them.
pub fn counts_below_edges(counts: &[u64]) -> [u64; EXPORT_EDGES_NS.len()] {
    let mut out = [0u64; EXPORT_EDGES_NS.len()];
    let mut seen = 0u64;
    let mut next = 0usize;
    for (edge, slot) in EXPORT_EDGES_NS.iter().zip(out.iter_mut()) {
        let end = bucket(*edge).min(counts.len());
        seen = counts[next.min(end)..end]
            .iter()
            .fold(seen, |s, c| s.saturating_add(*c));
        next = next.max(end);
        *slot = seen;
    }
    out
}

/// Percentiles read from bucket counts, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct LivePercentiles {
    /// Completions counted.
    pub samples: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p99_9: u64,
}

impl LivePercentiles {
    /// The percentiles of bucket counts (zeros without samples).
    pub fn of(counts: &[u64]) -> LivePercentiles {
        let samples: u64 = counts.iter().sum();
        if samples == 0 {
            return LivePercentiles::default();
        }
        let at = |per_mille: u64| {
            // The smallest bucket holding the sample of rank
            // ceil(samples × q), 1-based, in integers (no rounding up of
            // 999.000…1 into the next rank).
            let rank = (u128::from(samples) * u128::from(per_mille))
                .div_ceil(1000)
                .max(1);
            let rank = u64::try_from(rank).unwrap_or(u64::MAX);
            let mut seen = 0u64;
            for (i, &c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return middle(i);
                }
            }
            middle(counts.len().saturating_sub(1))
        };
        LivePercentiles {
            samples,
            p50: at(500),
            p90: at(900),
            p99: at(990),
            p99_9: at(999),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_narrow() {
        let mut last = 0;
        for ns in [
            0u64,
            1,
            15,
            16,
            17,
            31,
            32,
            33,
            1000,
            123_456,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let b = bucket(ns);
            assert!(b >= last && b < BUCKETS, "{ns} → {b}");
            last = b;
            let m = middle(b);
            let err = (m as f64 - ns as f64).abs() / (ns.max(1) as f64);
            assert!(err <= 0.04, "{ns}: middle {m} is {err} away");
        }
    }

    #[test]
    fn export_edges_start_live_buckets_and_count_exactly() {
        for edge in EXPORT_EDGES_NS {
            // The edge is a bucket's lower bound: one less is in the bucket before.
            assert_eq!(bucket(edge - 1) + 1, bucket(edge), "{edge}");
        }
        let l = LiveLatency::default();
        for ns in [10, 1023, 1024, 5_000, 5_000, 1 << 20, u64::MAX] {
            l.record(ns);
        }
        let mut sums = vec![0; BUCKETS];
        l.add_to(&mut sums);
        let below = counts_below_edges(&sums);
        assert_eq!(below[0], 2, "10 and 1023 ns are below 1024 ns");
        assert_eq!(below[1], 3, "1024 ns is below 2048 ns");
        assert_eq!(below[3], 5, "two of 5000 ns below 8192 ns");
        assert_eq!(below[10], 5, "2^20 ns is not below 2^20 ns");
        assert_eq!(below[11], 6);
        assert_eq!(below[24], 6, "u64::MAX ns is past every edge");
        assert_eq!(l.sum_ns(), u64::MAX, "the sum saturates");
    }

    #[test]
    fn percentiles_of_a_known_mix() {
        let l = LiveLatency::default();
        for _ in 0..9990 {
            l.record(100_000);
        }
        for _ in 0..10 {
            l.record(5_000_000);
        }
        let mut sums = vec![0; BUCKETS];
        l.add_to(&mut sums);
        let p = LivePercentiles::of(&sums);
        assert_eq!(p.samples, 10_000);
        assert!((p.p50 as f64 / 100_000.0 - 1.0).abs() < 0.04, "{p:?}");
        assert!((p.p99 as f64 / 100_000.0 - 1.0).abs() < 0.04, "{p:?}");
        // Rank 9990 is the last fast one: p99.9 is not the slow tail.
        assert!((p.p99_9 as f64 / 100_000.0 - 1.0).abs() < 0.04, "{p:?}");
        l.record(5_000_000);
        let mut sums = vec![0; BUCKETS];
        l.add_to(&mut sums);
        let p = LivePercentiles::of(&sums);
        assert!((p.p99_9 as f64 / 5_000_000.0 - 1.0).abs() < 0.04, "{p:?}");
    }
}
