//! Job files, groups, clones, output formats and result files.

use crate::util::{entries, fio_json, plumb, run_scripts, script, workdir};
use std::path::Path;

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
fn synchronous_engines_have_no_submission_latency_as_in_fio() {
    // fio counts no slat for psync (N=0, no slat line) and its lat is its
    // clat; a queued engine has a slat for every I/O.
    let dir = workdir();
    for (engine, slat_n) in [("psync", 0), ("io_uring", 256)] {
        let args = [
            "fio",
            "--name=j",
            "--filename=f",
            "--size=1M",
            "--bs=4k",
            "--rw=randread",
            &format!("--ioengine={engine}"),
        ];
        let r = plumb(dir.path(), &[&args[..], &["--output-format=json"]].concat());
        assert_eq!(r.code, 0, "{engine}: {}", r.stderr);
        let read = &r.json()["jobs"][0]["read"];
        assert_eq!(read["clat_ns"]["N"], 256, "{engine}: {read}");
        assert_eq!(read["lat_ns"]["N"], 256, "{engine}: {read}");
        assert_eq!(read["slat_ns"]["N"], slat_n, "{engine}: {read}");
        if slat_n == 0 {
            assert_eq!(read["lat_ns"]["mean"], read["clat_ns"]["mean"], "{read}");
        }
        let text = plumb(dir.path(), &args);
        assert_eq!(text.code, 0, "{engine}: {}", text.stderr);
        assert_eq!(
            text.stdout.contains("slat ("),
            slat_n > 0,
            "{engine}: {}",
            text.stdout
        );
        assert!(text.stdout.contains("clat ("), "{}", text.stdout);
    }
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
    assert_eq!(
        read["total_ios"].as_u64(),
        Some(2048),
        "8 MiB in 4 KiB blocks"
    );
    let bw = read["bw_bytes"].as_f64().unwrap();
    let ms = read["runtime"].as_f64().unwrap();
    assert!(
        ((8 << 20) as f64 / (ms / 1000.0) / bw - 1.0).abs() < 0.05,
        "bw_bytes {bw} is 8 MiB over {ms} ms"
    );
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
    let cpus = std::thread::available_parallelism().unwrap().get() as u64;
    assert_eq!(doc["host"]["cpus"].as_u64(), Some(cpus));
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
fn timeline_has_a_point_per_second_past_five_seconds() {
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
            "--runtime=6",
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
    // The first five seconds' tenths summed into seconds, then seconds.
    let full: Vec<_> = tl.iter().filter(|p| p["duration_ms"] == 1000).collect();
    assert!(full.len() >= 5, "{tl:?}");
    assert!(
        tl.iter()
            .all(|p| p["duration_ms"] == 1000 || p["partial"] == true),
        "{tl:?}"
    );
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
    let cpus = std::thread::available_parallelism().unwrap().get() as u64;
    assert_eq!(v["host"]["cpus"].as_u64(), Some(cpus));
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert_eq!(v["host"]["memory_bytes"].as_u64(), Some(kib * 1024));
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(v["host"]["kernel"].as_str(), Some(release.trim()));
    assert!(!v["target"]["fs_type"].as_str().unwrap().is_empty());
    // Free space as statvfs(2) tells it, give or take what others write meanwhile.
    let free = free_bytes(dir.path()) as f64;
    let reported = v["target"]["free_bytes"].as_f64().unwrap();
    assert!(
        (reported / free - 1.0).abs() < 0.02,
        "free_bytes {reported}, statvfs {free}"
    );
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

/// Reads an SVG file as XML and renders it with resvg (no external program):
/// returns the contents of its `<text>` elements and the share of its pixels
/// that are drawn in a colour other than white.
fn render_svg(path: &Path) -> (Vec<String>, f64) {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let text = std::str::from_utf8(&data).expect("SVG is UTF-8");
    let xml = roxmltree::Document::parse(text)
        .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    assert!(xml.root_element().has_tag_name("svg"), "{}", path.display());
    let texts = xml
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::to_string)
        .collect();
    let tree = resvg::usvg::Tree::from_data(&data, &resvg::usvg::Options::default())
        .unwrap_or_else(|e| panic!("{} is not a valid SVG: {e}", path.display()));
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .unwrap_or_else(|| panic!("{}: empty image {size:?}", path.display()));
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let pixels = pixmap.pixels();
    assert!(
        pixels.iter().all(|p| p.alpha() == 255),
        "{}: a white background under everything",
        path.display()
    );
    let inked = pixels
        .iter()
        .filter(|p| (p.red(), p.green(), p.blue()) != (255, 255, 255))
        .count();
    (texts, inked as f64 / pixels.len() as f64)
}

#[test]
fn svg_charts_of_a_run_and_a_comparison_render() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "charted.rhai",
        r#"io::job(#{ name: "j", rw: "randrw", size: "1M", bs: "4k", ioengine: "psync", runtime: "2s", time_based: true });
report::metric("m", 2, "", "higher");"#,
    );
    for run in ["a", "b"] {
        let json = format!("{run}.json");
        let charts = format!("{run}-charts");
        let (r, _) = run_scripts(dir.path(), &[&s, "--json", &json, "--svg", &charts]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stderr.contains("wrote 3 chart(s)"), "{}", r.stderr);
    }
    let c = plumb(
        dir.path(),
        &["compare", "a.json", "b.json", "--svg", "compare-charts"],
    );
    assert_eq!(c.code, 0, "{}", c.stderr);
    // One run: its values; two: the change against the baseline. Either
    // way, the job's latency and timeline, titled with the job.
    for (charts, metrics, caption) in [
        ("a-charts", "values.svg", "Metrics of "),
        ("compare-charts", "change.svg", "Change of "),
    ] {
        let charts = dir.path().join(charts);
        let mut expected = vec!["latency-charted_j.svg", "timeline-charted_j.svg", metrics];
        expected.sort_unstable();
        assert_eq!(entries(&charts), expected);
        for (file, caption) in [
            (metrics, caption),
            ("latency-charted_j.svg", "Latency: charted · j"),
            ("timeline-charted_j.svg", "Timeline: charted · j"),
        ] {
            let path = charts.join(file);
            let (texts, inked) = render_svg(&path);
            assert!(
                // Text nodes may carry the markup's line breaks around them.
                texts.iter().any(|t| t.trim().starts_with(caption)),
                "{}: no caption {caption:?} in {texts:?}",
                path.display()
            );
            // Axes, grid, bars or lines: a blank chart is a few pixels.
            assert!(
                inked > 0.01,
                "{}: only {:.2}% of the pixels are drawn",
                path.display(),
                inked * 100.0
            );
        }
    }
}

/// Bytes an unprivileged user may still write on the filesystem of `dir`.
fn free_bytes(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: statvfs fills the zeroed struct from a valid C string path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0, "statvfs");
    st.f_bavail * st.f_frsize
}
