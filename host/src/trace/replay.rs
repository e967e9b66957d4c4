//! Replays a trace inside a run directory: recreates the files as they were
//! first seen (filled with incompressible data), then plays each thread's
//! operations in order with the recorded think time between them, scaled by
//! the speed, keeping the recorded order between threads (an operation waits
//! for whatever other threads had finished before it began). Every path goes through the sandbox: whatever the trace says,
//! nothing outside the run directory is touched.

use super::format::{OpKind, OpenFlags, Trace};
use crate::buffer::AlignedBuf;
use crate::sandbox::RunDir;
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
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
        match s.parse::<f64>() {
            Ok(f) if f > 0.0 && f.is_finite() => Ok(Speed::Factor(f)),
            _ => Err(format!("speed '{s}' is not a positive factor or 'max'")),
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

/// A path from a trace made safe: relative, `.` and `..` resolved lexically
/// and never above the root. Empty for the root itself.
pub fn contained(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    parts.join("/")
}

/// Bytes the replay may write at most: each file's largest extent.
pub fn bytes_needed(t: &Trace) -> u64 {
    let mut extent: Vec<u64> = t.files.iter().map(|f| f.size.unwrap_or(0)).collect();
    let mut file_of: HashMap<u32, u32> = HashMap::new();
    for op in &t.ops {
        match &op.kind {
            OpKind::Open { handle, file, .. } => {
                file_of.insert(*handle, *file);
            }
            OpKind::Write {
                handle,
                offset,
                len,
                ..
            }
            | OpKind::Fallocate {
                handle,
                offset,
                len,
            } => {
                if let Some(f) = file_of.get(handle) {
                    let e = &mut extent[*f as usize];
                    *e = (*e).max(offset + len);
                }
            }
            OpKind::Ftruncate { handle, len } => {
                if let Some(f) = file_of.get(handle) {
                    let e = &mut extent[*f as usize];
                    *e = (*e).max(*len);
                }
            }
            OpKind::Copy { to, len, .. } => {
                if let Some(f) = file_of.get(to) {
                    extent[*f as usize] += len;
                }
            }
            _ => {}
        }
    }
    extent.iter().sum()
}

/// Directories: parents of every path, and whatever the trace mkdirs or rmdirs.
fn directories(t: &Trace) -> (HashSet<String>, HashSet<String>) {
    let mut dirs = HashSet::new();
    let mut made = HashSet::new();
    for f in &t.files {
        let p = contained(&f.path);
        let mut acc = String::new();
        let parts: Vec<&str> = p.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            if !acc.is_empty() {
                acc.push('/');
            }
            acc.push_str(part);
            dirs.insert(acc.clone());
        }
    }
    for op in &t.ops {
        match op.kind {
            OpKind::Mkdir(f) => {
                let p = contained(&t.files[f as usize].path);
                dirs.insert(p.clone());
                made.insert(p);
            }
            OpKind::Rmdir(f) => {
                dirs.insert(contained(&t.files[f as usize].path));
            }
            _ => {}
        }
    }
    (dirs, made)
}

/// Recreates the tree as first seen: directories (except those the trace
/// makes itself), and files that existed, at their size, with
/// incompressible data. Returns (files, bytes).
pub fn lay_out(t: &Trace, dir: &RunDir) -> Result<(u64, u64), String> {
    let (dirs, made) = directories(t);
    let under_made = |p: &str| {
        made.iter()
            .any(|m| p == m || p.starts_with(&format!("{m}/")))
    };
    let mut sorted: Vec<&String> = dirs.iter().filter(|d| !under_made(d)).collect();
    sorted.sort();
    for d in sorted {
        if !dir.exists(d).map_err(|e| e.to_string())? {
            dir.mkdir(d).map_err(|e| e.to_string())?;
        }
    }
    let mut rng = SmallRng::seed_from_u64(0x7ace);
    let mut chunk = vec![0u8; 1 << 20];
    let (mut files, mut bytes) = (0, 0);
    for f in &t.files {
        let p = contained(&f.path);
        let Some(size) = f.size else { continue };
        if p.is_empty() || dirs.contains(&p) || under_made(&p) {
            continue;
        }
        let fd = dir
            .open(&p, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644)
            .map_err(|e| e.to_string())?;
        let mut off = 0u64;
        while off < size {
            rng.fill_bytes(&mut chunk);
            let n = chunk.len().min((size - off) as usize);
            pwrite_all(&fd, &chunk[..n], off).map_err(|e| format!("laying out {p}: {e}"))?;
            off += n as u64;
        }
        files += 1;
        bytes += size;
    }
    Ok((files, bytes))
}

fn pwrite_all(fd: &OwnedFd, mut buf: &[u8], mut off: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: valid descriptor and buffer.
        let n = unsafe { libc::pwrite(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), off as i64) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        buf = &buf[n as usize..];
        off += n as u64;
    }
    Ok(())
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
    cache: Vec<Option<Arc<OwnedFd>>>,
}

