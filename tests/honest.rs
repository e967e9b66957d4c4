//! Honest figures: a network figure measured against this machine says
//! "loopback", and the suites that publish network lines skip them without
//! a peer instead of measuring loopback under a network heading.

use crate::util::{first_table, plumb_bin, run_scripts, script, serve_address, workdir};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A `plumb serve` on loopback, stopped when dropped.
struct Serve {
    child: Child,
    addr: String,
}

impl Serve {
    fn start() -> Serve {
        let mut child = Command::new(plumb_bin())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start plumb serve");
        let addr = serve_address(&mut child);
        Serve { child, addr }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// yabs at sizes that run in a few seconds: one block size, short CPU and
/// network lines.
const YABS_SMALL: [&str; 11] = [
    "yabs",
    "-p",
    "size=4M",
    "-p",
    "block_sizes=4k",
    "-p",
    "cpu_seconds=0.2s",
    "-p",
    "net_seconds=0.3s",
    "--json",
    "y.json",
];

fn read_doc(dir: &Path, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
}

/// The metrics of scenario `name` in a result document.
fn metrics<'a>(d: &'a Value, name: &str) -> Vec<&'a Value> {
    d["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == name)
        .flat_map(|s| s["metrics"].as_array().unwrap())
        .collect()
}

#[test]
fn a_network_line_against_this_machine_is_labelled_loopback_in_the_table_the_json_and_yabs_layout()
{
    let dir = workdir();
    let serve = Serve::start();
    let peer = format!("peer={}", serve.addr);
    let mut args = YABS_SMALL.to_vec();
    args.extend(["-p", &peer, "--allow-net", &serve.addr]);
    let (r, _) = run_scripts(dir.path(), &args);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let d = read_doc(dir.path(), "y.json");
    let net = metrics(&d, "network");
    assert_eq!(net.len(), 4, "{d}");
    for m in &net {
        assert_eq!(m["marks"], serde_json::json!(["loopback"]), "{m}");
    }
    // Nothing else is marked.
    for s in ["disk", "cpu"] {
        for m in metrics(&d, s) {
            assert!(m.get("marks").is_none(), "{m}");
        }
    }
    // The run table: the unit cell of every network row says loopback.
    let table = first_table(&r.stdout);
    let rows: Vec<&Vec<String>> = table.iter().filter(|r| r[0] == "yabs/network").collect();
    assert_eq!(rows.len(), 4, "{}", r.stdout);
    for row in rows {
        assert!(
            row[3].ends_with("bit/s (loopback)"),
            "{row:?}\n{}",
            r.stdout
        );
    }
    // The note names the peer once, under the table.
    let note = format!(
        "note (yabs/network): the network peer {} is this machine",
        serve.addr
    );
    assert_eq!(r.stdout.matches(&note).count(), 1, "{}", r.stdout);
    // YABS's own table: each speed followed by (loopback).
    let at = r
        .stdout
        .find("iperf3 Network Speed Tests")
        .expect("the network table");
    let lines: Vec<&str> = r.stdout[at..]
        .lines()
        .filter(|l| l.contains("Speed ("))
        .take(4)
        .collect();
    assert_eq!(lines.len(), 4, "{}", r.stdout);
    for l in lines {
        assert!(l.contains("bits/sec (loopback)"), "{l}");
    }
}

#[test]
fn yabs_without_a_peer_prints_the_skip_note_and_no_network_figures() {
    let dir = workdir();
    let (r, _) = run_scripts(dir.path(), &YABS_SMALL);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let d = read_doc(dir.path(), "y.json");
    assert!(metrics(&d, "network").is_empty(), "{d}");
    let skipped: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("note (yabs/network): network skipped: no peer given"))
        .collect();
    assert_eq!(skipped.len(), 1, "{}", r.stdout);
    for absent in ["iperf3 Network Speed Tests", "loopback)", "bit/s"] {
        assert!(!r.stdout.contains(absent), "{absent:?} in:\n{}", r.stdout);
    }
    // The rest of YABS ran.
    assert!(!metrics(&d, "disk").is_empty() && !metrics(&d, "cpu").is_empty());
}

#[test]
fn a_metric_takes_the_marks_of_its_measurement_or_named_ones_and_refuses_others() {
    let dir = workdir();
    script(
        dir.path(),
        "marks.rhai",
        r#"
report::metric("plain", 1.0, "MiB/s", "higher", #{ bw: 3.0 });
report::metric("named", 2.0, "MiB/s", "higher", ["cached", "loopback"]);
report::metric("from_map", 3.0, "MiB/s", "higher", #{ cached: true, loopback: false });
report::metric("bad", 4.0, "MiB/s", "higher", ["fast"]);
"#,
    );
    let (r, _) = run_scripts(dir.path(), &["marks.rhai", "--json", "m.json"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("report::metric 'bad': a mark is \"loopback\" or \"cached\", not \"fast\""),
        "{}",
        r.stderr
    );
    let d = read_doc(dir.path(), "m.json");
    let m = metrics(&d, "marks");
    assert!(m[0].get("marks").is_none(), "{}", m[0]);
    assert_eq!(m[1]["marks"], serde_json::json!(["loopback", "cached"]));
    assert_eq!(m[2]["marks"], serde_json::json!(["cached"]));
    assert_eq!(m.len(), 3);
}
