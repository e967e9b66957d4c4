//! `plumb trace record` runs the command again without strace (a quick one
//! several times), each time on a fresh copy of the tree as it was, seen
//! at the root's path; the trace keeps that time, and the user's tree is
//! never touched by the calibration (nor lost to a kill during it).

use crate::util::{entries, plumb, plumb_bin, plumb_env, privileged, require_tool, workdir};
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
        !entries(d)
            .iter()
            .any(|e| e.contains(".strace-") || e.contains(".plumb-calibrate-")),
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
fn a_signal_while_calibrating_keeps_the_trace_and_the_traced_runs_tree() {
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
        // The tree is what the traced run made of it: the untraced run
        // worked on a copy, removed.
        assert_eq!(
            std::fs::read_to_string(d.join("data/made.txt")).unwrap(),
            "made"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("data/kept.txt")).unwrap(),
            "kept"
        );
        assert!(
            !entries(d)
                .iter()
                .any(|e| e.contains(".strace-") || e.contains(".plumb-calibrate-")),
            "{:?}",
            entries(d)
        );
    }
}

/// Lists the entries under the directory `$1` (those named, one a line,
/// in the file `$2`, so no directory is read and no access time moves;
/// else every entry, as `find` sees them): the `stat` fields (one
/// `|`-separated line each), `du` (hard links counted on every name; a
/// directory's own blocks are in its `stat` line) and every extended
/// attribute (`getfattr`, hex values); with `$3 = sums`, the files' MD5
/// sums too (which read them).
const LISTING: &str = r#"cd "$1" || exit 1
if [ -n "$2" ]; then names=$(cat "$2"); else names=$(find . | sort); fi
stat --printf '%n|mode=%f|uid=%u|gid=%g|size=%s|blocks=%b|nlink=%h|mtime=%y|atime=%x|ino=%i|ctime=%z\n' $names
echo '-- du'
# A symlink is never followed (that would move its access time).
for n in $names; do if [ -L "$n" ] || [ ! -d "$n" ]; then du -l -B1 "$n"; fi; done
echo '-- getfattr'
getfattr -h -d -e hex -m - $names 2>&1
if [ "$3" = sums ]; then
  echo '-- md5sum'
  for n in $names; do if [ ! -L "$n" ] && [ -f "$n" ]; then md5sum "$n"; fi; done
fi
exit 0
"#;

