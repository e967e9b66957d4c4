//! What the driver does on one host, step by step, each over one ssh
//! command: [`check`] the host, [`copy_binary`] plumb into its cache,
//! [`run`] a pack through the agent, [`Server::start`] a `plumb serve`,
//! and [`sweep`] up after a session that could not finish.
//!
//! Every step polls the stop flag and has a time limit; every failure is
//! one line naming its cause.

use super::inventory::Host;
use super::protocol::{self, AGENT, LINE, PAYLOAD, READY, RESULT};
use super::ssh::{self, quote, remote_path, Input, Ssh};
use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The oldest kernel plumb runs on: `openat2` (the sandbox's resolver)
/// came in 5.6.
pub const MIN_KERNEL: (u32, u32) = (5, 6);

/// How long a check may take beyond the connect timeout.
const CHECK_LIMIT: Duration = Duration::from_secs(60);
/// How long the agent may take to stop and clean up once its stdin ends.
const STOP_LIMIT: Duration = Duration::from_secs(20);
/// How long a sweep after a failed session may take beyond connecting.
const SWEEP_LIMIT: Duration = Duration::from_secs(super::agent::SWEEP_WAIT.as_secs() + 2);

/// This plumb binary, as it is copied to hosts.
#[derive(Debug, Clone)]
pub struct Binary {
    /// Where it is here.
    pub path: PathBuf,
    /// Its SHA-256, which names it in the hosts' caches.
    pub sha256: String,
    /// Its size in bytes.
    pub len: u64,
}

impl Binary {
    /// The running plumb. Hashing it takes most of a second (it is large),
    /// so the hash is remembered in plumb's cache, keyed by the file's
    /// device, inode, size and modification time: a rebuilt or replaced
    /// binary is hashed again. (A wrong memo cannot plant a wrong binary:
    /// the host checks what arrives against the name.)
    pub fn current() -> std::io::Result<Binary> {
        use sha2::{Digest, Sha256};
        use std::os::unix::fs::MetadataExt;
        let path = std::env::current_exe()?;
        let meta = std::fs::metadata(&path)?;
        let key = format!(
            "{} {} {} {} {}",
            meta.dev(),
            meta.ino(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        );
        let memo = crate::cache::open("self").ok().map(|d| d.join("sha256"));
        let remembered = memo
            .as_deref()
            .and_then(|m| crate::input::read_file(m, 256).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| {
                let sha = t
                    .trim_end()
                    .strip_prefix(&key)?
                    .strip_prefix(' ')?
                    .to_string();
                (sha.len() == 64 && sha.bytes().all(|c| c.is_ascii_hexdigit())).then_some(sha)
            });
        if let Some(sha256) = remembered {
            return Ok(Binary {
                path,
                sha256,
                len: meta.len(),
            });
        }
        let mut f = std::fs::File::open(&path)?;
        let mut h = Sha256::new();
        let len = std::io::copy(&mut f, &mut h)?;
        let sha256: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        // Only a speed-up: a memo that cannot be written costs a hash next
        // time; one for a file that changed while it was read is not written.
        if let Some(m) = memo.filter(|_| len == meta.len()) {
            let _ = crate::save::write_atomic(&m, format!("{key} {sha256}\n").as_bytes());
        }
        Ok(Binary { path, sha256, len })
    }

    /// The binary's path on `host`, as a shell word.
    fn on(&self, host: &Host) -> String {
        format!(
            "{}/{}",
            remote_path(&host.cache),
            quote(&format!("plumb-{}", self.sha256))
        )
    }
}

/// What [`check`] found on a host.
#[derive(Debug, Clone)]
pub struct Probe {
    /// `uname -m`.
    pub arch: String,
    /// `uname -r`.
    pub kernel: String,
    /// Free bytes in the target.
    pub free_bytes: u64,
    /// This plumb is already in the host's cache (an executable of the
    /// right size under its SHA-256; the content was checked when copied).
    pub cached: bool,
}

/// Checks that `host` answers, lets us in, runs Linux on this machine's
/// architecture with a new enough kernel, and has `need_bytes` free in
/// its target; and whether this binary is cached there: an executable of
/// the right size under its SHA-256, owned by the user in a cache
/// directory of the user's that nobody else may write (its content was
/// checked when it was copied).
pub fn check(
    ssh: &Ssh,
    host: &Host,
    binary: &Binary,
    need_bytes: u64,
    stop: &AtomicBool,
) -> Result<Probe, String> {
    let target = remote_path(&host.target);
    let script = format!(
        "echo os=$(uname -s); echo arch=$(uname -m); echo kernel=$(uname -r); \
         if [ -d {target} ]; then echo target=dir; \
         if [ -w {target} ]; then echo writable=yes; fi; \
         df -Pk {target} | awk 'NR==2 {{ print \"free_kib=\" $4 }}'; \
         else echo target=missing; fi; \
         c={cache}; b={bin}; \
         if [ -x \"$b\" ] && [ -O \"$b\" ] && [ -O \"$c\" ] && [ \"$(wc -c < \"$b\")\" -eq {len} ] \
         && [ -z \"$(find \"$c\" \"$b\" -prune \\( -perm -020 -o -perm -002 \\) -print)\" ]; \
         then echo binary=cached; fi",
        cache = remote_path(&host.cache),
        bin = binary.on(host),
        len = binary.len
    );
    let done = ssh
        .run(
            host,
            &script,
            Input::None,
            64 << 10,
            CHECK_LIMIT + ssh.connect_timeout,
            stop,
        )
        .map_err(|e| match e {
            ssh::SshError::TimedOut(_) => format!("unreachable: {e}"),
            e => e.to_string(),
        })?;
    if done.code != 0 {
        return Err(done.reason());
    }
    let text = String::from_utf8_lossy(&done.stdout);
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(|v| crate::terminal::cleaned(v.trim()))
    };
    let os = field("os").unwrap_or_default();
    if os != "Linux" {
        return Err(format!("runs '{os}', not Linux"));
    }
    let arch = field("arch").unwrap_or_default();
    if !same_arch(&arch) {
        return Err(format!(
            "its CPU architecture is {arch}, this plumb is built for {}",
            std::env::consts::ARCH
        ));
    }
    let kernel = field("kernel").unwrap_or_default();
    match kernel_version(&kernel) {
        Some(v) if v >= MIN_KERNEL => {}
        _ => {
            return Err(format!(
                "kernel {kernel} is older than {}.{} (plumb needs openat2)",
                MIN_KERNEL.0, MIN_KERNEL.1
            ))
        }
    }
    if field("target").as_deref() != Some("dir") {
        return Err(format!(
            "the target directory {} does not exist there",
            host.target
        ));
    }
    if field("writable").is_none() {
        return Err(format!(
            "the target directory {} is not writable",
            host.target
        ));
    }
    let free_bytes = field("free_kib")
        .and_then(|v| v.parse::<u64>().ok())
        .map(|k| k.saturating_mul(1024))
        .ok_or_else(|| format!("df gave no free space for {}", host.target))?;
    if free_bytes < need_bytes {
        return Err(format!(
            "too little free space in {}: {} free, the pack may write {}",
            host.target,
            crate::units::format_bytes_binary(free_bytes as f64),
            crate::units::format_bytes_binary(need_bytes as f64)
        ));
    }
    Ok(Probe {
        arch,
        kernel,
        free_bytes,
        cached: field("binary").as_deref() == Some("cached"),
    })
}

/// True when `uname -m` names this binary's architecture.
fn same_arch(uname: &str) -> bool {
    let here = std::env::consts::ARCH;
    uname == here || (here == "arm" && uname.starts_with("arm"))
}

/// `6.18.0-1-amd64` as (6, 18).
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Copies this plumb into `host`'s cache: written under a temporary name
/// (removed if the copy is cut; leftovers older than an hour are removed
/// by the next copy), checked against its SHA-256 there, then renamed, so
/// a cut copy never looks cached; and started once (`--version`), so a
/// host whose C library is too old for this build says so before the run.
/// The cache directory must be the user's
/// own and writable by nobody else (a shared one could hold a planted
/// "plumb"); plumb makes it with mode 0700 and never changes an existing
/// one.
pub fn copy_binary(
    ssh: &Ssh,
    host: &Host,
    binary: &Binary,
    stop: &AtomicBool,
) -> Result<(), String> {
    let script = format!(
        "umask 077; c={cache}; t=\"$c/.plumb-{sha}.$$\"; mkdir -p \"$c\" || exit 1; \
         if [ ! -O \"$c\" ] || [ -n \"$(find \"$c\" -prune \\( -perm -020 -o -perm -002 \\) -print)\" ]; then \
         echo \"the cache directory $c is not private (another user's, or writable by others): give the host a cache of its own\" >&2; exit 1; fi; \
         find \"$c\" -maxdepth 1 -name '.plumb-*' -mmin +60 -exec rm -f {{}} + 2>/dev/null; \
         trap 'rm -f \"$t\"' EXIT HUP INT TERM; \
         cat > \"$t\" && echo '{sha}  '\"$t\" | sha256sum -c --status \
         || {{ echo 'the copy did not arrive whole (sha256sum failed)' >&2; exit 1; }}; \
         chmod 700 \"$t\" || exit 1; \
         if ! e=$(\"$t\" --version 2>&1 >/dev/null); then \
         echo \"the copied plumb does not start there (an older C library?): $(echo \"$e\" | tail -n 1)\" >&2; exit 1; fi; \
         mv -f \"$t\" {bin}",
        cache = remote_path(&host.cache),
        sha = binary.sha256,
        bin = binary.on(host)
    );
    // A generous limit: at least 1 MiB/s.
    let limit = Duration::from_secs(60 + binary.len / (1 << 20));
    let done = ssh
        .run(
            host,
            &script,
            Input::File(binary.path.clone()),
            4096,
            limit,
            stop,
        )
        .map_err(|e| e.to_string())?;
    if done.code != 0 {
        return Err(done.reason());
    }
    Ok(())
}

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

/// How a run through the agent ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// `plumb run`'s exit code there.
    pub code: i32,
    /// The result document it saved (possibly partial), if any.
    pub document: Option<Vec<u8>>,
    /// Why plumb stopped the run (`stopped`: a signal here; `timed out`:
    /// the fleet's limit), when it did.
    pub stopped: Option<&'static str>,
    /// The last line the run printed on stderr.
    pub last_line: Option<String>,
}

