//! The printer of a run's progress: what its [`Activity`] holds (the host
//! function a scenario is in, a job's live line, laying out's progress),
//! shown once the run has gone on for two seconds: a line redrawn in place
//! on a terminal (indicatif), otherwise a plain line then and every five
//! seconds, so a log shows every step longer than two seconds and is not
//! flooded.

use crate::runner::activity::Activity;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a run goes on before its first progress line.
const QUIET: Duration = Duration::from_secs(2);
/// How often a plain (not a terminal) progress line is repeated.
const PLAIN_EVERY: Duration = Duration::from_secs(5);
/// How often the printer looks (and redraws on a terminal).
const TICK: Duration = Duration::from_millis(250);

/// A line on stderr redrawn in place: a spinner and a message.
fn live_line() -> ProgressBar {
    let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    b.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("static template"));
    b
}

/// Prints a run's progress until dropped.
pub struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Starts printing `title`'s progress (`[2/6] quick/seqread`) from what
    /// `activity` holds; `expected` is how long the run should take (the
    /// last repeat's time), for an ETA. When no thread can be started the
    /// run goes on without progress lines.
    pub fn start(title: String, activity: Arc<Activity>, expected: Option<Duration>) -> Ticker {
        Ticker::spawn(title, activity, expected, None)
    }

    /// Like [`Ticker::start`], but a plain line every `every` from the
    /// start, on a terminal too (fio's `--eta-newline`, `--status-interval`).
    pub fn start_lines(title: String, activity: Arc<Activity>, every: Duration) -> Ticker {
        Ticker::spawn(title, activity, None, Some(every))
    }

    fn spawn(
        title: String,
        activity: Arc<Activity>,
        expected: Option<Duration>,
        lines: Option<Duration>,
    ) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        // plumb's own thread, one per run at a time, not the scenario's
        // work: outside the run's thread cap, which stays the scenario's.
        let thread = std::thread::Builder::new()
            .name("plumb-progress".into())
            .stack_size(64 << 10)
            .spawn(move || print_until(&flag, &title, &activity, expected, lines))
            .ok();
        Ticker { stop, thread }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // Woken at once: a run of a fraction of a second does not wait
            // out the printer's tick (each scenario of a pack would).
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// The progress line: what is under way, the time so far and, with an
/// expected length, the time left.
fn line(title: &str, activity: &Activity, elapsed: Duration, expected: Option<Duration>) -> String {
    let mut s = title.to_string();
    if let Some(doing) = activity.doing() {
        s.push_str(": ");
        s.push_str(&doing);
    }
    s.push_str(&format!(" · {} s elapsed", elapsed.as_secs()));
    if let Some(total) = expected {
        match total.checked_sub(elapsed) {
            Some(left) => s.push_str(&format!(", about {} s left", left.as_secs().max(1))),
            None => s.push_str(", longer than the last run"),
        }
    }
    s
}

/// The printer's loop (see the module's doc); with `lines`, plain lines
/// at that interval only.
fn print_until(
    stop: &AtomicBool,
    title: &str,
    activity: &Activity,
    expected: Option<Duration>,
    lines: Option<Duration>,
) {
    let start = Instant::now();
    let bar = (lines.is_none() && std::io::stderr().is_terminal()).then(live_line);
    let quiet = lines.unwrap_or(QUIET);
    let mut next_plain = quiet;
    while !stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(TICK.min(quiet));
        let elapsed = start.elapsed();
        if elapsed < quiet || stop.load(Ordering::Relaxed) {
            continue;
        }
        let msg = line(title, activity, elapsed, expected);
        match &bar {
            Some(b) => {
                b.set_message(msg);
                b.tick();
            }
            None if elapsed >= next_plain => {
                tracing::info!(target: "plumb::progress", "{msg}");
                next_plain = elapsed + lines.unwrap_or(PLAIN_EVERY);
            }
            None => {}
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::runner::activity::Activity;

    #[test]
    fn the_line_shows_the_live_status_first_then_the_call() {
        let a = Activity::default();
        let t = Duration::from_secs(12);
        assert_eq!(line("[1/2] p/s", &a, t, None), "[1/2] p/s · 12 s elapsed");
        a.enter("fs", "write_file");
        assert_eq!(
            line("[1/2] p/s", &a, t, Some(Duration::from_secs(20))),
            "[1/2] p/s: in fs::write_file · 12 s elapsed, about 8 s left"
        );
        a.set_status(Some("[j] running r=1k IOPS".into()));
        assert_eq!(
            line("[1/2] p/s", &a, t, Some(Duration::from_secs(5))),
            "[1/2] p/s: [j] running r=1k IOPS · 12 s elapsed, longer than the last run"
        );
        a.set_status(None);
        assert!(line("x", &a, t, None).contains("in fs::write_file"));
    }
}
