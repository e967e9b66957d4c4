//! Maps in traces (`map` records, trace version 5): recorded from a real
//! program's `mmap` calls, replayed by mapping the same ranges and touching
//! their pages, checked with strace on the replay itself; hostile ranges
//! touch only what the file holds.

use crate::trace_results::replayed;
use crate::util::{plumb, require_tool, workdir};
use serde_json::Value;
use std::path::Path;

/// A program that maps a 256 KiB file shared and writable, stores into
/// it, then maps 64 KiB of it read-only from 64 KiB on and loads from it.
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
"#;

/// Runs `plumb trace replay TRACE` with `extra` options in `dir/target`,
/// saving the result; returns it as `trace_results::replayed` reads it.
fn replay(dir: &Path, trace: &str, extra: &[&str]) -> Value {
    std::fs::create_dir_all(dir.join("target")).unwrap();
    let mut args = vec![
        "trace", "replay", trace, "--speed", "max", "--target", "target", "--json", "r.json",
    ];
    args.extend_from_slice(extra);
    let r = plumb(dir, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    replayed(&dir.join("r.json"))
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
    // program's two maps of data.bin are kept, with their ranges and kinds.
    let maps: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.split(' ').nth(4) == Some("map"))
        .map(|l| l.split(' ').skip(6).collect())
        .collect();
    assert_eq!(
        maps,
        [vec!["0", "262144", "w"], vec!["65536", "65536", "r"]],
        "{text}"
    );

    let r = replay(d, "maps.trace", &[]);
    assert_eq!(r["divergences"], 0, "{r}");
    assert_eq!(op(&r, "map"), (2, 262144 + 65536), "{r}");
    assert_eq!(r["skipped"], 0, "{r}");

    // The replay's own system calls: the same maps, each touched once.
    let log = d.join("replay.strace");
    std::fs::create_dir_all(d.join("target")).unwrap();
    let out = std::process::Command::new("strace")
        .args(["-f", "-e", "trace=mmap,madvise", "-o"])
        .arg(&log)
        .arg(crate::util::plumb_bin())
        .args([
            "trace",
            "replay",
            "maps.trace",
            "--speed",
            "max",
            "--target",
            "target",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("MADV_POPULATE")
                || (l.contains("mmap(NULL, ")
                    && (l.contains(", 262144, ") || l.contains(", 65536, "))
                    && !l.contains("MAP_ANONYMOUS"))
        })
        .collect();
    let shared = calls.iter().position(|l| {
        l.contains("mmap(NULL, 262144, PROT_READ|PROT_WRITE, MAP_SHARED, ") && l.contains(", 0) = ")
    });
    let private = calls.iter().position(|l| {
        l.contains("mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, ") && l.contains(", 0x10000) = ")
    });
    let (Some(shared), Some(private)) = (shared, private) else {
        panic!(
            "the replay did not map as the program did:\n{}",
            calls.join("\n")
        );
    };
    assert!(
        calls[shared + 1].contains("262144, MADV_POPULATE_WRITE) = 0"),
        "{}",
        calls.join("\n")
    );
    assert!(
        calls[private + 1].contains("65536, MADV_POPULATE_READ) = 0"),
        "{}",
        calls.join("\n")
    );

    // --mmap skip notes them and maps nothing.
    let r = replay(d, "maps.trace", &["--mmap", "skip"]);
    assert_eq!(op(&r, "map"), (0, 0), "{r}");
    assert_eq!(r["skipped"], 2, "{r}");
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
    let r = replay(d, "absurd.trace", &[]);
    // Two maps of 2^50 bytes touch the 1 MiB the file holds, one past its
    // end touches nothing, 8 KiB from 4 KiB; an unaligned and an empty map
    // fail with EINVAL as recorded.
    assert_eq!(op(&r, "map"), (6, 2 * 1048576 + 8192), "{r}");
    assert_eq!(r["divergences"], 0, "{r}");
    assert_eq!(r["expected_errors"], 2, "{r}");
}
