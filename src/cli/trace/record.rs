//! `plumb trace record`: runs a command under strace, then converts the log.
//! A command that cannot be found is refused before anything runs; on
//! SIGINT/SIGTERM the traced processes are stopped (the signal forwarded,
//! then SIGKILL after a grace period), what was recorded is still saved, and
//! the temporary strace log is removed on every path.

use super::{absolute, bad, save, Outcome};
use crate::cli::{ExitCode, Signals};
use crate::trace::limits::{read_bounded, MAX_LOG_BYTES};
use crate::trace::strace;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How long the traced command gets to end after the signal is forwarded,
/// before it is killed.
const GRACE: Duration = Duration::from_secs(3);

/// The temporary strace log, removed when dropped.
/// Records `command` into `output`.
pub(super) fn record(output: &Path, root: Option<PathBuf>, command: &[String]) -> Outcome {
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
    let log = scratch.path().join("strace.log");
    let signals = Signals::install();
    let mut child = Command::new("strace")
        .args(strace::STRACE_OPTIONS)
        .args(["-e", &format!("trace={}", strace::SYSCALLS), "-o"])
        .arg(&log)
        .arg("--")
        .args(command)
        .spawn()
        .map_err(|e| (ExitCode::Failed, format!("running strace: {e}")))?;
    eprintln!("recording {program} (Ctrl-C stops it and keeps what was recorded)");
    let started = Instant::now();
    let status = wait(&mut child, &signals)?;
    let wall_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let interrupted = signals.stopped();
    let text = read_bounded(&log, MAX_LOG_BYTES)
        .map_err(|e| (ExitCode::Failed, format!("reading the strace log: {e}")))?;
    drop(scratch);
    let trace = strace::convert("the strace log", &text, &root, &cwd, Some(wall_us))
        .map_err(|e| (ExitCode::Failed, e.to_string()))?;
    if interrupted {
        save(&trace, output)?;
        eprintln!("interrupted: the trace holds what {program} did until then");
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

/// Waits for strace; on a signal, forwards it to the traced processes, and
/// kills them (then strace) when they outlive the grace period.
fn wait(child: &mut Child, signals: &Signals) -> Result<ExitStatus, (ExitCode, String)> {
    let strace_pid = child.id() as i32;
    let mut forwarded: Option<Instant> = None;
    let mut killed = false;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) => {}
            Err(e) => return Err((ExitCode::Failed, format!("waiting for strace: {e}"))),
        }
        if signals.stopped() {
            match forwarded {
                None => {
                    let sig = if signals.terminated() {
                        libc::SIGTERM
                    } else {
                        libc::SIGINT
                    };
                    signal_all(&descendants(strace_pid), sig);
                    forwarded = Some(Instant::now());
                }
                Some(at) if at.elapsed() > GRACE && !killed => {
                    signal_all(&descendants(strace_pid), libc::SIGKILL);
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