/// [`LISTING`] of `dir` (in the test's directory `d`): the entries in the
/// file `names` when given, else all.
fn listing(d: &Path, dir: &str, names: Option<&Path>, sums: bool) -> String {
    let names = names.map(|n| n.display().to_string()).unwrap_or_default();
    let out = std::process::Command::new("sh")
        .args(["-c", LISTING, "listing", dir, &names])
        .arg(if sums { "sums" } else { "" })
        .current_dir(d)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The entries [`odd_tree`] makes, as [`LISTING`] names them.
const ODD_NAMES: &str =
    ". ./a ./link-a ./ro ./ro/f ./sparse ./sticky ./sticky/theirs-file ./sym ./theirs";

/// `text` with the `stat` fields named in `drop` taken out of the lines
/// of the entries `names` (every entry when `names` is empty).
fn without(text: &str, drop: &[&str], names: &[&str]) -> String {
    text.lines()
        .map(|line| {
            let mut fields = line.split('|');
            let name = fields.next().unwrap_or_default();
            if !line.contains("|mode=") || !(names.is_empty() || names.contains(&name)) {
                return format!("{line}\n");
            }
            let kept: Vec<&str> = std::iter::once(name)
                .chain(fields.filter(|f| !drop.iter().any(|d| f.starts_with(&format!("{d}=")))))
                .collect();
            format!("{}\n", kept.join("|"))
        })
        .collect()
}

fn sh(d: &Path, script: &str) {
    let out = std::process::Command::new("sh")
        .args(["-c", script])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(out.status.success(), "{script}: {out:?}");
}

/// Makes `d/data`: a sparse 64 MiB file (two 4 KiB blocks of data), a
/// hard-linked pair, user and trusted extended attributes (on a file, a
/// directory, a symlink), odd modes (0640, 0704, 0444, a sticky 1777 and a
/// 0555 directory), entries owned by uid 1234, and one fixed time on every
/// entry (set by name: no directory is read after, so every access time
/// is at or before its modification time, and the next read of anything,
/// a directory or a symlink included, moves it on a `relatime` mount).
fn odd_tree(d: &Path) {
    sh(
        d,
        r#"set -e
mkdir data data/sticky data/ro data/theirs
printf hello > data/a
ln data/a data/link-a
truncate -s 64M data/sparse
printf 'first block' | dd of=data/sparse conv=notrunc status=none
printf 'middle block' | dd of=data/sparse bs=1M seek=32 conv=notrunc status=none
printf secret > data/sticky/theirs-file
printf ro > data/ro/f
ln -s a data/sym
setfattr -n user.color -v blue data/a
setfattr -n trusted.plumb -v 1 data/a
setfattr -n user.big -v "$(head -c 1000 /dev/zero | tr '\0' x)" data/sparse
setfattr -n user.tag -v dir data/sticky
setfattr -h -n trusted.link -v yes data/sym
chown 1234:1234 data/sticky/theirs-file data/theirs
chown -h 1234:4321 data/sym
chmod 0640 data/a
chmod 0704 data/sparse
chmod 0600 data/sticky/theirs-file
chmod 0444 data/ro/f
chmod 1777 data/sticky
chmod 0750 data/theirs
chmod 0555 data/ro
cd data
touch -h -d '2001-02-03 04:05:06.123456789' ./ro/f ./sticky/theirs-file ./a ./sparse ./sym ./ro ./sticky ./theirs .
"#,
    );
}

/// Reads two files; an untraced run first writes its view of the root
/// ([`LISTING`]) to `views/` (outside the root).
const READER: &str = r#"
if ! grep -q '^TracerPid:[[:space:]]*[1-9]' /proc/self/status; then
  sh listing.sh data "$PWD/names" > "views/view.$$"
fi
cat data/a > /dev/null
head -c 4096 data/sparse > /dev/null
"#;

#[test]
fn calibration_leaves_every_entry_as_it_was_and_runs_on_a_faithful_copy() {
    require_tool("strace", "-V", "strace");
    require_tool("getfattr", "--version", "attr");
    require_tool("setfattr", "--version", "attr");
    if !privileged(
        "calibration_leaves_every_entry_as_it_was_and_runs_on_a_faithful_copy",
        "chown, trusted extended attributes and mount namespaces",
    ) {
        return;
    }
    let dir = workdir();
    let d = dir.path();
    odd_tree(d);
    std::fs::create_dir(d.join("views")).unwrap();
    std::fs::write(d.join("listing.sh"), LISTING).unwrap();
    std::fs::write(d.join("read.sh"), READER).unwrap();
    std::fs::write(d.join("names"), ODD_NAMES.replace(' ', "\n")).unwrap();
    let names = d.join("names");
    let before = listing(d, "data", Some(&names), false);
    assert!(
        before.contains("./sym|mode=a1ff|uid=1234|gid=4321|size=1|blocks=0|nlink=1|mtime=2001-02-03 04:05:06.123456789 +0000|atime=2001-02-03 04:05:06.123456789 +0000|"),
        "{before}"
    );
    // The tree is what the test means: holes, a link, attributes, owners.
    assert!(before.contains("./sparse|mode=81c4|"), "{before}");
    assert!(before.contains("|nlink=2|"), "{before}");
    assert!(before.contains("trusted.link=0x796573"), "{before}");
    assert!(before.contains("./sticky|mode=43ff|"), "{before}");
    assert!(before.contains("uid=1234|gid=4321|"), "{before}");
    let sparse = std::fs::metadata(d.join("data/sparse")).unwrap();
    assert!(
        std::os::unix::fs::MetadataExt::blocks(&sparse) * 512 < 1 << 20,
        "the file is sparse"
    );

    let r = plumb(
        d,
        &[
            "trace", "record", "-o", "r.trace", "--root", "data", "--", "sh", "read.sh",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("without strace"), "{}", r.stderr);
    assert!(load(&d.join("r.trace")).untraced_us.is_some());
    let after = listing(d, "data", Some(&names), false);
    // Every entry as it was, inode and change time included (the root was
    // never written); only the access times of what the command read
    // moved.
    let read = ["./a", "./link-a", "./sparse"];
    assert_eq!(
        without(&after, &["atime"], &read),
        without(&before, &["atime"], &read)
    );
    // The untraced runs saw the same tree at the same path (a copy: other
    // inodes, other change times).
    let views = entries(&d.join("views"));
    assert!(!views.is_empty(), "no untraced run wrote its view");
    for v in &views {
        let view = std::fs::read_to_string(d.join("views").join(v)).unwrap();
        assert_eq!(
            without(&view, &["ino", "ctime"], &[]),
            without(&before, &["ino", "ctime"], &[]),
            "{v}"
        );
    }
    assert!(
        !entries(d).iter().any(|e| e.contains(".plumb-calibrate-")),
        "{:?}",
        entries(d)
    );
}

/// Reads every file of the root. Untraced, it writes its PID to `pid`
/// (outside the root), says so, and waits (to be killed there).
const READ_ALL: &str = r#"
find data -type f -exec cat {} + > /dev/null
if [ "$1" = wait ] && ! grep -q '^TracerPid:[[:space:]]*[1-9]' /proc/self/status; then
  echo $$ > pid
  echo "untraced and ready" >&2
  exec sleep 60
fi
"#;

/// A 200-file tree in `d/data` (in 20 directories, 16 KiB each, one
/// hard-linked pair) and a sparse file.
fn many_files(d: &Path) {
    sh(
        d,
        r#"set -e
mkdir data
for i in $(seq 0 19); do
  mkdir data/d$i
  for j in $(seq 0 9); do head -c 16384 /dev/urandom > data/d$i/f$j; done
done
ln data/d0/f0 data/linked
truncate -s 64M data/sparse
printf data | dd of=data/sparse bs=1M seek=8 conv=notrunc status=none
"#,
    );
}

/// The calibration copies in `d` (the root's parent), not their marks.
fn copies(d: &Path) -> Vec<String> {
    entries(d)
        .into_iter()
        .filter(|e| e.starts_with(".plumb-calibrate-") && !e.ends_with(".owner"))
        .collect()
}

/// Starts recording `sh read_all.sh ARG` in `d`; its stderr in `d/err`.
fn start_recording(d: &Path, arg: &str) -> std::process::Child {
    std::process::Command::new(plumb_bin())
        .args(["trace", "record", "-o", "k.trace", "--root", "data", "--"])
        .args(["sh", "read_all.sh", arg])
        .current_dir(d)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(d.join("err")).unwrap())
        .spawn()
        .unwrap()
}

/// Polls (without sleeping: a copy of this tree takes milliseconds) until
/// `seen` holds or `child` ends; false when it ended first.
fn poll(child: &mut std::process::Child, seen: impl Fn() -> bool) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(60) {
        if seen() {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
    }
    panic!("nothing seen in 60 s");
}

/// Entries under `dir` (0 when it is not there).
fn count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |list| {
        list.flatten()
            .map(|e| {
                1 + match e.file_type().is_ok_and(|t| t.is_dir()) {
                    true => count(&e.path()),
                    false => 0,
                }
            })
            .sum()
    })
}

