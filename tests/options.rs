//! Job options whose effect is visible in what the engine did (iologs) or in
//! the files on disk.

use crate::util::{entries, fio_json, iolog, workdir};

#[test]
fn offset_and_size_bound_every_io() {
    let dir = workdir();
    fio_json(
        dir.path(),
        &[
            "--name=o",
            "--filename=f",
            "--rw=randrw",
            "--bs=4k",
            "--offset=1M",
            "--size=1M",
            "--write_iolog=log",
        ],
    );
    let log = iolog(&dir.path().join("log"));
    assert_eq!(log.len(), 256);
    assert!(
        log.iter().all(|l| l.2 >= 1 << 20 && l.2 + l.3 <= 2 << 20),
        "all inside [1M, 2M)"
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("f")).unwrap().len(),
        2 << 20
    );
}

#[test]
fn loops_repeat_the_region() {
    let dir = workdir();
    let json = fio_json(
        dir.path(),
        &[
            "--name=l",
            "--rw=read",
            "--bs=64k",
            "--size=1M",
            "--loops=3",
        ],
    );
    assert_eq!(json["jobs"][0]["read"]["io_bytes"].as_u64(), Some(3 << 20));
}

#[test]
fn io_size_differs_from_size() {
    let dir = workdir();
    let json = fio_json(
        dir.path(),
        &[
            "--name=i",
            "--rw=randread",
            "--bs=4k",
            "--size=1M",
            "--io_size=3M",
        ],
    );
    assert_eq!(json["jobs"][0]["read"]["io_bytes"].as_u64(), Some(3 << 20));
}

#[test]
fn nrfiles_split_size_and_rotate() {
    let dir = workdir();
    fio_json(
        dir.path(),
        &[
            "--name=n",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            "--nrfiles=4",
            "--write_iolog=log",
        ],
    );
    let files = entries(dir.path());
    assert_eq!(files, vec!["log", "n.0.0", "n.0.1", "n.0.2", "n.0.3"]);
    for f in &files[1..] {
        assert_eq!(
            std::fs::metadata(dir.path().join(f)).unwrap().len(),
            16 << 10
        );
    }
    let log = iolog(&dir.path().join("log"));
    let names: Vec<&str> = log
        .iter()
        .take(4)
        .map(|l| l.0.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["n.0.0", "n.0.1", "n.0.2", "n.0.3"],
        "round robin"
    );
}

#[test]
fn bsrange_stays_in_range_and_aligned() {
    let dir = workdir();
    fio_json(
        dir.path(),
        &[
            "--name=b",
            "--ioengine=null",
            "--rw=randread",
            "--bsrange=4k-32k",
            "--size=16M",
            "--write_iolog=log",
        ],
    );
    let mut log = iolog(&dir.path().join("log"));
    log.pop();
    let sizes: std::collections::BTreeSet<u64> = log.iter().map(|l| l.3).collect();
    assert!(
        sizes
            .iter()
            .all(|s| s % 4096 == 0 && (4096..=32768).contains(s)),
        "{sizes:?}"
    );
    assert!(sizes.len() >= 6, "{sizes:?}");
}

#[test]
fn randrepeat_and_randseed_control_the_sequence() {
    let dir = workdir();
    let seq = |extra: &[&str], log: &str| {
        let mut args = vec!["--name=r", "--ioengine=null", "--rw=randread", "--size=4M"];
        let opt = format!("--write_iolog={log}");
        args.push(&opt);
        args.extend_from_slice(extra);
        fio_json(dir.path(), &args);
        iolog(&dir.path().join(log))
            .into_iter()
            .map(|l| l.2)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        seq(&[], "a"),
        seq(&[], "b"),
        "randrepeat=1 (default) repeats"
    );
    assert_ne!(
        seq(&["--randseed=7"], "c"),
        seq(&[], "d"),
        "another seed, another order"
    );
    assert_ne!(seq(&["--randrepeat=0"], "e"), seq(&["--randrepeat=0"], "f"));
}

#[test]
fn ramp_time_is_not_measured() {
    let dir = workdir();
    let json = fio_json(
        dir.path(),
        &[
            "--name=r",
            "--ioengine=null",
            "--rw=randread",
            "--size=16M",
            "--rate_iops=1000",
            "--ramp_time=1",
            "--runtime=1",
            "--time_based",
        ],
    );
    let read = &json["jobs"][0]["read"];
    let runtime = read["runtime"].as_u64().unwrap();
    assert!(
        (950..1300).contains(&runtime),
        "runtime {runtime} ms excludes the ramp"
    );
    let ios = read["total_ios"].as_u64().unwrap();
    assert!(
        (900..1200).contains(&ios),
        "only the measured second counts: {ios}"
    );
}

#[test]
fn percent_size_uses_the_existing_file() {
    let dir = workdir();
    std::fs::write(dir.path().join("p"), vec![7u8; 4 << 20]).unwrap();
    let json = fio_json(
        dir.path(),
        &[
            "--name=p",
            "--filename=p",
            "--rw=read",
            "--bs=4k",
            "--size=25%",
        ],
    );
    assert_eq!(json["jobs"][0]["read"]["io_bytes"].as_u64(), Some(1 << 20));
}

#[test]
fn end_fsync_syncs_once_and_new_group_splits_reports() {
    let dir = workdir();
    let json = fio_json(
        dir.path(),
        &[
            "--name=a",
            "--rw=write",
            "--size=256k",
            "--end_fsync=1",
            "--name=b",
            "--new_group",
            "--rw=read",
            "--size=256k",
        ],
    );
    let jobs = json["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["groupid"], 0);
    assert_eq!(jobs[1]["groupid"], 1);
    assert_eq!(jobs[0]["write"]["io_bytes"].as_u64(), Some(256 << 10));
}
