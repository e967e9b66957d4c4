//! fio's I/O pattern options in `plumb fio`: the offsets each job issues,
//! read from both tools' `write_iolog`, checked against the real fio on the
//! same job (`rw=read:-8k`, `write:112k`, strided zones, `offset_increment`,
//! `number_ios`, `file_service_type`, `openfiles`, `filename_format`), and
//! the properties of the random ones (`blockalign`, `randread:N` with
//! `rw_sequencer`, `percentage_random`, `zoned` distributions). These tests
//! need fio (`apt-get install fio`) and fail, naming it, when it is missing.

use crate::util::{fio_json, plumb, require_tool, workdir};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

/// One logged I/O: file, action, offset, length.
type Io = (String, String, u64, u64);

/// The I/Os of an iolog, fio's v3 (with times) or v2 (plumb's), each as
/// (file, action, offset, length), in the order they were issued.
fn ios(path: &Path) -> Vec<Io> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("iolog {}: {e}", path.display()));
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let p: Vec<&str> = l.rsplitn(4, ' ').collect();
            if p.len() != 4 || !matches!(p[2], "read" | "write") {
                return None;
            }
            // v3 lines start with the time: the file name follows it.
            let file = match p[3].split_once(' ') {
                Some((t, f)) if t.chars().all(|c| c.is_ascii_digit()) => f,
                _ => p[3],
            };
            Some((
                file.to_string(),
                p[2].to_string(),
                p[1].parse().ok()?,
                p[0].parse().ok()?,
            ))
        })
        .collect()
}

