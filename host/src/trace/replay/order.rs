//! The order between replay threads: an operation waits until every
//! operation (of any thread) that had ended before it began in the recording
//! has been replayed.

use crate::trace::format::Trace;
use crate::trace::halt::{Guard, POLL};
use std::sync::{Condvar, Mutex};

/// Cross-thread order as recorded: an operation waits for every operation
/// of any thread that had finished before it started (so an unlink never
/// overtakes the writes it followed, at any speed).
pub(super) struct Order {
    /// Per operation: how many operations (by end time) must be done first.
    need: Vec<usize>,
    /// Per operation: its rank by end time.
    rank: Vec<usize>,
    /// Done flags by rank, and how many leading ranks are done.
    state: Mutex<(Vec<bool>, usize)>,
    wake: Condvar,
}

impl Order {
    pub(super) fn new(t: &Trace) -> Order {
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
        Order {
            need,
            rank,
            state: Mutex::new((vec![false; t.ops.len()], 0)),
            wake: Condvar::new(),
        }
    }

    /// Waits until operation `i` may start (or the replay halts).
    pub(super) fn wait(&self, i: usize, guard: &Guard) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while st.1 < self.need[i] && !guard.halted() {
            st = match self.wake.wait_timeout(st, POLL) {
                Ok((st, _)) => st,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// Marks operation `i` done.
    pub(super) fn done(&self, i: usize) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.0[self.rank[i]] = true;
        let before = st.1;
        while st.1 < st.0.len() && st.0[st.1] {
            st.1 += 1;
        }
        if st.1 != before {
            self.wake.notify_all();
        }
    }
}