/// The most buffer memory one replay thread holds: longer reads and writes
/// are replayed in chunks of this size.
const LANE_BUF_MAX: u64 = 64 << 20;

impl Lane {
    /// The I/O buffer for a transfer of `len` bytes: at least `len` bytes
    /// or [`LANE_BUF_MAX`], whichever is smaller.
    fn buffer(&mut self, len: u64) -> Result<&mut AlignedBuf, String> {
        // At most LANE_BUF_MAX, hence a usize.
        let want = len.min(LANE_BUF_MAX) as usize;
        match &mut self.buf {
            Some(b) if b.len() >= want => {}
            slot => *slot = Some(AlignedBuf::zeroed(want).map_err(|e| e.to_string())?),
        }
        self.buf
            .as_mut()
            .ok_or_else(|| "replay buffer missing".to_string())
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
) -> Result<u64, String> {
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        let chunk = buf.prefix_mut(n).map_err(|e| e.to_string())?;
        let at = offset
            .checked_add(done)
            .and_then(|o| i64::try_from(o).ok())
            .ok_or_else(|| format!("offset {offset} + {done} is beyond the largest file offset"))?;
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

fn check(r: isize) -> Result<u64, String> {
    if r < 0 {
        Err(std::io::Error::last_os_error().to_string())
    } else {
        Ok(r as u64)
    }
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
        let mut by_end: Vec<usize> = (0..t.ops.len()).collect();
        by_end.sort_by_key(|&i| (t.ops[i].start_us + t.ops[i].dur_us, i));
        let ends: Vec<u64> = by_end
            .iter()
            .map(|&i| t.ops[i].start_us + t.ops[i].dur_us)
            .collect();
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

    /// Waits until operation `i` may start (or a stop is asked).
    fn wait(&self, i: usize, stop: &AtomicBool) {
        let mut st = self.state.lock().expect("order");
        while st.1 < self.need[i] && !stop.load(Ordering::Relaxed) {
            st = self
                .wake
                .wait_timeout(st, Duration::from_millis(50))
                .expect("order")
                .0;
        }
    }

    /// Marks operation `i` done.
    fn done(&self, i: usize) {
        let mut st = self.state.lock().expect("order");
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
    stop: &'a AtomicBool,
}

impl Player<'_> {
    /// The descriptor of a handle: from this thread's cache, else from the
    /// shared table (waiting a little for another thread to open it).
    fn fd(&self, lane: &mut Lane, h: u32) -> Result<RawFd, String> {
        if let Some(Some(fd)) = lane.cache.get(h as usize) {
            return Ok(fd.as_raw_fd());
        }
        let until = Instant::now() + Duration::from_secs(1);
        loop {
            if let Some(fd) = self.handles.lock().expect("handles").get(&h) {
                if lane.cache.len() <= h as usize {
                    lane.cache.resize(h as usize + 1, None);
                }
                let raw = fd.as_raw_fd();
                lane.cache[h as usize] = Some(fd.clone());
                return Ok(raw);
            }
            if Instant::now() > until || self.stop.load(Ordering::Relaxed) {
                return Err(format!("handle {h} is not open"));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn path(&self, f: u32) -> Result<String, String> {
        let p = contained(&self.trace.files[f as usize].path);
        if p.is_empty() {
            return Err("the operation names the run directory itself".into());
        }
        Ok(p)
    }

    /// Carries out one operation; returns the bytes moved.
    fn execute(&self, kind: &OpKind, lane: &mut Lane) -> Result<u64, String> {
        match kind {
            OpKind::Open {
                handle,
                file,
                flags,
            } => {
                let fd = self
                    .dir
                    .open(&self.path(*file)?, open_flags(flags), 0o644)
                    .map_err(|e| e.to_string())?;
                self.handles
                    .lock()
                    .expect("handles")
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
                // SAFETY: valid descriptor.
                check(unsafe { libc::lseek(fd, *offset as i64, libc::SEEK_SET) } as isize)
                    .map(|_| 0)
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
                // SAFETY: valid descriptor.
                check(unsafe {
                    libc::sync_file_range(
                        fd,
                        *offset as i64,
                        *len as i64,
                        libc::SYNC_FILE_RANGE_WRITE,
                    )
                } as isize)
            }
            OpKind::Ftruncate { handle, len } => {
                let fd = self.fd(lane, *handle)?;
                // SAFETY: valid descriptor.
                check(unsafe { libc::ftruncate(fd, *len as i64) } as isize)
            }
            OpKind::Fallocate {
                handle,
                offset,
                len,
            } => {
                let fd = self.fd(lane, *handle)?;
                // SAFETY: valid descriptor.
                check(unsafe { libc::fallocate(fd, 0, *offset as i64, *len as i64) } as isize)
            }
            OpKind::Close(h) => {
                self.fd(lane, *h)?;
                self.handles.lock().expect("handles").remove(h);
                lane.cache[*h as usize] = None;
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
                // SAFETY: valid descriptors; null offsets use the file positions.
                check(unsafe {
                    libc::copy_file_range(
                        a,
                        std::ptr::null_mut(),
                        b,
                        std::ptr::null_mut(),
                        *len as usize,
                        0,
                    )
                })
            }
            OpKind::Stat(f) => self
                .dir
                .stat(&self.path(*f)?)
                .map(|_| 0)
                .map_err(|e| e.to_string()),
            OpKind::Unlink(f) | OpKind::Rmdir(f) => self
                .dir
                .remove(&self.path(*f)?)
                .map(|_| 0)
                .map_err(|e| e.to_string()),
            OpKind::Mkdir(f) => self
                .dir
                .mkdir(&self.path(*f)?)
                .map(|_| 0)
                .map_err(|e| e.to_string()),
            OpKind::Rename { from, to } => self
                .dir
                .rename(&self.path(*from)?, &self.path(*to)?)
                .map(|_| 0)
                .map_err(|e| e.to_string()),
            OpKind::Mmap { .. } => Ok(0),
        }
    }

    /// Plays `ops` (indices into the trace) in order on this thread.
    fn play(
        &self,
        ops: &[usize],
        speed: Speed,
        t0: Instant,
    ) -> (Vec<(&'static str, Stat)>, u64, Option<String>) {
        let mut stats: Vec<(&'static str, Stat)> = Vec::new();
        let mut skipped = 0;
        let mut first_error = None;
        let mut lane = Lane {
            buf: None,
            cache: Vec::new(),
        };
        // The virtual clock: where this thread should be, in seconds.
        let mut due = 0.0f64;
        let mut prev_end_us: Option<u64> = None;
        for &i in ops {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            let op = &self.trace.ops[i];
            if let Speed::Factor(f) = speed {
                let gap_us = match prev_end_us {
                    Some(end) => op.start_us.saturating_sub(end),
                    None => op.start_us,
                };
                due += gap_us as f64 / 1e6 / f;
                let now = t0.elapsed().as_secs_f64();
                if due > now + 50e-6 {
                    std::thread::sleep(Duration::from_secs_f64(due - now));
                }
            }
            prev_end_us = Some(op.start_us + op.dur_us);
            let counted = match &op.kind {
                OpKind::Mmap { .. } => {
                    skipped += 1;
                    false
                }
                OpKind::Open { flags, .. } => !flags.implicit,
                _ => true,
            };
            if let Some(order) = &self.order {
                order.wait(i, self.stop);
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
                    s.bytes += bytes;
                    s.lat.saturating_record((took.as_nanos() as u64).max(1));
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

/// Replays a trace in `dir` (lay out first with [`lay_out`]).
pub fn replay(t: &Trace, dir: &RunDir, o: ReplayOptions, stop: &AtomicBool) -> ReplayResult {
    let handles: Handles = Mutex::new(HashMap::new());
    let player = Player {
        order: (o.keep_threads && t.threads.len() > 1).then(|| Order::new(t)),
        trace: t,
        dir,
        handles: &handles,
        stop,
    };
    let lanes: Vec<Vec<usize>> = if o.keep_threads {
        let mut lanes = vec![Vec::new(); t.threads.len()];
        for (i, op) in t.ops.iter().enumerate() {
            lanes[op.thread as usize].push(i);
        }
        lanes
    } else {
        vec![(0..t.ops.len()).collect()]
    };
    let t0 = Instant::now();
    let results: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = lanes
            .iter()
            .map(|lane| {
                let player = &player;
                s.spawn(move || player.play(lane, o.speed, t0))
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("replay thread"))
            .collect()
    });
    let seconds = t0.elapsed().as_secs_f64();
    let mut merged: BTreeMap<&'static str, Stat> = BTreeMap::new();
    let mut skipped = 0;
    let mut first_error = None;
    for (stats, sk, err) in results {
        skipped += sk;
        if first_error.is_none() {
            first_error = err;
        }
        for (name, s) in stats {
            let m = merged.entry(name).or_insert_with(Stat::new);
            m.count += s.count;
            m.bytes += s.bytes;
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
        seconds,
        original_seconds,
        time_ratio: seconds / original_seconds.max(1e-9),
        files_created: 0,
        bytes_laid_out: 0,
    }
}

/// Recreates the files, then replays; the result says how much was laid out.
pub fn lay_out_and_replay(
    t: &Trace,
    dir: &RunDir,
    o: ReplayOptions,
    stop: &AtomicBool,
) -> Result<ReplayResult, String> {
    let (files, bytes) = lay_out(t, dir)?;
    let mut r = replay(t, dir, o, stop);
    r.files_created = files;
    r.bytes_laid_out = bytes;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_never_climb_out() {
        assert_eq!(contained("/etc/passwd"), "etc/passwd");
        assert_eq!(contained("../../x/../y"), "y");
        assert_eq!(contained("a/./b/../c"), "a/c");
        assert_eq!(contained("/.."), "");
    }
}
