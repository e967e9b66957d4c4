//! The hot loop of a job thread: keeps the engine's queue full, paced by
//! the rate limit, through the ramp and the measured phase, and records
//! every completion.

mod pace;

use super::{publish, InFlight, LiveCounters, Worker};
use crate::engine::{Completion, IoEngine, IoRequest, Op};
use crate::job::spec::{Dir, ErrorClasses, JobSpec, Verify};
use crate::runner::jobstats::{batch_bucket, depth_bucket, JobStats};
use crate::runner::logs::Sample;
use crate::runner::order::Cue;
use crate::runner::verify;
use crate::stats::{LatencyRecorder, Timeline};
use crate::workload::{verify_block, Flow, NextIo, OffsetGenerator, RateLimiter};
use pace::Pace;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The state of one run of the hot loop: free slots, what is queued but not
/// submitted, the pacing, and the clocks of the ramp and the measured phase.
struct Drive {
    depth: u32,
    /// Submit once this many requests are queued (`iodepth_batch_submit`).
    batch: u32,
    /// Stamp a verify header into every block written.
    verify_writes: bool,
    rate: RateLimiter,
    /// False when no rate is set (the limiter is never asked).
    paced: bool,
    free: Vec<u32>,
    completions: Vec<Completion>,
    /// The next I/O, held back by the rate limit.
    held: Option<NextIo>,
    /// Slots queued to the engine but not yet submitted.
    unissued: Vec<u32>,
    /// The offset generator has no I/O left.
    exhausted: bool,
    /// When `ramp_time` ends (`None`: no ramp, or beyond the clock).
    ramp_end: Option<Instant>,
    measuring: bool,
    /// Start of the measured phase (of the ramp, until it ends).
    start: Instant,
    deadline: Option<Instant>,
    timeline: Timeline,
    last_completion: Instant,
    /// I/Os the engine completed inside `queue` (synchronous engines).
    inline_done: u64,
    /// Think time, flow and minimum rates; none when the job has none.
    pace: Option<Box<Pace>>,
}

impl Drive {
    /// The state at the start of the job, in the ramp if it has one.
    fn new(
        job: &JobSpec,
        depth: u32,
        live: &LiveCounters,
        flow: Option<Flow>,
        seed: u64,
        begin: Instant,
    ) -> Drive {
        let verify_writes = job.verify != Verify::None && job.rw.does(Dir::Write);
        let batch = if job.given.iter().any(|(k, _)| k == "iodepth_batch_submit") {
            // fio: 0 means the same as 1.
            job.iodepth_batch_submit.max(1)
        } else if job.rw.is_random() {
            // Random offsets: submitting up to 4 at once costs less CPU per
            // I/O and keeps the device queue as full as fio's one-by-one.
            4
        } else {
            // Sequential offsets, submitted together, would be merged into
            // one bigger request by the block layer's plug (four 1 MiB
            // reads into one of 4 MiB): the device would not see the job
            // fio runs. One at a time, as fio's default, it does.
            1
        };
        let min_bs = [job.bs[0].min(), job.bs[1].min()];
        let rate = RateLimiter::new(
            job.rate_iops,
            job.rate,
            job.pacing.rate_process,
            min_bs,
            seed,
        );
        let paced = !rate.is_unlimited();
        let ramp_end = (!job.ramp_time.is_zero())
            .then(|| after(begin, job.ramp_time))
            .flatten();
        let measuring = ramp_end.is_none();
        live.phase
            .store(if measuring { 2 } else { 1 }, Ordering::Relaxed);
        Drive {
            depth,
            batch,
            verify_writes,
            rate,
            paced,
            free: (0..depth).rev().collect(),
            completions: Vec::with_capacity(depth as usize),
            held: None,
            unissued: Vec::with_capacity(depth as usize),
            exhausted: false,
            ramp_end,
            measuring,
            start: begin,
            deadline: job
                .runtime
                .and_then(|r| after(begin, job.ramp_time.saturating_add(r))),
            timeline: Timeline::new(begin),
            last_completion: begin,
            inline_done: 0,
            pace: Pace::new(job, flow, begin),
        }
    }

    /// Slots holding a request (queued, submitted or not yet reaped).
    fn in_flight(&self) -> u32 {
        self.depth - self.free.len() as u32
    }

    /// Ends the ramp once its time has come: statistics, timeline and
    /// pacing start again from `now`, and the runtime counts from there.
    fn end_ramp_if_due(
        &mut self,
        job: &JobSpec,
        now: Instant,
        stats: &mut JobStats,
        live: &LiveCounters,
    ) {
        if !self.measuring && self.ramp_end.is_some_and(|t| now >= t) {
            self.measuring = true;
            *stats = JobStats {
                threads: 1,
                ..JobStats::default()
            };
            self.start = now;
            self.timeline = Timeline::new(now);
            self.rate.restart(now);
            if let Some(p) = &mut self.pace {
                p.restart(now);
            }
            self.deadline = job.runtime.and_then(|r| after(now, r));
            live.phase.store(2, Ordering::Relaxed);
        }
    }
}

