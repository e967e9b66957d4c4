//! An agent session over ssh: the child, its stdin (the lifeline), and
//! what the agent says on stdout (the protocol) and ssh on stderr.

use super::RemoteError;
use crate::fleet::inventory::Host;
use crate::fleet::protocol::{self, AGENT, LINE, READY, RESULT};
use crate::fleet::ssh::{self, Ssh};
use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use tempfile::NamedTempFile;

/// What the agent's stdout said.
enum Said {
    Started {
        pid: u32,
    },
    Line(String),
    Result {
        code: i32,
        document: Option<NamedTempFile>,
    },
    Ready(String),
    Garbled(String),
}

/// Reads the agent's stdout into messages; a result document is streamed
/// into a hidden file in `spool` (none: the session expects none).
fn listen(stdout: impl Read + Send + 'static, spool: Option<PathBuf>) -> mpsc::Receiver<Said> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        loop {
            let line = match protocol::read_line(&mut r) {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    let _ = tx.send(Said::Garbled(e.to_string()));
                    break;
                }
            };
            let said = if let Some(text) = line.strip_prefix(LINE) {
                Said::Line(crate::terminal::cleaned(text.trim()))
            } else if let Some(f) = protocol::fields(&line, AGENT) {
                match f.first().and_then(|p| p.parse().ok()) {
                    Some(pid) => Said::Started { pid },
                    None => Said::Garbled(line),
                }
            } else if let Some(f) = protocol::fields(&line, READY) {
                Said::Ready(f.join(" "))
            } else if let Some(f) = protocol::fields(&line, RESULT).filter(|f| f.len() == 2) {
                let (Ok(code), Ok(len)) = (f[0].parse::<i32>(), f[1].parse::<u64>()) else {
                    let _ = tx.send(Said::Garbled(line));
                    break;
                };
                match spooled(&mut r, len, spool.as_deref()) {
                    Ok(document) => Said::Result { code, document },
                    Err(e) => Said::Garbled(format!("the result document: {e}")),
                }
            } else {
                // A login banner or a shell's chatter before the agent starts.
                continue;
            };
            if tx.send(said).is_err() {
                break;
            }
        }
    });
    rx
}

/// The `len` bytes of a result document, streamed into a new hidden file
/// in `spool` (removed when dropped); None for an empty one.
fn spooled(
    r: &mut impl Read,
    len: u64,
    spool: Option<&std::path::Path>,
) -> std::io::Result<Option<NamedTempFile>> {
    let Some(dir) = spool else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "a result from a session that expects none",
        ));
    };
    let mut file = tempfile::Builder::new()
        .prefix(".incoming-")
        .suffix(".json")
        .tempfile_in(dir)?;
    protocol::copy_counted(
        r,
        len,
        crate::model::document::limits::FILE_BYTES,
        file.as_file_mut(),
    )?;
    Ok((len > 0).then_some(file))
}

/// ssh's own stderr (and the agent's errors), line by line: the run's
/// progress comes on stdout, so these lines say why a session failed.
fn stderr_lines(stderr: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut r = BufReader::new(stderr);
        let mut line = Vec::new();
        loop {
            line.clear();
            match r
                .by_ref()
                .take(protocol::MAX_LINE as u64)
                .read_until(b'\n', &mut line)
            {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line);
                    let text = crate::terminal::cleaned(text.trim_end());
                    if !text.is_empty() && tx.send(text).is_err() {
                        break;
                    }
                }
            }
        }
    });
    rx
}

/// A running agent session: the ssh child, its stdin (the lifeline), and
/// what it says.
pub(super) struct Session {
    pub(super) child: Child,
    /// The lifeline: dropping it tells the agent to stop.
    stdin: Option<mpsc::Receiver<Option<ChildStdin>>>,
    said: mpsc::Receiver<Said>,
    errors: mpsc::Receiver<String>,
    /// The agent's PID once it said it.
    pub(super) pid: Option<u32>,
    /// The result frame, once it came.
    pub(super) result: Option<(i32, Option<NamedTempFile>)>,
    /// The address a server said it listens on.
    pub(super) ready: Option<String>,
    /// Something the agent said that is not the protocol.
    garbled: Option<String>,
    /// The last lines of ssh's stderr, for the reason of a failure.
    tail: Vec<String>,
    /// The last progress line of the run.
    pub(super) last_line: Option<String>,
    /// How the session was started, to tell a silent end of its shared
    /// connection ([`Ssh::silent_exit`]).
    via: (Ssh, Host),
}

