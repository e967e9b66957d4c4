//! Replays a trace inside a run directory: recreates the files as they were
//! first seen (filled with incompressible data), then plays each thread's
//! operations in order with the recorded think time between them, scaled by
//! the speed, keeping the recorded order between threads (an operation waits
//! for whatever other threads had finished before it began). Every path goes through the sandbox: whatever the trace says,
//! nothing outside the run directory is touched.

use super::budget::Allowance;
use super::format::{OpKind, OpenFlags, Trace};
use super::halt::{Bounds, Guard, Halt};
use super::layout::{contained, is_disk_full, lay_out};
use super::limits::{MAX_REPLAY_BUFFERS, SPEED_RANGE};
use crate::buffer::AlignedBuf;
use crate::sandbox::{RunDir, SandboxError};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How fast to replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// Think time divided by this factor.
    Factor(f64),
    /// No think time at all.
    Max,
}

impl std::str::FromStr for Speed {
    type Err = String;
    fn from_str(s: &str) -> Result<Speed, String> {
        if s == "max" {
            return Ok(Speed::Max);
        }
        let (slow, fast) = SPEED_RANGE;
        match s.parse::<f64>() {
            Ok(f) if (slow..=fast).contains(&f) => Ok(Speed::Factor(f)),
            _ => {
                let shown: String = s.chars().take(40).collect();
                Err(format!(
                    "speed '{shown}' is not a factor from {slow} to {fast} or 'max'"
                ))
            }
        }
    }
}

/// Options of a replay.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// Think-time scaling.
    pub speed: Speed,
    /// Keep the recorded threads (true) or play everything on one thread.
    pub keep_threads: bool,
}

/// Figures for one kind of operation.
#[derive(Debug, Clone, Serialize)]
pub struct OpSummary {
    /// Operation name.
    pub op: String,
    /// How many were replayed.
    pub count: u64,
    /// Bytes read or written.
    pub bytes: u64,
    /// How many failed on replay.
    pub errors: u64,
    /// Mean latency in µs.
    pub mean_us: f64,
    /// Median latency in µs.
    pub p50_us: f64,
    /// 99th percentile in µs.
    pub p99_us: f64,
    /// Largest latency in µs.
    pub max_us: f64,
}

/// What a replay did.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayResult {
    /// Per operation type, by name.
    pub ops: Vec<OpSummary>,
    /// Operations replayed (mmap and implicit opens are not).
    pub total_ops: u64,
    /// Operations noted but not replayed (mmap).
    pub skipped: u64,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// Why the replay stopped before its end, if it did (the figures are
    /// what was measured until then).
    pub halted: Option<Halt>,
    /// Replay wall time in seconds.
    pub seconds: f64,
    /// The recording's length in seconds.
    pub original_seconds: f64,
    /// seconds / original_seconds.
    pub time_ratio: f64,
    /// Files recreated before the replay.
    pub files_created: u64,
    /// Bytes written to recreate them.
    pub bytes_laid_out: u64,
}

struct Stat {
    count: u64,
    bytes: u64,
    errors: u64,
    lat: Histogram<u64>,
}

impl Stat {
    fn new() -> Stat {
        Stat {
            count: 0,
            bytes: 0,
            errors: 0,
            lat: Histogram::new_with_bounds(1, 3_600_000_000_000, 2).expect("valid bounds"),
        }
    }
}

/// One replay thread's own state: its I/O buffer and the descriptors it
/// has looked up (handle ids are never reused, so a cached one stays right).
struct Lane {
    /// Made on the first read or write, grown up to [`LANE_BUF_MAX`].
    buf: Option<AlignedBuf>,
    cache: HashMap<u32, Arc<OwnedFd>>,
}

/// The most buffer memory one replay thread holds: longer reads and writes
/// are replayed in chunks of this size.
const LANE_BUF_MAX: u64 = 64 << 20;

