//! fio's other engines in `plumb fio`, side by side with fio itself: the
//! vectored, POSIX aio and mmap engines, the file operation engines,
//! ftruncate and falloc, cpuio's load, and the net engine against fio's.

use crate::util::{fio_json, plumb, plumb_bin, require_tool, workdir};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs real fio with `args` in `dir` and returns its JSON.
fn real_fio(dir: &Path, args: &[&str]) -> Value {
    require_tool("fio", "--version", "fio");
    let out = Command::new("fio")
        .current_dir(dir)
        .args(args)
        .arg("--output-format=json")
        .output()
        .expect("run fio");
    assert!(
        out.status.success(),
        "fio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // fio prints engine notices before its JSON.
    let start = text.find('{').expect("fio's JSON");
    serde_json::from_str(&text[start..]).expect("fio's JSON parses")
}

/// Per direction: bytes, I/Os and completion latency samples of job 0.
fn counts(json: &Value) -> [(u64, u64, u64); 2] {
    let job = &json["jobs"][0];
    assert_eq!(job["error"], 0, "{job}");
    ["read", "write"].map(|d| {
        let s = &job[d];
        (
            s["io_bytes"].as_u64().unwrap(),
            s["total_ios"].as_u64().unwrap(),
            s["clat_ns"]["N"].as_u64().unwrap_or(0),
        )
    })
}

#[test]
fn data_engines_move_what_fio_moves() {
    let dir = workdir();
    // fio's vsync merges adjacent queued I/Os into one readv/writev: at
    // depth 1 there is nothing to merge.
    for (engine, rw, depth) in [
        ("pvsync", "randrw", "4"),
        ("pvsync2", "randrw", "4"),
        ("vsync", "rw", "1"),
        ("posixaio", "randrw", "4"),
        ("mmap", "randrw", "4"),
        ("ftruncate", "write", "4"),
        ("falloc", "randwrite", "4"),
    ] {
        let args = [
            "--name=e",
            "--filename=data",
            &format!("--ioengine={engine}"),
            &format!("--rw={rw}"),
            "--bs=4k",
            "--size=1M",
            &format!("--iodepth={depth}"),
            "--randrepeat=1",
        ];
        let ours = counts(&fio_json(dir.path(), &args));
        std::fs::remove_file(dir.path().join("data")).unwrap();
        let theirs = counts(&real_fio(dir.path(), &args));
        std::fs::remove_file(dir.path().join("data")).unwrap();
        for d in 0..2 {
            // Mixed jobs split reads and writes by chance: the sums match.
            assert_eq!(
                ours[0].0 + ours[1].0,
                theirs[0].0 + theirs[1].0,
                "{engine} {rw}: bytes {ours:?} vs fio {theirs:?}"
            );
            assert_eq!(ours[0].1 + ours[1].1, 256, "{engine} {rw}: {ours:?}");
            assert_eq!(
                ours[d].0 > 0,
                theirs[d].0 > 0,
                "{engine} {rw}: {ours:?} vs {theirs:?}"
            );
        }
    }
}

#[test]
fn ftruncate_leaves_the_file_at_the_last_offset() {
    let dir = workdir();
    fio_json(
        dir.path(),
        &[
            "--name=t",
            "--filename=f",
            "--ioengine=ftruncate",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
        ],
    );
    // Sequential truncations to 0, 4k, ..., 60k.
    assert_eq!(
        std::fs::metadata(dir.path().join("f")).unwrap().len(),
        60 << 10
    );
}

#[test]
fn file_operation_engines_count_as_fio_and_touch_the_files() {
    let dir = workdir();
    let job = |engine: &str| {
        [
            "--name=t".to_string(),
            format!("--ioengine={engine}"),
            "--nrfiles=8".into(),
            "--filesize=8k".into(),
            "--bs=4k".into(),
        ]
    };
    for engine in ["filecreate", "filestat", "filedelete"] {
        let args = job(engine);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let ours = counts(&fio_json(dir.path(), &args));
        let names = crate::util::entries(dir.path());
        match engine {
            "filecreate" => {
                assert_eq!(names.len(), 8, "{names:?}");
                for n in &names {
                    // Created, not written: fio's filecreate files are empty.
                    assert_eq!(std::fs::metadata(dir.path().join(n)).unwrap().len(), 0);
                }
                for n in &names {
                    std::fs::remove_file(dir.path().join(n)).unwrap();
                }
            }
            "filestat" => assert_eq!(names.len(), 8, "{names:?}"),
            _ => assert!(names.is_empty(), "filedelete left {names:?}"),
        }
        let theirs = counts(&real_fio(dir.path(), &args));
        for n in crate::util::entries(dir.path()) {
            std::fs::remove_file(dir.path().join(n)).unwrap();
        }
        // 8 files of 8k in 4k I/Os: 64 KiB in 16 reads, and one timed
        // operation (the latency sample) per file.
        assert_eq!(ours, [(65536, 16, 8), (0, 0, 0)], "{engine}: plumb");
        assert_eq!(ours, theirs, "{engine}: plumb vs fio");
    }
}

#[test]
fn filestat_takes_each_stat_type_and_refuses_others() {
    let dir = workdir();
    for t in ["stat", "lstat", "statx"] {
        let c = counts(&fio_json(
            dir.path(),
            &[
                "--name=t",
                "--ioengine=filestat",
                "--nrfiles=2",
                "--filesize=4k",
                &format!("--stat_type={t}"),
            ],
        ));
        assert_eq!(c[0], (8192, 2, 2), "{t}");
    }
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=t",
            "--ioengine=filestat",
            "--size=4k",
            "--stat_type=fstat",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("option 'stat_type'"), "{}", r.stderr);
}

