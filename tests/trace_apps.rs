//! Real applications recorded and replayed: git, the sqlite3 shell, a
//! Python multiprocessing pool and tar. Each replay must finish at full
//! speed and at the recorded pace with no divergence, perform every
//! recorded operation, and — recorded itself under strace — do the same
//! operations with the same bytes per file.

use crate::util::{plumb, require_tool, workdir};
use plumb::trace::format::{OpKind, Trace};
use std::collections::BTreeMap;
use std::path::Path;

/// Operation types a replay carries out with the same system call as the
/// program (reads and writes are compared by bytes per file instead; access,
/// chmod, truncate and statfs go through `/proc/self/fd`, which a recording
/// under the run directory does not see).
const SAME_CALL: &[&str] = &[
    "open",
    "close",
    "fstat",
    "fsync",
    "fdatasync",
    "lseek",
    "readdir",
    "mkdir",
    "rmdir",
    "unlink",
    "rename",
    "link",
    "symlink",
    "readlink",
    "utimes",
    "stat",
    "dup",
    // Maps of at most 8 MiB (all of these applications') are one mmap each.
    "map",
];

/// What a trace did: successful operations per type and bytes read and
/// written per file (by path, below `strip` leading components), for the
/// threads `keep` accepts.
#[derive(Debug, PartialEq, Default)]
struct Profile {
    ops: BTreeMap<String, u64>,
    read: BTreeMap<String, u64>,
    written: BTreeMap<String, u64>,
}

fn profile(t: &Trace, strip: usize, keep: impl Fn(u32) -> bool) -> Profile {
    let mut p = Profile::default();
    let mut file_of: BTreeMap<u32, u32> = BTreeMap::new();
    let path = |f: u32| -> String {
        let full = &t.files[f as usize].path;
        full.splitn(strip + 1, '/')
            .last()
            .unwrap_or(full)
            .to_string()
    };
    for op in t.ops.iter().filter(|o| keep(o.thread)) {
        // The replay opens implicit handles and copies inherited ones with
        // a system call of its own: they count as the calls they become.
        let name = match &op.kind {
            OpKind::Open { handle, file, .. } => {
                file_of.insert(*handle, *file);
                "open"
            }
            OpKind::Dup { from, to } | OpKind::Inherit { from, to } => {
                if let Some(f) = file_of.get(from).copied() {
                    file_of.insert(*to, f);
                }
                "dup"
            }
            k => k.name(),
        };
        if op.failed.is_some() {
            continue;
        }
        match &op.kind {
            OpKind::Read { handle, len, .. } => {
                *p.read.entry(path(file_of[handle])).or_default() += len;
            }
            OpKind::Write { handle, len, .. } => {
                *p.written.entry(path(file_of[handle])).or_default() += len;
            }
            _ if SAME_CALL.contains(&name) => *p.ops.entry(name.into()).or_default() += 1,
            _ => {}
        }
    }
    p.read.retain(|_, b| *b > 0);
    p.written.retain(|_, b| *b > 0);
    p
}

fn load(dir: &Path, name: &str) -> Trace {
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    Trace::parse(name, &text).unwrap()
}

