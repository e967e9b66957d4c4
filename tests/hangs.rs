//! No panics, aborts or unkillable hangs: out-of-range counts are errors
//! naming the option, a worker that cannot start or fails ends its run, long
//! host operations end at the deadline, and signals end plumb promptly.

use crate::util::{plumb, plumb_bin, run_scripts, script, workdir, Run};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `plumb ARGS` in `dir` and returns the run and how long it took.
fn timed(dir: &std::path::Path, args: &[&str]) -> (Run, Duration) {
    let t = Instant::now();
    let r = plumb(dir, args);
    (r, t.elapsed())
}

/// A clear failure: the expected exit code, `needle` in stderr, no panic text.
fn assert_clear_failure(r: &Run, code: i32, needle: &str, what: &str) {
    assert_eq!(r.code, code, "{what}: {}", r.stderr);
    assert!(
        r.stderr.contains(needle),
        "{what}: {needle:?} not in {}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{what}: {}", r.stderr);
}

#[test]
fn out_of_range_counts_and_distributions_are_errors_naming_the_option() {
    let dir = workdir();
    for (arg, needle) in [
        (
            "--numjobs=4294967296",
            "numjobs': 4294967296 is out of range (1..=4096)",
        ),
        ("--numjobs=1000000", "numjobs"),
        ("--numjobs=0", "numjobs"),
        (
            "--iodepth=4294967297",
            "iodepth': 4294967297 is out of range (1..=65536)",
        ),
        ("--iodepth=100000000", "iodepth"),
        ("--nrfiles=4294967296", "nrfiles"),
        ("--loops=4294967296", "loops"),
        ("--fsync=4294967296", "fsync"),
        ("--random_distribution=zipf:nan", "random_distribution"),
        ("--random_distribution=zipf:inf", "random_distribution"),
        ("--random_distribution=pareto:nan", "random_distribution"),
        ("--random_distribution=normal:nan", "random_distribution"),
    ] {
        let (r, took) = timed(
            dir.path(),
            &[
                "fio",
                "--name=x",
                "--ioengine=null",
                "--rw=randread",
                "--size=1M",
                arg,
            ],
        );
        assert_clear_failure(&r, 2, needle, arg);
        assert!(took < Duration::from_secs(5), "{arg} took {took:?}");
    }
}

