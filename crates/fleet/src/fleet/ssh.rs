//! The transport: the system's OpenSSH client, never a home-made one, so
//! the user's `~/.ssh/config` (aliases, jump hosts, agents, keys) applies.
//!
//! Every command runs with `BatchMode=yes` (no password prompt can hang a
//! fleet), a connect timeout, and keep-alives (a host that stops answering
//! ends its session in ~15 s instead of never). ssh joins its arguments
//! into one remote shell command line, so everything that goes into one is
//! quoted here ([`quote`], [`remote_path`]).
//!
//! Each host gets one connection for the whole command (OpenSSH's
//! connection sharing, [`Sharing`]): the check, the copy and the run are
//! sessions over it, so a host costs one key exchange and login, not three
//! (0.14 CPU-seconds each on loopback with OpenSSH's default key exchange,
//! against 0.013 for a shared session).
//!
//! ssh runs in a process group of its own: a Ctrl-C on the terminal reaches
//! plumb, which decides how each session ends (closing its stdin, so the
//! remote agent stops its run and cleans up), instead of killing every ssh
//! at once.

use super::inventory::Host;
use crate::child::{collect, Keep};
pub(super) use crate::child::{wait, Waited};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// How plumb calls ssh.
#[derive(Debug, Clone)]
pub struct Ssh {
    /// The ssh program.
    pub program: PathBuf,
    /// `-F FILE`: a config file instead of the user's.
    pub config: Option<PathBuf>,
    /// `-o OPTION`s given by the user (they come first, so they win over
    /// plumb's own defaults, as ssh takes the first value it sees).
    pub options: Vec<String>,
    /// How long a connection may take to open.
    pub connect_timeout: Duration,
    /// Where each host's shared connection listens, if sharing is on.
    pub sharing: Option<Arc<Sharing>>,
}

/// How long a shared connection stays open once its last session ends,
/// should plumb die without closing it.
const PERSIST: Duration = Duration::from_secs(30);
/// The longest control socket path (a Unix socket's `sun_path` holds 108
/// bytes; OpenSSH appends a temporary suffix while it binds).
const MAX_SOCKET_PATH: usize = 80;

/// OpenSSH connection sharing (`ControlMaster`) for one plumb command: a
/// private directory holding one control socket per host (named by a hash
/// of the host's inventory name, so two inventory hosts behind one sshd
/// still get a connection each, within sshd's `MaxSessions`). The first
/// session to a host opens the connection and leaves it in the background;
/// dropping this closes every connection (`ssh -O exit`) and the
/// directory. Should plumb be killed, each connection closes itself
/// [`PERSIST`] after its last session.
#[derive(Debug)]
pub struct Sharing {
    program: PathBuf,
    dir: tempfile::TempDir,
}

