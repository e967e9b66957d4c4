//! Work running in the background while the scenario goes on: `io::start`,
//! `fs::start_copy`, `cpu::start` and `net::start_throughput` each start a
//! [`Task`] and return at once; its handle (`wait`, `stop`, `progress`,
//! `done`) is typed by what the work returns.
//!
//! A task counts against the pack's threads (while it runs) and byte budget
//! (charged before it starts), stops with the scenario's stop flag and at
//! its deadline, and is stopped and joined when the scenario ends — a task
//! never waited on is stopped then and its result kept with a note — so no
//! work outlives its scenario or its run directory. Stopping a task early
//! gives its result so far, not an error.

use super::clock::Clock;
use super::{ApiError, Host};
use crate::halt::Halt;
use crate::meter::Meter;
use crate::runner::live::{LiveProgress, LiveTotals};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most background tasks one scenario may start.
pub const MAX_BACKGROUND_TASKS: usize = 64;

/// The most threads the background tasks of one scenario may run at once
/// (whatever the pack declares).
pub const MAX_BACKGROUND_THREADS: u32 = 4096;

/// How often a task's meter is sampled for its progress.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// What the work of a task is given on its thread.
#[derive(Debug, Clone)]
pub struct TaskContext {
    /// Raised by the task's `stop` (or at the scenario's end).
    pub stop: Arc<AtomicBool>,
    /// The scenario's stop flag (a signal).
    pub scenario_stop: Arc<AtomicBool>,
    /// The scenario's deadline.
    pub deadline: Instant,
    /// Where the work counts what it has done, for `progress`.
    pub meter: Arc<Meter>,
    /// Where `progress` reads its figures from.
    pub live: Arc<LiveTotals>,
    /// The scenario's clock, to stamp the result with when it ran.
    pub clock: Clock,
}

impl TaskContext {
    /// Either stop flag and the deadline: whatever ends the work early.
    pub fn halt(&self) -> Halt {
        Halt::new(self.scenario_stop.clone(), Some(self.deadline)).or_on(self.stop.clone())
    }

    /// Either stop flag, without the deadline (for work whose own length
    /// is already capped at it).
    pub fn stops(&self) -> Halt {
        Halt::new(self.scenario_stop.clone(), None).or_on(self.stop.clone())
    }
}

/// What a task's kind does with its result on the scenario's side.
#[derive(Debug, Clone, Copy)]
pub struct TaskKind<T> {
    /// The operation that started it, in messages (`io::start`, …).
    pub op: &'static str,
    /// Called once with the result when it is first collected (a job's
    /// result goes into the scenario's report).
    pub on_result: fn(&mut Host, &T),
    /// The result in a few words, for the note of a task never waited on.
    pub describe: fn(&T) -> String,
}

/// A task running in the background, as scripts and guests hold it.
#[derive(Debug)]
pub struct Task<T> {
    slot: Arc<Mutex<Slot<T>>>,
}

impl<T> Clone for Task<T> {
    fn clone(&self) -> Self {
        Task {
            slot: self.slot.clone(),
        }
    }
}

#[derive(Debug)]
struct Slot<T> {
    kind: TaskKind<T>,
    name: String,
    threads: u32,
    stop: Arc<AtomicBool>,
    live: Arc<LiveTotals>,
    thread: Option<JoinHandle<Result<T, ApiError>>>,
    /// The result once joined (kept: `wait` again gives it again; an error
    /// again by its message).
    outcome: Option<Result<T, String>>,
}

impl<T> Slot<T> {
    /// True while its threads may still run.
    fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

fn lock<T>(slot: &Mutex<T>) -> MutexGuard<'_, T> {
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

/// A task of any kind, as the scenario's list of them holds it.
trait Running: Send + std::fmt::Debug {
    /// Threads it uses while it runs (0 once it has ended).
    fn threads(&self) -> u32;
    /// Raises its stop flag.
    fn raise(&self);
    /// Joins its thread, dropping what it returns.
    fn join(&self);
    /// Collects it at the scenario's end: when it was never waited on, a
    /// note, and whether it had failed (not merely been stopped).
    fn end(&self, host: &mut Host) -> Option<(String, bool)>;
    /// True once its result was collected and its thread joined: the
    /// scenario's list need not hold it any more.
    fn collected(&self) -> bool;
}

impl<T: Clone + Send + std::fmt::Debug + 'static> Running for Task<T> {
    fn threads(&self) -> u32 {
        let s = lock(&self.slot);
        if s.running() {
            s.threads
        } else {
            0
        }
    }