/// What the agent's stdout said.
enum Said {
    Started { pid: u32 },
    Line(String),
    Result { code: i32, document: Vec<u8> },
    Ready(String),
    Garbled(String),
}

/// Reads the agent's stdout into messages.
fn listen(stdout: impl Read + Send + 'static) -> mpsc::Receiver<Said> {
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
                match protocol::read_counted(
                    &mut r,
                    len,
                    crate::model::document::limits::FILE_BYTES,
                ) {
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
struct Session {
    child: Child,
    /// The lifeline: dropping it tells the agent to stop.
    stdin: Option<mpsc::Receiver<Option<ChildStdin>>>,
    said: mpsc::Receiver<Said>,
    errors: mpsc::Receiver<String>,
    /// The agent's PID once it said it.
    pid: Option<u32>,
    /// The result frame, once it came.
    result: Option<(i32, Vec<u8>)>,
    /// The address a server said it listens on.
    ready: Option<String>,
    /// Something the agent said that is not the protocol.
    garbled: Option<String>,
    /// The last lines of ssh's stderr, for the reason of a failure.
    tail: Vec<String>,
    /// The last progress line of the run.
    last_line: Option<String>,
}

/// How many of ssh's last stderr lines are kept.
const TAIL_LINES: usize = 20;

impl Session {
    /// Starts `remote` on `host` and sends `first` (header and bytes) on its
    /// stdin from a thread, keeping stdin open afterwards.
    fn start(ssh: &Ssh, host: &Host, remote: &str, first: Vec<u8>) -> Result<Session, String> {
        let mut child = ssh
            .command(host, remote)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        let mut stdin = child.stdin.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let ok = stdin.write_all(&first).and_then(|()| stdin.flush()).is_ok();
            let _ = tx.send(ok.then_some(stdin));
        });
        let said = listen(child.stdout.take().expect("piped"));
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
        })
    }

    /// Cuts the lifeline: the agent stops its child and cleans up. While the
    /// payload is still being sent, ssh itself is killed.
    fn cut(&mut self) {
        if let Some(rx) = self.stdin.take() {
            match rx.try_recv() {
                Ok(stdin) => drop(stdin),
                Err(_) => {
                    let _ = self.child.kill();
                }
            }
        }
    }

    /// Takes in what was said so far: progress lines go to `on_line`.
    fn drain(&mut self, on_line: &mut dyn FnMut(&str)) {
        while let Ok(said) = self.said.try_recv() {
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
        while let Ok(l) = self.errors.try_recv() {
            self.tail.push(l);
            if self.tail.len() > TAIL_LINES {
                self.tail.remove(0);
            }
        }
    }

    /// Why the session ended without a result, in one line: ssh's reason
    /// when ssh failed (255), else how the agent's side ended.
    fn reason(&self, code: i32) -> String {
        if let Some(g) = &self.garbled {
            return format!(
                "the agent said something unexpected: {}",
                crate::terminal::cleaned(g)
            );
        }
        match code {
            255 => ssh::reason(code, &self.tail.join("\n")),
            -1 => "ssh was killed".to_string(),
            c if c > 128 && c < 160 => format!(
                "plumb on the host was killed by signal {} ({})",
                c - 128,
                signal_name(c - 128)
            ),
            c => ssh::reason(c, &self.tail.join("\n")),
        }
    }
}

