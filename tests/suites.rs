//! The packs that reproduce well-known suites, at small sizes: `yabs`
//! (YABS's fio jobs, its network and CPU lines, its table), and
//! `crystaldiskmark` (CDM's four lines, the best pass kept, its window),
//! and `pts-disk` (Phoronix's disk tests). Each checks what the original
//! would give on the same run: sizes that end a job, the best of the
//! passes, totals, the numbers printed the original's way.

use crate::util::{assert_scaled, doc, first_table, metric, plumb, workdir};
use serde_json::Value;
use std::path::Path;

/// One scenario's entry in a result document.
fn scenario<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

/// The jobs of one scenario in a result document.
fn jobs<'a>(d: &'a Value, name: &str) -> Vec<&'a Value> {
    scenario(d, name)["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .collect()
}

fn must(d: &Value, scenario: &str, name: &str) -> f64 {
    metric(d, scenario, name).unwrap_or_else(|| panic!("no metric {scenario}.{name}"))
}

/// Runs a pack at `args`, keeping the document in `DIR/NAME.json`.
fn run_pack(dir: &Path, name: &str, args: &[&str]) -> Value {
    run_pack_printed(dir, name, args).0
}

/// [`run_pack`], and what the run printed on stdout.
fn run_pack_printed(dir: &Path, name: &str, args: &[&str]) -> (Value, String) {
    let json = dir.join(format!("{name}.json"));
    let target = dir.join("target");
    std::fs::create_dir_all(&target).unwrap();
    let mut all = vec![
        "run",
        "--target",
        target.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--label",
        name,
    ];
    all.extend_from_slice(args);
    let r = plumb(dir, &all);
    assert_eq!(r.code, 0, "plumb {all:?}:\n{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "the run left files in its target"
    );
    (doc(&json), r.stdout)
}

/// The units of the run table `stdout` begins with.
/// The unit column of the run table, without the marks after a unit
/// (`Gbit/s (loopback)` is `Gbit/s`).
fn units(stdout: &str) -> Vec<String> {
    let table = first_table(stdout);
    let at = table[0]
        .iter()
        .position(|h| h == "unit")
        .expect("a unit column");
    table[1..]
        .iter()
        .map(|r| match r[at].split_once(" (") {
            Some((unit, _)) => unit.to_string(),
            None => r[at].clone(),
        })
        .collect()
}

/// `plumb compare FILE` of one result: exit 0, its stdout.
fn compare_one(dir: &Path, file: &str) -> String {
    let r = plumb(dir, &["compare", file]);
    assert_eq!(r.code, 0, "compare {file}: {}", r.stderr);
    r.stdout
}

/// yabs.sh's format_speed of a bandwidth in bytes/s: fio's KiB/s in steps
/// of 1000, two decimals at most.
fn yabs_speed(bytes_per_sec: f64) -> String {
    let kb = bytes_per_sec / 1024.0;
    let (v, unit) = if kb >= 1e6 {
        (kb / 1e6, "GB/s")
    } else if kb >= 1e3 {
        (kb / 1e3, "MB/s")
    } else {
        (kb, "KB/s")
    };
    let s = format!("{:.2}", (v * 100.0).round() / 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} {unit}")
}

const YABS_SIZES: [&str; 4] = ["4k", "64k", "512k", "1m"];

