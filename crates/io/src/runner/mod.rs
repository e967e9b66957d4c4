//! Running jobs: plan files, check space, lay out, run each stonewalled set of
//! jobs in parallel threads, and gather results per reporting group.
//!
//! [`prepare`] (or [`prepare_in`] for a run directory) plans and checks
//! `JobSpec`s without writing; [`PreparedRun::run`] lays out and runs them
//! and returns a [`RunReport`] with [`JobResult`]s.

pub mod activity;
pub mod iolog;
mod jobstats;
pub mod live;
pub mod logs;
mod order;
pub mod placement;
mod progress;
pub mod steady;
mod verify;
mod worker;

pub use jobstats::JobStats;
pub use worker::{LiveCounters, WorkerPlan};

use crate::engine;
use crate::files::{self, FileError, FilePlan, FileSpace, Layout, StopReason};
use crate::job::spec::JobSpec;
use crate::metrics::JobFigures;
use crate::model::run::{DirSpan, GroupReport, RunReport};
use crate::stats::DiskSnapshot;
use crate::units::format_bytes_binary;
use crate::workload::Flows;
use order::{Cue, SetOrder, StartGate};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// How a run behaves around the jobs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Allow writes to block devices.
    pub allow_device: bool,
    /// Show progress on stderr.
    pub progress: bool,
    /// Set by a signal handler (or a caller) to stop early, keeping results.
    pub stop: Arc<AtomicBool>,
    /// A second flag that stops this run alone (a background job's `stop`).
    pub stop_this: Option<Arc<AtomicBool>>,
    /// Where the watcher publishes the run's totals as it goes.
    pub live: Option<Arc<live::LiveTotals>>,
    /// The scenario's activity: with `progress`, the live line goes there
    /// (its printer shows it) instead of being printed by the watcher.
    pub activity: Option<Arc<activity::Activity>>,
    /// Where the watcher publishes each job's figures for `/metrics`
    /// (`--metrics-listen`).
    pub metrics: Option<crate::metrics::Scope>,
}

impl RunOptions {
    /// True once either stop flag is raised.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || self
                .stop_this
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            allow_device: false,
            progress: false,
            stop: Arc::new(AtomicBool::new(false)),
            stop_this: None,
            live: None,
            activity: None,
            metrics: None,
        }
    }
}

/// A run that could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A job's files cannot be planned or would not fit.
    #[error(transparent)]
    Files(#[from] FileError),
}

struct Planned<'a> {
    job: &'a JobSpec,
    job_index: usize,
    run_set: u32,
    group: u32,
    diskless: bool,
    workers: Vec<WorkerPlan>,
}

/// Jobs whose files are planned and checked, ready to lay out and run.
pub struct PreparedRun<'a> {
    jobs: &'a [JobSpec],
    planned: Vec<Planned<'a>>,
    /// Files to create or extend.
    to_create: Vec<Layout>,
    /// Regular files and devices the jobs use (for disk statistics).
    disk: Vec<(&'a JobSpec, Vec<FilePlan>)>,
    /// When the layout must give up (a scenario's deadline).
    deadline: Option<Instant>,
}

/// Plans files on plain paths (`plumb fio`) and checks space and device
/// permissions; writes nothing.
pub fn prepare(jobs: &[JobSpec], allow_device: bool) -> Result<PreparedRun<'_>, RunError> {
    prepare_in(jobs, allow_device, &FileSpace::Host)
}

/// Like [`prepare`], with every file resolved in `space` (a scenario's run
/// directory).
pub fn prepare_in<'a>(
    jobs: &'a [JobSpec],
    allow_device: bool,
    space: &FileSpace,
) -> Result<PreparedRun<'a>, RunError> {
    let planned = plan(jobs, space)?;
    let disk = disk_files(&planned);
    files::check_plans(&disk, allow_device)?;
    let to_create = files::layout_list(&disk);
    Ok(PreparedRun {
        jobs,
        planned,
        to_create,
        disk,
        deadline: None,
    })
}

