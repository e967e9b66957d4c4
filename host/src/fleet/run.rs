//! `fleet run`: one pack on every host at once (or one after another with
//! `serial`), each host through its stages — check, copy plumb (unless
//! cached), run — in a thread of its own, so one host failing never stops
//! the others. Results are checked as any result file is, relabelled with
//! the host's name, and saved as `OUT/results/NAME.json`.

use super::inventory::Host;
use super::remote::{self, Binary, Payload};
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
    /// Where `results/` goes.
    pub out: PathBuf,
    /// The pack's origin here, recorded in the results instead of the
    /// remote temporary bundle's path.
    pub origin: Option<String>,
}

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
    let turns = Turns::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = plan
            .hosts
            .iter()
            .enumerate()
            .map(|(i, host)| {
                let turns = &turns;
                scope.spawn(move || {
                    let report = one_host(plan, i, host, observer, stop, turns);
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
                    name: host.name.clone(),
                    address: host.address.clone(),
                    ok: false,
                    stage: Stage::Run,
                    error: Some("plumb's thread for this host panicked".into()),
                    binary: None,
                    seconds: 0.0,
                    result: None,
                })
            })
            .collect()
    })
}

/// Hosts' turns to run when the plan is serial: host `i` runs once every
/// host before it has finished (or failed).
struct Turns {
    next: Mutex<usize>,
    moved: Condvar,
}

impl Turns {
    fn new() -> Turns {
        Turns {
            next: Mutex::new(0),
            moved: Condvar::new(),
        }
    }

    fn wait_for(&self, i: usize, stop: &AtomicBool) {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        while *next < i && !stop.load(std::sync::atomic::Ordering::Relaxed) {
            next = self
                .moved
                .wait_timeout(next, std::time::Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn finished(&self, i: usize) {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        *next = (*next).max(i + 1);
        self.moved.notify_all();
    }
}

/// Passes a host's turn on when its thread is done, however it ends.
struct TurnGuard<'a>(&'a Turns, usize);

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        self.0.finished(self.1);
    }
}

fn one_host(
    plan: &Plan,
    i: usize,
    host: &Host,
    observer: &dyn Observer,
    stop: &AtomicBool,
    turns: &Turns,
) -> HostReport {
    let _turn = TurnGuard(turns, i);
    let start = Instant::now();
    let mut report = HostReport {
        name: host.name.clone(),
        address: host.address.clone(),
        ok: false,
        stage: Stage::Check,
        error: None,
        binary: None,
        seconds: 0.0,
        result: None,
    };
    let fail = |mut r: HostReport, stage: Stage, e: String| {
        r.stage = stage;
        r.error = Some(e);
        r.seconds = start.elapsed().as_secs_f64();
        r
    };
    observer.stage(i, Stage::Check, "checking");
    let probe = match remote::check(&plan.ssh, host, &plan.binary, plan.need_bytes, stop) {
        Ok(p) => p,
        Err(e) => return fail(report, Stage::Check, e),
    };
    if plan.serial {
        observer.stage(i, Stage::Check, "waiting for its turn (--serial)");
        turns.wait_for(i, stop);
    }
    if probe.cached {
        report.binary = Some(BinaryCopy::Cached);
    } else {
        observer.stage(
            i,
            Stage::Copy,
            &format!(
                "copying plumb ({})",
                crate::units::format_bytes_binary(plan.binary.len as f64)
            ),
        );
        if let Err(e) = remote::copy_binary(&plan.ssh, host, &plan.binary, stop) {
            return fail(report, Stage::Copy, e);
        }
        report.binary = Some(BinaryCopy::Copied);
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
        &mut |l| observer.line(i, l),
        stop,
    );
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return fail(report, Stage::Run, e),
    };
    if let Some(doc) = &outcome.document {
        match save(&plan.out, &host.name, doc, plan.origin.as_deref()) {
            Ok(path) => report.result = Some(path),
            Err(e) => return fail(report, Stage::Run, format!("its result: {e}")),
        }
    }
    let saved = report.result.clone();
    match (outcome.code, outcome.stopped) {
        (0, false) if saved.is_some() => {
            report.ok = true;
            report.stage = Stage::Done;
            report.seconds = start.elapsed().as_secs_f64();
            report
        }
        (0, false) => fail(report, Stage::Run, "the run saved no result".into()),
        (_, true) => fail(
            report,
            Stage::Run,
            "stopped (Ctrl-C); partial results kept".into(),
        ),
        (code, false) => {
            let why = saved.as_deref().and_then(first_error).unwrap_or_else(|| {
                match &outcome.last_line {
                    Some(l) => format!("plumb run exited with {code} there: {l}"),
                    None => format!("plumb run exited with {code} there"),
                }
            });
            fail(report, Stage::Run, why)
        }
    }
}

/// Checks a host's result document as `plumb compare` would read it,
/// labels it with the host's name, records the pack's origin here, and
/// saves it atomically as `OUT/results/NAME.json`.
pub(super) fn save(
    out: &Path,
    name: &str,
    bytes: &[u8],
    origin: Option<&str>,
) -> Result<PathBuf, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    let mut doc = crate::compare::load::parse(&format!("{name}'s result"), text)?;
    doc.label = Some(name.to_string());
    if let Some(o) = origin {
        for s in &mut doc.scenarios {
            s.pack_origin = Some(o.to_string());
        }
    }
    let dir = out.join("results");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{name}.json"));
    let mut text = serde_json::to_vec_pretty(&doc).map_err(|e| e.to_string())?;
    text.push(b'\n');
    crate::report::save::write_atomic(&path, &text).map_err(|e| e.to_string())?;
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
