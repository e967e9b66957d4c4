//! `plumb trace record`: runs a command under strace, then converts the log.
//! A command that cannot be found is refused before anything runs; on
//! SIGINT/SIGTERM the traced processes are stopped (the signal forwarded,
//! then SIGKILL after a grace period), what was recorded is still saved, and
//! the temporary strace log is removed on every path. Unless told not to,
//! the command then runs again without strace (a quick command several
//! times), each time on a fresh copy of the tree as it was before the
//! recording, shown at the root's path to that run only
//! (`plumb_trace::trace::calibrate`); the trace keeps that wall time.

use super::{absolute, bad, save, Outcome};
use crate::cli::{ExitCode, Signals};
use crate::trace::calibrate::{self, Snapshot};
use crate::trace::limits::{read_bounded, MAX_LOG_BYTES};
use crate::trace::{strace, Trace};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How long the traced command gets to end after the signal is forwarded,
/// before it is killed.
const GRACE: Duration = Duration::from_secs(3);

/// Records `command` into `output`; with `calibrate`, then runs it again
/// without the tracer, on copies of the tree as it was before (the root
/// itself is never written for this). Names (and, their owner gone,
/// removes) the copies killed recordings of this root left.
pub(super) fn record(
    output: &Path,
    root: Option<PathBuf>,
    command: &[String],
    calibrate: bool,
) -> Outcome {
    if Command::new("strace").arg("-V").output().is_err() {
        return Err(bad(
            "strace is not installed: install it (Debian/Ubuntu: apt-get install strace)".into(),
        ));
    }
    let program = command
        .first()
        .ok_or_else(|| bad("no command to record".into()))?;
    if find_program(program).is_none() {
        return Err(bad(format!(
            "the command '{program}' was not found (not an executable file, nor in PATH); nothing was recorded"
        )));
    }
    let cwd = absolute(Path::new("."))?;
    let root = match root {
        Some(r) => absolute(&r)?,
        None => cwd.clone(),
    };
    let scratch = scratch_dir(output)?;
    let signals = Signals::install();
    for found in calibrate::leftovers(Path::new(&root)) {
        eprintln!("{}", found);
    }
    let snapshot = if calibrate {
        snapshot(Path::new(&root), scratch.path(), &signals)
    } else {
        None
    };
    if signals.stopped() {
        return Err((
            signals.exit_code(),
            "interrupted before the recording began: nothing was recorded".into(),
        ));
    }
    let (status, mut trace) = traced(command, &root, &cwd, scratch.path(), &signals)?;
    let interrupted = signals.stopped();
    if let (Some(snap), true, false) = (&snapshot, status.success(), interrupted) {
        trace.untraced_us = untraced(command, Path::new(&cwd), snap, &signals);
    }
    drop((scratch, snapshot));
    if signals.stopped() {
        save(&trace, output)?;
        match interrupted {
            true => eprintln!("interrupted: the trace holds what {program} did until then"),
            false => eprintln!("interrupted while calibrating: the trace is saved without the untraced time; the tree under the root is as the traced run left it (calibration runs on a copy)"),
        }
        return Ok(signals.exit_code());
    }
    if status.success() {
        save(&trace, output)?;
        return Ok(ExitCode::Ok);
    }
    let how = match status.code() {
        Some(c) => format!("exited with status {c}"),
        None => format!("was killed ({status})"),
    };
    if trace.ops.is_empty() {
        return Err((
            ExitCode::Failed,
            format!("{program} {how} without touching a file under the root; no trace written"),
        ));
    }
    save(&trace, output)?;
    Err((
        ExitCode::Failed,
        format!("{program} {how}; the trace holds what it did"),
    ))
}

/// Runs `command` under strace (its log in `scratch`) and converts the log.
fn traced(
    command: &[String],
    root: &str,
    cwd: &str,
    scratch: &Path,
    signals: &Signals,
) -> Result<(ExitStatus, Trace), (ExitCode, String)> {
    let log = scratch.join("strace.log");
    let mut child = Command::new("strace")
        .args(strace::STRACE_OPTIONS)
        .args(["-e", &format!("trace={}", strace::SYSCALLS), "-o"])
        .arg(&log)
        .arg("--")
        .args(command)
        .spawn()
        .map_err(|e| (ExitCode::Failed, format!("running strace: {e}")))?;
    eprintln!(
        "recording {} (Ctrl-C stops it and keeps what was recorded)",
        command[0]
    );
    let started = Instant::now();
    let status = wait(&mut child, signals, false)?;
    let wall_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let text = read_bounded(&log, MAX_LOG_BYTES)
        .map_err(|e| (ExitCode::Failed, format!("reading the strace log: {e}")))?;
    let _ = std::fs::remove_file(&log);
    let trace = strace::convert("the strace log", &text, root, cwd, Some(wall_us))
        .map_err(|e| (ExitCode::Failed, e.to_string()))?;
    Ok((status, trace))
}

/// A copy of the tree under `root` (but `skip`, the strace log's
/// directory), for the untraced runs; None (said why) when there is none.
fn snapshot(root: &Path, skip: &Path, signals: &Signals) -> Option<Snapshot> {
    // The walk meets it by its full path.
    let skip = std::fs::canonicalize(skip).unwrap_or_else(|_| skip.to_path_buf());
    let made =
        calibrate::check_hiding().and_then(|()| Snapshot::take(root, &[skip], &signals.stop));
    match made {
        Ok(s) => {
            if !s.on_root_filesystem() {
                eprintln!(
                    "calibrating on a copy in {}, which is not on the root's file system: the untraced time is measured there",
                    s.path().display()
                );
            }
            Some(s)
        }
        // The caller says what a signal stopped.
        Err(calibrate::CalibrateError::Interrupted) => None,
        Err(e) => {
            eprintln!("not calibrated ({e}): the replay will be measured against the traced run (--no-calibrate skips this step)");
            None
        }
    }
}