fn disk_files<'a>(planned: &[Planned<'a>]) -> Vec<(&'a JobSpec, Vec<FilePlan>)> {
    planned
        .iter()
        .filter(|p| !p.diskless)
        .flat_map(|p| p.workers.iter().map(move |w| (p.job, w.files.clone())))
        .collect()
}

impl PreparedRun<'_> {
    /// Bytes the layout will write before the jobs start.
    pub fn bytes_to_lay_out(&self) -> u64 {
        self.to_create
            .iter()
            .fold(0u64, |sum, l| sum.saturating_add(l.to - l.from))
    }

    /// Makes the layout stop (removing the files it created) at `deadline`.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Lays out files, runs every job and gathers results.
    pub fn run(self, opts: &RunOptions) -> Result<RunReport, RunError> {
        run_prepared(&self, opts)
    }
}

fn run_prepared(prepared: &PreparedRun, opts: &RunOptions) -> Result<RunReport, RunError> {
    let (jobs, planned, to_create) = (prepared.jobs, &prepared.planned, &prepared.to_create);
    let started = SystemTime::now();
    if !to_create.is_empty() {
        let total = prepared.bytes_to_lay_out();
        tracing::info!(
            "{}: Laying out IO file{} ({} file{} / {})",
            planned[0].job.name,
            if to_create.len() > 1 { "s" } else { "" },
            to_create.len(),
            if to_create.len() > 1 { "s" } else { "" },
            format_bytes_binary(total as f64)
        );
        let mut shown = progress::LayoutProgress::new(
            total,
            opts.activity.as_deref().filter(|_| opts.progress),
        );
        let should_stop = || {
            if opts.stopping() {
                Some(StopReason::Interrupted)
            } else if prepared.deadline.is_some_and(|d| Instant::now() >= d) {
                Some(StopReason::Deadline)
            } else {
                None
            }
        };
        files::lay_out(to_create, should_stop, |n| shown.add(n))?;
    }

    let mut disks: Vec<String> = prepared
        .disk
        .iter()
        .flat_map(|(_, files)| files.iter().filter_map(|f| f.space.disk(&f.path)))
        .collect();
    disks.sort();
    disks.dedup();
    let disk_start: Vec<DiskSnapshot> =
        disks.iter().filter_map(|d| DiskSnapshot::take(d)).collect();
    let mut groups: Vec<GroupBuilder> = Vec::new();
    let run_sets = planned.iter().map(|p| p.run_set).max().unwrap_or(0);
    let run = RunShared {
        flows: Flows::default(),
        halt: AtomicBool::new(false),
        exitall: jobs.iter().any(|j| j.pacing.exitall),
        start: Instant::now(),
    };
    for set in 0..=run_sets {
        if opts.stopping() || run.halt.load(Ordering::Relaxed) {
            break;
        }
        let members: Vec<&Planned> = planned
            .iter()
            .filter(|p| p.run_set == set && !p.job.create_only)
            .collect();
        let outcome = run_set(&members, opts, &run);
        for (p, per_worker) in members.iter().zip(outcome.stats) {
            add_to_group(&mut groups, p, per_worker);
        }
        for p in planned
            .iter()
            .filter(|p| p.run_set == set && p.job.unlink && !p.diskless)
        {
            for w in &p.workers {
                for f in w.files.iter().filter(|f| !f.is_device) {
                    let _ = files::unlink(f);
                }
            }
        }
        if !outcome.started {
            // The failure is in the set's results; later sets do not run.
            break;
        }
    }
    Ok(RunReport {
        groups: groups.into_iter().map(|g| finish_group(g, jobs)).collect(),
        interrupted: opts.stopping(),
        started,
        finished: SystemTime::now(),
        disk_util: disk_start
            .iter()
            .filter_map(|s| DiskSnapshot::take(s.name()).map(|now| now.since(s)))
            .collect(),
    })
}

