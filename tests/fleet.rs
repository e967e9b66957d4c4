//! `plumb fleet` against real sshd servers: two network namespaces, each
//! with its own sshd on a veth from the root namespace and a direct data
//! link between them (privileged: root, iproute2, ethtool, openssh-server;
//! without root they fail unless `PLUMB_TEST_SKIP_PRIVILEGED=1` skips
//! them). Without root: the inventory checks, a PerfKitBenchmarker machine
//! list, and `fleet wait`.

use crate::util::{
    metric, plumb, plumb_bin, privileged, require_tool, succeed, test_cache, workdir, Run,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// `quick`'s parameters at sizes that run in seconds.
pub(crate) const QUICK_SMALL: [&str; 6] = ["-p", "size=8M", "-p", "runtime=1s", "-p", "files=50"];

/// Debian's sshd (openssh-server).
const SSHD: &str = "/usr/sbin/sshd";

/// The two lab hosts, in namespace order.
pub(crate) const HOSTS: [&str; 2] = ["a", "b"];

/// One lab at a time in this process: each runs plumb on two "hosts" that
/// share this machine's cores, and rates or deadlines are measured.
static LAB: Mutex<()> = Mutex::new(());

/// Two network namespaces A and B, each with an sshd listening on its end
/// of a veth from the root namespace (A at 10.NN.1.2, B at 10.NN.2.2, the
/// root namespace at .1 of each), and a data link between them (A
/// 10.NN.3.1, B 10.NN.3.2). Keys, configs and every host's `target` and
/// `cache` live in one temporary directory (the namespaces share the
/// filesystem). Everything is killed, unmounted and deleted when dropped.
pub(crate) struct Lab {
    /// The second octet of every address: one per test, so that two labs
    /// in one run never share a subnet in the root namespace.
    nn: u8,
    namespaces: Vec<String>,
    /// The root namespace's ends of the management veths.
    links: Vec<String>,
    sshd: Vec<Child>,
    mounts: Vec<PathBuf>,
    dir: tempfile::TempDir,
    _serial: MutexGuard<'static, ()>,
}

impl Lab {
    /// Makes the namespaces `plumb-<pid>-<tag>-a|b`, the links, the keys and
    /// the ssh configs; sshd starts with [`Lab::start`] (after any
    /// [`Lab::tmpfs`]). The caller has checked [`privileged`].
    pub(crate) fn new(tag: &str, nn: u8) -> Lab {
        require_tool("ip", "-V", "iproute2");
        require_tool("tc", "-V", "iproute2");
        require_tool("ethtool", "--version", "ethtool");
        require_tool("ssh", "-V", "openssh-client");
        require_tool(SSHD, "-V", "openssh-server");
        let serial = LAB.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        let mut lab = Lab {
            nn,
            namespaces: Vec::new(),
            links: Vec::new(),
            sshd: Vec::new(),
            mounts: Vec::new(),
            dir: workdir(),
            _serial: serial,
        };
        for (i, h) in HOSTS.iter().enumerate() {
            let ns = format!("plumb-{pid}-{tag}-{h}");
            succeed(Command::new("ip").args(["netns", "add", &ns]));
            lab.namespaces.push(ns.clone());
            lab.sh(&ns, "ip link set dev lo up");
            // At most 15 bytes: "pf" + 2 + "-" + 7-digit pid + 1.
            let link = format!("pf{nn}-{pid}{h}");
            succeed(Command::new("ip").args([
                "link", "add", &link, "type", "veth", "peer", "name", "mgmt", "netns", &ns,
            ]));
            lab.links.push(link.clone());
            let k = i + 1;
            succeed(Command::new("ip").args([
                "addr",
                "add",
                &format!("10.{nn}.{k}.1/24"),
                "dev",
                &link,
            ]));
            succeed(Command::new("ip").args(["link", "set", "dev", &link, "up"]));
            lab.sh(
                &ns,
                &format!("ip addr add 10.{nn}.{k}.2/24 dev mgmt && ip link set dev mgmt up"),
            );
        }
        let (a, b) = (lab.namespaces[0].clone(), lab.namespaces[1].clone());
        succeed(Command::new("ip").args([
            "link", "add", "data", "netns", &a, "type", "veth", "peer", "name", "data", "netns", &b,
        ]));
        for (i, ns) in [a.as_str(), b.as_str()].into_iter().enumerate() {
            lab.sh(
                ns,
                &format!(
                    "ip addr add {}/24 dev data && ip link set dev data up",
                    lab.data(i)
                ),
            );
            // As in net/links.rs: segmentation in software, so a token
            // bucket sees the frames that go on the wire.
            succeed(Command::new("ip").args([
                "netns", "exec", ns, "ethtool", "-K", "data", "tx", "off", "tso", "off", "gso",
                "off", "gro", "off",
            ]));
        }
        let d = lab.path().to_path_buf();
        for key in ["user_key", "other_key", "host_a", "host_b"] {
            keygen(&d.join(key));
        }
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
        let mut known = String::new();
        for (i, h) in HOSTS.iter().enumerate() {
            let conf = format!(
                "Port 22\nListenAddress {addr}\nHostKey {key}\nPidFile {pid}\nAuthorizedKeysFile {auth}\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nStrictModes no\nUsePAM no\nLogLevel VERBOSE\n\
                 MaxStartups 100:30:200\n",
                addr = lab.mgmt(i),
                key = quoted(&d.join(format!("host_{h}"))),
                pid = quoted(&d.join(format!("sshd-{h}.pid"))),
                auth = quoted(&d.join("authorized_keys")),
            );
            std::fs::write(d.join(format!("sshd-{h}.conf")), conf).unwrap();
            let public = std::fs::read_to_string(d.join(format!("host_{h}.pub"))).unwrap();
            let mut words = public.split_whitespace();
            let (kind, key) = (words.next().unwrap(), words.next().unwrap());
            known.push_str(&format!("{} {kind} {key}\n", lab.mgmt(i)));
            std::fs::create_dir(lab.target(i)).unwrap();
        }
        std::fs::write(d.join("known_hosts"), known).unwrap();
        // The ssh client takes HOME from passwd, not the environment: all
        // it needs comes from these files, given with `--ssh-config`.
        let client = |identity: bool| {
            format!(
                "Host *\n  User root\n{}  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  \
                 GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n",
                if identity {
                    format!("  IdentityFile {}\n", quoted(&d.join("user_key")))
                } else {
                    String::new()
                },
                quoted(&d.join("known_hosts")),
            )
        };
        std::fs::write(d.join("ssh_config"), client(true)).unwrap();
        std::fs::write(d.join("ssh_config_bare"), client(false)).unwrap();
        lab
    }

    /// Mounts a tmpfs of `size` at `name` in the lab directory. Before
    /// [`Lab::start`]: `ip netns exec` gives sshd a copy of the mount table
    /// as it is then, and the root mount is not shared, so a later mount
    /// would not be seen by the sessions.
    fn tmpfs(&mut self, name: &str, size: &str) -> PathBuf {
        assert!(self.sshd.is_empty(), "mount the tmpfs before sshd starts");
        let at = self.path().join(name);
        std::fs::create_dir(&at).unwrap();
        succeed(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
                .arg(&at),
        );
        self.mounts.push(at.clone());
        at
    }

    /// Starts sshd in both namespaces and waits until root can log in to
    /// each with the user key.
    pub(crate) fn start(&mut self) {
        std::fs::create_dir_all("/run/sshd").unwrap();
        for (i, h) in HOSTS.iter().enumerate() {
            let child = Command::new("ip")
                .args(["netns", "exec", &self.namespaces[i], SSHD, "-D", "-f"])
                .arg(self.path().join(format!("sshd-{h}.conf")))
                .arg("-E")
                .arg(self.sshd_log_path(i))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start sshd");
            self.sshd.push(child);
        }
        for (i, host) in HOSTS.iter().enumerate() {
            let addr: SocketAddr = format!("{}:22", self.mgmt(i)).parse().unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Some(status) = self.sshd[i].try_wait().unwrap() {
                    panic!("sshd of {host} exited ({status}):\n{}", self.sshd_log(i));
                }
                if TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok() {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "sshd of {host} does not listen on {addr}:\n{}",
                    self.sshd_log(i)
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            let out = Command::new("ssh")
                .arg("-F")
                .arg(self.path().join("ssh_config"))
                .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-T", "--"])
                .arg(self.mgmt(i))
                .arg("true")
                .stdin(Stdio::null())
                .output()
                .expect("run ssh");
            assert!(
                out.status.success(),
                "the lab's own ssh login to {} failed: {}\nsshd log:\n{}",
                self.mgmt(i),
                String::from_utf8_lossy(&out.stderr),
                self.sshd_log(i)
            );
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    fn ns(&self, i: usize) -> &str {
        &self.namespaces[i]
    }

    /// Host `i`'s sshd address.
    pub(crate) fn mgmt(&self, i: usize) -> String {
        format!("10.{}.{}.2", self.nn, i + 1)
    }

    /// Host `i`'s address on the data link.
    fn data(&self, i: usize) -> String {
        format!("10.{}.3.{}", self.nn, i + 1)
    }

    /// Host `i`'s run directory (`target`), made by [`Lab::new`].
    pub(crate) fn target(&self, i: usize) -> PathBuf {
        self.path().join(format!("target-{}", HOSTS[i]))
    }

    /// Host `i`'s binary cache (`cache`), left for plumb to make.
    pub(crate) fn cache(&self, i: usize) -> PathBuf {
        self.path().join(format!("cache-{}", HOSTS[i]))
    }

    /// The client config with the user key (`IdentityFile`).
    pub(crate) fn config(&self) -> String {
        self.path().join("ssh_config").to_str().unwrap().to_string()
    }

    /// The client config without any key: each host's `identity` decides.
    fn config_bare(&self) -> String {
        self.path()
            .join("ssh_config_bare")
            .to_str()
            .unwrap()
            .to_string()
    }

    fn key(&self, name: &str) -> PathBuf {
        self.path().join(name)
    }

    fn sshd_log_path(&self, i: usize) -> PathBuf {
        self.path().join(format!("sshd-{}.log", HOSTS[i]))
    }

    fn sshd_log(&self, i: usize) -> String {
        std::fs::read_to_string(self.sshd_log_path(i)).unwrap_or_default()
    }

    /// Logins each host's sshd has let in so far.
    fn logins(&self) -> Vec<usize> {
        (0..HOSTS.len())
            .map(|i| self.sshd_log(i).matches("Accepted publickey").count())
            .collect()
    }

    /// Each host's sshd let in `n` logins since `before` ([`Lab::logins`]).
    fn assert_logins(&self, before: &[usize], n: usize) {
        for (i, was) in before.iter().enumerate() {
            let now = self.logins()[i];
            assert_eq!(now - was, n, "{}:\n{}", HOSTS[i], self.sshd_log(i));
        }
    }

    /// Lab host `i` as inventory host `name`, with its own target and cache.
    fn host(&self, i: usize, name: &str) -> Host {
        Host {
            name: name.to_string(),
            address: self.mgmt(i),
            identity: None,
            target: self.target(i),
            cache: self.cache(i),
            net_address: Some(self.data(i)),
        }
    }

    /// Runs a shell command inside namespace `ns` and requires success.
    fn sh(&self, ns: &str, cmd: &str) {
        succeed(Command::new("ip").args(["netns", "exec", ns, "sh", "-c", cmd]));
    }

    /// Kills (SIGKILL) every sshd process of host `i`'s namespace: the
    /// listener and the sessions. Returns how many there were.
    fn kill_sshd(&self, i: usize) -> usize {
        let mut killed = 0;
        for pid in ns_pids(self.ns(i)) {
            if comm(pid).as_deref() == Some("sshd") {
                // SAFETY: kill(2) on a process of this test's own namespace.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                killed += 1;
            }
        }
        killed
    }

    /// The processes of host `i`'s namespace other than sshd, as `pid comm`.
    fn others(&self, i: usize) -> Vec<String> {
        ns_pids(self.ns(i))
            .into_iter()
            .filter_map(|p| comm(p).map(|c| (p, c)))
            .filter(|(_, c)| c != "sshd")
            .map(|(p, c)| format!("{p} {c}"))
            .collect()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.sshd {
            let _ = c.kill();
            let _ = c.wait();
        }
        // Sessions and whatever they started (remote agents, `plumb serve`).
        for ns in &self.namespaces {
            for pid in ns_pids(ns) {
                // SAFETY: kill(2) on a process of this test's own namespace.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        for m in &self.mounts {
            let ok = Command::new("umount")
                .arg(m)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new("umount").arg("-l").arg(m).status();
            }
        }
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        for l in &self.links {
            let _ = Command::new("ip")
                .args(["link", "del", l])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The processes whose network namespace is `ns`.
fn ns_pids(ns: &str) -> Vec<i32> {
    Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A process's command name, None once it is gone.
fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|c| c.trim().to_string())
}

/// A new ed25519 key pair without passphrase at `path` (and `path.pub`).
pub(crate) fn keygen(path: &Path) {
    succeed(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "plumb-test", "-f"])
            .arg(path),
    );
}

/// A path as one double-quoted word of an ssh or sshd config line.
fn quoted(p: &Path) -> String {
    format!("\"{}\"", p.display())
}

/// One `[[host]]` of an inventory.
struct Host {
    name: String,
    address: String,
    identity: Option<PathBuf>,
    target: PathBuf,
    cache: PathBuf,
    net_address: Option<String>,
}

/// A TOML basic string (JSON's escapes are TOML's).
pub(crate) fn toml_str(s: &str) -> String {
    Value::from(s).to_string()
}

/// Writes an inventory of `hosts` to `dir/file`; returns its path.
fn inventory(dir: &Path, file: &str, hosts: &[Host]) -> String {
    let mut t = String::new();
    for h in hosts {
        t.push_str(&format!(
            "[[host]]\nname = {}\naddress = {}\nuser = \"root\"\nport = 22\ntarget = {}\ncache = {}\nlabels = [\"lab\"]\n",
            toml_str(&h.name),
            toml_str(&h.address),
            toml_str(h.target.to_str().unwrap()),
            toml_str(h.cache.to_str().unwrap()),
        ));
        if let Some(i) = &h.identity {
            t.push_str(&format!("identity = {}\n", toml_str(i.to_str().unwrap())));
        }
        if let Some(n) = &h.net_address {
            t.push_str(&format!("net_address = {}\n", toml_str(n)));
        }
        t.push('\n');
    }
    let path = dir.join(file);
    std::fs::write(&path, t).unwrap();
    path.to_str().unwrap().to_string()
}

/// Runs `plumb fleet ARGS` in `dir`.
pub(crate) fn fleet(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["fleet"];
    all.extend_from_slice(args);
    plumb(dir, &all)
}

/// `plumb fleet ARGS` in `dir` with `dir` as its temporary directory
/// (where its shared connections' sockets go).
fn fleet_in_tmp(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["fleet"];
    all.extend_from_slice(args);
    crate::util::plumb_env(dir, &crate::util::test_cache(), &[("TMPDIR", dir)], &all)
}

/// No ssh connection shared under `tmp` is still open (no process names
/// a control socket there) and no socket directory is left.
fn assert_no_shared_connection(tmp: &Path) {
    // Sessions name it in an option; a shared connection's process
    // renames itself `ssh: SOCKET [mux]`.
    let prefix = format!("{}/plumb-ssh-", tmp.display());
    let open: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&prefix))
        .collect();
    assert_eq!(open, Vec::<String>::new(), "connections left open");
    assert_eq!(named(tmp, "plumb-ssh-"), Vec::<String>::new());
}

/// A JSON file plumb should have written; `run` explains its absence.
pub(crate) fn read_json(path: &Path, run: &str) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} ({e}) after:\n{run}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON ({e}):\n{text}", path.display()))
}

