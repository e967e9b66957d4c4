//! Symlinks replay verbatim: a link is made with its recorded target,
//! absolute, climbing or long, and nothing is ever reached through one
//! that leads out of the run directory (each use of it diverges instead).

use crate::util::{entries, plumb, workdir};
use std::path::Path;

/// What `outside` holds, name by name, with each file's bytes.
fn snapshot(outside: &Path) -> Vec<(String, Vec<u8>)> {
    entries(outside)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(outside.join(&n)).unwrap_or_default();
            (n, bytes)
        })
        .collect()
}

#[test]
fn links_keep_their_targets_and_are_never_followed_out() {
    let dir = workdir();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("victim"), "must not change\n").unwrap();
    let out = outside.display().to_string();
    let long = "a/".repeat(3000);
    // The run directory is target/RUN: `../../outside` from its root, and
    // `../../../outside` from deep/, are the outside directory.
    let trace = format!(
        "plumb-trace 2\nduration_us 100\n\
file 0 l 0 abs {out}\nfile 1 l 0 up ../../outside\nfile 2 d 0 deep\nfile 3 l 0 deep/up ../../../outside\n\
file 4 f - absfile\nfile 5 f - upfile\nfile 6 f - longlink\nfile 7 f - abs/victim\nfile 8 f - up/new\n\
file 9 f - deep/up/victim\nfile 10 f - abs/dir\nfile 11 f - hard\nfile 12 f - inside\nthread 0 1\n\
op 0 0 1 symlink 4 {out}/victim\nop 0 1 1 symlink 5 ../../outside/victim\nop 0 2 1 symlink 6 {long}\n\
op 0 3 1 symlink 12 absfile\n\
op 0 4 1 open 0 7 rw,creat\nop 0 5 1 open 1 4 w,trunc\nop 0 6 1 open 2 5 w,creat,trunc\n\
op 0 7 1 open 3 8 w,creat\nop 0 8 1 open 4 9 rw,creat\nop 0 9 1 open 5 12 r\n\
op 0 10 1 chmod 4 777\nop 0 11 1 truncate 5 0\nop 0 12 1 access 1\nop 0 13 1 statfs 0\n\
op 0 14 1 mkdir 10\nop 0 15 1 unlink 7\nop 0 16 1 link 7 11\n\
op 0 17 1 readlink 0\nop 0 18 1 stat 4\nop 0 19 1 utimes 5\nop 0 20 1 readlink 12\nend 21\n"
    );
    std::fs::write(dir.path().join("links.trace"), trace).unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let before = snapshot(&outside);
    let r = plumb(
        dir.path(),
        &[
            "trace",
            "replay",
            "links.trace",
            "--speed",
            "max",
            "--target",
            "target",
            "--keep",
            "--json",
            "l.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(snapshot(&outside), before, "the outside directory changed");
    let run = entries(&dir.path().join("target"));
    assert_eq!(run.len(), 1, "{run:?}");
    let inside = dir.path().join("target").join(&run[0]);
    let target_of = |p: &str| std::fs::read_link(inside.join(p)).unwrap();
    // Laid out and made with their targets as recorded, however they lead.
    assert_eq!(target_of("abs"), outside);
    assert_eq!(target_of("up"), Path::new("../../outside"));
    assert_eq!(target_of("deep/up"), Path::new("../../../outside"));
    assert_eq!(target_of("absfile"), outside.join("victim"));
    assert_eq!(target_of("upfile"), Path::new("../../outside/victim"));
    assert_eq!(target_of("inside"), Path::new("absfile"));
    // Longer than a link may hold: the kernel refuses it.
    assert!(!inside.join("longlink").exists());
    let doc = crate::trace_results::replayed(&dir.path().join("l.json"));
    // The long link, the six opens through links leading out, chmod,
    // truncate, access and statfs through them, and mkdir, unlink and
    // link beneath one; readlink, stat and utimes of a link itself are fine.
    assert_eq!(doc["divergences"], 14, "{doc}");
    assert_eq!(doc["total_ops"], 21, "{doc}");
    std::fs::remove_dir_all(&inside).unwrap();
    assert_eq!(
        snapshot(&outside),
        before,
        "removing the run directory followed a link"
    );
}

#[test]
fn a_laid_out_link_longer_than_a_link_holds_is_refused_by_line() {
    let dir = workdir();
    let trace = format!(
        "plumb-trace 2\nfile 0 l 0 long {}\nthread 0 1\nop 0 0 1 readlink 0\nend 1\n",
        "x".repeat(4096)
    );
    std::fs::write(dir.path().join("long.trace"), trace).unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let r = plumb(
        dir.path(),
        &["trace", "replay", "long.trace", "--target", "target"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("long.trace:2: a symlink's target is 4096 bytes"),
        "{}",
        r.stderr
    );
    assert!(entries(&dir.path().join("target")).is_empty());
}
