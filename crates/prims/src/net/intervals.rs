//! Per-second figures of a stream, as iperf3 prints one line per interval:
//! the byte count is read at each full second after the start, and each
//! interval's rate is its bytes over its real length (a reading taken late
//! makes a longer interval, not a wrong rate). The final partial second is
//! left out.

use std::time::{Duration, Instant};

/// Byte counts read at each second boundary of a stream.
pub struct Intervals {
    t0: Instant,
    next: Instant,
    /// (seconds since the start, bytes at that moment), from (0, base).
    marks: Vec<(f64, u64)>,
}

impl Intervals {
    /// Starts counting at `t0` from `base` bytes.
    pub fn new(t0: Instant, base: u64) -> Intervals {
        Intervals {
            t0,
            next: t0 + Duration::from_secs(1),
            marks: vec![(0.0, base)],
        }
    }

    /// Reads the count (calling `bytes`) when a second boundary has passed
    /// since the last reading; cheap otherwise.
    pub fn poll(&mut self, now: Instant, bytes: impl FnOnce() -> u64) {
        if now < self.next {
            return;
        }
        let since = now.duration_since(self.t0);
        self.marks.push((since.as_secs_f64(), bytes()));
        self.next = self.t0 + Duration::from_secs(since.as_secs() + 1);
    }

    /// Gbit/s of each full second read so far.
    pub fn gbps(&self) -> Vec<f64> {
        self.marks
            .windows(2)
            .map(|w| {
                let (t0, b0) = w[0];
                let (t1, b1) = w[1];
                b1.saturating_sub(b0) as f64 * 8.0 / (t1 - t0).max(1e-9) / 1e9
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_interval_is_its_bytes_over_its_real_length() {
        let t0 = Instant::now();
        let mut i = Intervals::new(t0, 100);
        i.poll(t0 + Duration::from_millis(500), || unreachable!());
        i.poll(t0 + Duration::from_millis(1000), || 100 + 125_000_000);
        // A reading 1.5 s late covers 2.5 s and the boundary after it is 4 s.
        i.poll(t0 + Duration::from_millis(3500), || 100 + 125_000_000 * 2);
        i.poll(t0 + Duration::from_millis(3900), || unreachable!());
        i.poll(t0 + Duration::from_millis(4000), || 100 + 125_000_000 * 3);
        let g = i.gbps();
        assert_eq!(g.len(), 3);
        assert!((g[0] - 1.0).abs() < 1e-9, "{g:?}");
        assert!((g[1] - 0.4).abs() < 1e-9, "{g:?}");
        assert!((g[2] - 2.0).abs() < 1e-9, "{g:?}");
    }
}
