//! Network primitives against real `plumb serve` processes: on loopback, and
//! against known link conditions in network namespaces (as root, with
//! iproute2, ethtool and python3; without root they fail unless
//! `PLUMB_TEST_SKIP_PRIVILEGED=1` skips them, saying so).

use crate::util::{
    doc, metric, plumb_bin, privileged, require_tool, run_scripts, script, succeed, workdir,
};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The first line a child prints on its stdout.
fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line
}

/// A `plumb serve` child process, killed when dropped.
struct Peer {
    child: Child,
    addr: String,
}

impl Peer {
    /// Starts `plumb serve --listen LISTEN EXTRA...`, inside namespace `ns` if given.
    fn start(ns: Option<&str>, listen: &str, extra: &[&str]) -> Peer {
        let bin = plumb_bin();
        let mut cmd = match ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(&bin);
                c
            }
            None => Command::new(&bin),
        };
        let mut child = cmd
            .args(["serve", "--listen", listen])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start plumb serve");
        let addr = crate::util::serve_address(&mut child);
        Peer { child, addr }
    }

    /// Waits up to `limit` for the server to exit by itself; returns its stderr.
    fn wait_exit(mut self, limit: Duration) -> (i32, String) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut err = String::new();
                self.child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                return (status.code().unwrap_or(-1), err);
            }
            assert!(
                start.elapsed() < limit,
                "plumb serve did not stop by itself"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const MEASURE_ALL: &str = r#"
let a = param("peer", "");
let t1 = net::throughput(#{ addr: a, duration: 0.5 });
let t2 = net::throughput(#{ addr: a, streams: 2, duration: 0.5, direction: "both" });
let r = net::rtt(#{ addr: a, count: 200, size: 256 });
let c = net::connect_time(#{ addr: a, count: 20 });
let w = net::wait_for_port(#{ addr: a, timeout: 2 });
report::metric("t1", t1.total_gbps, "Gbit/s", "higher");
report::metric("t1_bytes", t1.bytes, "B", "higher");
report::metric("t2_streams", t2.streams.len(), "", "higher");
report::metric("t2_send", t2.send_gbps, "Gbit/s", "higher");
report::metric("t2_recv", t2.recv_gbps, "Gbit/s", "higher");
report::metric("rtt_count", r.rtt.count, "", "higher");
report::metric("rtt_p50", r.rtt.p50_us, "us", "lower");
report::metric("rtt_p99", r.rtt.p99_us, "us", "lower");
report::metric("connect_p50", c.connect.p50_us, "us", "lower");
report::metric("connects", c.connect.count, "", "higher");
report::metric("wait", w.seconds, "s", "lower");
"#;

#[test]
fn loopback_measurements_and_session_limit() {
    let dir = workdir();
    let peer = Peer::start(None, "127.0.0.1:0", &["--max-sessions", "3"]);
    let s = script(dir.path(), "net.rhai", MEASURE_ALL);
    let p = format!("peer={}", peer.addr);
    let (r, _) = run_scripts(
        dir.path(),
        &[&s, "-p", &p, "--allow-net", &peer.addr, "--json", "n.json"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("n.json"));
    let m = |k| metric(&d, "net", k).unwrap_or_else(|| panic!("metric {k}"));
    assert!(m("t1") > 0.1, "loopback carries more than 0.1 Gbit/s");
    assert!(m("t1_bytes") > 1e6);
    assert_eq!(m("t2_streams"), 4.0, "2 streams each way");
    assert!(m("t2_send") > 0.1 && m("t2_recv") > 0.1);
    assert_eq!(m("rtt_count"), 200.0);
    assert!(m("rtt_p50") > 0.0 && m("rtt_p50") <= m("rtt_p99") && m("rtt_p99") < 50_000.0);
    assert_eq!(m("connects"), 20.0);
    assert!(m("connect_p50") > 0.0 && m("connect_p50") < 50_000.0);
    assert!(m("wait") < 1.0);
    // Two throughput tests and one RTT test are three sessions: it stops.
    let (code, err) = peer.wait_exit(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("done: 3 sessions"), "{err}");
}

#[test]
fn addresses_not_granted_are_refused_before_any_packet() {
    let dir = workdir();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let port = listener.local_addr().unwrap().port();
    let s = script(
        dir.path(),
        "deny.rhai",
        &format!(
            r#"
let refused = 0;
for a in ["{addr}", "localhost:{port}", "[::1]:{port}", "no-such-host.invalid:{port}"] {{
    try {{ net::throughput(#{{ addr: a, duration: 0.2 }}); }} catch (e) {{ if e.contains("not granted") {{ refused += 1; }} }}
    try {{ net::rtt(#{{ addr: a, count: 1 }}); }} catch (e) {{ if e.contains("not granted") {{ refused += 1; }} }}
    try {{ net::connect_time(#{{ addr: a, count: 1 }}); }} catch (e) {{ if e.contains("not granted") {{ refused += 1; }} }}
    try {{ net::wait_for_port(#{{ addr: a, timeout: 0.2 }}); }} catch (e) {{ if e.contains("not granted") {{ refused += 1; }} }}
}}
report::metric("refused", refused, "", "higher");
net::rtt(#{{ addr: "{addr}" }});
"#
        ),
    );
    let (r, _) = run_scripts(
        dir.path(),
        &[&s, "--allow-net", "127.0.0.1:1", "--json", "d.json"],
    );
    assert_ne!(r.code, 0, "the last, uncaught call fails the scenario");
    assert!(
        r.stderr
            .contains(&format!("network access to {addr} was not granted"))
            && r.stderr.contains("--allow-net")
            && r.stderr.contains("deny.rhai:10:"),
        "{}",
        r.stderr
    );
    assert_eq!(
        metric(&doc(&dir.path().join("d.json")), "deny", "refused"),
        Some(16.0)
    );
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("something connected to the listener: {other:?}"),
    }
}

/// Sends `bytes` on a fresh connection and returns what came back.
fn exchange(addr: &str, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn serve_answers_garbage_with_errors_and_keeps_serving() {
    let dir = workdir();
    let mut peer = Peer::start(None, "127.0.0.1:0", &[]);
    let http = exchange(&peer.addr, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(http.starts_with("ERR not a PLUMB/1 request"), "{http}");
    let long = exchange(&peer.addr, &[b'x'; 4000]);
    assert!(long.starts_with("ERR line too long"), "{long}");
    let bad = exchange(&peer.addr, b"PLUMB/1 1 echo 999999999\n");
    assert!(bad.starts_with("ERR echo size"), "{bad}");
    let binary: Vec<u8> = (0..=255u8).cycle().take(100).chain([b'\n']).collect();
    assert!(exchange(&peer.addr, &binary).starts_with("ERR"));
    // Connect and hang up at once, and half a line then hang up.
    drop(TcpStream::connect(&peer.addr).unwrap());
    let mut half = TcpStream::connect(&peer.addr).unwrap();
    half.write_all(b"PLUMB/1 ab").unwrap();
    drop(half);
    assert!(peer.child.try_wait().unwrap().is_none(), "still running");
    let s = script(
        dir.path(),
        "after.rhai",
        r#"report::metric("rtt", net::rtt(#{ addr: param("peer", ""), count: 50 }).rtt.count, "", "higher");"#,
    );
    let p = format!("peer={}", peer.addr);
    let (r, _) = run_scripts(
        dir.path(),
        &[&s, "-p", &p, "--allow-net", &peer.addr, "--json", "a.json"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        metric(&doc(&dir.path().join("a.json")), "after", "rtt"),
        Some(50.0)
    );
}

#[test]
fn a_peer_that_disappears_gives_an_error_and_partial_figures() {
    let dir = workdir();
    let mut peer = Peer::start(None, "127.0.0.1:0", &[]);
    let s = script(
        dir.path(),
        "gone.rhai",
        r#"
let a = param("peer", "");
try {
    net::throughput(#{ addr: a, duration: 8 });
} catch (e) {
    print(e);
    report::note(e);
}
net::rtt(#{ addr: a, count: 1 });
"#,
    );
    let target = dir.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let p = format!("peer={}", peer.addr);
    let run = Command::new(plumb_bin())
        .args(["run", "--target", target.to_str().unwrap(), &s, "-p", &p])
        .args(["--allow-net", &peer.addr, "--json", "g.json"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the peer once the test's data is flowing (it has moved 8 MiB
    // through its sockets), not after a guessed time.
    wait_until_moved(&peer, 8 << 20, Duration::from_secs(20));
    peer.child.kill().unwrap();
    let started = Instant::now();
    let out = run.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "noticed the loss"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(
        out.status.code(),
        Some(0),
        "the uncaught second call fails: {err}"
    );
    assert!(
        err.contains(&format!("peer {} failed", peer.addr)) && err.contains("partial figures"),
        "{err}"
    );
    assert!(
        err.contains("connecting to"),
        "the next call names the lost peer: {err}"
    );
    let d = doc(&dir.path().join("g.json"));
    let note = d["scenarios"][0]["notes"][0]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        note.contains("Gbit/s sent"),
        "the partial figures are kept: {d}"
    );
}

/// Waits until the peer's TCP connections have carried `bytes` (received
/// plus acknowledged, as `ss -ti` reports them for the peer's port). Socket
/// traffic is not in /proc/PID/io: std sockets use send/recv, which the
/// rchar/wchar counters do not see.
fn wait_until_moved(peer: &Peer, bytes: u64, limit: Duration) {
    let port = peer.addr.rsplit(':').next().expect("peer port");
    let filter = format!("sport = :{port}");
    let start = Instant::now();
    loop {
        let out = Command::new("ss")
            .args(["-tinH", &filter])
            .output()
            .unwrap_or_else(|e| panic!("ss (iproute2) is needed by this test: {e}"));
        assert!(out.status.success(), "ss -tinH {filter} failed: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let moved: u64 = text
            .split_whitespace()
            .filter_map(|w| {
                w.strip_prefix("bytes_received:")
                    .or_else(|| w.strip_prefix("bytes_acked:"))
            })
            .filter_map(|v| v.parse::<u64>().ok())
            .sum();
        if moved >= bytes {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "the peer's connections moved only {moved} bytes in {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Network namespaces joined by veth pairs; deleted when dropped.
struct Lab {
    namespaces: Vec<String>,
}

impl Lab {
    /// Makes namespaces named `plumb-<pid>-<tag>-<name>` for `test`. Fails
    /// naming what is missing (root, iproute2, ethtool); None only where
    /// `PLUMB_TEST_SKIP_PRIVILEGED=1` skips the test without root.
    fn new(test: &str, tag: &str, names: &[&str]) -> Option<Lab> {
        if !privileged(test, "network namespaces") {
            return None;
        }
        require_tool("ip", "-V", "iproute2");
        require_tool("tc", "-V", "iproute2");
        require_tool("ethtool", "--version", "ethtool");
        let pid = std::process::id();
        let mut lab = Lab {
            namespaces: Vec::new(),
        };
        for n in names {
            let ns = format!("plumb-{pid}-{tag}-{n}");
            succeed(Command::new("ip").args(["netns", "add", &ns]));
            lab.namespaces.push(ns.clone());
            lab.sh(&ns, "ip link set lo up");
        }
        Some(lab)
    }

    fn ns(&self, i: usize) -> &str {
        &self.namespaces[i]
    }

    /// Runs a shell command inside namespace `ns` and requires success.
    fn sh(&self, ns: &str, cmd: &str) {
        succeed(Command::new("ip").args(["netns", "exec", ns, "sh", "-c", cmd]));
    }

    /// A veth pair from `ns_a`'s `a` to `ns_b`'s `b`, both up, no offloads.
    fn link(&self, ns_a: &str, a: &str, ns_b: &str, b: &str) {
        succeed(
            Command::new("ip")
                .args([
                    "link", "add", a, "netns", ns_a, "type", "veth", "peer", "name", b,
                ])
                .args(["netns", ns_b]),
        );
        for (ns, dev) in [(ns_a, a), (ns_b, b)] {
            self.sh(ns, &format!("ip link set {dev} up"));
            // Checksums and segmentation done in software, so a relay can
            // forward frames as they are.
            succeed(Command::new("ip").args([
                "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off",
                "gro", "off",
            ]));
        }
    }

    /// Runs `plumb run` in namespace `ns`; returns the result document.
    fn run(&self, ns: &str, dir: &std::path::Path, script: &str, peer: &str) -> serde_json::Value {
        let target = dir.join("target");
        std::fs::create_dir_all(&target).unwrap();
        succeed(
            Command::new("ip")
                .args(["netns", "exec", ns])
                .arg(plumb_bin())
                .args(["run", "--target", target.to_str().unwrap(), script])
                .args([
                    "-p",
                    &format!("peer={peer}"),
                    "--allow-net",
                    peer,
                    "--json",
                    "lab.json",
                ])
                .current_dir(dir),
        );
        doc(&dir.join("lab.json"))
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

#[test]
fn throughput_matches_a_200_mbit_token_bucket() {
    let Some(lab) = Lab::new(
        "throughput_matches_a_200_mbit_token_bucket",
        "tbf",
        &["a", "b"],
    ) else {
        return;
    };
    let (a, b) = (lab.ns(0), lab.ns(1));
    lab.link(a, "ta", b, "tb");
    lab.sh(a, "ip addr add 10.78.1.1/24 dev ta");
    lab.sh(b, "ip addr add 10.78.1.2/24 dev tb");
    lab.sh(
        a,
        "tc qdisc add dev ta root tbf rate 200mbit burst 64kb latency 100ms",
    );
    let peer = Peer::start(Some(b), "10.78.1.2:5210", &[]);
    let dir = workdir();
    let s = script(
        dir.path(),
        "tbf.rhai",
        r#"let t = net::throughput(#{ addr: param("peer", ""), duration: 3 });
report::metric("mbit", t.total_gbps * 1000.0, "Mbit/s", "higher");"#,
    );
    let d = lab.run(a, dir.path(), &s, &peer.addr);
    let mbit = metric(&d, "tbf", "mbit").unwrap();
    eprintln!("through tbf rate 200mbit: {mbit:.1} Mbit/s");
    assert!(
        (180.0..=220.0).contains(&mbit),
        "{mbit} Mbit/s through a 200 Mbit/s bucket"
    );
}

/// Forwards Ethernet frames between two interfaces, holding each for a delay.
const RELAY: &str = r#"
import socket, sys, threading, time, collections
DELAY = float(sys.argv[3])
def bind(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((ifname, 0))
    return s
def pump(src, dst):
    q = collections.deque()
    cv = threading.Condition()
    def send():
        while True:
            with cv:
                while not q:
                    cv.wait()
                due, frame = q.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                dst.send(frame)
            except OSError:
                pass
    threading.Thread(target=send, daemon=True).start()
    while True:
        frame, addr = src.recvfrom(65535)
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        with cv:
            q.append((time.monotonic() + DELAY, frame))
            cv.notify()
a, b = bind(sys.argv[1]), bind(sys.argv[2])
threading.Thread(target=pump, args=(a, b), daemon=True).start()
print("ready", flush=True)
pump(b, a)
"#;

#[test]
fn rtt_and_connect_time_see_a_5_ms_each_way_relay() {
    let Some(lab) = Lab::new(
        "rtt_and_connect_time_see_a_5_ms_each_way_relay",
        "delay",
        &["a", "m", "b"],
    ) else {
        return;
    };
    let (a, m, b) = (lab.ns(0), lab.ns(1), lab.ns(2));
    lab.link(a, "da", m, "dma");
    lab.link(m, "dmb", b, "db");
    lab.sh(a, "ip addr add 10.78.2.1/24 dev da");
    lab.sh(b, "ip addr add 10.78.2.2/24 dev db");
    lab.sh(
        m,
        "ip link set dma promisc on && ip link set dmb promisc on",
    );
    require_tool("python3", "--version", "python3");
    let dir = workdir();
    std::fs::write(dir.path().join("relay.py"), RELAY).unwrap();
    let mut relay = Command::new("ip")
        .args(["netns", "exec", m, "python3"])
        .arg(dir.path().join("relay.py"))
        .args(["dma", "dmb", "0.005"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 for the relay");
    assert_eq!(first_line(&mut relay).trim(), "ready");
    let peer = Peer::start(Some(b), "10.78.2.2:5210", &[]);
    let s = script(
        dir.path(),
        "delay.rhai",
        r#"let a = param("peer", "");
net::wait_for_port(#{ addr: a, timeout: 5 });
let r = net::rtt(#{ addr: a, count: 50, size: 64 });
let c = net::connect_time(#{ addr: a, count: 10 });
report::metric("rtt_ms", r.rtt.p50_us / 1000.0, "ms", "lower");
report::metric("connect_ms", c.connect.p50_us / 1000.0, "ms", "lower");"#,
    );
    let d = lab.run(a, dir.path(), &s, &peer.addr);
    let _ = relay.kill();
    let _ = relay.wait();
    let rtt = metric(&d, "delay", "rtt_ms").unwrap();
    let connect = metric(&d, "delay", "connect_ms").unwrap();
    eprintln!("through the 5 ms relay: rtt p50 {rtt:.2} ms, connect p50 {connect:.2} ms");
    assert!((9.5..=13.0).contains(&rtt), "rtt {rtt} ms through 2 × 5 ms");
    assert!(
        (9.5..=13.0).contains(&connect),
        "connect {connect} ms through 2 × 5 ms"
    );
}

#[test]
fn the_system_pack_runs_at_small_sizes_with_its_own_peer_or_a_granted_one() {
    let dir = workdir();
    let small = [
        "-p",
        "cpu_seconds=0.1",
        "-p",
        "kernels=prime,sha256",
        "-p",
        "mem_seconds=0.1",
        "-p",
        "latency_max=256K",
        "-p",
        "net_seconds=0.2",
    ];
    let mut args = vec!["system", "--json", "s.json"];
    args.extend_from_slice(&small);
    let (r, target) = run_scripts(dir.path(), &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("s.json"));
    for (scenario, name) in [
        ("cpu", "prime.1t"),
        ("cpu", "sha256.1t"),
        ("memory", "write.1t"),
        ("memory", "latency.plateaus"),
        ("network", "send.4s"),
        ("network", "recv.1s"),
        ("network", "rtt_p50"),
        ("network", "connect_p50"),
    ] {
        let v = metric(&d, scenario, name).unwrap_or_else(|| panic!("{scenario} {name}: {d}"));
        assert!(v > 0.0, "{scenario} {name} = {v}");
    }
    assert!(
        crate::util::entries(&target).is_empty(),
        "nothing left behind"
    );

    // A peer given as a parameter must be granted.
    let peer = Peer::start(None, "127.0.0.1:0", &[]);
    let p = format!("peer={}", peer.addr);
    let mut args = vec!["system", "-p", &p];
    args.extend_from_slice(&small);
    let (r, _) = run_scripts(dir.path(), &args);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("was not granted"), "{}", r.stderr);
    args.extend_from_slice(&["--allow-net", &peer.addr, "--json", "g.json"]);
    let (r, _) = run_scripts(dir.path(), &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(metric(&doc(&dir.path().join("g.json")), "network", "send.1s").unwrap() > 0.0);
}

#[test]
fn serve_stops_after_its_max_duration_and_refuses_bad_options() {
    let started = Instant::now();
    let peer = Peer::start(None, "127.0.0.1:0", &["--max-duration", "1s"]);
    let (code, err) = peer.wait_exit(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(err.contains("done: 0 sessions"), "{err}");
    let dir = workdir();
    let r = crate::util::plumb(dir.path(), &["serve", "--max-duration", "soon"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--max-duration"), "{}", r.stderr);
    let r = crate::util::plumb(dir.path(), &["serve", "--listen", "256.1.1.1:99"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--listen 256.1.1.1:99"), "{}", r.stderr);
}