#[test]
fn yabs_runs_yabs_jobs_and_compare_prints_yabs_table() {
    let dir = workdir();
    // size 4M with a 30 s runtime: each block size must end after 2 jobs x
    // 4 MiB of I/O, not after the runtime (YABS's jobs are not time-based).
    let small = [
        "yabs",
        "-p",
        "size=4M",
        "-p",
        "runtime=30s",
        "-p",
        "net_seconds=1s",
        "-p",
        "cpu_seconds=1s",
        // The network line needs a peer: this machine's, marked loopback.
        "-p",
        "peer=loopback",
    ];
    let (a, printed) = run_pack_printed(dir.path(), "vm-a", &small);
    let b = run_pack(dir.path(), "vm-b", &small);
    assert_scaled(&printed);
    let shown = units(&printed);
    // Bandwidths in MiB/s or GiB/s (IEC), IOPS, the network in bit/s steps.
    for unit in ["IOPS", "iB/s", "bit/s"] {
        assert!(
            shown.iter().any(|u| u.ends_with(unit)),
            "no unit ending {unit} in {shown:?}"
        );
    }
    // YABS's tables from one run: `plumb run yabs` ends with them, as
    // `plumb compare` prints them for that one result file.
    let one = compare_one(dir.path(), "vm-a.json");
    assert!(
        one.contains("fio Disk Speed Tests (Mixed R/W 50/50)"),
        "{one}"
    );
    assert!(
        printed.ends_with(&one),
        "the run does not end with YABS's tables:\n{printed}\n---\n{one}"
    );
    for d in [&a, &b] {
        let disk = jobs(d, "disk");
        for bs in YABS_SIZES {
            let block: f64 = match bs {
                "4k" => 4096.0,
                "64k" => 65536.0,
                "512k" => 524288.0,
                _ => 1048576.0,
            };
            let job = disk
                .iter()
                .find(|j| j["name"] == format!("rand_rw_{bs}"))
                .unwrap_or_else(|| panic!("no job rand_rw_{bs}"));
            // YABS's command line, option for option.
            let o = &job["options"];
            for (k, v) in [
                ("rw", "randrw"),
                ("rwmixread", "50"),
                ("iodepth", "64"),
                ("numjobs", "2"),
                ("ioengine", "libaio"),
                ("direct", "1"),
                ("group_reporting", "1"),
                ("filename", "test.fio"),
            ] {
                assert_eq!(o[k], v, "rand_rw_{bs}: option {k}");
            }
            assert_eq!(job["jobs"], 2, "rand_rw_{bs}: both clones merged");
            let moved = job["read"]["io_bytes"].as_u64().unwrap()
                + job["write"]["io_bytes"].as_u64().unwrap();
            assert_eq!(moved, 2 * (4 << 20), "rand_rw_{bs}: 2 jobs x size of I/O");
            let read = job["read"]["io_bytes"].as_f64().unwrap() / moved as f64;
            // rwmixread=50: 2048 I/Os at 4k give 50% +- 1%; the larger
            // blocks make too few I/Os at this size to say.
            if bs == "4k" {
                assert!(
                    (0.45..0.55).contains(&read),
                    "rand_rw_4k: read share {read}"
                );
            }
            let m = |n: &str| must(d, "disk", &format!("{bs}_{n}"));
            assert_eq!(m("read_iops"), job["read"]["iops"].as_f64().unwrap());
            assert_eq!(m("write_bw"), job["write"]["bw_bytes"].as_f64().unwrap());
            assert!((m("total_iops") - m("read_iops") - m("write_iops")).abs() < 1e-6);
            assert!((m("total_bw") - m("read_bw") - m("write_bw")).abs() < 1e-3);
            // Bandwidth over IOPS is the block size.
            let per_io = m("read_bw") / m("read_iops");
            assert!(
                (per_io / block - 1.0).abs() < 0.01,
                "{bs}: {per_io} bytes per read"
            );
        }
        for n in ["send_1", "recv_1", "send_8", "recv_8"] {
            assert!(must(d, "network", n) > 0.0, "network {n}");
        }
        assert!(must(d, "cpu", "single") > 0.0 && must(d, "cpu", "multi") > 0.0);
    }

    let r = plumb(dir.path(), &["compare", "vm-a.json", "vm-b.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = &r.stdout;
    // One run's layout is the two runs' one, less the second column: the
    // same rows, and the first run's figures as the comparison shows them.
    let disk = |out: &str| {
        let at = out
            .find("fio Disk Speed Tests")
            .unwrap_or_else(|| panic!("no disk table in:\n{out}"));
        first_table(&out[at..])
    };
    let (single, pair) = (disk(&one), disk(out));
    assert_eq!(single.len(), 1 + 3 * YABS_SIZES.len(), "{one}");
    assert_eq!(single.len(), pair.len(), "{one}\n{out}");
    for (s, p) in single.iter().zip(&pair) {
        assert_eq!(s.len() + 1, p.len(), "{s:?} / {p:?}");
        assert_eq!(s[..3], p[..3], "{s:?} / {p:?}");
    }
    for text in [
        "fio Disk Speed Tests (Mixed R/W 50/50)",
        "Block Size",
        "iperf3 Network Speed Tests",
        "Send Speed (8 streams)",
        "Single Core",
    ] {
        assert!(out.contains(text), "no {text:?} in:\n{out}");
    }
    // Block-size rows with Read, Write and Total, in YABS's order.
    let mut at = 0;
    for bs in YABS_SIZES {
        for (i, side) in ["Read", "Write", "Total"].into_iter().enumerate() {
            let line = out[at..]
                .lines()
                .find(|l| l.contains(side) && (i > 0 || l.contains(&format!(" {bs} "))))
                .unwrap_or_else(|| panic!("no {bs} {side} row after byte {at} in:\n{out}"));
            let metric_name = format!("{bs}_{}_bw", side.to_lowercase());
            let want = yabs_speed(must(&a, "disk", &metric_name));
            assert!(
                line.contains(&want),
                "{bs} {side}: {want:?} not in {line:?}"
            );
            at += out[at..].find(line).unwrap() + line.len();
        }
    }
}

#[test]
fn crystaldiskmark_keeps_the_best_of_its_passes_and_prints_its_window() {
    let dir = workdir();
    let small = [
        "crystaldiskmark",
        "-p",
        "size=8M",
        "-p",
        "runtime=1s",
        "-p",
        "passes=3",
        "-p",
        "interval=0s",
    ];
    let (a, printed) = run_pack_printed(dir.path(), "disk-a", &small);
    assert_scaled(&printed);
    let shown = units(&printed);
    for unit in ["IOPS", "µs"] {
        assert!(shown.iter().any(|u| u == unit), "no {unit} in {shown:?}");
    }
    // CrystalDiskMark's window from this one run, at the end of it.
    let one = compare_one(dir.path(), "disk-a.json");
    for text in ["CrystalDiskMark (MB/s, best of the passes)", "disk-a Read"] {
        assert!(one.contains(text), "no {text:?} in:\n{one}");
    }
    assert!(printed.ends_with(&one), "{printed}\n---\n{one}");
    let all = jobs(&a, "cdm");
    let lines = [
        ("SEQ1M_Q8T1", "1m", "8", false),
        ("SEQ1M_Q1T1", "1m", "1", false),
        ("RND4K_Q32T1", "4k", "32", true),
        ("RND4K_Q1T1", "4k", "1", true),
    ];
    for (test, bs, qd, random) in lines {
        for dir_name in ["read", "write"] {
            let name = format!("{test}_{dir_name}");
            let passes: Vec<&&Value> = all.iter().filter(|j| j["name"] == name).collect();
            assert_eq!(passes.len(), 3, "{name}: one job per pass");
            let rw = if random {
                format!("rand{dir_name}")
            } else {
                dir_name.to_string()
            };
            for p in &passes {
                let o = &p["options"];
                assert_eq!(o["rw"], rw.as_str(), "{name}");
                assert_eq!(o["bs"], bs, "{name}");
                assert_eq!(o["iodepth"], qd, "{name}");
                assert_eq!(o["direct"], "1", "{name}");
                assert_eq!(o["time_based"], "1", "{name}");
            }
            let best = passes
                .iter()
                .map(|p| p[dir_name]["bw_bytes"].as_f64().unwrap())
                .fold(0.0, f64::max);
            let mb = must(&a, "cdm", &name);
            assert!(
                (mb - best / 1e6).abs() < 1e-9 * best.max(1.0),
                "{name}: {mb} MB/s is not the best pass {best} B/s"
            );
            assert!(must(&a, "cdm", &format!("{name}_iops")) > 0.0);
            assert!(must(&a, "cdm", &format!("{name}_lat")) > 0.0);
        }
    }

    std::fs::copy(
        dir.path().join("disk-a.json"),
        dir.path().join("disk-b.json"),
    )
    .unwrap();
    let r = plumb(dir.path(), &["compare", "disk-a.json", "disk-b.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for text in [
        "CrystalDiskMark (MB/s, best of the passes)",
        "SEQ1M Q8T1",
        "SEQ1M Q1T1",
        "RND4K Q32T1",
        "RND4K Q1T1",
        "disk-a Read",
        "disk-a Write",
        "CrystalDiskMark (IOPS)",
    ] {
        assert!(r.stdout.contains(text), "no {text:?} in:\n{}", r.stdout);
    }
    let seq = must(&a, "cdm", "SEQ1M_Q8T1_read");
    let shown = format!("{:.2}", (seq * 100.0).round() / 100.0);
    let row = r.stdout.lines().find(|l| l.contains("SEQ1M Q8T1")).unwrap();
    assert!(row.contains(&shown), "{shown} not in {row:?}");
}

/// The table a scenario reported whose title starts with `title_starts`.
fn table<'a>(d: &'a Value, name: &str, title_starts: &str) -> &'a Value {
    scenario(d, name)["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"].as_str().unwrap().starts_with(title_starts))
        .unwrap_or_else(|| panic!("{name}: no table {title_starts:?}"))
}

