//! `fleet run`: one pack on every host, at most `parallel` at once (or one
//! after another with `serial`), each host through its stages — check,
//! copy plumb (unless cached), run — in a thread of its own, so one host
//! failing never stops the others. Every host is checked at once; a host
//! then waits for a slot before its copy and run. Results are checked as
//! any result file is, relabelled with the host's name, and saved as
//! `OUT/results/NAME.json` as each arrives.

use super::inventory::Host;
use super::remote::{self, Binary, Payload, StopReason};
use super::ssh::Ssh;
use super::summary::{BinaryCopy, HostReport, Stage};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// What a fleet run does.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The machines.
    pub hosts: Vec<Host>,
    /// How to reach them.
    pub ssh: Ssh,
    /// The plumb copied to them.
    pub binary: Binary,
    /// The pack or scenario they run.
    pub payload: Payload,
    /// Free bytes each target must have (what the pack may write).
    pub need_bytes: u64,
    /// Arguments for `plumb run` there (`--sha256`, `-p`, `--timeout` …);
    /// `--label NAME` is added per host.
    pub run_args: Vec<String>,
    /// Run one host after another (hosts that share storage).
    pub serial: bool,
    /// The most hosts copying or running at once.
    pub parallel: usize,
    /// The longest a host's run may take before plumb stops it.
    pub run_limit: std::time::Duration,
    /// Where `results/` goes.
    pub out: PathBuf,
    /// The pack sent, as the driver knows it: each result's claims about
    /// it are checked against this and replaced by it (the origin here
    /// instead of the remote temporary bundle's path).
    pub sent: super::sent::SentPack,
}

/// `--parallel`'s default: enough for a rack at once, few enough that the
/// copies of a large fleet do not all share this machine's uplink.
pub const DEFAULT_PARALLEL: u32 = 16;

/// Hears what each host is doing (by its index in the plan).
pub trait Observer: Sync {
    /// A host entered a stage; `detail` says more.
    fn stage(&self, host: usize, stage: Stage, detail: &str);
    /// A line of the host's own progress.
    fn line(&self, host: usize, line: &str);
    /// A host is done.
    fn done(&self, host: usize, report: &HostReport);
}

/// Runs the plan; one report per host, in the plan's order.
pub fn execute(plan: &Plan, observer: &dyn Observer, stop: &AtomicBool) -> Vec<HostReport> {
    let turns = Turns::new(plan.hosts.len());
    let slots = Slots::new(plan.parallel.max(1));
    std::thread::scope(|scope| {
        let handles: Vec<_> = plan
            .hosts
            .iter()
            .enumerate()
            .map(|(i, host)| {
                let (turns, slots) = (&turns, &slots);
                scope.spawn(move || {
                    let report = one_host(plan, i, host, observer, stop, turns, slots);
                    observer.done(i, &report);
                    report
                })
            })
            .collect();
        handles
            .into_iter()
            .zip(&plan.hosts)
            .map(|(h, host)| {
                h.join().unwrap_or_else(|_| HostReport {
                    error: Some("plumb's thread for this host panicked".into()),
                    ..HostReport::new(&host.name, &host.address)
                })
            })
            .collect()
    })
}

/// Hosts' turns to run when the plan is serial: host `i` runs once every
/// host before it has finished (run, failed, or never got there).
struct Turns {
    finished: Mutex<Vec<bool>>,
    moved: Condvar,
}

impl Turns {
    fn new(hosts: usize) -> Turns {
        Turns {
            finished: Mutex::new(vec![false; hosts]),
            moved: Condvar::new(),
        }
    }

    /// Waits until every host before `i` has finished, or `stop` is set.
    fn wait_for(&self, i: usize, stop: &AtomicBool) {
        let mut finished = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        while !finished[..i].iter().all(|f| *f) && !stop.load(std::sync::atomic::Ordering::Relaxed)
        {
            finished = self
                .moved
                .wait_timeout(finished, std::time::Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn finish(&self, i: usize) {
        let mut finished = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        finished[i] = true;
        self.moved.notify_all();
    }
}

/// At most so many hosts copying or running at once (`--parallel`).
struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

/// A host's slot, given back when dropped, however the host ends.
struct Slot<'a>(&'a Slots);

impl Slots {
    fn new(n: usize) -> Slots {
        Slots {
            free: Mutex::new(n),
            freed: Condvar::new(),
        }
    }

    /// A free slot, if there is one now.
    fn try_take(&self) -> Option<Slot<'_>> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        (*free > 0).then(|| {
            *free -= 1;
            Slot(self)
        })
    }

    /// Waits for a free slot; None when `stop` is set first.
    fn take(&self, stop: &AtomicBool) -> Option<Slot<'_>> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return None;
            }
            if *free > 0 {
                *free -= 1;
                return Some(Slot(self));
            }
            free = self
                .freed
                .wait_timeout(free, std::time::Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// Passes a host's turn on when its thread is done, however it ends.
struct TurnGuard<'a>(&'a Turns, usize);

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        self.0.finish(self.1);
    }
}

