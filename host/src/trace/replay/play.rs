//! Plays the operations: one thread per recorded thread (or one for all),
//! each keeping the recorded think time, scaled by the speed, and the
//! order between threads; then merges what every thread measured.

use super::execute::{Executor, Handles, Lane};
use super::order::Order;
use super::{OpSummary, ReplayOptions, ReplayResult, Speed};
use crate::sandbox::RunDir;
use crate::trace::budget::Allowance;
use crate::trace::format::{errno, OpKind, Trace};
use crate::trace::halt::{Guard, Halt};
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Instant;

/// Count, bytes, outcomes and latencies of one kind of operation.
struct Stat {
    count: u64,
    bytes: u64,
    /// Failed as they failed in the recording.
    expected: u64,
    /// Ended otherwise than in the recording.
    divergences: u64,
    lat: Histogram<u64>,
}

impl Stat {
    /// Nothing counted; latencies from 1 ns to an hour.
    fn new() -> Stat {
        Stat {
            count: 0,
            bytes: 0,
            expected: 0,
            divergences: 0,
            lat: Histogram::new_with_bounds(1, 3_600_000_000_000, 2).expect("valid bounds"),
        }
    }
}

/// One replay thread's view: what it plays with, and the cross-thread
/// order when there is more than one thread.
struct Player<'a> {
    order: Option<Order<'a>>,
    exec: Executor<'a>,
}

/// What one replay thread measured.
type LaneResult = (Vec<(&'static str, Stat)>, u64, Option<String>);

impl Player<'_> {
    /// Plays `ops` (indices into the trace) in order on this thread.
    fn play(&self, ops: &[usize], speed: Speed, t0: Instant) -> LaneResult {
        let mut stats: Vec<(&'static str, Stat)> = Vec::new();
        let mut skipped = 0;
        let mut first_error = None;
        let mut lane = Lane::default();
        // The virtual clock: where this thread should be, in seconds.
        let mut due = 0.0f64;
        let mut prev_end_us: Option<u64> = None;
        for &i in ops {
            if self.exec.guard.halted() {
                break;
            }
            let op = &self.exec.trace.ops[i];
            if let Speed::Factor(f) = speed {
                let gap_us = match prev_end_us {
                    Some(end) => op.start_us.saturating_sub(end),
                    None => op.start_us,
                };
                due += gap_us as f64 / 1e6 / f;
                if let Some(order) = &self.order {
                    order.thinking(true);
                }
                let awake = self.exec.guard.sleep_until(t0, due);
                if let Some(order) = &self.order {
                    order.thinking(false);
                }
                if !awake {
                    break;
                }
            }
            prev_end_us = Some(op.start_us.saturating_add(op.dur_us));
            let counted = match &op.kind {
                OpKind::Mmap { .. } => {
                    skipped += 1;
                    false
                }
                kind => kind.counted(),
            };
            if let Some(order) = &self.order {
                order.wait(i, self.exec.guard);
                if self.exec.guard.halted() {
                    break;
                }
            }
            let started = Instant::now();
            let result = self.exec.execute(&op.kind, op.failed.is_some(), &mut lane);
            let took = started.elapsed();
            if let Some(order) = &self.order {
                order.done(i);
            }
            // The virtual clock moves by the op's own time, so oversleeping
            // once is absorbed by the next gap instead of adding up.
            due += took.as_secs_f64();
            if let Err(e) = &result {
                if let Some(h) = e.halt(&format!("{} (record {})", op.kind.name(), i + 1)) {
                    self.exec.guard.halt(h);
                }
            }
            if !counted {
                continue;
            }
            let name = op.kind.name();
            let at = match stats.iter().position(|(n, _)| *n == name) {
                Some(at) => at,
                None => {
                    stats.push((name, Stat::new()));
                    stats.len() - 1
                }
            };
            let s = &mut stats[at].1;
            s.count += 1;
            s.lat
                .saturating_record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1));
            let divergence = match (result, op.failed) {
                (Ok(bytes), None) => {
                    s.bytes = s.bytes.saturating_add(bytes);
                    None
                }
                (Err(e), Some(want)) if e.errno() == Some(want) => {
                    s.expected += 1;
                    None
                }
                (Ok(_), Some(want)) => Some(format!(
                    "failed with {} when recorded, succeeded on replay",
                    errno::name(want)
                )),
                (Err(e), Some(want)) => Some(format!(
                    "failed with {} when recorded, on replay: {e}",
                    errno::name(want)
                )),
                (Err(e), None) => Some(e.to_string()),
            };
            if let Some(d) = divergence {
                s.divergences += 1;
                first_error
                    .get_or_insert_with(|| format!("{} (record {}): {d}", op.kind.name(), i + 1));
            }
        }
        (stats, skipped, first_error)
    }
}

