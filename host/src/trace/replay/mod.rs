//! Replays a trace inside a run directory: recreates the files as they were
//! first seen ([`super::layout`]), then plays each thread's operations
//! (`play`) in order with the recorded think time between them, scaled by
//! the speed, keeping the recorded order between threads (`order`: an
//! operation waits for whatever other threads had finished before it began).
//! Every path goes through the sandbox (`execute`): whatever the trace
//! says, nothing outside the run directory is touched.
//!
//! This file holds the entry points ([`lay_out_and_replay`],
//! [`threads_needed`]), their options and result, and the checks made
//! before anything is written.

mod execute;
mod order;
mod play;

use super::budget::Allowance;
use super::format::{OpKind, Trace};
use super::halt::{Bounds, Guard, Halt};
use super::layout::lay_out;
use super::limits::{MAX_REPLAY_BUFFERS, SPEED_RANGE};
use crate::sandbox::RunDir;
use serde::Serialize;

/// How fast to replay: the recorded think time scaled, or none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// Think time divided by this factor.
    Factor(f64),
    /// No think time at all.
    Max,
}

impl Speed {
    /// A think-time factor within [`SPEED_RANGE`], the one rule for scripts,
    /// guests and `plumb trace replay --speed`.
    pub fn factor(f: f64) -> Result<Speed, String> {
        let (slow, fast) = SPEED_RANGE;
        if (slow..=fast).contains(&f) {
            return Ok(Speed::Factor(f));
        }
        Err(format!(
            "speed '{f}' is not a factor from {slow} to {fast} or 'max'"
        ))
    }
}

impl std::str::FromStr for Speed {
    type Err = String;
    fn from_str(s: &str) -> Result<Speed, String> {
        if s == "max" {
            return Ok(Speed::Max);
        }
        match s.parse::<f64>().map(Speed::factor) {
            Ok(Ok(speed)) => Ok(speed),
            _ => {
                let (slow, fast) = SPEED_RANGE;
                let shown: String = s.chars().take(40).collect();
                Err(format!(
                    "speed '{shown}' is not a factor from {slow} to {fast} or 'max'"
                ))
            }
        }
    }
}

/// How a replay runs: its pace, and whether the recorded threads are kept.
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
    /// The operation's name as the trace shows it (`pread`, `open`, ...).
    pub op: String,
    /// How many were replayed.
    pub count: u64,
    /// Bytes read or written.
    pub bytes: u64,
    /// How many failed on replay as they failed in the recording (errors
    /// the application also saw).
    pub expected_errors: u64,
    /// How many ended otherwise than in the recording: a failure the
    /// recording did not see, a success where it failed, another errno.
    pub divergences: u64,
    /// Mean latency in µs.
    pub mean_us: f64,
    /// Median latency in µs.
    pub p50_us: f64,
    /// 99th percentile in µs.
    pub p99_us: f64,
    /// Largest latency in µs.
    pub max_us: f64,
}

/// What a replay measured, per kind of operation and in all, and what
/// the layout wrote before it.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayResult {
    /// Per operation type, by name.
    pub ops: Vec<OpSummary>,
    /// Operations replayed (mmap, implicit opens and inherited descriptors
    /// are not counted).
    pub total_ops: u64,
    /// Operations that ended otherwise than in the recording.
    pub divergences: u64,
    /// Operations that failed as they failed in the recording.
    pub expected_errors: u64,
    /// Operations noted but not replayed (mmap).
    pub skipped: u64,
    /// The first divergence, if any, naming the record.
    pub first_divergence: Option<String>,
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
                OpKind::Read { len, .. }
                | OpKind::Write { len, .. }
                | OpKind::Readdir { len, .. } => len,
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

/// Lets the process hold as many descriptors as its hard limit allows: a
/// trace of many processes keeps every descriptor they held open.
fn raise_descriptor_limit() {
    // SAFETY: getrlimit/setrlimit fill and read a plain struct.
    unsafe {
        let mut l: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
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
    raise_descriptor_limit();
    let guard = Guard::new(bounds);
    let allowance = Allowance::new(t, guard.max_bytes());
    let (files, bytes) = lay_out(t, dir, &guard).map_err(ReplayError::Layout)?;
    let mut r = play::replay(t, dir, o, &lanes, &guard, &allowance);
    r.files_created = files;
    r.bytes_laid_out = bytes;
    Ok(r)
}
