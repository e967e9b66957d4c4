//! Memory latency by working-set size: a random cyclic pointer chase over
//! cache-line-sized nodes (Sattolo's shuffle, so the walk visits every node
//! before repeating), timed per access. Each access depends on the previous
//! one, so the time is the latency of whichever level holds the working set.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Words (u64) per node: one 64-byte cache line.
const NODE_WORDS: usize = 8;

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
            let s = base + base * step as u64 / o.steps_per_doubling as u64;
            let s = s / 64 * 64;
            if s <= o.max_size && out.last() != Some(&s) {
                out.push(s);
            }
        }
        base *= 2;
    }
    out
}

/// Builds a single random cycle through `nodes` nodes; each node's first word
/// holds the word index of the next node.
fn build_cycle(nodes: usize, rng: &mut SmallRng) -> Vec<u64> {
    let mut order: Vec<usize> = (0..nodes).collect();
    // Sattolo's algorithm: a uniformly random single cycle.
    for i in (1..nodes).rev() {
        let j = rng.random_range(0..i);
        order.swap(i, j);
    }
    let mut buf = vec![0u64; nodes * NODE_WORDS];
    for w in order.windows(2) {
        buf[w[0] * NODE_WORDS] = (w[1] * NODE_WORDS) as u64;
    }
    buf[order[nodes - 1] * NODE_WORDS] = (order[0] * NODE_WORDS) as u64;
    buf
}

/// Follows the chain `steps` times from word 0; returns where it ended.
fn chase(buf: &[u64], steps: u64) -> u64 {
    let mut i = 0u64;
    for _ in 0..steps {
        i = buf[i as usize];
    }
    i
}

/// Times the chase on one working set: grows the step count until one
/// round takes a tenth of the time budget, then takes the best of the rounds
/// that fit (the least disturbed by the noisy neighbours).
fn time_size(size: u64, budget: Duration, rng: &mut SmallRng) -> f64 {
    let nodes = (size as usize / (NODE_WORDS * 8)).max(2);
    let buf = build_cycle(nodes, rng);
    // Touch every node once so page faults stay out of the timing.
    let mut steps = nodes as u64;
    std::hint::black_box(chase(&buf, steps));
    let target = budget / 10;
    loop {
        let t = Instant::now();
        std::hint::black_box(chase(&buf, steps));
        if t.elapsed() >= target || steps > 1 << 34 {
            break;
        }
        steps *= 2;
    }
    let start = Instant::now();
    let mut best = f64::MAX;
    while start.elapsed() < budget || best == f64::MAX {
        let t = Instant::now();
        std::hint::black_box(chase(&buf, steps));
        best = best.min(t.elapsed().as_nanos() as f64 / steps as f64);
    }
    best
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

/// Measures the latency curve from `min_size` to `max_size`.
pub fn latency_curve(o: &LatencyOptions, stop: &Arc<AtomicBool>) -> Result<LatencyResult, String> {
    if o.min_size < 1024 || o.min_size > o.max_size {
        return Err(format!(
            "min_size {} must be at least 1 KiB and at most max_size {}",
            o.min_size, o.max_size
        ));
    }
    if o.steps_per_doubling == 0 || o.steps_per_doubling > 8 {
        return Err("steps_per_doubling must be between 1 and 8".into());
    }
    super::check_size("max_size", o.max_size)?;
    let mut rng = SmallRng::seed_from_u64(42);
    let mut points = Vec::new();
    for size in sizes(o) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        points.push(LatencyPoint {
            size,
            ns: time_size(size, o.time_per_size, &mut rng),
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
        let buf = build_cycle(1000, &mut rng);
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