/// How many of ssh's last stderr lines are kept.
const TAIL_LINES: usize = 20;

impl Session {
    /// Starts `remote` on `host` and sends `first` (header and bytes) on its
    /// stdin from a thread, keeping stdin open afterwards.
    pub(super) fn start(
        ssh: &Ssh,
        host: &Host,
        remote: &str,
        first: Vec<u8>,
        spool: Option<PathBuf>,
    ) -> Result<Session, RemoteError> {
        let mut child = ssh
            .command(host, remote)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(RemoteError::SpawnSsh)?;
        let mut stdin = child.stdin.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let ok = stdin.write_all(&first).and_then(|()| stdin.flush()).is_ok();
            let _ = tx.send(ok.then_some(stdin));
        });
        let said = listen(child.stdout.take().expect("piped"), spool);
        let errors = stderr_lines(child.stderr.take().expect("piped"));
        Ok(Session {
            child,
            stdin: Some(rx),
            said,
            errors,
            pid: None,
            result: None,
            ready: None,
            garbled: None,
            tail: Vec::new(),
            last_line: None,
            via: (ssh.clone(), host.clone()),
        })
    }

    /// Cuts the lifeline: the agent stops its child and cleans up. While the
    /// payload is still being sent, ssh itself is killed.
    pub(super) fn cut(&mut self) {
        if let Some(rx) = self.stdin.take() {
            match rx.try_recv() {
                Ok(stdin) => drop(stdin),
                Err(_) => {
                    let _ = self.child.kill();
                }
            }
        }
    }

    /// After ssh has exited: takes in what the agent said and ssh's stderr
    /// until both have ended (or the result has come and stderr ended), for
    /// at most `limit`. Over a shared connection the master, not the exited
    /// client, holds those pipes, so the last frames (the result among
    /// them) and ssh's last words may still be on their way when ssh has
    /// gone; a busy machine can take well over a few milliseconds to pass
    /// them on.
    pub(super) fn finish(&mut self, on_line: &mut dyn FnMut(&str), limit: Duration) {
        let started = std::time::Instant::now();
        loop {
            let said_open = self.drain(on_line) && self.result.is_none();
            let errors_open = self.drain_errors();
            if !(said_open || errors_open) || started.elapsed() > limit {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Takes in what was said so far: progress lines go to `on_line`.
    /// False once the agent's stdout has ended and all it said is in.
    pub(super) fn drain(&mut self, on_line: &mut dyn FnMut(&str)) -> bool {
        loop {
            let said = match self.said.try_recv() {
                Ok(said) => said,
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    let _ = self.drain_errors();
                    return false;
                }
            };
            match said {
                Said::Started { pid } => self.pid = Some(pid),
                Said::Line(l) => {
                    on_line(&l);
                    self.last_line = Some(l);
                }
                Said::Result { code, document } => self.result = Some((code, document)),
                Said::Ready(a) => self.ready = Some(a),
                Said::Garbled(g) => self.garbled = Some(g),
            }
        }
        let _ = self.drain_errors();
        true
    }

    /// Takes in ssh's stderr lines so far, keeping the last [`TAIL_LINES`];
    /// false once stderr has ended and all of it is in.
    fn drain_errors(&mut self) -> bool {
        loop {
            match self.errors.try_recv() {
                Ok(l) => {
                    self.tail.push(l);
                    if self.tail.len() > TAIL_LINES {
                        self.tail.remove(0);
                    }
                }
                Err(mpsc::TryRecvError::Empty) => return true,
                Err(mpsc::TryRecvError::Disconnected) => return false,
            }
        }
    }

    /// Why the session ended without a result, in one line: ssh's reason
    /// when ssh failed (255), else how the agent's side ended.
    pub(super) fn reason(&self, code: i32) -> RemoteError {
        if let Some(g) = &self.garbled {
            return RemoteError::Garbled(g.clone());
        }
        match code {
            -1 => RemoteError::SshKilled,
            c if c > 128 && c < 160 => RemoteError::Killed(c - 128),
            c => {
                let tail = self.tail.join("\n");
                let (ssh, host) = &self.via;
                let said = ssh.silent_exit(host, c, &tail).unwrap_or(tail);
                RemoteError::Failed(ssh::reason(c, &said))
            }
        }
    }
}

/// A signal's name.
pub(super) fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL: out of memory, or killed",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        _ => "signal",
    }
}
