//! `thinktime`: the job stalls after every `thinktime_blocks` I/Os (issued
//! or completed) or every `thinktime_iotime` of I/O, spinning on the CPU for
//! `thinktime_spin` and sleeping the rest, as fio's `handle_thinktime`.

use crate::job::spec::{Pacing, ThinkCount};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest single sleep of a stall: the stop flag is polled between.
const SLICE: Duration = Duration::from_millis(20);

/// A job's think-time state.
#[derive(Debug, Clone)]
pub struct Think {
    thinktime: Duration,
    spin: Duration,
    /// I/Os between stalls (0: only `iotime` triggers).
    blocks: u64,
    /// Count issued I/Os (else completed ones).
    by_issue: bool,
    /// Stall after this much I/O time (zero: never).
    iotime: Duration,
    /// I/Os issued and completed so far.
    issued: u64,
    completed: u64,
    /// The counted I/Os at the last stall.
    at_last: u64,
    /// When the last stall ended (or the job began).
    since: Instant,
}

impl Think {
    /// The think-time state of a job that has one, from `start`.
    pub fn new(p: &Pacing, start: Instant) -> Option<Think> {
        p.thinks().then(|| Think {
            thinktime: p.thinktime,
            spin: p.thinktime_spin,
            // fio: 1 by default, except that thinktime_iotime alone does
            // not stall after every block.
            blocks: match p.thinktime_blocks {
                Some(b) => u64::from(b),
                None if !p.thinktime_iotime.is_zero() => 0,
                None => 1,
            },
            by_issue: p.thinktime_blocks_type == ThinkCount::Issue,
            iotime: p.thinktime_iotime,
            issued: 0,
            completed: 0,
            at_last: 0,
            since: start,
        })
    }

    fn counted(&self) -> u64 {
        if self.by_issue {
            self.issued
        } else {
            self.completed
        }
    }

    /// Notes an I/O issued; true when a stall is due.
    pub fn on_issue(&mut self, now: Instant) -> bool {
        self.issued += 1;
        self.due(now)
    }

    /// Notes `n` I/Os completed; true when a stall is due.
    pub fn on_complete(&mut self, n: u64, now: Instant) -> bool {
        self.completed += n;
        self.due(now)
    }

    /// True when the blocks or the I/O time since the last stall reached
    /// their count.
    fn due(&self, now: Instant) -> bool {
        (self.blocks > 0 && self.counted() >= self.at_last.saturating_add(self.blocks))
            || (!self.iotime.is_zero() && now.saturating_duration_since(self.since) >= self.iotime)
    }

    /// Stalls (the queue is drained): spins `thinktime_spin`, sleeps the
    /// rest of `thinktime`, never past `deadline`, and returns early when
    /// `stop` is raised. Returns when it ended.
    pub fn stall(&mut self, deadline: Option<Instant>, stop: &AtomicBool) -> Instant {
        let begin = Instant::now();
        let cap = |d: Duration| match deadline {
            Some(t) => d.min(t.saturating_duration_since(begin)),
            None => d,
        };
        let spin_until = begin + cap(self.spin);
        while Instant::now() < spin_until {
            std::hint::spin_loop();
        }
        let end = begin + cap(self.thinktime);
        loop {
            let now = Instant::now();
            if now >= end || stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep((end - now).min(SLICE));
        }
        let now = Instant::now();
        self.at_last = self.counted();
        self.since = now;
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacing(blocks: Option<u32>, kind: ThinkCount, iotime_ms: u64) -> Pacing {
        Pacing {
            thinktime: Duration::from_millis(2),
            thinktime_blocks: blocks,
            thinktime_blocks_type: kind,
            thinktime_iotime: Duration::from_millis(iotime_ms),
            ..Pacing::default()
        }
    }

    #[test]
    fn blocks_count_issues_or_completions() {
        let t0 = Instant::now();
        let mut t = Think::new(&pacing(Some(4), ThinkCount::Complete, 0), t0).unwrap();
        for _ in 0..8 {
            assert!(!t.on_issue(t0));
        }
        assert!(!t.on_complete(3, t0));
        assert!(t.on_complete(1, t0));
        let stop = AtomicBool::new(false);
        let end = t.stall(None, &stop);
        assert!(end - t0 >= Duration::from_millis(2));
        assert!(!t.on_complete(3, t0));
        assert!(t.on_complete(1, t0));

        let mut t = Think::new(&pacing(None, ThinkCount::Issue, 0), t0).unwrap();
        assert!(t.on_issue(t0), "one block by default");
        assert!(Think::new(&Pacing::default(), t0).is_none());
    }

    #[test]
    fn iotime_alone_ignores_blocks() {
        let t0 = Instant::now();
        let mut t = Think::new(&pacing(None, ThinkCount::Complete, 100), t0).unwrap();
        assert!(!t.on_complete(1000, t0 + Duration::from_millis(50)));
        assert!(t.on_complete(1, t0 + Duration::from_millis(100)));
    }

    #[test]
    fn a_stall_ends_at_the_deadline() {
        let t0 = Instant::now();
        let mut p = pacing(None, ThinkCount::Complete, 0);
        p.thinktime = Duration::from_secs(10);
        let mut t = Think::new(&p, t0).unwrap();
        let end = t.stall(
            Some(t0 + Duration::from_millis(30)),
            &AtomicBool::new(false),
        );
        assert!(end - t0 < Duration::from_secs(1));
    }
}
