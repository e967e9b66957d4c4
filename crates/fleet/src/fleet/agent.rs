//! The remote side of a fleet session (`plumb fleet agent`, run by the
//! driver over ssh; not for people).
//!
//! It makes a run directory of its own in the target (owner-marked, so a
//! later plumb sweeps it if the agent is killed), receives the pack on
//! stdin, runs `plumb run` (or `plumb serve`) as a child, passes the
//! child's progress on as `plumb-fleet-line` frames, and sends the result
//! document back on stdout. (stderr is left to ssh and the agent's own
//! errors, so the driver can tell a lost connection from a run's output.)
//! The child writes its stderr to a file, never to a pipe whose reader
//! might be gone, and is sent SIGTERM by the kernel if the agent dies
//! (`PR_SET_PDEATHSIG`).
//! Its lifeline is stdin: when the driver goes away (Ctrl-C, the
//! connection drops, the driver is killed), stdin ends, and the agent
//! stops its child with SIGTERM (which saves partial results and cleans
//! up), then removes its directory. SIGINT, SIGTERM and SIGHUP do the same.

use super::protocol::{self, AGENT, LINE, PAYLOAD, READY, RESULT};
use crate::sandbox::RunDir;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a sweep waits for the agent it follows to end.
pub const SWEEP_WAIT: Duration = Duration::from_secs(8);

/// How long a child may take to stop after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// The file names a payload may have.
const PAYLOAD_EXTENSIONS: [&str; 3] = [crate::scenario::bundle::EXTENSION, "rhai", "wasm"];

/// Why the agent could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The target or the run directory.
    #[error("target {0}")]
    Target(String),
    /// What the driver sent.
    #[error("payload: {0}")]
    Payload(String),
    /// Starting the child.
    #[error("cannot start plumb: {0}")]
    Spawn(String),
}

/// The stop flag of the agent: a signal, or stdin's end.
struct Lifeline {
    stop: Arc<AtomicBool>,
}

impl Lifeline {
    /// Signals set the flag; so does the end of stdin once [`watch`] runs.
    fn install() -> Lifeline {
        let stop = Arc::new(AtomicBool::new(false));
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        for s in [SIGINT, SIGTERM, SIGHUP] {
            let _ = signal_hook::flag::register(s, stop.clone());
        }
        Lifeline { stop }
    }

