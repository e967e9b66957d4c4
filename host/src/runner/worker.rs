//! One job thread: opens its files, drives an engine at the job's depth and
//! records what completes. This is the hot loop.

use super::jobstats::{depth_bucket, JobStats};
use crate::buffer::AlignedBuf;
use crate::engine::{self, Completion, EngineSetup, IoEngine, IoRequest, Op, SlotBuffer};
use crate::files::{open_for_job, FilePlan};
use crate::job::spec::{Dir, JobSpec, Verify};
use crate::stats::{CpuUsage, LatencyRecorder, Timeline};
use crate::workload::{stamp_block, verify_block, OffsetGenerator, RateLimiter, Region};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Counters a job thread publishes for the progress display.
#[derive(Debug, Default)]
pub struct LiveCounters {
    /// I/Os done per direction in the measured phase.
    pub ios: [AtomicU64; 2],
    /// Bytes done per direction in the measured phase.
    pub bytes: [AtomicU64; 2],
    /// Phase: 0 starting, 1 ramp, 2 measuring, 3 verifying, 4 done.
    pub phase: AtomicU8,
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
    /// Its files and regions.
    pub files: Vec<FilePlan>,
    /// Bytes to issue; `None` for time-based jobs.
    pub budget: Option<u64>,
    /// Seed of its random generators.
    pub seed: u64,
}

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
) -> JobStats {
    let mut stats = JobStats {
        threads: 1,
        ..JobStats::default()
    };
    let cpu_start = CpuUsage::thread_now();
    if let Err(e) = Worker::run(job, plan, live, stop, &mut stats) {
        stats.errno = e.raw_os_error().unwrap_or(libc::EIO);
        stats.error.get_or_insert_with(|| e.to_string());
    }
    stats.cpu = CpuUsage::thread_now().since(&cpu_start);
    live.phase.store(4, Ordering::Relaxed);
    stats
}

/// A zeroed bitmap of `blocks` bits, or an error when it would take more
/// than half the available memory (a huge region with `verify`).
fn block_map(blocks: u64) -> std::io::Result<Vec<u64>> {
    let words = blocks.div_ceil(64);
    crate::mem::check_size("the verify map of written blocks", words.saturating_mul(8))
        .map_err(std::io::Error::other)?;
    Ok(vec![
        0u64;
        usize::try_from(words).map_err(std::io::Error::other)?
    ])
}

struct Worker<'a> {
    job: &'a JobSpec,
    fds: Vec<RawFd>,
    paths: Vec<String>,
    slot_size: usize,
    buffer: AlignedBuf,
    inflight: Vec<InFlight>,
    /// Blocks written per file (verify only), one bit per block of `bs`.
    written: Vec<Vec<u64>>,
    regions: Vec<Region>,
    write_seq: u64,
    writes_since_sync: u32,
    /// Sync after this many writes (`fsync`/`fdatasync`; 0 = never).
    sync_every: u32,
    /// The file whose write reached the fsync count, waiting to be synced
    /// once the queue drains: fio syncs that file only.
    sync_file: Option<u32>,
    /// Check every block read (`verify` on a read job).
    verify_reads: bool,
    dirty: Vec<bool>,
    iolog: Option<IoLog>,
}

/// fio's iolog v2: one line per I/O issued (`write_iolog=`).
struct IoLog {
    out: std::io::BufWriter<File>,
}

impl IoLog {
    fn create(path: &str, clone: u32, files: &[String]) -> std::io::Result<IoLog> {
        let path = if clone == 0 {
            path.to_string()
        } else {
            format!("{path}.{clone}")
        };
        let file = File::create(&path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("write_iolog '{path}': {e}")))?;
        let mut out = std::io::BufWriter::new(file);
        writeln!(out, "fio version 2 iolog")?;
        for f in files {
            writeln!(out, "{f} add")?;
        }
        for f in files {
            writeln!(out, "{f} open")?;
        }
        Ok(IoLog { out })
    }

    fn log(&mut self, file: &str, action: &str, offset: u64, len: u64) {
        let _ = writeln!(self.out, "{file} {action} {offset} {len}");
    }

    fn close(mut self, files: &[String]) -> std::io::Result<()> {
        for f in files {
            writeln!(self.out, "{f} close")?;
        }
        self.out.flush()
    }
}

