//! `rate`, `rate_iops` and `rate_process`: when the next I/O of a direction
//! may be issued.

use crate::job::spec::{Dir, RateProcess};
use rand::{rngs::SmallRng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use std::time::{Duration, Instant};

/// Paces I/O so that each direction stays under its IOPS and bandwidth caps.
///
/// `linear` (fio's default) makes the n-th I/O of a direction due at the
/// time the caps allow n I/Os; `poisson` makes the gaps between I/Os
/// exponentially distributed with the caps' mean, as fio's
/// `rate_process=poisson`, so arrivals form a Poisson process.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    iops: [Option<u64>; 2],
    bytes_per_sec: [Option<u64>; 2],
    ios: [u64; 2],
    bytes: [u64; 2],
    start: Instant,
    /// Set for `rate_process=poisson`.
    poisson: Option<Poisson>,
}

/// The state of a Poisson process per direction.
#[derive(Debug, Clone)]
struct Poisson {
    /// Mean gap between I/Os in seconds (none: unlimited direction).
    mean_gap: [Option<f64>; 2],
    /// When the next I/O is due, in seconds from the start.
    next_due: [f64; 2],
    rng: SmallRng,
}

impl RateLimiter {
    /// A limiter with per-direction caps; `None` is unlimited. `min_bs`
    /// turns a bandwidth cap into an I/O rate for the Poisson process (as
    /// fio, which divides by the smallest block size), and `seed` seeds its
    /// gaps.
    pub fn new(
        iops: [Option<u64>; 2],
        bytes_per_sec: [Option<u64>; 2],
        process: RateProcess,
        min_bs: [u64; 2],
        seed: u64,
    ) -> Self {
        let poisson = (process == RateProcess::Poisson).then(|| {
            let mean_gap = std::array::from_fn(|d| {
                let from_bytes = bytes_per_sec[d].map(|b| b as f64 / min_bs[d].max(1) as f64);
                let rate = match (iops[d].map(|i| i as f64), from_bytes) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                rate.map(|r| 1.0 / r.max(f64::MIN_POSITIVE))
            });
            Poisson {
                mean_gap,
                next_due: [0.0; 2],
                rng: SmallRng::seed_from_u64(seed ^ 0x706f_6973_736f_6e00),
            }
        });
        RateLimiter {
            iops,
            bytes_per_sec,
            ios: [0; 2],
            bytes: [0; 2],
            start: Instant::now(),
            poisson,
        }
    }

    /// True when no cap is set, so callers can skip the pacing entirely.
    pub fn is_unlimited(&self) -> bool {
        self.iops == [None, None] && self.bytes_per_sec == [None, None]
    }

    /// Restarts the pacing clock (after ramp time, for example).
    pub fn restart(&mut self, now: Instant) {
        self.ios = [0; 2];
        self.bytes = [0; 2];
        self.start = now;
        if let Some(p) = &mut self.poisson {
            p.next_due = [0.0; 2];
        }
    }

    /// How long to wait before the next I/O in `dir` may be issued.
    pub fn wait_before(&self, dir: Dir, now: Instant) -> Option<Duration> {
        let d = dir.index();
        let due = match &self.poisson {
            Some(p) if p.mean_gap[d].is_some() => {
                Duration::try_from_secs_f64(p.next_due[d]).unwrap_or(Duration::MAX)
            }
            _ => self.linear_due(d),
        };
        // Beyond what the clock can hold is "not in this run": wait the longest
        // (callers sleep in short slices and check their deadline).
        let Some(at) = self.start.checked_add(due) else {
            return Some(Duration::MAX);
        };
        (at > now).then(|| at - now)
    }

    /// When the next I/O of direction `d` is due under linear pacing.
    fn linear_due(&self, d: usize) -> Duration {
        let secs = |done: u64, per_sec: u64| {
            Duration::try_from_secs_f64(done as f64 / per_sec.max(1) as f64)
                .unwrap_or(Duration::MAX)
        };
        let mut due = Duration::ZERO;
        if let Some(iops) = self.iops[d] {
            due = due.max(secs(self.ios[d], iops));
        }
        if let Some(bps) = self.bytes_per_sec[d] {
            due = due.max(secs(self.bytes[d], bps));
        }
        due
    }

    /// Records that an I/O of `len` bytes was issued in `dir`.
    pub fn issued(&mut self, dir: Dir, len: u64) {
        let d = dir.index();
        self.ios[d] = self.ios[d].saturating_add(1);
        self.bytes[d] = self.bytes[d].saturating_add(len);
        if let Some(p) = &mut self.poisson {
            if let Some(mean) = p.mean_gap[d] {
                let e: f64 = Exp1.sample(&mut p.rng);
                p.next_due[d] += mean * e;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gaps of a Poisson limiter: exponential with the cap's mean (a
    /// coefficient of variation near 1); linear gaps are all equal.
    #[test]
    fn poisson_gaps_are_exponential() {
        let gaps = |process| {
            let mut r = RateLimiter::new([Some(2000), None], [None, None], process, [4096; 2], 7);
            let t0 = r.start;
            let mut last = 0.0;
            let mut out = Vec::new();
            for _ in 0..20_000 {
                let due = r
                    .wait_before(Dir::Read, t0)
                    .unwrap_or_default()
                    .as_secs_f64();
                out.push(due - last);
                last = due;
                r.issued(Dir::Read, 4096);
            }
            out.remove(0);
            out
        };
        let stats = |v: &[f64]| {
            let n = v.len() as f64;
            let mean = v.iter().sum::<f64>() / n;
            let var = v.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n;
            (mean, var.sqrt() / mean)
        };
        let (mean, cv) = stats(&gaps(RateProcess::Poisson));
        assert!((mean - 0.0005).abs() < 0.00002, "mean gap {mean}");
        assert!((cv - 1.0).abs() < 0.05, "cv {cv}");
        let (mean, cv) = stats(&gaps(RateProcess::Linear));
        assert!((mean - 0.0005).abs() < 0.000001, "mean gap {mean}");
        assert!(cv < 0.01, "cv {cv}");
    }

    /// A bandwidth cap is turned into I/Os of the smallest block.
    #[test]
    fn poisson_rate_from_bandwidth() {
        let mut r = RateLimiter::new(
            [None, None],
            [None, Some(4096 * 1000)],
            RateProcess::Poisson,
            [4096; 2],
            1,
        );
        for _ in 0..10_000 {
            r.issued(Dir::Write, 4096);
        }
        let due = r.poisson.as_ref().unwrap().next_due[1];
        assert!((due - 10.0).abs() < 0.3, "10k I/Os due after {due} s");
        assert_eq!(r.wait_before(Dir::Read, r.start), None);
    }
}