    fn raise(&self) {
        lock(&self.slot).stop.store(true, Ordering::Relaxed);
    }

    fn join(&self) {
        let thread = lock(&self.slot).thread.take();
        if let Some(t) = thread {
            let _ = t.join();
        }
    }

    fn end(&self, host: &mut Host) -> Option<(String, bool)> {
        if self.collected() {
            return None;
        }
        let (op, name, describe) = {
            let s = lock(&self.slot);
            (s.kind.op, s.name.clone(), s.kind.describe)
        };
        let (what, failed) = match self.finish(host) {
            Ok(r) => (format!("its result so far: {}", describe(&r)), false),
            Err(e) => (format!("it failed: {e}"), true),
        };
        // The name is the scenario's text: a note stays within its bound.
        let name: String = name.chars().take(200).collect();
        let note =
            format!("{op} '{name}' was not waited on: stopped at the end of the scenario; {what}");
        Some((
            note.chars()
                .take(crate::api::report::MAX_NOTE_LEN / 4)
                .collect(),
            failed,
        ))
    }

    fn collected(&self) -> bool {
        let s = lock(&self.slot);
        s.outcome.is_some() && s.thread.is_none()
    }
}

/// The background tasks of one scenario.
#[derive(Debug, Default)]
pub struct Background {
    tasks: Vec<Box<dyn Running>>,
}

impl Background {
    /// Threads the tasks still running use.
    pub fn threads(&self) -> u32 {
        self.tasks
            .iter()
            .fold(0u32, |n, t| n.saturating_add(t.threads()))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.raise();
        }
        for t in &self.tasks {
            t.join();
        }
    }
}

impl Host {
    /// Starts `work` on a thread of its own as a task named `name` using
    /// `threads` threads, and returns at once. Whatever the work needs of
    /// the scenario (capabilities, budget, files) is checked and taken
    /// before this call; the work gets the stop flags, the deadline and a
    /// meter for its progress.
    pub fn spawn_task<T: Clone + Send + std::fmt::Debug + 'static>(
        &mut self,
        kind: TaskKind<T>,
        name: &str,
        threads: u32,
        work: impl FnOnce(&TaskContext) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<Task<T>, ApiError> {
        self.task_room(kind.op, name, threads)?;
        let op = kind.op;
        let ctx = TaskContext {
            stop: Arc::new(AtomicBool::new(false)),
            scenario_stop: self.stop_flag().clone(),
            deadline: Instant::now() + self.time_left(),
            meter: Arc::default(),
            live: Arc::default(),
            clock: self.clock(),
        };
        let (stop, live) = (ctx.stop.clone(), ctx.live.clone());
        let thread =
            crate::gate::thread(format!("bg-{}", name.chars().take(12).collect::<String>()))
                .spawn(move || sampled(op, &ctx, work))
                .map_err(|e| ApiError::Failed {
                    op,
                    message: format!("cannot start a thread for '{name}': {e}"),
                })?;
        let task = Task {
            slot: Arc::new(Mutex::new(Slot {
                kind,
                name: name.to_string(),
                threads,
                stop,
                live,
                thread: Some(thread),
                outcome: None,
            })),
        };
        self.background.tasks.push(Box::new(task.clone()));
        Ok(task)
    }

    /// Fails when one more task of `threads` threads would pass the
    /// background limits (checked before anything is charged for it).
    pub fn task_room(&mut self, op: &str, name: &str, threads: u32) -> Result<(), ApiError> {
        // Tasks waited on or stopped are done with: only the others count.
        self.background.tasks.retain(|t| !t.collected());
        if self.background.tasks.len() >= MAX_BACKGROUND_TASKS {
            return Err(ApiError::Invalid(format!(
                "{op}: a scenario may have at most {MAX_BACKGROUND_TASKS} background tasks not yet waited on or stopped"
            )));
        }
        let busy = self.background_threads();
        if busy.saturating_add(threads) > MAX_BACKGROUND_THREADS {
            return Err(ApiError::Invalid(format!(
                "{op}: '{name}' needs {threads} threads beside the {busy} background tasks hold; at most {MAX_BACKGROUND_THREADS} run in the background"
            )));
        }
        Ok(())
    }

