//! fio's per-job logs written as a job runs (`write_bw_log`,
//! `write_iops_log`, `write_lat_log`, `write_hist_log`), in fio 3.33's
//! file names and line formats, so that fio's log tools (`fiologparser.py`,
//! `fiologparser_hist.py`, `fio2gnuplot`) and fio-plot's log mode read them.
//!
//! Lines are kept in memory and appended to their file in chunks of whole
//! lines; threads that share a file (`per_job_logs=0`) share one handle, so
//! the file is emptied once per run, by its first writer.

use crate::job::spec::{Dir, JobSpec, LogWindow};
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Bytes of lines kept before they are appended to the file.
const CHUNK: usize = 1 << 20;
/// fio's latency histogram: 2^6 bins per power of two, 29 groups.
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// The log files of one run, opened (and emptied) on first use and shared
/// by every thread that writes the same path.
#[derive(Debug, Default)]
pub struct LogFiles {
    open: Mutex<HashMap<String, Arc<Mutex<File>>>>,
}

impl LogFiles {
    /// The file at `path`, created or emptied the first time it is asked
    /// for in this run (never through a symlink in its place).
    fn get(&self, path: &str) -> std::io::Result<Arc<Mutex<File>>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = open.get(path) {
            return Ok(Arc::clone(f));
        }
        let file = super::iolog::create_replacing(path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("log file '{path}': {e}")))?;
        let file = Arc::new(Mutex::new(file));
        open.insert(path.to_string(), Arc::clone(&file));
        Ok(file)
    }
}

/// One log file being written: its lines not yet appended.
struct Sink {
    path: String,
    file: Arc<Mutex<File>>,
    lines: Vec<u8>,
}

impl Sink {
    fn open(files: &LogFiles, path: String) -> std::io::Result<Sink> {
        Ok(Sink {
            file: files.get(&path)?,
            path,
            lines: Vec::with_capacity(CHUNK),
        })
    }

    /// Appends the kept lines to the file once they fill a chunk (or
    /// always, with `force`).
    fn flush(&mut self, force: bool) -> std::io::Result<()> {
        if self.lines.is_empty() || (!force && self.lines.len() < CHUNK) {
            return Ok(());
        }
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(&self.lines)
            .map_err(|e| std::io::Error::new(e.kind(), format!("log file '{}': {e}", self.path)))?;
        self.lines.clear();
        Ok(())
    }
}

/// Sums of one direction over the current window.
#[derive(Debug, Default, Clone, Copy)]
struct Window {
    ios: u64,
    bytes: u64,
    lat: [WindowLat; 3],
}

/// One latency kind's sum, count and largest value in a window.
#[derive(Debug, Default, Clone, Copy)]
struct WindowLat {
    sum: u128,
    count: u64,
    max: u64,
}

impl WindowLat {
    fn add(&mut self, v: u64) {
        self.sum += u128::from(v);
        self.count += 1;
        self.max = self.max.max(v);
    }
}

/// One completed I/O, as the logs see it.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Since the start of the measured phase.
    pub at: Duration,
    /// Read or write.
    pub dir: Dir,
    /// Bytes moved.
    pub bytes: u64,
    /// Offset in its file.
    pub offset: u64,
    /// Submission latency (ns), for I/Os handed to the kernel asynchronously.
    pub slat: Option<u64>,
    /// Completion latency (ns).
    pub clat: u64,
    /// Total latency (ns).
    pub lat: u64,
    /// The I/O's priority (`ioprio` value: class << 13 | level).
    pub prio: u16,
}

/// The logs of one job thread.
pub struct JobLogs {
    bw: Option<Sink>,
    iops: Option<Sink>,
    /// slat, clat, lat.
    lat: Option<[Sink; 3]>,
    hist: Option<Sink>,
    avg: Option<Duration>,
    hist_every: Option<Duration>,
    coarseness: u32,
    window_value: LogWindow,
    offset: bool,
    prio: bool,
    /// Added to every time (ms): the Unix time of the start with `log_unix_epoch`.
    epoch_ms: u64,
    /// The fixed block size per direction, written in windowed bw entries.
    fixed_bs: [u64; 2],
    window: [Window; 2],
    window_start: Duration,
    bins: Vec<[u64; 2]>,
    hist_start: Duration,
    /// The size of the last I/O per direction (the histogram entries' block size).
    last_bs: [u64; 2],
}

