//! `plumb fio` output where readers of fio's output look, checked against
//! the real fio run on the same job: the Run status lines, the header's
//! block sizes, the JSON keys and `--version`. These tests need fio
//! (`apt-get install fio`) and fail, naming it, when it is missing.

use crate::util::{plumb, require_tool, to_run, workdir, Run};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Runs the real `fio ARGS` in `dir` and expects success.
fn real_fio(dir: &Path, args: &[&str]) -> Run {
    require_tool("fio", "--version", "fio");
    let r = to_run(
        Command::new("fio")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run fio"),
    );
    assert_eq!(
        r.code, 0,
        "fio {args:?} failed:\n{}\n{}",
        r.stdout, r.stderr
    );
    r
}

/// Runs `plumb fio ARGS` in `dir` and expects success.
fn plumb_fio(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["fio"];
    all.extend_from_slice(args);
    let r = plumb(dir, &all);
    assert_eq!(
        r.code, 0,
        "plumb fio {args:?} failed:\n{}\n{}",
        r.stdout, r.stderr
    );
    r
}

/// The line of `text` that starts (after its indent) with `label`.
fn line_starting<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no line starting with '{label}' in:\n{text}"))
}

/// A line with every number and its unit prefix replaced by `N`:
/// `bw=2000MiB/s (2097MB/s)` reads `bw=NB/s (NB/s)`, so lines of runs
/// with different speeds compare by their structure and units.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if c.is_ascii_digit() {
            let end = rest
                .find(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
                .unwrap_or(rest.len());
            rest = &rest[end..];
            for prefix in ["Ki", "Mi", "Gi", "Ti", "Pi", "k", "M", "G", "T", "P"] {
                if let Some(after) = rest.strip_prefix(prefix) {
                    rest = after;
                    break;
                }
            }
            out.push('N');
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The `lo-hi` pairs of a Run status line (`bw=A (A), LO-HI (LO-HI),
/// io=I (I), run=LO-HImsec`): bandwidth, the same in SI units, runtime.
fn status_ranges(line: &str) -> Vec<(String, String)> {
    let parts: Vec<&str> = line.split(", ").collect();
    assert_eq!(parts.len(), 4, "not a Run status line: '{line}'");
    let (bw, bw_si) = parts[1]
        .split_once(" (")
        .unwrap_or_else(|| panic!("no SI range in '{line}'"));
    let run = parts[3]
        .strip_prefix("run=")
        .and_then(|r| r.strip_suffix("msec"))
        .unwrap_or_else(|| panic!("no run=...msec in '{line}'"));
    [bw, bw_si.trim_end_matches(')'), run]
        .iter()
        .map(|range| {
            let (lo, hi) = range
                .split_once('-')
                .unwrap_or_else(|| panic!("'{range}' is not lo-hi in '{line}'"));
            (lo.to_string(), hi.to_string())
        })
        .collect()
}

#[test]
fn fio_run_status_ranges_skip_jobs_idle_in_a_direction() {
    // One job only reads, the other only writes: each direction's range
    // covers one job, so its minimum is its maximum (fio's
    // show_run_stats skips a thread with no bytes in a direction).
    const JOBS: &str = "[global]\nsize=16M\nbs=128k\nioengine=psync\ntime_based=0\n\
                        [r]\nrw=read\nfilename=r.dat\n[w]\nrw=write\nfilename=w.dat\n";
    let dir = workdir();
    let (fio_dir, plumb_dir) = (dir.path().join("fio"), dir.path().join("plumb"));
    for d in [&fio_dir, &plumb_dir] {
        std::fs::create_dir(d).unwrap();
        std::fs::write(d.join("two.fio"), JOBS).unwrap();
    }
    let fio = real_fio(&fio_dir, &["two.fio"]).stdout;
    let ours = plumb_fio(&plumb_dir, &["two.fio"]).stdout;
    for label in ["READ:", "WRITE:"] {
        let (fio_line, our_line) = (line_starting(&fio, label), line_starting(&ours, label));
        assert_eq!(
            shape(our_line),
            shape(fio_line),
            "the {label} line differs in structure:\n fio:   {fio_line}\n plumb: {our_line}"
        );
        // The bytes are known: 16 MiB each way, written as fio writes them.
        assert!(
            our_line.contains("io=16.0MiB (16.8MB)"),
            "plumb: {our_line}\nfio:   {fio_line}"
        );
        for (which, line) in [("fio", fio_line), ("plumb", our_line)] {
            for (lo, hi) in status_ranges(line) {
                assert_eq!(lo, hi, "{which}'s {label} range of one job: {line}");
            }
        }
    }
}

#[test]
fn fio_header_block_sizes_match_real_fio() {
    let dir = workdir();
    for bs in ["512", "4k", "8k", "64k", "128k", "1M", "4M", "4k,64k"] {
        let args = [
            "--name=h",
            "--ioengine=null",
            "--rw=randrw",
            "--size=8M",
            &format!("--bs={bs}"),
        ];
        let fio = real_fio(dir.path(), &args).stdout;
        let ours = plumb_fio(dir.path(), &args).stdout;
        assert_eq!(
            line_starting(&ours, "h: (g=0)"),
            line_starting(&fio, "h: (g=0)"),
            "header for bs={bs}"
        );
    }
}

/// Per-job keys of fio's JSON that plumb leaves out, and why. None today
/// for this job: a key fio adds later must be added to plumb or listed
/// here with its reason.
const JOB_KEYS_LEFT_OUT: &[(&str, &str)] = &[];

/// Every key path of `v` (`read.clat_ns.min`), not descending into maps
/// whose keys are data (percentiles, options, buckets).
fn key_paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    const DATA_MAPS: [&str; 8] = [
        "percentile",
        "job options",
        "iodepth_level",
        "iodepth_submit",
        "iodepth_complete",
        "latency_ns",
        "latency_us",
        "latency_ms",
    ];
    let Value::Object(map) = v else { return };
    for (k, x) in map {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        out.insert(path.clone());
        if !DATA_MAPS.contains(&k.as_str()) {
            key_paths(x, &path, out);
        }
    }
}

