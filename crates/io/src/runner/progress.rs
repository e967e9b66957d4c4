//! Progress while jobs run: the live line (current IOPS, bandwidth, elapsed,
//! ETA) and laying out's progress are published to the run's
//! [`Activity`], whose printer (the CLI's) draws them; without one, the live
//! line goes to the log every two seconds. Nothing here draws.

use super::activity::Activity;
use super::worker::LiveCounters;
use super::RunOptions;
use crate::job::spec::JobSpec;
use crate::metrics::board::PUBLISH_EVERY;
use crate::metrics::JobTap;
use crate::units::{format_bytes_binary, format_count};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Laying out files, published to the run's activity: bytes written of
/// the total, the rate and the time left. Files under 64 MiB in all lay out
/// too fast to be worth a line.
pub(super) struct LayoutProgress<'a> {
    activity: Option<&'a Activity>,
    total: u64,
    done: u64,
    start: Instant,
    shown: Option<Instant>,
}

impl<'a> LayoutProgress<'a> {
    /// How often the line is updated.
    const EVERY: Duration = Duration::from_millis(250);

    /// Progress of laying out `total` bytes, shown through `activity`.
    pub(super) fn new(total: u64, activity: Option<&'a Activity>) -> Self {
        LayoutProgress {
            activity: activity.filter(|_| total >= 64 << 20),
            total,
            done: 0,
            start: Instant::now(),
            shown: None,
        }
    }

    /// `n` more bytes were written.
    pub(super) fn add(&mut self, n: u64) {
        self.done = self.done.saturating_add(n);
        let Some(activity) = self.activity else {
            return;
        };
        if self.shown.is_some_and(|t| t.elapsed() < Self::EVERY) {
            return;
        }
        self.shown = Some(Instant::now());
        let secs = self.start.elapsed().as_secs_f64();
        let rate = if secs > 0.0 {
            self.done as f64 / secs
        } else {
            0.0
        };
        let eta = if rate > 0.0 {
            format!(
                "{:.0} s",
                self.total.saturating_sub(self.done) as f64 / rate
            )
        } else {
            "?".into()
        };
        activity.set_status(Some(format!(
            "laying out {} of {} at {}/s, eta {eta}",
            format_bytes_binary(self.done as f64),
            format_bytes_binary(self.total as f64),
            format_bytes_binary(rate)
        )));
    }
}

impl Drop for LayoutProgress<'_> {
    fn drop(&mut self) {
        if let Some(activity) = self.activity {
            activity.set_status(None);
        }
    }
}

/// What the watcher needs of each job: the spec and its total byte budget.
pub struct Watched<'a> {
    /// The job.
    pub job: &'a JobSpec,
    /// Bytes all its clones will issue, if bounded.
    pub budget: Option<u64>,
}

/// Waits until `all_ended` says every job thread has ended, showing progress
/// if asked, publishing each job's figures to `tap` (for `/metrics`), and
/// passes a stop request (`opts.stop`, set by a signal) on to
/// the workers' `set_stop` within one polling interval.
///
/// The end is the threads' own (not a phase they publish), so a worker that
/// dies without publishing anything still ends the wait.
pub fn watch(
    jobs: &[Watched],
    live: &[Vec<LiveCounters>],
    opts: &RunOptions,
    tap: Option<&JobTap>,
    set_stop: &AtomicBool,
    all_ended: impl Fn() -> bool,
) {
    // With an activity the line goes there, and its printer shows it;
    // without one, to the log.
    let publish = opts.activity.as_deref().filter(|_| opts.progress);
    let start = Instant::now();
    let names: Vec<&str> = jobs.iter().map(|w| w.job.name.as_str()).collect();
    let mut last = (Instant::now(), totals(live));
    let mut last_plain = Instant::now();
    let mut last_tap = Instant::now();
    while !all_ended() {
        std::thread::sleep(Duration::from_millis(50));
        if opts.stopping() {
            set_stop.store(true, Ordering::Relaxed);
        }
        if let Some(tap) = tap.filter(|_| last_tap.elapsed() >= PUBLISH_EVERY) {
            let figures: Vec<_> = live.iter().map(|c| super::live::figures_of(c)).collect();
            tap.update(&figures);
            last_tap = Instant::now();
        }
        if let Some(sink) = &opts.live {
            let (ios, bytes) = totals(live);
            sink.record_with_latency(ios, bytes, |d, sums| {
                for c in live.iter().flatten() {
                    if let Some(l) = &c.latency {
                        l[d].add_to(sums);
                    }
                }
            });
        }
        if !opts.progress || last.0.elapsed() < Duration::from_millis(1000) {
            continue;
        }
        let now = Instant::now();
        let cur = totals(live);
        let secs = (now - last.0).as_secs_f64();
        let rate = |i: usize| (cur.0[i].saturating_sub(last.1 .0[i])) as f64 / secs;
        let bw = |i: usize| (cur.1[i].saturating_sub(last.1 .1[i])) as f64 / secs;
        let phase = live
            .iter()
            .flatten()
            .map(|c| c.phase.load(Ordering::Relaxed))
            .min()
            .unwrap_or(0);
        let phase_name = match phase {
            0 => "starting",
            1 => "ramp",
            3 => "verifying",
            _ => "running",
        };
        let eta = eta(jobs, start.elapsed(), cur.1[0] + cur.1[1], bw(0) + bw(1));
        let msg = format!(
            "[{}] {} r={} IOPS {}/s w={} IOPS {}/s elapsed {}s eta {}",
            names.join(","),
            phase_name,
            format_count(rate(0)),
            format_bytes_binary(bw(0)),
            format_count(rate(1)),
            format_bytes_binary(bw(1)),
            start.elapsed().as_secs(),
            eta.map(|e| format!("{}s", e.as_secs()))
                .unwrap_or_else(|| "?".into())
        );
        match publish {
            Some(activity) => activity.set_status(Some(msg)),
            None if last_plain.elapsed() >= Duration::from_secs(2) => {
                tracing::info!(target: "plumb::progress", "{msg}");
                last_plain = now;
            }
            None => {}
        }
        last = (now, cur);
    }
    if let Some(activity) = publish {
        activity.set_status(None);
    }
}

fn totals(live: &[Vec<LiveCounters>]) -> ([u64; 2], [u64; 2]) {
    let mut ios = [0; 2];
    let mut bytes = [0; 2];
    for c in live.iter().flatten() {
        for d in 0..2 {
            ios[d] += c.ios[d].load(Ordering::Relaxed);
            bytes[d] += c.bytes[d].load(Ordering::Relaxed);
        }
    }
    (ios, bytes)
}

fn eta(
    jobs: &[Watched],
    elapsed: Duration,
    done_bytes: u64,
    bytes_per_sec: f64,
) -> Option<Duration> {
    let mut eta = Duration::ZERO;
    for w in jobs {
        let by_time = w
            .job
            .runtime
            .map(|r| (r + w.job.ramp_time).saturating_sub(elapsed));
        let by_bytes = w.budget.and_then(|b| {
            (bytes_per_sec > 0.0)
                .then(|| {
                    Duration::try_from_secs_f64(b.saturating_sub(done_bytes) as f64 / bytes_per_sec)
                        .ok()
                })
                .flatten()
        });
        let job_eta = match (by_time, by_bytes) {
            (Some(t), Some(b)) => t.min(b),
            (Some(t), None) => t,
            (None, Some(b)) => b,
            (None, None) => return None,
        };
        eta = eta.max(job_eta);
    }
    Some(eta)
}
