//! How the replay threads get their operations while the trace is read
//! again ([`Reading`]): the thread that started the replay (which would
//! only wait otherwise) reads it ([`dispatch`]) and hands each operation,
//! in the trace's order, to the bounded [`Queue`] of its thread in each
//! client — for a lone client, and for clients of several threads — so
//! parsing runs beside the replay; each of several clients that play on
//! one thread reads it on that thread instead (one reader for them all
//! keeps them in lock-step). What each operation may
//! grow is worked out where it is read, in that order ([`Targets`]), and
//! every operation is checked against what the first reading found
//! ([`Prepared`]), so a trace changed in between is stopped, not trusted.
//! Memory grows with the queues and the readings (a bit per handle id, the
//! handles open), never with the operations.

use super::order::Order;
use crate::trace::budget::{Growth, Targets};
use crate::trace::format::stream::{Step, Stream};
use crate::trace::format::{Op, OpKind};
use crate::trace::halt::{wait_a_poll, Guard, Halt};
use crate::trace::profile::Prepared;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};

/// One operation as a replay thread gets it.
#[derive(Debug, Clone)]
pub(super) struct Item {
    /// Its place among the trace's operations, from 0.
    pub(super) seq: u64,
    /// The operation.
    pub(super) op: Op,
    /// The step it begins, if it begins one.
    pub(super) step: Option<u16>,
    /// What it may grow (charged to the client's allowance as it runs).
    pub(super) growth: Option<Growth>,
}

/// A reading of the trace from its start, for the replay's clients.
pub(super) struct Reading<'a> {
    stream: Stream,
    targets: Targets,
    prepared: &'a Prepared,
}

