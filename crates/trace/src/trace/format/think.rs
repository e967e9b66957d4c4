//! The share of a trace's think time a replay at speed 1 keeps (see
//! [`super::Trace::think_scale`]), worked out one operation at a time in
//! start order, holding a count per microsecond of duration below
//! [`EXACT_US`] (and a histogram above), never a figure per operation.

use super::{Op, Trace};
use hdrhistogram::Histogram;

/// Durations below this many µs are counted exactly, each value apart.
const EXACT_US: u64 = 1 << 16;

/// How many times each duration came: exactly below [`EXACT_US`], in a
/// histogram of three significant digits above.
struct Counts {
    exact: Vec<u64>,
    large: Histogram<u64>,
    total: u64,
}

impl Default for Counts {
    fn default() -> Counts {
        Counts {
            exact: Vec::new(),
            large: Histogram::new_with_bounds(EXACT_US, 1 << 43, 3).expect("valid bounds"),
            total: 0,
        }
    }
}

impl Counts {
    fn add(&mut self, v: u64) {
        self.total += 1;
        if v < EXACT_US {
            if self.exact.is_empty() {
                self.exact = vec![0; EXACT_US as usize];
            }
            self.exact[v as usize] += 1;
        } else {
            self.large.saturating_record(v);
        }
    }

    /// The `k`th smallest value (from 0; exact below [`EXACT_US`]).
    fn nth(&self, k: u64) -> u64 {
        let mut seen = 0u64;
        for (v, n) in self.exact.iter().enumerate() {
            seen += n;
            if seen > k {
                return v as u64;
            }
        }
        for v in self.large.iter_recorded() {
            seen += v.count_at_value();
            if seen > k {
                return v.value_iterated_to();
            }
        }
        0
    }

    /// The sum of min(value, c) over every value (exact when `c` is below
    /// [`EXACT_US`]).
    fn sum_capped(&self, c: u64) -> u64 {
        let small = self.exact.iter().enumerate().fold(0u64, |sum, (v, n)| {
            sum.saturating_add((v as u64).min(c).saturating_mul(*n))
        });
        let large = if c < EXACT_US {
            c.saturating_mul(self.large.len())
        } else {
            self.large.iter_recorded().fold(0u64, |sum, v| {
                sum.saturating_add(
                    v.value_iterated_to()
                        .min(c)
                        .saturating_mul(v.count_at_value()),
                )
            })
        };
        small.saturating_add(large)
    }
}

/// What [`Trace::think_scale`] needs of the operations, taken in one at a
/// time in start order.
#[derive(Default)]
pub struct ThinkTally {
    /// Every counted operation's duration.
    durations: Counts,
    /// Per counted operation: the time it adds to what some call was in
    /// progress (its part not covered by earlier ones).
    added: Counts,
    /// The sum of `added`.
    busy: u64,
    /// The latest end so far.
    reach: u64,
}

impl ThinkTally {
    /// Takes in the next operation.
    pub fn op(&mut self, o: &Op) {
        if !o.kind.counted() {
            return;
        }
        self.durations.add(o.dur_us);
        let end = o.start_us.saturating_add(o.dur_us);
        let added = end.saturating_sub(o.start_us.max(self.reach));
        self.added.add(added);
        self.busy = self.busy.saturating_add(added);
        self.reach = self.reach.max(end);
    }

    /// The scale for the trace whose head is `head` (see
    /// [`Trace::think_scale`]).
    pub fn scale(&self, head: &Trace) -> f64 {
        let (Some(untraced), Some(_)) = (head.untraced_us, &head.tracer) else {
            return 1.0;
        };
        // The tracer's cost: the 10th percentile of the calls' durations.
        let tracer_cost = match self.durations.total {
            0 => 0,
            n => self.durations.nth(n / 10),
        };
        // Each call's share of the busy time less the tracer's cost.
        let own = self.busy.saturating_sub(self.added.sum_capped(tracer_cost));
        let think = head.duration_us.saturating_sub(self.busy);
        if think == 0 {
            return 1.0;
        }
        (untraced.saturating_sub(own) as f64 / think as f64).clamp(0.0, 1.0)
    }
}