/// CPU ticks used by every thread of `pid` so far.
fn task_ticks(pid: u32) -> u64 {
    let mut total = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let stat = std::fs::read_to_string(t.unwrap().path().join("stat")).unwrap_or_default();
        // Fields after the command's closing parenthesis; utime and stime
        // are the 14th and 15th fields of the whole line.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        total += f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    }
    total
}

#[test]
fn cpuio_burns_its_share_of_a_cpu() {
    let dir = workdir();
    let child = Command::new(plumb_bin())
        .current_dir(dir.path())
        .args([
            "fio",
            "--name=c",
            "--ioengine=cpuio",
            "--cpuload=20",
            "--cpuchunks=10000",
            "--runtime=4",
            "--time_based",
            "--output-format=json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let t0 = task_ticks(child.id());
    let w0 = Instant::now();
    std::thread::sleep(Duration::from_millis(2500));
    let t1 = task_ticks(child.id());
    let wall = w0.elapsed().as_secs_f64();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let load = (t1 - t0) as f64 / hz / wall;
    assert!(
        (0.15..=0.25).contains(&load),
        "cpuload=20 burned {:.1}% of a CPU",
        load * 100.0
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let read = &json["jobs"][0]["read"];
    // fio counts each burst as a read of nothing.
    assert_eq!(read["io_bytes"], 0);
    assert!(read["total_ios"].as_u64().unwrap() >= 50, "{read}");
}

#[test]
fn cpuio_and_net_refuse_missing_options_by_name() {
    let dir = workdir();
    for (args, option) in [
        (
            vec!["--name=c", "--ioengine=cpuio", "--runtime=1"],
            "cpuload",
        ),
        (
            vec!["--name=c", "--ioengine=cpuio", "--cpuload=101"],
            "cpuload",
        ),
        (
            vec![
                "--name=n",
                "--ioengine=net",
                "--rw=write",
                "--size=1M",
                "--hostname=localhost",
            ],
            "port",
        ),
        (
            vec![
                "--name=n",
                "--ioengine=net",
                "--rw=write",
                "--size=1M",
                "--port=70000",
            ],
            "port",
        ),
        (
            vec![
                "--name=n",
                "--ioengine=net",
                "--rw=write",
                "--size=1M",
                "--port=9",
            ],
            "hostname",
        ),
        (
            vec![
                "--name=n",
                "--ioengine=net",
                "--protocol=udp",
                "--listen",
                "--rw=read",
                "--size=1M",
                "--port=9",
            ],
            "listen",
        ),
        (
            vec![
                "--name=n",
                "--ioengine=net",
                "--rw=write",
                "--size=1M",
                "--port=65535",
                "--numjobs=2",
                "--hostname=localhost",
            ],
            "port",
        ),
        (
            vec![
                "--name=n",
                "--ioengine=net",
                "--hostname=bad host",
                "--port=9",
            ],
            "hostname",
        ),
    ] {
        let mut all = vec!["fio"];
        all.extend(args.iter());
        let r = plumb(dir.path(), &all);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("option '{option}'")),
            "{args:?}: {}",
            r.stderr
        );
    }
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs a receiver and a sender at once; returns (receiver, sender) JSON.
fn pair(dir: &Path, rx: (&str, Vec<String>), tx: (&str, Vec<String>)) -> (Value, Value) {
    let spawn = |tool: &str, args: &[String]| {
        let mut c = if tool == "fio" {
            require_tool("fio", "--version", "fio");
            Command::new("fio")
        } else {
            let mut c = Command::new(plumb_bin());
            c.arg("fio");
            c
        };
        c.current_dir(dir)
            .args(args)
            .arg("--output-format=json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let r = spawn(rx.0, &rx.1);
    std::thread::sleep(Duration::from_millis(1000));
    let t = spawn(tx.0, &tx.1);
    let parse = |out: std::process::Output, who: &str| -> Value {
        let text = String::from_utf8_lossy(&out.stdout);
        let start = text.find('{').unwrap_or_else(|| {
            panic!(
                "{who}: no JSON: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        serde_json::from_str(&text[start..]).unwrap()
    };
    let t = parse(t.wait_with_output().unwrap(), tx.0);
    let r = parse(r.wait_with_output().unwrap(), rx.0);
    (r, t)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn net_engine_talks_tcp_with_fio_both_ways() {
    let dir = workdir();
    for (rx_tool, tx_tool) in [("plumb", "fio"), ("fio", "plumb"), ("plumb", "plumb")] {
        let port = free_port().to_string();
        let p = format!("--port={port}");
        let (r, t) = pair(
            dir.path(),
            (
                rx_tool,
                strings(&[
                    "--name=rx",
                    "--ioengine=net",
                    "--listen",
                    &p,
                    "--rw=read",
                    "--bs=4k",
                    "--size=64M",
                    "--runtime=20",
                ]),
            ),
            (
                tx_tool,
                strings(&[
                    "--name=tx",
                    "--ioengine=net",
                    "--hostname=127.0.0.1",
                    &p,
                    "--rw=write",
                    "--bs=4k",
                    "--size=4M",
                    "--nodelay=1",
                    "--window_size=256k",
                ]),
            ),
        );
        let sent = counts(&t)[1];
        let received = counts(&r)[0];
        assert_eq!(sent.0, 4 << 20, "{tx_tool} sent {sent:?}");
        if rx_tool == "plumb" {
            assert_eq!(
                received.0, sent.0,
                "plumb received {received:?} of {tx_tool}'s {sent:?}"
            );
        } else {
            // fio's receiver, fed short reads, sometimes counts a few KiB
            // less than arrived (its resid accounting); never more.
            assert!(
                received.0 <= sent.0 && received.0 + (64 << 10) >= sent.0,
                "fio received {received:?} of plumb's {sent:?}"
            );
        }
    }
}

#[test]
fn net_engine_talks_udp_and_unix_with_fio() {
    let dir = workdir();
    // UDP may drop datagrams: the receiver gets at most what was sent, in
    // whole datagrams, and ends on fio's link-close message.
    for (rx_tool, tx_tool) in [("plumb", "fio"), ("fio", "plumb")] {
        let p = format!("--port={}", free_port());
        let (r, t) = pair(
            dir.path(),
            (
                rx_tool,
                strings(&[
                    "--name=rx",
                    "--ioengine=net",
                    "--protocol=udp",
                    &p,
                    "--rw=read",
                    "--bs=4k",
                    "--size=64M",
                    "--runtime=20",
                ]),
            ),
            (
                tx_tool,
                strings(&[
                    "--name=tx",
                    "--ioengine=net",
                    "--protocol=udp",
                    "--hostname=127.0.0.1",
                    &p,
                    "--rw=write",
                    "--bs=4k",
                    "--size=1M",
                    "--rate=20m",
                ]),
            ),
        );
        let sent = counts(&t)[1];
        let received = counts(&r)[0];
        assert_eq!(sent.0, 1 << 20);
        assert!(
            received.0 > 0 && received.0 <= sent.0 && received.0.is_multiple_of(4096),
            "{received:?} of {sent:?}"
        );
    }
    let sock = dir.path().join("sock").display().to_string();
    let f = format!("--filename={sock}");
    let (r, _) = pair(
        dir.path(),
        (
            "plumb",
            strings(&[
                "--name=rx",
                "--ioengine=net",
                "--protocol=unix",
                &f,
                "--rw=read",
                "--bs=4k",
                "--size=64M",
                "--runtime=20",
            ]),
        ),
        (
            "fio",
            strings(&[
                "--name=tx",
                "--ioengine=net",
                "--protocol=unix",
                &f,
                "--rw=write",
                "--bs=4k",
                "--size=2M",
            ]),
        ),
    );
    assert_eq!(counts(&r)[0].0, 2 << 20);
}

#[test]
fn net_pingpong_returns_every_byte() {
    let dir = workdir();
    let p = format!("--port={}", free_port());
    let (r, t) = pair(
        dir.path(),
        (
            "plumb",
            strings(&[
                "--name=rx",
                "--ioengine=net",
                "--listen",
                &p,
                "--rw=read",
                "--bs=4k",
                "--size=1M",
                "--pingpong=1",
            ]),
        ),
        (
            "plumb",
            strings(&[
                "--name=tx",
                "--ioengine=net",
                "--hostname=localhost",
                &p,
                "--rw=write",
                "--bs=4k",
                "--size=1M",
                "--pingpong=1",
            ]),
        ),
    );
    assert_eq!(counts(&t)[1].0, 1 << 20);
    assert_eq!(counts(&t)[1].1, 256);
    assert_eq!(counts(&r)[0].0, 1 << 20);
}