#[test]
fn pts_disk_runs_every_test_at_small_sizes() {
    let dir = workdir();
    let (d, printed) = run_pack_printed(
        dir.path(),
        "pts",
        &[
            "pts-disk",
            "-p",
            "fsmark_files=8",
            "-p",
            "fsmark_size=64k",
            "-p",
            "fsmark_threads=2",
            "-p",
            "fsmark_dirs=4",
            "-p",
            "postmark_files=50",
            "-p",
            "postmark_transactions=200",
            "-p",
            "dbench_clients=1,2",
            "-p",
            "iozone_size=2M",
            "-p",
            "iozone_records=4k,64k,1m",
            // The pack's own max_bytes at these parameters (4000 * 64k + 2M
            // + 600M + 300M + 1G): the kernel-shaped trees fit it (replays
            // are charged their estimates, each tree is whole).
            "--max-bytes",
            "2176M",
        ],
    );
    for case in ["sync", "nosync", "threads_2", "dirs_4"] {
        assert!(must(&d, "fs-mark", &format!("{case}.files_per_sec")) > 0.0);
    }
    assert_scaled(&printed);
    let shown = units(&printed);
    for unit in ["files/s", "ms"] {
        assert!(shown.iter().any(|u| u == unit), "no {unit} in {shown:?}");
    }
    // Every test's own table after the metrics, and `plumb show` prints
    // the saved result the same way; --scenario keeps one test's.
    let tables = [
        "pts-disk/fs-mark: fs_mark",
        "pts-disk/postmark: PostMark",
        "pts-disk/dbench: dbench 1 clients: Throughput",
        "pts-disk/dbench: dbench 2 clients: Throughput",
        "pts-disk/compilebench: compilebench",
        "pts-disk/iozone: iozone -a, 2M file (kB/s)",
    ];
    let end = printed.find('└').unwrap();
    for t in tables {
        let at = printed
            .find(t)
            .unwrap_or_else(|| panic!("no table {t:?} in:\n{printed}"));
        assert!(at > end, "{t} is not after the metrics");
    }
    let header = |at: &str| first_table(&printed[printed.find(at).unwrap()..])[0].clone();
    assert_eq!(
        header("fs_mark"),
        [
            "case",
            "files",
            "threads (-t)",
            "dirs (-D)",
            "sync (-S)",
            "files/s"
        ]
    );
    assert_eq!(
        header("dbench 1 clients")[..3],
        ["Operation", "Count", "AvgLat"]
    );
    let show = plumb(dir.path(), &["show", "pts.json"]);
    assert_eq!(show.code, 0, "{}", show.stderr);
    assert_eq!(show.stdout, printed);
    let dbench = plumb(dir.path(), &["show", "pts.json", "--scenario", "dbench"]);
    assert_eq!(dbench.code, 0, "{}", dbench.stderr);
    assert!(
        dbench.stdout.contains(tables[2]) && dbench.stdout.contains(tables[3]),
        "{}",
        dbench.stdout
    );
    assert!(!dbench.stdout.contains("fs_mark"), "{}", dbench.stdout);
    let fs_mark = table(&d, "fs-mark", "fs_mark");
    assert_eq!(
        fs_mark["rows"][2][1], "16",
        "the threads case: -n files per thread"
    );

    let seconds = must(&d, "postmark", "seconds");
    let created = must(&d, "postmark", "files_created_per_sec") * seconds;
    let deleted = must(&d, "postmark", "files_deleted_per_sec") * seconds;
    assert!(created >= 50.0 - 1e-6, "postmark made {created} files");
    assert!(
        (created - deleted).abs() < 1e-6,
        "every file PostMark made is deleted at its end ({created} made, {deleted} deleted)"
    );
    assert!(must(&d, "postmark", "transactions_per_sec") > 0.0);

    for m in ["initial_create", "compile", "read_tree"] {
        assert!(must(&d, "compilebench", m) > 0.0, "compilebench {m}");
    }
    // The tree's 226 MiB, once made, once read (the objects too, 45% of
    // the files being sources of about the mean size).
    let cb = table(&d, "compilebench", "compilebench");
    let made: f64 = cb["rows"][0][2].as_str().unwrap().parse().unwrap();
    assert!((made - 237.0).abs() < 3.0, "the tree is {made} MB");

    let iozone = table(&d, "iozone", "iozone -a");
    assert_eq!(iozone["rows"].as_array().unwrap().len(), 3);
    for rec in ["4k", "64k", "1m"] {
        for t in [
            "write",
            "rewrite",
            "read",
            "reread",
            "random_read",
            "random_write",
        ] {
            assert!(must(&d, "iozone", &format!("{rec}.{t}")) > 0.0, "{rec} {t}");
        }
    }

    let unpacked = must(&d, "unpack-tree", "files_per_sec") * must(&d, "unpack-tree", "seconds");
    assert!(
        (unpacked - 22000.0).abs() < 1e-3,
        "unpacked {unpacked} files"
    );
    let inserts = must(&d, "sqlite", "inserts_per_sec") * must(&d, "sqlite", "seconds");
    assert!((inserts - 1000.0).abs() < 1e-6);
    assert!(must(&d, "sqlite", "fdatasync_p50") > 0.0);
}