fn one_host(
    plan: &Plan,
    i: usize,
    host: &Host,
    observer: &dyn Observer,
    stop: &AtomicBool,
    turns: &Turns,
    slots: &Slots,
) -> HostReport {
    let _turn = TurnGuard(turns, i);
    let start = Instant::now();
    let mut report = HostReport::new(&host.name, &host.address);
    observer.stage(i, Stage::Check, "checking");
    let probe = match remote::check(&plan.ssh, host, &plan.binary, plan.need_bytes, stop) {
        Ok(p) => p,
        Err(e) => return report.failed(Stage::Check, e, start),
    };
    report.arch = Some(probe.arch.clone());
    report.kernel = Some(probe.kernel.clone());
    report.free_bytes = Some(probe.free_bytes);
    if plan.serial {
        observer.stage(i, Stage::Check, "waiting for its turn (--serial)");
        turns.wait_for(i, stop);
    }
    let slot = slots.try_take().or_else(|| {
        observer.stage(i, Stage::Check, "waiting for a slot (--parallel)");
        slots.take(stop)
    });
    let Some(_slot) = slot else {
        return report.failed(Stage::Check, "stopped before it began", start);
    };
    if probe.cached {
        report.binary = Some(BinaryCopy::Cached);
    } else {
        observer.stage(
            i,
            Stage::Copy,
            &format!(
                "copying plumb ({}, {})",
                crate::units::format_bytes_binary(plan.binary.len as f64),
                probe.packing.name()
            ),
        );
        match remote::copy_binary(&plan.ssh, host, &plan.binary, probe.packing, stop) {
            Ok(bytes) => report.binary_bytes = Some(bytes),
            Err(e) => return report.failed(Stage::Copy, e, start),
        }
        report.binary = Some(BinaryCopy::Copied);
        report.binary_packing = Some(probe.packing.name().into());
    }
    observer.stage(
        i,
        Stage::Run,
        &format!(
            "running ({} {}, {} free)",
            probe.arch,
            probe.kernel,
            crate::units::format_bytes_binary(probe.free_bytes as f64)
        ),
    );
    let mut args = plan.run_args.clone();
    args.extend(["--label".to_string(), host.name.clone()]);
    let outcome = remote::run(
        &plan.ssh,
        host,
        &plan.binary,
        &plan.payload,
        &args,
        plan.run_limit,
        &plan.out.join("results"),
        &mut |l| observer.line(i, l),
        stop,
    );
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return report.failed(Stage::Run, e, start),
    };
    if let Some(doc) = &outcome.document {
        match save(&plan.out, &host.name, &host.labels, doc.path(), &plan.sent) {
            Ok(path) => report.result = Some(path),
            Err(e) => return report.failed(Stage::Run, format!("its result: {e}"), start),
        }
    }
    match verdict(&outcome, report.result.as_deref()) {
        None => report.done(start),
        Some(why) => report.failed(Stage::Run, why, start),
    }
}

/// Why a run that sent its result back did not succeed (None: it did):
/// stopped by plumb, no result saved, or the first scenario error.
pub(super) fn verdict(outcome: &remote::RunOutcome, saved: Option<&Path>) -> Option<String> {
    match (outcome.code, outcome.stopped) {
        (0, None) if saved.is_some() => None,
        (0, None) => Some("the run saved no result".into()),
        (_, Some(StopReason::TimeLimit)) => {
            Some("stopped at the fleet's time limit for this pack".into())
        }
        (_, Some(StopReason::Signal)) => Some("stopped by a signal here".into()),
        (code, None) => Some(saved.and_then(first_error).unwrap_or_else(
            || match &outcome.last_line {
                Some(l) => format!("plumb run exited with {code} there: {l}"),
                None => format!("plumb run exited with {code} there"),
            },
        )),
    }
}