/// Records `command` (run in `dir`) with `root` as the recording's root,
/// then checks its replays as the module says.
fn record_and_check(dir: &Path, root: &str, command: &[&str]) -> Trace {
    require_tool("strace", "-V", "strace");
    let mut args = vec!["trace", "record", "-o", "app.trace", "--root", root, "--"];
    args.extend_from_slice(command);
    let r = plumb(dir, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let t = load(dir, "app.trace");
    let counted = t
        .ops
        .iter()
        .filter(|o| o.kind.counted() && !matches!(o.kind, OpKind::Mmap { .. }))
        .count() as u64;
    let failed = t
        .ops
        .iter()
        .filter(|o| o.kind.counted() && o.failed.is_some())
        .count() as u64;
    assert!(counted > 20, "{counted} operations recorded");
    std::fs::create_dir_all(dir.join("target")).unwrap();
    for speed in ["max", "1"] {
        let json = format!("replay-{speed}.json");
        let r = plumb(
            dir,
            &[
                "trace",
                "replay",
                "app.trace",
                "--target",
                "target",
                "--speed",
                speed,
                "--json",
                &json,
                "--timeout",
                "60s",
            ],
        );
        assert_eq!(r.code, 0, "speed {speed}: {}{}", r.stdout, r.stderr);
        let doc = crate::trace_results::replayed(&dir.join(&json));
        assert_eq!(doc["divergences"], 0, "speed {speed}: {doc}");
        assert_eq!(
            doc["halted"],
            serde_json::Value::Null,
            "speed {speed}: {doc}"
        );
        assert_eq!(
            doc["total_ops"].as_u64(),
            Some(counted),
            "speed {speed}: every operation: {doc}"
        );
        assert_eq!(
            doc["expected_errors"].as_u64(),
            Some(failed),
            "speed {speed}: {doc}"
        );
    }
    // The replay recorded in its turn: the main thread lays out and cleans
    // up; the replay threads must do what the program did.
    let r = plumb(
        dir,
        &[
            "trace",
            "record",
            "-o",
            "again.trace",
            "--root",
            "target",
            "--",
            &crate::util::plumb_bin().to_string_lossy(),
            "trace",
            "replay",
            "app.trace",
            "--target",
            "target",
            "--speed",
            "max",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let again = load(dir, "again.trace");
    let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
    let main_index = main_thread(&again.threads, pid_max.trim().parse().unwrap());
    let original = profile(&t, 0, |_| true);
    let replayed = profile(&again, 1, |th| th != main_index);
    assert_eq!(
        replayed,
        original,
        "the replay's threads (main: #{main_index}) opened:\n{}",
        opens_by_thread(&again)
    );
    t
}

/// How many maps of files under the root `t` holds that succeeded.
fn maps(t: &Trace) -> usize {
    t.ops
        .iter()
        .filter(|o| matches!(o.kind, OpKind::Map { .. }) && o.failed.is_none())
        .count()
}

/// Each thread of `t` (index and id) with the files it opened, for a
/// failure's message.
fn opens_by_thread(t: &Trace) -> String {
    let mut lines = Vec::new();
    for (i, tid) in t.threads.iter().enumerate() {
        let opened: Vec<&str> = t
            .ops
            .iter()
            .filter(|o| o.thread as usize == i)
            .filter_map(|o| match &o.kind {
                OpKind::Open { file, .. } => Some(t.files[*file as usize].path.as_str()),
                _ => None,
            })
            .collect();
        lines.push(format!("  #{i} tid {tid}: {opened:?}"));
    }
    lines.join("\n")
}

/// The index of a process's main thread among its thread ids: the one
/// every other thread was numbered after. Not simply the smallest id: the
/// kernel wraps ids past `pid_max` (32,768 here), and in a busy test run a
/// replay's threads can get ids below its main thread's (which made the
/// main thread's layout look like a replay thread's work).
fn main_thread(tids: &[u64], pid_max: u64) -> u32 {
    let after = |from: u64, to: u64| (to + pid_max - from % pid_max) % pid_max;
    let spread = |c: u64| tids.iter().map(|&t| after(c, t)).max().unwrap_or(0);
    let (index, _) = tids
        .iter()
        .enumerate()
        .min_by_key(|(_, &c)| spread(c))
        .expect("the replay recorded at least one thread");
    index as u32
}

#[test]
fn main_thread_is_found_across_a_pid_wrap() {
    assert_eq!(main_thread(&[300, 301, 302], 32768), 0);
    assert_eq!(main_thread(&[32760, 32761, 5, 6], 32768), 0);
    assert_eq!(main_thread(&[12, 32766, 3], 32768), 1);
    assert_eq!(main_thread(&[32760, 5], 1 << 22), 1);
}

#[test]
fn git_init_add_commit_gc_replays_faithfully() {
    require_tool("git", "--version", "git");
    let dir = workdir();
    let repo = dir.path().join("repo");
    for d in 0..8 {
        let sub = repo.join(format!("src/m{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..25 {
            let body = format!("// module {d} file {f}\n").repeat(1 + (d * 25 + f) % 40);
            std::fs::write(sub.join(format!("f{f}.rs")), body).unwrap();
        }
    }
    let t = record_and_check(
        dir.path(),
        "repo",
        &["sh", "-c", "cd repo && git -c user.name=t -c user.email=t@t init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm x && git gc -q"],
    );
    // git maps its index and pack files: the replay made the same maps.
    assert!(maps(&t) > 10, "{} maps", maps(&t));
}

#[test]
fn a_sqlite3_shell_session_replays_faithfully() {
    require_tool("sqlite3", "--version", "sqlite3");
    let dir = workdir();
    std::fs::create_dir(dir.path().join("db")).unwrap();
    let t = record_and_check(
        dir.path(),
        "db",
        &["sqlite3", "db/app.db", "create table t(a, b); begin; insert into t values(1, randomblob(3000)); insert into t values(2, randomblob(5000)); commit; begin; update t set b = randomblob(9000); commit; create index i on t(a); pragma journal_mode=wal; insert into t values(3, randomblob(20000)); vacuum;"],
    );
    // WAL mode maps the shared-memory file.
    assert!(maps(&t) >= 1, "{} maps", maps(&t));
}

/// Workers of a pool write parts, sync and rename them; the parent
/// gathers a summary and removes the parts.
const POOL: &str = r#"
import os, sys
from multiprocessing import Pool
def work(i):
    tmp = f"part-{i}.tmp"
    with open(tmp, "wb") as f:
        for k in range(4):
            f.write(os.urandom(4096 + 512 * i))
        f.flush(); os.fsync(f.fileno())
    os.rename(tmp, f"part-{i}.dat")
    return os.stat(f"part-{i}.dat").st_size
if __name__ == "__main__":
    os.chdir(sys.argv[1])
    os.makedirs("out", exist_ok=True)
    with Pool(3) as p:
        sizes = p.map(work, range(6))
    with open("out/summary.txt", "w") as f:
        f.write(str(sum(sizes)))
    for i in range(6):
        os.unlink(f"part-{i}.dat")
"#;

#[test]
fn a_python_multiprocessing_pool_replays_faithfully() {
    require_tool("python3", "--version", "python3");
    let dir = workdir();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    std::fs::write(dir.path().join("pool.py"), POOL).unwrap();
    record_and_check(dir.path(), "work", &["python3", "pool.py", "work"]);
}

#[test]
fn tar_extracting_a_tree_replays_faithfully() {
    require_tool("tar", "--version", "tar");
    let dir = workdir();
    let src = dir.path().join("src");
    for d in 0..5 {
        std::fs::create_dir_all(src.join(format!("d{d}/e"))).unwrap();
        for f in 0..12 {
            std::fs::write(
                src.join(format!("d{d}/e/f{f}.txt")),
                vec![b'x'; 100 * (f + 1) + d],
            )
            .unwrap();
        }
    }
    std::os::unix::fs::symlink("e/f1.txt", src.join("d0/link")).unwrap();
    crate::util::succeed(
        std::process::Command::new("tar")
            .args(["cf", "t.tar", "src"])
            .current_dir(dir.path()),
    );
    std::fs::remove_dir_all(&src).unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    record_and_check(dir.path(), "out", &["tar", "xf", "t.tar", "-C", "out"]);
}

#[test]
fn a_python_venv_with_its_absolute_symlinks_replays_faithfully() {
    require_tool("python3", "--version", "python3");
    let dir = workdir();
    std::fs::create_dir(dir.path().join("w")).unwrap();
    record_and_check(
        dir.path(),
        "w",
        &["python3", "-m", "venv", "--without-pip", "w/env"],
    );
    // The interpreter's link leads out of the tree, and was recorded so.
    let t = load(dir.path(), "app.trace");
    assert!(
        t.ops.iter().any(|o| matches!(
            &o.kind,
            OpKind::Symlink { target, .. } if target.starts_with('/')
        )),
        "no absolute symlink recorded"
    );
}

#[test]
fn python_compileall_of_a_small_tree_replays_faithfully() {
    require_tool("python3", "--version", "python3");
    let dir = workdir();
    for d in 0..4 {
        let pkg = dir.path().join(format!("src/p{d}"));
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("__init__.py"), "").unwrap();
        for f in 0..10 {
            let body = format!("def f{f}(x):\n    return x * {f} + {d}\n").repeat(1 + f * 3);
            std::fs::write(pkg.join(format!("m{f}.py")), body).unwrap();
        }
    }
    record_and_check(
        dir.path(),
        "src",
        &["python3", "-m", "compileall", "-q", "src"],
    );
}
