//! Maps in traces (`map` records, trace version 5): recorded from a real
//! program's `mmap` calls, replayed by mapping the same ranges and touching
//! their pages, checked with strace on the replay itself; hostile ranges
//! touch only what the file holds.

use crate::trace::replay_json;
use crate::util::{plumb, require_tool, succeed, workdir};
use serde_json::Value;
use std::path::Path;

/// A program that maps a 256 KiB file shared and writable and stores into
/// it, then maps 64 KiB of it read-only from 64 KiB on and loads from it,
/// then maps a 20 MiB file shared and writable (more than one 8 MiB window).
const MAPPER: &str = r#"
import mmap, os, sys
os.chdir(sys.argv[1])
with open("data.bin", "wb") as f:
    f.write(b"\0" * 262144)
with open("data.bin", "r+b") as f:
    m = mmap.mmap(f.fileno(), 262144, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    m[0:5] = b"hello"
    m[200000:200005] = b"world"
    m.close()
with open("data.bin", "rb") as f:
    m = mmap.mmap(f.fileno(), 65536, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ, offset=65536)
    assert len(m[:]) == 65536
    m.close()
with open("big.bin", "wb") as f:
    f.write(b"\1" * (20 << 20))
with open("big.bin", "r+b") as f:
    m = mmap.mmap(f.fileno(), 20 << 20, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    m[-1] = 2
    m.close()
"#;

/// The replay of `trace` under `strace -f -y`: its log.
fn strace_replay(dir: &Path, trace: &str) -> String {
    let log = dir.join("replay.strace");
    std::fs::create_dir_all(dir.join("target")).unwrap();
    succeed(
        std::process::Command::new("strace")
            .args(["-f", "-y", "-o"])
            .arg(&log)
            .arg(crate::util::plumb_bin())
            .args([
                "trace", "replay", trace, "--speed", "max", "--target", "target",
            ])
            .current_dir(dir),
    );
    std::fs::read_to_string(&log).unwrap()
}

/// The system calls of `log` on the file `name` (by its path in `<...>`),
/// by name.
fn calls_on(log: &str, name: &str) -> std::collections::BTreeMap<String, usize> {
    let mut calls = std::collections::BTreeMap::new();
    for l in log.lines().filter(|l| l.contains(&format!("/{name}>"))) {
        // "PID call(args) = ret": the word before the first '('.
        let Some(call) = l
            .split('(')
            .next()
            .and_then(|h| h.split_whitespace().last())
        else {
            continue;
        };
        *calls.entry(call.to_string()).or_default() += 1;
    }
    calls
}

/// The replay's figures for one operation type: (count, bytes).
fn op(r: &Value, name: &str) -> (u64, u64) {
    r["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == name)
        .map_or((0, 0), |o| {
            (o["count"].as_u64().unwrap(), o["bytes"].as_u64().unwrap())
        })
}

#[test]
fn a_programs_maps_are_recorded_and_replayed_page_by_page() {
    require_tool("strace", "-V", "strace");
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir(d.join("data")).unwrap();
    std::fs::write(d.join("mapper.py"), MAPPER).unwrap();
    let r = plumb(
        d,
        &[
            "trace",
            "record",
            "-o",
            "maps.trace",
            "--root",
            "data",
            "--no-calibrate",
            "--",
            "python3",
            "mapper.py",
            "data",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(d.join("maps.trace")).unwrap();
    assert!(text.starts_with("plumb-trace 5\n"), "{text}");
    // Python's own maps (its libraries) are outside the root: only the
    // program's three maps are kept, with their ranges and kinds.
    let maps: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.split(' ').nth(4) == Some("map"))
        .map(|l| l.split(' ').skip(6).collect())
        .collect();
    assert_eq!(
        maps,
        [
            vec!["0", "262144", "w"],
            vec!["65536", "65536", "r"],
            vec!["0", "20971520", "w"]
        ],
        "{text}"
    );

    let r = replay_json(d, "maps.trace", "max", &[]);
    assert_eq!(r["divergences"], 0, "{r}");
    assert_eq!(op(&r, "map"), (3, 262144 + 65536 + (20 << 20)), "{r}");
    assert_eq!(r["skipped"], 0, "{r}");

    // The replay's own system calls on the files: one mmap per recorded
    // map, with its length, offset and kind; the pages touched 8 MiB at a
    // time; and no call the program did not make (no fstat beyond its
    // own, no read, no mincore).
    let log = strace_replay(d, "maps.trace");
    let on_data = calls_on(&log, "data.bin");
    let on_big = calls_on(&log, "big.bin");
    assert_eq!(on_data.get("mmap"), Some(&2), "{on_data:?}");
    assert_eq!(on_big.get("mmap"), Some(&1), "{on_big:?}");
    for (name, calls) in [("data.bin", &on_data), ("big.bin", &on_big)] {
        for call in ["read", "pread64", "mincore"] {
            assert_eq!(calls.get(call), None, "{name}: {calls:?}");
        }
    }
    let recorded_fstats = |file: &str| {
        let id = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("file ")
                    .filter(|l| l.ends_with(&format!(" {file}")))
            })
            .and_then(|l| l.split(' ').next())
            .unwrap()
            .to_string();
        let handles: Vec<String> = text
            .lines()
            .filter_map(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                (w.len() > 7 && w[4] == "open" && w[6] == id).then(|| w[5].to_string())
            })
            .collect();
        text.lines()
            .filter(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                w.len() > 5 && w[4] == "fstat" && handles.contains(&w[5].to_string())
            })
            .count()
    };
    let fstats = |calls: &std::collections::BTreeMap<String, usize>| {
        ["fstat", "newfstatat", "statx"]
            .iter()
            .map(|c| calls.get(*c).copied().unwrap_or(0))
            .sum::<usize>()
    };
    assert_eq!(fstats(&on_data), recorded_fstats("data.bin"), "{on_data:?}");
    assert_eq!(fstats(&on_big), recorded_fstats("big.bin"), "{on_big:?}");
    assert!(!log.contains("mincore("), "the replay asked mincore");
    let maps_made: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains(" mmap(NULL, ") && (l.contains("/data.bin>") || l.contains("/big.bin>"))
        })
        .collect();
    for want in [
        "mmap(NULL, 262144, PROT_READ|PROT_WRITE, MAP_SHARED, ",
        "mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, ",
        "mmap(NULL, 20971520, PROT_READ|PROT_WRITE, MAP_SHARED, ",
    ] {
        assert!(
            maps_made.iter().any(|l| l.contains(want)),
            "no {want}:\n{}",
            maps_made.join("\n")
        );
    }
    assert!(
        maps_made.iter().any(|l| l.contains(", 0x10000) = 0x")),
        "{}",
        maps_made.join("\n")
    );
    // 256 KiB and 20 MiB (8 + 8 + 4) written, 64 KiB read, in that order
    // (the replay also asks once, of one page of anonymous memory, whether
    // the kernel populates at all).
    let populated: Vec<&str> = log
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once("madvise(")?;
            let mut words = rest.split(", ");
            let (_, len, advice) = (words.next()?, words.next()?, words.next()?);
            advice.starts_with("MADV_POPULATE").then_some(len)
        })
        .filter(|len| *len != "4096")
        .collect();
    assert_eq!(
        populated,
        ["262144", "65536", "8388608", "8388608", "4194304"],
        "{log}"
    );
    let writes = log.matches("MADV_POPULATE_WRITE) = 0").count();
    assert_eq!(writes, 4, "{log}");

    // --mmap skip notes them and maps nothing.
    let r = replay_json(d, "maps.trace", "max", &["--mmap", "skip"]);
    assert_eq!(op(&r, "map"), (0, 0), "{r}");
    assert_eq!(r["skipped"], 3, "{r}");
    let bad = plumb(d, &["trace", "replay", "maps.trace", "--mmap", "all"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr
            .contains("--mmap: mmap 'all' is not 'touch' or 'skip'"),
        "{}",
        bad.stderr
    );
}

