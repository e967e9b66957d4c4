//! Limits that hold whatever starts the work: the run's thread cap and
//! thread starts the system refuses, compiling under the scenario's limits,
//! and result documents written within what their readers accept.

use crate::util::{entries, plumb, plumb_bin, run_scripts, script, to_run, workdir, Run};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Text a crash leaves: no limit may end in one.
const CRASH: &[&str] = &[
    "panicked",
    "RUST_BACKTRACE",
    "fatal runtime error",
    "core dumped",
];

fn no_crash(r: &Run) {
    for c in CRASH {
        assert!(!r.stderr.contains(c), "crash text {c:?}:\n{}", r.stderr);
    }
}

/// Threads the user `uid` has now (every task of its processes).
fn tasks_of(uid: u32) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .filter(|p| p.metadata().is_ok_and(|m| m.uid() == uid))
        .filter_map(|p| std::fs::read_dir(p.path().join("task")).ok())
        .map(|t| t.count() as u64)
        .sum()
}

/// Runs `plumb ARGS` in `dir` able to start only about `threads` more
/// threads: under `RLIMIT_NPROC`, as `nobody` when the tests run as root
/// (whom the kernel does not hold to it). Kills it after `limit` (a hang).
fn plumb_with_few_threads(dir: &Path, args: &[&str], threads: u64, limit: Duration) -> Run {
    // SAFETY: getuid has no preconditions.
    let root = unsafe { libc::getuid() } == 0;
    let (uid, gid) = if root {
        (65534, 65534)
    } else {
        // SAFETY: as above.
        unsafe { (libc::getuid(), libc::getgid()) }
    };
    let nproc = tasks_of(uid) + threads;
    let mut cmd = Command::new(plumb_bin());
    cmd.args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let l = libc::rlimit {
                rlim_cur: nproc,
                rlim_max: nproc,
            };
            if libc::setrlimit(libc::RLIMIT_NPROC, &l) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if root
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(uid) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("start plumb");
    let pid = child.id() as libc::pid_t;
    let started = Instant::now();
    let waiter = std::thread::spawn(move || child.wait_with_output());
    while !waiter.is_finished() {
        if started.elapsed() > limit {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let out = waiter.join().unwrap().unwrap();
            panic!(
                "plumb hung past {limit:?} with few threads:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = waiter.join().unwrap().expect("wait for plumb");
    assert_eq!(
        out.status.signal(),
        None,
        "plumb died by a signal:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    to_run(out)
}

#[test]
fn a_thread_the_system_refuses_ends_the_scenario_with_an_error_not_a_panic_or_a_hang() {
    let dir = workdir();
    // The user the run drops to must reach the scenario and the target.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o777)).unwrap();
    // The loopback peer and 16 streams, each with a peer thread: far more
    // threads than the process may start.
    script(
        dir.path(),
        "streams.rhai",
        "let peer = net::local_peer();\nnet::throughput(#{ addr: peer, streams: 16, duration: 1 });\n",
    );
    let r = plumb_with_few_threads(
        dir.path(),
        &[
            "run",
            "streams.rhai",
            "--target",
            target.to_str().unwrap(),
            "--timeout",
            "10s",
            // Above what the process may start: the system refuses first.
            "--max-threads",
            "1000",
        ],
        12,
        Duration::from_secs(30),
    );
    no_crash(&r);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("the system refused a new thread"),
        "{}",
        r.stderr
    );
    assert!(entries(&target).is_empty(), "left {:?}", entries(&target));
}

#[test]
fn a_group_past_the_thread_cap_is_refused_before_it_lays_anything_out() {
    let dir = workdir();
    // 64 jobs of 4096 clones: 262,144 threads.
    script(
        dir.path(),
        "group.rhai",
        r#"let jobs = [];
for i in 0..64 {
    jobs.push(#{ name: "j" + i, rw: "read", bs: "4k", size: "4k", numjobs: "4096" });
}
io::group(jobs);
"#,
    );
    let started = Instant::now();
    let (r, target) = run_scripts(dir.path(), &["group.rhai", "--timeout", "20s"]);
    assert!(started.elapsed() < Duration::from_secs(20));
    no_crash(&r);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("262144 more thread(s)") && r.stderr.contains("--max-threads"),
        "{}",
        r.stderr
    );
    assert!(entries(&target).is_empty(), "left {:?}", entries(&target));
}

#[test]
fn max_threads_sets_the_cap_for_every_kind_of_work() {
    let dir = workdir();
    script(
        dir.path(),
        "cpu.rhai",
        "cpu::run(#{ kernel: \"prime\", threads: 3, duration: 0.2 });\n",
    );
    let (r, target) = run_scripts(dir.path(), &["cpu.rhai", "--max-threads", "3"]);
    // The script's own thread holds one of the three.
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("cap of 3 threads"), "{}", r.stderr);
    assert!(entries(&target).is_empty());
    let (r, _) = run_scripts(dir.path(), &["cpu.rhai", "--max-threads", "4"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// A valid script of about `bytes` bytes that does nothing when it runs:
/// whatever it costs, it costs while compiling.
fn long_script(bytes: usize) -> String {
    let mut s = String::from("if false {\n");
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(&format!("    [1, 2, 3].len() + #{{a: {i}}}.a * (4 + 5);\n"));
        i += 1;
    }
    s + "}\n"
}

#[test]
fn a_source_past_the_size_limit_is_refused_before_compiling() {
    let dir = workdir();
    script(dir.path(), "huge.rhai", &long_script(8 << 20));
    let started = Instant::now();
    let (r, target) = run_scripts(dir.path(), &["huge.rhai", "--timeout", "1s"]);
    no_crash(&r);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("more than the 256KiB a script may be"),
        "{}",
        r.stderr
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(entries(&target).is_empty());
}

#[test]
fn compiling_is_held_to_the_scenario_memory_and_deadline() {
    let dir = workdir();
    script(dir.path(), "long.rhai", &long_script(200 << 10));
    let (r, target) = run_scripts(dir.path(), &["long.rhai", "--scenario-memory", "2M"]);
    no_crash(&r);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("compiling the script went over its memory limit of 2048KiB"),
        "{}",
        r.stderr
    );
    assert!(entries(&target).is_empty());
    let (r, _) = run_scripts(dir.path(), &["long.rhai", "--timeout", "20ms"]);
    no_crash(&r);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("compiling the script ran past its deadline"),
        "{}",
        r.stderr
    );
    // Within the limits it compiles and runs.
    let (r, _) = run_scripts(dir.path(), &["long.rhai"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_component_past_the_size_limit_is_refused_before_compiling() {
    let dir = workdir();
    let mut bytes = b"\0asm\x0d\0\x01\0".to_vec();
    bytes.resize(17 << 20, 0);
    std::fs::write(dir.path().join("huge.wasm"), bytes).unwrap();
    let r = plumb(dir.path(), &["check", "huge.wasm"]);
    no_crash(&r);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("more than the 16MiB a component may be"),
        "{}",
        r.stderr
    );
}

#[test]
fn run_refuses_the_metric_that_would_make_its_result_file_unreadable() {
    let dir = workdir();
    // 11 scenarios of 10,000 metrics: 110,000, past the 100,000 a result
    // document may hold.
    let names: Vec<String> = (0..11).map(|i| format!("\"s{i}.rhai\"")).collect();
    let mut files = Vec::new();
    for i in 0..11 {
        files.push((
            format!("s{i}.rhai"),
            "for i in 0..10000 { report::metric(\"m\" + i, 1.0, \"u\", \"higher\"); }\n"
                .to_string(),
        ));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let pack = crate::util::pack_folder(
        dir.path(),
        "many",
        &format!("name = \"many\"\nscenarios = [{}]\n", names.join(", ")),
        &files,
    );
    let json = dir.path().join("out.json");
    let (r, target) = run_scripts(
        dir.path(),
        &[pack.to_str().unwrap(), "--json", json.to_str().unwrap()],
    );
    no_crash(&r);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the result document already holds 100000 metrics"),
        "{}",
        r.stderr
    );
    assert!(entries(&target).is_empty());
    // What was written, every reader accepts.
    let c = plumb(
        dir.path(),
        &[
            "compare",
            json.to_str().unwrap(),
            json.to_str().unwrap(),
            "--format",
            "csv",
        ],
    );
    assert_eq!(c.code, 0, "{}", c.stderr);
}
