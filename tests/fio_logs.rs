//! fio's per-job logs (`write_bw_log`, `write_iops_log`, `write_lat_log`,
//! `write_hist_log`): the files fio 3.33 writes for the same job, with the
//! same names, columns and entries.

use crate::util::{plumb, require_tool, workdir};
use std::collections::BTreeMap;
use std::path::Path;

/// Every `*.log` in `dir`: its name and its lines split into columns.
fn logs(dir: &Path) -> BTreeMap<String, Vec<Vec<String>>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if !name.ends_with(".log") {
            continue;
        }
        let text = std::fs::read_to_string(dir.join(&name)).unwrap();
        let lines = text
            .lines()
            .map(|l| l.split(", ").map(str::to_string).collect())
            .collect();
        out.insert(name, lines);
    }
    out
}

fn run_fio(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("fio")
        .args(args)
        .arg("--output-format=terse")
        .current_dir(dir)
        .output()
        .expect("run fio");
    assert!(
        out.status.success(),
        "fio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn run_plumb(dir: &Path, args: &[&str]) {
    let mut all = vec!["fio"];
    all.extend_from_slice(args);
    all.push("--output-format=terse");
    let r = plumb(dir, &all);
    assert_eq!(r.code, 0, "plumb fio {args:?}: {}", r.stderr);
}

/// Per-I/O logs: the same files (numbered by thread over the run), one line
/// per I/O with time, value, direction, block size, offset and priority, and
/// the same offsets in the same order for a sequential job.
#[test]
fn per_io_logs_match_fios_files_and_columns() {
    require_tool("fio", "--version", "fio");
    let (a, b) = (workdir(), workdir());
    // A job file: given bare on fio's command line, write_iops_log would
    // take the next argument as its value.
    let text = "[seq]\nfilename=data\nsize=512k\nbs=64k\nrw=read\nwrite_bw_log=x\n\
                write_lat_log=x\nwrite_iops_log=x\nlog_offset=1\n\
                [two]\nfilename=data2\nsize=256k\nbs=16k\nrw=write\nnumjobs=2\nwrite_iops_log\n";
    for d in [a.path(), b.path()] {
        std::fs::write(d.join("logs.fio"), text).unwrap();
    }
    run_fio(a.path(), &["logs.fio"]);
    run_plumb(b.path(), &["logs.fio"]);
    let (fio, ours) = (logs(a.path()), logs(b.path()));
    assert_eq!(
        fio.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>(),
        "log file names"
    );
    for (name, fio_lines) in &fio {
        let our_lines = &ours[name];
        assert_eq!(fio_lines.len(), our_lines.len(), "{name}: entries");
        for (f, o) in fio_lines.iter().zip(our_lines) {
            assert_eq!(f.len(), o.len(), "{name}: columns of {o:?} vs fio's {f:?}");
            // Direction, block size and (with log_offset) offset: columns 2..
            assert_eq!(f[2..], o[2..], "{name}: entry {o:?} vs fio's {f:?}");
        }
    }
    // The values are figures of this run: latencies in ns, IOPS of 1.
    for l in &ours["x_iops.1.log"] {
        assert_eq!(l[1], "1");
    }
    for l in &ours["x_clat.1.log"] {
        let ns: u64 = l[1].parse().unwrap();
        assert!(ns > 0 && ns < 10_000_000_000, "{l:?}");
    }
}

/// Windowed logs (`log_avg_msec`) hold one entry per direction per window,
/// latencies with block size 0; a shared file (`per_job_logs=0`) holds
/// every thread's entries; a histogram log has fio's 1856 bins, halved per
/// step of coarseness, whose counts add up to the I/Os done.
#[test]
fn windowed_shared_and_histogram_logs() {
    require_tool("fio", "--version", "fio");
    let dir = workdir();
    run_plumb(
        dir.path(),
        &[
            "--name=w",
            "--filename=data",
            "--size=2m",
            "--bs=4k",
            "--rw=randrw",
            "--numjobs=2",
            "--write_lat_log=avg",
            "--log_avg_msec=1",
            "--per_job_logs=0",
            "--write_hist_log=h",
            "--log_hist_msec=1",
            "--log_hist_coarseness=2",
        ],
    );
    let l = logs(dir.path());
    assert!(l.contains_key("avg_clat.log") && l.contains_key("avg_lat.log"));
    assert!(!l.contains_key("avg_clat.1.log"));
    for e in &l["avg_clat.log"] {
        assert_eq!(e.len(), 5, "{e:?}");
        assert_eq!(
            e[3], "0",
            "windowed latency entries have block size 0: {e:?}"
        );
    }
    let mut ios = 0u64;
    for e in &l["h_clat_hist.log"] {
        assert_eq!(e.len(), 3 + 1856 / 4);
        assert_eq!(e[2], "4096");
        ios += e[3..]
            .iter()
            .map(|c| c.parse::<u64>().unwrap())
            .sum::<u64>();
    }
    assert_eq!(ios, 2 * 512, "every I/O of both threads is in a histogram");
}
