//! The pacing a job asks for beyond its rate, in one place the hot loop
//! consults only when the job has any: think time, its flow's share, and
//! its minimum rates. A job without them has no `Pace` and pays one
//! pointer check per I/O.

use crate::job::spec::{Dir, JobSpec};
use crate::runner::jobstats::JobStats;
use crate::workload::{Flow, MinRate, Think};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// A job's think time, flow membership and minimum-rate check.
pub(super) struct Pace {
    think: Option<Think>,
    flow: Option<Flow>,
    min_rate: Option<MinRate>,
    /// A think-time stall is due once the queue drains.
    think_due: bool,
    /// The flow held the last I/O back.
    flow_held: bool,
}

impl Pace {
    /// The pacing of `job` from `start`, in `flow` if it is in one; none
    /// when it has none.
    pub(super) fn new(job: &JobSpec, flow: Option<Flow>, start: Instant) -> Option<Box<Pace>> {
        let p = &job.pacing;
        let pace = Pace {
            think: Think::new(p, start),
            flow,
            min_rate: MinRate::new(p, start),
            think_due: false,
            flow_held: false,
        };
        (pace.think.is_some() || pace.flow.is_some() || pace.min_rate.is_some())
            .then(|| Box::new(pace))
    }

    /// True when the next I/O may be queued now: no stall is due, and the
    /// job is within its flow's share (the I/O is then counted in it).
    #[inline]
    pub(super) fn may_issue(&mut self) -> bool {
        if self.think_due {
            return false;
        }
        if let Some(f) = &mut self.flow {
            self.flow_held = f.ahead();
            return !self.flow_held;
        }
        true
    }

    /// Notes an I/O queued at `now`.
    #[inline]
    pub(super) fn issued(&mut self, now: Instant) {
        if let Some(t) = &mut self.think {
            self.think_due |= t.on_issue(now);
        }
    }

    /// Notes `n` completions at `now`, and checks the minimum rates over
    /// the measured phase's counts: a miss is the job's error (fio: EIO).
    pub(super) fn completed(&mut self, n: u64, now: Instant, stats: &mut JobStats, job: &JobSpec) {
        if let Some(t) = &mut self.think {
            self.think_due |= t.on_complete(n, now);
        }
        if let Some(m) = &mut self.min_rate {
            for dir in Dir::BOTH {
                let s = &stats.dirs[dir.index()];
                if let Err(miss) = m.check(dir, now, s.bytes, s.ios) {
                    if stats.error.is_none() {
                        stats.errno = libc::EIO;
                        stats.error = Some(format!("{}: {miss}", job.name));
                    }
                }
            }
        }
    }

    /// The measured phase begins at `now`: the minimum rates count from there.
    pub(super) fn restart(&mut self, now: Instant) {
        if let Some(m) = &mut self.min_rate {
            m.restart(now);
        }
    }

    /// True when the job waits with its queue drained: a stall is due or
    /// the flow holds it back.
    pub(super) fn waiting(&self) -> bool {
        self.think_due || self.flow_held
    }

    /// Waits with the queue drained: the think-time stall (never past
    /// `deadline`), or the flow's sleep. Returns the time it ended.
    pub(super) fn wait(&mut self, deadline: Option<Instant>, stop: &AtomicBool) -> Instant {
        if self.think_due {
            self.think_due = false;
            if let Some(t) = &mut self.think {
                return t.stall(deadline, stop);
            }
        }
        if self.flow_held {
            self.flow_held = false;
            let sleep = self.flow.as_ref().map_or(Duration::ZERO, |f| f.sleep);
            if sleep.is_zero() {
                // fio retries at once; a yield lets the other jobs of the
                // flow run on a busy machine.
                std::thread::yield_now();
            } else {
                let cap = deadline
                    .map(|t| t.saturating_duration_since(Instant::now()))
                    .unwrap_or(sleep);
                std::thread::sleep(sleep.min(cap).min(Duration::from_millis(50)));
            }
        }
        Instant::now()
    }
}