/// Key paths of the whole document and of its first job.
fn document_and_job_keys(doc: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let top = doc
        .as_object()
        .expect("a JSON object")
        .keys()
        .cloned()
        .collect();
    let mut job = BTreeSet::new();
    key_paths(&doc["jobs"][0], "", &mut job);
    (top, job)
}

#[test]
fn fio_json_has_every_key_real_fio_has() {
    let dir = workdir();
    let args = [
        "--name=j",
        "--filename=j.dat",
        "--ioengine=psync",
        "--rw=randread",
        "--size=4M",
        "--output-format=json",
    ];
    let fio: Value = serde_json::from_str(&real_fio(dir.path(), &args).stdout).unwrap();
    let ours = plumb_fio(dir.path(), &args).json();
    let (fio_top, fio_job) = document_and_job_keys(&fio);
    let (our_top, our_job) = document_and_job_keys(&ours);
    let missing_top: Vec<_> = fio_top.difference(&our_top).collect();
    assert!(
        missing_top.is_empty(),
        "top-level keys fio has and plumb lacks: {missing_top:?}"
    );
    let missing_job: Vec<_> = fio_job
        .difference(&our_job)
        .filter(|k| !JOB_KEYS_LEFT_OUT.iter().any(|(left, _)| left == k))
        .collect();
    assert!(
        missing_job.is_empty(),
        "per-job keys fio has and plumb lacks: {missing_job:?}"
    );
    // A synchronous engine submits and reaps one I/O at a time: all in
    // fio's "4" bucket (1 to 4), in both; no latency target: fio's defaults.
    for doc in [&fio, &ours] {
        let job = &doc["jobs"][0];
        for key in ["iodepth_submit", "iodepth_complete"] {
            assert_eq!(job[key]["4"], 100.0, "{key} of {}", doc["fio version"]);
        }
        assert_eq!(job["latency_depth"], 1);
        assert_eq!(job["latency_target"], 0);
        assert_eq!(job["latency_window"], 0);
        assert_eq!(job["latency_percentile"], 100.0);
    }
}

#[test]
fn fio_json_batches_of_an_async_engine_add_up() {
    let dir = workdir();
    let ours = plumb_fio(
        dir.path(),
        &[
            "--name=j",
            "--filename=j.dat",
            "--ioengine=io_uring",
            "--iodepth=16",
            "--rw=randread",
            "--size=4M",
            "--output-format=json",
        ],
    )
    .json();
    let job = &ours["jobs"][0];
    assert_eq!(job["latency_depth"], 16);
    for key in ["iodepth_submit", "iodepth_complete"] {
        let buckets = job[key].as_object().unwrap();
        assert_eq!(buckets.len(), 7, "{key}: {buckets:?}");
        let sum: f64 = buckets.values().map(|v| v.as_f64().unwrap()).sum();
        // Each nonzero bucket shows at least 0.1% (fio's rounding up).
        assert!(
            (99.9..=100.8).contains(&sum),
            "{key} adds up to {sum}: {buckets:?}"
        );
    }
}

/// The release a script reads from `fio --version`, as blktests does
/// (`cut -c 5- | sed 's/-.*//'`): after `fio-`, up to the next `-`.
fn release_of(version_line: &str) -> Vec<u32> {
    let rest = version_line
        .strip_prefix("fio-")
        .unwrap_or_else(|| panic!("'{version_line}' does not start with fio-"));
    let release = rest.split('-').next().unwrap_or("");
    release
        .split('.')
        .map(|n| {
            n.parse()
                .unwrap_or_else(|_| panic!("'{release}' of '{version_line}' is not X.Y"))
        })
        .collect()
}

#[test]
fn fio_version_reads_like_fios() {
    let dir = workdir();
    let fio = real_fio(dir.path(), &["--version"]).stdout;
    assert!(release_of(fio.trim()).len() >= 2, "fio says {fio}");
    let ours = plumb_fio(dir.path(), &["--version"]).stdout;
    assert_eq!(ours.lines().count(), 1, "{ours}");
    let line = ours.trim();
    assert_eq!(release_of(line).len(), 2, "{line}");
    // fio-plot's bench script checks `grep -i fio-3`.
    assert!(line.starts_with("fio-3"), "{line}");
    assert!(line.contains("plumb"), "says who answered: {line}");
    // No job needed, and other options do not matter, as with fio.
    assert_eq!(
        plumb_fio(dir.path(), &["--name=x", "--version"]).stdout,
        ours
    );
    assert_eq!(plumb_fio(dir.path(), &["-v"]).stdout, ours);
    // The reports carry the same version.
    let json = plumb_fio(
        dir.path(),
        &[
            "--name=x",
            "--ioengine=null",
            "--size=64k",
            "--output-format=json",
        ],
    )
    .json();
    assert_eq!(json["fio version"], line);
    let terse = plumb_fio(
        dir.path(),
        &["--name=x", "--ioengine=null", "--size=64k", "--minimal"],
    );
    assert_eq!(terse.stdout.split(';').nth(1), Some(line));
    let normal = plumb_fio(dir.path(), &["--name=x", "--ioengine=null", "--size=64k"]);
    assert!(
        normal.stdout.lines().any(|l| l == line),
        "{}",
        normal.stdout
    );
}
