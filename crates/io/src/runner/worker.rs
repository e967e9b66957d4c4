//! One job thread: opens its files, sets up the engine and its buffers,
//! runs the hot loop (`drive`), verifies what it wrote and closes its
//! iolog.

mod drive;

use super::iolog::IologWriter;
use super::jobstats::JobStats;
use super::logs::{JobLogs, LogFiles};
use super::order::Cue;
use super::steady::SteadyWatch;
use super::verify::{Backlog, ReadBack, WrittenBlocks};
use crate::buffer::AlignedBuf;
use crate::data::{Content, Participation};
use crate::engine::{self, EngineSetup, JobFiles, SlotMemory};
use crate::files::{open_for_job, FilePlan};
use crate::job::spec::{Dir, JobSpec, Verify};
use crate::stats::live_latency::LiveLatency;
use crate::stats::CpuUsage;
use crate::workload::{OffsetGenerator, Region};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Counters a job thread publishes for the progress display.
#[derive(Debug, Default)]
pub struct LiveCounters {
    /// I/Os done per direction in the measured phase.
    pub ios: [AtomicU64; 2],
    /// Bytes done per direction in the measured phase.
    pub bytes: [AtomicU64; 2],
    /// Phase: 0 starting, 1 ramp, 2 measuring, 3 verifying, 4 done.
    pub phase: AtomicU8,
    /// Completion latency per direction in the measured phase, for a run
    /// whose starter reads live percentiles (a background job); none else.
    pub latency: Option<Box<[LiveLatency; 2]>>,
}

impl LiveCounters {
    /// Counters for one clone, with live latency buckets when asked.
    pub fn new(with_latency: bool) -> LiveCounters {
        LiveCounters {
            latency: with_latency.then(Box::default),
            ..LiveCounters::default()
        }
    }
}

/// Publishes a job's counters for the progress display.
fn publish(live: &LiveCounters, stats: &JobStats) {
    for d in 0..2 {
        live.ios[d].store(stats.dirs[d].ios, Ordering::Relaxed);
        live.bytes[d].store(stats.dirs[d].bytes, Ordering::Relaxed);
    }
}

/// One clone of a job, ready to run.
#[derive(Debug, Clone)]
pub struct WorkerPlan {
    /// Which clone (0-based).
    pub clone: u32,
    /// fio's number of the thread: 1-based over every clone of the run
    /// (the `N` of its log files' names).
    pub thread_number: u32,
    /// The run's log files (`write_bw_log` …), shared with the other threads.
    pub log_files: Arc<LogFiles>,
    /// The steady-state watch (`ss=`) this clone adds to, and whether it
    /// is the one that samples it.
    pub steady: Option<(Arc<SteadyWatch>, bool)>,
    /// The files it does I/O on, each with its region.
    pub files: Vec<FilePlan>,
    /// Bytes to issue; `None` for time-based jobs.
    pub budget: Option<u64>,
    /// Seed of its random generators.
    pub seed: u64,
    /// Its number among all the run's threads (0-based, in job order, as
    /// fio's thread number): `cpus_allowed_policy=split` and
    /// `dedupe_global` place it by this.
    pub thread: u32,
    /// The run's threads in all.
    pub threads: u32,
}

/// The I/O a slot holds, until it completes.
#[derive(Clone, Copy)]
struct InFlight {
    file: u32,
    dir: Dir,
    offset: u64,
    len: u32,
    /// When the I/O was queued.
    start: Instant,
    /// When the kernel had it (after the submit call returned).
    issued: Instant,
}

/// Runs one job clone to the end and returns what it measured.
pub fn run_worker(
    job: &JobSpec,
    plan: &WorkerPlan,
    live: &LiveCounters,
    stop: &AtomicBool,
    cue: Cue,
) -> JobStats {
    let mut stats = JobStats {
        threads: 1,
        ..JobStats::default()
    };
    let cpu_start = CpuUsage::thread_now();
    if let Err(e) = Worker::run(job, plan, live, stop, cue, &mut stats) {
        stats.errno = e.raw_os_error().unwrap_or(libc::EIO);
        stats.error.get_or_insert_with(|| e.to_string());
    }
    stats.cpu = CpuUsage::thread_now().since(&cpu_start);
    live.phase.store(4, Ordering::Relaxed);
    stats
}

/// The slot memory of a clone: `depth` slots of the largest block size
/// (rounded up to 4 KiB), of the memory `iomem` names starting
/// `iomem_align` bytes past a page, each filled by `content` (random data
/// unless the data options say otherwise), so every page is touched
/// before the job starts.
fn slot_memory(
    job: &JobSpec,
    depth: u32,
    content: &mut Content,
) -> std::io::Result<Arc<SlotMemory>> {
    // Sizes in u128: block size × depth from the options never wraps
    // before AlignedBuf checks it against its bound.
    let slot_size = u128::from(job.max_bs()).next_multiple_of(4096);
    let align = usize::try_from(job.data.mem_align).unwrap_or(usize::MAX);
    let mut buffer = crate::buffer::checked_len(slot_size * u128::from(depth))
        .and_then(|_| {
            AlignedBuf::allocate(
                (slot_size * u128::from(depth)) as usize,
                job.data.iomem,
                align,
            )
        })
        .map_err(|e| {
            let e = std::io::Error::from(e);
            std::io::Error::new(
                e.kind(),
                format!(
                    "job '{}': buffers for block size {} at depth {depth}: {e}",
                    job.name,
                    job.max_bs()
                ),
            )
        })?;
    // Within the buffer's bound, hence a usize.
    let slot_len = slot_size as usize;
    for slot in buffer
        .as_mut_slice()
        .chunks_mut(slot_len)
        .take(depth as usize)
    {
        content.fill(slot);
    }
    SlotMemory::new(buffer, slot_len, depth)
}

