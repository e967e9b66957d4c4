//! Every measurement against a peer on loopback, the grants that must come
//! first, and the system pack with its own peer or a granted one.

use super::peer::Peer;
use crate::util::{doc, metric, run_scripts, script, workdir};
use std::net::TcpListener;
use std::time::Duration;

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

#[test]
fn the_system_pack_runs_at_small_sizes_with_its_own_peer_or_a_granted_one() {
    let dir = workdir();
    let small = [
        "-p",
        "peer=loopback",
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
    args.extend_from_slice(&small[2..]);
    let (r, _) = run_scripts(dir.path(), &args);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("was not granted"), "{}", r.stderr);
    args.extend_from_slice(&["--allow-net", &peer.addr, "--json", "g.json"]);
    let (r, _) = run_scripts(dir.path(), &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(metric(&doc(&dir.path().join("g.json")), "network", "send.1s").unwrap() > 0.0);
}