/// A run's output for failure messages.
pub(crate) fn shown(r: &Run) -> String {
    format!(
        "exit {}\nstdout:\n{}\nstderr:\n{}",
        r.code, r.stdout, r.stderr
    )
}

/// The last line of `stderr` for host `name` (`NAME: ok …` or
/// `NAME: failed at STAGE: reason`).
pub(crate) fn final_line<'a>(stderr: &'a str, name: &str) -> &'a str {
    let prefix = format!("{name}: ");
    stderr
        .lines()
        .rev()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no final line for {name} on stderr:\n{stderr}"))
}

/// Checks that host `h` of fleet run `r` (into `out`) ended `ok` with a
/// result labelled with its name whose scenarios all ran without error;
/// returns the result.
pub(crate) fn ran_ok(r: &Run, out: &Path, h: &str) -> Value {
    let d = read_json(&out.join(format!("results/{h}.json")), &shown(r));
    assert_eq!(d["schema"], "plumb.result.v1", "{d}");
    assert_eq!(d["label"], h, "{d}");
    let scenarios = d["scenarios"].as_array().expect("scenarios");
    assert!(!scenarios.is_empty(), "{d}");
    for s in scenarios {
        assert!(s["error"].is_null(), "{h}: {s}");
    }
    assert!(
        final_line(&r.stderr, h).starts_with(&format!("{h}: ok")),
        "{}",
        r.stderr
    );
    d
}