/// The job as an engine runs it, when the engine needs a change: `cpuio`
/// paces its bursts with the rate limit, one burst of `cpuchunks` every
/// `cpuchunks × 100 / cpuload` (fio's think time between bursts).
fn engine_pacing(job: &JobSpec, info: &engine::EngineInfo) -> Option<JobSpec> {
    (info.name == "cpuio").then(|| {
        let mut paced = job.clone();
        let bytes_per_sec = engine::cpuio_pacing(&job.engine, job.min_bs());
        paced.rate = [Some(bytes_per_sec); 2];
        paced.rate_iops = [None; 2];
        paced
    })
}

/// A job clone's resources and running state: its files, the buffer cut
/// into one slot per queue entry, what each slot holds, and the sync,
/// verify and iolog bookkeeping.
struct Worker<'a> {
    job: &'a JobSpec,
    /// The files, shared with the engine: held so `fds` stay open.
    _files: JobFiles,
    /// Their descriptors, in order.
    fds: Vec<RawFd>,
    /// File paths, for messages and the iolog.
    paths: Vec<String>,
    /// One slot per queue entry, shared with the engine.
    memory: Arc<SlotMemory>,
    /// Per slot: the I/O it holds.
    inflight: Vec<InFlight>,
    /// Blocks written (verify only), read back after the run.
    written: WrittenBlocks,
    /// Blocks written since the last check (`verify_backlog`).
    backlog: Option<Backlog>,
    regions: Vec<Region>,
    /// Writes issued so far: stamped into each block written.
    write_seq: u64,
    /// Writes completed since the last sync.
    writes_since_sync: u32,
    /// Sync after this many writes (`fsync`/`fdatasync`; 0 = never).
    sync_every: u32,
    /// The file whose write reached the fsync count, waiting to be synced
    /// once the queue drains: fio syncs that file only.
    sync_file: Option<u32>,
    /// Check every block read (`verify` on a read job).
    verify_reads: bool,
    /// Per file: written since its last sync.
    dirty: Vec<bool>,
    /// The iolog being written (`write_iolog=`).
    iolog: Option<IologWriter>,
    /// fio's bandwidth, IOPS and latency logs (`write_bw_log=` …).
    logs: Option<JobLogs>,
    /// The steady-state watch (`ss=`) and whether this clone samples it.
    steady: Option<(Arc<SteadyWatch>, bool)>,
    /// What each write holds (the data options).
    content: Content,
    /// The engine times its own operations ([`engine::EngineCaps::own_latency`]).
    own_latency: bool,
}