/// Runs the real fio with `args` and `--write_iolog` in `dir`; its I/Os.
fn fio_ios(dir: &Path, args: &[&str]) -> Vec<Io> {
    require_tool("fio", "--version", "fio");
    let out = Command::new("fio")
        .args(args)
        .args(["--ioengine=psync", "--write_iolog=io.log"])
        .current_dir(dir)
        .output()
        .expect("run fio");
    assert!(
        out.status.success(),
        "fio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    ios(&dir.join("io.log"))
}

/// Runs `plumb fio` with `args` and `--write_iolog` in `dir`; the I/Os of
/// every clone (`io.log`, `io.log.1`, ...), clone by clone.
fn plumb_ios(dir: &Path, args: &[&str]) -> Vec<Io> {
    let mut all = vec!["fio", "--ioengine=psync", "--write_iolog=io.log"];
    all.extend_from_slice(args);
    let r = plumb(dir, &all);
    assert_eq!(r.code, 0, "plumb fio {args:?}: {}", r.stderr);
    let mut out = ios(&dir.join("io.log"));
    for clone in 1.. {
        let log = dir.join(format!("io.log.{clone}"));
        if !log.exists() {
            break;
        }
        out.extend(ios(&log));
    }
    out
}

/// Both tools' I/Os for the same job, each in a fresh directory.
fn both(args: &[&str]) -> (Vec<Io>, Vec<Io>) {
    let (f, p) = (workdir(), workdir());
    (fio_ios(f.path(), args), plumb_ios(p.path(), args))
}

#[test]
fn sequential_modifiers_and_zones_issue_fios_offsets() {
    let jobs: &[&[&str]] = &[
        // Backwards: 0, then from the end down by 4k (fio's wrap).
        &[
            "--name=back",
            "--filename=f",
            "--size=64k",
            "--bs=4k",
            "--rw=read:-8k",
        ],
        // Backwards in a region that does not start the file.
        &[
            "--name=back2",
            "--filename=f",
            "--size=256k",
            "--offset=64k",
            "--bs=4k",
            "--rw=read:-8k",
        ],
        // Holes: 16k written every 128k from 120k; the file ends the job.
        &[
            "--name=stride",
            "--filename=f",
            "--size=1m",
            "--offset=120k",
            "--bs=16k",
            "--rw=write:112k",
        ],
        &[
            "--name=stride2",
            "--filename=f",
            "--size=256k",
            "--bs=4k",
            "--rw=read:8k",
        ],
        // Strided zones: 512k every 1.5m, wrapping to the start.
        &[
            "--name=z",
            "--filename=f",
            "--size=8m",
            "--bs=256k",
            "--rw=read",
            "--zonemode=strided",
            "--zonesize=512k",
            "--zoneskip=1m",
        ],
        &[
            "--name=z2",
            "--filename=f",
            "--size=8m",
            "--bs=256k",
            "--rw=read",
            "--zonemode=strided",
            "--zonesize=512k",
            "--zonerange=2m",
        ],
        // zonesize above zonerange: the zone is done twice.
        &[
            "--name=z3",
            "--filename=f",
            "--size=8m",
            "--bs=256k",
            "--rw=read",
            "--zonemode=strided",
            "--zonesize=1m",
            "--zonerange=512k",
            "--zoneskip=1m",
        ],
        &[
            "--name=n",
            "--filename=f",
            "--size=1m",
            "--bs=4k",
            "--rw=read",
            "--number_ios=10",
        ],
        &[
            "--name=loops",
            "--filename=f",
            "--size=64k",
            "--bs=4k",
            "--rw=write:4k",
            "--loops=2",
        ],
        &[
            "--name=fs",
            "--nrfiles=3",
            "--filesize=64k",
            "--bs=16k",
            "--rw=read",
            "--file_service_type=sequential",
        ],
        &[
            "--name=rr",
            "--nrfiles=3",
            "--filesize=64k",
            "--bs=16k",
            "--rw=read",
            "--file_service_type=roundrobin:2",
        ],
        &[
            "--name=open",
            "--nrfiles=4",
            "--filesize=64k",
            "--bs=16k",
            "--rw=read",
            "--openfiles=2",
        ],
        &[
            "--name=fmt",
            "--nrfiles=2",
            "--filesize=64k",
            "--bs=16k",
            "--rw=write",
            "--filename_format=d.$jobname.x$filenum",
        ],
    ];
    for args in jobs {
        let (fio, ours) = both(args);
        assert!(!fio.is_empty(), "{args:?}: fio issued nothing");
        assert_eq!(ours, fio, "{args:?}");
    }
}

#[test]
fn offset_increment_moves_each_clones_region() {
    let (mut fio, mut ours) = both(&[
        "--name=oi",
        "--filename=f",
        "--size=256k",
        "--bs=64k",
        "--rw=write",
        "--numjobs=3",
        "--offset=64k",
        "--offset_increment=1m",
    ]);
    // fio logs every clone into one file, interleaved: compare as sets.
    fio.sort();
    ours.sort();
    assert_eq!(ours, fio);
    let starts: Vec<u64> = ours
        .iter()
        .map(|io| io.2)
        .filter(|o| o % (1 << 20) == 65536)
        .collect();
    assert_eq!(starts, vec![65536, (1 << 20) + 65536, (2 << 20) + 65536]);
}

#[test]
fn random_modifiers_keep_fios_shape() {
    let dir = workdir();
    // blockalign: every random offset a multiple of 64k, as fio's.
    for (who, ios) in [
        (
            "fio",
            fio_ios(
                dir.path(),
                &[
                    "--name=ba",
                    "--filename=f",
                    "--size=1m",
                    "--bs=4k",
                    "--ba=64k",
                    "--rw=randread",
                    "--norandommap",
                ],
            ),
        ),
        (
            "plumb",
            plumb_ios(
                dir.path(),
                &[
                    "--name=ba",
                    "--filename=f",
                    "--size=1m",
                    "--bs=4k",
                    "--ba=64k",
                    "--rw=randread",
                    "--norandommap",
                ],
            ),
        ),
    ] {
        assert_eq!(ios.len(), 256, "{who}");
        assert!(ios.iter().all(|io| io.2 % 65536 == 0), "{who}: {ios:?}");
    }
    // randread:4: a random offset, then three that follow it.
    let runs = plumb_ios(
        dir.path(),
        &[
            "--name=rs",
            "--filename=f",
            "--size=1m",
            "--bs=4k",
            "--rw=randread:4",
        ],
    );
    assert_eq!(runs.len(), 256);
    for group in runs.chunks(4) {
        for (a, b) in group.iter().zip(&group[1..]) {
            // After the file's last block the next is random again (fio's).
            let last = a.2 + 4096 == 1 << 20;
            assert!(b.2 == a.2 + 4096 || last, "{group:?}");
        }
    }
    let starts: std::collections::HashSet<u64> = runs.chunks(4).map(|g| g[0].2).collect();
    assert!(starts.len() > 40, "random starts: {starts:?}");
    // rw_sequencer=identical: the same offset four times.
    let same = plumb_ios(
        dir.path(),
        &[
            "--name=id",
            "--filename=f",
            "--size=1m",
            "--bs=4k",
            "--rw=randread:4",
            "--rw_sequencer=identical",
        ],
    );
    for group in same.chunks(4) {
        assert!(group.iter().all(|io| io.2 == group[0].2), "{group:?}");
    }
    // percentage_random=0 is sequential, as fio's.
    let (fio, ours) = both(&[
        "--name=pr",
        "--filename=f",
        "--size=256k",
        "--bs=4k",
        "--rw=randread",
        "--percentage_random=0",
    ]);
    assert_eq!(ours, fio);
    // 50%: about half the I/Os follow the one before.
    let half = plumb_ios(
        dir.path(),
        &[
            "--name=pr50",
            "--filename=f",
            "--size=4m",
            "--bs=4k",
            "--rw=randread",
            "--percentage_random=50",
        ],
    );
    let follow = half.windows(2).filter(|w| w[1].2 == w[0].2 + 4096).count();
    assert!(
        (400..620).contains(&follow),
        "{follow} of {} follow",
        half.len()
    );
}

/// The share of `ios` with an offset below `limit`.
fn share_below(ios: &[Io], dir: &str, limit: u64) -> f64 {
    let of_dir: Vec<_> = ios.iter().filter(|io| io.1 == dir).collect();
    of_dir.iter().filter(|io| io.2 < limit).count() as f64 / of_dir.len().max(1) as f64
}

#[test]
fn zoned_distributions_send_each_share_to_its_zone() {
    let args = [
        "--name=zones",
        "--filename=f",
        "--size=16m",
        "--io_size=8m",
        "--bs=4k",
        "--rw=randread",
        "--norandommap",
        "--random_distribution=zoned:80/10:20/90",
    ];
    let (fio, ours) = both(&args);
    let tenth = (16 << 20) / 10;
    let (f, p) = (
        share_below(&fio, "read", tenth),
        share_below(&ours, "read", tenth),
    );
    assert!((f - 0.8).abs() < 0.04, "fio: {f}");
    assert!((p - 0.8).abs() < 0.04, "plumb: {p}");
    // Per direction: reads in the first 10%, writes in the first half.
    let ours = plumb_ios(
        workdir().path(),
        &[
            "--name=rw",
            "--filename=f",
            "--size=4m",
            "--bs=4k",
            "--rw=randrw",
            "--norandommap",
            "--random_distribution=zoned:100/10,100/50",
        ],
    );
    assert_eq!(share_below(&ours, "read", (4 << 20) / 10), 1.0);
    assert_eq!(share_below(&ours, "write", 2 << 20), 1.0);
    assert!(share_below(&ours, "write", (4 << 20) / 10) < 0.4);
    // zoned_abs: half of the reads in the first 256k.
    let abs = plumb_ios(
        workdir().path(),
        &[
            "--name=abs",
            "--filename=f",
            "--size=4m",
            "--bs=4k",
            "--rw=randread",
            "--norandommap",
            "--random_distribution=zoned_abs:50/256k:50/3840k",
        ],
    );
    let p = share_below(&abs, "read", 256 << 10);
    assert!((p - 0.5).abs() < 0.06, "{p}");
}

#[test]
fn number_ios_and_unified_reporting_count_as_fio() {
    require_tool("fio", "--version", "fio");
    let dir = workdir();
    let job = [
        "--name=u",
        "--filename=f",
        "--size=4m",
        "--bs=4k",
        "--rw=randrw",
        "--number_ios=100",
        "--ioengine=psync",
    ];
    let mut args = job.to_vec();
    args.push("--unified_rw_reporting=mixed");
    let ours = fio_json(dir.path(), &args);
    let j = &ours["jobs"][0];
    assert!(j.get("read").is_none() && j.get("write").is_none(), "{j}");
    assert_eq!(j["mixed"]["total_ios"], 100);
    assert_eq!(j["mixed"]["io_kbytes"], 400);
    let fio = Command::new("fio")
        .args(args.iter().copied().chain(["--output-format=json"]))
        .current_dir(dir.path())
        .output()
        .expect("run fio");
    let fio: serde_json::Value = serde_json::from_slice(&fio.stdout).expect("fio's json");
    assert_eq!(fio["jobs"][0]["mixed"]["total_ios"], 100);
    // both: the directions, and mixed their sum.
    let mut args = job.to_vec();
    args.push("--unified_rw_reporting=both");
    let ours = fio_json(dir.path(), &args);
    let j = &ours["jobs"][0];
    let (r, w) = (
        j["read"]["io_kbytes"].as_u64().unwrap(),
        j["write"]["io_kbytes"].as_u64().unwrap(),
    );
    assert!(r > 0 && w > 0, "{j}");
    assert_eq!(j["mixed"]["io_kbytes"].as_u64().unwrap(), r + w);
    // The terse line has fio's field count: one block for mixed.
    let mut args = vec!["fio", "--minimal"];
    args.extend_from_slice(&job);
    args.push("--unified_rw_reporting=mixed");
    let terse = plumb(dir.path(), &args).stdout;
    let fio = Command::new("fio")
        .args(&args[1..])
        .current_dir(dir.path())
        .output()
        .expect("run fio");
    let fio = String::from_utf8_lossy(&fio.stdout).to_string();
    let fields = |s: &str| s.lines().next().unwrap_or("").split(';').count();
    assert_eq!(fields(&terse), fields(&fio), "{terse}\n{fio}");
}

#[test]
fn layout_follows_fallocate_and_create_on_open() {
    let dir = workdir();
    let made = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "fio",
            "--name=lay",
            "--rw=write",
            "--size=4m",
            "--create_only=1",
        ];
        let file = format!("--filename={name}");
        args.push(&file);
        args.extend_from_slice(extra);
        let r = plumb(dir.path(), &args);
        assert_eq!(r.code, 0, "{extra:?}: {}", r.stderr);
        std::fs::metadata(dir.path().join(name)).ok()
    };
    let sparse = made("none", &["--fallocate=none"]).expect("laid out");
    assert_eq!((sparse.len(), sparse.blocks()), (4 << 20, 0));
    let full = made("posix", &["--fallocate=posix"]).expect("laid out");
    assert_eq!(full.len(), 4 << 20);
    assert!(full.blocks() * 512 >= 4 << 20, "{} blocks", full.blocks());
    let trunc = made("trunc", &["--fallocate=truncate"]).expect("laid out");
    assert_eq!(trunc.blocks(), 0);
    // create_on_open: nothing made before the job opens it.
    assert!(made("later", &["--create_on_open=1"]).is_none());
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=co",
            "--rw=write",
            "--size=1m",
            "--filename=later",
            "--create_on_open=1",
            "--ioengine=psync",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::metadata(dir.path().join("later")).unwrap().len(),
        1 << 20
    );
}