/// Untraced runs of a quick command: runs follow one another, each on a
/// fresh copy of the tree the traced run started from, until they (with
/// making their copies) have taken [`CALIBRATION_TIME`] together or
/// [`CALIBRATION_RUNS`] were made; their lower median is the untraced time
/// (one run of a command this short is at the mercy of a busy machine).
const CALIBRATION_RUNS: usize = 5;
/// See [`CALIBRATION_RUNS`]: a command that takes this long runs once.
const CALIBRATION_TIME: std::time::Duration = std::time::Duration::from_secs(1);

/// Runs `command` again without the tracer, from `cwd`, on a copy of the
/// tree the traced run started from (`snap`) seen at the root's path:
/// once, or for a quick command several times (see [`CALIBRATION_RUNS`]);
/// the lower median wall time in µs, or None when it cannot be measured
/// (said why). The user's tree is never touched.
fn untraced(command: &[String], cwd: &Path, snap: &Snapshot, signals: &Signals) -> Option<u64> {
    let program = &command[0];
    eprintln!("calibrating: running {program} again, without strace, on a copy of the tree (--no-calibrate skips this)");
    let not_calibrated = |why: String| {
        eprintln!("{why}: not calibrated");
        None
    };
    let mut times: Vec<u64> = Vec::new();
    // Making the copies and settling count too: a large tree makes fewer
    // runs.
    let calibrating = Instant::now();
    while times.len() < CALIBRATION_RUNS && calibrating.elapsed() < CALIBRATION_TIME {
        if signals.stopped() {
            return None;
        }
        let copy = match snap.run_copy(&signals.stop) {
            Ok(c) => c,
            Err(e) => return not_calibrated(format!("copying the tree for the untraced run: {e}")),
        };
        copy.settle();
        if signals.stopped() {
            return None;
        }
        let mut cmd = match copy.command(program, &command[1..], cwd) {
            Ok(c) => c,
            Err(e) => return not_calibrated(e.to_string()),
        };
        let started = Instant::now();
        let status = match cmd.spawn() {
            Ok(mut child) => match wait(&mut child, signals, true) {
                Ok(s) => s,
                Err((_, e)) => return not_calibrated(e),
            },
            Err(e) => {
                return not_calibrated(format!(
                    "running {program} without strace on a copy of the tree: {e}"
                ))
            }
        };
        let took = started.elapsed();
        if signals.stopped() {
            return None;
        }
        if !status.success() {
            return not_calibrated(format!("the untraced run ended with {status}"));
        }
        times.push(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
    }
    times.sort_unstable();
    // The lower median: noise only ever slows a run down.
    let wall_us = *times.get((times.len().checked_sub(1)?) / 2)?;
    match times.len() {
        1 => eprintln!("{program} ran {:.3} s without strace", wall_us as f64 / 1e6),
        n => eprintln!(
            "{program} ran {:.3} s without strace (the lower median of {n} runs, {:.3}–{:.3} s)",
            wall_us as f64 / 1e6,
            times[0] as f64 / 1e6,
            times[n - 1] as f64 / 1e6
        ),
    }
    Some(wall_us)
}

/// Waits for `child` (strace, or with `itself` the untraced command); on a
/// signal, forwards it to the processes below it (and to it, with
/// `itself`), and kills them (then the child) when they outlive the grace
/// period.
fn wait(
    child: &mut Child,
    signals: &Signals,
    itself: bool,
) -> Result<ExitStatus, (ExitCode, String)> {
    let strace_pid = child.id() as i32;
    let targets = || {
        let mut pids = descendants(strace_pid);
        if itself {
            pids.push(strace_pid);
        }
        pids
    };
    let mut forwarded: Option<Instant> = None;
    let mut killed = false;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) => {}
            Err(e) => return Err((ExitCode::Failed, format!("waiting for the command: {e}"))),
        }
        if signals.stopped() {
            match forwarded {
                None => {
                    let sig = if signals.terminated() {
                        libc::SIGTERM
                    } else {
                        libc::SIGINT
                    };
                    signal_all(&targets(), sig);
                    forwarded = Some(Instant::now());
                }
                Some(at) if at.elapsed() > GRACE && !killed => {
                    signal_all(&targets(), libc::SIGKILL);
                    killed = true;
                }
                Some(at) if at.elapsed() > GRACE * 2 => {
                    let _ = child.kill();
                }
                Some(_) => {}
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal_all(pids: &[i32], sig: i32) {
    for &p in pids {
        // SAFETY: kill has no memory effects; p is a live child's pid or gone.
        unsafe { libc::kill(p, sig) };
    }
}

/// Every process below `root` (children, their children, ...), from /proc.
fn descendants(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            let ppid = stat
                .rfind(')')
                .and_then(|i| stat.get(i + 1..))
                .and_then(|rest| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            if let Some(ppid) = ppid {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            if !out.contains(&c) {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out
}

/// The executable `program` names: a path with a slash, else the first
/// match in PATH.
fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return runnable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| runnable(p))
}

/// A private directory beside `output` for strace's log while it
/// records (strace writes its log by name, following a symlink planted
/// there; in a directory only plumb can enter, there is none).
fn scratch_dir(output: &Path) -> Result<crate::scratch::ScratchDir, (ExitCode, String)> {
    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = output
        .file_name()
        .map_or("trace".into(), |n| n.to_string_lossy().into_owned());
    crate::scratch::ScratchDir::new(parent, &format!(".{name}.strace-"))
        .map_err(|e| (ExitCode::Failed, format!("{}: {e}", parent.display())))
}
