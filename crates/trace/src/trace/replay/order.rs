//! The order between replay threads: an operation waits until every
//! operation (of any thread) that had ended before it began in the recording
//! has been replayed — only those, so the wait can never go round in a
//! circle. A watchdog stops a replay in which nothing moves for
//! [`STALL`]: no operation finishes and no thread is in its think time.
//!
//! The [`Plan`] (who waits for how many) is worked out once and shared by
//! every client of a replay; each client's [`Order`] holds only its own
//! progress (a bit per operation).

use crate::trace::format::Trace;
use crate::trace::halt::{Guard, Halt, POLL};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a replay may go without any progress before it stops.
pub(super) const STALL: Duration = Duration::from_secs(10);

/// What the waiting threads of one client share.
struct State {
    /// Done flags by rank (by end time), a bit each.
    done: Vec<u64>,
    /// How many leading ranks are done.
    prefix: usize,
    /// When an operation last finished.
    progress: Instant,
}

/// Cross-thread order as recorded: an operation waits for every operation
/// of any thread that had finished before it started (so an unlink never
/// overtakes the writes it followed, at any speed).
pub(super) struct Order<'t> {
    trace: &'t Trace,
    plan: &'t Plan,
    state: Mutex<State>,
    wake: Condvar,
    /// Threads sleeping their think time (they are making progress).
    thinking: AtomicUsize,
    stall: Duration,
}

/// Who waits for what, worked out once from the trace.
pub(super) struct Plan {
    /// Per operation: how many operations (by end time) must be done first.
    need: Vec<usize>,
    /// Per operation: its rank by end time.
    rank: Vec<usize>,
    /// Per rank: the operation.
    by_end: Vec<usize>,
}

impl Plan {
    pub(super) fn new(t: &Trace) -> Plan {
        let end = |i: usize| t.ops[i].start_us.saturating_add(t.ops[i].dur_us);
        let mut by_end: Vec<usize> = (0..t.ops.len()).collect();
        by_end.sort_by_key(|&i| (end(i), i));
        let ends: Vec<u64> = by_end.iter().map(|&i| end(i)).collect();
        let mut rank = vec![0; t.ops.len()];
        for (r, &i) in by_end.iter().enumerate() {
            rank[i] = r;
        }
        let need = t
            .ops
            .iter()
            .map(|o| ends.partition_point(|&e| e < o.start_us))
            .collect();
        Plan { need, rank, by_end }
    }
}

fn is_done(done: &[u64], r: usize) -> bool {
    done.get(r / 64).is_some_and(|w| w & (1 << (r % 64)) != 0)
}

impl<'t> Order<'t> {
    pub(super) fn new(t: &'t Trace, plan: &'t Plan, stall: Duration) -> Order<'t> {
        Order {
            trace: t,
            plan,
            state: Mutex::new(State {
                done: vec![0; t.ops.len().div_ceil(64)],
                prefix: 0,
                progress: Instant::now(),
            }),
            wake: Condvar::new(),
            thinking: AtomicUsize::new(0),
            stall,
        }
    }

    /// Notes that a thread starts (true) or ends (false) its think time.
    pub(super) fn thinking(&self, on: bool) {
        if on {
            self.thinking.fetch_add(1, Ordering::Relaxed);
        } else {
            self.thinking.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Waits until operation `i` may start (or the replay halts); halts the
    /// replay, naming `i` and what it waits for, when nothing has moved for
    /// the stall time.
    pub(super) fn wait(&self, i: usize, guard: &Guard) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while st.prefix < self.plan.need[i] && !guard.halted() {
            st = match self.wake.wait_timeout(st, POLL) {
                Ok((st, _)) => st,
                Err(p) => p.into_inner().0,
            };
            if self.thinking.load(Ordering::Relaxed) > 0 {
                st.progress = Instant::now();
            } else if st.prefix < self.plan.need[i] && st.progress.elapsed() >= self.stall {
                let blocker = self.plan.by_end[st.prefix];
                guard.halt(Halt::Failed(format!(
                    "no progress for {} s: {} waits for {}, which has not finished",
                    self.stall.as_secs(),
                    self.describe(i),
                    self.describe(blocker)
                )));
            }
        }
    }

    /// An operation as errors name it.
    fn describe(&self, i: usize) -> String {
        let op = &self.trace.ops[i];
        format!(
            "{} (record {}, thread {}, at {} µs)",
            op.kind.name(),
            i + 1,
            op.thread,
            op.start_us
        )
    }

    /// Marks operation `i` done.
    pub(super) fn done(&self, i: usize) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let r = self.plan.rank[i];
        if let Some(w) = st.done.get_mut(r / 64) {
            *w |= 1 << (r % 64);
        }
        st.progress = Instant::now();
        let before = st.prefix;
        let total = self.plan.rank.len();
        while st.prefix < total && is_done(&st.done, st.prefix) {
            st.prefix += 1;
        }
        if st.prefix != before {
            self.wake.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::halt::Bounds;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_wait_on_an_operation_that_never_finishes_stops_naming_both() {
        let text = "plumb-trace 2\nthread 0 1\nthread 1 2\nfile 0 f 0 a\n\
                    op 0 0 10 stat 0\nop 1 20 5 stat 0\nend 2\n";
        let t = Trace::parse("t", text).unwrap();
        let plan = Plan::new(&t);
        let order = Order::new(&t, &plan, Duration::from_millis(200));
        let stop = AtomicBool::new(false);
        let guard = Guard::new(Bounds {
            stop: &stop,
            deadline: None,
            max_bytes: 0,
        });
        let started = Instant::now();
        // Record 2 waits for record 1, which is never marked done.
        order.wait(1, &guard);
        assert!(started.elapsed() < Duration::from_secs(2));
        let why = guard.reason().expect("halted").to_string();
        assert!(why.contains("stat (record 2, thread 1"), "{why}");
        assert!(why.contains("waits for stat (record 1, thread 0"), "{why}");
    }
}
