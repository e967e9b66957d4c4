//! fio's own example job files (Debian's `fio-examples`), read by
//! `plumb fio` as fio reads them: the local-file and CPU-engine ones that
//! need no special hardware.

use crate::util::{plumb, require_tool, workdir};
use std::path::Path;

/// Where Debian's `fio-examples` puts fio's example job files.
const EXAMPLES: &str = "/usr/share/doc/fio/examples";

/// The 41 example job files of fio 3.33 whose engines are local-file or
/// CPU engines and that need no zoned, SCSI, persistent-memory or
/// network-storage hardware.
const LOCAL: &[&str] = &[
    "1mbs_clients",
    "aio-read",
    "backwards-read",
    "basic-verify",
    "butterfly",
    "cmdprio-bssplit",
    "cmdprio-percentage",
    "cpuio",
    "cross-stripe-verify",
    "dedupe-global",
    "disk-zone-profile",
    "enospc-pressure",
    "exitwhat",
    "falloc",
    "filecreate-ioengine",
    "filedelete-ioengine",
    "filestat-ioengine",
    "fio-rand-RW",
    "fio-rand-read",
    "fio-rand-write",
    "fio-seq-RW",
    "fio-seq-read",
    "fio-seq-write",
    "fixed-rate-submission",
    "flow",
    "fsx",
    "ftruncate",
    "iometer-file-access-server",
    "jesd219",
    "latency-profile",
    "null",
    "numa",
    "poisson-rate-submission",
    "rand-zones",
    "ssd-steadystate",
    "ssd-test",
    "steadystate",
    "surface-scan",
    "tiobench-example",
    "waitfor",
    "zipf",
];

/// The path of an example, failing with what to install when it is missing.
fn example(name: &str) -> String {
    let path = format!("{EXAMPLES}/{name}.fio");
    assert!(
        Path::new(&path).is_file(),
        "{path} is missing: apt-get install fio-examples (or run `cargo xtask test`)"
    );
    path
}

/// `plumb fio --parse-only` accepts the example files fio accepts (36 of
/// the 41 today: trims, per-command priorities and fio's `meta` verify are
/// still refused), writes nothing, and names the option of each it refuses.
#[test]
fn parse_only_accepts_fios_examples() {
    require_tool("fio", "--version", "fio");
    let dir = workdir();
    let mut refused = Vec::new();
    for name in LOCAL {
        let path = example(name);
        let fio = std::process::Command::new("fio")
            .args(["--parse-only", &path])
            .current_dir(dir.path())
            .output()
            .expect("run fio");
        assert!(fio.status.success(), "fio 3.33 itself refuses {name}");
        let r = plumb(dir.path(), &["fio", "--parse-only", &path]);
        if r.code != 0 {
            assert!(
                r.stderr.contains("option '") || r.stderr.contains("engine '"),
                "{name}: the refusal names no option: {}",
                r.stderr
            );
            refused.push(format!("{name}: {}", r.stderr.trim()));
        }
    }
    let entries = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(entries, 0, "--parse-only wrote files");
    let accepted = LOCAL.len() - refused.len();
    assert!(
        accepted >= 36,
        "plumb fio accepts {accepted} of {} of fio's examples; refused:\n{}",
        LOCAL.len(),
        refused.join("\n")
    );
}

/// Options whose values the run test shrinks to small, short, local ones.
fn shrink_value(key: &str, value: &str, dir: &Path) -> Option<String> {
    let local = |v: &str| {
        let base = Path::new(v.trim())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "data".into());
        dir.join(base).display().to_string()
    };
    let at_most = |v: &str, max: u64| -> String {
        v.trim()
            .parse::<u64>()
            .map(|n| n.min(max).to_string())
            .unwrap_or_else(|_| max.to_string())
    };
    Some(match key {
        "filename" => value.split(':').map(local).collect::<Vec<_>>().join(":"),
        "directory" => dir.display().to_string(),
        "size" | "filesize" | "io_size" | "io_limit" if !value.trim().ends_with('%') => "1m".into(),
        "offset_increment" | "zonesize" | "zonerange" => "256k".into(),
        "zoneskip" => "128k".into(),
        "offset" if !value.trim().ends_with('%') => "0".into(),
        "runtime" | "ss_dur" | "latency_window" => "1".into(),
        "ramp_time" | "startdelay" | "ss_ramp" => "0".into(),
        "numjobs" => at_most(value, 2),
        "iodepth" => at_most(value, 8),
        "nrfiles" => at_most(value, 8),
        "loops" => "1".into(),
        "number_ios" => at_most(value, 64),
        "fill_device" => return None,
        _ => return Some(value.to_string()),
    })
}