/// `t + d`, or `None` for a time beyond what the clock can hold (it never
/// comes: no end, no ramp end).
fn after(t: Instant, d: Duration) -> Option<Instant> {
    t.checked_add(d)
}

/// How the completions [`Worker::complete`] records were issued.
#[derive(Clone, Copy)]
enum Issue {
    /// Completed by the engine inside `queue` (psync, sync, null).
    Inline,
    /// Submitted to the kernel and reaped.
    Submitted,
    /// Completed inside `queue` by an engine that timed its operation
    /// itself: that latency (ns) is the completion latency, or no sample
    /// when the I/O made no operation (fio's `FIO_NOSTATS` engines).
    Timed(Option<u64>),
}

/// A latency in whole nanoseconds (saturating: 584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Worker<'_> {
    /// The hot loop: keeps the queue full until the budget, the runtime or
    /// a stop ends the job, then waits for what is in flight and makes the
    /// end sync (`end_fsync`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn drive(
        &mut self,
        engine: &mut dyn IoEngine,
        gen: &mut OffsetGenerator,
        depth: u32,
        live: &LiveCounters,
        stop: &AtomicBool,
        stats: &mut JobStats,
        cue: Cue,
        seed: u64,
    ) -> std::io::Result<()> {
        // Set up: wait for the clones that start with this one.
        let (flow, opened) = cue.ready(stop);
        let begin = opened.unwrap_or_else(Instant::now);
        let mut d = Drive::new(self.job, depth, live, flow, seed, begin);
        // The time of the completions just recorded serves as the next
        // turn's clock: one clock read less per turn (a third of the clock
        // reads of a QD1 job), stale by the few instructions between.
        let mut just_completed: Option<Instant> = None;
        loop {
            let mut now = just_completed.take().unwrap_or_else(Instant::now);
            d.end_ramp_if_due(self.job, now, stats, live);
            if d.measuring {
                if let Some((watch, true)) = &self.steady {
                    watch.tick(now.saturating_duration_since(d.start));
                }
            }
            let stopping = d.exhausted
                || self.steady.as_ref().is_some_and(|(w, _)| w.attained())
                || stats.error.is_some()
                || stop.load(Ordering::Relaxed)
                || d.deadline.is_some_and(|t| now >= t);
            let inflight = d.in_flight();
            if stopping && inflight == 0 {
                break;
            }
            if self.backlog_due() && inflight == 0 {
                self.check_backlog(stats, stop)?;
                now = Instant::now();
            }
            if self.sync_file.is_some() && inflight == 0 {
                let only = self.sync_file.take();
                self.sync_dirty(&mut stats.sync, only)?;
                // The sync took time: the next I/O starts after it.
                now = Instant::now();
            }
            let sleep_for = if stopping {
                None
            } else {
                self.fill(engine, gen, &mut d, now, live, stop, stats)?
            };
            if !d.unissued.is_empty() {
                self.submit(engine, &mut d, stats)?;
            }
            if d.in_flight() > 0 {
                // Take a few completions at a time and refill them at once, so
                // the device queue stays full (as fio does) instead of draining.
                engine.reap(1, d.batch, &mut d.completions)?;
                if d.measuring {
                    stats.complete_counts[batch_bucket(d.completions.len())] += 1;
                }
                d.last_completion = self.complete(&mut d, live, stats, Issue::Submitted);
                just_completed = Some(d.last_completion);
            } else if let Some(p) = d.pace.as_deref_mut().filter(|p| !stopping && p.waiting()) {
                // The queue is drained: think, or let the flow catch up.
                just_completed = Some(p.wait(d.deadline, stop));
            } else if let Some(wait) = sleep_for {
                let cap = d
                    .deadline
                    .map(|t| t.saturating_duration_since(Instant::now()))
                    .unwrap_or(wait);
                std::thread::sleep(wait.min(cap).min(Duration::from_millis(50)));
            }
            publish(live, stats);
        }
        self.finish(d, stats)
    }

    /// Queues I/Os into the free slots, submitting every `batch` of them,
    /// until no slot is free, the generator runs dry, a sync is due, or an
    /// I/O the engine completed at once reaches the deadline or the stop.
    /// Returns how long to wait when the rate limit holds the next I/O back.
    ///
    /// `now` is the turn's clock, read just before: the first I/O queued
    /// starts then, and an I/O after one the engine completed at once
    /// starts at that completion's time; the others read the clock. At QD1
    /// that is one clock read less per I/O (of three). Not when reads are
    /// verified: the check of each completed block runs after its clock was
    /// read, and would count in the next I/O's latency.
    #[allow(clippy::too_many_arguments)]
    fn fill(
        &mut self,
        engine: &mut dyn IoEngine,
        gen: &mut OffsetGenerator,
        d: &mut Drive,
        now: Instant,
        live: &LiveCounters,
        stop: &AtomicBool,
        stats: &mut JobStats,
    ) -> std::io::Result<Option<Duration>> {
        let reuse = !self.verify_reads;
        let mut clock = reuse.then_some(now);
        while self.sync_file.is_none() && !self.backlog_due() {
            let Some(&slot) = d.free.last() else { break };
            if let Some(p) = &mut d.pace {
                if !p.may_issue() {
                    break;
                }
            }
            let io = match d.held.take().or_else(|| gen.next_io()) {
                Some(io) => io,
                None => {
                    d.exhausted = true;
                    break;
                }
            };
            let t = clock.take().unwrap_or_else(Instant::now);
            if d.paced {
                if let Some(wait) = d.rate.wait_before(io.dir, t) {
                    d.held = Some(io);
                    return Ok(Some(wait));
                }
                d.rate.issued(io.dir, io.len);
            }
            d.free.pop();
            if let Some(p) = &mut d.pace {
                p.issued(t);
            }
            let req = self.prepare(slot, &io, t, d.verify_writes);
            match engine.queue(&req)? {
                Some(0) if engine.ended() => {
                    // The engine is done (its peer closed): this request
                    // moved nothing and is not an I/O.
                    d.free.push(slot);
                    d.exhausted = true;
                    break;
                }
                Some(result) => {
                    if d.measuring {
                        stats.count_inline_io();
                    }
                    d.completions.push(Completion { slot, result });
                    let issue = if self.own_latency {
                        Issue::Timed(engine.op_latency())
                    } else {
                        Issue::Inline
                    };
                    let done = self.complete(d, live, stats, issue);
                    d.last_completion = done;
                    clock = reuse.then_some(done);
                    // Synchronous engines stay in this loop for the whole
                    // run: publish the counters for the progress line.
                    d.inline_done += 1;
                    if d.inline_done.is_multiple_of(64) {
                        publish(live, stats);
                    }
                    if d.deadline.is_some_and(|t| done >= t)
                        || stop.load(Ordering::Relaxed)
                        || stats.error.is_some()
                    {
                        break;
                    }
                }
                None => {
                    d.unissued.push(slot);
                    if d.unissued.len() as u32 >= d.batch {
                        self.submit(engine, d, stats)?;
                    }
                }
            }
        }
        Ok(None)
    }

    /// Turns the next I/O into a request on `slot` (taken from the free
    /// list): stamps the block of a write, notes what is in flight on the
    /// slot since `t`, and logs it to the iolog.
    fn prepare(&mut self, slot: u32, io: &NextIo, t: Instant, verify_writes: bool) -> IoRequest {
        let op = match io.dir {
            Dir::Read => Op::Read,
            Dir::Write => {
                self.write_seq += 1;
                // SAFETY: the slot was just taken from the free list.
                let buf = unsafe { self.memory.slot_mut(slot, io.len as usize) };
                // The data options: refill, scramble, verify header (crate::data).
                self.content
                    .before_write(buf, io.offset, self.write_seq, verify_writes);
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
        req
    }

    /// After the loop: the end sync (`end_fsync`), then the measured runtime
    /// (to the last completion) and the timeline.
    fn finish(&mut self, d: Drive, stats: &mut JobStats) -> std::io::Result<()> {
        let mut last_completion = d.last_completion;
        if self.job.end_fsync && self.job.rw.does(Dir::Write) && stats.error.is_none() {
            for i in 0..self.fds.len() {
                self.dirty[i] = true;
            }
            let mut end_sync = LatencyRecorder::default();
            self.sync_dirty(&mut end_sync, None)?;
            last_completion = Instant::now();
        }
        let end = last_completion.max(d.start);
        if let Some(logs) = self.logs.take() {
            logs.finish(end - d.start)?;
        }
        stats.runtime = end - d.start;
        stats.runtime_sum = stats.runtime;
        stats.timeline = d.timeline.finish(end);
        stats.measured_from = Some(d.start);
        Ok(())
    }

    /// Hands queued requests to the kernel and stamps their issue time, so
    /// completion latency starts when the kernel has the I/O (as fio's clat).
    /// The queue depth at submission is counted per I/O submitted, as fio's.
    fn submit(
        &mut self,
        engine: &mut dyn IoEngine,
        d: &mut Drive,
        stats: &mut JobStats,
    ) -> std::io::Result<()> {
        let in_flight = d.in_flight();
        engine.submit()?;
        if d.measuring {
            stats.depth_counts[depth_bucket(in_flight)] += d.unissued.len() as u64;
            stats.submit_counts[batch_bucket(d.unissued.len())] += 1;
        }
        let now = Instant::now();
        for slot in d.unissued.drain(..) {
            self.inflight[slot as usize].issued = now;
        }
        Ok(())
    }

    /// Records a batch of completions that just finished, frees their slots,
    /// and returns the completion time. Completions the engine gave inside
    /// `queue` ([`Issue::Inline`]) were never submitted: like fio's for a
    /// synchronous engine, they have no submission latency, and their total
    /// latency is their completion latency.
    fn complete(
        &mut self,
        d: &mut Drive,
        live: &LiveCounters,
        stats: &mut JobStats,
        issue: Issue,
    ) -> Instant {
        let now = Instant::now();
        let done = d.completions.len() as u64;
        for c in d.completions.drain(..) {
            let io = self.inflight[c.slot as usize];
            d.free.push(c.slot);
            if io.dir == Dir::Write && self.sync_every > 0 {
                self.writes_since_sync += 1;
                if self.writes_since_sync >= self.sync_every {
                    self.sync_file = Some(io.file);
                }
            }
            if c.result < 0 {
                let errno = (-c.result) as i32;
                let err = std::io::Error::from_raw_os_error(errno);
                let class = match io.dir {
                    Dir::Read => ErrorClasses::READ,
                    Dir::Write => ErrorClasses::WRITE,
                };
                if self.job.pacing.tolerates(class, errno) {
                    // continue_on_error: counted, and the job goes on; fio
                    // counts the I/O among the direction's (no bytes moved).
                    stats.total_err += 1;
                    if d.measuring {
                        stats.dirs[io.dir.index()].ios += 1;
                    }
                    if stats.first_error == 0 {
                        stats.first_error = errno;
                    }
                    if self.job.pacing.error_dump {
                        tracing::warn!(
                            "{}: {} error on file {} at offset {} (length {}): {err}",
                            self.job.name,
                            io.dir.name(),
                            self.file_name(io.file),
                            io.offset,
                            io.len
                        );
                    }
                    continue;
                }
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
            let dir = io.dir.index();
            if io.dir == Dir::Write {
                self.dirty[io.file as usize] = true;
                self.written.mark(io.file, io.offset);
                if let Some(b) = &mut self.backlog {
                    b.push(io.file, io.offset, moved);
                }
            } else if self.verify_reads {
                stats.verified += 1;
                // SAFETY: the request on this slot has completed.
                if let Err(e) =
                    verify_block(unsafe { self.slot(c.slot, io.len as usize) }, io.offset)
                {
                    let file = self.file_name(io.file);
                    verify::record_failure(stats, &file, io.offset, u64::from(io.len), &e);
                    if self.job.verify_opts.dump {
                        // SAFETY: as above: the request on this slot has completed.
                        verify::dump(&file, io.offset, unsafe {
                            self.slot(c.slot, moved as usize)
                        });
                    }
                }
            }
            if d.measuring {
                let s = &mut stats.dirs[dir];
                let record_clat = |s: &mut crate::runner::jobstats::DirStats, clat: u64| {
                    s.clat.record(clat);
                    if let Some(l) = &live.latency {
                        l[dir].record(clat);
                    }
                };
                let (clat, slat) = match issue {
                    Issue::Inline => {
                        let clat = nanos(now.saturating_duration_since(io.issued));
                        record_clat(s, clat);
                        s.lat.record(clat);
                        (Some(clat), None)
                    }
                    Issue::Submitted => {
                        let clat = nanos(now.saturating_duration_since(io.issued));
                        record_clat(s, clat);
                        let slat = nanos(io.issued.saturating_duration_since(io.start));
                        s.slat.record(slat);
                        s.lat.record(clat.saturating_add(slat));
                        (Some(clat), Some(slat))
                    }
                    Issue::Timed(Some(clat)) => {
                        record_clat(s, clat);
                        (Some(clat), None)
                    }
                    Issue::Timed(None) => (None, None),
                };
                if let (Some(logs), Some(clat)) = (&mut self.logs, clat) {
                    let sample = Sample {
                        at: now.saturating_duration_since(d.start),
                        dir: io.dir,
                        bytes: moved,
                        offset: io.offset,
                        slat,
                        clat,
                        lat: clat.saturating_add(slat.unwrap_or(0)),
                        prio: 0,
                    };
                    if let Err(e) = logs.record(&sample) {
                        stats.error.get_or_insert_with(|| e.to_string());
                    }
                }
                s.ios += 1;
                s.bytes += moved;
                if let Some((watch, _)) = &self.steady {
                    watch.add(moved);
                }
                if moved < io.len as u64 {
                    s.short += 1;
                }
                d.timeline.add(now, dir, 1, moved);
            }
        }
        if let Some(p) = &mut d.pace {
            p.completed(done, now, stats, self.job);
        }
        now
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
}