    /// Threads of background tasks still running (they count against the
    /// pack's `threads` beside a new operation's).
    pub fn background_threads(&self) -> u32 {
        self.background.threads()
    }

    /// Stops every background task not waited on, keeps their results with
    /// a note each, and joins every thread: called when the scenario ends,
    /// however it ends. Returns the note of the first such task that had
    /// failed (not merely been stopped): the scenario fails with it.
    pub fn end_background(&mut self) -> Option<String> {
        let tasks = std::mem::take(&mut self.background.tasks);
        for t in &tasks {
            t.raise();
        }
        let mut first_failure = None;
        for t in &tasks {
            if let Some((note, failed)) = t.end(self) {
                let _ = self.note(&note);
                if failed && first_failure.is_none() {
                    first_failure = Some(note);
                }
            }
        }
        first_failure
    }
}

/// Runs `work`, sampling its meter into its live totals every 50 ms until
/// it returns (work that publishes its own totals leaves the meter alone),
/// then records the final totals. The sampler ends however the work ends,
/// a panic included (the panic then fails the task's thread). When no
/// sampler can be started, the work does not start either (`op` names it).
fn sampled<T>(
    op: &'static str,
    ctx: &TaskContext,
    work: impl FnOnce(&TaskContext) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    /// Raises the flag when dropped: on return and on unwinding alike.
    struct Raise<'a>(&'a AtomicBool);
    impl Drop for Raise<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let done = AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        crate::gate::thread("bg-sampler")
            .spawn_scoped(s, || {
                while !done.load(Ordering::Relaxed) {
                    if let Some((ios, bytes)) = ctx.meter.totals() {
                        ctx.live.record(ios, bytes);
                    }
                    std::thread::sleep(SAMPLE_EVERY);
                }
            })
            .map_err(|e| ApiError::Failed {
                op,
                message: format!("cannot start the task's progress thread: {e}"),
            })?;
        let _raise = Raise(&done);
        work(ctx)
    });
    // The sampler has been joined: nothing older comes after these.
    if let Some((ios, bytes)) = ctx.meter.totals() {
        ctx.live.record(ios, bytes);
    }
    r
}

impl<T: Clone + Send + std::fmt::Debug + 'static> Task<T> {
    /// The task's name.
    pub fn name(&self) -> String {
        lock(&self.slot).name.clone()
    }

    /// True once the task has ended (on its own or stopped).
    pub fn done(&self) -> bool {
        let s = lock(&self.slot);
        s.outcome.is_some() || !s.running()
    }

    /// What it has done so far: totals and rates since its start and over
    /// the last second (and a job's latency percentiles).
    pub fn progress(&self) -> LiveProgress {
        lock(&self.slot).live.snapshot()
    }

    /// Waits for the task to end; its result.
    pub fn wait(&self, host: &mut Host) -> Result<T, ApiError> {
        self.finish(host)
    }

    /// Stops the task early; its result so far.
    pub fn stop(&self, host: &mut Host) -> Result<T, ApiError> {
        lock(&self.slot).stop.store(true, Ordering::Relaxed);
        self.finish(host)
    }

    /// Joins the thread once and keeps its result; the kind's `on_result`
    /// sees it the first time. The slot is not locked while joining or
    /// while `on_result` works with the host.
    fn finish(&self, host: &mut Host) -> Result<T, ApiError> {
        let (op, name, on_result, thread) = {
            let mut s = lock(&self.slot);
            match &s.outcome {
                Some(Ok(r)) => return Ok(r.clone()),
                Some(Err(message)) => {
                    return Err(ApiError::Failed {
                        op: s.kind.op,
                        message: message.clone(),
                    })
                }
                None => {}
            }
            (s.kind.op, s.name.clone(), s.kind.on_result, s.thread.take())
        };
        let outcome = match thread.map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) | None => Err(ApiError::Failed {
                op,
                message: format!("'{name}': the task's thread failed"),
            }),
        };
        if let Ok(r) = &outcome {
            on_result(host, r);
        }
        // A result the report refused (the result file's limits) fails the task.
        let outcome = match host.report.take_refusal() {
            Some(message) => Err(ApiError::Failed { op, message }),
            None => outcome,
        };
        lock(&self.slot).outcome = Some(
            outcome
                .as_ref()
                .map(Clone::clone)
                .map_err(ToString::to_string),
        );
        outcome
    }
}
