//! Plays the operations: for each client, one thread per recorded thread
//! (or one for all), each keeping the recorded think time, scaled by the
//! speed, and the order between its client's threads; then merges what
//! every thread measured, per operation and per named step. The
//! operations come as the trace is read again (`feed.rs`).

use super::execute::{Executor, Handles, Lane, OpError};
use super::feed::{dispatch, queue_capacity, Client, Feed, Item, Queue, Reading};
use super::order::Order;
use super::{MapReplay, OpSummary, Reference, ReplayOptions, ReplayResult, Speed, StepSummary};
use crate::sandbox::RunDir;
use crate::trace::budget::Allowance;
use crate::trace::format::{errno, Op, OpKind, Trace};
use crate::trace::halt::{Guard, Halt};
use crate::trace::profile::Prepared;
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where each client plays and what it may write: client K (from 1) is
/// at index K - 1.
pub(super) struct Clients<'a> {
    /// Each client's directory (empty: the run directory itself).
    pub(super) dirs: &'a [String],
    /// Each client's share of the byte grant.
    pub(super) allowances: &'a [Allowance],
}

/// Latencies from 1 ns to an hour.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 2).expect("valid bounds")
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
}

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
    fn new() -> Stat {
        Stat {
            count: 0,
            bytes: 0,
            expected: 0,
            divergences: 0,
            lat: histogram(),
        }
    }
}

/// Count and latencies of one named step (each the time of its
/// operations together).
struct StepStat {
    count: u64,
    lat: Histogram<u64>,
}

/// One client's view: what its threads play with, and the cross-thread
/// order when it has more than one thread.
struct Player<'a> {
    order: Option<Order>,
    exec: Executor<'a>,
    /// The client's number, from 1.
    client: u32,
    /// Maps are noted, not replayed (`--mmap skip`).
    skip_maps: bool,
}

/// What one replay thread measured.
struct LaneResult {
    stats: Vec<(&'static str, Stat)>,
    /// By step id.
    steps: Vec<Option<StepStat>>,
    skipped: u64,
    first_error: Option<String>,
    client: u32,
    /// When the thread ended, seconds after the common start.
    ended_s: f64,
}

/// One replay thread's figures and clocks as it plays.
#[derive(Default)]
struct Tally {
    stats: Vec<(&'static str, Stat)>,
    /// By step id.
    steps: Vec<Option<StepStat>>,
    /// The step under way: its id and the time of its operations so far.
    step: Option<(u16, u64)>,
    skipped: u64,
    first_error: Option<String>,
    lane: Lane,
    /// The virtual clock: where this thread should be, in seconds.
    due: f64,
    prev_end_us: Option<u64>,
}

impl Tally {
    /// Ends the step under way (if any), counting its time; `next` is
    /// the step that begins now, if one does.
    fn next_step(&mut self, next: Option<(u16, u64)>) {
        let Some((id, took)) = std::mem::replace(&mut self.step, next) else {
            return;
        };
        let id = id as usize;
        if self.steps.len() <= id {
            self.steps.resize_with(id + 1, || None);
        }
        let st = self.steps[id].get_or_insert_with(|| StepStat {
            count: 0,
            lat: histogram(),
        });
        st.count += 1;
        st.lat.saturating_record(took.max(1));
    }

    /// Counts operation `seq` (from 0), which took `took` and ended with
    /// `result` (compared with the recorded outcome).
    fn count(&mut self, seq: u64, op: &Op, result: Result<u64, OpError>, took: Duration) {
        let name = op.kind.name();
        let at = match self.stats.iter().position(|(n, _)| *n == name) {
            Some(at) => at,
            None => {
                self.stats.push((name, Stat::new()));
                self.stats.len() - 1
            }
        };
        let s = &mut self.stats[at].1;
        s.count += 1;
        s.lat.saturating_record(ns(took));
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
            self.first_error
                .get_or_insert_with(|| format!("{name} (record {}): {d}", seq + 1));
        }
    }
}

impl Player<'_> {
    /// Plays what `feed` gives, in order, on this thread.
    fn play(&self, mut feed: Feed, think: Think, t0: Instant) -> LaneResult {
        let mut tally = Tally::default();
        let mut finished = true;
        while let Some(item) = feed.next(self.exec.guard) {
            if !self.play_one(&mut tally, &item, think, t0) {
                finished = false;
                break;
            }
        }
        // The feed ends early only when the replay halts.
        finished &= !self.exec.guard.halted();
        // The program's time after this thread's last operation is think
        // time too (to the end of the trace).
        if let (true, Some(s)) = (finished, think) {
            let end = tally.prev_end_us.unwrap_or(0);
            tally.due += self.exec.trace.duration_us.saturating_sub(end) as f64 / 1e6 * s;
            finished = self.exec.guard.sleep_until(t0, tally.due);
        }
        // A step cut short by a halt is not counted.
        if finished {
            tally.next_step(None);
        }
        LaneResult {
            stats: tally.stats,
            steps: tally.steps,
            skipped: tally.skipped,
            first_error: tally.first_error,
            client: self.client,
            ended_s: t0.elapsed().as_secs_f64(),
        }
    }