    /// Reads `stdin` to its end in a thread, then sets the flag.
    fn watch(&self, mut stdin: impl Read + Send + 'static) {
        let stop = self.stop.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
            stop.store(true, Ordering::Relaxed);
        });
    }

    fn cut(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// `plumb fleet agent run`: receives the payload, runs it (only its
/// `scenario`, when given) with `run_args` under `target`, sends the result
/// back. Returns the child's exit code.
pub fn run(target: &Path, scenario: Option<&str>, run_args: &[String]) -> Result<i32, AgentError> {
    let lifeline = Lifeline::install();
    let target = std::fs::canonicalize(target)
        .map_err(|e| AgentError::Target(format!("{}: {e}", target.display())))?;
    crate::sandbox::sweep_stale(&target);
    // The payload is bounded as it is received; what the run writes is
    // bounded by its own account, in its own run directory.
    let dir = RunDir::create(&target, crate::sandbox::Account::unbounded())
        .map_err(|e| AgentError::Target(format!("{}: {e}", target.display())))?;
    let outcome = run_in(&dir, &target, scenario, run_args, &lifeline);
    let _ = dir.delete();
    outcome
}

fn run_in(
    dir: &RunDir,
    target: &Path,
    scenario: Option<&str>,
    run_args: &[String],
    lifeline: &Lifeline,
) -> Result<i32, AgentError> {
    if scenario.is_some_and(|s| !crate::scenario::bundle::plain_name(s)) {
        return Err(AgentError::Payload(
            "--scenario: not a scenario name".into(),
        ));
    }
    let out = Out::new();
    out.line(&format!(
        "{AGENT} {} {}",
        std::process::id(),
        dir.path().display()
    ));
    let mut stdin = BufReader::new(std::io::stdin());
    let mut payload = receive(&mut stdin, dir.path())?.into_os_string();
    if let Some(s) = scenario {
        payload.push(format!("/{s}"));
    }
    lifeline.watch(stdin);
    let result = dir.path().join("result.json");
    let log = dir.path().join("stderr.log");
    let mut cmd = plumb();
    cmd.arg("run")
        .arg(&payload)
        .arg("--target")
        .arg(dir.path())
        .arg("--json")
        .arg(&result)
        .args(run_args)
        .stdout(Stdio::null());
    let mut child = spawn(cmd, &log)?;
    let code = relayed(&mut child, &log, &out, lifeline);
    let doc = std::fs::read(&result)
        .ok()
        .filter(|b| b.len() as u64 <= crate::model::document::limits::FILE_BYTES)
        .map(|b| with_target(b, target))
        .unwrap_or_default();
    out.counted(RESULT, &code.to_string(), &doc);
    Ok(code)
}

/// The agent's stdout, shared by the relay and the main thread, so that
/// frames never interleave. A failed write (the driver is gone) is dropped:
/// the lifeline tells the agent to stop.
struct Out(std::sync::Mutex<std::io::Stdout>);

impl Out {
    fn new() -> Out {
        Out(std::sync::Mutex::new(std::io::stdout()))
    }

    fn line(&self, text: &str) {
        let mut o = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(o, "{text}").and_then(|()| o.flush());
    }

    fn counted(&self, kind: &str, first: &str, bytes: &[u8]) {
        let mut o = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = protocol::write_counted(&mut *o, kind, first, bytes);
    }
}

/// Starts `cmd` with stdin closed and stderr into `log`; the kernel sends
/// it SIGTERM should the agent die first, so it never runs on orphaned.
fn spawn(mut cmd: Command, log: &Path) -> Result<Child, AgentError> {
    use std::os::unix::process::CommandExt;
    let err = crate::scratch::create_new(log)
        .map_err(|e| AgentError::Spawn(format!("{}: {e}", log.display())))?;
    cmd.stdin(Stdio::null()).stderr(err);
    // SAFETY: prctl is async-signal-safe; it only sets this child's
    // parent-death signal.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().map_err(|e| AgentError::Spawn(e.to_string()))
}

/// Supervises the child (see [`supervise`]) while passing the lines of its
/// stderr `log` on as `plumb-fleet-line` frames; returns its exit code once
/// the last line is sent.
fn relayed(child: &mut Child, log: &Path, out: &Out, lifeline: &Lifeline) -> i32 {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| relay(log, out, &done));
        let code = supervise(child, lifeline);
        done.store(true, Ordering::Relaxed);
        code
    })
}

/// Follows `log` as it grows, sending each line (at most
/// [`protocol::MAX_LINE`] bytes of it) as a frame, until `done` and read out.
fn relay(log: &Path, out: &Out, done: &AtomicBool) {
    let Ok(f) = std::fs::File::open(log) else {
        return;
    };
    let mut r = BufReader::new(f);
    let mut line = Vec::new();
    loop {
        let finished = done.load(Ordering::Relaxed);
        match r.read_until(b'\n', &mut line) {
            Ok(n) if n > 0 && line.ends_with(b"\n") => {
                let text = String::from_utf8_lossy(&line);
                let text: String = text
                    .trim_end()
                    .chars()
                    .take(protocol::MAX_LINE - 32)
                    .collect();
                out.line(&format!("{LINE} {}", text.replace('\r', " ")));
                line.clear();
                continue;
            }
            Ok(_) | Err(_) if finished => {
                if !line.is_empty() {
                    let text = String::from_utf8_lossy(&line).into_owned();
                    out.line(&format!("{LINE} {}", text.trim_end()));
                }
                return;
            }
            _ => {}
        }
        // A partial line waits for its end; a line longer than the bound
        // is sent in pieces.
        if line.len() > protocol::MAX_LINE / 2 {
            let text = String::from_utf8_lossy(&line).into_owned();
            out.line(&format!("{LINE} {}", text.trim_end()));
            line.clear();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reads the payload header and bytes from the driver into `dir`.
fn receive(stdin: &mut impl BufRead, dir: &Path) -> Result<PathBuf, AgentError> {
    let bad = |m: String| AgentError::Payload(m);
    let line = protocol::read_line(stdin)
        .map_err(|e| bad(e.to_string()))?
        .ok_or_else(|| bad("the driver sent nothing".into()))?;
    let f = protocol::fields(&line, PAYLOAD)
        .filter(|f| f.len() == 2)
        .ok_or_else(|| {
            bad(format!(
                "not a payload header: {}",
                crate::terminal::clean(&line)
            ))
        })?;
    let (name, len) = (f[0], f[1]);
    let plain = crate::scenario::bundle::plain_name(name)
        && Path::new(name)
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| PAYLOAD_EXTENSIONS.contains(&e));
    if !plain {
        return Err(bad(format!(
            "'{}' is not a pack bundle, .rhai or .wasm file name",
            crate::terminal::clean(name)
        )));
    }
    let len: u64 = len.parse().map_err(|_| {
        bad(format!(
            "length '{}' is not a number",
            crate::terminal::clean(len)
        ))
    })?;
    let bytes = protocol::read_counted(stdin, len, crate::scenario::bundle::MAX_BUNDLE)
        .map_err(|e| bad(e.to_string()))?;
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    Ok(path)
}

/// This plumb, as a command: the very file this process runs
/// (`/proc/self/exe`), not the path it was started by, which another
/// session may have replaced since (a racing copy into the same cache:
/// the path then names a new file, and the running one's path reads as
/// `… (deleted)`). Its `argv[0]` stays `plumb`, as its messages name it.
fn plumb() -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new("/proc/self/exe");
    c.arg0("plumb");
    c
}

/// Waits for the child; once the lifeline is cut, sends it SIGTERM, and
/// SIGKILL when it has not ended [`STOP_GRACE`] later. Its exit code
/// (128 + the signal when a signal ended it).
fn supervise(child: &mut Child, lifeline: &Lifeline) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    let mut terminated: Option<Instant> = None;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(1);
        }
        if lifeline.cut() {
            match terminated {
                None => {
                    // SAFETY: kill with a valid signal number has no memory effects.
                    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                    terminated = Some(Instant::now());
                }
                Some(t) if t.elapsed() > STOP_GRACE => {
                    let _ = child.kill();
                }
                Some(_) => {}
            }
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The result document with the host's real target as its target path
/// (the child ran in the agent's directory beneath it).
fn with_target(doc: Vec<u8>, target: &Path) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&doc) else {
        return doc;
    };
    if let Some(t) = v.get_mut("target").and_then(|t| t.as_object_mut()) {
        t.insert(
            "path".into(),
            serde_json::Value::String(target.display().to_string()),
        );
    }
    serde_json::to_vec_pretty(&v).unwrap_or(doc)
}

