//! `plumb trace`: record real programs under strace, replay them in the
//! sandbox, and check what the replay did with strace too.

use crate::util::{entries, plumb, plumb_bin, succeed, workdir};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// A program with a known I/O sequence: two threads, then rename, unlink,
/// mkdir and stat from the main thread.
const KNOWN: &str = r#"
import os, sys, threading
os.chdir(sys.argv[1])
def data():
    fd = os.open("data.bin", os.O_RDWR | os.O_CREAT, 0o644)
    for i in range(20):
        os.pwrite(fd, b"d" * (512 * (i + 1)), i * 8192)
    os.fsync(fd)
    for i in range(3):
        os.write(fd, b"w" * 1000)
    os.fdatasync(fd)
    os.pread(fd, 4096, 8192)
    os.close(fd)
def log():
    fd = os.open("log.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for i in range(10):
        os.write(fd, b"l" * 100)
    os.fsync(fd)
    os.close(fd)
a = threading.Thread(target=data); b = threading.Thread(target=log)
a.start(); a.join(); b.start(); b.join()
os.rename("data.bin", "data2.bin")
os.unlink("log.txt")
os.mkdir("sub")
os.stat("data2.bin")
"#;

/// What the known program does, per thread, as (op, offset, len).
fn known_sequence() -> Vec<Vec<(String, u64, u64)>> {
    let op = |n: &str, off: u64, len: u64| (n.to_string(), off, len);
    let mut data = vec![op("open", 0, 0)];
    for i in 0..20 {
        data.push(op("pwrite", i * 8192, 512 * (i + 1)));
    }
    data.push(op("fsync", 0, 0));
    for i in 0..3 {
        data.push(op("write", i * 1000, 1000));
    }
    data.extend([
        op("fdatasync", 0, 0),
        op("pread", 8192, 4096),
        op("close", 0, 0),
    ]);
    let mut log = vec![op("open", 0, 0)];
    for i in 0..10 {
        log.push(op("write", i * 100, 100));
    }
    log.extend([op("fsync", 0, 0), op("close", 0, 0)]);
    let main = vec![
        op("rename", 0, 0),
        op("unlink", 0, 0),
        op("mkdir", 0, 0),
        op("stat", 0, 0),
    ];
    vec![data, log, main]
}

/// Fails the test, naming the package, where strace cannot run (a
/// missing tool is not a pass).
fn require_strace() {
    crate::util::require_tool("strace", "-V", "strace");
}

/// Records `python3 PROGRAM ARGS` with the root at `root`.
fn record(dir: &Path, program: &str, args: &[&str], root: &str, out: &str) {
    std::fs::write(dir.join("prog.py"), program).unwrap();
    let mut all = vec![
        "trace", "record", "-o", out, "--root", root, "--", "python3", "prog.py",
    ];
    all.extend_from_slice(args);
    let r = plumb(dir, &all);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// The trace's operations per thread as (op, offset, len), implicit opens left out.
fn trace_sequence(text: &str) -> Vec<Vec<(String, u64, u64)>> {
    let threads = text.lines().filter(|l| l.starts_with("thread ")).count();
    let mut out = vec![Vec::new(); threads];
    for l in text.lines().filter(|l| l.starts_with("op ")) {
        let w: Vec<&str> = l.split(' ').collect();
        if w[4] == "open" && w[7].contains("implicit") {
            continue;
        }
        let n = |i: usize| w.get(i).and_then(|x| x.parse().ok()).unwrap_or(0);
        let (off, len) = match w[4] {
            "read" | "pread" | "write" | "pwrite" => (n(6), n(7)),
            _ => (0, 0),
        };
        out[n(1) as usize].push((w[4].to_string(), off, len));
    }
    out
}

#[test]
fn record_then_replay_performs_the_same_operations_per_thread() {
    require_strace();
    let dir = workdir();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    record(dir.path(), KNOWN, &["data"], "data", "known.trace");
    let text = std::fs::read_to_string(dir.path().join("known.trace")).unwrap();
    assert_eq!(trace_sequence(&text), known_sequence(), "{text}");

    // Replay under strace and read back what the replay threads did.
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    succeed(
        Command::new("strace")
            .args(["-ff", "-y", "-s", "0", "-o", "replay.log", "-e"])
            .arg("trace=openat2,pread64,pwrite64,fsync,fdatasync,close,renameat,unlinkat,mkdirat,newfstatat")
            .arg(plumb_bin())
            .args(["trace", "replay", "known.trace", "--speed", "max", "--target", "target"])
            .current_dir(dir.path()),
    );
    // One log per thread (-ff): replay.log.TID; the lowest TID is the main
    // thread, which only lays files out.
    let mut logs: BTreeMap<u64, String> = BTreeMap::new();
    for name in entries(dir.path()) {
        if let Some(tid) = name.strip_prefix("replay.log.") {
            logs.insert(
                tid.parse().unwrap(),
                std::fs::read_to_string(dir.path().join(&name)).unwrap(),
            );
        }
    }
    let main_tid = *logs.keys().next().unwrap();
    let mut by_tid: BTreeMap<u64, Vec<(String, u64, u64)>> = BTreeMap::new();
    // Descriptors the sandbox opens (O_PATH) to reach a parent directory.
    let mut lookups: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for (&tid, log) in &logs {
        for rest in log.lines() {
            if tid == main_tid || !rest.contains("plumb-run") || rest.contains("= -1") {
                continue;
            }
            let Some(end) = rest.rfind(") = ") else {
                continue;
            };
            let name = &rest[..rest.find('(').unwrap()];
            let ret = rest[end + 4..].split('<').next().unwrap().to_string();
            let args: Vec<&str> = rest[name.len() + 1..end].split(", ").collect();
            let fd = args[0].split('<').next().unwrap().to_string();
            let num = |i: usize| args[i].parse::<u64>().unwrap();
            let entry = match name {
                "openat2" if rest.contains("O_PATH") => {
                    lookups.entry(tid).or_default().push(ret);
                    continue;
                }
                "close" if lookups.get(&tid).is_some_and(|l| l.contains(&fd)) => {
                    lookups.get_mut(&tid).unwrap().retain(|f| *f != fd);
                    continue;
                }
                "openat2" => ("open".to_string(), 0, 0),
                "pwrite64" | "pread64" => (name.trim_end_matches("64").to_string(), num(3), num(2)),
                "renameat" => ("rename".into(), 0, 0),
                "unlinkat" => {
                    // The sandbox looks at what it removes first: not an operation.
                    let seq = by_tid.entry(tid).or_default();
                    if seq.last().is_some_and(|(n, _, _)| n == "stat") {
                        seq.pop();
                    }
                    ("unlink".into(), 0, 0)
                }
                "mkdirat" => ("mkdir".into(), 0, 0),
                "newfstatat" => ("stat".into(), 0, 0),
                other => (other.to_string(), 0, 0),
            };
            by_tid.entry(tid).or_default().push(entry);
        }
    }
    let mut replayed: Vec<Vec<(String, u64, u64)>> = by_tid.into_values().collect();
    // Replay writes through pwrite at the recorded offsets: map the program's
    // plain writes onto pwrite for the comparison.
    let mut expected: Vec<Vec<(String, u64, u64)>> = known_sequence()
        .into_iter()
        .map(|t| {
            t.into_iter()
                .map(|(n, o, l)| match n.as_str() {
                    "write" => ("pwrite".to_string(), o, l),
                    _ => (n, o, l),
                })
                .collect()
        })
        .collect();
    replayed.sort();
    expected.sort();
    assert_eq!(replayed, expected);
}

/// Writes with sleeps between them: about 1 s of think time.
const SLEEPY: &str = r#"
import os, sys, time
os.chdir(sys.argv[1])
fd = os.open("slow.dat", os.O_RDWR | os.O_CREAT, 0o644)
for pause in [0.2, 0.3, 0.1, 0.4]:
    os.pwrite(fd, b"s" * 4096, 0)
    time.sleep(pause)
os.fsync(fd)
os.close(fd)
"#;

/// Replays `trace` at `speed` in `dir/target` with `extra` options, saving
/// the result; checks that the run directory is gone and returns the result
/// as `trace_results::replayed` reads it.
pub(crate) fn replay_json(
    dir: &Path,
    trace: &str,
    speed: &str,
    extra: &[&str],
) -> serde_json::Value {
    std::fs::create_dir_all(dir.join("target")).unwrap();
    let mut args = vec![
        "trace", "replay", trace, "--speed", speed, "--target", "target", "--json", "r.json",
    ];
    args.extend_from_slice(extra);
    let r = plumb(dir, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        entries(&dir.join("target")).is_empty(),
        "the run directory is removed"
    );
    crate::trace_results::replayed(&dir.join("r.json"))
}

#[test]
fn think_time_is_kept_at_speed_1_and_dropped_at_max() {
    require_strace();
    let dir = workdir();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    record(dir.path(), SLEEPY, &["data"], "data", "sleepy.trace");
    let one = replay_json(dir.path(), "sleepy.trace", "1", &[]);
    let ratio = one["time_ratio"].as_f64().unwrap();
    let original = one["seconds"].as_f64().unwrap() / ratio;
    assert!(original > 0.95 && original < 1.5, "recorded {original} s");
    assert!(
        (0.95..=1.05).contains(&ratio),
        "speed 1 took {ratio} × the original"
    );
    let two = replay_json(dir.path(), "sleepy.trace", "2", &[]);
    let half = two["seconds"].as_f64().unwrap() / original;
    assert!(
        (0.45..=0.6).contains(&half),
        "speed 2 took {half} × the original"
    );
    let max = replay_json(dir.path(), "sleepy.trace", "max", &[]);
    assert!(
        max["seconds"].as_f64().unwrap() < 0.2,
        "no think time: {max}"
    );
    assert_eq!(max["total_ops"], one["total_ops"]);
}

#[test]
fn paths_in_a_trace_never_leave_the_run_directory() {
    let dir = workdir();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let escape = outside.join("escaped.dat");
    let abs = escape.display().to_string();
    let trace = format!(
        "plumb-trace 1\nduration_us 100\nfile 0 8192 {abs}\nfile 1 - ../../../../{}\nfile 2 - /etc/plumb-trace-escape\nthread 0 1\n\
op 0 0 1 open 0 0 rw\nop 0 1 1 pwrite 0 0 4096\nop 0 2 1 close 0\n\
op 0 3 1 open 1 1 rw,creat\nop 0 4 1 pwrite 1 0 100\nop 0 5 1 close 1\n\
op 0 6 1 open 2 2 w,creat\nop 0 7 1 close 2\nop 0 8 1 unlink 0\nend 9\n",
        outside.join("climbed.dat").display()
    );
    std::fs::write(dir.path().join("evil.trace"), trace).unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let r = plumb(
        dir.path(),
        &[
            "trace",
            "replay",
            "evil.trace",
            "--speed",
            "max",
            "--target",
            "target",
            "--keep",
            "--json",
            "e.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let run = entries(&dir.path().join("target"));
    assert_eq!(run.len(), 1, "{run:?}");
    let inside = dir.path().join("target").join(&run[0]);
    // Absolute paths and climbs are resolved beneath the run directory.
    let rel = abs.trim_start_matches('/');
    assert!(
        !inside.join(rel).exists(),
        "the unlinked file was the inside copy"
    );
    assert!(inside.join(rel).parent().unwrap().is_dir());
    assert!(inside.join("etc/plumb-trace-escape").exists());
    assert!(!Path::new("/etc/plumb-trace-escape").exists());
    assert!(
        entries(&outside).is_empty(),
        "nothing outside: {:?}",
        entries(&outside)
    );
    let doc = crate::trace_results::replayed(&dir.path().join("e.json"));
    assert_eq!(doc["first_divergence"], serde_json::Value::Null, "{doc}");
}

#[test]
fn a_truncated_or_malformed_trace_names_the_record_and_writes_nothing() {
    let dir = workdir();
    let good = "plumb-trace 1\nduration_us 10\nfile 0 4096 a\nthread 0 1\nop 0 0 1 open 0 0 r\nop 0 1 1 pread 0 0 4096\nop 0 2 1 close 0\nend 3\n";
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let cases = [
        (
            "cut.trace",
            good.lines().take(6).collect::<Vec<_>>().join("\n"),
            "cut.trace:6:",
            "truncated",
        ),
        (
            "bad.trace",
            good.replace("op 0 1 1 pread 0 0 4096", "op 0 1 1 pread 0 zero 4096"),
            "bad.trace:6:",
            "'zero' is not a number",
        ),
        (
            "use.trace",
            good.replace("op 0 1 1 pread 0 0 4096", "op 0 1 1 pread 3 0 4096"),
            "use.trace:6:",
            "handle 3 is used before it is opened",
        ),
        (
            "ver.trace",
            good.replace("plumb-trace 1", "plumb-trace 9"),
            "ver.trace:1:",
            "unsupported trace version",
        ),
    ];
    for (name, text, place, what) in cases {
        std::fs::write(dir.path().join(name), text).unwrap();
        for cmd in [
            &["trace", "replay", name, "--target", "target"][..],
            &["trace", "show", name][..],
        ] {
            let r = plumb(dir.path(), cmd);
            assert_eq!(r.code, 2, "{name}: {}", r.stderr);
            assert!(
                r.stderr.contains(place) && r.stderr.contains(what),
                "{name}: {}",
                r.stderr
            );
        }
    }
    assert!(entries(&dir.path().join("target")).is_empty());
}

#[test]
fn a_sqlite_workload_records_and_replays_without_errors() {
    require_strace();
    let dir = workdir();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let program = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sqlite_workload.py"
    ))
    .unwrap();
    record(
        dir.path(),
        &program,
        &["data/app.db", "5", "20"],
        "data",
        "sqlite.trace",
    );
    let show = plumb(dir.path(), &["trace", "show", "sqlite.trace", "--json"]);
    assert_eq!(show.code, 0, "{}", show.stderr);
    let s = show.json();
    let count = |op: &str| s["by_op"][op][0].as_u64().unwrap_or(0);
    // Each of the 5 transactions (and the table and index) syncs.
    assert!(count("fdatasync") + count("fsync") >= 5, "{s}");
    assert!(count("pwrite") + count("write") >= 10, "{s}");
    assert!(
        count("unlink") >= 5,
        "the journal is deleted after each commit: {s}"
    );
    let r = replay_json(dir.path(), "sqlite.trace", "max", &[]);
    let replayed: u64 = r["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["count"].as_u64().unwrap())
        .sum();
    assert_eq!(replayed, s["ops"].as_u64().unwrap());
    assert_eq!(r["divergences"], 0, "{r}");
    let failed: u64 = s["failed"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(r["expected_errors"].as_u64().unwrap(), failed, "{r}");
}

#[test]
fn a_fio_iolog_imports_and_replays() {
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=log",
            "--rw=randrw",
            "--bs=4k",
            "--size=1M",
            "--ioengine=psync",
            "--write_iolog=job.iolog",
            "--directory=.",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let log = std::fs::read_to_string(dir.path().join("job.iolog")).unwrap();
    let ios = log
        .lines()
        .filter(|l| l.contains(" read ") || l.contains(" write "))
        .count() as u64;
    assert_eq!(ios, 256);
    let r = plumb(
        dir.path(),
        &[
            "trace",
            "import",
            "--fio-iolog",
            "job.iolog",
            "-o",
            "job.trace",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = plumb(dir.path(), &["trace", "show", "job.trace", "--json"]).json();
    let count = |op: &str| s["by_op"][op][0].as_u64().unwrap_or(0);
    assert_eq!(count("pread") + count("pwrite"), 256);
    let r = replay_json(dir.path(), "job.trace", "max", &[]);
    let ops = r["ops"].as_array().unwrap();
    let moved: u64 = ops
        .iter()
        .filter(|o| o["op"] == "pread" || o["op"] == "pwrite")
        .map(|o| o["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(moved, 256 * 4096);
}

#[test]
fn the_replay_pack_replays_its_bundled_trace_within_the_budget() {
    let dir = workdir();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let r = plumb(
        dir.path(),
        &[
            "run",
            "replay",
            "-p",
            "speed=max",
            "--target",
            "target",
            "--json",
            "p.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = crate::util::doc(&dir.path().join("p.json"));
    assert!(crate::util::metric(&d, "sqlite", "ops").unwrap() > 100.0);
    assert!(crate::util::metric(&d, "sqlite", "fdatasync_p99").is_some());
    assert!(entries(&target).is_empty());
    // A budget smaller than the trace needs is refused before anything is
    // written (no figures, nothing left); exactly what it needs is enough.
    // The bundled pack declares 64M, so plumb refuses a smaller --max-bytes
    // before running it: a copy without that declaration lets the budget
    // reach trace::replay.
    let pack = dir.path().join("budget-pack");
    std::fs::create_dir(&pack).unwrap();
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/replay");
    for f in ["sqlite.rhai", "sqlite.trace"] {
        std::fs::copy(bundled.join(f), pack.join(f)).unwrap();
    }
    std::fs::write(
        pack.join("pack.toml"),
        "name = \"budget\"\nscenarios = [\"sqlite.rhai\"]\ndata = [\"sqlite.trace\"]\n",
    )
    .unwrap();
    let with_budget = |budget: &str| {
        let r = plumb(
            dir.path(),
            &[
                "run",
                "budget-pack",
                "--max-bytes",
                budget,
                "--target",
                "target",
                "--json",
                "b.json",
            ],
        );
        (r, crate::util::doc(&dir.path().join("b.json")))
    };
    let (r, d) = with_budget("4k");
    assert_eq!(r.code, 1, "{}", r.stderr);
    let need: u64 = r
        .stderr
        .split("trace::replay needs ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the refusal says what it needs: {}", r.stderr));
    assert!(
        need > 4096,
        "the trace writes 8 KiB into app.db alone: {need}"
    );
    assert_eq!(
        crate::util::metric(&d, "sqlite", "ops"),
        None,
        "nothing replayed"
    );
    assert!(entries(&target).is_empty());
    let (r, _) = with_budget(&(need - 1).to_string());
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("needs {need} bytes")),
        "{}",
        r.stderr
    );
    let (r, d) = with_budget(&need.to_string());
    assert_eq!(r.code, 0, "{need} bytes are enough: {}", r.stderr);
    assert!(crate::util::metric(&d, "sqlite", "ops").unwrap() > 100.0);
    assert!(entries(&target).is_empty());
    let tiny = crate::util::script(dir.path(), "tiny.rhai", "trace::replay(\"missing.trace\");");
    let r = plumb(dir.path(), &["run", &tiny, "--target", "target"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("missing.trace"), "{}", r.stderr);
}

// ---- Hostile traces, logs and signals (issue 11) ----

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Fails (does not skip) when a tool the test needs is missing.
fn require(tool: &str) {
    let ok = Command::new(tool)
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "{tool} is not installed: apt-get install {tool}");
}

/// Starts `plumb ARGS` in `dir`, waits for `marker` on its stderr, and
/// returns the child and a channel that yields its whole stderr at the end.
pub(crate) fn start_until(
    dir: &Path,
    args: &[&str],
    marker: &str,
) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(plumb_bin())
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start plumb");
    let stderr = child.stderr.take().unwrap();
    let (seen_tx, seen_rx) = mpsc::channel();
    let (all_tx, all_rx) = mpsc::channel();
    let marker = marker.to_string();
    std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains(&marker) {
                let _ = seen_tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        let _ = all_tx.send(all);
    });
    assert!(
        seen_rx.recv_timeout(Duration::from_secs(60)).is_ok(),
        "no '{}' on stderr",
        args.join(" ")
    );
    (child, all_rx)
}

/// Sends `signal` (`-INT`, `-TERM`) and returns (exit code, seconds to exit, stderr).
pub(crate) fn signal_and_wait(
    mut child: Child,
    stderr: mpsc::Receiver<String>,
    signal: &str,
) -> (i32, f64, String) {
    let sent = Instant::now();
    let ok = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let status = child.wait().unwrap();
    let took = sent.elapsed().as_secs_f64();
    let text = stderr
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_default();
    (status.code().unwrap_or(-1), took, text)
}

fn write_trace(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn hostile_sizes_and_speeds_are_refused_before_anything_is_written() {
    let dir = workdir();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let head = "plumb-trace 1\nduration_us 10\nfile 0 - a\nfile 1 - b\nthread 0 1\n";
    // Past any file size: refused by the parser, naming the record.
    write_trace(
        dir.path(),
        "huge.trace",
        &format!(
            "{head}op 0 0 1 open 0 0 w,creat\nop 0 1 1 ftruncate 0 9223372036854775807\nend 2\n"
        ),
    );
    // Each within bounds, together more than any disk here: the estimate
    // adds without overflowing and the free-space check refuses it.
    let two = format!("{head}op 0 0 1 open 0 0 w,creat\nop 0 1 1 ftruncate 0 1125899906842624\nop 0 2 1 open 1 1 w,creat\nop 0 3 1 ftruncate 1 1125899906842624\nend 4\n");
    write_trace(dir.path(), "two.trace", &two);
    let cases: [(&[&str], &str); 5] = [
        (&["huge.trace"], "huge.trace:7:"),
        (&["two.trace"], "may write"),
        (&["two.trace", "--speed", "1e-300"], "--speed"),
        (&["two.trace", "--speed", "NaN"], "--speed"),
        (&["two.trace", "--threads", "7"], "--threads"),
    ];
    for (args, what) in cases {
        let mut all = vec!["trace", "replay", "--target", "target"];
        all.extend_from_slice(args);
        let t = Instant::now();
        let r = plumb(dir.path(), &all);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(what), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(t.elapsed() < Duration::from_secs(5));
    }
    assert!(entries(&dir.path().join("target")).is_empty());
    // As pack data under max_bytes = "1M": refused by the budget, nothing written.
    let pack = dir.path().join("big");
    std::fs::create_dir(&pack).unwrap();
    std::fs::write(
        pack.join("pack.toml"),
        "name = \"big\"\nscenarios = [\"s.rhai\"]\ndata = [\"two.trace\"]\n\n[capabilities]\nmax_bytes = \"1M\"\n",
    )
    .unwrap();
    std::fs::write(pack.join("two.trace"), &two).unwrap();
    std::fs::write(
        pack.join("s.rhai"),
        "trace::replay(\"two.trace\", #{ speed: \"max\" });\n",
    )
    .unwrap();
    let (r, target) = crate::util::run_scripts(dir.path(), &["big"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("byte budget"), "{}", r.stderr);
    assert!(entries(&target).is_empty(), "{:?}", entries(&target));
}

/// A trace of `n` threads, each opening, writing and closing its own file.
fn threaded_trace(n: usize) -> String {
    let mut t = String::from("plumb-trace 1\nduration_us 100\n");
    for i in 0..n {
        t.push_str(&format!("file {i} - f{i}\n"));
    }
    for i in 0..n {
        t.push_str(&format!("thread {i} {}\n", 1000 + i));
    }
    for i in 0..n {
        t.push_str(&format!("op {i} 0 1 open {i} {i} w,creat\n"));
    }
    for i in 0..n {
        t.push_str(&format!("op {i} 1 1 pwrite {i} 0 100\n"));
    }
    for i in 0..n {
        t.push_str(&format!("op {i} 2 1 close {i}\n"));
    }
    t.push_str(&format!("end {}\n", n * 3));
    t
}

#[test]
fn thread_counts_are_bounded_and_the_packs_threads_are_checked() {
    let dir = workdir();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    write_trace(dir.path(), "many.trace", &threaded_trace(2000));
    let t = Instant::now();
    let r = plumb(
        dir.path(),
        &["trace", "replay", "many.trace", "--target", "target"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("more than 512 threads"), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"));
    assert!(t.elapsed() < Duration::from_secs(10));
    // Within the bound, the replay runs them all.
    write_trace(dir.path(), "ok.trace", &threaded_trace(64));
    let r = plumb(
        dir.path(),
        &[
            "trace", "replay", "ok.trace", "--target", "target", "--speed", "max",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // A pack that declares one thread may not replay 64.
    let pack = dir.path().join("one");
    std::fs::create_dir(&pack).unwrap();
    std::fs::write(
        pack.join("pack.toml"),
        "name = \"one\"\nscenarios = [\"s.rhai\"]\ndata = [\"ok.trace\"]\n\n[capabilities]\nthreads = 1\n",
    )
    .unwrap();
    std::fs::write(pack.join("ok.trace"), threaded_trace(64)).unwrap();
    std::fs::write(
        pack.join("s.rhai"),
        "let r = trace::replay(\"ok.trace\", #{ speed: \"max\", threads: 1 });\n\
         report::metric(\"ops\", r.total_ops, \"\", \"higher\");\n\
         trace::replay(\"ok.trace\", #{ speed: \"max\" });\n",
    )
    .unwrap();
    let (r, target) = crate::util::run_scripts(dir.path(), &["one"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("64 threads"), "{}", r.stderr);
    assert!(entries(&target).is_empty());
}

#[test]
fn think_time_and_lay_out_stop_at_the_deadline_and_on_signals() {
    let dir = workdir();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    // An hour of think time between two writes.
    write_trace(
        dir.path(),
        "sleepy.trace",
        "plumb-trace 1\nduration_us 3600000010\nfile 0 - a\nthread 0 1\nop 0 0 1 open 0 0 w,creat\nop 0 1 1 pwrite 0 0 4096\nop 0 3600000000 1 pwrite 0 4096 4096\nop 0 3600000005 1 close 0\nend 4\n",
    );
    let t = Instant::now();
    let r = plumb(
        dir.path(),
        &[
            "trace",
            "replay",
            "sleepy.trace",
            "--target",
            "target",
            "--timeout",
            "1s",
            "--json",
            "s.json",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("deadline"), "{}", r.stderr);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let doc = crate::trace_results::replayed(&dir.path().join("s.json"));
    assert_eq!(doc["halted"], "deadline", "{doc}");
    assert!(
        doc["total_ops"].as_u64().unwrap() >= 2,
        "what was measured is kept: {doc}"
    );
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let (child, err) = start_until(
            dir.path(),
            &["trace", "replay", "sleepy.trace", "--target", "target"],
            "replaying",
        );
        let (got, took, text) = signal_and_wait(child, err, signal);
        assert_eq!(got, code, "{signal}: {text}");
        assert!(took < 2.0, "{signal} took {took} s");
        assert!(!text.contains("panicked"), "{text}");
    }
    // Laying out a large file stops on a signal too.
    write_trace(
        dir.path(),
        "large.trace",
        "plumb-trace 1\nduration_us 10\nfile 0 17179869184 big.dat\nthread 0 1\nop 0 0 1 stat 0\nend 1\n",
    );
    let (child, err) = start_until(
        dir.path(),
        &["trace", "replay", "large.trace", "--target", "target"],
        "replaying",
    );
    let (got, took, text) = signal_and_wait(child, err, "-TERM");
    assert_eq!(got, 143, "{text}");
    assert!(took < 2.0, "took {took} s");
    assert!(entries(&dir.path().join("target")).is_empty());
}

/// A small ext4 file system mounted on a loop device, unmounted when dropped.
struct LoopFs {
    mount: std::path::PathBuf,
}

impl LoopFs {
    fn new(dir: &Path) -> LoopFs {
        let img = dir.join("fs.img");
        let mount = dir.join("mnt");
        std::fs::create_dir(&mount).unwrap();
        succeed(Command::new("truncate").args(["-s", "64M"]).arg(&img));
        succeed(Command::new("mkfs.ext4").arg("-q").arg(&img));
        succeed(
            Command::new("mount")
                .args(["-o", "loop"])
                .arg(&img)
                .arg(&mount),
        );
        LoopFs { mount }
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
    }
}

#[test]
fn a_replay_of_more_files_than_the_disk_holds_is_refused_before_it_starts() {
    let dir = workdir();
    let fs = LoopFs::new(dir.path());
    // 20,000 new empty files: each costs an inode and a block, 80 MiB on a
    // 64 MiB file system (before, the estimate counted no metadata, and the
    // replay ran until the disk filled).
    let n = 20_000;
    let mut t = String::from("plumb-trace 1\nduration_us 100\n");
    for i in 0..n {
        t.push_str(&format!("file {i} - d/f{i}\n"));
    }
    t.push_str("thread 0 1\n");
    for i in 0..n {
        t.push_str(&format!(
            "op 0 {i} 1 open {i} {i} w,creat\nop 0 {i} 1 close {i}\n"
        ));
    }
    t.push_str(&format!("end {}\n", 2 * n));
    write_trace(dir.path(), "full.trace", &t);
    let target = fs.mount.display().to_string();
    let r = plumb(
        dir.path(),
        &[
            "trace",
            "replay",
            "full.trace",
            "--speed",
            "max",
            "--target",
            &target,
        ],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("for 20001 inode(s)"), "{}", r.stderr);
    let left: Vec<String> = entries(&fs.mount)
        .into_iter()
        .filter(|e| e != "lost+found")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_replay_that_fills_the_disk_exits_1_saying_so() {
    let dir = workdir();
    let fs = LoopFs::new(dir.path());
    // The replay fits the free space; another process takes it while the
    // replay waits its recorded 3 s before the second write.
    let t = "plumb-trace 1\nduration_us 3000100\nfile 0 - a\nfile 1 - b\nthread 0 1\n\
             op 0 0 1 open 0 0 w,creat\nop 0 1 1 pwrite 0 0 65536\nop 0 2 1 close 0\n\
             op 0 3000000 1 open 1 1 w,creat\nop 0 3000001 1 pwrite 1 0 8388608\nop 0 3000002 1 close 1\nend 6\n";
    write_trace(dir.path(), "full.trace", t);
    let target = fs.mount.display().to_string();
    let (mut child, stderr) = start_until(
        dir.path(),
        &[
            "trace",
            "replay",
            "full.trace",
            "--target",
            &target,
            "--json",
            "f.json",
        ],
        "replaying",
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let written = || {
        entries(&fs.mount)
            .iter()
            .filter(|e| e.starts_with("plumb-run-") && !e.ends_with(".owner"))
            .any(|r| {
                fs.mount
                    .join(r)
                    .join("a")
                    .metadata()
                    .is_ok_and(|m| m.len() == 65536)
            })
    };
    while !written() {
        assert!(Instant::now() < deadline, "the first write never came");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Take every free byte.
    let mut filler = std::fs::File::create(fs.mount.join("filler")).unwrap();
    let chunk = vec![0u8; 1 << 20];
    while std::io::Write::write_all(&mut filler, &chunk).is_ok() {}
    let _ = std::io::Write::flush(&mut filler);
    let status = child.wait().unwrap();
    let err = stderr.recv_timeout(Duration::from_secs(10)).unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    std::fs::remove_file(fs.mount.join("filler")).unwrap();
    assert_eq!(status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("disk filled up"), "{err}");
    assert!(out.contains("open"), "the figures are printed: {out}");
    let doc = crate::trace_results::replayed(&dir.path().join("f.json"));
    assert_eq!(doc["halted"], "host/os", "{doc}");
    let left: Vec<String> = entries(&fs.mount)
        .into_iter()
        .filter(|e| e != "lost+found")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Writes a little, says so on stderr, then waits a minute.
const WAITER: &str = r#"
import os, sys, time
fd = os.open("w.dat", os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, b"x" * 4096, 0)
os.fsync(fd)
print("ready", file=sys.stderr, flush=True)
time.sleep(60)
"#;

#[test]
fn record_stops_the_command_on_signals_and_keeps_the_trace() {
    require("strace");
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let dir = workdir();
        std::fs::write(dir.path().join("prog.py"), WAITER).unwrap();
        let (child, err) = start_until(
            dir.path(),
            &[
                "trace",
                "record",
                "-o",
                "w.trace",
                "--no-calibrate",
                "--",
                "python3",
                "prog.py",
            ],
            "ready",
        );
        let (got, took, text) = signal_and_wait(child, err, signal);
        assert_eq!(got, code, "{signal}: {text}");
        assert!(took < 5.0, "{signal}: took {took} s");
        assert!(!text.contains("panicked"), "{text}");
        let left = entries(dir.path());
        assert!(
            !left.iter().any(|e| e.contains(".strace-")),
            "the strace log is removed: {left:?}"
        );
        let show = plumb(dir.path(), &["trace", "show", "w.trace", "--json"]);
        assert_eq!(show.code, 0, "{}", show.stderr);
        assert_eq!(show.json()["by_op"]["pwrite"][0], 1, "{}", show.stdout);
        // The traced command is gone.
        let ps = Command::new("pgrep")
            .args(["-f", "prog.py"])
            .output()
            .unwrap();
        let alive = String::from_utf8_lossy(&ps.stdout).into_owned();
        for pid in alive.split_whitespace() {
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
            assert!(
                cwd.as_deref() != Some(dir.path()),
                "prog.py {pid} still runs"
            );
        }
    }
}

#[test]
fn record_of_a_failing_or_missing_command_says_so_and_claims_nothing() {
    require("strace");
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &[
            "trace",
            "record",
            "-o",
            "n.trace",
            "--",
            "plumb-no-such-command",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("plumb-no-such-command"), "{}", r.stderr);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    std::fs::write(
        dir.path().join("fail.py"),
        "import os, sys\nfd = os.open('x.dat', os.O_WRONLY | os.O_CREAT, 0o644)\nos.write(fd, b'abc')\nos.close(fd)\nsys.exit(3)\n",
    )
    .unwrap();
    let r = plumb(
        dir.path(),
        &[
            "trace", "record", "-o", "f.trace", "--", "python3", "fail.py",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("exited with status 3"), "{}", r.stderr);
    let show = plumb(dir.path(), &["trace", "show", "f.trace", "--json"]);
    assert_eq!(show.json()["by_op"]["write"][0], 1, "{}", show.stdout);
    // Nothing under the root (python reads quiet.py itself, so the root is
    // an empty directory): no trace is written.
    std::fs::write(dir.path().join("quiet.py"), "import sys\nsys.exit(4)\n").unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let r = plumb(
        dir.path(),
        &[
            "trace", "record", "-o", "q.trace", "--root", "empty", "--", "python3", "quiet.py",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        !dir.path().join("q.trace").exists(),
        "an empty trace is not written"
    );
    assert!(!entries(dir.path()).iter().any(|e| e.contains(".strace-")));
}

#[test]
fn hostile_strace_logs_and_iologs_are_refused_by_line() {
    let dir = workdir();
    let ok = "100 1.000000 openat(AT_FDCWD</tmp>, \"a\", O_RDONLY) = 3</tmp/a> <0.000010>\n";
    let cases = [
        (
            "nan.log",
            format!("{ok}100 NaN read(3</tmp/a>, \"\"..., 10) = 10 <0.000001>\n"),
            "nan.log:2:",
        ),
        (
            "long.log",
            format!("{ok}100 1.1 {}\n", "x".repeat(1 << 20)),
            "long.log:2:",
        ),
        (
            "quote.log",
            format!("{ok}100 1.2 openat(AT_FDCWD</tmp>, \"a, O_RDONLY) = 3 <0.1>\n"),
            "quote.log:2:",
        ),
        (
            "deep.log",
            format!("{ok}100 1.3 clone3({}) = 5 <0.1>\n", "{".repeat(60_000)),
            "deep.log:2:",
        ),
        (
            "huge.log",
            format!(
                "{ok}100 1.4 pread64(3</tmp/a>, \"\"..., 10, 9223372036854775000) = 10 <0.1>\n"
            ),
            "huge.log:2:",
        ),
        (
            "dur.log",
            format!("{ok}100 1.5 read(3</tmp/a>, \"\"..., 10) = 10 <1e300>\n"),
            "dur.log:2:",
        ),
    ];
    for (name, text, place) in cases {
        std::fs::write(dir.path().join(name), text).unwrap();
        let r = plumb(
            dir.path(),
            &[
                "trace", "import", name, "-o", "x.trace", "--root", "/tmp", "--cwd", "/tmp",
            ],
        );
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(r.stderr.contains(place), "{name}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{name}: {}", r.stderr);
        assert!(!dir.path().join("x.trace").exists(), "{name}");
    }
    std::fs::write(
        dir.path().join("bad.iolog"),
        "fio version 2 iolog\n/d/f add\n/d/f read 18446744073709551615 4096\n",
    )
    .unwrap();
    let r = plumb(
        dir.path(),
        &[
            "trace",
            "import",
            "--fio-iolog",
            "bad.iolog",
            "-o",
            "x.trace",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("bad.iolog:3:"), "{}", r.stderr);
}