#[test]
fn hostile_pattern_values_are_refused_naming_the_option() {
    let dir = workdir();
    for (arg, needle) in [
        ("--zonemode=zbd", "zonemode"),
        ("--rw=read:-99999999999999999999", "rw"),
        ("--rw=randread:0", "rw"),
        ("--zonesize=9000000000000000000000", "zonesize"),
        (
            "--random_distribution=zoned:50/5:60/",
            "random_distribution",
        ),
        ("--random_distribution=zoned:", "random_distribution"),
        ("--file_service_type=zipf:1", "file_service_type"),
        ("--blockalign=0", "blockalign"),
        ("--fallocate=maybe", "fallocate"),
        ("--unified_rw_reporting=2", "unified_rw_reporting"),
    ] {
        let r = plumb(
            dir.path(),
            &["fio", "--name=x", "--size=1M", "--filename=f", arg],
        );
        assert_eq!(r.code, 2, "{arg}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{arg}: {}", r.stderr);
    }
    // A clone's region pushed past the largest file is refused before any I/O.
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=x",
            "--size=1M",
            "--filename=f",
            "--numjobs=3",
            "--offset_increment=8E",
        ],
    );
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("offset"), "{}", r.stderr);
    assert!(!dir.path().join("f").exists(), "nothing laid out");
}