    /// Sleeps the think time before operation `op`, scaled; false when
    /// the replay halts meanwhile.
    fn think(&self, tally: &mut Tally, op: &Op, think: Think, t0: Instant) -> bool {
        let Some(scale) = think else {
            return true;
        };
        let gap_us = match tally.prev_end_us {
            Some(end) => op.start_us.saturating_sub(end),
            None => op.start_us,
        };
        tally.due += gap_us as f64 / 1e6 * scale;
        if let Some(order) = &self.order {
            order.thinking(true);
        }
        let awake = self.exec.guard.sleep_until(t0, tally.due);
        if let Some(order) = &self.order {
            order.thinking(false);
        }
        awake
    }

    /// Plays `item`: its think time, its turn in the cross-thread order,
    /// the call, and its figures. False when the replay halts.
    fn play_one(&self, tally: &mut Tally, item: &Item, think: Think, t0: Instant) -> bool {
        if self.exec.guard.halted() {
            return false;
        }
        let op = &item.op;
        if !self.think(tally, op, think, t0) {
            return false;
        }
        tally.prev_end_us = Some(op.start_us.saturating_add(op.dur_us));
        // Old `mmap` records are noted, and maps under `--mmap skip`.
        let noted = match &op.kind {
            OpKind::Mmap { .. } => true,
            OpKind::Map { .. } => self.skip_maps,
            _ => false,
        };
        if noted {
            tally.skipped += 1;
        }
        let counted = !noted && op.kind.counted();
        if let Some(order) = &self.order {
            order.wait(item, self.exec.guard);
            if self.exec.guard.halted() {
                return false;
            }
        }
        if let Some(id) = item.step {
            tally.next_step(Some((id, 0)));
        }
        let started = Instant::now();
        let result = if noted {
            Ok(0)
        } else {
            self.exec
                .execute(&op.kind, op.failed.is_some(), item.growth, &mut tally.lane)
        };
        let took = started.elapsed();
        if let Some(order) = &self.order {
            order.done(item);
        }
        if let Some((_, t)) = &mut tally.step {
            *t = t.saturating_add(ns(took));
        }
        // The virtual clock moves by the op's own time, so oversleeping
        // once is absorbed by the next gap instead of adding up.
        tally.due += took.as_secs_f64();
        if let Err(e) = &result {
            if let Some(h) = e.halt(&format!("{} (record {})", op.kind.name(), item.seq + 1)) {
                self.exec.guard.halt(h);
            }
        }
        match result {
            // A map this kernel cannot replay is noted, like a skipped one.
            Err(OpError::MapsUnsupported) => tally.skipped += 1,
            result if counted => tally.count(item.seq, op, result, took),
            _ => {}
        }
        true
    }
}

/// Seconds of think time per recorded second (the speed and the trace's
/// scale together), or None for none (`--speed max`).
type Think = Option<f64>;

/// Halts the replay when the replay thread holding it unwinds, so the
/// reader and the other threads stop rather than wait for it.
struct HaltOnPanic<'a>(&'a Guard<'a>);

impl Drop for HaltOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.halt(Halt::Failed("a replay thread died".into()));
        }
    }
}

/// Stack of each replay thread: it only loops over operations.
const STACK_BYTES: usize = 256 << 10;

/// Plays every lane of every client on a thread of its own, all starting
/// together, and sums up what they measured. The layout figures are left
/// at zero for the caller to fill in.
pub(super) fn replay(
    p: &Prepared,
    dir: &RunDir,
    o: ReplayOptions,
    lanes: usize,
    guard: &Guard,
    clients: &Clients,
) -> ReplayResult {
    let t = &p.head;
    let handles: Vec<Handles> = clients
        .dirs
        .iter()
        .map(|_| Mutex::new(HashMap::new()))
        .collect();
    let players: Vec<Player> = clients
        .dirs
        .iter()
        .zip(clients.allowances)
        .zip(&handles)
        .enumerate()
        .map(|(k, ((prefix, allowance), handles))| Player {
            order: (lanes > 1).then(|| Order::new(super::order::STALL)),
            exec: Executor {
                trace: t,
                dir,
                prefix,
                handles,
                guard,
                allowance,
            },
            client: k as u32 + 1,
            skip_maps: o.maps == MapReplay::Skip,
        })
        .collect();
    // The recorded think time scaled by the speed and by the trace's own
    // scale (the tracer's slowdown taken out, when the trace knows it).
    let think = match o.speed {
        Speed::Factor(f) => Some(p.profile.think_scale / f),
        Speed::Max => None,
    };
    let t0 = Instant::now();
    let results = run_lanes(p, &players, lanes, think, t0, guard);
    let seconds = t0.elapsed().as_secs_f64();
    summarise(t, results, seconds, guard, players.len())
}

