//! Memory latency by working-set size: a random cyclic pointer chase over
//! cache-line-sized nodes (Sattolo's shuffle, so the walk visits every node
//! before repeating), timed per access. Each access depends on the previous
//! one, so the time is the latency of whichever level holds the working set.

use crate::halt::{Halt, Halted};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::time::{Duration, Instant};

/// Words (u64) per node: one 64-byte cache line.
const NODE_WORDS: usize = 8;

/// Longest time per size a curve may ask for.
pub const MAX_TIME_PER_SIZE: Duration = Duration::from_secs(60);

/// Longest stretch of work between two checks of the deadline and the stop
/// flag while timing one size.
const ROUND: Duration = Duration::from_millis(50);

/// Nodes listed, shuffled or linked between two checks of the deadline and
/// the stop flag. Linking touches nodes at random, so each check covers at
/// most this many fresh 4 KiB pages (16 MiB): on a VM whose host backs new
/// memory slowly (1.5 s per 128 MiB seen here), a million nodes between
/// checks touched the whole first gigabyte and ran 10 s past the deadline.
const NODES_PER_CHECK: usize = 1 << 12;

/// Why a latency curve was not measured.
#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    /// The options are out of bounds.
    #[error(transparent)]
    Invalid(#[from] InvalidLatency),
    /// The deadline passed or a stop was requested mid-curve.
    #[error(transparent)]
    Halted(#[from] Halted),
}

/// Latency options out of bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidLatency {
    /// The smallest size below 1 KiB or above the largest.
    #[error("min_size {min} must be at least 1 KiB and at most max_size {max}")]
    Sizes {
        /// The smallest size.
        min: u64,
        /// The largest size.
        max: u64,
    },
    /// Steps per doubling outside 1..=8.
    #[error("steps_per_doubling must be between 1 and 8")]
    Steps,
    /// A time per size of 0 or above [`MAX_TIME_PER_SIZE`].
    #[error("time per size {0:?} must be above 0 and at most {MAX_TIME_PER_SIZE:?}")]
    TimePerSize(Duration),
    /// The largest size above half the available memory.
    #[error(transparent)]
    Memory(#[from] crate::headroom::TooBig),
}

/// Sizes to walk and how long to time each.
#[derive(Debug, Clone)]
pub struct LatencyOptions {
    /// Smallest working set in bytes.
    pub min_size: u64,
    /// Largest working set in bytes.
    pub max_size: u64,
    /// Sizes per doubling (1 = powers of two, 2 = also ×1.5 between them).
    pub steps_per_doubling: u32,
    /// Time to spend timing each size.
    pub time_per_size: Duration,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        LatencyOptions {
            min_size: 16 << 10,
            max_size: 1 << 30,
            steps_per_doubling: 1,
            time_per_size: Duration::from_millis(200),
        }
    }
}

/// One point of the curve.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyPoint {
    /// Working set in bytes.
    pub size: u64,
    /// Nanoseconds per dependent access.
    pub ns: f64,
}

/// A run of sizes whose latency stays within 30% of where it started: a
/// cache level (or memory).
#[derive(Debug, Clone, Serialize)]
pub struct Plateau {
    /// Smallest size in the plateau.
    pub from: u64,
    /// Largest size in the plateau.
    pub to: u64,
    /// Median latency of its points in ns.
    pub ns: f64,
}

/// The latency curve and its plateaus.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyResult {
    /// Every size measured, smallest first.
    pub points: Vec<LatencyPoint>,
    /// Plateaus found in the curve (at least two points each).
    pub plateaus: Vec<Plateau>,
}

/// The sizes to measure, each a multiple of a node.
fn sizes(o: &LatencyOptions) -> Vec<u64> {
    let mut out = Vec::new();
    let mut base = o.min_size;
    while base <= o.max_size {
        for step in 0..o.steps_per_doubling {
            let s = base.saturating_add(base / o.steps_per_doubling as u64 * step as u64);
            let s = s / 64 * 64;
            if s <= o.max_size && out.last() != Some(&s) {
                out.push(s);
            }
        }
        match base.checked_mul(2) {
            Some(next) => base = next,
            None => break,
        }
    }
    out
}

impl LatencyOptions {
    /// Checks the bounds: sizes from 1 KiB up, the largest within half the
    /// available memory, 1 to 8 steps per doubling, a time per size up to
    /// [`MAX_TIME_PER_SIZE`].
    pub fn validate(&self) -> Result<(), InvalidLatency> {
        if self.min_size < 1024 || self.min_size > self.max_size {
            return Err(InvalidLatency::Sizes {
                min: self.min_size,
                max: self.max_size,
            });
        }
        if self.steps_per_doubling == 0 || self.steps_per_doubling > 8 {
            return Err(InvalidLatency::Steps);
        }
        if self.time_per_size.is_zero() || self.time_per_size > MAX_TIME_PER_SIZE {
            return Err(InvalidLatency::TimePerSize(self.time_per_size));
        }
        crate::headroom::check_size("max_size", self.max_size)?;
        Ok(())
    }
}