#[test]
fn create_files_deals_files_over_threads_and_subdirectories() {
    let dir = workdir();
    crate::util::script(
        dir.path(),
        "storm.rhai",
        r#"
let s = fs::create_files("d", 10, 100, #{ threads: 3, dirs: 4, fsync: true, write_size: 7 });
report::metric("ops", s.ops, "", "higher");
for d in ["00", "01", "02", "03"] {
    let names = fs::list("d/" + d);
    report::metric("in_" + d, names.len(), "", "higher");
    for n in names {
        if fs::stat("d/" + d + "/" + n).size != 100 { throw "wrong size: " + n; }
    }
}
"#,
    );
    crate::util::script(
        dir.path(),
        "pack.toml",
        "name = \"two\"\nversion = \"1\"\ndescription = \"d\"\nscenarios = [\"storm.rhai\"]\n\n[capabilities]\nthreads = 2\nmax_bytes = \"1M\"\n",
    );
    // As a lone script: f00000000 … f00000009 round robin over 00–03.
    let json = dir.path().join("s.json");
    let (r, _) = crate::util::run_scripts(
        dir.path(),
        &["storm.rhai", "--json", json.to_str().unwrap()],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&json);
    assert_eq!(must(&d, "storm", "ops"), 10.0);
    for (sub, n) in [("00", 3.0), ("01", 3.0), ("02", 2.0), ("03", 2.0)] {
        assert_eq!(must(&d, "storm", &format!("in_{sub}")), n, "files in {sub}");
    }
    // In a pack that declares two threads, three are refused.
    let (r, _) = crate::util::run_scripts(dir.path(), &["."]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout.contains("3 threads") || r.stderr.contains("3 threads"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
}