/// fio's histogram bin of a latency in ns: exact below 64, then 64 bins
/// per power of two.
fn plat_bin(ns: u64) -> usize {
    if ns < PLAT_VAL {
        return ns as usize;
    }
    let msb = 63 - ns.leading_zeros();
    let error_bits = msb - PLAT_BITS;
    let base = (error_bits as u64 + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (ns >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

impl JobLogs {
    /// The logs `job` asks for, for its thread `thread_number` (fio's
    /// 1-based number over every thread of the run), or `None`.
    pub fn open(
        job: &JobSpec,
        thread_number: u32,
        files: &LogFiles,
        started: SystemTime,
    ) -> std::io::Result<Option<JobLogs>> {
        let o = &job.logs;
        if !o.any() {
            return Ok(None);
        }
        let name = |prefix: &str, kind: &str| {
            let prefix = if prefix.is_empty() {
                job.name.as_str()
            } else {
                prefix
            };
            if o.per_job {
                format!("{prefix}_{kind}.{thread_number}.log")
            } else {
                format!("{prefix}_{kind}.log")
            }
        };
        let sink = |prefix: &Option<String>, kind: &str| {
            prefix
                .as_deref()
                .map(|p| Sink::open(files, name(p, kind)))
                .transpose()
        };
        let lat = match o.lat.as_deref() {
            Some(p) => Some([
                Sink::open(files, name(p, "slat"))?,
                Sink::open(files, name(p, "clat"))?,
                Sink::open(files, name(p, "lat"))?,
            ]),
            None => None,
        };
        let fixed = |d: Dir| {
            let b = &job.bs[d.index()];
            if b.min() == b.max() {
                b.min()
            } else {
                0
            }
        };
        let epoch_ms = if o.unix_epoch {
            started
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0)
        } else {
            0
        };
        Ok(Some(JobLogs {
            bw: sink(&o.bw, "bw")?,
            iops: sink(&o.iops, "iops")?,
            lat,
            hist: sink(&o.hist, "clat_hist")?,
            avg: (o.avg_msec > 0).then(|| Duration::from_millis(o.avg_msec.into())),
            hist_every: (o.hist_msec > 0).then(|| Duration::from_millis(o.hist_msec.into())),
            coarseness: o.hist_coarseness,
            window_value: o.window,
            offset: o.offset,
            prio: o.prio,
            epoch_ms,
            fixed_bs: [fixed(Dir::Read), fixed(Dir::Write)],
            window: [Window::default(); 2],
            window_start: Duration::ZERO,
            bins: if o.hist.is_some() {
                vec![[0; 2]; PLAT_NR]
            } else {
                Vec::new()
            },
            hist_start: Duration::ZERO,
            last_bs: [0; 2],
        }))
    }

    /// One line: `time, value, direction, block size[, offset], priority`
    /// (each a column of fio's format, hence the arguments).
    #[allow(clippy::too_many_arguments)]
    fn line(
        &self,
        out: &mut Vec<u8>,
        at_ms: u64,
        value: u64,
        dir: usize,
        bs: u64,
        offset: u64,
        prio: u16,
    ) {
        let t = at_ms + self.epoch_ms;
        let _ = write!(out, "{t}, {value}, {dir}, {bs}, ");
        if self.offset {
            let _ = write!(out, "{offset}, ");
        }
        if self.prio {
            let _ = writeln!(out, "0x{prio:04x}");
        } else {
            // fio: 1 when the I/O has the highest priority of the RT class.
            let highest = u8::from(prio >> 13 == 1 && prio & 0x1fff == 0);
            let _ = writeln!(out, "{highest}");
        }
    }

    /// Records one completed I/O.
    pub fn record(&mut self, s: &Sample) -> std::io::Result<()> {
        let d = s.dir.index();
        if let Some(every) = self.hist_every {
            self.bins[plat_bin(s.clat)][d] += 1;
            self.last_bs[d] = s.bytes;
            if s.at.saturating_sub(self.hist_start) >= every {
                self.write_histogram(s.at)?;
            }
        }
        match self.avg {
            None => self.per_io(s)?,
            Some(every) => {
                let w = &mut self.window[d];
                w.ios += 1;
                w.bytes += s.bytes;
                if let Some(slat) = s.slat {
                    w.lat[0].add(slat);
                }
                w.lat[1].add(s.clat);
                w.lat[2].add(s.lat);
                if s.at.saturating_sub(self.window_start) >= every {
                    self.write_window(s.at)?;
                }
            }
        }
        self.flush(false)
    }

    /// Per-I/O entries (fio's default, `log_avg_msec=0`).
    fn per_io(&mut self, s: &Sample) -> std::io::Result<()> {
        let t = s.at.as_millis() as u64;
        let d = s.dir.index();
        let mut buf = Vec::new();
        if self.bw.is_some() {
            // fio: bytes × 10^6 / total latency in ns.
            let rate = (u128::from(s.bytes) * 1_000_000 / u128::from(s.lat.max(1))) as u64;
            self.line(&mut buf, t, rate, d, s.bytes, s.offset, s.prio);
            if let Some(b) = &mut self.bw {
                b.lines.append(&mut buf);
            }
        }
        if self.iops.is_some() {
            self.line(&mut buf, t, 1, d, s.bytes, s.offset, s.prio);
            if let Some(b) = &mut self.iops {
                b.lines.append(&mut buf);
            }
        }
        if self.lat.is_some() {
            let values = [s.slat, Some(s.clat), Some(s.lat)];
            for (k, v) in values.into_iter().enumerate() {
                if let Some(v) = v {
                    self.line(&mut buf, t, v, d, s.bytes, s.offset, s.prio);
                    if let Some(l) = &mut self.lat {
                        l[k].lines.append(&mut buf);
                    }
                }
            }
        }
        Ok(())
    }

    /// The window's entries, per direction that did I/O, as fio: means
    /// (or maxima) of latencies with block size 0, KiB/s and IOPS over the
    /// window's length, with the block size when it is fixed.
    fn write_window(&mut self, now: Duration) -> std::io::Result<()> {
        let spent_ms = now.saturating_sub(self.window_start).as_millis().max(1) as u64;
        let t = now.as_millis() as u64;
        let mut buf = Vec::new();
        for d in 0..2 {
            let w = self.window[d];
            if w.ios == 0 {
                continue;
            }
            if self.bw.is_some() {
                self.line(
                    &mut buf,
                    t,
                    w.bytes * 1000 / spent_ms / 1024,
                    d,
                    self.fixed_bs[d],
                    0,
                    0,
                );
                if let Some(b) = &mut self.bw {
                    b.lines.append(&mut buf);
                }
            }
            if self.iops.is_some() {
                self.line(
                    &mut buf,
                    t,
                    w.ios * 1000 / spent_ms,
                    d,
                    self.fixed_bs[d],
                    0,
                    0,
                );
                if let Some(b) = &mut self.iops {
                    b.lines.append(&mut buf);
                }
            }
            if self.lat.is_some() {
                for k in 0..3 {
                    let l = w.lat[k];
                    if l.count == 0 {
                        continue;
                    }
                    let mean = (l.sum / u128::from(l.count)) as u64;
                    match self.window_value {
                        LogWindow::Avg => self.line(&mut buf, t, mean, d, 0, 0, 0),
                        LogWindow::Max => self.line(&mut buf, t, l.max, d, 0, 0, 0),
                        LogWindow::Both => {
                            // fio: the mean, then the maximum, in one entry.
                            let _ =
                                write!(buf, "{}, {mean}, {}, {d}, 0, ", t + self.epoch_ms, l.max);
                            if self.offset {
                                buf.extend_from_slice(b"0, ");
                            }
                            buf.extend_from_slice(if self.prio { b"0x0000\n" } else { b"0\n" });
                        }
                    }
                    if let Some(ls) = &mut self.lat {
                        ls[k].lines.append(&mut buf);
                    }
                }
            }
        }
        self.window = [Window::default(); 2];
        self.window_start = now;
        Ok(())
    }

    /// One histogram entry per direction: `time, direction, block size,
    /// bins…` (the block size of the direction's last I/O), the
    /// counts since the last entry, `2^coarseness` bins summed per column.
    fn write_histogram(&mut self, now: Duration) -> std::io::Result<()> {
        let t = now.as_millis() as u64 + self.epoch_ms;
        let group = 1usize << self.coarseness;
        let Some(sink) = &mut self.hist else {
            return Ok(());
        };
        for d in 0..2 {
            if self.bins.iter().all(|b| b[d] == 0) {
                continue;
            }
            let _ = write!(sink.lines, "{t}, {d}, {}", self.last_bs[d]);
            for chunk in self.bins.chunks(group) {
                let n: u64 = chunk.iter().map(|b| b[d]).sum();
                let _ = write!(sink.lines, ", {n}");
            }
            sink.lines.push(b'\n');
        }
        for b in &mut self.bins {
            *b = [0; 2];
        }
        self.hist_start = now;
        Ok(())
    }

    fn flush(&mut self, force: bool) -> std::io::Result<()> {
        for s in self
            .bw
            .iter_mut()
            .chain(self.iops.iter_mut())
            .chain(self.lat.iter_mut().flatten())
            .chain(self.hist.iter_mut())
        {
            s.flush(force)?;
        }
        Ok(())
    }

    /// Writes what the last, partial windows hold and appends every line
    /// kept (fio flushes its windows when the job ends).
    pub fn finish(mut self, end: Duration) -> std::io::Result<()> {
        if self.avg.is_some() && self.window.iter().any(|w| w.ios > 0) {
            self.write_window(end)?;
        }
        if self.hist_every.is_some() && self.bins.iter().any(|b| b[0] + b[1] > 0) {
            self.write_histogram(end)?;
        }
        self.flush(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_histogram_bins() {
        assert_eq!(plat_bin(0), 0);
        assert_eq!(plat_bin(63), 63);
        assert_eq!(plat_bin(64), 64);
        assert_eq!(plat_bin(127), 127);
        assert_eq!(plat_bin(128), 128);
        assert_eq!(plat_bin(130), 129);
        assert_eq!(plat_bin(u64::MAX), PLAT_NR - 1);
        // Monotonic.
        let mut last = 0;
        for v in (0..1_000_000u64).step_by(97) {
            let b = plat_bin(v);
            assert!(b >= last);
            last = b;
        }
    }
}
