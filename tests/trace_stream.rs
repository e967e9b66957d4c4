//! Streamed replays: the trace is read, not held, so a replay's peak
//! memory does not grow with its operations (measured with GNU time on the
//! real binary), and a trace past what a converter holds in memory shows
//! and replays.

use crate::util::{plumb, require_tool, workdir};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// A trace of `threads` threads that run at once, each opening a file of
/// its own and making `per_thread` fstat calls on it, every call
/// overlapping the next one of each other thread (so each waits, in the
/// cross-thread order, for those that ended before it began).
fn busy_trace(threads: u64, per_thread: u64) -> String {
    let mut t = format!(
        "plumb-trace 2\nduration_us {}\n",
        2 * threads * (per_thread + 2) + 10
    );
    for i in 0..threads {
        let _ = writeln!(t, "file {i} f 4096 f{i}");
    }
    for i in 0..threads {
        let _ = writeln!(t, "thread {i} {}", 100 + i);
    }
    let mut at = 0u64;
    for i in 0..threads {
        let _ = writeln!(t, "op {i} {at} 3 open {i} {i} r");
        at += 2;
    }
    for _ in 0..per_thread {
        for i in 0..threads {
            let _ = writeln!(t, "op {i} {at} 3 fstat {i}");
            at += 2;
        }
    }
    for i in 0..threads {
        let _ = writeln!(t, "op {i} {at} 3 close {i}");
        at += 2;
    }
    let _ = writeln!(t, "end {}", threads * (per_thread + 2));
    t
}

/// Replays `trace` in `dir` at full speed under GNU time: its peak
/// resident memory in KiB, having checked every operation was replayed.
fn peak_kib(dir: &Path, trace: &str, ops: u64, extra: &[&str]) -> u64 {
    let target = dir.join("target");
    std::fs::create_dir_all(&target).unwrap();
    let out = Command::new("time")
        .args(["-f", "%M", "-o", "rss"])
        .arg(crate::util::plumb_bin())
        .args([
            "trace", "replay", trace, "--speed", "max", "--target", "target",
        ])
        .args(["--json", "r.json"])
        .args(extra)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = crate::trace_results::replayed(&dir.join("r.json"));
    assert_eq!(r["total_ops"], ops, "{r}");
    assert_eq!(r["divergences"], 0, "{r}");
    let rss = std::fs::read_to_string(dir.join("rss")).unwrap();
    rss.split_whitespace().last().unwrap().parse().unwrap()
}

#[test]
fn peak_memory_does_not_grow_with_the_operations() {
    require_tool("time", "--version", "time");
    let dir = workdir();
    let small = 2_000u64;
    let large = 60_000u64;
    for threads in [1u64, 4] {
        std::fs::write(dir.path().join("small.trace"), busy_trace(threads, small)).unwrap();
        std::fs::write(dir.path().join("large.trace"), busy_trace(threads, large)).unwrap();
        let ops = |per: u64| threads * (per + 2);
        let a = peak_kib(dir.path(), "small.trace", ops(small), &[]);
        let b = peak_kib(dir.path(), "large.trace", ops(large), &[]);
        // Holding the operations took about 108 bytes each (over 20 MiB
        // more for the large trace with 4 threads); streamed, the two
        // differ by the noise of the allocator.
        let grew = b.saturating_sub(a);
        assert!(
            grew < 4 << 10,
            "{threads} thread(s): {} more operations took {grew} KiB more at peak ({a} KiB, then {b} KiB)",
            ops(large) - ops(small)
        );
    }
}

#[test]
fn a_trace_longer_than_a_converter_holds_shows_and_replays() {
    let dir = workdir();
    // 2,000,002 operations: more than a trace held whole may have.
    std::fs::write(dir.path().join("long.trace"), busy_trace(1, 2_000_000)).unwrap();
    let r = plumb(dir.path(), &["trace", "show", "long.trace", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let shown: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(shown["ops"], 2_000_002, "{shown}");
    assert_eq!(shown["by_op"]["fstat"][0], 2_000_000, "{shown}");
    let r = crate::trace::replay_json(dir.path(), "long.trace", "max", &[]);
    assert_eq!(r["total_ops"], 2_000_002, "{r}");
}
