//! Verification as fio does it beyond the method: verify reads counted
//! among the job's reads, `verify_backlog`, `verify_dump`.

use crate::util::{fio_json, plumb, require_tool, workdir};
use std::io::{Seek, SeekFrom, Write};

fn dir_field(doc: &serde_json::Value, dir: &str, field: &str) -> u64 {
    doc["jobs"][0][dir][field].as_u64().unwrap()
}

/// fio counts the reads of its verify phase (at the end, or every
/// `verify_backlog` blocks) among the job's reads: plumb's counts match.
#[test]
fn verify_reads_count_as_fios_do() {
    require_tool("fio", "--version", "fio");
    for extra in ["--verify_backlog=3", "--do_verify=1"] {
        let (a, b) = (workdir(), workdir());
        let job = [
            "--name=v",
            "--filename=data",
            "--size=256k",
            "--bs=16k",
            "--rw=randwrite",
            "--verify=crc32c",
            extra,
        ];
        let out = std::process::Command::new("fio")
            .args(job)
            .arg("--output-format=json")
            .current_dir(a.path())
            .output()
            .unwrap();
        let fio: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ours = fio_json(b.path(), &job);
        for (dir, field) in [
            ("read", "total_ios"),
            ("read", "io_kbytes"),
            ("write", "io_kbytes"),
        ] {
            assert_eq!(
                dir_field(&ours, dir, field),
                dir_field(&fio, dir, field),
                "{extra}: {dir} {field}"
            );
        }
        assert_eq!(dir_field(&ours, "read", "total_ios"), 16);
    }
}

/// A block that fails its check is told, and with `verify_dump` written
/// beside its file as `FILE.OFFSET.received`, byte for byte as read.
#[test]
fn a_corrupt_block_is_dumped() {
    let dir = workdir();
    let write = [
        "fio",
        "--name=w",
        "--filename=data",
        "--size=128k",
        "--bs=16k",
        "--rw=write",
        "--verify=crc32c",
        "--do_verify=0",
    ];
    assert_eq!(plumb(dir.path(), &write).code, 0);
    let garbage = vec![0x5au8; 16 << 10];
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("data"))
        .unwrap();
    f.seek(SeekFrom::Start(32 << 10)).unwrap();
    f.write_all(&garbage).unwrap();
    drop(f);
    let read = [
        "fio",
        "--name=r",
        "--filename=data",
        "--size=128k",
        "--bs=16k",
        "--rw=read",
        "--verify=crc32c",
        "--verify_dump=1",
    ];
    let r = plumb(dir.path(), &read);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stderr.contains("verify failed") && r.stderr.contains("offset 32768"),
        "{}",
        r.stderr
    );
    let dumped = std::fs::read(dir.path().join("data.32768.received")).unwrap();
    assert_eq!(dumped, garbage);
}
