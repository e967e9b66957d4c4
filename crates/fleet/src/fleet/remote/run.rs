//! A pack run on a host through the agent, and the sweep after a session
//! that could not finish.

use super::session::Session;
use super::{Binary, RemoteError, FINISH_LIMIT, STOP_LIMIT};
use crate::fleet::inventory::Host;
use crate::fleet::protocol::PAYLOAD;
use crate::fleet::ssh::{quote, remote_path, Input, Ssh};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How long a sweep after a failed session may take beyond connecting.
const SWEEP_LIMIT: Duration = Duration::from_secs(crate::fleet::agent::SWEEP_WAIT.as_secs() + 2);

/// What the agent runs: a pack bundle or a lone scenario file.
#[derive(Debug, Clone)]
pub struct Payload {
    /// Its file name there (`NAME.plumbpack`, `NAME.rhai`, `NAME.wasm`).
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// The one scenario of the bundle to run (`PACK/SCENARIO`), if not all.
    pub scenario: Option<String>,
}

/// Why plumb stopped a run on a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A signal here (SIGINT, SIGTERM).
    Signal,
    /// The fleet's time limit for the pack passed.
    TimeLimit,
}

/// How a run through the agent ended.
#[derive(Debug)]
pub struct RunOutcome {
    /// `plumb run`'s exit code there.
    pub code: i32,
    /// The result document it saved (possibly partial), if any: streamed
    /// into a hidden file of the spool directory, removed when dropped.
    pub document: Option<tempfile::NamedTempFile>,
    /// Why plumb stopped the run, when it did.
    pub stopped: Option<StopReason>,
    /// The last line the run printed on stderr.
    pub last_line: Option<String>,
}

/// Runs `payload` on `host` through the agent with `run_args` for
/// `plumb run`; progress lines go to `on_line`; the result document is
/// streamed into a hidden file in `spool`. On `stop`, or once `limit`
/// has passed, the agent is told to stop (the run saves what it gathered).
/// A session that ends without a result is followed by a [`sweep`].
#[allow(clippy::too_many_arguments)]
pub fn run(
    ssh: &Ssh,
    host: &Host,
    binary: &Binary,
    payload: &Payload,
    run_args: &[String],
    limit: Duration,
    spool: &std::path::Path,
    on_line: &mut dyn FnMut(&str),
    stop: &AtomicBool,
) -> Result<RunOutcome, RemoteError> {
    use std::sync::atomic::Ordering;
    let scenario = payload
        .scenario
        .as_ref()
        .map(|s| format!(" --scenario {}", quote(s)))
        .unwrap_or_default();
    let mut remote = format!(
        "exec {} fleet agent run --target {}{scenario} --",
        binary.on(host),
        remote_path(&host.target)
    );
    for a in run_args {
        remote.push(' ');
        remote.push_str(&quote(a));
    }
    let mut first = format!("{PAYLOAD} {} {}\n", payload.name, payload.bytes.len()).into_bytes();
    first.extend_from_slice(&payload.bytes);
    let started = Instant::now();
    let mut s = Session::start(ssh, host, &remote, first, Some(spool.to_path_buf()))?;
    let mut cut: Option<(Instant, StopReason)> = None;
    let code = loop {
        let _ = s.drain(on_line);
        if let Ok(Some(status)) = s.child.try_wait() {
            break status.code().unwrap_or(-1);
        }
        if cut.is_none() {
            let why = if stop.load(Ordering::Relaxed) {
                Some(StopReason::Signal)
            } else if started.elapsed() > limit {
                Some(StopReason::TimeLimit)
            } else {
                None
            };
            if let Some(why) = why {
                s.cut();
                cut = Some((Instant::now(), why));
            }
        }
        if cut.is_some_and(|(t, _)| t.elapsed() > STOP_LIMIT) {
            let _ = s.child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // What was said just before the end (ssh's own failure, 255, means
    // the connection is gone: only its own last words may still come).
    let finish_limit = if code == 255 {
        Duration::from_secs(1)
    } else {
        FINISH_LIMIT
    };
    s.finish(on_line, finish_limit);
    let stopped = cut.map(|(_, why)| why);
    match s.result.take() {
        Some((code, document)) => Ok(RunOutcome {
            code,
            document,
            stopped,
            last_line: s.last_line.clone(),
        }),
        None => {
            // The reason first: the sweep logs in again, which would make a
            // shared connection that ended look open.
            let why = match stopped {
                Some(StopReason::TimeLimit) => RemoteError::NoResultInTime(limit.as_secs()),
                Some(StopReason::Signal) => RemoteError::StoppedBeforeResult,
                None => s.reason(code),
            };
            if s.pid.is_some() && !stop.load(Ordering::Relaxed) {
                sweep(ssh, host, binary, s.pid);
            }
            Err(why)
        }
    }
}

/// After a session that did not end cleanly: waits for its agent to end
/// and removes run directories whose owner is gone (best effort, bounded).
pub fn sweep(ssh: &Ssh, host: &Host, binary: &Binary, pid: Option<u32>) {
    let mut remote = format!(
        "exec {} fleet agent sweep --target {}",
        binary.on(host),
        remote_path(&host.target)
    );
    if let Some(pid) = pid {
        remote.push_str(&format!(" --pid {pid}"));
    }
    let never = AtomicBool::new(false);
    let _ = ssh.run(
        host,
        &remote,
        Input::None,
        4096,
        SWEEP_LIMIT + ssh.connect_timeout,
        &never,
    );
}
