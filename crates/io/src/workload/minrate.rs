//! `rate_min` and `rate_iops_min` over `rate_cycle`: a job that falls below
//! its minimum rate in a direction fails, as fio's `check_min_rate`.

use crate::job::spec::{Dir, Pacing};
use std::time::{Duration, Instant};

/// fio lets a job settle this long before the first check.
const SETTLE: Duration = Duration::from_secs(2);

/// The minimum rate a direction missed over one cycle.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MinRateMiss {
    /// Below `rate_min`.
    #[error("rate_min={min}B/s not met, got {got}B/s")]
    Bandwidth {
        /// The minimum, bytes/s.
        min: u64,
        /// The rate over the last cycle, bytes/s.
        got: u64,
    },
    /// Below `rate_iops_min`.
    #[error("rate_iops_min={min} not met, got {got} IOPS")]
    Iops {
        /// The minimum.
        min: u64,
        /// The rate over the last cycle.
        got: u64,
    },
}

/// Checks the completed bytes and I/Os of each direction against the
/// minimums once per cycle, after a settling time.
#[derive(Debug, Clone)]
pub struct MinRate {
    bytes_min: [Option<u64>; 2],
    iops_min: [Option<u64>; 2],
    cycle: Duration,
    start: Instant,
    /// Per direction: when the cycle began, and the bytes and I/Os then.
    last: [Option<(Instant, u64, u64)>; 2],
}

impl MinRate {
    /// The checker of a job's minimums (none when it has none), counting
    /// from `start`.
    pub fn new(pacing: &Pacing, start: Instant) -> Option<MinRate> {
        pacing.checks_min_rate().then_some(MinRate {
            bytes_min: pacing.rate_min,
            iops_min: pacing.rate_iops_min,
            cycle: pacing.ratecycle,
            start,
            last: [None; 2],
        })
    }

    /// Starts counting again from `now` (the measured phase begins).
    pub fn restart(&mut self, now: Instant) {
        self.start = now;
        self.last = [None; 2];
    }

    /// Checks direction `dir`, which has completed `bytes` in `ios` I/Os by
    /// `now`: a miss once a cycle has passed below a minimum. As fio, a
    /// direction with no byte done is not checked, and `rate_min` is
    /// checked in place of `rate_iops_min` when both are set.
    pub fn check(
        &mut self,
        dir: Dir,
        now: Instant,
        bytes: u64,
        ios: u64,
    ) -> Result<(), MinRateMiss> {
        let d = dir.index();
        if bytes == 0 || now.saturating_duration_since(self.start) < SETTLE {
            return Ok(());
        }
        if let Some((since, last_bytes, last_ios)) = self.last[d] {
            let spent_ms = now.saturating_duration_since(since).as_millis() as u64;
            if spent_ms == 0 || spent_ms < self.cycle.as_millis() as u64 {
                return Ok(());
            }
            let per_sec = |n: u64| n.saturating_mul(1000) / spent_ms;
            if let Some(min) = self.bytes_min[d] {
                let got = per_sec(bytes.saturating_sub(last_bytes));
                if got < min {
                    return Err(MinRateMiss::Bandwidth { min, got });
                }
            } else if let Some(min) = self.iops_min[d] {
                let got = per_sec(ios.saturating_sub(last_ios));
                if got < min {
                    return Err(MinRateMiss::Iops { min, got });
                }
            }
        }
        self.last[d] = Some((now, bytes, ios));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_cycle_misses_after_settling() {
        let pacing = Pacing {
            rate_iops_min: [Some(100), None],
            ..Pacing::default()
        };
        let t0 = Instant::now();
        let mut m = MinRate::new(&pacing, t0).unwrap();
        let at = |ms| t0 + Duration::from_millis(ms);
        // Slow but settling: no check.
        assert_eq!(m.check(Dir::Read, at(1000), 4096, 1), Ok(()));
        // The first check only sets the baseline.
        assert_eq!(m.check(Dir::Read, at(2000), 4096 * 300, 300), Ok(()));
        // Within the cycle: nothing yet.
        assert_eq!(m.check(Dir::Read, at(2500), 4096 * 310, 310), Ok(()));
        // 150 I/Os in one second: met.
        assert_eq!(m.check(Dir::Read, at(3000), 4096 * 450, 450), Ok(()));
        // 50 in one second: missed.
        assert_eq!(
            m.check(Dir::Read, at(4000), 4096 * 500, 500),
            Err(MinRateMiss::Iops { min: 100, got: 50 })
        );
        assert!(MinRate::new(&Pacing::default(), t0).is_none());
    }
}