/// Host `name`'s entry in `fleet.json`.
pub(crate) fn fleet_host<'a>(f: &'a Value, name: &str) -> &'a Value {
    f["hosts"]
        .as_array()
        .unwrap_or_else(|| panic!("fleet.json has no hosts list: {f}"))
        .iter()
        .find(|h| h["name"] == name)
        .unwrap_or_else(|| panic!("fleet.json does not list {name}: {f}"))
}

/// The entries of `dir` whose names start with `prefix` (none when `dir`
/// does not exist).
fn named(dir: &Path, prefix: &str) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// Run directories left in a target.
pub(crate) fn run_dirs(target: &Path) -> Vec<String> {
    named(target, "plumb-run-")
}

/// Waits up to `limit` until no target holds a run directory; returns
/// what is left.
fn run_dirs_gone(targets: &[PathBuf], limit: Duration) -> Vec<String> {
    let deadline = Instant::now() + limit;
    loop {
        let left: Vec<String> = targets
            .iter()
            .flat_map(|t| {
                run_dirs(t)
                    .into_iter()
                    .map(move |d| t.join(d).display().to_string())
            })
            .collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The name plumb caches its own binary under: `plumb-<sha256>`.
fn cached_name() -> String {
    let mut f = std::fs::File::open(plumb_bin()).expect("open the plumb binary");
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).expect("hash the plumb binary");
    format!("plumb-{:x}", h.finalize())
}

#[test]
fn two_hosts_run_quick_at_once_and_the_second_run_uses_the_cache() {
    if !privileged(
        "two_hosts_run_quick_at_once_and_the_second_run_uses_the_cache",
        "network namespaces and sshd",
    ) {
        return;
    }
    let mut lab = Lab::new("quick", 79);
    lab.start();
    let inv = inventory(
        lab.path(),
        "hosts.toml",
        &[lab.host(0, "a"), lab.host(1, "b")],
    );
    let cfg = lab.config();
    let out1 = lab.path().join("out1");
    let mut args = vec!["run", "quick", "--hosts", &inv, "--ssh-config", &cfg];
    args.extend(["--out", out1.to_str().unwrap()]);
    args.extend(QUICK_SMALL);
    let before = lab.logins();
    let r = fleet_in_tmp(lab.path(), &args);
    assert_eq!(r.code, 0, "{}", shown(&r));
    // The check, the copy and the run shared one connection per host, and
    // plumb closed it: no connection, socket or directory is left.
    lab.assert_logins(&before, 1);
    assert_no_shared_connection(lab.path());
    for h in HOSTS {
        ran_ok(&r, &out1, h);
    }
    // The comparison: a column per host, first host the baseline.
    let header = r
        .stdout
        .lines()
        .find(|l| l.contains("scenario") && l.contains("metric"))
        .unwrap_or_else(|| panic!("no comparison table on stdout:\n{}", r.stdout));
    let words: Vec<&str> = header
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    assert!(words.contains(&"a") && words.contains(&"b"), "{header}");
    assert!(r.stdout.contains("quick/"), "{}", r.stdout);

    let f = read_json(&out1.join("fleet.json"), &shown(&r));
    assert_eq!(f["schema"], "plumb.fleet.v1", "{f}");
    let names: Vec<&Value> = f["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["name"])
        .collect();
    assert_eq!(names, [&json!("a"), &json!("b")], "{f}");
    let binary = cached_name();
    let mut mtimes = Vec::new();
    for (i, h) in HOSTS.iter().enumerate() {
        let e = fleet_host(&f, h);
        assert_eq!(e["address"], lab.mgmt(i), "{e}");
        assert_eq!(e["ok"], true, "{e}");
        assert_eq!(e["stage"], "done", "{e}");
        assert!(e["error"].is_null(), "{e}");
        assert_eq!(e["binary"], "copied", "{e}");
        // Packed with zstd (the hosts have it), checked unpacked there.
        assert_eq!(e["binary_packing"], "zstd", "{e}");
        let sent = e["binary_bytes"].as_u64().expect("binary_bytes");
        let size = std::fs::metadata(plumb_bin()).unwrap().len();
        assert!(sent > 0 && sent < size / 2, "sent {sent} of {size}: {e}");
        assert!(e["seconds"].as_f64().is_some_and(|s| s > 0.0), "{e}");
        let cache = lab.cache(i);
        assert_eq!(
            named(&cache, "plumb-"),
            [binary.as_str()],
            "{}",
            cache.display()
        );
        let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{} has mode {mode:o}", cache.display());
        mtimes.push(
            std::fs::metadata(cache.join(&binary))
                .unwrap()
                .modified()
                .unwrap(),
        );
    }
    assert_eq!(run_dirs(&lab.target(0)), Vec::<String>::new());
    assert_eq!(run_dirs(&lab.target(1)), Vec::<String>::new());
    // The results arrived streamed into hidden files, none left behind.
    assert_eq!(
        named(&out1.join("results"), ".incoming-"),
        Vec::<String>::new()
    );

    // Again, one scenario of the pack (PACK/SCENARIO): the binaries are
    // where the first run left them.
    let out2 = lab.path().join("out2");
    let mut args = vec![
        "run",
        "quick/seqwrite",
        "--hosts",
        &inv,
        "--ssh-config",
        &cfg,
    ];
    args.extend(["--out", out2.to_str().unwrap(), "--format", "json"]);
    args.extend(QUICK_SMALL);
    let before = lab.logins();
    let r = fleet_in_tmp(lab.path(), &args);
    assert_eq!(r.code, 0, "{}", shown(&r));
    lab.assert_logins(&before, 1);
    assert_no_shared_connection(lab.path());
    assert_eq!(r.json()["runs"], json!(["a", "b"]), "{}", r.stdout);
    let f = read_json(&out2.join("fleet.json"), &shown(&r));
    for (i, h) in HOSTS.iter().enumerate() {
        let e = fleet_host(&f, h);
        assert_eq!(e["ok"], true, "{e}");
        assert_eq!(e["binary"], "cached", "{e}");
        assert!(e["binary_bytes"].is_null(), "{e}");
        let d = read_json(&out2.join(format!("results/{h}.json")), &shown(&r));
        assert_eq!(d["scenarios"].as_array().unwrap().len(), 1, "{d}");
        assert_eq!(d["scenarios"][0]["name"], "seqwrite", "{d}");
        let cache = lab.cache(i);
        assert_eq!(
            named(&cache, "plumb-"),
            [binary.as_str()],
            "{}",
            cache.display()
        );
        let mtime = std::fs::metadata(cache.join(&binary))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(mtime, mtimes[i], "{h}'s cached binary was written again");
        assert_eq!(run_dirs(&lab.target(i)), Vec::<String>::new(), "{h}");
    }
}

#[test]
fn fleet_net_measures_a_100_mbit_link_both_ways() {
    if !privileged(
        "fleet_net_measures_a_100_mbit_link_both_ways",
        "network namespaces and sshd",
    ) {
        return;
    }
    let mut lab = Lab::new("net", 80);
    lab.start();
    // A bucket of 64 KB, as the net tests' links: tbf needs at least what
    // the rate brings in one timer tick (100 Mbit/s at HZ 250: 50 KB), and
    // a 4 KB one lost tokens whenever the VM's qdisc timer fired late (a
    // single stream then got 88-89 Mbit/s in two runs out of three).
    for i in 0..2 {
        lab.sh(
            lab.ns(i),
            "tc qdisc add dev data root tbf rate 100mbit burst 64kb latency 400ms",
        );
    }
    let inv = inventory(
        lab.path(),
        "hosts.toml",
        &[lab.host(0, "a"), lab.host(1, "b")],
    );
    let cfg = lab.config();
    let out = lab.path().join("out");
    let r = fleet(
        lab.path(),
        &[
            "net",
            "--pair",
            "a:b",
            "--hosts",
            &inv,
            "--ssh-config",
            &cfg,
            "--seconds",
            "2s",
            "--streams",
            "1,4",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", shown(&r));
    assert!(
        !r.stdout.trim().is_empty(),
        "no table on stdout:\n{}",
        shown(&r)
    );
    let d = read_json(&out.join("results/a-b.json"), &shown(&r));
    let get = |name: &str| {
        metric(&d, "network", name).unwrap_or_else(|| panic!("no network/{name} in {d}"))
    };
    for m in [
        "send_1_mbps",
        "recv_1_mbps",
        "send_4_mbps",
        "recv_4_mbps",
        "rtt_p50_us",
        "rtt_p99_us",
        "connect_p50_us",
    ] {
        get(m);
    }
    assert_eq!(
        metric(&d, "network", "send_10_mbps"),
        None,
        "--streams 1,4 ran 10 streams: {d}"
    );
    let (send, recv) = (get("send_1_mbps"), get("recv_1_mbps"));
    eprintln!(
        "a-b through tbf 100mbit each way: send {send:.1} recv {recv:.1} Mbit/s (4 streams {:.1}/{:.1}), rtt p50 {} us",
        get("send_4_mbps"),
        get("recv_4_mbps"),
        get("rtt_p50_us")
    );
    // TCP payload through a 100 Mbit/s bucket of whole frames: 95.6 Mbit/s.
    assert!(
        (90.0..=110.0).contains(&send),
        "send {send} Mbit/s through 100 Mbit/s"
    );
    assert!(
        (90.0..=110.0).contains(&recv),
        "recv {recv} Mbit/s through 100 Mbit/s"
    );
    // `plumb serve` on b and the client on a are gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(lab.others(0).is_empty() && lab.others(1).is_empty()) {
        assert!(
            Instant::now() < deadline,
            "left running after fleet net: a {:?}, b {:?}",
            lab.others(0),
            lab.others(1)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_host_whose_sshd_dies_mid_run_fails_alone_and_leaves_no_run_directory() {
    if !privileged(
        "a_host_whose_sshd_dies_mid_run_fails_alone_and_leaves_no_run_directory",
        "network namespaces and sshd",
    ) {
        return;
    }
    let mut lab = Lab::new("kill", 81);
    lab.start();
    let script = lab.path().join("long.rhai");
    std::fs::write(
        &script,
        r#"io::job(#{ name: "j", rw: "randread", bs: "4k", size: "8M", ioengine: "psync", time_based: true, runtime: "5s" });
report::metric("x", 1.0, "n", "higher");
"#,
    )
    .unwrap();
    let inv = inventory(
        lab.path(),
        "hosts.toml",
        &[lab.host(0, "a"), lab.host(1, "b")],
    );
    let out = lab.path().join("out");
    let mut child = Command::new(plumb_bin())
        .args(["fleet", "run"])
        .arg(&script)
        .args(["--hosts", &inv, "--ssh-config", &lab.config()])
        .arg("--out")
        .arg(&out)
        .env("PLUMB_CACHE_DIR", test_cache())
        .current_dir(lab.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start plumb fleet run");
    let err = Arc::new(Mutex::new(Vec::new()));
    let err_reader = {
        let err = Arc::clone(&err);
        let mut stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                err.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let out_reader = {
        let mut stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stdout.read_to_string(&mut s);
            s
        })
    };
    let so_far =
        |err: &Arc<Mutex<Vec<u8>>>| String::from_utf8_lossy(&err.lock().unwrap()).into_owned();
    // b's scenario is under way: a run directory with something in it (the
    // job's file), not just one made and left empty.
    let target_b = lab.target(1);
    let running = || {
        run_dirs(&target_b)
            .iter()
            .any(|d| !named(&target_b.join(d), "").is_empty())
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    while !running() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "plumb exited ({status}) before b's run began:\n{}",
                so_far(&err)
            );
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("b's run never began:\n{}", so_far(&err));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    let killed = lab.kill_sshd(1);
    assert!(
        killed >= 2,
        "only {killed} sshd process(es) in b's namespace"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "plumb did not finish after b's sshd died:\n{}",
                so_far(&err)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    err_reader.join().unwrap();
    let r = Run {
        code: status.code().unwrap_or(-1),
        stdout: out_reader.join().unwrap(),
        stderr: so_far(&err),
    };
    // Counted from plumb's exit: the agent on b sees its stdin close.
    let left = run_dirs_gone(&[lab.target(0), lab.target(1)], Duration::from_secs(10));
    assert_eq!(r.code, 1, "{}", shown(&r));
    let b = final_line(&r.stderr, "b");
    assert!(b.starts_with("b: failed at run: "), "{b}\n{}", r.stderr);
    assert!(
        b.to_ascii_lowercase().contains("connection"),
        "b's reason does not name the lost connection: {b}"
    );
    assert!(
        final_line(&r.stderr, "a").starts_with("a: ok"),
        "{}",
        r.stderr
    );
    let a = read_json(&out.join("results/a.json"), &shown(&r));
    assert_eq!(a["label"], "a", "{a}");
    assert_eq!(metric(&a, "long", "x"), Some(1.0), "{a}");
    let partial = out.join("results/b.json");
    if partial.exists() {
        let p = read_json(&partial, &shown(&r));
        assert_eq!(p["schema"], "plumb.result.v1", "{p}");
        assert_eq!(p["label"], "b", "{p}");
    }
    let f = read_json(&out.join("fleet.json"), &shown(&r));
    let (fa, fb) = (fleet_host(&f, "a"), fleet_host(&f, "b"));
    assert_eq!(
        (&fa["ok"], &fa["stage"]),
        (&json!(true), &json!("done")),
        "{f}"
    );
    assert_eq!(
        (&fb["ok"], &fb["stage"]),
        (&json!(false), &json!("run")),
        "{f}"
    );
    assert!(fb["error"].is_string(), "{f}");
    assert_eq!(
        left,
        Vec::<String>::new(),
        "run directories 10 s after plumb exited"
    );
}

#[test]
fn ctrl_c_stops_every_remote_run_keeps_partial_results_and_cleans_up() {
    if !privileged(
        "ctrl_c_stops_every_remote_run_keeps_partial_results_and_cleans_up",
        "network namespaces and sshd",
    ) {
        return;
    }
    let mut lab = Lab::new("int", 84);
    lab.start();
    let script = lab.path().join("long.rhai");
    std::fs::write(
        &script,
        r#"io::job(#{ name: "j", rw: "randread", bs: "4k", size: "8M", ioengine: "psync", time_based: true, runtime: "30s" });
report::metric("x", 1.0, "n", "higher");
"#,
    )
    .unwrap();
    let inv = inventory(
        lab.path(),
        "hosts.toml",
        &[lab.host(0, "a"), lab.host(1, "b")],
    );
    let out = lab.path().join("out");
    let logs = lab.path().join("stderr.log");
    let mut child = Command::new(plumb_bin())
        .args(["fleet", "run"])
        .arg(&script)
        .args(["--hosts", &inv, "--ssh-config", &lab.config()])
        .arg("--out")
        .arg(&out)
        .env("PLUMB_CACHE_DIR", test_cache())
        .current_dir(lab.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&logs).unwrap())
        .spawn()
        .expect("start plumb fleet run");
    let log = || std::fs::read_to_string(&logs).unwrap_or_default();
    // Both runs under way: a run directory holding the job's file.
    let running = |t: &Path| {
        run_dirs(t)
            .iter()
            .any(|d| !named(&t.join(d), "").is_empty())
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !(running(&lab.target(0)) && running(&lab.target(1))) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "plumb exited before both runs began:\n{}",
            log()
        );
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("the runs never began:\n{}", log());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    let signalled = Instant::now();
    // SAFETY: kill with a valid signal on the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if signalled.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("plumb did not end within 20 s of SIGINT:\n{}", log());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = signalled.elapsed();
    assert_eq!(status.code(), Some(130), "{}", log());
    assert!(
        took < Duration::from_secs(10),
        "{took:?} from SIGINT to the end"
    );
    let f = read_json(&out.join("fleet.json"), &log());
    for h in HOSTS {
        let e = fleet_host(&f, h);
        assert_eq!(
            (&e["ok"], &e["stage"]),
            (&json!(false), &json!("run")),
            "{f}"
        );
        assert!(
            e["error"].as_str().is_some_and(|s| s.contains("stopped")),
            "{f}"
        );
        // The run saved what it had, as `plumb run` does when interrupted.
        let d = read_json(&out.join(format!("results/{h}.json")), &log());
        assert_eq!(d["label"], h, "{d}");
        let s = &d["scenarios"][0];
        assert!(
            s["error"]
                .as_str()
                .is_some_and(|e| e.contains("interrupted")),
            "{d}"
        );
    }
    let left = run_dirs_gone(&[lab.target(0), lab.target(1)], Duration::from_secs(10));
    assert_eq!(left, Vec::<String>::new(), "run directories after Ctrl-C");
    let gone = Instant::now() + Duration::from_secs(5);
    while !(lab.others(0).is_empty() && lab.others(1).is_empty()) && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        lab.others(0).is_empty() && lab.others(1).is_empty(),
        "processes left on the hosts: {:?} {:?}",
        lab.others(0),
        lab.others(1)
    );
}

#[test]
fn hosts_refused_at_check_say_why_and_nothing_runs_there() {
    if !privileged(
        "hosts_refused_at_check_say_why_and_nothing_runs_there",
        "network namespaces and sshd",
    ) {
        return;
    }
    let mut lab = Lab::new("check", 82);
    let small = lab.tmpfs("small", "4m");
    lab.start();
    let user = lab.key("user_key");
    let made = |name: &str| {
        let d = lab.path().join(name);
        std::fs::create_dir(&d).unwrap();
        d
    };
    let good = Host {
        identity: Some(user.clone()),
        ..lab.host(0, "good")
    };
    let noauth = Host {
        identity: Some(lab.key("other_key")),
        target: made("target-noauth"),
        cache: lab.path().join("cache-noauth"),
        ..lab.host(0, "noauth")
    };
    let dead = Host {
        address: format!("10.{}.1.99", lab.nn),
        identity: Some(user.clone()),
        target: made("target-dead"),
        cache: lab.path().join("cache-dead"),
        ..lab.host(0, "dead")
    };
    let full = Host {
        identity: Some(user.clone()),
        target: small.clone(),
        ..lab.host(1, "full")
    };
    let inv = inventory(lab.path(), "hosts.toml", &[good, noauth, dead, full]);
    // No key in the config: each host's `identity` is the only one tried.
    let cfg = lab.config_bare();
    let out = lab.path().join("out");
    let mut args = vec!["run", "quick", "--hosts", &inv, "--ssh-config", &cfg];
    args.extend(["--connect-timeout", "2s", "--out", out.to_str().unwrap()]);
    args.extend(QUICK_SMALL);
    let r = fleet(lab.path(), &args);
    assert_eq!(r.code, 1, "{}", shown(&r));
    let f = read_json(&out.join("fleet.json"), &shown(&r));
    let caches = [
        ("noauth", "authentication", lab.path().join("cache-noauth")),
        ("dead", "unreachable", lab.path().join("cache-dead")),
        ("full", "free space", lab.cache(1)),
    ];
    for (name, word, cache) in caches {
        let l = final_line(&r.stderr, name);
        assert!(
            l.starts_with(&format!("{name}: failed at check: ")) && l.contains(word),
            "{name} should fail at check saying {word:?}: {l}\n{}",
            r.stderr
        );
        let e = fleet_host(&f, name);
        assert_eq!(e["ok"], false, "{e}");
        assert_eq!(e["stage"], "check", "{e}");
        assert!(e["binary"].is_null(), "{e}");
        assert!(e["error"].as_str().is_some_and(|s| s.contains(word)), "{e}");
        assert!(
            !out.join(format!("results/{name}.json")).exists(),
            "{name} has a result"
        );
        assert_eq!(
            named(&cache, "plumb-"),
            Vec::<String>::new(),
            "{name}'s cache"
        );
    }
    assert!(
        final_line(&r.stderr, "good").starts_with("good: ok"),
        "{}",
        r.stderr
    );
    let g = read_json(&out.join("results/good.json"), &shown(&r));
    assert_eq!(g["label"], "good", "{g}");
    assert_eq!(fleet_host(&f, "good")["stage"], "done", "{f}");
    assert_eq!(
        crate::util::entries(&small),
        Vec::<String>::new(),
        "the full target"
    );
    assert_eq!(run_dirs(&lab.target(0)), Vec::<String>::new());
}

/// A local TCP port nobody listens on (just now).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn fleet_wait_returns_once_the_port_answers_and_fails_at_its_timeout() {
    let dir = workdir();
    let port = free_port();
    let stop = Arc::new(AtomicBool::new(false));
    // A listener from 1 s on, greeting like an sshd.
    let server = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1));
            let l = TcpListener::bind(("127.0.0.1", port)).expect("bind the late listener");
            l.set_nonblocking(true).unwrap();
            while !stop.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((mut s, _)) => {
                        let _ = s.write_all(b"SSH-2.0-OpenSSH_9.2 plumb-test\r\n");
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        })
    };
    let started = Instant::now();
    let p = port.to_string();
    let r = fleet(
        dir.path(),
        &["wait", "--port", &p, "--timeout", "30s", "127.0.0.1"],
    );
    let took = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
    assert_eq!(r.code, 0, "{}", shown(&r));
    let prefix = format!("127.0.0.1:{port} answered after ");
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no '{prefix}…' line:\n{}", shown(&r)));
    let rest = &line[prefix.len()..];
    let secs: f64 = rest
        .split_whitespace()
        .next()
        .and_then(|s| s.trim_end_matches('s').parse().ok())
        .unwrap_or_else(|| panic!("no seconds in {line:?}"));
    assert!(
        (0.8..=took + 0.1).contains(&secs),
        "answered after {secs} s, listening from 1 s, the wait took {took:.2} s: {line}"
    );
    let attempts: u32 = rest
        .split('(')
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no attempt count in {line:?}"));
    assert!(attempts >= 2, "{line}");

    let closed = free_port().to_string();
    let started = Instant::now();
    let r = fleet(
        dir.path(),
        &["wait", "--port", &closed, "--timeout", "1s", "127.0.0.1"],
    );
    assert_eq!(r.code, 1, "{}", shown(&r));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a 1 s timeout took {:?}",
        started.elapsed()
    );
}

