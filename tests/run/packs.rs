//! The bundled packs: they run at small sizes, declare their parameters and
//! capabilities, and `plumb run` alone runs the quick pack.

use crate::util::{
    assert_scaled, doc, entries, metric, pack_folder, plumb, run_scripts, workdir,
    CLOUD_COMPARE_SMALL,
};

#[test]
fn quick_pack_runs_reports_and_cleans_up() {
    let dir = workdir();
    let (r, target) = run_scripts(
        dir.path(),
        &[
            "quick",
            "-p",
            "size=8M",
            "-p",
            "runtime=1s",
            "-p",
            "files=50",
            "--json",
            "q.json",
            "--label",
            "ci",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    for m in [
        "read_iops",
        "write_bw",
        "direct_read_bw",
        "copy_seconds",
        "create_per_sec",
        "read_lat_p99",
    ] {
        assert!(r.stdout.contains(m), "table lacks {m}:\n{}", r.stdout);
    }
    let units: Vec<String> = assert_scaled(&r.stdout)[1..]
        .iter()
        .map(|row| row[3].clone())
        .collect();
    // Bandwidth in an IEC step (which one depends on the disk), IOPS.
    assert!(
        units
            .iter()
            .any(|u| ["KiB/s", "MiB/s", "GiB/s"].contains(&u.as_str())),
        "no bandwidth in {units:?}"
    );
    assert!(units.iter().any(|u| u == "IOPS"), "no IOPS in {units:?}");
    assert!(
        entries(&target).is_empty(),
        "run directory removed: {:?}",
        entries(&target)
    );
    let d = doc(&dir.path().join("q.json"));
    assert_eq!(d["schema"], "plumb.result.v1");
    assert_eq!(d["label"], "ci");
    assert_eq!(d["scenarios"].as_array().unwrap().len(), 6);
    for s in d["scenarios"].as_array().unwrap() {
        assert!(s["error"].is_null(), "{s}");
        assert_eq!(s["source_sha256"].as_str().unwrap().len(), 64);
        assert_eq!(s["pack"], "quick");
    }
    assert!(metric(&d, "randrw", "read_iops").unwrap() > 0.0);
    assert!(metric(&d, "small-files", "create_per_sec").unwrap() > 0.0);
    assert_eq!(d["scenarios"][0]["jobs"][0]["rw"], "randrw");
}

#[test]
fn packs_declare_params_and_capabilities() {
    let dir = workdir();
    let pack = dir.path().join("mypack");
    std::fs::create_dir(&pack).unwrap();
    std::fs::write(
        pack.join("pack.toml"),
        "name = \"mine\"\nversion = \"0.1\"\ndescription = \"test\"\nscenarios = [\"w.rhai\"]\n\n[params.size]\ndefault = \"64k\"\nunit = \"bytes\"\ndescription = \"file size\"\n\n[capabilities]\nmax_bytes = \"1M\"\n",
    )
    .unwrap();
    std::fs::write(pack.join("w.rhai"), "let s = param(\"size\", \"64k\");\nfs::write_file(\"w.dat\", s);\nreport::metric(\"ok\", 1, \"\", \"higher\");\n").unwrap();
    let (r, _) = run_scripts(
        dir.path(),
        &[
            "mypack", "--repeat", "3", "--json", "m.json", "--format", "csv",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with("scenario,metric,median,unit,min,max,runs,better"),
        "{}",
        r.stdout
    );
    let d = doc(&dir.path().join("m.json"));
    assert_eq!(d["scenarios"][0]["repeat"], 3);
    assert_eq!(
        d["scenarios"][0]["metrics"][0]["samples"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(d["scenarios"][0]["pack_sha256"].as_str().unwrap().len(), 64);
    // More than the pack declared is stopped.
    let (r, _) = run_scripts(dir.path(), &["mypack", "-p", "size=2M"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("byte budget"), "{}", r.stderr);
    // More than the user granted is refused before running.
    let (r, target) = run_scripts(dir.path(), &["mypack", "--max-bytes", "100k"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--max-bytes"), "{}", r.stderr);
    assert!(entries(&target).is_empty());
    // Unknown parameters are bad input.
    let (r, _) = run_scripts(dir.path(), &["mypack", "-p", "sise=1"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("sise"));
    // What the pack did not declare is refused, catchably.
    pack_folder(
        dir.path(),
        "strict",
        "name = \"strict\"\nscenarios = [\"s.rhai\"]\n\n[capabilities]\nthreads = 2\n",
        &[(
            "s.rhai",
            "let refused = 0;\n\
             try { fs::open(\"x\", #{ write: true, create: true, direct: true }); } catch (e) { if e.contains(\"did not declare\") { refused += 1; } }\n\
             try { io::job(#{ rw: \"read\", size: \"64k\", numjobs: 4 }); } catch (e) { if e.contains(\"did not declare\") { refused += 1; } }\n\
             try { fs::drop_caches(); } catch (e) { if e.contains(\"did not declare\") { refused += 1; } }\n\
             io::job(#{ rw: \"read\", size: \"64k\", numjobs: 2 });\n\
             report::metric(\"refused\", refused, \"\", \"higher\");\n",
        )],
    );
    let (r, _) = run_scripts(dir.path(), &["strict", "--json", "s.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        metric(&doc(&dir.path().join("s.json")), "s", "refused"),
        Some(3.0)
    );
    let l = plumb(dir.path(), &["list", "mypack"]);
    assert!(l.stdout.contains("-p size=64k"), "{}", l.stdout);
}

#[test]
fn cloud_compare_and_fileio_packs_run_at_small_sizes() {
    let dir = workdir();
    let (r, target) = run_scripts(
        dir.path(),
        &[
            &["cloud-compare", "fileio"][..],
            &CLOUD_COMPARE_SMALL,
            &[
                "-p",
                "file_total_size=16M",
                "-p",
                "time=1s",
                "--json",
                "c.json",
            ],
        ]
        .concat(),
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(entries(&target).is_empty());
    let d = doc(&dir.path().join("c.json"));
    let scenarios = d["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 14);
    for s in scenarios {
        assert!(s["error"].is_null(), "{s}");
    }
    // Each figure is present and physically possible on any disk: at least
    // one I/O per second, at most what RAM could do, latencies between one
    // microsecond and one second.
    for (scenario, m, range) in [
        ("fio-random", "randrw.read_iops", 1.0..1e7),
        ("fio-random", "randwrite.write_iops", 1.0..1e7),
        ("dd", "write_bw", 1.0..1e5),
        ("dd", "buffered_read_bw", 1.0..1e5),
        ("ioping", "lat_avg", 1.0..1e6),
        ("sysbench-fileio", "fsyncs_per_sec", 1.0..1e7),
        ("bonnie", "rewrite", 1.0..1e5),
        ("bonnie", "seq_delete", 1.0..1e8),
        ("seqwr", "writes_per_sec", 1.0..1e7),
        ("rndrw", "reads_per_sec", 1.0..1e7),
        ("rndrd", "latency_p95", 0.1..1e6),
    ] {
        let v = metric(&d, scenario, m).unwrap_or_else(|| panic!("{scenario} {m} missing"));
        assert!(range.contains(&v), "{scenario} {m} = {v}, not in {range:?}");
    }
    // A move to another directory of the same filesystem is a rename.
    let moved = metric(&d, "big-file", "move_other_dir_seconds").unwrap();
    assert!((0.0..0.5).contains(&moved), "a rename took {moved} s");
    // dd runs twice: both samples kept.
    let dd = scenarios.iter().find(|s| s["name"] == "dd").unwrap();
    assert_eq!(dd["metrics"][0]["samples"].as_array().unwrap().len(), 2);
    // sysbench's fsync every 100 requests: about one fsync per 100 writes.
    let writes = metric(&d, "rndwr", "writes_per_sec").unwrap();
    let fsyncs = metric(&d, "rndwr", "fsyncs_per_sec").unwrap();
    assert!(
        fsyncs < writes / 50.0,
        "fsyncs {fsyncs}/s for {writes} writes/s"
    );
}

#[test]
fn plumb_run_without_arguments_runs_the_quick_pack_here() {
    let dir = workdir();
    let r = plumb(dir.path(), &["run"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    for s in [
        "quick/randrw",
        "quick/seqwrite",
        "quick/seqread",
        "quick/latency",
        "quick/copy-move-delete",
        "quick/small-files",
    ] {
        assert!(r.stdout.contains(s), "{s} missing:\n{}", r.stdout);
    }
    assert!(
        entries(dir.path()).is_empty(),
        "run directory removed: {:?}",
        entries(dir.path())
    );
}