#[test]
fn hostile_maps_touch_only_what_the_file_holds_and_fail_as_recorded() {
    require_tool("strace", "-V", "strace");
    let dir = workdir();
    let d = dir.path();
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/hostile/traces/map_absurd.trace"
        ),
        d.join("absurd.trace"),
    )
    .unwrap();
    let r = replay_json(d, "absurd.trace", "max", &[]);
    // Two maps of 1 TiB touch the 1 MiB the file holds, one past its end
    // touches nothing, 8 KiB from 4 KiB; an unaligned, an empty and a
    // 2^50-byte map fail as recorded (EINVAL, EINVAL, ENOMEM).
    assert_eq!(op(&r, "map"), (7, 2 * 1048576 + 8192), "{r}");
    assert_eq!(r["divergences"], 0, "{r}");
    assert_eq!(r["expected_errors"], 3, "{r}");
    // Each 1 TiB map is made once, its 1 MiB touched in one window, which
    // met the file's end.
    let log = strace_replay(d, "absurd.trace");
    let made = log
        .lines()
        .filter(|l| l.contains(" mmap(NULL, 1099511627776, "))
        .count();
    assert_eq!(made, 2, "{log}");
    assert!(!log.contains("mincore("), "the replay asked mincore");
    assert!(!log.contains("--- SIGBUS"), "{log}");
}