fn plan<'a>(jobs: &'a [JobSpec], space: &FileSpace) -> Result<Vec<Planned<'a>>, FileError> {
    let mut out = Vec::new();
    // fio's thread numbers (1-based over every clone of the run) and the
    // run's log files, shared by the threads that write the same one.
    let mut thread_number = 0u32;
    let log_files = Arc::new(logs::LogFiles::default());
    let (mut run_set, mut group) = (0u32, 0u32);
    // fio's thread numbers: every clone of every job, in order.
    let threads = jobs.iter().fold(0u32, |n, j| n.saturating_add(j.numjobs));
    let mut thread = 0u32;
    for (i, job) in jobs.iter().enumerate() {
        if i > 0 && job.stonewall {
            run_set += 1;
        }
        if i > 0 && (job.stonewall || job.new_group) {
            group += 1;
        }
        let diskless = engine::find(&job.ioengine).is_some_and(|e| e.caps.diskless);
        let mut workers = Vec::new();
        // Steady state: one watch for the job's clones reported together,
        // else one per clone (as fio watches each thread).
        let group_watch = job
            .steady
            .as_ref()
            .filter(|_| job.group_reporting)
            .and_then(steady::SteadyWatch::new)
            .map(Arc::new);
        for clone in 0..job.numjobs {
            let steady = match &group_watch {
                Some(w) => Some((Arc::clone(w), clone == 0)),
                None => job
                    .steady
                    .as_ref()
                    .and_then(steady::SteadyWatch::new)
                    .map(|w| (Arc::new(w), true)),
            };
            let files = files::plan_files(job, clone, diskless, space)?;
            let total: u64 = files.iter().map(|f| f.region.len).sum();
            let per_loop = job.io_size.map(|s| s.resolve(total)).unwrap_or(total);
            let budget = (!job.time_based).then(|| per_loop.saturating_mul(job.loops as u64));
            let seed = if job.randrepeat {
                job.randseed
                    ^ ((i as u64) << 40)
                    ^ (clone as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            } else {
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
                    ^ (clone as u64) << 32
            };
            thread_number = thread_number.saturating_add(1);
            workers.push(WorkerPlan {
                clone,
                thread_number,
                log_files: Arc::clone(&log_files),
                steady,
                files,
                budget,
                seed,
                thread,
                threads,
            });
            thread = thread.saturating_add(1);
        }
        out.push(Planned {
            job,
            job_index: i,
            run_set,
            group,
            diskless,
            workers,
        });
    }
    Ok(out)
}

/// What the sets of one run share: the flows, the start of the run
/// (`startdelay` counts from it), whether `exitall` applies, and the flag
/// `exit_what=all` raises to end the run.
struct RunShared {
    flows: Flows,
    halt: AtomicBool,
    exitall: bool,
    start: Instant,
}

/// What one stonewalled set of jobs produced.
struct SetOutcome {
    /// Statistics per member, per clone (failed or unstarted clones carry their error).
    stats: Vec<Vec<JobStats>>,
    /// False when a thread could not be started: the run goes no further.
    started: bool,
}

