//! Packs handed over by a stranger: bundles read as a stream in bounded
//! memory, pack names that would place the bundle elsewhere, and key
//! generation that leaves no half pair behind.

use crate::util::{entries, plumb, plumb_bin, to_run, with_rlimits, workdir, Run};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

/// Runs `plumb ARGS` in `dir` with at most `mem` bytes of address space.
fn plumb_within(dir: &Path, mem: u64, args: &[&str]) -> Run {
    let mut cmd = Command::new(plumb_bin());
    cmd.args(args).current_dir(dir).env_remove("RUST_BACKTRACE");
    with_rlimits(&mut cmd, vec![(libc::RLIMIT_AS, mem, mem)]);
    let out = cmd.output().expect("run plumb");
    assert_eq!(
        out.status.signal(),
        None,
        "{args:?} was killed under a {} MiB address space: {}",
        mem >> 20,
        String::from_utf8_lossy(&out.stderr)
    );
    to_run(out)
}

/// A ustar header block for a regular file `name` of `size` bytes, as
/// plumb writes them.
fn header(name: &str, size: u64) -> Vec<u8> {
    let mut h = tar::Header::new_ustar();
    h.set_path(name).unwrap();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_uid(0);
    h.set_gid(0);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    h.as_bytes().to_vec()
}

/// A bundle of 768 MiB that takes a few KiB of disk (one sparse entry of
/// zeros): loading it whole, five times over, needed 3.9 GB. Refused within
/// 512 MiB of address space, by `inspect`, `verify` and `run`.
#[test]
fn a_huge_sparse_bundle_is_refused_in_little_memory() {
    let dir = workdir();
    let d = dir.path();
    let path = d.join("huge.plumbpack");
    let size: u64 = 768 << 20;
    std::fs::write(&path, header("big.trace", size - 2048)).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(size)
        .unwrap();
    std::fs::create_dir(d.join("t")).unwrap();
    let r = plumb(d, &["pack", "keygen", "-p", "k.pub", "-s", "k.key"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for args in [
        &["pack", "inspect", "huge.plumbpack"][..],
        &["pack", "verify", "huge.plumbpack", "--trust", "k.pub"],
        &["run", "huge.plumbpack", "--target", "t"],
    ] {
        let r = plumb_within(d, 512 << 20, args);
        // verify says 1 (not verified), the others 2 (bad input).
        let want = if args[1] == "verify" { 1 } else { 2 };
        assert_eq!(r.code, want, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("larger than the limit"), "{}", r.stderr);
    }
    assert!(entries(&d.join("t")).is_empty());
}

/// A bundle near the limit (one 200 MiB data file) loads in memory near
/// twice its size (the file, and the text the scenarios read), not five
/// times: `inspect` works within 700 MiB of address space.
#[test]
fn a_large_bundle_is_read_as_a_stream() {
    let dir = workdir();
    let d = dir.path();
    let pack = d.join("big");
    std::fs::create_dir(&pack).unwrap();
    std::fs::write(
        pack.join("pack.toml"),
        "name = \"big\"\nversion = \"1\"\nscenarios = [\"a.rhai\"]\ndata = [\"big.trace\"]\n",
    )
    .unwrap();
    std::fs::write(
        pack.join("a.rhai"),
        "report::metric(\"x\", 1.0, \"u\", \"higher\");\n",
    )
    .unwrap();
    std::fs::File::create(pack.join("big.trace"))
        .unwrap()
        .set_len(200 << 20)
        .unwrap();
    let r = plumb(d, &["pack", "bundle", "big/"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = plumb_within(d, 700 << 20, &["pack", "inspect", "big-1.plumbpack"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("big.trace (209715200 bytes)"),
        "{}",
        r.stdout
    );
}

/// A pack's name and version name the bundle's file: a name with a path in
/// it is refused when the pack is read, and nothing is written outside.
#[test]
fn a_pack_name_cannot_place_its_bundle_elsewhere() {
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir(d.join("work")).unwrap();
    std::fs::create_dir(d.join("out")).unwrap();
    let out = d.join("out").display().to_string();
    for (name, version) in [
        ("../out/evil", "1"),
        (out.as_str(), "1"),
        ("p", "1/../../out/evil"),
    ] {
        let pk = d.join("work/pk");
        let _ = std::fs::remove_dir_all(&pk);
        std::fs::create_dir(&pk).unwrap();
        std::fs::write(
            pk.join("pack.toml"),
            format!("name = \"{name}\"\nversion = \"{version}\"\nscenarios = [\"a.rhai\"]\n"),
        )
        .unwrap();
        std::fs::write(pk.join("a.rhai"), "1;\n").unwrap();
        let r = plumb(&d.join("work"), &["pack", "bundle", "pk/"]);
        assert_eq!(r.code, 2, "{name} {version}: {}", r.stderr);
        assert!(
            r.stderr.contains("pack.toml: name = '") || r.stderr.contains("pack.toml: version = '"),
            "{}",
            r.stderr
        );
        assert!(
            entries(&d.join("out")).is_empty(),
            "{:?}",
            entries(&d.join("out"))
        );
        assert_eq!(entries(&d.join("work")), ["pk"]);
    }
    // A plain name bundles into the current directory.
    let pk = d.join("work/pk");
    std::fs::write(
        pk.join("pack.toml"),
        "name = \"fine\"\nversion = \"2.0\"\nscenarios = [\"a.rhai\"]\n",
    )
    .unwrap();
    let r = plumb(&d.join("work"), &["pack", "bundle", "pk/"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(entries(&d.join("work")), ["fine-2.0.plumbpack", "pk"]);
}

/// `keygen` checks before it writes: the same path twice is refused up
/// front, and a public key that cannot be written takes the secret key
/// it just wrote with it.
#[test]
fn keygen_leaves_no_half_pair() {
    let dir = workdir();
    let d = dir.path();
    for (public, secret) in [("k", "k"), ("k", "./k"), ("no/such/dir/k.pub", "k.key")] {
        let r = plumb(d, &["pack", "keygen", "-p", public, "-s", secret]);
        assert_eq!(r.code, 2, "{public} {secret}: {}", r.stderr);
        assert!(
            entries(d).is_empty(),
            "{public} {secret}: left {:?}",
            entries(d)
        );
    }
    let r = plumb(d, &["pack", "keygen", "-p", "k", "-s", "k"]);
    assert!(r.stderr.contains("give two paths"), "{}", r.stderr);
    let r = plumb(d, &["pack", "keygen", "-p", "k.pub", "-s", "k.key"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(entries(d), ["k.key", "k.pub"]);
}