/// A host's result that cannot be kept.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    /// It cannot be read back from where it was streamed.
    #[error("{0}")]
    Read(#[from] crate::input::InputError),
    /// It is not text.
    #[error("not UTF-8")]
    NotUtf8,
    /// It is not a result document `plumb compare` reads.
    #[error("{0}")]
    Refused(crate::compare::load::LoadError),
    /// It claims another pack than the one sent.
    #[error(transparent)]
    Claim(#[from] super::sent::ClaimError),
    /// The results folder cannot be made.
    #[error("{}: {source}", .dir.display())]
    Folder {
        /// The folder.
        dir: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// It cannot be encoded again.
    #[error(transparent)]
    Encode(#[from] serde_json::Error),
    /// It cannot be written.
    #[error(transparent)]
    Write(#[from] crate::save::SaveError),
}

/// One result document read and checked at a time: each arrives streamed
/// to a file (a small buffer per host), so the driver holds at most one
/// whole document, however many hosts finish together.
static CHECKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Checks a host's result document (`streamed`, the file it arrived in) as
/// `plumb compare` would read it, and its claims about the pack against
/// the pack `sent` (refused when they differ); labels it with the host's
/// name, gives it the inventory's `labels` (the host's own say nothing of
/// them), writes the pack's record as the driver knows it, and saves it
/// atomically as `OUT/results/NAME.json`.
pub(super) fn save(
    out: &Path,
    name: &str,
    labels: &[String],
    streamed: &Path,
    sent: &super::sent::SentPack,
) -> Result<PathBuf, ResultError> {
    let _one = CHECKING.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = crate::input::read_file(streamed, crate::model::document::limits::FILE_BYTES)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| ResultError::NotUtf8)?;
    let mut doc = crate::compare::load::parse(&format!("{name}'s result"), text)
        .map_err(ResultError::Refused)?;
    sent.stamp(name, &mut doc)?;
    doc.label = Some(name.to_string());
    doc.labels = labels.to_vec();
    let dir = out.join("results");
    std::fs::create_dir_all(&dir).map_err(|source| ResultError::Folder {
        dir: dir.clone(),
        source,
    })?;
    let path = dir.join(format!("{name}.json"));
    let mut text = serde_json::to_vec_pretty(&doc)?;
    text.push(b'\n');
    crate::save::write_atomic(&path, &text)?;
    Ok(path)
}

/// The first scenario error a saved result holds, as one line.
pub(super) fn first_error(path: &Path) -> Option<String> {
    let doc = crate::compare::load::load(path).ok()?;
    doc.scenarios.iter().find_map(|s| {
        s.error.as_ref().map(|e| {
            let line = e.lines().next().unwrap_or_default();
            format!(
                "scenario {} failed: {}",
                s.name,
                crate::terminal::clean(line)
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn no_more_than_the_slots_hold_at_once() {
        let slots = Slots::new(2);
        let never = AtomicBool::new(false);
        let busy = std::sync::atomic::AtomicUsize::new(0);
        let most = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    let _slot = slots.take(&never).expect("a slot");
                    let now = busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(50));
                    busy.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                });
            }
        });
        assert_eq!(most.load(std::sync::atomic::Ordering::SeqCst), 2);
        let _a = slots.try_take().unwrap();
        let _b = slots.try_take().unwrap();
        assert!(slots.try_take().is_none());
        let stop = AtomicBool::new(true);
        assert!(slots.take(&stop).is_none(), "a stop ends the wait");
    }

    #[test]
    fn a_serial_turn_waits_for_every_host_before_it_even_when_a_later_one_fails() {
        let turns = Turns::new(3);
        let never = AtomicBool::new(false);
        // Host 2 fails its check at once; host 1 must still wait for host 0.
        turns.finish(2);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let t = Instant::now();
                turns.wait_for(1, &never);
                t.elapsed()
            });
            std::thread::sleep(Duration::from_millis(300));
            turns.finish(0);
            let waited = waiter.join().unwrap();
            assert!(
                waited >= Duration::from_millis(250),
                "host 1 went after {waited:?}"
            );
        });
        let stop = AtomicBool::new(true);
        let t = Instant::now();
        Turns::new(2).wait_for(1, &stop);
        assert!(
            t.elapsed() < Duration::from_millis(50),
            "a stop ends the wait"
        );
    }
}
