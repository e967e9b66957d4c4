//! A peer that gets garbage keeps serving; a peer that disappears mid-test
//! gives an error with the partial figures; a peer stops after its
//! `--max-duration` and refuses bad options.

use super::peer::Peer;
use crate::util::{doc, metric, plumb_bin, run_scripts, script, workdir};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    // Reaped: its listening socket is gone for the next call.
    let _ = peer.child.wait();
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
    // The next call names the lost peer: refused, or (when it came while
    // the peer was being killed) reset before it answered.
    assert!(
        err.lines().any(|l| l.contains(&peer.addr)
            && (l.contains("connecting to") || l.contains("did not answer"))),
        "the next call names the lost peer: {err}"
    );
    let d = doc(&dir.path().join("g.json"));
    let notes = d["scenarios"][0]["notes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains("Gbit/s sent"))),
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