/// Runs one stonewalled set: a thread per clone, watched until every thread
/// has ended.
///
/// Workers see a stop flag of their job's own, raised by the caller's stop
/// flag (a signal), when a thread cannot be started, or by another job's
/// `exitall`; then the threads already running stop early and are joined.
/// A clone waits for its turn (`startdelay`, `wait_for`) in its thread. A
/// worker that panics ends as an error of its job rather than taking the
/// run down.
fn run_set(members: &[&Planned], opts: &RunOptions, run: &RunShared) -> SetOutcome {
    if let Some(message) = buffers_beyond_memory(members).or_else(|| beyond_thread_cap(members)) {
        return SetOutcome {
            stats: members
                .iter()
                .map(|p| p.workers.iter().map(|_| failed(message.clone())).collect())
                .collect(),
            started: false,
        };
    }
    let live: Vec<Vec<LiveCounters>> = members
        .iter()
        .map(|p| {
            p.workers
                .iter()
                .map(|_| LiveCounters::new(opts.live.is_some() || opts.metrics.is_some()))
                .collect()
        })
        .collect();
    let names: Vec<&str> = members.iter().map(|p| p.job.name.as_str()).collect();
    let tap = opts.metrics.as_ref().map(|m| m.tap(&names));
    let set_stop = AtomicBool::new(false);
    let set_stop = &set_stop;
    let shape: Vec<_> = members
        .iter()
        .map(|p| (p.job, p.group, p.workers.len() as u32))
        .collect();
    let order = SetOrder::new(&shape, run.exitall, run.start, &run.halt);
    let order = &order;
    let flows = &run.flows;
    let at_once = (0..members.len())
        .filter(|&i| order.starts_at_once(i))
        .map(|i| members[i].workers.len() as u32)
        .sum();
    let gate = StartGate::new(at_once);
    let gate = &gate;
    std::thread::scope(|scope| {
        let mut spawn_error: Option<String> = None;
        let mut handles: Vec<Vec<Result<_, String>>> = Vec::with_capacity(members.len());
        for (i, (p, counters)) in members.iter().zip(&live).enumerate() {
            let job = p.job;
            let mut started = Vec::with_capacity(p.workers.len());
            for (w, c) in p.workers.iter().zip(counters) {
                if let Some(first) = &spawn_error {
                    started.push(Err(format!("not started: {first}")));
                    continue;
                }
                let name = format!("{}.{}", job.name, w.clone);
                // A clone joins its flow when its turn comes, as fio's job
                // threads; one whose turn is now joins before any thread of
                // the set runs, so none runs ahead while another starts.
                let p = &job.pacing;
                let join = || flows.join(p.flow_id, p.flow, p.flow_sleep);
                let at_once = order.starts_at_once(i);
                let early = at_once.then(join).flatten();
                match crate::gate::thread(name.clone()).spawn_scoped(scope, move || {
                    if !order.wait_turn(i, w.seed) {
                        order.skipped(i);
                        return JobStats {
                            threads: 1,
                            ..JobStats::default()
                        };
                    }
                    let cue = if at_once {
                        Cue::new(early, Some(gate))
                    } else {
                        Cue::new(join(), None)
                    };
                    let started = SystemTime::now();
                    let mut s = worker::run_worker(job, w, c, order.stop_of(i), cue);
                    s.job_start = Some(started);
                    order.ended(i, s.error.is_some());
                    s
                }) {
                    Ok(h) => started.push(Ok(h)),
                    Err(e) => {
                        set_stop.store(true, Ordering::Relaxed);
                        order.stop_all();
                        let message = format!("could not start thread {name}: {e}");
                        started.push(Err(message.clone()));
                        spawn_error = Some(message);
                    }
                }
            }
            handles.push(started);
        }
        let watched: Vec<progress::Watched> = members
            .iter()
            .map(|p| progress::Watched {
                job: p.job,
                budget: p.workers.iter().map(|w| w.budget).sum(),
            })
            .collect();
        let all_ended = || {
            if set_stop.load(Ordering::Relaxed) {
                order.stop_all();
            }
            handles
                .iter()
                .flatten()
                .all(|h| h.as_ref().map_or(true, |h| h.is_finished()))
        };
        progress::watch(&watched, &live, opts, tap.as_ref(), set_stop, all_ended);
        let stats: Vec<Vec<JobStats>> = handles
            .into_iter()
            .map(|hs| {
                hs.into_iter()
                    .map(|h| match h {
                        Ok(h) => h.join().unwrap_or_else(|panic| {
                            failed(format!("worker failed: {}", panic_message(&*panic)))
                        }),
                        Err(message) => failed(message),
                    })
                    .collect()
            })
            .collect();
        if let Some(tap) = &tap {
            // The jobs' own final counts (the live ones may lag by a few
            // I/Os), with the live latency buckets, complete now.
            let finals: Vec<JobFigures> = stats
                .iter()
                .zip(&live)
                .map(|(per_clone, counters)| {
                    let mut f = live::figures_of(counters);
                    for d in 0..2 {
                        f.ios[d] = per_clone.iter().map(|s| s.dirs[d].ios).sum();
                        f.bytes[d] = per_clone.iter().map(|s| s.dirs[d].bytes).sum();
                    }
                    f
                })
                .collect();
            tap.update(&finals);
        }
        SetOutcome {
            stats,
            started: spawn_error.is_none(),
        }
    })
}