/// `plumb fleet run --metrics-listen 0.0.0.0:PORT`: each host's run serves
/// its own /metrics on that port (here each namespace's own), labelled with
/// the host's name, and lingers until a scrape saw its end.
#[test]
fn each_host_serves_its_own_run_at_metrics_listen() {
    if !privileged(
        "each_host_serves_its_own_run_at_metrics_listen",
        "network namespaces and sshd",
    ) {
        return;
    }
    let mut lab = Lab::new("metrics", 85);
    lab.start();
    let inv = inventory(
        lab.path(),
        "hosts.toml",
        &[lab.host(0, "a"), lab.host(1, "b")],
    );
    let cfg = lab.config();
    let out = lab.path().join("out");
    let port = free_port();
    let listen = format!("0.0.0.0:{port}");
    let mut args = vec!["run", "quick", "--hosts", &inv, "--ssh-config", &cfg];
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(["--metrics-listen", &listen, "--metrics-linger", "60s"]);
    args.extend(QUICK_SMALL);
    // Scrape both hosts every 200 ms until the fleet run ends; keep each
    // host's last answer.
    let done = Arc::new(AtomicBool::new(false));
    let last: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(vec![String::new(); 2]));
    let scrapers: Vec<_> = (0..2)
        .map(|i| {
            let addr: SocketAddr = format!("{}:{port}", lab.mgmt(i)).parse().unwrap();
            let (done, last) = (done.clone(), last.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200))
                    {
                        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
                        let mut body = String::new();
                        if s.read_to_string(&mut body).is_ok() && body.starts_with("HTTP/1.1 200") {
                            last.lock().unwrap()[i] = body;
                        }
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            })
        })
        .collect();
    let started = Instant::now();
    let r = fleet(lab.path(), &args);
    done.store(true, Ordering::Relaxed);
    for s in scrapers {
        s.join().unwrap();
    }
    assert_eq!(r.code, 0, "{}", shown(&r));
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "the runs lingered past a scrape of their end: {:?}",
        started.elapsed()
    );
    for (i, h) in HOSTS.iter().enumerate() {
        let body = last.lock().unwrap()[i].clone();
        assert!(
            body.lines()
                .any(|l| l.starts_with("plumb_run_info{") && l.contains(&format!("label=\"{h}\""))),
            "{h}: {body}"
        );
        let running = body
            .lines()
            .find(|l| l.starts_with(&format!("plumb_run_running{{label=\"{h}\"}}")))
            .unwrap_or_else(|| panic!("{h}: {body}"));
        assert_eq!(
            running.rsplit(' ').next().unwrap().parse::<f64>().unwrap(),
            0.0,
            "{h}: a scrape saw the end"
        );
        let ios: f64 = body
            .lines()
            .filter(|l| l.starts_with("plumb_io_operations_total{"))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum();
        assert!(ios > 0.0, "{h}: {body}");
    }
}