impl Lane {
    /// The I/O buffer for a transfer of `len` bytes: at least `len` bytes
    /// or [`LANE_BUF_MAX`], whichever is smaller.
    fn buffer(&mut self, len: u64) -> Result<&mut AlignedBuf, OpError> {
        // At most LANE_BUF_MAX, hence a usize.
        let want = len.min(LANE_BUF_MAX) as usize;
        let buf = match self.buf.take() {
            Some(b) if b.len() >= want => b,
            _ => AlignedBuf::zeroed(want).map_err(|e| OpError::Os(e.into()))?,
        };
        Ok(self.buf.insert(buf))
    }
}

/// Reads (or writes) `len` bytes at `offset` through `buf`, in chunks of the
/// buffer's size; stops early at a short transfer, as the recorded program
/// would have seen one. Returns the bytes moved.
fn transfer(
    fd: i32,
    buf: &mut AlignedBuf,
    offset: u64,
    len: u64,
    write: bool,
) -> Result<u64, OpError> {
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        let chunk = buf.prefix_mut(n).map_err(|e| OpError::Os(e.into()))?;
        let end = offset.checked_add(done).ok_or(OpError::Offset(offset))?;
        let at = off(end)?;
        // SAFETY: pointer and length come from the same slice; valid descriptor.
        let r = check(unsafe {
            if write {
                libc::pwrite(fd, chunk.as_ptr().cast(), chunk.len(), at)
            } else {
                libc::pread(fd, chunk.as_mut_ptr().cast(), chunk.len(), at)
            }
        })?;
        done += r;
        if r < n as u64 {
            break;
        }
    }
    Ok(done)
}

/// Handles shared by the replay threads.
type Handles = Mutex<HashMap<u32, Arc<OwnedFd>>>;

fn open_flags(f: &OpenFlags) -> i32 {
    let mut fl = match (f.read, f.write) {
        (true, true) => libc::O_RDWR,
        (false, true) => libc::O_WRONLY,
        _ => libc::O_RDONLY,
    };
    for (on, bit) in [
        (f.create, libc::O_CREAT),
        (f.truncate, libc::O_TRUNC),
        (f.append, libc::O_APPEND),
        (f.exclusive, libc::O_EXCL),
        (f.direct, libc::O_DIRECT),
        (f.sync, libc::O_SYNC),
        (f.dsync, libc::O_DSYNC),
    ] {
        if on {
            fl |= bit;
        }
    }
    if f.implicit {
        fl = libc::O_RDWR | libc::O_CREAT;
    }
    fl
}

/// Why one operation failed on replay.
#[derive(Debug, thiserror::Error)]
enum OpError {
    /// The system call failed.
    #[error("{0}")]
    Os(std::io::Error),
    /// The sandbox refused or the OS failed a path operation.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The handle was not open when the operation came.
    #[error("handle {0} is not open")]
    NotOpen(u32),
    /// The operation names the run directory itself.
    #[error("the operation names the run directory itself")]
    RunDir,
    /// An offset does not fit the system call.
    #[error("offset {0} does not fit a file offset")]
    Offset(u64),
    /// The operation would pass the byte grant.
    #[error(transparent)]
    Budget(#[from] super::budget::OverBudget),
}

impl OpError {
    /// The halt this failure forces on the whole replay, if any: a full
    /// disk or the byte grant (later operations would only fail too).
    fn halt(&self, what: &str) -> Option<Halt> {
        let errno = match self {
            OpError::Os(e) => e.raw_os_error(),
            OpError::Sandbox(e) => e.errno(),
            OpError::Budget(b) => return Some(Halt::Budget(format!("{what}: {b}"))),
            _ => None,
        };
        is_disk_full(errno).then(|| Halt::DiskFull(format!("{what}: {self}")))
    }
}

fn check(r: isize) -> Result<u64, OpError> {
    if r < 0 {
        Err(OpError::Os(std::io::Error::last_os_error()))
    } else {
        Ok(r as u64)
    }
}

/// An offset or length as the system calls take it.
fn off(v: u64) -> Result<i64, OpError> {
    i64::try_from(v).map_err(|_| OpError::Offset(v))
}

/// Cross-thread order as recorded: an operation waits for every operation
/// of any thread that had finished before it started (so an unlink never
/// overtakes the writes it followed, at any speed).
struct Order {
    /// Per operation: how many operations (by end time) must be done first.
    need: Vec<usize>,
    /// Per operation: its rank by end time.
    rank: Vec<usize>,
    /// Done flags by rank, and how many leading ranks are done.
    state: Mutex<(Vec<bool>, usize)>,
    wake: Condvar,
}

impl Order {
    fn new(t: &Trace) -> Order {
        let end = |i: usize| t.ops[i].start_us.saturating_add(t.ops[i].dur_us);
        let mut by_end: Vec<usize> = (0..t.ops.len()).collect();
        by_end.sort_by_key(|&i| (end(i), i));
        let ends: Vec<u64> = by_end.iter().map(|&i| end(i)).collect();
        let mut rank = vec![0; t.ops.len()];
        for (r, &i) in by_end.iter().enumerate() {
            rank[i] = r;
        }
        let need = t
            .ops
            .iter()
            .map(|o| ends.partition_point(|&e| e < o.start_us))
            .collect();
        Order {
            need,
            rank,
            state: Mutex::new((vec![false; t.ops.len()], 0)),
            wake: Condvar::new(),
        }
    }

