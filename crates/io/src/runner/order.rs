//! When the jobs of a stonewalled set start and stop relative to each
//! other: `startdelay` (after the run began), `wait_for` (after every clone
//! of another job ended), and `exitall` / `exitall_on_error` with
//! `exit_what` (a job's end stops the others), as fio's `run_threads` and
//! `fio_terminate_threads`.

use crate::job::spec::{ExitWhat, JobSpec};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How often a waiting clone looks at its waitee and its stop flag.
const POLL: Duration = Duration::from_millis(2);

/// The start and stop state of one member (a job) of a set.
struct Member<'a> {
    job: &'a JobSpec,
    /// Reporting group.
    group: u32,
    /// Stops every clone of the job (the set's stop, or an `exitall`).
    stop: AtomicBool,
    /// Some clone has begun its I/O.
    started: AtomicBool,
    /// Clones not yet ended (started or not).
    running: AtomicU32,
    /// The member whose end this one waits for (`wait_for` in this set).
    waitee: Option<usize>,
}

/// The start order and exits of one set's members.
pub(super) struct SetOrder<'a> {
    members: Vec<Member<'a>>,
    /// Some job of the run has `exitall` (fio: it applies to every job).
    exitall: bool,
    /// When the run began: `startdelay` counts from there.
    run_start: Instant,
    /// Raised by `exit_what=all`: no later set runs.
    halt: &'a AtomicBool,
}

impl<'a> SetOrder<'a> {
    /// The order of a set of `(job, group, clones)` members; `exitall` when
    /// any job of the run has it.
    pub(super) fn new(
        members: &[(&'a JobSpec, u32, u32)],
        exitall: bool,
        run_start: Instant,
        halt: &'a AtomicBool,
    ) -> SetOrder<'a> {
        let members = members
            .iter()
            .enumerate()
            .map(|(i, &(job, group, clones))| Member {
                job,
                group,
                stop: AtomicBool::new(false),
                started: AtomicBool::new(false),
                running: AtomicU32::new(clones),
                // fio: the waitee is defined before the waiter, by name.
                waitee: job
                    .pacing
                    .wait_for
                    .as_deref()
                    .and_then(|w| members[..i].iter().rposition(|(j, _, _)| j.name == w)),
            })
            .collect();
        SetOrder {
            members,
            exitall,
            run_start,
            halt,
        }
    }

    /// The stop flag clones of member `i` watch.
    pub(super) fn stop_of(&self, i: usize) -> &AtomicBool {
        &self.members[i].stop
    }

    /// Raises every member's stop flag (a signal, a failed start).
    pub(super) fn stop_all(&self) {
        for m in &self.members {
            m.stop.store(true, Ordering::Relaxed);
        }
    }

    /// True when member `i` starts with the set: no start delay, no waitee.
    pub(super) fn starts_at_once(&self, i: usize) -> bool {
        let m = &self.members[i];
        m.waitee.is_none() && m.job.pacing.startdelay.1.is_zero()
    }

    /// Waits until clone `clone` of member `i` may start: its start delay
    /// has passed and its waitee has ended. False when it was stopped
    /// first (it never starts).
    pub(super) fn wait_turn(&self, i: usize, clone_seed: u64) -> bool {
        let m = &self.members[i];
        let (lo, hi) = m.job.pacing.startdelay;
        let delay = if hi > lo {
            let ns = SmallRng::seed_from_u64(clone_seed)
                .random_range(lo.as_nanos() as u64..=hi.as_nanos() as u64);
            Duration::from_nanos(ns)
        } else {
            lo
        };
        let start_at = self.run_start.checked_add(delay);
        loop {
            if m.stop.load(Ordering::Relaxed) {
                return false;
            }
            let delayed = start_at.is_none_or(|t| Instant::now() < t);
            let fenced = m
                .waitee
                .is_some_and(|w| self.members[w].running.load(Ordering::Acquire) > 0);
            if !delayed && !fenced {
                m.started.store(true, Ordering::Relaxed);
                return true;
            }
            std::thread::sleep(POLL);
        }
    }

    /// A clone of member `i` was stopped before its turn: it never ran.
    pub(super) fn skipped(&self, i: usize) {
        self.members[i].running.fetch_sub(1, Ordering::Release);
    }

    /// A clone of member `i` ended (`failed`: in error): with `exitall`, or
    /// `exitall_on_error` after an error, it stops what its `exit_what` names.
    pub(super) fn ended(&self, i: usize, failed: bool) {
        let m = &self.members[i];
        m.running.fetch_sub(1, Ordering::Release);
        if !(self.exitall || (m.job.pacing.exitall_on_error && failed)) {
            return;
        }
        for other in &self.members {
            let stop = match m.job.pacing.exit_what {
                ExitWhat::Group => other.group == m.group,
                // Those running: a job still waiting for its turn starts later.
                ExitWhat::Stonewall => other.started.load(Ordering::Relaxed),
                ExitWhat::All => true,
            };
            if stop {
                other.stop.store(true, Ordering::Relaxed);
            }
        }
        if m.job.pacing.exit_what == ExitWhat::All {
            self.halt.store(true, Ordering::Relaxed);
        }
    }
}

/// The clones of a set that start together, released together once each
/// has set up (opened files, allocated buffers), as fio's threads wait for
/// each other before their first I/O: jobs measured side by side (a flow,
/// `exitall`) start their clocks at the same time.
#[derive(Debug)]
pub struct StartGate {
    /// Clones not yet arrived.
    waiting: AtomicU32,
    /// When the last clone arrived: the start of every clone's clock, so
    /// their runtimes end at the same instant.
    released: std::sync::OnceLock<Instant>,
}

impl StartGate {
    /// A gate for `clones` clones.
    pub(super) fn new(clones: u32) -> StartGate {
        StartGate {
            waiting: AtomicU32::new(clones),
            released: std::sync::OnceLock::new(),
        }
    }
}

/// What a clone takes into its thread when its turn comes: its flow, and
/// the gate it waits at before its first I/O. Dropped without
/// [`Cue::ready`] (a clone that failed to set up), it still arrives, so
/// the others go on.
#[derive(Debug)]
pub struct Cue<'a> {
    /// The clone's membership in its flow.
    pub flow: Option<crate::workload::Flow>,
    gate: Option<&'a StartGate>,
}

impl<'a> Cue<'a> {
    /// A cue with `flow`, waiting at `gate` if it starts with the set.
    pub(super) fn new(flow: Option<crate::workload::Flow>, gate: Option<&'a StartGate>) -> Self {
        Cue { flow, gate }
    }

    /// Arrives at the gate and waits until every clone of it has arrived
    /// (or `stop` is raised); returns the flow and, for a clone of the gate,
    /// the instant the gate opened (the clone's clock starts there).
    pub fn ready(mut self, stop: &AtomicBool) -> (Option<crate::workload::Flow>, Option<Instant>) {
        let mut opened = None;
        if let Some(gate) = self.gate.take() {
            if gate.waiting.fetch_sub(1, Ordering::AcqRel) == 1 {
                let _ = gate.released.set(Instant::now());
            }
            while gate.released.get().is_none() && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_micros(50));
            }
            opened = gate.released.get().copied();
        }
        (self.flow.take(), opened)
    }
}

impl Drop for Cue<'_> {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            if gate.waiting.fetch_sub(1, Ordering::AcqRel) == 1 {
                let _ = gate.released.set(Instant::now());
            }
        }
    }
}