/// A signal's name.
fn signal_name(sig: i32) -> &'static str {
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

/// Runs `payload` on `host` through the agent with `run_args` for
/// `plumb run`; progress lines go to `on_line`. On `stop`, or once `limit`
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
    on_line: &mut dyn FnMut(&str),
    stop: &AtomicBool,
) -> Result<RunOutcome, String> {
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
    let mut s = Session::start(ssh, host, &remote, first)?;
    let mut cut: Option<(Instant, &str)> = None;
    let code = loop {
        s.drain(on_line);
        if let Ok(Some(status)) = s.child.try_wait() {
            break status.code().unwrap_or(-1);
        }
        if cut.is_none() {
            let why = if stop.load(Ordering::Relaxed) {
                Some("stopped")
            } else if started.elapsed() > limit {
                Some("timed out")
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
    // What was said just before the end.
    std::thread::sleep(Duration::from_millis(20));
    s.drain(on_line);
    let stopped = cut.map(|(_, why)| why);
    match s.result.take() {
        Some((code, document)) => Ok(RunOutcome {
            code,
            document: (!document.is_empty()).then_some(document),
            stopped,
            last_line: s.last_line.clone(),
        }),
        None => {
            if s.pid.is_some() && !stop.load(Ordering::Relaxed) {
                sweep(ssh, host, binary, s.pid);
            }
            Err(match stopped {
                Some("timed out") => format!(
                    "no result within {} s (the fleet's limit for this pack); the run was stopped",
                    limit.as_secs()
                ),
                Some(_) => "stopped before the host sent a result".to_string(),
                None => s.reason(code),
            })
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

/// A `plumb serve` running on a host through the agent; stopped (and
/// gone from the host) when [`Server::stop`] runs or it is dropped.
pub struct Server {
    session: Session,
}

impl Server {
    /// Starts `plumb serve --listen LISTEN` on `host`, for at most
    /// `max_duration` (a duration text), and waits until it listens there.
    pub fn start(
        ssh: &Ssh,
        host: &Host,
        binary: &Binary,
        listen: std::net::SocketAddr,
        max_duration: &str,
        stop: &AtomicBool,
    ) -> Result<Server, String> {
        use std::sync::atomic::Ordering;
        let remote = format!(
            "exec {} fleet agent serve --listen {} --max-duration {}",
            binary.on(host),
            quote(&listen.to_string()),
            quote(max_duration)
        );
        let mut s = Session::start(ssh, host, &remote, Vec::new())?;
        let start = Instant::now();
        let limit = ssh.connect_timeout + Duration::from_secs(20);
        loop {
            s.drain(&mut |_| {});
            if let Some(said) = s.ready.take() {
                // The host only confirms; where the client connects is ours.
                return match said.parse::<std::net::SocketAddr>() {
                    Ok(a) if a == listen => Ok(Server { session: s }),
                    _ => Err(format!(
                        "plumb serve says it listens on '{}', not {listen}",
                        crate::terminal::cleaned(&said)
                    )),
                };
            }
            if let Ok(Some(status)) = s.child.try_wait() {
                std::thread::sleep(Duration::from_millis(20));
                s.drain(&mut |_| {});
                let why = s
                    .last_line
                    .clone()
                    .unwrap_or_else(|| s.reason(status.code().unwrap_or(-1)));
                return Err(why);
            }
            if stop.load(Ordering::Relaxed) || start.elapsed() > limit {
                s.cut();
                let _ = s.child.kill();
                let _ = s.child.wait();
                return Err(if stop.load(Ordering::Relaxed) {
                    "stopped".into()
                } else {
                    format!("plumb serve did not start within {} s", limit.as_secs())
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server: cuts the lifeline and waits for the session to end.
    pub fn stop(mut self) {
        self.end();
    }

    fn end(&mut self) {
        self.session.cut();
        let never = AtomicBool::new(false);
        let _ = ssh::wait(&mut self.session.child, STOP_LIMIT, &never);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.session.child.try_wait(), Ok(None)) {
            self.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_parse() {
        assert_eq!(kernel_version("6.18.0-1-amd64"), Some((6, 18)));
        assert_eq!(kernel_version("5.4.0"), Some((5, 4)));
        assert_eq!(kernel_version("x"), None);
        assert!(kernel_version("5.4.0").unwrap() < MIN_KERNEL);
    }
}
