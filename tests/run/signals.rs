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
