//! fio's placement and buffer options, checked on what they do: the bytes
//! written (against fio's own files where fio's content is deterministic,
//! against compressors and a duplicate count where it is not) and where
//! the job threads run (`/proc`, `ioprio_get`).

use crate::util::{plumb, require_tool, workdir};
use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `plumb fio ARGS` in `dir` and requires exit 0.
fn plumb_fio(dir: &Path, args: &[&str]) {
    let mut all = vec!["fio"];
    all.extend_from_slice(args);
    let r = plumb(dir, &all);
    assert_eq!(r.code, 0, "plumb fio {args:?}:\n{}\n{}", r.stdout, r.stderr);
}

/// Runs fio itself with ARGS in `dir`.
fn real_fio(dir: &Path, args: &[&str]) {
    let out = Command::new("fio")
        .args(args)
        .arg("--output=/dev/null")
        .current_dir(dir)
        .output()
        .expect("run fio");
    assert!(
        out.status.success(),
        "fio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The bytes of the file at `dir/name`.
fn bytes(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// 4 KiB blocks of `data` that are not distinct: (blocks, distinct).
fn blocks(data: &[u8]) -> (usize, usize) {
    let all: Vec<&[u8]> = data.chunks(4096).collect();
    let distinct: HashSet<&[u8]> = all.iter().copied().collect();
    (all.len(), distinct.len())
}

/// The share of 4 KiB blocks that repeat an earlier one.
fn dup_share(data: &[u8]) -> f64 {
    let (n, distinct) = blocks(data);
    1.0 - distinct as f64 / n as f64
}

/// How much `zstd -3` shrinks `data` (0: not at all, 1: to nothing).
fn zstd_saving(data: &[u8]) -> f64 {
    let mut child = Command::new("zstd")
        .args(["-3", "-c", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start zstd");
    let mut stdin = child.stdin.take().unwrap();
    let input = data.to_vec();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&input).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    1.0 - out.stdout.len() as f64 / data.len() as f64
}

/// `buffer_pattern` (with fio's implied scramble_buffers=0) and
/// `zero_buffers` write exactly fio's bytes, sequentially and at random
/// offsets, with a block size that is not a whole page too.
#[test]
fn patterns_and_zeros_are_fios_bytes() {
    require_tool("fio", "--version", "fio");
    let dir = workdir();
    let d = dir.path();
    let cases: &[&[&str]] = &[
        &["--buffer_pattern=\"ab\"0x01"],
        &["--buffer_pattern=0xdeadface\"abcd\"-12", "--rw=randwrite"],
        &["--buffer_pattern=-12", "--bs=6k"],
        &["--zero_buffers"],
        &[
            "--zero_buffers",
            "--rw=randwrite",
            "--iodepth=4",
            "--ioengine=libaio",
        ],
    ];
    for case in cases {
        for (who, file) in [("fio", "fio.bin"), ("plumb", "plumb.bin")] {
            let _ = std::fs::remove_file(d.join(file));
            let mut args = vec![
                "--name=p".to_string(),
                format!("--filename={file}"),
                "--size=192k".into(),
                "--bs=4k".into(),
                "--rw=write".into(),
            ];
            args.extend(case.iter().map(|s| s.to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            if who == "fio" {
                real_fio(d, &args);
            } else {
                plumb_fio(d, &args);
            }
        }
        let (f, p) = (bytes(d, "fio.bin"), bytes(d, "plumb.bin"));
        assert_eq!(f.len(), 192 << 10, "{case:?}");
        assert!(f == p, "{case:?}: plumb's file differs from fio's");
    }
    // The pattern is really in it (not two empty files alike).
    assert_eq!(&bytes(d, "plumb.bin")[..4], &[0, 0, 0, 0]);
    plumb_fio(
        d,
        &[
            "--name=p",
            "--filename=x.bin",
            "--size=8k",
            "--rw=write",
            "--buffer_pattern=\"plumb\"",
        ],
    );
    assert_eq!(&bytes(d, "x.bin")[..7], b"plumbpl");
}

/// The default scramble makes every written block unique; without it a
/// one-slot job writes the same block again and again; a refill makes
/// them unique again.
#[test]
fn scramble_and_refill_decide_duplicates() {
    let dir = workdir();
    let d = dir.path();
    let run = |extra: &[&str]| {
        let mut args = vec!["--name=s", "--filename=s.bin", "--size=1m", "--rw=write"];
        args.extend_from_slice(extra);
        plumb_fio(d, &args);
        blocks(&bytes(d, "s.bin"))
    };
    assert_eq!(run(&[]), (256, 256), "default scramble");
    assert_eq!(
        run(&["--scramble_buffers=0"]),
        (256, 1),
        "no scramble, one slot"
    );
    assert_eq!(
        run(&["--scramble_buffers=0", "--refill_buffers"]),
        (256, 256),
        "refill"
    );
    // A pattern in a job that also reads is refilled before each write:
    // what the reads brought into the slot (zeros here) is never written.
    std::fs::write(d.join("s.bin"), vec![0u8; 1 << 20]).unwrap();
    plumb_fio(
        d,
        &[
            "--name=s",
            "--filename=s.bin",
            "--size=1m",
            "--rw=randrw",
            "--buffer_pattern=0x5a",
        ],
    );
    let data = bytes(d, "s.bin");
    let patterned = data
        .chunks(4096)
        .filter(|b| b.iter().all(|&x| x == 0x5a))
        .count();
    let untouched = data
        .chunks(4096)
        .filter(|b| b.iter().all(|&x| x == 0))
        .count();
    assert!(patterned > 50, "only {patterned} blocks hold the pattern");
    assert_eq!(
        patterned + untouched,
        256,
        "a written block holds what was read"
    );
}

/// `buffer_compress_percentage` makes files that zstd shrinks by that
/// much, within 3 points, as fio's do.
#[test]
fn compression_ratio_is_what_was_asked() {
    require_tool("zstd", "--version", "zstd");
    require_tool("fio", "--version", "fio");
    let dir = workdir();
    let d = dir.path();
    for pct in [25, 60, 90] {
        let opt = format!("--buffer_compress_percentage={pct}");
        let common = ["--size=4m", "--bs=4k", "--rw=write", opt.as_str()];
        plumb_fio(
            d,
            &[&["--name=c", "--filename=c.bin"][..], &common[..]].concat(),
        );
        real_fio(
            d,
            &[&["--name=c", "--filename=f.bin"][..], &common[..]].concat(),
        );
        let mine = zstd_saving(&bytes(d, "c.bin"));
        let fios = zstd_saving(&bytes(d, "f.bin"));
        let want = pct as f64 / 100.0;
        assert!((mine - want).abs() < 0.03, "{pct}%: zstd saves {mine:.3}");
        assert!(
            (mine - fios).abs() < 0.02,
            "{pct}%: plumb {mine:.3}, fio {fios:.3}"
        );
    }
}

/// `dedupe_percentage` makes that share of 4 KiB blocks duplicates, in
/// both modes, compressed or not.
#[test]
fn dedupe_share_is_what_was_asked() {
    let dir = workdir();
    let d = dir.path();
    let cases: &[(&[&str], f64)] = &[
        (&["--dedupe_percentage=30"], 0.30),
        (
            &["--dedupe_percentage=60", "--buffer_compress_percentage=50"],
            0.60,
        ),
        (
            &["--dedupe_percentage=40", "--dedupe_mode=working_set"],
            0.40,
        ),
        (&["--dedupe_percentage=0"], 0.0),
    ];
    for (extra, want) in cases {
        let mut args = vec![
            "--name=d",
            "--filename=d.bin",
            "--size=16m",
            "--bs=4k",
            "--rw=write",
        ];
        args.extend_from_slice(extra);
        plumb_fio(d, &args);
        let share = dup_share(&bytes(d, "d.bin"));
        assert!(
            (share - want).abs() < 0.04,
            "{extra:?}: {share:.3} duplicate"
        );
    }
}

/// `dedupe_global`: two jobs draw their duplicates from one working set,
/// so blocks repeat across their files; without it they never do.
#[test]
fn global_dedupe_shares_blocks_between_jobs() {
    let dir = workdir();
    let d = dir.path();
    for global in ["1", "0"] {
        let text = format!(
            "[global]\nsize=8m\nbs=4k\nrw=write\ndedupe_mode=working_set\ndedupe_global={global}\n\
             dedupe_percentage=50\nbuffer_compress_percentage=50\ndedupe_working_set_percentage=50\n[a]\n[b]\n"
        );
        std::fs::write(d.join("g.fio"), text).unwrap();
        plumb_fio(d, &["g.fio"]);
        let (a, b) = (bytes(d, "a.0.0"), bytes(d, "b.0.0"));
        let (_, da) = blocks(&a);
        let (_, db) = blocks(&b);
        let both = [a, b].concat();
        let (n, dboth) = blocks(&both);
        let shared = da + db - dboth;
        if global == "1" {
            assert!(shared > n / 20, "global: only {shared} blocks shared");
            let share = 1.0 - dboth as f64 / n as f64;
            assert!(
                (share - 0.5).abs() < 0.06,
                "global: {share:.3} duplicate over both files"
            );
        } else {
            assert_eq!(shared, 0, "separate working sets share blocks");
        }
    }
}

/// The thread ids of `pid` whose name is `name`, once they exist.
fn tasks_named(pid: u32, names: &[&str]) -> Vec<(String, u32)> {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let mut found = Vec::new();
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in dir.flatten() {
                let tid: u32 = t.file_name().to_string_lossy().parse().unwrap();
                let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                if names.contains(&comm.trim()) {
                    found.push((comm.trim().to_string(), tid));
                }
            }
        }
        if found.len() == names.len() {
            found.sort();
            return found;
        }
        assert!(Instant::now() < until, "threads {names:?} never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A line's value from /proc/PID/task/TID/status.
fn status_field(pid: u32, tid: u32, field: &str) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field}"))
        .trim()
        .to_string()
}

/// Fields of /proc/PID/task/TID/stat after the name (field 3 onwards).
fn stat_fields(pid: u32, tid: u32) -> Vec<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).unwrap();
    let after = &s[s.rfind(')').unwrap() + 2..];
    after.split_whitespace().map(str::to_string).collect()
}

/// `cpus_allowed_policy=split` puts each clone's thread on its own CPU of
/// the set (round-robin), `prio`/`prioclass` and `nice` reach each job
/// thread, and plumb's main thread keeps its own.
#[test]
fn each_clone_runs_where_and_how_it_was_placed() {
    let dir = workdir();
    // SAFETY: a plain sysconf query.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32;
    let set = format!("--cpus_allowed=0-{}", cpus - 1);
    let mut child = Command::new(crate::util::plumb_bin())
        .args([
            "fio",
            "--name=sp",
            "--ioengine=null",
            "--rw=randwrite",
            "--size=1m",
            "--time_based",
            "--runtime=2",
            "--numjobs=3",
            &set,
            "--cpus_allowed_policy=split",
            "--prio=6",
            "--prioclass=3",
            "--nice=4",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let threads = tasks_named(pid, &["sp.0", "sp.1", "sp.2"]);
    // Let the threads place themselves and run.
    std::thread::sleep(Duration::from_millis(500));
    for (i, (name, tid)) in threads.iter().enumerate() {
        let cpu = i as u32 % cpus;
        assert_eq!(
            status_field(pid, *tid, "Cpus_allowed_list:"),
            cpu.to_string(),
            "{name}"
        );
        let f = stat_fields(pid, *tid);
        // stat field 39 is the CPU last run on; 19 the nice value.
        assert_eq!(f[39 - 3], cpu.to_string(), "{name} ran elsewhere");
        assert_eq!(f[19 - 3], "4", "{name}: nice");
        // SAFETY: a plain query of another thread's I/O priority.
        let prio = unsafe { libc::syscall(libc::SYS_ioprio_get, 1, *tid as libc::c_int) };
        assert_eq!(prio, (3 << 13) | 6, "{name}: ioprio");
    }
    let main = stat_fields(pid, pid);
    assert_eq!(main[19 - 3], "0", "the main thread was reniced");
    assert!(child.wait().unwrap().success());
}

/// NUMA options are applied on this machine's nodes; a node it does not
/// have fails the job as its thread starts (fio reads such a job file and
/// fails at the start too); CPU lists and masks beyond the machine and
/// malformed values are refused before any I/O.
#[test]
fn numa_and_cpu_sets_are_checked_and_applied() {
    let dir = workdir();
    let d = dir.path();
    for ok in [
        "--numa_mem_policy=bind:0",
        "--numa_mem_policy=interleave:all",
        "--numa_mem_policy=prefer:0",
        "--numa_mem_policy=local",
        "--numa_cpu_nodes=0",
        "--cpumask=1",
    ] {
        plumb_fio(
            d,
            &[
                "--name=n",
                "--filename=n.bin",
                "--size=256k",
                "--rw=write",
                ok,
            ],
        );
    }
    for (bad, option) in [
        ("--numa_mem_policy=bind:1023", "numa_mem_policy"),
        ("--numa_mem_policy=prefer:1000", "numa_mem_policy"),
        ("--numa_cpu_nodes=1000", "numa_cpu_nodes"),
    ] {
        let r = plumb(
            d,
            &["fio", "--name=n", "--ioengine=null", "--size=256k", bad],
        );
        assert_eq!(r.code, 1, "{bad}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("{option}: NUMA node")),
            "{bad}: {}",
            r.stderr
        );
        assert!(r.stderr.contains("does not exist"), "{bad}: {}", r.stderr);
    }
    for (bad, option) in [
        ("--numa_mem_policy=bind:4096", "numa_mem_policy"),
        ("--numa_cpu_nodes=0-", "numa_cpu_nodes"),
        ("--numa_mem_policy=prefer", "numa_mem_policy"),
        ("--numa_mem_policy=local:0", "numa_mem_policy"),
        ("--cpus_allowed=1023", "cpus_allowed"),
        ("--cpus_allowed=3-1", "cpus_allowed"),
        ("--cpumask=0x8000000000000000", "cpumask"),
        ("--cpus_allowed_policy=spread", "cpus_allowed_policy"),
        ("--prio=8", "prio"),
        ("--nice=-21", "nice"),
    ] {
        let r = plumb(
            d,
            &[
                "fio",
                "--name=n",
                "--filename=never.bin",
                "--size=256k",
                bad,
            ],
        );
        assert_eq!(r.code, 2, "{bad}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("option '{option}'")),
            "{bad}: {}",
            r.stderr
        );
        assert!(
            !d.join("never.bin").exists(),
            "{bad}: wrote before refusing"
        );
    }
}

/// `iomem` kinds allocate the memory they name (a System V segment shows
/// in the process's maps), `mem_align` moves the buffers off the page (so
/// O_DIRECT refuses them, as with fio), and kinds plumb cannot give are
/// refused up front.
#[test]
fn iomem_kinds_and_alignment() {
    let dir = workdir();
    let d = dir.path();
    for kind in ["malloc", "shm", "mmap", "mmapshared"] {
        plumb_fio(
            d,
            &[
                "--name=m",
                "--filename=m.bin",
                "--size=256k",
                "--rw=write",
                "--iodepth=4",
                &format!("--iomem={kind}"),
            ],
        );
    }
    let mut child = Command::new(crate::util::plumb_bin())
        .args([
            "fio",
            "--name=shm",
            "--ioengine=null",
            "--rw=write",
            "--size=1m",
            "--time_based",
            "--runtime=2",
            "--mem=shm",
        ])
        .current_dir(d)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    tasks_named(pid, &["shm.0"]);
    let until = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap_or_default()
        .contains("SYSV")
    {
        assert!(Instant::now() < until, "no System V segment in the maps");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success());
    // Off the page by a byte: buffered I/O works, direct I/O is refused
    // (EINVAL), as it is with fio.
    plumb_fio(
        d,
        &[
            "--name=a",
            "--filename=a.bin",
            "--size=64k",
            "--rw=write",
            "--mem_align=1",
        ],
    );
    let r = plumb(
        d,
        &[
            "fio",
            "--name=a",
            "--filename=a.bin",
            "--size=64k",
            "--rw=write",
            "--mem_align=1",
            "--direct=1",
        ],
    );
    assert_eq!(
        r.code, 1,
        "misaligned direct I/O was not refused: {}",
        r.stderr
    );
    let r = plumb(d, &["fio", "--name=c", "--size=64k", "--iomem=cudamalloc"]);
    assert!(
        r.code == 2 && r.stderr.contains("option 'iomem'"),
        "{}",
        r.stderr
    );
    let r = plumb(d, &["fio", "--name=c", "--size=64k", "--iomem=mmap:/tmp/x"]);
    assert!(
        r.code == 2 && r.stderr.contains("option 'iomem'"),
        "{}",
        r.stderr
    );
    let huge_total = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("HugePages_Total:")
                .map(|v| v.trim().to_string())
        })
        .unwrap();
    for kind in ["shmhuge", "mmaphuge"] {
        let r = plumb(
            d,
            &[
                "fio",
                "--name=h",
                "--filename=h.bin",
                "--size=64k",
                "--rw=write",
                &format!("--iomem={kind}"),
            ],
        );
        if huge_total == "0" {
            assert_eq!(r.code, 2, "{kind} without huge pages: {}", r.stderr);
            assert!(r.stderr.contains("huge pages"), "{}", r.stderr);
        } else {
            assert!(
                r.code == 0 || r.stderr.contains("huge pages"),
                "{kind}: {}",
                r.stderr
            );
        }
    }
}

mod hostile {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngSeed};

    /// Values shaped like the placement and data options' own syntax.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            "[-+0-9a-fA-Fx,:\"' %]{0,24}",
            "(default|prefer|bind|interleave|local)(:[-0-9,a-z]{0,8})?",
            "(malloc|shm|shmhuge|mmap|mmaphuge|mmapshared|cudamalloc)(:[a-z/]{0,6})?",
            Just("0-4294967295".to_string()),
            Just("18446744073709551615".to_string()),
            Just("0xffffffffffffffffff".to_string()),
            Just("\"".to_string()),
            Just("'".to_string()),
        ]
    }

    proptest! {
        #![proptest_config(Config { cases: 3000, rng_seed: RngSeed::Fixed(0x91ace), failure_persistence: None, ..Config::default() })]

        /// Placement and data options with values in their own syntax: no
        /// panic in apply or validate, and every error names its option.
        #[test]
        fn placement_and_data_values_never_panic(opts in prop::collection::vec((prop::sample::select(vec![
            "cpus_allowed", "cpumask", "cpus_allowed_policy", "numa_cpu_nodes", "numa_mem_policy",
            "prio", "prioclass", "nice", "buffer_pattern", "buffer_compress_percentage",
            "buffer_compress_chunk", "dedupe_percentage", "dedupe_mode",
            "dedupe_working_set_percentage", "iomem", "mem_align", "zero_buffers",
            "scramble_buffers", "refill_buffers",
        ]), value()), 1..6)) {
            let mut job = plumb::job::JobSpec { name: "h".into(), ..Default::default() };
            for (name, v) in &opts {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| plumb::job::options::apply(&mut job, name, Some(v))));
                prop_assert!(r.is_ok(), "apply panicked on {opts:?}");
                if let Ok(Err(e)) = r {
                    prop_assert!(e.to_string().contains(&format!("option '{name}'")), "{e}");
                }
            }
            let v = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| plumb::job::options::validate(&job)));
            prop_assert!(v.is_ok(), "validate panicked on {opts:?}");
        }
    }
}