fn kill(pid: u32) {
    // SAFETY: kill has no memory effects.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

#[test]
fn a_kill_during_calibration_leaves_the_root_whole_and_the_next_run_removes_the_copy() {
    require_tool("strace", "-V", "strace");
    require_tool("getfattr", "--version", "attr");
    if !privileged(
        "a_kill_during_calibration_leaves_the_root_whole_and_the_next_run_removes_the_copy",
        "mount namespaces",
    ) {
        return;
    }
    let dir = workdir();
    let d = dir.path();
    many_files(d);
    std::fs::write(d.join("read_all.sh"), READ_ALL).unwrap();
    let whole = |d: &Path| without(&listing(d, "data", None, true), &["atime"], &[]);
    let before = whole(d);
    let mut hit = Vec::new();
    for point in ["copying the root", "copying for a run", "untraced run"] {
        let mut child = start_recording(d, if point == "untraced run" { "wait" } else { "" });
        let caught = match point {
            "copying the root" => poll(&mut child, || !copies(d).is_empty()),
            "copying for a run" => poll(&mut child, || {
                copies(d).iter().any(|c| d.join(c).join("run").exists())
            }),
            _ => poll(&mut child, || {
                std::fs::read_to_string(d.join("err"))
                    .is_ok_and(|e| e.contains("untraced and ready"))
            }),
        };
        assert!(
            caught,
            "{point}: plumb ended first: {:?}",
            std::fs::read_to_string(d.join("err"))
        );
        if point == "untraced run" {
            // Another recording of the root meanwhile names the copy in use.
            let r = plumb(
                d,
                &[
                    "trace",
                    "record",
                    "--no-calibrate",
                    "-o",
                    "n.trace",
                    "--root",
                    "data",
                    "--",
                    "true",
                ],
            );
            assert_eq!(r.code, 0, "{}", r.stderr);
            assert!(
                r.stderr
                    .contains(&format!("plumb process {} is calibrating", child.id())),
                "{}",
                r.stderr
            );
        }
        kill(child.id());
        child.wait().unwrap();
        if let Ok(pid) = std::fs::read_to_string(d.join("pid")) {
            kill(pid.trim().parse().unwrap());
            let _ = std::fs::remove_file(d.join("pid"));
        }
        // What the copy held when the kill came (for the record).
        let left = copies(d);
        assert_eq!(left.len(), 1, "{point}: {:?}", entries(d));
        hit.push(format!(
            "{point}: tree {} entries, run {} (of 222)",
            count(&d.join(&left[0]).join("tree")),
            count(&d.join(&left[0]).join("run"))
        ));
        // The root is whole, whenever the kill came.
        assert_eq!(whole(d), before, "{point}");
        // The next recording of the root names the copy and removes it.
        let r = plumb(
            d,
            &[
                "trace",
                "record",
                "--no-calibrate",
                "-o",
                "n.trace",
                "--root",
                "data",
                "--",
                "true",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let named = format!("removed {}", d.join(&left[0]).display());
        assert!(r.stderr.contains(&named), "{point}: {}", r.stderr);
        assert!(
            r.stderr.contains("killed while calibrating"),
            "{}",
            r.stderr
        );
        assert!(
            !entries(d)
                .iter()
                .any(|e| e.starts_with(".plumb-calibrate-")),
            "{point}: {:?}",
            entries(d)
        );
        assert_eq!(whole(d), before, "{point}");
    }
    eprintln!("killed at: {hit:?}");
}

#[test]
fn a_copy_left_by_an_earlier_plumb_is_named_and_kept() {
    require_tool("strace", "-V", "strace");
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir_all(d.join("tmp/plumb-calibrate-Ab12Cd/root")).unwrap();
    std::fs::write(d.join("tmp/plumb-calibrate-Ab12Cd/root/only-here"), "x").unwrap();
    std::fs::create_dir(d.join("data")).unwrap();
    let r = plumb_env(
        d,
        &crate::util::test_cache(),
        &[("TMPDIR", &d.join("tmp"))],
        &[
            "trace",
            "record",
            "--no-calibrate",
            "-o",
            "n.trace",
            "--root",
            "data",
            "--",
            "true",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "{}: left by an earlier plumb",
            d.join("tmp/plumb-calibrate-Ab12Cd").display()
        )),
        "{}",
        r.stderr
    );
    assert!(d.join("tmp/plumb-calibrate-Ab12Cd/root/only-here").exists());
}
