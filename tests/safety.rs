//! Bad input changes nothing; faults keep results; devices need permission.

use crate::util::{entries, plumb, workdir};

#[test]
fn unknown_option_is_an_error_naming_it() {
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &["fio", "--name=x", "--rw=read", "--size=1M", "--iodepht=4"],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("iodepht"), "{}", r.stderr);
    assert!(
        r.stderr.contains("did you mean '--iodepth'"),
        "{}",
        r.stderr
    );
    assert!(entries(dir.path()).is_empty(), "nothing written");
}

#[test]
fn bad_values_are_errors_naming_the_option() {
    let dir = workdir();
    for (arg, needle) in [
        ("--rw=sideways", "rw"),
        ("--ioengine=posixaio", "posixaio"),
        ("--bs=0", "bs"),
        ("--random_distribution=zoned:50/5", "random_distribution"),
        ("--rwmixread=150", "rwmixread"),
    ] {
        let r = plumb(dir.path(), &["fio", "--name=x", "--size=1M", arg]);
        assert_eq!(r.code, 2, "{arg}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{arg}: {}", r.stderr);
    }
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn job_too_big_for_the_disk_is_refused_before_writing() {
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=huge",
            "--rw=write",
            "--size=900T",
            "--ioengine=psync",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("900TiB"),
        "needed size named: {}",
        r.stderr
    );
    assert!(r.stderr.contains("free"), "{}", r.stderr);
    assert!(
        entries(dir.path()).is_empty(),
        "nothing written: {:?}",
        entries(dir.path())
    );
}

#[test]
fn verify_catches_a_corrupted_block() {
    let dir = workdir();
    let w = plumb(
        dir.path(),
        &[
            "fio",
            "--name=w",
            "--filename=v",
            "--rw=randwrite",
            "--bs=4k",
            "--size=256k",
            "--verify=crc32c",
            "--ioengine=libaio",
            "--direct=1",
            "--iodepth=8",
        ],
    );
    assert_eq!(w.code, 0, "{}", w.stderr);
    // Flip one byte inside block 17.
    let path = dir.path().join("v");
    let mut data = std::fs::read(&path).unwrap();
    data[17 * 4096 + 1000] ^= 0x5a;
    std::fs::write(&path, &data).unwrap();
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=r",
            "--filename=v",
            "--rw=read",
            "--bs=4k",
            "--size=256k",
            "--verify=crc32c",
            "--output-format=json",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("offset 69632"),
        "names the block: {}",
        r.stderr
    );
    assert!(r.stderr.contains("crc32c"), "{}", r.stderr);
    let json = r.json();
    assert_ne!(json["jobs"][0]["error"], 0);
}

#[test]
fn laid_out_data_is_incompressible_and_unique() {
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=l",
            "--filename=l",
            "--rw=read",
            "--size=4M",
            "--ioengine=psync",
        ],
    );
    assert_eq!(r.code, 0);
    let data = std::fs::read(dir.path().join("l")).unwrap();
    assert_eq!(data.len(), 4 << 20);
    let mut blocks: Vec<&[u8]> = data.chunks(4096).collect();
    blocks.sort();
    blocks.dedup();
    assert_eq!(blocks.len(), 1024, "every 4k block differs (no dedupe)");
    let mut hist = [0u64; 256];
    for b in &data {
        hist[*b as usize] += 1;
    }
    let expect = data.len() as f64 / 256.0;
    assert!(
        hist.iter()
            .all(|&c| (c as f64 - expect).abs() / expect < 0.05),
        "bytes look uniform"
    );
}

#[test]
fn writes_to_block_devices_need_allow_device() {
    // A device node for an unattached loop device: if the refusal failed, the
    // open would fail with ENXIO rather than write anywhere.
    if unsafe { libc_geteuid() } != 0 {
        eprintln!("SKIP writes_to_block_devices_need_allow_device: needs root to mknod");
        return;
    }
    let dir = workdir();
    let node = dir.path().join("fakedev");
    let st = std::process::Command::new("mknod")
        .arg(&node)
        .args(["b", "7", "250"])
        .status()
        .unwrap();
    assert!(st.success());
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=d",
            "--filename=fakedev",
            "--rw=write",
            "--size=4k",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("--allow-device"), "{}", r.stderr);
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

#[test]
fn sigint_stops_the_job_and_keeps_results() {
    let dir = workdir();
    let out = crate::util::plumb_signalled(
        dir.path(),
        &[
            "fio",
            "--name=long",
            "--ioengine=null",
            "--rw=randread",
            "--size=64M",
            "--rate_iops=2000",
            "--time_based",
            "--runtime=60",
            "--output-format=json",
        ],
        1500,
        "-INT",
    );
    assert_eq!(out.status.code(), Some(130));
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("partial results printed");
    let ios = json["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    assert!(
        (1000..10_000).contains(&ios),
        "about 1.5 s of 2000 IOPS, got {ios}"
    );
}

#[test]
fn unlink_removes_the_files() {
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=u",
            "--rw=randwrite",
            "--size=1M",
            "--nrfiles=3",
            "--unlink=1",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}