/// An example job file made small: local files in `dir`, sizes of 1 MiB,
/// runtimes of a second (two at most), at most 2 clones, 8 files and depth 8.
fn shrink(text: &str, dir: &Path) -> String {
    // Every job stops within 2 s, whatever its rate (1mbs_clients.fio reads
    // at 1250 bytes/s).
    let mut out = String::from("[global]\nruntime=2\n");
    for raw in text.lines() {
        let line = raw.split([';', '#']).next().unwrap_or("").trim();
        match line.split_once('=') {
            Some((k, v)) if !line.starts_with('[') => {
                if let Some(v) = shrink_value(k.trim(), v.trim(), dir) {
                    out.push_str(&format!("{}={v}\n", k.trim()));
                }
            }
            _ if line == "fill_device" => {}
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The option names a job file sets (comments and sections left out).
fn option_names(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|l| {
        let l = l.split([';', '#']).next().unwrap_or("").trim();
        (!l.is_empty() && !l.starts_with('[')).then(|| l.split('=').next().unwrap_or("").trim())
    })
}

/// Per job: its name, the KiB read and written, and whether it mixes
/// reads and writes (its pattern from its own or the global options).
fn kbytes(doc: &serde_json::Value) -> Vec<(String, u64, u64, bool)> {
    let mut out = Vec::new();
    for job in doc["jobs"].as_array().into_iter().flatten() {
        let kib = |dir: &str| job[dir]["io_kbytes"].as_u64().unwrap_or(0);
        let rw = job["job options"]["rw"]
            .as_str()
            .or_else(|| doc["global options"]["rw"].as_str())
            .unwrap_or("");
        let mixed = rw.contains("randrw") || rw.starts_with("rw") || rw.contains("readwrite");
        out.push((
            job["jobname"].as_str().unwrap_or("").to_string(),
            kib("read"),
            kib("write"),
            mixed,
        ));
    }
    out.sort();
    out
}

/// fio's and plumb's bytes agree: per job the total, and per direction
/// unless fio says the job mixes them at random (the split follows each
/// tool's random generator).
fn same_bytes(fio: &[(String, u64, u64, bool)], ours: &[(String, u64, u64, bool)]) -> bool {
    fio.len() == ours.len()
        && fio
            .iter()
            .zip(ours)
            .all(|(f, o)| f.0 == o.0 && f.1 + f.2 == o.1 + o.2 && (f.3 || (f.1, f.2) == (o.1, o.2)))
}

fn json_of(stdout: &str, stderr: &str, who: &str, name: &str) -> serde_json::Value {
    let start = stdout.find('{').unwrap_or(0);
    serde_json::from_str(&stdout[start..])
        .unwrap_or_else(|e| panic!("{who} on {name}: no JSON ({e}): {stderr}"))
}

/// Every example plumb accepts also runs, made small, beside real fio on
/// the same shrunken job file; where the job is deterministic (no
/// `time_based`, no rate, steady state or exit rule that
/// ends it at a time) both move the same bytes per job and direction.
#[test]
fn examples_run_small_beside_fio() {
    require_tool("fio", "--version", "fio");
    let mut failures = Vec::new();
    let mut compared = 0;
    for name in LOCAL {
        let text = std::fs::read_to_string(example(name)).unwrap();
        let (a, b) = (workdir(), workdir());
        let plumb_job = b.path().join("job.fio");
        std::fs::write(&plumb_job, shrink(&text, b.path())).unwrap();
        let parse = plumb(
            b.path(),
            &["fio", "--parse-only", plumb_job.to_str().unwrap()],
        );
        if parse.code != 0 {
            // Refused before any I/O, naming the option: counted by
            // parse_only_accepts_fios_examples.
            continue;
        }
        let ours = plumb(
            b.path(),
            &["fio", "--output-format=json", plumb_job.to_str().unwrap()],
        );
        if option_names(&text).any(|k| k == "io_submit_mode") {
            // fio 3.33 hangs on these small offloaded jobs (its submitter
            // waits forever): plumb only has to run them.
            if ours.code != 0 {
                failures.push(format!("{name}: plumb fails: {}", ours.stderr.trim()));
            }
            continue;
        }
        let fio_job = a.path().join("job.fio");
        std::fs::write(&fio_job, shrink(&text, a.path())).unwrap();
        let fio = std::process::Command::new("timeout")
            .args([
                "--kill-after=5",
                "60",
                "fio",
                "--thread",
                "--output-format=json",
            ])
            .arg(&fio_job)
            .current_dir(a.path())
            .output()
            .expect("run fio");
        if ours.code != 0 && fio.status.success() {
            failures.push(format!(
                "{name}: fio runs it, plumb fails: {}",
                ours.stderr.trim()
            ));
            continue;
        }
        let timed = option_names(&text).any(|k| {
            [
                "time_based",
                "rate",
                "rate_iops",
                "ss",
                "exitall",
                "flow",
                "latency_target",
                "number_ios",
                "thinktime",
            ]
            .contains(&k)
        }) || ["cpuio", "filecreate", "filestat", "filedelete", "ftruncate"]
            .iter()
            .any(|e| text.contains(&format!("ioengine={e}")));
        if !fio.status.success() || timed {
            continue;
        }
        let fio_out = String::from_utf8_lossy(&fio.stdout);
        let fio_err = String::from_utf8_lossy(&fio.stderr);
        let f = kbytes(&json_of(&fio_out, &fio_err, "fio", name));
        let o = kbytes(&json_of(&ours.stdout, &ours.stderr, "plumb", name));
        compared += 1;
        if !same_bytes(&f, &o) {
            failures.push(format!(
                "{name}: KiB per job and direction: fio {f:?}, plumb {o:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} examples differ from fio ({compared} compared):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        compared >= 10,
        "only {compared} examples were compared with fio"
    );
}