/// Builds a single random cycle through `nodes` nodes; each node's first word
/// holds the word index of the next node.
fn build_cycle(nodes: usize, rng: &mut SmallRng, halt: &Halt) -> Result<Vec<u64>, Halted> {
    let mut order: Vec<usize> = Vec::with_capacity(nodes);
    while order.len() < nodes {
        halt.check()?;
        let from = order.len();
        order.extend(from..nodes.min(from + NODES_PER_CHECK));
    }
    // Sattolo's algorithm: a uniformly random single cycle.
    for i in (1..nodes).rev() {
        if i % NODES_PER_CHECK == 0 {
            halt.check()?;
        }
        let j = rng.random_range(0..i);
        order.swap(i, j);
    }
    let mut buf = vec![0u64; nodes * NODE_WORDS];
    // Linking faults the whole buffer in, at random: checked as often as
    // the shuffle.
    for (i, w) in order.windows(2).enumerate() {
        if i % NODES_PER_CHECK == 0 {
            halt.check()?;
        }
        buf[w[0] * NODE_WORDS] = (w[1] * NODE_WORDS) as u64;
    }
    buf[order[nodes - 1] * NODE_WORDS] = (order[0] * NODE_WORDS) as u64;
    Ok(buf)
}

/// Follows the chain `steps` times from word `from`; returns where it ended.
fn chase(buf: &[u64], from: u64, steps: u64) -> u64 {
    let mut i = from;
    for _ in 0..steps {
        i = buf[i as usize];
    }
    i
}

/// Times the chase on one working set: grows the step count until one
/// round takes a tenth of the time budget (at most [`ROUND`]), then takes the
/// best of the rounds that fit (the least disturbed by the noisy neighbours).
/// Every stretch of work between two checks of `halt` is bounded.
fn time_size(size: u64, budget: Duration, rng: &mut SmallRng, halt: &Halt) -> Result<f64, Halted> {
    let nodes = (size as usize / (NODE_WORDS * 8)).max(2);
    let buf = build_cycle(nodes, rng, halt)?;
    // Touch every node once so page faults stay out of the timing.
    let (mut at, mut left) = (0, nodes);
    while left > 0 {
        halt.check()?;
        let n = left.min(NODES_PER_CHECK);
        at = std::hint::black_box(chase(&buf, at, n as u64));
        left -= n;
    }
    let target = (budget / 10).min(ROUND);
    let mut steps = 1024u64;
    loop {
        halt.check()?;
        let t = Instant::now();
        std::hint::black_box(chase(&buf, 0, steps));
        if t.elapsed() >= target || steps > 1 << 34 {
            break;
        }
        steps *= 2;
    }
    let start = Instant::now();
    let mut best = f64::MAX;
    while start.elapsed() < budget || best == f64::MAX {
        halt.check()?;
        let t = Instant::now();
        std::hint::black_box(chase(&buf, 0, steps));
        best = best.min(t.elapsed().as_nanos() as f64 / steps as f64);
    }
    Ok(best)
}

/// Groups consecutive points into plateaus: a point joins the current one
/// while it is within 30% of the plateau's first point.
fn plateaus(points: &[LatencyPoint]) -> Vec<Plateau> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=points.len() {
        let ends = i == points.len() || points[i].ns > points[start].ns * 1.3;
        if ends {
            if i - start >= 2 {
                let mut ns: Vec<f64> = points[start..i].iter().map(|p| p.ns).collect();
                ns.sort_by(f64::total_cmp);
                out.push(Plateau {
                    from: points[start].size,
                    to: points[i - 1].size,
                    ns: ns[ns.len() / 2],
                });
            }
            start = i;
        }
    }
    out
}

/// Measures the latency curve from `min_size` to `max_size`, ending with
/// [`LatencyError::Halted`] as soon as `halt` says so.
pub fn latency_curve(o: &LatencyOptions, halt: &Halt) -> Result<LatencyResult, LatencyError> {
    o.validate().map_err(LatencyError::Invalid)?;
    let mut rng = SmallRng::seed_from_u64(42);
    let mut points = Vec::new();
    for size in sizes(o) {
        points.push(LatencyPoint {
            size,
            ns: time_size(size, o.time_per_size, &mut rng, halt)?,
        });
    }
    let plateaus = plateaus(&points);
    Ok(LatencyResult { points, plateaus })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cycle_visits_every_node_once() {
        let mut rng = SmallRng::seed_from_u64(1);
        let never = Halt::after(Default::default(), Duration::MAX);
        let buf = build_cycle(1000, &mut rng, &never).unwrap();
        let mut seen = vec![false; 1000];
        let mut i = 0usize;
        for _ in 0..1000 {
            assert!(!seen[i / NODE_WORDS]);
            seen[i / NODE_WORDS] = true;
            i = buf[i] as usize;
        }
        assert_eq!(i, 0);
    }

    #[test]
    fn a_curve_ends_at_the_deadline() {
        let o = LatencyOptions {
            min_size: 64 << 20,
            max_size: 64 << 20,
            time_per_size: Duration::from_secs(30),
            ..Default::default()
        };
        let halt = Halt::after(Default::default(), Duration::from_millis(100));
        let t = Instant::now();
        let r = latency_curve(&o, &halt);
        assert!(
            matches!(r, Err(LatencyError::Halted(Halted::Deadline))),
            "{r:?}"
        );
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }

    #[test]
    fn sizes_double_and_plateaus_group() {
        let o = LatencyOptions {
            min_size: 16 << 10,
            max_size: 128 << 10,
            steps_per_doubling: 1,
            ..Default::default()
        };
        assert_eq!(sizes(&o), vec![16 << 10, 32 << 10, 64 << 10, 128 << 10]);
        let p = |size, ns| LatencyPoint { size, ns };
        let pl = plateaus(&[
            p(1, 1.0),
            p(2, 1.1),
            p(4, 5.0),
            p(8, 5.5),
            p(16, 6.0),
            p(32, 90.0),
        ]);
        assert_eq!(pl.len(), 2);
        assert_eq!((pl[0].from, pl[0].to), (1, 2));
        assert_eq!((pl[1].from, pl[1].to, pl[1].ns), (4, 16, 5.5));
    }
}