impl Sharing {
    /// A new private directory (mode 0700) for `program`'s control sockets
    /// under the temporary directory; None (no sharing) when it cannot be
    /// made or its path would not fit a socket or an ssh option.
    pub fn new(program: &Path, user_options: &[String]) -> Option<Sharing> {
        // The user's own connection-sharing options win over plumb's: none
        // of plumb's is then wanted.
        let chose = user_options.iter().any(|o| {
            let key = o.split(['=', ' ', '\t']).next().unwrap_or("");
            ["controlpath", "controlmaster", "controlpersist"]
                .contains(&key.to_ascii_lowercase().as_str())
        });
        if chose {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("plumb-ssh-")
            .tempdir()
            .ok()?;
        let text = dir.path().to_str()?;
        let fits = text.len() + 1 + SOCKET_NAME_LEN <= MAX_SOCKET_PATH
            && !text.contains(['%', '~', '$', ' ', '"', '\\', '\''])
            && !text.chars().any(char::is_control);
        fits.then(|| Sharing {
            program: program.to_path_buf(),
            dir,
        })
    }

    /// The control socket of `host`.
    fn socket(&self, host: &Host) -> PathBuf {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(host.name.as_bytes());
        let name: String = digest
            .iter()
            .take(SOCKET_NAME_LEN / 2)
            .map(|b| format!("{b:02x}"))
            .collect();
        self.dir.path().join(name)
    }

    /// True while `host`'s shared connection is open (`ssh -O check`).
    fn open(&self, host: &Host) -> bool {
        let Ok(mut child) = self.control(&self.socket(host), "check").spawn() else {
            return false;
        };
        let never = AtomicBool::new(false);
        wait(&mut child, CONTROL_LIMIT, &never).code() == Some(0)
    }

    /// `ssh -O OP` to the connection at `socket`: no ssh config read (the
    /// socket is named), no output, and in a process group of its own, out
    /// of the terminal's (a second Ctrl-C while plumb ends must not cut the
    /// closing short).
    fn control(&self, socket: &Path, op: &str) -> Command {
        let mut c = Command::new(&self.program);
        c.args(["-F", "/dev/null", "-o"])
            .arg(format!("ControlPath={}", socket.display()))
            .args(["-o", "LogLevel=QUIET", "-O", op, "plumb-shared-connection"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        c
    }
}

/// How long a control command may take: a control socket answers at once;
/// a stuck connection is left to close itself after [`PERSIST`].
const CONTROL_LIMIT: Duration = Duration::from_secs(5);

/// Hex digits naming a control socket.
const SOCKET_NAME_LEN: usize = 16;

impl Drop for Sharing {
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir(self.dir.path()) else {
            return;
        };
        // Every connection is told at once, then waited for: one after
        // the other, a fleet of dozens would add a poll interval each.
        let closing: Vec<Child> = entries
            .flatten()
            .filter_map(|e| self.control(&e.path(), "exit").spawn().ok())
            .collect();
        let never = AtomicBool::new(false);
        for mut child in closing {
            let _ = wait(&mut child, CONTROL_LIMIT, &never);
        }
    }
}

/// How much of one ssh command's stderr is kept: its last bytes.
const MAX_STDERR: usize = 64 << 10;

impl Ssh {
    /// An ssh command for `host` running `remote` (a shell command line).
    pub fn command(&self, host: &Host, remote: &str) -> Command {
        let mut c = Command::new(&self.program);
        if let Some(f) = &self.config {
            c.arg("-F").arg(f);
        }
        for o in &self.options {
            c.arg("-o").arg(o);
        }
        if let Some(s) = &self.sharing {
            c.arg("-o")
                .arg(format!("ControlPath={}", s.socket(host).display()))
                .args(["-o", "ControlMaster=auto"])
                .arg("-o")
                .arg(format!("ControlPersist={}", PERSIST.as_secs()));
        }
        let timeout = self.connect_timeout.as_secs().max(1);
        c.args(["-o", "BatchMode=yes"])
            .args(["-o", &format!("ConnectTimeout={timeout}")])
            .args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"])
            .args(["-o", "LogLevel=ERROR"]);
        if let Some(p) = host.port {
            c.arg("-p").arg(p.to_string());
        }
        if let Some(i) = &host.identity {
            c.arg("-i").arg(i);
        }
        if let Some(u) = &host.user {
            c.arg("-l").arg(u);
        }
        // Run by /bin/sh whatever the login shell is (fish, tcsh …): only
        // `exec` and single quotes need to mean what they mean in sh.
        c.arg("-T")
            .arg("--")
            .arg(&host.address)
            .arg(format!("exec /bin/sh -c {}", quote(remote)));
        c.process_group(0);
        c
    }

    /// What ssh would have said when a session over `host`'s shared
    /// connection exited 255 without a word because the connection ended
    /// (its message went to the connection's own process): None when the
    /// session said something, or its connection is still open.
    pub fn silent_exit(&self, host: &Host, code: i32, stderr: &str) -> Option<String> {
        let s = self.sharing.as_ref()?;
        (code == 255 && stderr.trim().is_empty() && !s.open(host)).then(|| {
            format!(
                "Connection closed: the shared connection to {} ended\n",
                host.address
            )
        })
    }

    /// The host name ssh connects to for `host` once its config is applied
    /// (`ssh -G`), e.g. an alias's `HostName`.
    pub fn resolved_hostname(&self, host: &Host) -> Option<String> {
        let mut c = Command::new(&self.program);
        if let Some(f) = &self.config {
            c.arg("-F").arg(f);
        }
        for o in &self.options {
            c.arg("-o").arg(o);
        }
        let out = c
            .arg("-G")
            .arg("--")
            .arg(&host.address)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("hostname ").map(str::to_string))
    }

    /// Runs `remote` on `host`, feeding `input` to its stdin, and waits for
    /// it, at most `limit` and only while `stop` is not set. Keeps at most
    /// `max_stdout` bytes of stdout.
    pub fn run(
        &self,
        host: &Host,
        remote: &str,
        input: Input,
        max_stdout: usize,
        limit: Duration,
        stop: &AtomicBool,
    ) -> Result<Finished, SshError> {
        let mut c = self.command(host, remote);
        c.stdin(match input {
            Input::None => Stdio::null(),
            Input::File(_) => Stdio::piped(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| SshError::Spawn(e.to_string()))?;
        let feeder = match input {
            Input::None => None,
            Input::File(path) => {
                let mut stdin = child.stdin.take().expect("piped");
                Some(std::thread::spawn(move || -> std::io::Result<u64> {
                    let mut f = std::fs::File::open(path)?;
                    std::io::copy(&mut f, &mut stdin)
                }))
            }
        };
        let out = collect(child.stdout.take().expect("piped"), max_stdout, Keep::Head);
        let err = collect(child.stderr.take().expect("piped"), MAX_STDERR, Keep::Tail);
        let code = match wait(&mut child, limit, stop) {
            Waited::Exited(status) => status.code().unwrap_or(-1),
            // ssh is gone; its output is not wanted. The threads reading it
            // are left to end on their own: a shared connection holds the
            // pipes until it closes the session (on a dead network, when
            // its keep-alive gives up), which a stop must not wait for.
            Waited::Stopped => return Err(SshError::Stopped),
            Waited::TimedOut => return Err(SshError::TimedOut(limit)),
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        if let Some(f) = feeder {
            let _ = f.join();
        }
        let mut stderr = String::from_utf8_lossy(&stderr).into_owned();
        if let Some(said) = self.silent_exit(host, code, &stderr) {
            stderr = said;
        }
        Ok(Finished {
            code,
            stdout,
            stderr,
        })
    }
}

/// What a command's stdin gets.
#[derive(Debug, Clone)]
pub enum Input {
    /// Nothing (`/dev/null`).
    None,
    /// A local file's bytes.
    File(PathBuf),
}

/// A finished ssh command.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Its exit code (255: ssh itself failed; -1: killed by a signal).
    pub code: i32,
    /// Its stdout (bounded).
    pub stdout: Vec<u8>,
    /// The tail of its stderr.
    pub stderr: String,
}

impl Finished {
    /// The reason ssh gives for failing, in one line with its category
    /// (see [`reason`]).
    pub fn reason(&self) -> String {
        reason(self.code, &self.stderr)
    }
}

/// An ssh command that did not finish.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SshError {
    /// ssh could not be started.
    #[error("cannot run ssh: {0} (is OpenSSH's client installed?)")]
    Spawn(String),
    /// plumb was told to stop.
    #[error("stopped")]
    Stopped,
    /// It took longer than allowed.
    #[error("no answer within {} s", .0.as_secs())]
    TimedOut(Duration),
}

/// One line saying why an ssh command failed: `unreachable: …`,
/// `authentication refused: …`, `host key: …`, `connection lost: …`, or
/// the remote command's last line of stderr and its exit code.
pub fn reason(code: i32, stderr: &str) -> String {
    let last = stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("")
        .to_string();
    let last = crate::terminal::cleaned(&last);
    if code != 255 {
        return if last.is_empty() {
            format!("the remote command exited with {code}")
        } else {
            format!("{last} (exit {code})")
        };
    }
    let lower = stderr.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    let category = if has(&[
        "permission denied",
        "too many authentication failures",
        "no supported authentication",
        "authentication failed",
    ]) {
        "authentication refused"
    } else if has(&["host key verification failed", "remote host identification"]) {
        "host key not trusted"
    } else if has(&[
        "connection refused",
        "timed out",
        "no route to host",
        "network is unreachable",
        "could not resolve hostname",
        "name or service not known",
        "temporary failure in name resolution",
    ]) {
        "unreachable"
    } else if has(&[
        "connection closed",
        "closed by remote host",
        "connection reset",
        "broken pipe",
        "timeout, server",
    ]) {
        "connection lost"
    } else {
        "ssh failed"
    };
    if last.is_empty() {
        format!("{category} (ssh exit 255)")
    } else {
        format!("{category}: {last}")
    }
}

/// `s` as one word of a POSIX shell command line.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A remote path as a shell word: `~` and `~/…` are the login user's home
/// (`"$HOME"`), anything else is quoted as it is.
pub fn remote_path(p: &str) -> String {
    if p == "~" {
        "\"$HOME\"".into()
    } else if let Some(rest) = p.strip_prefix("~/") {
        format!("\"$HOME\"/{}", quote(rest))
    } else {
        quote(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_the_remote_shell() {
        for s in ["plain", "a b", "it's", "$(rm -rf ~)", "`x`", "a\"b", ""] {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(s)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), s);
        }
        assert_eq!(remote_path("~/.cache/x y"), "\"$HOME\"/'.cache/x y'");
    }

    #[test]
    fn reasons_name_their_category() {
        assert!(
            reason(255, "root@10.0.0.2: Permission denied (publickey).\n")
                .starts_with("authentication refused")
        );
        assert!(reason(
            255,
            "ssh: connect to host 10.0.0.9 port 22: Connection timed out\n"
        )
        .starts_with("unreachable"));
        assert!(
            reason(255, "Connection closed by 10.0.0.3 port 22\n").starts_with("connection lost")
        );
        assert!(
            reason(255, "Connection to b closed by remote host.\n").starts_with("connection lost")
        );
        assert_eq!(reason(3, "no\n"), "no (exit 3)");
        // What a session says when its shared connection ended.
        let host = Host {
            name: "b".into(),
            address: "10.0.0.3".into(),
            user: None,
            port: None,
            identity: None,
            target: ".".into(),
            cache: ".cache".into(),
            net_address: None,
            labels: Vec::new(),
        };
        let ssh = Ssh {
            program: PathBuf::from("ssh"),
            config: None,
            options: Vec::new(),
            connect_timeout: Duration::from_secs(5),
            sharing: Sharing::new(Path::new("ssh"), &[]).map(Arc::new),
        };
        let said = ssh
            .silent_exit(&host, 255, "")
            .expect("no connection is open");
        assert!(reason(255, &said).starts_with("connection lost"), "{said}");
        assert_eq!(ssh.silent_exit(&host, 255, "Connection refused\n"), None);
        assert_eq!(ssh.silent_exit(&host, 3, ""), None);
    }

    #[test]
    fn sharing_is_off_when_the_user_chose_control_options() {
        assert!(Sharing::new(Path::new("ssh"), &["ServerAliveInterval=9".into()]).is_some());
        for o in ["ControlMaster=no", "controlpath none", "CONTROLPERSIST=5"] {
            assert!(
                Sharing::new(Path::new("ssh"), &[o.to_string()]).is_none(),
                "{o}"
            );
        }
    }
}