impl<'a> Reading<'a> {
    /// Starts reading `prepared`'s text again (counting its file records,
    /// which the first reading kept).
    pub(super) fn new(prepared: &'a Prepared) -> Result<Reading<'a>, String> {
        Ok(Reading {
            stream: prepared
                .source
                .stream_counting_files()
                .map_err(|e| e.to_string())?,
            targets: Targets::default(),
            prepared,
        })
    }

    /// The next operation, None after the last or when the replay halts
    /// (looked at every [`crate::trace::format::stream::POLL_LINES`] lines); an error when the text no
    /// longer reads as it did the first time: a record that no longer
    /// parses, more operations, a thread, file, step or direct open the
    /// first reading did not have, a transfer larger than its thread's
    /// buffer, fewer operations, or other bytes in all (its SHA-256).
    pub(super) fn next_item(&mut self, guard: &Guard) -> Result<Option<Item>, String> {
        let parsed = loop {
            let step = self.stream.step().map_err(|e| {
                format!("{e} (the trace changed while it was replayed: its first reading passed)")
            })?;
            match step {
                Step::Op(parsed) => break parsed,
                Step::Paused if guard.halted() => return Ok(None),
                Step::Paused => {}
                Step::End if self.stream.count() != self.prepared.profile.ops => {
                    return Err(self.changed("it has fewer operations than its first reading"))
                }
                Step::End if self.stream.digest() != self.prepared.sha256 => {
                    return Err(self.changed("its text differs from its first reading's"))
                }
                Step::End => return Ok(None),
            }
        };
        let (head, profile) = (&self.prepared.head, &self.prepared.profile);
        let op = parsed.op;
        let direct = matches!(&op.kind, OpKind::Open { flags, .. } if flags.direct);
        let fits = self.stream.count() <= profile.ops
            && self.stream.files() <= head.files.len()
            && parsed
                .step
                .is_none_or(|s| (s as usize) < head.steps.names.len())
            && profile
                .largest
                .get(op.thread as usize)
                .is_some_and(|largest| op.kind.transfer() <= *largest)
            && (profile.direct_io || !direct);
        if !fits {
            return Err(self.changed("its records differ from its first reading's"));
        }
        Ok(Some(Item {
            seq: self.stream.count() - 1,
            growth: self.targets.follow(&op),
            op,
            step: parsed.step,
        }))
    }

    /// The error for a trace that no longer reads as it did: `how`.
    fn changed(&self, how: &str) -> String {
        format!(
            "{}: the trace changed while it was replayed: {how} (at record {})",
            self.prepared.source.name(),
            self.stream.count()
        )
    }
}

/// A replay thread's operations waiting their turn, at most a set number.
pub(super) struct Queue {
    state: Mutex<Waiting>,
    /// Signalled when an operation comes or the reading ends.
    filled: Condvar,
    /// Signalled when one is taken.
    emptied: Condvar,
    capacity: usize,
}

struct Waiting {
    items: VecDeque<Item>,
    /// The reading has ended: nothing more will come.
    closed: bool,
    /// The thread is waiting for an operation (so a push wakes it; a
    /// wake-up nobody waits for would still be a system call).
    taker_waits: bool,
    /// The dispatcher is waiting for room.
    giver_waits: bool,
}

impl Queue {
    pub(super) fn new(capacity: usize) -> Queue {
        Queue {
            state: Mutex::new(Waiting {
                items: VecDeque::with_capacity(capacity),
                closed: false,
                taker_waits: false,
                giver_waits: false,
            }),
            filled: Condvar::new(),
            emptied: Condvar::new(),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds `item` once there is room; false when the replay halts first.
    fn push(&self, item: Item, guard: &Guard) -> bool {
        let mut w = self.lock();
        while w.items.len() >= self.capacity {
            if guard.halted() {
                return false;
            }
            w.giver_waits = true;
            w = wait_a_poll(&self.emptied, w);
            w.giver_waits = false;
        }
        w.items.push_back(item);
        if w.taker_waits {
            self.filled.notify_one();
        }
        true
    }

    /// Moves every operation waiting into `into` (after what it holds),
    /// waiting for one if there is none; false once the reading has ended
    /// and all are taken, or when the replay halts. Taking them all at once
    /// takes the lock once for many.
    fn take_all(&self, into: &mut VecDeque<Item>, guard: &Guard) -> bool {
        let mut w = self.lock();
        loop {
            if !w.items.is_empty() {
                into.append(&mut w.items);
                if w.giver_waits {
                    self.emptied.notify_one();
                }
                return true;
            }
            if w.closed || guard.halted() {
                return false;
            }
            w.taker_waits = true;
            w = wait_a_poll(&self.filled, w);
            w.taker_waits = false;
        }
    }

    /// Nothing more will come.
    fn close(&self) {
        self.lock().closed = true;
        self.filled.notify_all();
    }
}

/// Operations queued for all the replay's threads together, at most
/// (about 100 bytes each, up to 4 KiB more with a symlink's target; a
/// thread holds as many again that it took from its queue): each thread's
/// queue holds its share, from 16 to 1,024.
const QUEUED: usize = 1 << 14;

/// The capacity of each queue of a replay of `threads` threads in all.
pub(super) fn queue_capacity(threads: usize) -> usize {
    (QUEUED / threads.max(1)).clamp(16, 1024)
}

/// What the reader hands one client's operations to: its threads' queues
/// and its cross-thread order (with more than one thread).
pub(super) struct Client<'a> {
    pub(super) queues: &'a [Queue],
    pub(super) order: Option<&'a Order>,
}

/// Operations read before they are handed out together (one lock of each
/// client's order for all of them).
const BATCH: usize = 64;

/// Reads the trace through, handing each operation to its thread's queue
/// in every client (noted in the client's order first, a batch at a time);
/// stops at the end, when the replay halts, or, halting it, when the text
/// no longer reads as before. Every queue is closed at the end.
///
/// Operations are handed out in the trace's order, so a thread waiting for
/// its turn waits only for operations already handed out: reading ahead
/// can never hold back one that another waits for.
pub(super) fn dispatch(reading: Result<Reading, String>, clients: &[Client], guard: &Guard) {
    let _closing = Closing { clients, guard };
    let halt = |why: String| guard.halt(Halt::Failed(why));
    let mut batch: Vec<Item> = Vec::with_capacity(BATCH);
    match reading {
        Err(e) => halt(e),
        Ok(mut reading) => loop {
            let end = loop {
                match reading.next_item(guard) {
                    Ok(Some(item)) => {
                        batch.push(item);
                        if batch.len() == BATCH {
                            break false;
                        }
                    }
                    Ok(None) => break true,
                    Err(e) => {
                        halt(e);
                        break true;
                    }
                }
            };
            if !hand_out(&mut batch, clients, guard) {
                halt(reading.changed("its records differ from its first reading's"));
            }
            if end || guard.halted() {
                break;
            }
        },
    }
}

/// Closes every client's queues when the reading ends, however it ends:
/// should the reader unwind, it halts the replay too, so no thread waits
/// for operations that will not come.
struct Closing<'a> {
    clients: &'a [Client<'a>],
    guard: &'a Guard<'a>,
}

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.guard
                .halt(Halt::Failed("the trace's reader died".into()));
        }
        for client in self.clients {
            for q in client.queues {
                q.close();
            }
        }
    }
}