/// `plumb fleet agent serve`: runs `plumb serve --listen LISTEN` until the
/// lifeline is cut; says `plumb-fleet-ready ADDRESS` once it listens.
pub fn serve(listen: &str, max_duration: &str) -> Result<i32, AgentError> {
    let lifeline = Lifeline::install();
    let out = Out::new();
    out.line(&format!("{AGENT} {} -", std::process::id()));
    lifeline.watch(std::io::stdin());
    // The log lives in a private directory of its own, never by a
    // guessable name in the shared temp directory.
    let scratch = crate::scratch::ScratchDir::new(&std::env::temp_dir(), "plumb-fleet-serve-")
        .map_err(|e| AgentError::Spawn(format!("{}: {e}", std::env::temp_dir().display())))?;
    let log = scratch.path().join("serve.log");
    let mut cmd = plumb();
    cmd.args([
        "serve",
        "--quiet",
        "--listen",
        listen,
        "--max-duration",
        max_duration,
    ])
    .stdout(Stdio::piped());
    let mut child = spawn(cmd, &log)?;
    let stdout = child.stdout.take().expect("piped");
    let (first_line, ready) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut first = String::new();
        let _ = r
            .by_ref()
            .take(protocol::MAX_LINE as u64)
            .read_line(&mut first);
        let _ = first_line.send(first);
        let _ = std::io::copy(&mut r, &mut std::io::sink());
    });
    // serve prints its address at once; the driver waits for this line.
    loop {
        if let Ok(first) = ready.recv_timeout(Duration::from_millis(20)) {
            if let Some(addr) = first.trim().strip_prefix("plumb serve: listening on ") {
                out.line(&format!("{READY} {addr}"));
            }
            break;
        }
        if lifeline.cut() || matches!(child.try_wait(), Ok(Some(_))) {
            break;
        }
    }
    let code = relayed(&mut child, &log, &out, &lifeline);
    drop(scratch);
    Ok(code)
}

/// `plumb fleet agent sweep`: waits (at most `wait`) for the agent `pid`
/// to end, then removes the run directories in `target` whose owner is
/// gone — the cleanup after a session whose agent could not finish.
pub fn sweep(target: &Path, pid: Option<u32>, wait: Duration) {
    if let Some(pid) = pid {
        let start = Instant::now();
        while Path::new("/proc").join(pid.to_string()).exists() && start.elapsed() < wait {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    crate::sandbox::sweep_stale(target);
}
