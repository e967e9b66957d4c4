//! The order between replay threads: an operation waits until every
//! operation (of any thread) that had ended before it began in the recording
//! has been replayed — only those, so the wait can never go round in a
//! circle. A watchdog stops a replay in which nothing moves for
//! [`STALL`]: no operation finishes and no thread is in its think time.
//!
//! The trace is read in start order, so every operation another waits for
//! has been read, and handed to its thread, before that one: each client's
//! [`Order`] holds the operations handed out and not yet done, by recorded
//! end time, and an operation may start once none of them ended before it
//! began. It holds as many as the threads' queues do, never one per
//! operation of the trace.

use super::feed::Item;
use crate::trace::halt::{wait_a_poll, Guard, Halt};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a replay may go without any progress before it stops.
pub(super) const STALL: Duration = Duration::from_secs(10);

/// An operation handed out and not yet done, as a stall names it.
struct Pending {
    name: &'static str,
    thread: u32,
    start_us: u64,
}

/// What the threads of one client share.
struct State {
    /// By (recorded end, sequence).
    pending: BTreeMap<(u64, u64), Pending>,
    /// When an operation last finished.
    progress: Instant,
    /// Threads waiting for their turn (a done operation wakes them only
    /// then: a wake-up nobody waits for would still be a system call).
    waiting: usize,
}

/// Cross-thread order as recorded: an operation waits for every operation
/// of any thread that had finished before it started (so an unlink never
/// overtakes the writes it followed, at any speed).
pub(super) struct Order {
    state: Mutex<State>,
    /// The earliest end among the pending operations (u64::MAX for
    /// none), kept with them under the lock and read without it: an
    /// operation that starts no later is let go at once. It can be read
    /// too low (the lock then decides), never too high: an operation is
    /// added before its thread can see it.
    earliest: AtomicU64,
    wake: Condvar,
    /// Threads sleeping their think time (they are making progress).
    thinking: AtomicUsize,
    stall: Duration,
}

/// An operation as errors name it.
fn describe(seq: u64, p: &Pending) -> String {
    format!(
        "{} (record {}, thread {}, at {} µs)",
        p.name,
        seq.saturating_add(1),
        p.thread,
        p.start_us
    )
}

fn key(item: &Item) -> (u64, u64) {
    (item.op.start_us.saturating_add(item.op.dur_us), item.seq)
}

impl Order {
    pub(super) fn new(stall: Duration) -> Order {
        Order {
            state: Mutex::new(State {
                pending: BTreeMap::new(),
                progress: Instant::now(),
                waiting: 0,
            }),
            earliest: AtomicU64::new(u64::MAX),
            wake: Condvar::new(),
            thinking: AtomicUsize::new(0),
            stall,
        }
    }

    /// Publishes the earliest pending end.
    fn publish(&self, st: &State) {
        let earliest = st.pending.keys().next().map_or(u64::MAX, |(end, _)| *end);
        self.earliest.store(earliest, Ordering::Release);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes `items` handed to their threads: before the threads can see
    /// them, and in the trace's order.
    pub(super) fn handed_out(&self, items: &[Item]) {
        let mut st = self.lock();
        for item in items {
            let pending = Pending {
                name: item.op.kind.name(),
                thread: item.op.thread,
                start_us: item.op.start_us,
            };
            st.pending.insert(key(item), pending);
        }
        self.publish(&st);
    }

    /// Notes that a thread starts (true) or ends (false) its think time.
    pub(super) fn thinking(&self, on: bool) {
        if on {
            self.thinking.fetch_add(1, Ordering::Relaxed);
        } else {
            self.thinking.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Waits until `item` may start (or the replay halts); halts the
    /// replay, naming `item` and what it waits for, when nothing has moved
    /// for the stall time.
    pub(super) fn wait(&self, item: &Item, guard: &Guard) {
        let start = item.op.start_us;
        if self.earliest.load(Ordering::Acquire) >= start {
            return;
        }
        let blocked = |st: &State| {
            st.pending
                .keys()
                .next()
                .is_some_and(|(end, _)| *end < start)
        };
        let mut st = self.lock();
        while blocked(&st) && !guard.halted() {
            st.waiting += 1;
            st = wait_a_poll(&self.wake, st);
            st.waiting -= 1;
            if self.thinking.load(Ordering::Relaxed) > 0 {
                st.progress = Instant::now();
            } else if blocked(&st) && st.progress.elapsed() >= self.stall {
                let waiting = Pending {
                    name: item.op.kind.name(),
                    thread: item.op.thread,
                    start_us: start,
                };
                let blocker = st
                    .pending
                    .iter()
                    .next()
                    .map(|((_, seq), p)| describe(*seq, p))
                    .unwrap_or_default();
                guard.halt(Halt::Failed(format!(
                    "no progress for {} s: {} waits for {}, which has not finished",
                    self.stall.as_secs(),
                    describe(item.seq, &waiting),
                    blocker
                )));
            }
        }
    }

    /// Marks `item` done.
    pub(super) fn done(&self, item: &Item) {
        let k = key(item);
        let mut st = self.lock();
        let first = st.pending.keys().next() == Some(&k);
        st.pending.remove(&k);
        st.progress = Instant::now();
        if first {
            self.publish(&st);
        }
        if first && st.waiting > 0 {
            self.wake.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::{Op, OpKind};
    use crate::trace::halt::{Bounds, POLL};
    use std::sync::atomic::AtomicBool;

    fn stat(seq: u64, thread: u32, start_us: u64, dur_us: u64) -> Item {
        Item {
            seq,
            op: Op {
                thread,
                start_us,
                dur_us,
                kind: OpKind::Stat { file: 0 },
                failed: None,
            },
            step: None,
            growth: None,
        }
    }

    #[test]
    fn a_wait_on_an_operation_that_never_finishes_stops_naming_both() {
        let order = Order::new(Duration::from_millis(200));
        let (first, second) = (stat(0, 0, 0, 10), stat(1, 1, 20, 5));
        order.handed_out(&[first, second.clone()]);
        let stop = AtomicBool::new(false);
        let guard = Guard::new(Bounds {
            stop: &stop,
            deadline: None,
            max_bytes: 0,
        });
        let started = Instant::now();
        // Record 2 waits for record 1, which is never marked done.
        order.wait(&second, &guard);
        assert!(started.elapsed() < Duration::from_secs(2));
        let why = guard.reason().expect("halted").to_string();
        assert!(why.contains("stat (record 2, thread 1"), "{why}");
        assert!(why.contains("waits for stat (record 1, thread 0"), "{why}");
    }

    #[test]
    fn only_what_ended_before_the_start_is_waited_for() {
        let order = Order::new(STALL);
        let stop = AtomicBool::new(false);
        let guard = Guard::new(Bounds {
            stop: &stop,
            deadline: None,
            max_bytes: 0,
        });
        // Overlapping: record 2 starts before record 1 ends.
        let (a, b, c) = (stat(0, 0, 0, 10), stat(1, 1, 5, 1), stat(2, 1, 11, 1));
        order.handed_out(&[a.clone(), b.clone(), c.clone()]);
        let started = Instant::now();
        order.wait(&b, &guard);
        assert!(started.elapsed() < POLL, "no wait for an overlapping one");
        order.done(&b);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                order.wait(&c, &guard);
                Instant::now()
            });
            std::thread::sleep(Duration::from_millis(50));
            let released = Instant::now();
            order.done(&a);
            assert!(waiter.join().unwrap() >= released, "waited for record 1");
        });
        assert!(guard.reason().is_none());
    }
}
