//! Job files, groups, clones, output formats and result files.

use crate::util::{fio_json, plumb, workdir};

#[test]
fn job_file_with_global_and_stonewall() {
    let dir = workdir();
    std::fs::write(
        dir.path().join("two.fio"),
        "; two jobs, the second after the first\n[global]\nioengine=psync\nbs=8k\nsize=1M\nfilename=shared\n\n\
         [writer]\nrw=write\nverify=crc32c\ndo_verify=0\n\n[reader]\nstonewall\nrw=read\nverify=crc32c\n",
    )
    .unwrap();
    let r = plumb(dir.path(), &["fio", "two.fio", "--output-format=json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let json = r.json();
    let jobs = json["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["jobname"], "writer");
    assert_eq!(jobs[0]["groupid"], 0);
    assert_eq!(jobs[1]["jobname"], "reader");
    assert_eq!(jobs[1]["groupid"], 1);
    // The reader verified what the writer wrote: it ran after it.
    assert_eq!(jobs[1]["error"], 0);
    assert_eq!(jobs[1]["read"]["io_bytes"].as_u64(), Some(1 << 20));
}

#[test]
fn job_file_error_names_file_and_line() {
    let dir = workdir();
    std::fs::write(
        dir.path().join("bad.fio"),
        "[a]\nrw=read\nsize=1M\nblocksize=4q\n",
    )
    .unwrap();
    let r = plumb(dir.path(), &["fio", "bad.fio"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("bad.fio:4"), "{}", r.stderr);
    assert!(r.stderr.contains("blocksize"), "{}", r.stderr);
    assert_eq!(crate::util::entries(dir.path()), vec!["bad.fio"]);
}

#[test]
fn clones_report_separately_without_group_reporting() {
    let dir = workdir();
    let json = fio_json(
        dir.path(),
        &[
            "--name=c",
            "--ioengine=psync",
            "--rw=randread",
            "--size=256k",
            "--numjobs=3",
        ],
    );
    let jobs = json["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3);
    for j in jobs {
        assert_eq!(j["read"]["io_bytes"].as_u64(), Some(256 << 10));
    }
}

#[test]
fn fio_json_layout_reads_back_through_fio_paths() {
    let dir = workdir();
    let json = fio_json(
        dir.path(),
        &[
            "--name=p",
            "--ioengine=io_uring",
            "--rw=randread",
            "--direct=1",
            "--size=8M",
            "--iodepth=4",
        ],
    );
    let job = &json["jobs"][0];
    assert_eq!(job["jobname"], "p");
    let read = &job["read"];
    assert_eq!(read["io_bytes"].as_u64(), Some(8 << 20));
    assert_eq!(read["io_kbytes"].as_u64(), Some(8 << 10));
    assert!(read["iops"].as_f64().unwrap() > 0.0);
    assert!(read["bw_bytes"].as_u64().unwrap() > 0);
    assert!(read["runtime"].as_u64().is_some());
    let clat = &read["clat_ns"];
    let (min, mean, max) = (
        clat["min"].as_u64().unwrap(),
        clat["mean"].as_f64().unwrap(),
        clat["max"].as_u64().unwrap(),
    );
    assert!(min as f64 <= mean && mean <= max as f64);
    let p = &clat["percentile"];
    for key in [
        "1.000000",
        "50.000000",
        "99.000000",
        "99.900000",
        "99.990000",
    ] {
        assert!(p[key].as_u64().is_some(), "percentile {key}");
    }
    assert!(p["50.000000"].as_u64() <= p["99.000000"].as_u64());
    assert!(job["usr_cpu"].as_f64().is_some());
    assert!(job["sys_cpu"].as_f64().is_some());
    // IOPS agrees with the count and the runtime.
    let ios = read["total_ios"].as_f64().unwrap();
    let iops = read["iops"].as_f64().unwrap();
    let runtime = read["runtime"].as_f64().unwrap();
    assert!((ios / (runtime / 1000.0) - iops).abs() / iops < 0.05);
}

#[test]
fn normal_output_looks_like_fio() {
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=n",
            "--ioengine=psync",
            "--rw=randrw",
            "--size=1M",
        ],
    );
    assert_eq!(r.code, 0);
    for needle in [
        "n: (g=0): rw=randrw",
        "read: IOPS=",
        "write: IOPS=",
        "clat percentiles",
        "cpu          : usr=",
        "Run status group 0 (all jobs):",
        "READ: bw=",
        "WRITE: bw=",
    ] {
        assert!(
            r.stdout.contains(needle),
            "missing '{needle}' in:\n{}",
            r.stdout
        );
    }
}

#[test]
fn plumb_result_document() {
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=doc",
            "--ioengine=psync",
            "--rw=randread",
            "--size=1M",
            "--json",
            "out.json",
            "--label",
            "vm-a",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out.json")).unwrap())
            .unwrap();
    assert_eq!(doc["schema"], "plumb.result.v1");
    assert_eq!(doc["label"], "vm-a");
    assert!(doc["host"]["cpus"].as_u64().unwrap() >= 1);
    assert!(doc["target"]["fs_type"].as_str().is_some());
    let job = &doc["scenarios"][0]["jobs"][0];
    assert_eq!(job["name"], "doc");
    for key in ["io_bytes", "bw_bytes", "iops", "runtime_ms"] {
        assert!(job["read"][key].is_number(), "{key}");
    }
    for key in [
        "min", "mean", "max", "p50", "p90", "p95", "p99", "p99_9", "p99_99",
    ] {
        assert!(job["read"]["lat"][key].is_number(), "lat.{key}");
    }
    assert!(job["usr_cpu"].is_number() && job["sys_cpu"].is_number());
    assert!(
        !job["timeline"].as_array().unwrap().is_empty()
            || job["runtime_ms"].as_u64().unwrap() < 1000
    );
    let metrics = doc["scenarios"][0]["metrics"].as_array().unwrap();
    assert!(metrics
        .iter()
        .any(|m| m["name"] == "doc.read.iops" && m["better"] == "higher"));
}

#[test]
fn timeline_has_a_point_per_second() {
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=t",
            "--ioengine=null",
            "--rw=randread",
            "--size=16M",
            "--rate_iops=1000",
            "--time_based",
            "--runtime=3",
            "--json",
            "t.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("t.json")).unwrap()).unwrap();
    let tl = doc["scenarios"][0]["jobs"][0]["timeline"]
        .as_array()
        .unwrap()
        .clone();
    let full: Vec<_> = tl.iter().filter(|p| p["duration_ms"] == 1000).collect();
    assert!(full.len() >= 2, "{tl:?}");
    for p in full {
        let ios = p["read_ios"].as_u64().unwrap();
        assert!((950..=1050).contains(&ios), "{p}");
    }
}

#[test]
fn sysinfo_describes_machine_and_target() {
    let dir = workdir();
    let r = plumb(dir.path(), &["sysinfo", "--json"]);
    assert_eq!(r.code, 0);
    let v = r.json();
    assert!(v["host"]["cpus"].as_u64().unwrap() >= 1);
    assert!(v["host"]["memory_bytes"].as_u64().unwrap() > 0);
    assert!(!v["host"]["kernel"].as_str().unwrap().is_empty());
    assert!(!v["target"]["fs_type"].as_str().unwrap().is_empty());
    assert!(v["target"]["free_bytes"].as_u64().unwrap() > 0);
    let text = plumb(dir.path(), &["sysinfo"]);
    assert!(
        text.stdout.contains("Filesystem") && text.stdout.contains("Scheduler"),
        "{}",
        text.stdout
    );
}

#[test]
fn terse_output_has_fio_v3_fields() {
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=t",
            "--filename=t",
            "--ioengine=libaio",
            "--direct=1",
            "--iodepth=4",
            "--rw=randrw",
            "--size=1M",
            "--output-format=terse",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line = r.stdout.lines().next().unwrap();
    let f: Vec<&str> = line.split(';').collect();
    // 5 header + 2 × 41 per direction + 5 cpu + 7 depths + 10 µs + 12 ms buckets + 9 per disk.
    assert!(
        f.len() >= 121 && (f.len() - 121).is_multiple_of(9),
        "{} fields: {line}",
        f.len()
    );
    assert_eq!(f[0], "3");
    assert_eq!(f[2], "t");
    let read_kb: u64 = f[5].parse().unwrap();
    let write_kb: u64 = f[46].parse().unwrap();
    assert_eq!(read_kb + write_kb, 1024);
    assert!(f[17].starts_with("1.000000%="), "{}", f[17]);
    let depth_sum: f64 = f[92..99]
        .iter()
        .map(|x| x.trim_end_matches('%').parse::<f64>().unwrap())
        .sum();
    assert!((depth_sum - 100.0).abs() < 0.5, "{depth_sum}");
}

#[test]
fn json_has_depth_and_latency_buckets() {
    let dir = workdir();
    let json = fio_json(
        dir.path(),
        &[
            "--name=b",
            "--ioengine=null",
            "--rw=randread",
            "--size=4M",
            "--iodepth=1",
        ],
    );
    let job = &json["jobs"][0];
    assert!((job["iodepth_level"]["1"].as_f64().unwrap() - 100.0).abs() < 1e-9);
    let total: f64 = ["latency_ns", "latency_us", "latency_ms"]
        .iter()
        .flat_map(|k| {
            job[k]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_f64().unwrap())
        })
        .sum();
    assert!(
        (total - 100.0).abs() < 0.5,
        "buckets cover every I/O once: {total}"
    );
}

#[test]
fn the_progress_line_counts_synchronous_engines_while_they_run() {
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=p",
            "--rw=randread",
            "--bs=4k",
            "--size=16M",
            "--ioengine=psync",
            "--runtime=3",
            "--time_based",
            "--output-format=terse",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Lines come every 2 s when stderr is not a terminal: the one at 2 s is mid-run.
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("running r="))
        .unwrap_or_else(|| panic!("no progress line: {}", r.stderr));
    assert!(
        !line.contains("running r=0 IOPS"),
        "reads are counted while running: {line}"
    );
}