/// Issue 46, item 14: 24 inventory hosts that are one machine and one user
/// (one sshd, one cache, a target each, as a fleet of disks on one box)
/// with nothing copied yet. Every host's check finds no plumb there, so
/// their copies race into the one cache while the first hosts already run
/// from it: a copy must never take the file from under a run. Three
/// rounds, the cache cleared before each: all 24 run every time, and the
/// cache holds one binary and no temporary copy.
#[test]
fn twenty_four_hosts_on_one_machine_race_their_first_copies_and_all_run() {
    if !privileged(
        "twenty_four_hosts_on_one_machine_race_their_first_copies_and_all_run",
        "network namespaces and sshd",
    ) {
        return;
    }
    let mut lab = Lab::new("race", 87);
    lab.start();
    let script = lab.path().join("one.rhai");
    std::fs::write(&script, "report::metric(\"one\", 1, \"\", \"higher\");\n").unwrap();
    let cache = lab.cache(0);
    let hosts: Vec<Host> = (1..=24)
        .map(|i| {
            let target = lab.path().join(format!("t{i:02}"));
            std::fs::create_dir(&target).unwrap();
            Host {
                name: format!("h{i:02}"),
                address: lab.mgmt(0),
                identity: None,
                target,
                cache: cache.clone(),
                net_address: None,
            }
        })
        .collect();
    let inv = inventory(lab.path(), "hosts.toml", &hosts);
    let cfg = lab.config();
    let binary = cached_name();
    for round in 1..=3 {
        let _ = std::fs::remove_dir_all(&cache);
        let out = lab.path().join(format!("out{round}"));
        let r = fleet(
            lab.path(),
            &[
                "run",
                script.to_str().unwrap(),
                "--hosts",
                &inv,
                "--ssh-config",
                &cfg,
                "--parallel",
                "24",
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(r.code, 0, "round {round}: {}", shown(&r));
        for h in &hosts {
            ran_ok(&r, &out, &h.name);
        }
        let f = read_json(&out.join("fleet.json"), &shown(&r));
        let copied = f["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["binary"] == "copied")
            .count();
        assert!(copied >= 1, "round {round}: nothing was copied: {f}");
        assert_eq!(named(&cache, "plumb-"), [binary.as_str()], "round {round}");
        assert_eq!(
            named(&cache, ".plumb-"),
            Vec::<String>::new(),
            "round {round}: temporary copies left"
        );
        for h in &hosts {
            assert_eq!(run_dirs(&h.target), Vec::<String>::new(), "{}", h.name);
        }
    }
}

/// Issue 46, item 10: a host's claims about the pack are not kept. Host b
/// answers with a result naming another pack hash, version and a
/// "verified" signer (its cached "plumb" is a script that sends a forged
/// document back): the driver refuses that result, naming the host and the
/// claim, and saves nothing for it; host a's honest result carries the
/// driver's own record of the pack.
#[test]
fn a_hosts_forged_claims_about_the_pack_are_refused() {
    if !privileged(
        "a_hosts_forged_claims_about_the_pack_are_refused",
        "network namespaces and sshd",
    ) {
        return;
    }
    let mut lab = Lab::new("forge", 88);
    lab.start();
    let inv = inventory(
        lab.path(),
        "hosts.toml",
        &[lab.host(0, "a"), lab.host(1, "b")],
    );
    let cfg = lab.config();
    let run = |out: &Path| {
        let mut args = vec![
            "run",
            "quick/seqwrite",
            "--hosts",
            &inv,
            "--ssh-config",
            &cfg,
        ];
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(QUICK_SMALL);
        fleet(lab.path(), &args)
    };
    // An honest run first: its results are what plumb writes, and b's is
    // the document the forgery starts from.
    let out1 = lab.path().join("out1");
    let r = run(&out1);
    assert_eq!(r.code, 0, "{}", shown(&r));
    let f = read_json(&out1.join("fleet.json"), &shown(&r));
    let sha = f["pack_sha256"].as_str().unwrap().to_string();
    for h in HOSTS {
        let d = ran_ok(&r, &out1, h);
        for s in d["scenarios"].as_array().unwrap() {
            assert_eq!(s["pack_sha256"], sha.as_str(), "{h}: {s}");
            assert_eq!(s["pack_origin"], "builtin", "{h}: {s}");
            assert!(s["pack_signer"].is_null(), "{h}: {s}");
        }
    }
    let mut forged = read_json(&out1.join("results/b.json"), &shown(&r));
    for s in forged["scenarios"].as_array_mut().unwrap() {
        s["pack_sha256"] = json!("f".repeat(64));
        s["pack_version"] = json!("6.6.6");
        s["pack_signer"] = json!("RWQFORGEDKEY0000 verified");
    }
    let forged_path = lab.path().join("forged.json");
    std::fs::write(&forged_path, serde_json::to_vec(&forged).unwrap()).unwrap();
    // b's cached plumb becomes a script of the same size (the check takes
    // it as cached) that speaks the agent's side and sends the forgery.
    let fake = lab.cache(1).join(cached_name());
    let script = format!(
        "#!/bin/sh\necho \"plumb-fleet-agent $$ -\"\nread -r kind name len\nhead -c \"$len\" >/dev/null\n\
         echo \"plumb-fleet-result 0 $(wc -c < {doc})\"\ncat {doc}\nexit 0\n",
        doc = quoted(&forged_path)
    );
    std::fs::remove_file(&fake).unwrap();
    std::fs::write(&fake, script).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&fake)
        .unwrap()
        .set_len(std::fs::metadata(plumb_bin()).unwrap().len())
        .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o700)).unwrap();

    let out2 = lab.path().join("out2");
    let r = run(&out2);
    assert_ne!(r.code, 0, "{}", shown(&r));
    ran_ok(&r, &out2, "a");
    let line = final_line(&r.stderr, "b");
    assert!(
        line.contains("b's result claims") && line.contains("refused"),
        "{}",
        r.stderr
    );
    assert!(
        !out2.join("results/b.json").exists(),
        "the forged result was saved"
    );
    let f = read_json(&out2.join("fleet.json"), &shown(&r));
    assert_eq!(fleet_host(&f, "b")["ok"], false, "{f}");
    // The page of the fleet's results names no forged signer.
    let page = out2.join("report.md");
    let rep = plumb(
        lab.path(),
        &[
            "report",
            "-o",
            page.to_str().unwrap(),
            out2.join("results/a.json").to_str().unwrap(),
        ],
    );
    assert_eq!(rep.code, 0, "{}", rep.stderr);
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(!text.contains("FORGED"), "{text}");
}
