//! SIGINT and SIGTERM during a run: the run directory is cleaned up and the
//! results so far are kept.

use crate::util::{doc, entries, metric, script, workdir};

#[test]
fn sigint_cleans_up_and_keeps_partial_results() {
    let dir = workdir();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let first = script(
        dir.path(),
        "first.rhai",
        "fs::write_file(\"x.dat\", \"1M\"); report::metric(\"done\", 1, \"\", \"higher\");",
    );
    let second = script(
        dir.path(),
        "second.rhai",
        "fs::write_file(\"y.dat\", \"1M\"); print(\"second is looping\"); loop { time::sleep(0.05); }",
    );
    let out = crate::util::plumb_signalled(
        dir.path(),
        &[
            "run",
            &first,
            &second,
            "--target",
            target.to_str().unwrap(),
            "--json",
            "p.json",
        ],
        "second is looping",
        libc::SIGINT,
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        entries(&target).is_empty(),
        "no files left: {:?}",
        entries(&target)
    );
    let d = doc(&dir.path().join("p.json"));
    assert_eq!(metric(&d, "first", "done"), Some(1.0));
    assert!(d["scenarios"][1]["error"]
        .as_str()
        .unwrap()
        .contains("interrupted"));
}

#[test]
fn sigterm_exits_143_and_cleans_up() {
    let dir = workdir();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let s = script(
        dir.path(),
        "loop.rhai",
        "fs::write_file(\"z.dat\", \"1M\"); print(\"looping\"); loop { time::sleep(0.05); }",
    );
    let out = crate::util::plumb_signalled(
        dir.path(),
        &["run", &s, "--target", target.to_str().unwrap()],
        "looping",
        libc::SIGTERM,
    );
    assert_eq!(out.status.code(), Some(143));
    assert!(entries(&target).is_empty());
}

#[test]
fn sigint_during_a_job_keeps_its_figures_marked_partial() {
    let dir = workdir();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let s = script(
        dir.path(),
        "long.rhai",
        r#"report::metric("before", 1, "", "higher");
let r = io::job(#{ name: "long", rw: "randread", bs: "4k", size: "8M", runtime: "60s", time_based: true });
report::metric("after", r.read.iops, "IOPS", "higher");"#,
    );
    // The job's progress line comes about 2 s in: it is running by then.
    let out = crate::util::plumb_signalled(
        dir.path(),
        &[
            "run",
            &s,
            "--target",
            target.to_str().unwrap(),
            "--json",
            "p.json",
        ],
        "running r=",
        libc::SIGINT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let d = doc(&dir.path().join("p.json"));
    let g = &d["scenarios"][0];
    let error = g["error"].as_str().unwrap();
    let secs: f64 = error
        .strip_prefix("interrupted after ")
        .and_then(|r| r.strip_suffix(" s"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("error: {error}"));
    assert!((1.0..30.0).contains(&secs), "{error}");
    assert_eq!(g["error_kind"], "interrupted");
    // Not a script error: no place in the script.
    assert!(!stderr.contains("line "), "{stderr}");
    assert!(stderr.contains("interrupted after"), "{stderr}");
    assert_eq!(metric(&d, "long", "before"), Some(1.0));
    assert_eq!(metric(&d, "long", "after"), None);
    let iops = g["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "long.read_iops")
        .unwrap_or_else(|| panic!("no partial figures: {g}"));
    assert!(iops["value"].as_f64().unwrap() > 0.0, "{iops}");
    assert_eq!(iops["marks"], serde_json::json!(["partial"]), "{iops}");
    assert_eq!(g["jobs"][0]["name"], "long", "{g}");
    assert!(
        g["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("'long' was stopped after")),
        "{g}"
    );
    // The reader sees it too: the figure and its mark in the table.
    assert!(
        stdout.contains("long.read_iops") && stdout.contains("(partial)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("long stopped: interrupted after"),
        "{stdout}"
    );
    assert!(
        entries(&target).is_empty(),
        "no files left: {:?}",
        entries(&target)
    );
}