/// Stack of each replay thread: it only loops over operations.
const STACK_BYTES: usize = 256 << 10;

/// Plays every lane on a thread of its own, all starting together, and
/// sums up what they measured. The layout figures are left at zero for the
/// caller to fill in.
pub(super) fn replay(
    t: &Trace,
    dir: &RunDir,
    o: ReplayOptions,
    lanes: &[Vec<usize>],
    guard: &Guard,
    allowance: &Allowance,
) -> ReplayResult {
    let handles: Handles = Mutex::new(HashMap::new());
    let player = Player {
        order: (lanes.len() > 1).then(|| Order::new(t, super::order::STALL)),
        exec: Executor {
            trace: t,
            dir,
            handles: &handles,
            guard,
            allowance,
        },
    };
    let t0 = Instant::now();
    let results = run_lanes(&player, lanes, o.speed, t0, guard);
    let seconds = t0.elapsed().as_secs_f64();
    summarise(t, results, seconds, guard)
}

/// Starts a thread per lane and joins them all; a thread that cannot start
/// or dies halts the replay (the others stop at their next operation).
fn run_lanes(
    player: &Player,
    lanes: &[Vec<usize>],
    speed: Speed,
    t0: Instant,
    guard: &Guard,
) -> Vec<LaneResult> {
    std::thread::scope(|s| {
        let mut running = Vec::with_capacity(lanes.len());
        for (n, lane) in lanes.iter().enumerate() {
            let spawned = std::thread::Builder::new()
                .name(format!("replay-{n}"))
                .stack_size(STACK_BYTES)
                .spawn_scoped(s, move || player.play(lane, speed, t0));
            match spawned {
                Ok(h) => running.push(h),
                Err(e) => {
                    guard.halt(Halt::Failed(format!(
                        "could not start replay thread {} of {}: {e}",
                        n + 1,
                        lanes.len()
                    )));
                    break;
                }
            }
        }
        running
            .into_iter()
            .filter_map(|h| match h.join() {
                Ok(r) => Some(r),
                Err(_) => {
                    guard.halt(Halt::Failed("a replay thread died".into()));
                    None
                }
            })
            .collect()
    })
}

/// Merges the lanes' figures per kind of operation (by name, in name
/// order) into the replay's result; the first error is the first lane's.
fn summarise(t: &Trace, results: Vec<LaneResult>, seconds: f64, guard: &Guard) -> ReplayResult {
    let mut merged: BTreeMap<&'static str, Stat> = BTreeMap::new();
    let mut skipped = 0u64;
    let mut first_error = None;
    for (stats, sk, err) in results {
        skipped = skipped.saturating_add(sk);
        if first_error.is_none() {
            first_error = err;
        }
        for (name, s) in stats {
            let m = merged.entry(name).or_insert_with(Stat::new);
            m.count += s.count;
            m.bytes = m.bytes.saturating_add(s.bytes);
            m.expected += s.expected;
            m.divergences += s.divergences;
            let _ = m.lat.add(&s.lat);
        }
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    let ops: Vec<OpSummary> = merged
        .into_iter()
        .map(|(name, s)| OpSummary {
            op: name.to_string(),
            count: s.count,
            bytes: s.bytes,
            expected_errors: s.expected,
            divergences: s.divergences,
            mean_us: s.lat.mean() / 1000.0,
            p50_us: us(s.lat.value_at_quantile(0.5)),
            p99_us: us(s.lat.value_at_quantile(0.99)),
            max_us: us(s.lat.max()),
        })
        .collect();
    let original_seconds = t.duration_us as f64 / 1e6;
    ReplayResult {
        total_ops: ops.iter().map(|o| o.count).sum(),
        divergences: ops.iter().map(|o| o.divergences).sum(),
        expected_errors: ops.iter().map(|o| o.expected_errors).sum(),
        ops,
        skipped,
        first_divergence: first_error,
        halted: guard.reason(),
        seconds,
        original_seconds,
        time_ratio: seconds / original_seconds.max(1e-9),
        files_created: 0,
        bytes_laid_out: 0,
    }
}
