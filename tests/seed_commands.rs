//! The fio commands of the classic cloud-comparison posts, run with `fio`
//! replaced by `plumb fio` (sizes lowered).

use crate::util::{entries, plumb, workdir};

fn run_seed(args: &str) -> (String, serde_json::Value) {
    let dir = workdir();
    let mut argv: Vec<&str> = vec!["fio"];
    argv.extend(args.split_whitespace());
    let text = plumb(dir.path(), &argv);
    assert_eq!(text.code, 0, "{args}\n{}\n{}", text.stdout, text.stderr);
    let mut argv_json = argv.clone();
    argv_json.push("--output-format=json");
    let json = plumb(dir.path(), &argv_json);
    assert_eq!(json.code, 0, "{}", json.stderr);
    (text.stdout, json.json())
}

#[test]
fn randrw_libaio_gtod_reduce() {
    let (text, json) = run_seed(
        "--name=randrw --ioengine=libaio --direct=1 --bs=4k --iodepth=64 --size=16M --rw=randrw --rwmixread=75 --gtod_reduce=1",
    );
    assert!(text.contains("read: IOPS="), "{text}");
    assert!(text.contains("write: IOPS="), "{text}");
    let job = &json["jobs"][0];
    assert_eq!(job["jobname"], "randrw");
    let total =
        job["read"]["io_bytes"].as_u64().unwrap() + job["write"]["io_bytes"].as_u64().unwrap();
    assert_eq!(total, 16 << 20);
}

#[test]
fn randread_and_randwrite_variants() {
    for rw in ["randread", "randwrite"] {
        let (_, json) = run_seed(&format!(
            "--name=test --ioengine=libaio --direct=1 --bs=4k --iodepth=64 --size=8M --rw={rw} --gtod_reduce=1"
        ));
        let dir = if rw == "randread" { "read" } else { "write" };
        assert_eq!(
            json["jobs"][0][dir]["io_bytes"].as_u64(),
            Some(8 << 20),
            "{rw}"
        );
        assert_eq!(
            json["jobs"][0][dir]["total_ios"].as_u64(),
            Some(2048),
            "{rw}: 8 MiB in 4 KiB blocks"
        );
    }
}

#[test]
fn randrepeat_readwrite_alias() {
    let (_, json) = run_seed(
        "--randrepeat=1 --ioengine=libaio --direct=1 --gtod_reduce=1 --name=test --bs=4k --iodepth=64 --size=8M --readwrite=randrw --rwmixread=75",
    );
    let job = &json["jobs"][0];
    let r = job["read"]["total_ios"].as_u64().unwrap() as f64;
    let w = job["write"]["total_ios"].as_u64().unwrap() as f64;
    assert!(
        (r / (r + w) - 0.75).abs() < 0.04,
        "read share {}",
        r / (r + w)
    );
}

#[test]
fn sixteen_jobs_time_based_group_reporting() {
    let dir = workdir();
    let sub = dir.path().join("disk");
    std::fs::create_dir(&sub).unwrap();
    let args = format!(
        "fio --directory={} --name=tempfile.dat --direct=1 --rw=randwrite --bs=16k --size=1M --numjobs=16 --time_based --runtime=1 --group_reporting --output-format=json",
        sub.display()
    );
    let argv: Vec<&str> = args.split_whitespace().collect();
    let r = plumb(dir.path(), &argv);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let json = r.json();
    let jobs = json["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "group_reporting gives one entry");
    let runtime = jobs[0]["job_runtime"].as_u64().unwrap();
    assert!((900..3000).contains(&runtime), "runtime {runtime} ms");
    // IOPS agrees with the count and the write runtime.
    let write = &jobs[0]["write"];
    let ios = write["total_ios"].as_f64().unwrap();
    let iops = write["iops"].as_f64().unwrap();
    let ms = write["runtime"].as_f64().unwrap();
    assert!(ios > 0.0, "{write}");
    assert!(
        (ios / (ms / 1000.0) / iops - 1.0).abs() < 0.05,
        "iops {iops} for {ios} writes in {ms} ms"
    );
    // fio's naming: one file per clone, left in place (no unlink).
    let files = entries(&sub);
    assert_eq!(files.len(), 16, "{files:?}");
    assert!(files.contains(&"tempfile.dat.0.0".to_string()));
    assert!(files.contains(&"tempfile.dat.15.0".to_string()));
}