/// Starts a thread per lane and client — fed by this thread, which reads
/// the trace for them (it would only wait otherwise), or, for several
/// clients of one thread each, reading it themselves — and joins them; a
/// thread that cannot start or dies halts the replay (the others stop at
/// their next operation).
fn run_lanes(
    p: &Prepared,
    players: &[Player],
    lanes: usize,
    think: Think,
    t0: Instant,
    guard: &Guard,
) -> Vec<LaneResult> {
    let total = players.len().saturating_mul(lanes);
    let capacity = queue_capacity(total);
    // A lone client, or clients of several threads, are fed by this
    // thread; several clients of one thread each read for themselves.
    let queued = lanes > 1 || players.len() == 1;
    let queues: Vec<Vec<Queue>> = players
        .iter()
        .map(|_| match queued {
            true => (0..lanes).map(|_| Queue::new(capacity)).collect(),
            false => Vec::new(),
        })
        .collect();
    let clients: Vec<Client> = players
        .iter()
        .zip(&queues)
        .map(|(player, queues)| Client {
            queues,
            order: player.order.as_ref(),
        })
        .collect();
    std::thread::scope(|s| {
        let mut running = Vec::with_capacity(total);
        'start: for (player, queues) in players.iter().zip(&queues) {
            for n in 0..lanes {
                let feed = match queues.get(n) {
                    Some(q) => Feed::Queued(q, Default::default()),
                    None => match Reading::new(p) {
                        Ok(r) => Feed::Direct(Box::new(r)),
                        Err(e) => {
                            guard.halt(Halt::Failed(e));
                            break 'start;
                        }
                    },
                };
                let name = match players.len() {
                    1 => format!("replay-{n}"),
                    _ => format!("replay-{}-{n}", player.client),
                };
                let spawned = crate::gate::thread(name)
                    .stack_size(STACK_BYTES)
                    .spawn_scoped(s, move || {
                        let _watch = HaltOnPanic(guard);
                        player.play(feed, think, t0)
                    });
                match spawned {
                    Ok(h) => running.push(h),
                    Err(e) => {
                        guard.halt(Halt::Failed(format!(
                            "could not start replay thread {} of {total}: {e}",
                            running.len() + 1
                        )));
                        break 'start;
                    }
                }
            }
        }
        // With the replay halted, dispatch reads nothing and closes the
        // queues, so the threads that did start end.
        if queued {
            dispatch(Reading::new(p), &clients, guard);
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

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Merges the lanes' figures per kind of operation (by name, in name
/// order) and per step (in the trace's order) into the replay's result;
/// the first error is the first lane's (client 1's first).
fn summarise(
    t: &Trace,
    results: Vec<LaneResult>,
    seconds: f64,
    guard: &Guard,
    clients: usize,
) -> ReplayResult {
    let mut merged: BTreeMap<&'static str, Stat> = BTreeMap::new();
    let mut steps: Vec<Option<StepStat>> = Vec::new();
    let mut skipped = 0u64;
    let mut first_error = None;
    let mut client_seconds = vec![0.0f64; clients];
    for r in results {
        skipped = skipped.saturating_add(r.skipped);
        if first_error.is_none() {
            first_error = match r.first_error {
                Some(e) if clients > 1 => Some(format!("client {}: {e}", r.client)),
                e => e,
            };
        }
        if let Some(c) = client_seconds.get_mut(r.client as usize - 1) {
            *c = c.max(r.ended_s);
        }
        for (name, s) in r.stats {
            let m = merged.entry(name).or_insert_with(Stat::new);
            m.count += s.count;
            m.bytes = m.bytes.saturating_add(s.bytes);
            m.expected += s.expected;
            m.divergences += s.divergences;
            let _ = m.lat.add(&s.lat);
        }
        if steps.len() < r.steps.len() {
            steps.resize_with(r.steps.len(), || None);
        }
        for (id, s) in r.steps.into_iter().enumerate() {
            let Some(s) = s else { continue };
            match &mut steps[id] {
                Some(m) => {
                    m.count += s.count;
                    let _ = m.lat.add(&s.lat);
                }
                slot => *slot = Some(s),
            }
        }
    }
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
    let steps: Vec<StepSummary> = steps
        .into_iter()
        .enumerate()
        .filter_map(|(id, s)| {
            let s = s?;
            Some(StepSummary {
                // Below MAX_STEPS, hence a u16.
                step: t.steps.name(id as u16).to_string(),
                count: s.count,
                mean_us: s.lat.mean() / 1000.0,
                p50_us: us(s.lat.value_at_quantile(0.5)),
                p99_us: us(s.lat.value_at_quantile(0.99)),
                max_us: us(s.lat.max()),
            })
        })
        .collect();
    let original_seconds = t.duration_us as f64 / 1e6;
    let (reference, reference_seconds) = Reference::of(t);
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
        reference,
        reference_seconds,
        time_ratio: seconds / reference_seconds.max(1e-9),
        files_created: 0,
        bytes_laid_out: 0,
        clients: clients as u32,
        client_seconds,
        steps,
    }
}