impl<'a> Worker<'a> {
    /// Sets the clone up, runs the hot loop, then verifies (`do_verify`) and
    /// closes the iolog; what it measured goes into `stats`.
    fn run(
        job: &'a JobSpec,
        plan: &WorkerPlan,
        live: &LiveCounters,
        stop: &AtomicBool,
        cue: Cue,
        stats: &mut JobStats,
    ) -> std::io::Result<()> {
        super::placement::apply(&job.placement, plan.thread)?;
        let info = engine::find(&job.ioengine).ok_or_else(|| {
            std::io::Error::other(format!("engine '{}' is not supported", job.ioengine))
        })?;
        // An engine's own needs: files it opens itself, and cpuio's pace.
        let paced_job = engine_pacing(job, info);
        let job = paced_job.as_ref().unwrap_or(job);
        let files: JobFiles = if info.caps.diskless || info.caps.by_path {
            Arc::new([])
        } else {
            plan.files
                .iter()
                .map(|f| open_for_job(f, job).map_err(|e| std::io::Error::other(e.to_string())))
                .collect::<Result<_, _>>()?
        };
        let fds: Vec<RawFd> = files.iter().map(|f| f.as_raw_fd()).collect();
        let regions: Vec<Region> = plan.files.iter().map(|f| f.region).collect();
        let depth = if info.caps.is_async {
            job.iodepth.max(1)
        } else {
            1
        };
        let mut content = Content::new(
            job,
            plan.seed,
            Participation {
                thread: plan.thread,
                threads: plan.threads,
                region_bytes: regions.iter().map(|r| r.len).sum(),
            },
        );
        let memory = slot_memory(job, depth, &mut content)?;
        let mut engine = (info.create)(EngineSetup {
            files: Arc::clone(&files),
            memory: Arc::clone(&memory),
            depth,
            paths: plan.files.clone(),
            options: job.engine.clone(),
            stop,
            until: job
                .runtime
                .and_then(|r| Instant::now().checked_add(job.ramp_time.saturating_add(r))),
            clone_index: plan.clone,
            writes: job.rw.does(Dir::Write),
        })?;
        let verify_writes = job.verify != Verify::None && job.rw.does(Dir::Write);
        let backlog = (verify_writes && job.verify_opts.backlog > 0)
            .then(|| Backlog::new(job.verify_opts.backlog));
        let written = if verify_writes && backlog.is_none() {
            WrittenBlocks::new(&regions, job.min_bs())?
        } else {
            WrittenBlocks::none()
        };
        let paths: Vec<String> = plan
            .files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
        let iolog = job
            .write_iolog
            .as_deref()
            .map(|p| IologWriter::create(p, plan.clone, &paths))
            .transpose()?;
        let logs = JobLogs::open(
            job,
            plan.thread_number,
            &plan.log_files,
            std::time::SystemTime::now(),
        )?;
        let now = Instant::now();
        let mut w = Worker {
            job,
            _files: files,
            fds,
            paths,
            iolog,
            logs,
            steady: plan.steady.clone(),
            content,
            memory,
            inflight: vec![
                InFlight {
                    file: 0,
                    dir: Dir::Read,
                    offset: 0,
                    len: 0,
                    start: now,
                    issued: now,
                };
                depth as usize
            ],
            written,
            backlog,
            dirty: vec![false; regions.len()],
            regions,
            write_seq: 0,
            writes_since_sync: 0,
            sync_every: job.fsync.max(job.fdatasync),
            sync_file: None,
            verify_reads: job.verify != Verify::None && job.rw.does(Dir::Read),
            own_latency: info.caps.own_latency,
        };
        let mut gen = OffsetGenerator::new(job, &w.regions, plan.budget, plan.seed)
            .map_err(std::io::Error::other)?;
        let result = w.drive(
            engine.as_mut(),
            &mut gen,
            depth,
            live,
            stop,
            stats,
            cue,
            plan.seed,
        );
        if let Some((watch, true)) = &w.steady {
            stats.steady = watch.outcome();
        }
        // Waits for whatever the loop left in flight (after an error).
        drop(engine);
        result?;
        if job.verify != Verify::None
            && job.do_verify
            && job.rw.does(Dir::Write)
            && stats.error.is_none()
        {
            live.phase.store(3, Ordering::Relaxed);
            // fio's runtime takes in its verify phase.
            let t = Instant::now();
            w.verify_written(stats, stop)?;
            stats.runtime += t.elapsed();
            stats.runtime_sum = stats.runtime;
        }
        if let Some(log) = w.iolog.take() {
            log.close(&w.paths)?;
        }
        Ok(())
    }

    /// The first `len` bytes of a slot's buffer.
    ///
    /// # Safety
    /// No request on `slot` may be in flight, and no other reference to the
    /// slot may be alive.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slot(&self, slot: u32, len: usize) -> &mut [u8] {
        // SAFETY: the caller's promise is the one `slot_mut` asks for.
        unsafe { self.memory.slot_mut(slot, len) }
    }

    /// The path of file `file` for a message (`#N` if there is none).
    fn file_name(&self, file: u32) -> String {
        self.paths
            .get(file as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{file}"))
    }

    /// Reads back every block written and checks it (`do_verify`), through
    /// slot 0: the blocks still in the backlog, or every block written.
    fn verify_written(&mut self, stats: &mut JobStats, stop: &AtomicBool) -> std::io::Result<()> {
        let mut backlog = self.backlog.take();
        let written = std::mem::replace(&mut self.written, WrittenBlocks::none());
        let mut rb = self.read_back();
        match &mut backlog {
            Some(b) => b.check(&mut rb, stats, stop),
            None => written.read_back(&mut rb, stats, stop),
        }
    }

    /// True when the backlog waits for its check (`verify_backlog`).
    fn backlog_due(&self) -> bool {
        self.backlog.as_ref().is_some_and(Backlog::due)
    }

    /// Checks the blocks of the backlog (nothing in flight), through slot 0.
    fn check_backlog(&mut self, stats: &mut JobStats, stop: &AtomicBool) -> std::io::Result<()> {
        if let Some(mut b) = self.backlog.take() {
            let result = b.check(&mut self.read_back(), stats, stop);
            self.backlog = Some(b);
            result?;
        }
        Ok(())
    }

    /// What a read-back needs: slot 0 (idle: nothing is in flight while
    /// blocks are read back), the files, the options and their names.
    fn read_back(&self) -> ReadBack<'_, impl Fn(u32) -> String + '_> {
        // SAFETY: verification runs only when nothing is in flight, and this
        // is the only reference to slot 0 while it runs.
        let buf = unsafe { self.slot(0, self.memory.slot_len()) };
        ReadBack {
            fds: &self.fds,
            buf,
            opts: &self.job.verify_opts,
            name: |f| self.file_name(f),
        }
    }
}