impl<'a> Worker<'a> {
    fn run(
        job: &'a JobSpec,
        plan: &WorkerPlan,
        live: &LiveCounters,
        stop: &AtomicBool,
        stats: &mut JobStats,
    ) -> std::io::Result<()> {
        let info = engine::find(&job.ioengine).ok_or_else(|| {
            std::io::Error::other(format!("engine '{}' is not supported", job.ioengine))
        })?;
        let files: Vec<File> = if info.caps.diskless {
            Vec::new()
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
        // Sizes in u128: block size × depth from the options never wraps
        // before AlignedBuf checks it against its bound.
        let slot_size = u128::from(job.max_bs()).next_multiple_of(4096);
        let buffer = crate::buffer::checked_len(slot_size * u128::from(depth))
            .and_then(|_| AlignedBuf::random((slot_size * u128::from(depth)) as usize, plan.seed))
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
        let slot_size = slot_size as usize;
        let slots: Vec<SlotBuffer> = (0..depth as usize)
            .map(|i| -> std::io::Result<SlotBuffer> {
                let (ptr, len) = buffer.raw_range(i * slot_size..(i + 1) * slot_size)?;
                Ok(SlotBuffer { ptr, len })
            })
            .collect::<std::io::Result<_>>()?;
        let mut engine = (info.create)(&EngineSetup {
            files: &fds,
            buffers: &slots,
            depth,
        })?;
        let verify_bits = if job.verify != Verify::None && job.rw.does(Dir::Write) {
            regions
                .iter()
                .map(|r| block_map(r.len / job.min_bs()))
                .collect::<std::io::Result<_>>()?
        } else {
            Vec::new()
        };
        let paths: Vec<String> = plan
            .files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
        let iolog = job
            .write_iolog
            .as_deref()
            .map(|p| IoLog::create(p, plan.clone, &paths))
            .transpose()?;
        let now = Instant::now();
        let mut w = Worker {
            job,
            fds,
            paths,
            iolog,
            slot_size,
            buffer,
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
            written: verify_bits,
            dirty: vec![false; regions.len()],
            regions,
            write_seq: 0,
            writes_since_sync: 0,
            sync_every: job.fsync.max(job.fdatasync),
            sync_file: None,
            verify_reads: job.verify != Verify::None && job.rw.does(Dir::Read),
        };
        let mut gen = OffsetGenerator::new(job, &w.regions, plan.budget, plan.seed)
            .map_err(std::io::Error::other)?;
        let result = w.drive(engine.as_mut(), &mut gen, depth, live, stop, stats);
        drop(engine);
        result?;
        if job.verify != Verify::None
            && job.do_verify
            && job.rw.does(Dir::Write)
            && stats.error.is_none()
        {
            live.phase.store(3, Ordering::Relaxed);
            w.verify_written(stats, stop)?;
        }
        if let Some(log) = w.iolog.take() {
            log.close(&w.paths)?;
        }
        drop(files);
        Ok(())
    }

    /// The first `len` bytes of a slot's buffer.
    ///
    /// # Safety
    /// No request on `slot` may be in flight, and no other reference to the
    /// slot may be alive.
    unsafe fn slot<'b>(&self, slot: u32, len: usize) -> &'b mut [u8] {
        let start = slot as usize * self.slot_size;
        let (ptr, len) = self
            .buffer
            .raw_range(start..start + len.min(self.slot_size))
            .expect("a slot lies inside the buffer allocated for depth × slot size");
        // SAFETY: a bounds-checked range of one slot (disjoint from the
        // others), in a buffer that outlives the worker's use of it.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }

    #[allow(clippy::too_many_arguments)]
    fn drive(
        &mut self,
        engine: &mut dyn IoEngine,
        gen: &mut OffsetGenerator,
        depth: u32,
        live: &LiveCounters,
        stop: &AtomicBool,
        stats: &mut JobStats,
    ) -> std::io::Result<()> {
        let job = self.job;
        let verify_writes = job.verify != Verify::None && job.rw.does(Dir::Write);
        let batch = if job.given.iter().any(|(k, _)| k == "iodepth_batch_submit") {
            // fio: 0 means the same as 1.
            job.iodepth_batch_submit.max(1)
        } else {
            4
        };
        let mut rate = RateLimiter::new(job.rate_iops, job.rate);
        let paced = !rate.is_unlimited();
        let mut free: Vec<u32> = (0..depth).rev().collect();
        let mut completions: Vec<Completion> = Vec::with_capacity(depth as usize);
        let mut held = None;
        let mut unissued: Vec<u32> = Vec::with_capacity(depth as usize);
        let mut exhausted = false;

        let begin = Instant::now();
        // A time beyond what the clock can hold never comes (no end, no ramp end).
        let after = |t: Instant, d: Duration| t.checked_add(d);
        let ramp_end = (!job.ramp_time.is_zero())
            .then(|| after(begin, job.ramp_time))
            .flatten();
        let mut measuring = ramp_end.is_none();
        live.phase
            .store(if measuring { 2 } else { 1 }, Ordering::Relaxed);
        let mut start = begin;
        let mut deadline = job
            .runtime
            .and_then(|r| after(begin, job.ramp_time.saturating_add(r)));
        let mut timeline = Timeline::new(start);
        let mut last_completion = start;
        let mut inline_done = 0u64;

        loop {
            let now = Instant::now();
            if !measuring && ramp_end.is_some_and(|t| now >= t) {
                // Ramp over: statistics and pacing start from here.
                measuring = true;
                *stats = JobStats {
                    threads: 1,
                    ..JobStats::default()
                };
                start = now;
                timeline = Timeline::new(now);
                rate.restart(now);
                deadline = job.runtime.and_then(|r| after(now, r));
                live.phase.store(2, Ordering::Relaxed);
            }
            let stopping = exhausted
                || stats.error.is_some()
                || stop.load(Ordering::Relaxed)
                || deadline.is_some_and(|d| now >= d);
            let inflight = depth - free.len() as u32;
            if stopping && inflight == 0 {
                break;
            }
            if self.sync_file.is_some() && inflight == 0 {
                let only = self.sync_file.take();
                self.sync_dirty(&mut stats.sync, only)?;
            }
            // Refill free slots, submitting every `batch` requests.
            let mut sleep_for = None;
            while !stopping && self.sync_file.is_none() {
                let Some(&slot) = free.last() else { break };
                let io = match held.take().or_else(|| gen.next_io()) {
                    Some(io) => io,
                    None => {
                        exhausted = true;
                        break;
                    }
                };
                let t = Instant::now();
                if paced {
                    if let Some(wait) = rate.wait_before(io.dir, t) {
                        held = Some(io);
                        sleep_for = Some(wait);
                        break;
                    }
                    rate.issued(io.dir, io.len);
                }
                free.pop();
                let op = match io.dir {
                    Dir::Read => Op::Read,
                    Dir::Write => {
                        self.write_seq += 1;
                        // SAFETY: the slot was just taken from the free list.
                        let buf = unsafe { self.slot(slot, io.len as usize) };
                        stamp_block(buf, io.offset, self.write_seq, verify_writes);
                        Op::Write
                    }
                };
                self.inflight[slot as usize] = InFlight {
                    file: io.file,
                    dir: io.dir,
                    offset: io.offset,
                    len: io.len as u32,
                    start: t,
                    issued: t,
                };
                let req = IoRequest {
                    slot,
                    file: io.file,
                    op,
                    offset: io.offset,
                    len: io.len as u32,
                };
                if let Some(log) = &mut self.iolog {
                    log.log(
                        &self.paths[io.file as usize],
                        io.dir.name(),
                        io.offset,
                        io.len,
                    );
                }
                match engine.queue(&req)? {
                    Some(result) => {
                        if measuring {
                            stats.depth_counts[0] += 1;
                        }
                        completions.push(Completion { slot, result });
                        let done = self.complete(
                            &mut completions,
                            &mut free,
                            measuring,
                            stats,
                            &mut timeline,
                        );
                        last_completion = done;
                        // Synchronous engines stay in this loop for the whole
                        // run: publish the counters for the progress line.
                        inline_done += 1;
                        if inline_done.is_multiple_of(64) {
                            publish(live, stats);
                        }
                        if deadline.is_some_and(|d| done >= d) || stop.load(Ordering::Relaxed) {
                            break;
                        }
                    }
                    None => {
                        unissued.push(slot);
                        if unissued.len() as u32 >= batch {
                            let in_flight = depth - free.len() as u32;
                            self.submit(engine, &mut unissued, in_flight, measuring, stats)?;
                        }
                    }
                }
            }
            if !unissued.is_empty() {
                let in_flight = depth - free.len() as u32;
                self.submit(engine, &mut unissued, in_flight, measuring, stats)?;
            }
            let inflight = depth - free.len() as u32;
            if inflight > 0 {
                // Take a few completions at a time and refill them at once, so
                // the device queue stays full (as fio does) instead of draining.
                engine.reap(1, batch, &mut completions)?;
                last_completion =
                    self.complete(&mut completions, &mut free, measuring, stats, &mut timeline);
            } else if let Some(wait) = sleep_for {
                let cap = deadline
                    .map(|d| d.saturating_duration_since(Instant::now()))
                    .unwrap_or(wait);
                std::thread::sleep(wait.min(cap).min(Duration::from_millis(50)));
            }
            publish(live, stats);
        }
        if self.job.end_fsync && self.job.rw.does(Dir::Write) && stats.error.is_none() {
            for i in 0..self.fds.len() {
                self.dirty[i] = true;
            }
            let mut end_sync = LatencyRecorder::default();
            self.sync_dirty(&mut end_sync, None)?;
            last_completion = Instant::now();
        }
        let end = last_completion.max(start);
        stats.runtime = end - start;
        stats.runtime_sum = stats.runtime;
        stats.timeline = timeline.finish(end);
        Ok(())
    }

    /// Hands queued requests to the kernel and stamps their issue time, so
    /// completion latency starts when the kernel has the I/O (as fio's clat).
    /// The queue depth at submission is counted per I/O submitted, as fio's.
    fn submit(
        &mut self,
        engine: &mut dyn IoEngine,
        unissued: &mut Vec<u32>,
        in_flight: u32,
        measuring: bool,
        stats: &mut JobStats,
    ) -> std::io::Result<()> {
        engine.submit()?;
        if measuring {
            stats.depth_counts[depth_bucket(in_flight)] += unissued.len() as u64;
        }
        let now = Instant::now();
        for slot in unissued.drain(..) {
            self.inflight[slot as usize].issued = now;
        }
        Ok(())
    }

    /// Records a batch of completions that just finished, frees their slots,
    /// and returns the completion time.
    fn complete(
        &mut self,
        completions: &mut Vec<Completion>,
        free: &mut Vec<u32>,
        measuring: bool,
        stats: &mut JobStats,
        timeline: &mut Timeline,
    ) -> Instant {
        let now = Instant::now();
        for c in completions.drain(..) {
            let io = self.inflight[c.slot as usize];
            free.push(c.slot);
            if io.dir == Dir::Write && self.sync_every > 0 {
                self.writes_since_sync += 1;
                if self.writes_since_sync >= self.sync_every {
                    self.sync_file = Some(io.file);
                }
            }
            if c.result < 0 {
                let err = std::io::Error::from_raw_os_error((-c.result) as i32);
                if stats.error.is_none() {
                    stats.errno = (-c.result) as i32;
                    stats.error = Some(format!(
                        "{} error on file {} at offset {} (length {}): {err}",
                        io.dir.name(),
                        self.file_name(io.file),
                        io.offset,
                        io.len
                    ));
                }
                continue;
            }
            let moved = c.result as u64;
            let d = io.dir.index();
            if io.dir == Dir::Write {
                self.dirty[io.file as usize] = true;
                if !self.written.is_empty() {
                    let block =
                        (io.offset - self.regions[io.file as usize].start) / self.job.min_bs();
                    self.written[io.file as usize][(block / 64) as usize] |= 1 << (block % 64);
                }
            } else if self.verify_reads {
                stats.verified += 1;
                // SAFETY: the request on this slot has completed.
                if let Err(e) =
                    verify_block(unsafe { self.slot(c.slot, io.len as usize) }, io.offset)
                {
                    stats.verify_errors += 1;
                    if stats.error.is_none() {
                        stats.errno = libc::EILSEQ;
                        stats.error = Some(format!(
                            "verify failed in {} at offset {} (length {}): {e}",
                            self.file_name(io.file),
                            io.offset,
                            io.len
                        ));
                    }
                }
            }
            if measuring {
                let s = &mut stats.dirs[d];
                s.clat
                    .record(now.saturating_duration_since(io.issued).as_nanos() as u64);
                s.slat
                    .record(io.issued.saturating_duration_since(io.start).as_nanos() as u64);
                s.lat
                    .record(now.saturating_duration_since(io.start).as_nanos() as u64);
                s.ios += 1;
                s.bytes += moved;
                if moved < io.len as u64 {
                    s.short += 1;
                }
                timeline.add(now, d, 1, moved);
            }
        }
        now
    }

    fn file_name(&self, file: u32) -> String {
        self.paths
            .get(file as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{file}"))
    }

    /// fsync (or fdatasync) the files written since their last sync: all of
    /// them, or only `only` (the file whose write reached the count, as fio).
    fn sync_dirty(&mut self, rec: &mut LatencyRecorder, only: Option<u32>) -> std::io::Result<()> {
        for (i, fd) in self.fds.iter().enumerate() {
            if !self.dirty[i] || only.is_some_and(|f| f as usize != i) {
                continue;
            }
            let t = Instant::now();
            // SAFETY: plain syscalls on descriptors this worker owns.
            let r = unsafe {
                if self.job.fdatasync > 0 {
                    libc::fdatasync(*fd)
                } else {
                    libc::fsync(*fd)
                }
            };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
            rec.record(t.elapsed().as_nanos() as u64);
            self.dirty[i] = false;
            if let Some(log) = &mut self.iolog {
                let action = if self.job.fdatasync > 0 {
                    "datasync"
                } else {
                    "sync"
                };
                log.log(&self.paths[i], action, 0, 0);
            }
        }
        self.writes_since_sync = 0;
        Ok(())
    }

    /// Reads back every block written and checks it (`do_verify`).
    fn verify_written(&mut self, stats: &mut JobStats, stop: &AtomicBool) -> std::io::Result<()> {
        let bs = self.job.min_bs();
        for (fi, bits) in self.written.iter().enumerate() {
            for (word_i, word) in bits.iter().enumerate() {
                let mut w = *word;
                while w != 0 {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    let bit = w.trailing_zeros() as u64;
                    w &= w - 1;
                    let block = word_i as u64 * 64 + bit;
                    let offset = self.regions[fi].start + block * bs;
                    // SAFETY: nothing is in flight during verification.
                    let buf = unsafe { self.slot(0, bs as usize) };
                    // SAFETY: slot 0 is idle (no I/O in flight) and `bs` bytes long.
                    let r = unsafe {
                        libc::pread(
                            self.fds[fi],
                            buf.as_mut_ptr().cast(),
                            bs as usize,
                            offset as i64,
                        )
                    };
                    if r < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    stats.verified += 1;
                    if let Err(e) = verify_block(&buf[..r as usize], offset) {
                        stats.verify_errors += 1;
                        if stats.error.is_none() {
                            stats.errno = libc::EILSEQ;
                            stats.error = Some(format!(
                                "verify failed in {} at offset {offset} (length {bs}): {e}",
                                self.file_name(fi as u32)
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