    /// Waits until operation `i` may start (or the replay halts).
    fn wait(&self, i: usize, guard: &Guard) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while st.1 < self.need[i] && !guard.halted() {
            st = match self.wake.wait_timeout(st, super::halt::POLL) {
                Ok((st, _)) => st,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// Marks operation `i` done.
    fn done(&self, i: usize) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.0[self.rank[i]] = true;
        let before = st.1;
        while st.1 < st.0.len() && st.0[st.1] {
            st.1 += 1;
        }
        if st.1 != before {
            self.wake.notify_all();
        }
    }
}

struct Player<'a> {
    order: Option<Order>,
    trace: &'a Trace,
    dir: &'a RunDir,
    handles: &'a Handles,
    guard: &'a Guard<'a>,
    allowance: &'a Allowance,
}

/// What one replay thread measured.
type LaneResult = (Vec<(&'static str, Stat)>, u64, Option<String>);

impl Player<'_> {
    /// The descriptor of a handle: from this thread's cache, else from the
    /// shared table (waiting a little for another thread to open it).
    fn fd(&self, lane: &mut Lane, h: u32) -> Result<RawFd, OpError> {
        if let Some(fd) = lane.cache.get(&h) {
            return Ok(fd.as_raw_fd());
        }
        let until = Instant::now() + Duration::from_secs(1);
        loop {
            let shared = self
                .handles
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&h)
                .cloned();
            if let Some(fd) = shared {
                let raw = fd.as_raw_fd();
                lane.cache.insert(h, fd);
                return Ok(raw);
            }
            if Instant::now() > until || self.guard.halted() {
                return Err(OpError::NotOpen(h));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn path(&self, f: u32) -> Result<String, OpError> {
        let p = self
            .trace
            .files
            .get(f as usize)
            .map(|e| contained(&e.path))
            .unwrap_or_default();
        if p.is_empty() {
            return Err(OpError::RunDir);
        }
        Ok(p)
    }

    /// Carries out one operation; returns the bytes moved. What may grow a
    /// file is charged to the allowance first.
    fn execute(&self, kind: &OpKind, lane: &mut Lane) -> Result<u64, OpError> {
        self.allowance.charge(kind)?;
        match kind {
            OpKind::Open {
                handle,
                file,
                flags,
            } => {
                let fd = self
                    .dir
                    .open(&self.path(*file)?, open_flags(flags), 0o644)?;
                self.handles
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(*handle, Arc::new(fd));
                Ok(0)
            }
            OpKind::Read {
                handle,
                offset,
                len,
                ..
            } => {
                let fd = self.fd(lane, *handle)?;
                transfer(fd, lane.buffer(*len)?, *offset, *len, false)
            }
            OpKind::Write {
                handle,
                offset,
                len,
                ..
            } => {
                let fd = self.fd(lane, *handle)?;
                transfer(fd, lane.buffer(*len)?, *offset, *len, true)
            }
            OpKind::Lseek { handle, offset } => {
                let fd = self.fd(lane, *handle)?;
                let at = off(*offset)?;
                // SAFETY: valid descriptor.
                check(unsafe { libc::lseek(fd, at, libc::SEEK_SET) } as isize).map(|_| 0)
            }
            OpKind::Fsync(h) => {
                let fd = self.fd(lane, *h)?;
                // SAFETY: valid descriptor.
                check(unsafe { libc::fsync(fd) } as isize)
            }
            OpKind::Fdatasync(h) => {
                let fd = self.fd(lane, *h)?;
                // SAFETY: valid descriptor.
                check(unsafe { libc::fdatasync(fd) } as isize)
            }
            OpKind::SyncFileRange {
                handle,
                offset,
                len,
            } => {
                let fd = self.fd(lane, *handle)?;
                let (at, n) = (off(*offset)?, off(*len)?);
                // SAFETY: valid descriptor.
                check(
                    unsafe { libc::sync_file_range(fd, at, n, libc::SYNC_FILE_RANGE_WRITE) }
                        as isize,
                )
            }
            OpKind::Ftruncate { handle, len } => {
                let fd = self.fd(lane, *handle)?;
                let n = off(*len)?;
                // SAFETY: valid descriptor.
                check(unsafe { libc::ftruncate(fd, n) } as isize)
            }
            OpKind::Fallocate {
                handle,
                offset,
                len,
            } => {
                let fd = self.fd(lane, *handle)?;
                let (at, n) = (off(*offset)?, off(*len)?);
                // SAFETY: valid descriptor.
                check(unsafe { libc::fallocate(fd, 0, at, n) } as isize)
            }
            OpKind::Close(h) => {
                self.fd(lane, *h)?;
                self.handles
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(h);
                lane.cache.remove(h);
                Ok(0)
            }
            OpKind::Fstat(h) => {
                let fd = self.fd(lane, *h)?;
                // SAFETY: fstat fills the zeroed struct.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                check(unsafe { libc::fstat(fd, &mut st) } as isize)
            }
            OpKind::Copy { from, to, len } => {
                let (a, b) = (self.fd(lane, *from)?, self.fd(lane, *to)?);
                let n = usize::try_from(*len).map_err(|_| OpError::Offset(*len))?;
                // SAFETY: valid descriptors; null offsets use the file positions.
                check(unsafe {
                    libc::copy_file_range(a, std::ptr::null_mut(), b, std::ptr::null_mut(), n, 0)
                })
            }
            OpKind::Stat(f) => Ok(self.dir.stat(&self.path(*f)?).map(|_| 0)?),
            OpKind::Unlink(f) | OpKind::Rmdir(f) => {
                Ok(self.dir.remove(&self.path(*f)?).map(|_| 0)?)
            }
            OpKind::Mkdir(f) => Ok(self.dir.mkdir(&self.path(*f)?).map(|_| 0)?),
            OpKind::Rename { from, to } => Ok(self
                .dir
                .rename(&self.path(*from)?, &self.path(*to)?)
                .map(|_| 0)?),
            OpKind::Mmap { .. } => Ok(0),
        }
    }

    /// Plays `ops` (indices into the trace) in order on this thread.
    fn play(&self, ops: &[usize], speed: Speed, t0: Instant) -> LaneResult {
        let mut stats: Vec<(&'static str, Stat)> = Vec::new();
        let mut skipped = 0;
        let mut first_error = None;
        let mut lane = Lane {
            buf: None,
            cache: HashMap::new(),
        };
        // The virtual clock: where this thread should be, in seconds.
        let mut due = 0.0f64;
        let mut prev_end_us: Option<u64> = None;
        for &i in ops {
            if self.guard.halted() {
                break;
            }
            let op = &self.trace.ops[i];
            if let Speed::Factor(f) = speed {
                let gap_us = match prev_end_us {
                    Some(end) => op.start_us.saturating_sub(end),
                    None => op.start_us,
                };
                due += gap_us as f64 / 1e6 / f;
                if !self.guard.sleep_until(t0, due) {
                    break;
                }
            }
            prev_end_us = Some(op.start_us.saturating_add(op.dur_us));
            let counted = match &op.kind {
                OpKind::Mmap { .. } => {
                    skipped += 1;
                    false
                }
                OpKind::Open { flags, .. } => !flags.implicit,
                _ => true,
            };
            if let Some(order) = &self.order {
                order.wait(i, self.guard);
                if self.guard.halted() {
                    break;
                }
            }
            let started = Instant::now();
            let result = self.execute(&op.kind, &mut lane);
            let took = started.elapsed();
            if let Some(order) = &self.order {
                order.done(i);
            }
            // The virtual clock moves by the op's own time, so oversleeping
            // once is absorbed by the next gap instead of adding up.
            due += took.as_secs_f64();
            if let Err(e) = &result {
                if let Some(h) = e.halt(&format!("{} (record {})", op.kind.name(), i + 1)) {
                    self.guard.halt(h);
                }
            }
            if !counted {
                continue;
            }
            let name = op.kind.name();
            let at = match stats.iter().position(|(n, _)| *n == name) {
                Some(at) => at,
                None => {
                    stats.push((name, Stat::new()));
                    stats.len() - 1
                }
            };
            let s = &mut stats[at].1;
            s.count += 1;
            match result {
                Ok(bytes) => {
                    s.bytes = s.bytes.saturating_add(bytes);
                    s.lat.saturating_record(
                        u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1),
                    );
                }
                Err(e) => {
                    s.errors += 1;
                    first_error.get_or_insert_with(|| {
                        format!("{} (record {}): {e}", op.kind.name(), i + 1)
                    });
                }
            }
        }
        (stats, skipped, first_error)
    }
}

/// The replay's threads: the operations of each (one lane for everything
/// with `keep_threads` off).
fn lanes(t: &Trace, keep_threads: bool) -> Vec<Vec<usize>> {
    if !keep_threads {
        return vec![(0..t.ops.len()).collect()];
    }
    let mut lanes = vec![Vec::new(); t.threads.len()];
    for (i, op) in t.ops.iter().enumerate() {
        if let Some(l) = lanes.get_mut(op.thread as usize) {
            l.push(i);
        }
    }
    lanes
}

/// Threads the replay starts for `t` under `o`.
pub fn threads_needed(t: &Trace, o: ReplayOptions) -> usize {
    if o.keep_threads {
        t.threads.len().max(1)
    } else {
        1
    }
}

/// Memory the replay threads' I/O buffers may take together: each as large
/// as its largest transfer, at least 1 MiB; more than
/// [`MAX_REPLAY_BUFFERS`] is refused before anything starts.
fn check_buffers(t: &Trace, lanes: &[Vec<usize>]) -> Result<(), String> {
    let total = lanes.iter().fold(0u64, |sum, lane| {
        let largest = lane
            .iter()
            .map(|&i| match t.ops[i].kind {
                OpKind::Read { len, .. } | OpKind::Write { len, .. } => len,
                _ => 0,
            })
            .max()
            .unwrap_or(0)
            .max(1 << 20);
        sum.saturating_add(largest)
    });
    if total > MAX_REPLAY_BUFFERS {
        return Err(format!(
            "the replay's {} thread(s) would need {} MiB of I/O buffers; at most {} MiB are allowed (replay with --threads 1, or fewer large transfers)",
            lanes.len(),
            total >> 20,
            MAX_REPLAY_BUFFERS >> 20
        ));
    }
    Ok(())
}

/// Stack of each replay thread: it only loops over operations.
const STACK_BYTES: usize = 256 << 10;

fn replay(
    t: &Trace,
    dir: &RunDir,
    o: ReplayOptions,
    lanes: &[Vec<usize>],
    guard: &Guard,
    allowance: &Allowance,
) -> ReplayResult {
    let handles: Handles = Mutex::new(HashMap::new());
    let player = Player {
        order: (lanes.len() > 1).then(|| Order::new(t)),
        trace: t,
        dir,
        handles: &handles,
        guard,
        allowance,
    };
    let t0 = Instant::now();
    let results: Vec<LaneResult> = std::thread::scope(|s| {
        let mut running = Vec::with_capacity(lanes.len());
        for (n, lane) in lanes.iter().enumerate() {
            let player = &player;
            let spawned = std::thread::Builder::new()
                .name(format!("replay-{n}"))
                .stack_size(STACK_BYTES)
                .spawn_scoped(s, move || player.play(lane, o.speed, t0));
            match spawned {
                Ok(h) => running.push(h),
                Err(e) => {
                    guard.halt(Halt::Failed(format!(
                        "could not start replay thread {} of {}: {e}",
                        n + 1,
                        lanes.len()
                    )));
                    break;
                }
            }
        }
        running
            .into_iter()
            .filter_map(|h| match h.join() {
                Ok(r) => Some(r),
                Err(_) => {
                    guard.halt(Halt::Failed("a replay thread died".into()));
                    None
                }
            })
            .collect()
    });
    let seconds = t0.elapsed().as_secs_f64();
    let mut merged: BTreeMap<&'static str, Stat> = BTreeMap::new();
    let mut skipped = 0u64;
    let mut first_error = None;
    for (stats, sk, err) in results {
        skipped = skipped.saturating_add(sk);
        if first_error.is_none() {
            first_error = err;
        }
        for (name, s) in stats {
            let m = merged.entry(name).or_insert_with(Stat::new);
            m.count += s.count;
            m.bytes = m.bytes.saturating_add(s.bytes);
            m.errors += s.errors;
            let _ = m.lat.add(&s.lat);
        }
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    let ops: Vec<OpSummary> = merged
        .into_iter()
        .map(|(name, s)| OpSummary {
            op: name.to_string(),
            count: s.count,
            bytes: s.bytes,
            errors: s.errors,
            mean_us: s.lat.mean() / 1000.0,
            p50_us: us(s.lat.value_at_quantile(0.5)),
            p99_us: us(s.lat.value_at_quantile(0.99)),
            max_us: us(s.lat.max()),
        })
        .collect();
    let original_seconds = t.duration_us as f64 / 1e6;
    ReplayResult {
        total_ops: ops.iter().map(|o| o.count).sum(),
        ops,
        skipped,
        first_error,
        halted: guard.reason(),
        seconds,
        original_seconds,
        time_ratio: seconds / original_seconds.max(1e-9),
        files_created: 0,
        bytes_laid_out: 0,
    }
}

/// Why a replay could not start.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The trace asks for more than a replay may use (bad input).
    #[error("{0}")]
    Refused(String),
    /// Laying out the files stopped (signal, deadline, full disk, failure).
    #[error("{0}")]
    Layout(Halt),
}

/// Recreates the files, then replays within `bounds`; the result says how
/// much was laid out, and why it stopped early if it did. Refuses, before
/// writing anything, a trace whose threads' buffers pass
/// [`MAX_REPLAY_BUFFERS`] or whose estimate passes `bounds.max_bytes`.
pub fn lay_out_and_replay(
    t: &Trace,
    dir: &RunDir,
    o: ReplayOptions,
    bounds: Bounds,
) -> Result<ReplayResult, ReplayError> {
    let lanes = lanes(t, o.keep_threads);
    check_buffers(t, &lanes).map_err(ReplayError::Refused)?;
    let need = super::budget::bytes_needed(t);
    if need > bounds.max_bytes {
        return Err(ReplayError::Refused(format!(
            "the replay may write {need} bytes but only {} are granted",
            bounds.max_bytes
        )));
    }
    let guard = Guard::new(bounds);
    let allowance = Allowance::new(t, guard.max_bytes());
    let (files, bytes) = lay_out(t, dir, &guard).map_err(ReplayError::Layout)?;
    let mut r = replay(t, dir, o, &lanes, &guard, &allowance);
    r.files_created = files;
    r.bytes_laid_out = bytes;
    Ok(r)
}