/// Hands the operations of `batch` to every client (the last takes them,
/// the others copies), emptying it; false when one names a thread the
/// first reading did not have.
fn hand_out(batch: &mut Vec<Item>, clients: &[Client], guard: &Guard) -> bool {
    let lanes = clients.first().map_or(0, |c| c.queues.len());
    let lane = |i: &Item| if lanes == 1 { 0 } else { i.op.thread as usize };
    if batch.iter().any(|i| lane(i) >= lanes) {
        batch.clear();
        return false;
    }
    for (k, client) in clients.iter().enumerate() {
        if let Some(order) = client.order {
            order.handed_out(batch);
        }
        let items: Vec<Item> = if k + 1 == clients.len() {
            std::mem::take(batch)
        } else {
            batch.clone()
        };
        for item in items {
            if !client.queues[lane(&item)].push(item, guard) {
                batch.clear();
                return true;
            }
        }
    }
    true
}

/// Where a replay thread gets its operations.
pub(super) enum Feed<'a> {
    /// It reads the trace itself (its client's only thread).
    Direct(Box<Reading<'a>>),
    /// From its queue, which the reader fills, through what it took from
    /// it last.
    Queued(&'a Queue, VecDeque<Item>),
}

impl Feed<'_> {
    /// The next operation; None at the end or when the replay halts (a
    /// trace that no longer reads as before halts it).
    pub(super) fn next(&mut self, guard: &Guard) -> Option<Item> {
        match self {
            Feed::Queued(queue, taken) => {
                if taken.is_empty() && !queue.take_all(taken, guard) {
                    return None;
                }
                taken.pop_front()
            }
            Feed::Direct(reading) => match reading.next_item(guard) {
                Ok(item) => item,
                Err(e) => {
                    guard.halt(Halt::Failed(e));
                    None
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::stream::Source;
    use crate::trace::format::Trace;

    const TEXT: &str = "plumb-trace 2\nduration_us 10\nfile 0 f 100 a\nthread 0 1\n\
                        op 0 0 1 open 0 0 rw,append\nop 0 1 1 write 0 0 10\nop 0 2 1 close 0\nend 3\n";

    /// A reading that is never stopped.
    fn read(source: Source) -> Prepared {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        Prepared::read(source, &plumb_base::halt::Halt::new(stop, None)).unwrap()
    }

    /// Reads `prepared` to its end: the items, or the first error.
    fn read_all(prepared: &Prepared) -> Result<Vec<Item>, String> {
        let stop = std::sync::atomic::AtomicBool::new(false);
        let guard = Guard::new(crate::trace::halt::Bounds {
            stop: &stop,
            deadline: None,
            max_bytes: 0,
        });
        let mut r = Reading::new(prepared)?;
        let mut items = Vec::new();
        while let Some(i) = r.next_item(&guard)? {
            items.push(i);
        }
        Ok(items)
    }

    #[test]
    fn each_operation_comes_with_its_place_and_growth() {
        let p = read(Source::memory("t", TEXT));
        let items = read_all(&p).unwrap();
        let seqs: Vec<u64> = items.iter().map(|i| i.seq).collect();
        assert_eq!(seqs, [0, 1, 2]);
        assert_eq!(items[1].growth, Some(Growth::By { file: 0, len: 10 }));
        assert_eq!(items[2].growth, None);
    }

    #[test]
    fn a_trace_that_changed_since_its_first_reading_is_stopped() {
        let first = read(Source::memory("t", TEXT));
        let changed = [
            // One more operation.
            TEXT.replace(
                "op 0 2 1 close 0\nend 3",
                "op 0 2 1 write 0 0 10\nop 0 3 1 close 0\nend 4",
            ),
            // A larger transfer than the buffers were sized for.
            TEXT.replace("write 0 0 10", "write 0 0 10000000"),
            // Fewer operations.
            TEXT.replace(
                "op 0 1 1 write 0 0 10\nop 0 2 1 close 0\nend 3",
                "op 0 2 1 close 0\nend 2",
            ),
            // Another file.
            TEXT.replace("thread 0 1", "file 1 f 100 b\nthread 0 1"),
            // A direct open the first reading did not have (the pack may
            // not have declared direct I/O).
            TEXT.replace("open 0 0 rw,append", "open 0 0 rw,append,direct"),
            // The same operations, other bytes.
            TEXT.replace("duration_us 10", "duration_us 10\n# changed"),
        ];
        for text in changed {
            Trace::parse("t", &text).expect("a valid trace");
            let p = Prepared {
                head: first.head.clone(),
                profile: first.profile.clone(),
                source: Source::memory("t", text.as_str()),
                sha256: first.sha256.clone(),
            };
            let e = read_all(&p).unwrap_err();
            assert!(
                e.contains("the trace changed while it was replayed"),
                "{e}\n{text}"
            );
        }
    }
}