/// The statistics of a clone that ended with `message` before measuring.
fn failed(message: String) -> JobStats {
    JobStats {
        threads: 1,
        errno: libc::EIO,
        error: Some(message),
        ..JobStats::default()
    }
}

/// The text of a caught panic.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a worker thread panicked")
}

/// Refuses a set whose clones would not all fit under the run's thread cap
/// (no clone starts then, rather than some before the cap is met).
fn beyond_thread_cap(members: &[&Planned]) -> Option<String> {
    let threads = members
        .iter()
        .fold(0u32, |n, p| n.saturating_add(p.workers.len() as u32));
    crate::gate::room(threads)
        .err()
        .map(|e| format!("cannot start {threads} job threads: {e}"))
}

/// Refuses a set whose clones together would ask for more I/O buffer memory
/// than the machine has (each clone is bounded by the options; many clones
/// are bounded here, before any thread starts or allocates).
fn buffers_beyond_memory(members: &[&Planned]) -> Option<String> {
    let needed = members.iter().fold(0u64, |sum, p| {
        sum.saturating_add(
            p.job
                .buffer_bytes_per_clone()
                .saturating_mul(p.workers.len() as u64),
        )
    });
    let memory = crate::buffer::physical_memory()?;
    (needed > memory).then(|| {
        format!(
            "the jobs' I/O buffers (numjobs × iodepth × block size) need {}, \
             more than this machine's {} of memory",
            format_bytes_binary(needed as f64),
            format_bytes_binary(memory as f64)
        )
    })
}

/// Raw per-thread statistics of a group, merged once the group is done
/// (histograms merge; summaries do not).
struct GroupBuilder {
    id: u32,
    raw: Vec<(usize, JobStats)>,
}

fn add_to_group(groups: &mut Vec<GroupBuilder>, p: &Planned, per_worker: Vec<JobStats>) {
    let pos = match groups.iter().position(|g| g.id == p.group) {
        Some(pos) => pos,
        None => {
            groups.push(GroupBuilder {
                id: p.group,
                raw: Vec::new(),
            });
            groups.len() - 1
        }
    };
    groups[pos]
        .raw
        .extend(per_worker.into_iter().map(|s| (p.job_index, s)));
}

fn finish_group(g: GroupBuilder, jobs: &[JobSpec]) -> GroupReport {
    let lead = &jobs[g.raw.first().map(|(ji, _)| *ji).unwrap_or(0)];
    let mut total = JobStats::default();
    let mut results = Vec::new();
    for (ji, s) in &g.raw {
        total.merge(s);
        results.push(s.to_result(&jobs[*ji], g.id));
    }
    let measured_from = total.measured_from;
    let total = total.to_result(lead, g.id);
    if g.raw.iter().any(|(ji, _)| jobs[*ji].group_reporting) {
        results = vec![total.clone()];
    }
    GroupReport {
        id: g.id,
        spans: [DirSpan::over(&results, 0), DirSpan::over(&results, 1)],
        results,
        total,
        measured_from,
    }
}