#[test]
fn io_buffers_beyond_the_limit_are_refused_before_any_thread_starts() {
    let dir = workdir();
    let (r, took) = timed(
        dir.path(),
        &[
            "fio",
            "--name=x",
            "--ioengine=null",
            "--rw=read",
            "--size=1G",
            "--bs=1G",
            "--iodepth=1024",
        ],
    );
    assert_clear_failure(&r, 2, "I/O buffers", "bs=1G iodepth=1024");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

/// uid and gid of `nobody`, which (unlike root) is held to RLIMIT_NPROC.
const NOBODY: u32 = 65534;

#[test]
fn threads_beyond_the_process_limit_end_the_run_with_an_error() {
    use std::os::unix::process::CommandExt;
    let dir = workdir();
    // Any directory nobody may enter: the null engine touches no file.
    let mut cmd = Command::new(plumb_bin());
    cmd.args([
        "fio",
        "--name=many",
        "--ioengine=null",
        "--rw=read",
        "--size=1M",
        // Time-based, so that started jobs are still running when the 33rd
        // thread is asked for (1 MiB of null I/O can end before the next
        // thread starts, and then the limit is never reached).
        "--time_based",
        "--runtime=5s",
        "--numjobs=1000",
    ])
    .current_dir("/")
    .env("HOME", dir.path());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc_rlimit { cur: 32, max: 32 };
            if setrlimit(RLIMIT_NPROC, &limit) != 0
                || setgroups(0, std::ptr::null()) != 0
                || setgid(NOBODY) != 0
                || setuid(NOBODY) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let t = Instant::now();
    let out = cmd
        .output()
        .expect("run plumb as nobody with RLIMIT_NPROC=32");
    let took = t.elapsed();
    let r = crate::util::to_run(out);
    // The run's thread cap follows the process limit (half of it), so the
    // job is refused before its first thread, naming the cap, once.
    assert_clear_failure(
        &r,
        1,
        "would pass its cap of 16 threads at once (rule: --max-threads",
        "numjobs=1000 under nproc=32",
    );
    assert_eq!(
        r.stderr.matches("plumb fio: job 'many' failed").count(),
        1,
        "one line for the job, not one per clone: {}",
        r.stderr
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[repr(C)]
struct libc_rlimit {
    cur: u64,
    max: u64,
}

const RLIMIT_NPROC: i32 = 6;

extern "C" {
    fn setrlimit(resource: i32, rlim: *const libc_rlimit) -> i32;
    fn setgroups(size: usize, list: *const u32) -> i32;
    fn setgid(gid: u32) -> i32;
    fn setuid(uid: u32) -> i32;
}

/// Starts `plumb ARGS` in `dir`, waits for `marker` on its stderr, sends
/// SIGTERM and returns its exit code, stderr and how long it took to exit.
fn terminate_after(dir: &std::path::Path, args: &[&str], marker: &str) -> (i32, String, Duration) {
    let mut child = Command::new(plumb_bin())
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start plumb");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = err.read_line(&mut line).expect("read stderr");
        assert!(n > 0, "plumb ended before {marker:?}:\n{seen}");
        seen.push_str(&line);
        if line.contains(marker) {
            break;
        }
    }
    let sent = Instant::now();
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(ok.success());
    err.read_to_string(&mut seen).unwrap();
    let status = child.wait().unwrap();
    (status.code().unwrap_or(-1), seen, sent.elapsed())
}

#[test]
fn sigterm_ends_a_long_fio_run_within_two_seconds() {
    let dir = workdir();
    let (code, err, took) = terminate_after(
        dir.path(),
        &[
            "fio",
            "--name=long",
            "--ioengine=null",
            "--rw=randread",
            "--size=64M",
            "--time_based",
            "--runtime=1h",
            "--numjobs=4",
        ],
        "elapsed",
    );
    assert_eq!(code, 143, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
}

#[test]
fn sigterm_ends_a_long_host_operation_within_two_seconds() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "lat.rhai",
        r#"print("started"); mem::latency(#{ min_size: "64M", max_size: "256M", time_per_size: 60 });"#,
    );
    let target = dir.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let (code, err, took) = terminate_after(
        dir.path(),
        &["run", "--target", target.to_str().unwrap(), &s],
        "started",
    );
    assert_eq!(code, 143, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
}

/// Runs a one-line scenario under `--timeout 2s`: it must fail clearly (exit
/// 1, the deadline named) within the deadline plus 2 s.
fn past_the_deadline(name: &str, body: &str) {
    let dir = workdir();
    let s = script(dir.path(), &format!("{name}.rhai"), body);
    let t = Instant::now();
    let (r, _) = run_scripts(dir.path(), &[&s, "--timeout", "2s"]);
    let took = t.elapsed();
    assert_clear_failure(&r, 1, "deadline", name);
    assert!(took < Duration::from_secs(4), "{name} took {took:?}");
}

#[test]
fn a_sleep_of_any_length_ends_at_the_deadline() {
    // The three at once: each only sleeps.
    std::thread::scope(|s| {
        for (name, body) in [
            ("sleep19", "time::sleep(1e19);"),
            ("sleep20", "time::sleep(1e20);"),
            ("sleep300", "time::sleep(1e300);"),
        ] {
            s.spawn(move || past_the_deadline(name, body));
        }
    });
}

#[test]
fn long_memory_and_cpu_operations_end_at_the_deadline() {
    past_the_deadline(
        "latency",
        r#"mem::latency(#{ min_size: "1M", max_size: "512M", time_per_size: 30 });"#,
    );
    past_the_deadline(
        "bandwidth",
        r#"mem::bandwidth(#{ block_size: "1G", total_size: "1000G", duration: 60 });"#,
    );
    past_the_deadline(
        "matmul",
        r#"cpu::run(#{ kernel: "matmul", n: 1024, threads: 2, duration: 60 });"#,
    );
}

#[test]
fn oversized_cpu_and_memory_requests_are_refused_at_once() {
    let dir = workdir();
    for (name, body, needle) in [
        (
            "matmul",
            r#"cpu::run(#{ kernel: "matmul", n: 8192, duration: 1 });"#,
            "1024",
        ),
        (
            "prime",
            r#"cpu::run(#{ kernel: "prime", cpu_max_prime: 100000000, duration: 1 });"#,
            "cpu_max_prime",
        ),
        (
            "sha",
            r#"cpu::run(#{ kernel: "sha256", buffer: "64M", threads: 1024, duration: 1 });"#,
            "available memory",
        ),
        (
            "copy",
            r#"mem::bandwidth(#{ oper: "copy", block_size: "1G", threads: 1024, scope: "local", duration: 1 });"#,
            "available memory",
        ),
        (
            "latency",
            r#"mem::latency(#{ max_size: "1T" });"#,
            "available memory",
        ),
    ] {
        let s = script(dir.path(), &format!("{name}.rhai"), body);
        let t = Instant::now();
        let (r, _) = run_scripts(dir.path(), &[&s]);
        assert_ne!(r.code, 0, "{name}: {}", r.stderr);
        assert!(
            r.stderr.contains(needle),
            "{name}: {needle:?} not in {}",
            r.stderr
        );
        assert!(!r.stderr.contains("panicked"), "{name}: {}", r.stderr);
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{name} took {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn deeply_nested_values_never_abort() {
    for (name, body) in [
        ("arrays", "let a = []; for i in 0..50000 { a = [a]; }"),
        ("maps", "let m = #{}; for i in 0..50000 { m = #{ x: m }; }"),
        (
            "print",
            "let a = []; for i in 0..20000 { a = [a]; } print(a.len()); let s = `${a}`;",
        ),
    ] {
        let dir = workdir();
        let s = script(dir.path(), &format!("{name}.rhai"), body);
        let t = Instant::now();
        let (r, _) = run_scripts(dir.path(), &[&s, "--timeout", "4s"]);
        let took = t.elapsed();
        assert!(
            r.code == 0 || r.code == 1,
            "{name}: exit {} {}",
            r.code,
            r.stderr
        );
        assert!(!r.stderr.contains("panicked"), "{name}: {}", r.stderr);
        assert!(!r.stderr.contains("overflow"), "{name}: {}", r.stderr);
        // The deadline is 4 s (Rhai copies the whole value at each level, so
        // about 10,000 levels are reached by then in a debug build, 8,000
        // taking 2.5 s and 12,000 5.8 s: deep enough that a recursive drop,
        // copy or print walks 10,000 frames);
        // Rhai's own deep copy does not poll the deadline, which costs up to
        // a few seconds past it (a gap written in issue 11's closing note),
        // more beside the parallel tests. No abort is the property here.
        assert!(took < Duration::from_secs(12), "{name} took {took:?}");
    }
}

#[test]
fn a_long_rtt_ends_at_the_deadline() {
    let dir = workdir();
    let mut peer = Command::new(plumb_bin())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start plumb serve");
    let addr = crate::util::serve_address(&mut peer);
    let s = script(
        dir.path(),
        "rtt.rhai",
        r#"net::rtt(#{ addr: param("peer", ""), count: 1000000000, interval: 0.001 });"#,
    );
    let p = format!("peer={addr}");
    let t = Instant::now();
    let (r, _) = run_scripts(
        dir.path(),
        &[&s, "-p", &p, "--allow-net", &addr, "--timeout", "2s"],
    );
    let took = t.elapsed();
    let _ = peer.kill();
    let _ = peer.wait();
    assert_clear_failure(&r, 1, "deadline", "rtt");
    assert!(took < Duration::from_secs(4), "rtt took {took:?}");
}
