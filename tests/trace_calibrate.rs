//! `plumb trace record` runs the command again without strace (a quick one
//! several times), from the same tree (put back before each run), and the
//! trace keeps that time.

use crate::util::{entries, plumb, require_tool, workdir};
use plumb::trace::Trace;
use std::path::Path;

/// Appends to a file that existed and makes one that must not exist yet
/// (O_EXCL): run twice from a tree not put back, the second run fails.
const ONCE: &str = r#"
import os
with open("data/log.txt", "a") as f:
    f.write("x\n")
fd = os.open("data/new.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b"made once")
os.close(fd)
"#;

fn load(path: &Path) -> Trace {
    Trace::parse("t", &std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn record_runs_the_command_untraced_too_from_the_same_tree() {
    require_tool("strace", "-V", "strace");
    require_tool("python3", "--version", "python3");
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir(d.join("data")).unwrap();
    std::fs::write(d.join("data/log.txt"), "start\n").unwrap();
    std::fs::write(d.join("once.py"), ONCE).unwrap();
    let r = plumb(
        d,
        &[
            "trace", "record", "-o", "c.trace", "--root", "data", "--", "python3", "once.py",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("without strace"), "{}", r.stderr);
    // A quick command runs several times, each from the tree put back.
    assert!(r.stderr.contains("(the lower median of "), "{}", r.stderr);
    // The tree is what one run makes of it.
    assert_eq!(
        std::fs::read_to_string(d.join("data/log.txt")).unwrap(),
        "start\nx\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("data/new.txt")).unwrap(),
        "made once"
    );
    assert!(
        !entries(d).iter().any(|e| e.contains(".strace-")),
        "{:?}",
        entries(d)
    );
    let text = std::fs::read_to_string(d.join("c.trace")).unwrap();
    assert!(text.starts_with("plumb-trace 4\n"), "{text}");
    let t = load(&d.join("c.trace"));
    let untraced = t.untraced_us.expect("the untraced time");
    assert!(untraced > 0 && untraced < t.tracer.as_ref().unwrap().wall_us * 2);
    // The traced run made new.txt from the tree as it was: no failure.
    assert!(t.ops.iter().all(|o| o.failed.is_none()
        || !matches!(
            o.kind,
            plumb::trace::OpKind::Open { flags, .. } if flags.exclusive
        )));
    let scale = t.think_scale();
    assert!(scale > 0.0 && scale <= 1.0, "{scale}");
    // Its replay is measured against the untraced run, and says so.
    std::fs::create_dir(d.join("t")).unwrap();
    let r = plumb(
        d,
        &[
            "trace", "replay", "c.trace", "--target", "t", "--json", "r.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("the untraced run took"), "{}", r.stdout);
    let got = crate::trace_results::replayed(&d.join("r.json"));
    assert_eq!(got["reference"], "untraced", "{got}");
    assert_eq!(got["divergences"], 0, "{got}");

    // --no-calibrate: one run, traced; the replay says its reference.
    std::fs::remove_file(d.join("data/new.txt")).unwrap();
    let r = plumb(
        d,
        &[
            "trace",
            "record",
            "-o",
            "n.trace",
            "--root",
            "data",
            "--no-calibrate",
            "--",
            "python3",
            "once.py",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("without strace"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(d.join("data/log.txt")).unwrap(),
        "start\nx\nx\n"
    );
    let t = load(&d.join("n.trace"));
    assert_eq!(t.untraced_us, None);
    let r = plumb(d, &["trace", "replay", "n.trace", "--target", "t"]);
    assert!(r.stdout.contains("the traced run took"), "{}", r.stdout);
}

#[test]
fn a_root_that_cannot_be_copied_is_recorded_without_calibration() {
    require_tool("strace", "-V", "strace");
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir(d.join("data")).unwrap();
    let fifo = std::ffi::CString::new(d.join("data/pipe").to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let r = plumb(
        d,
        &[
            "trace",
            "record",
            "-o",
            "f.trace",
            "--root",
            "data",
            "--",
            "sh",
            "-c",
            "echo a > data/a",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("not calibrated"), "{}", r.stderr);
    assert_eq!(load(&d.join("f.trace")).untraced_us, None);
    assert_eq!(std::fs::read_to_string(d.join("data/a")).unwrap(), "a\n");
}

/// Makes a file; untraced (the calibration's run), says so and waits a
/// minute.
const WAITER: &str = r#"
import sys, time
open("data/made.txt", "w").write("made")
traced = any(l.startswith("TracerPid:") and l.split()[1] != "0" for l in open("/proc/self/status"))
if not traced:
    print("untraced and ready", file=sys.stderr, flush=True)
    time.sleep(60)
"#;

#[test]
fn a_signal_while_calibrating_puts_the_tree_back_and_keeps_the_trace() {
    require_tool("strace", "-V", "strace");
    require_tool("python3", "--version", "python3");
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let dir = workdir();
        let d = dir.path();
        std::fs::create_dir(d.join("data")).unwrap();
        std::fs::write(d.join("data/kept.txt"), "kept").unwrap();
        std::fs::write(d.join("w.py"), WAITER).unwrap();
        let (child, err) = crate::trace::start_until(
            d,
            &[
                "trace", "record", "-o", "w.trace", "--root", "data", "--", "python3", "w.py",
            ],
            "untraced and ready",
        );
        let (got, took, text) = crate::trace::signal_and_wait(child, err, signal);
        assert_eq!(got, code, "{signal}: {text}");
        assert!(took < 5.0, "{signal}: took {took} s");
        assert!(text.contains("interrupted while calibrating"), "{text}");
        // The trace is kept, without the untraced time.
        let t = load(&d.join("w.trace"));
        assert_eq!(t.untraced_us, None);
        assert!(!t.ops.is_empty());
        assert!(!d.join("data/made.txt").exists(), "the tree is put back");
        assert_eq!(
            std::fs::read_to_string(d.join("data/kept.txt")).unwrap(),
            "kept"
        );
        assert!(
            !entries(d).iter().any(|e| e.contains(".strace-")),
            "{:?}",
            entries(d)
        );
    }
}
