//! Completion latency: an HDR histogram plus exact min, max and mean.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// fio's default percentile list.
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// Records latencies in nanoseconds; memory is fixed whatever the run length.
#[derive(Debug, Clone)]
pub struct LatencyRecorder {
    hist: Histogram<u64>,
    min: u64,
    max: u64,
    sum: u128,
    count: u64,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder {
            // 1 ns to 1 hour at 2 significant digits (1% resolution, about 35 KiB).
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 2)
                .expect("static histogram bounds"),
            min: u64::MAX,
            max: 0,
            sum: 0,
            count: 0,
        }
    }
}

impl LatencyRecorder {
    /// Records one latency.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as u128;
        self.count += 1;
    }

    /// Records `n` latencies of the same value (a batch completing together).
    #[inline]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        let _ = self.hist.record_n(ns.max(1).min(self.hist.high()), n);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as u128 * n as u128;
        self.count += n;
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds another recorder's samples (threads of one job, jobs of a group).
    pub fn merge(&mut self, other: &LatencyRecorder) {
        let _ = self.hist.add(&other.hist);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.count += other.count;
    }

    /// Share (0–1) of samples in each bucket `(edges[i-1], edges[i]]`, plus a
    /// last bucket above the last edge; the first bucket starts at 0.
    pub fn bucket_shares(&self, edges: &[u64]) -> Vec<f64> {
        if self.count == 0 {
            return vec![0.0; edges.len() + 1];
        }
        let total = self.hist.len() as f64;
        let mut out = Vec::with_capacity(edges.len() + 1);
        let mut lo = 0u64;
        for &e in edges {
            let n = if lo == 0 {
                self.hist.count_between(0, e)
            } else {
                self.hist.count_between(lo + 1, e)
            };
            out.push(n as f64 / total);
            lo = e;
        }
        out.push(self.hist.count_between(lo + 1, u64::MAX) as f64 / total);
        out
    }

    /// The summary kept in results.
    pub fn summary(&self) -> LatencySummary {
        if self.count == 0 {
            return LatencySummary::default();
        }
        let q = |p: f64| self.hist.value_at_quantile(p / 100.0);
        let percentiles = FIO_PERCENTILES
            .iter()
            .map(|p| (format!("{p:.6}"), q(*p)))
            .collect();
        LatencySummary {
            min: self.min,
            max: self.max,
            mean: self.sum as f64 / self.count as f64,
            stddev: self.hist.stdev(),
            samples: self.count,
            p50: q(50.0),
            p90: q(90.0),
            p95: q(95.0),
            p99: q(99.0),
            p99_9: q(99.9),
            p99_99: q(99.99),
            percentiles,
        }
    }
}

/// Latency figures in nanoseconds, as kept in results.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencySummary {
    /// Smallest latency.
    pub min: u64,
    /// Largest latency.
    pub max: u64,
    /// Mean latency.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// Number of samples.
    pub samples: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p99_9: u64,
    /// 99.99th percentile.
    pub p99_99: u64,
    /// fio's full percentile list, keyed like fio's JSON (`"99.900000"`).
    pub percentiles: BTreeMap<String, u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_spread() {
        let mut r = LatencyRecorder::default();
        for v in 1..=10_000u64 {
            r.record(v * 1000);
        }
        let s = r.summary();
        assert_eq!(s.min, 1000);
        assert_eq!(s.max, 10_000_000);
        assert!((s.mean - 5_000_500.0).abs() < 1.0);
        let near = |got: u64, want: f64| (got as f64 - want).abs() / want < 0.01;
        assert!(near(s.p50, 5_000_000.0), "{}", s.p50);
        assert!(near(s.p99, 9_900_000.0), "{}", s.p99);
        assert!(s.percentiles.contains_key("99.990000"));
    }
}
