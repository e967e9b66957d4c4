//! `plumb pack`: deterministic bundles, their index, signatures in
//! minisign's formats checked both ways with the real `minisign`, and runs
//! pinned by hash and signature.

use crate::util::{entries, plumb, require_tool, succeed, workdir};
use std::path::Path;
use std::process::Command;

fn sha256_of(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(std::fs::read(path).unwrap()))
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let r = plumb(dir, args);
    assert_eq!(r.code, 0, "{args:?}: {}{}", r.stdout, r.stderr);
    r.stdout
}

#[test]
fn bundles_are_deterministic_and_an_altered_file_is_named() {
    let dir = workdir();
    let d = dir.path();
    ok(d, &["pack", "bundle", "quick", "-o", "a.plumbpack"]);
    ok(d, &["pack", "bundle", "quick", "-o", "b.plumbpack"]);
    assert_eq!(
        sha256_of(&d.join("a.plumbpack")),
        sha256_of(&d.join("b.plumbpack"))
    );
    // The hash `inspect` shows and results record is the bundle's.
    let out = ok(d, &["pack", "inspect", "quick"]);
    assert!(out.contains(&sha256_of(&d.join("a.plumbpack"))), "{out}");
    // A folder: one byte of one scenario changes the hash.
    ok(d, &["pack", "new", "mine"]);
    ok(d, &["pack", "bundle", "mine/", "-o", "m1.plumbpack"]);
    let main = d.join("mine/main.rhai");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, text.replacen("3 seconds", "4 seconds", 1)).unwrap();
    ok(d, &["pack", "bundle", "mine/", "-o", "m2.plumbpack"]);
    assert_ne!(
        sha256_of(&d.join("m1.plumbpack")),
        sha256_of(&d.join("m2.plumbpack"))
    );
    // A file altered inside the bundle after bundling is refused by name.
    let mut bytes = std::fs::read(d.join("m1.plumbpack")).unwrap();
    let at = bytes.windows(9).position(|w| w == b"3 seconds").unwrap();
    bytes[at] = b'9';
    std::fs::write(d.join("bad.plumbpack"), &bytes).unwrap();
    std::fs::create_dir(d.join("t")).unwrap();
    let r = plumb(d, &["run", "bad.plumbpack", "--target", "t"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("main.rhai was altered after bundling"),
        "{}",
        r.stderr
    );
    assert!(
        entries(&d.join("t")).is_empty(),
        "nothing written: {:?}",
        entries(&d.join("t"))
    );
}

#[test]
fn signatures_interoperate_with_minisign_both_ways() {
    require_tool("minisign", "-v", "minisign");
    let dir = workdir();
    let d = dir.path();
    ok(d, &["pack", "new", "p"]);
    ok(d, &["pack", "bundle", "p/", "-o", "p.plumbpack"]);
    // plumb signs, minisign verifies.
    ok(d, &["pack", "keygen", "-p", "plumb.pub", "-s", "plumb.key"]);
    ok(d, &["pack", "sign", "p.plumbpack", "--key", "plumb.key"]);
    succeed(
        Command::new("minisign")
            .args(["-V", "-p", "plumb.pub", "-m", "p.plumbpack"])
            .current_dir(d),
    );
    let out = ok(
        d,
        &["pack", "verify", "p.plumbpack", "--trust", "plumb.pub"],
    );
    assert!(out.contains("verified"), "{out}");
    // minisign signs, plumb verifies.
    std::fs::copy(d.join("p.plumbpack"), d.join("q.plumbpack")).unwrap();
    succeed(
        Command::new("minisign")
            .args(["-G", "-W", "-p", "m.pub", "-s", "m.key"])
            .current_dir(d),
    );
    succeed(
        Command::new("minisign")
            .args(["-S", "-s", "m.key", "-m", "q.plumbpack"])
            .current_dir(d),
    );
    ok(d, &["pack", "verify", "q.plumbpack", "--trust", "m.pub"]);
    // A signature by a key not trusted is not accepted.
    let r = plumb(
        d,
        &["pack", "verify", "q.plumbpack", "--trust", "plumb.pub"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("not trusted"), "{}", r.stderr);
    // A tampered bundle fails both ways.
    for (bundle, key) in [("p.plumbpack", "plumb.pub"), ("q.plumbpack", "m.pub")] {
        let path = d.join(bundle);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.windows(7).position(|w| w == b"64M\"\nun").unwrap();
        bytes[at] = b'9';
        std::fs::write(&path, &bytes).unwrap();
        let r = plumb(d, &["pack", "verify", bundle, "--trust", key]);
        assert_eq!(r.code, 1, "{bundle}: {}", r.stderr);
        let m = Command::new("minisign")
            .args(["-V", "-p", key, "-m", bundle])
            .current_dir(d)
            .output()
            .unwrap();
        assert!(!m.status.success(), "minisign accepted a tampered {bundle}");
    }
}

#[test]
fn runs_are_pinned_by_hash_and_signature_and_record_what_ran() {
    let dir = workdir();
    let d = dir.path();
    ok(d, &["pack", "new", "p"]);
    ok(d, &["pack", "bundle", "p/", "-o", "p.plumbpack"]);
    let hash = sha256_of(&d.join("p.plumbpack"));
    std::fs::create_dir(d.join("t")).unwrap();
    let wrong = "0".repeat(64);
    for args in [
        vec!["run", "p.plumbpack", "--target", "t", "--sha256", &wrong],
        vec!["run", "p/", "--target", "t", "--sha256", &wrong],
        vec!["run", "p.plumbpack", "--target", "t", "--require-signature"],
    ] {
        let r = plumb(d, &args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("nothing was run"), "{}", r.stderr);
        assert!(
            entries(&d.join("t")).is_empty(),
            "{args:?} wrote {:?}",
            entries(&d.join("t"))
        );
    }
    ok(d, &["pack", "keygen"]);
    ok(d, &["pack", "sign", "p.plumbpack", "--key", "plumb.key"]);
    // The folder and its bundle have the same hash.
    ok(
        d,
        &[
            "run", "p/", "--target", "t", "--sha256", &hash, "-p", "size=4M",
        ],
    );
    ok(
        d,
        &[
            "run",
            "p.plumbpack",
            "--target",
            "t",
            "--sha256",
            &hash,
            "--require-signature",
            "--trust",
            "plumb.pub",
            "-p",
            "size=4M",
            "--json",
            "r.json",
        ],
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    let s = &doc["scenarios"][0];
    assert_eq!(s["pack_sha256"], hash.as_str(), "{s}");
    assert_eq!(s["pack_version"], "0.1.0", "{s}");
    assert_eq!(s["pack_origin"], "bundle p.plumbpack", "{s}");
    assert!(
        s["pack_signer"].as_str().unwrap().ends_with(" verified"),
        "{s}"
    );
    assert_eq!(s["params"]["size"], "4M", "{s}");
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = succeed(
        Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir),
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn a_pack_runs_from_a_git_commit_and_records_it() {
    require_tool("git", "--version", "git");
    let dir = workdir();
    let d = dir.path();
    let src = d.join("src");
    std::fs::create_dir_all(src.join("packs/one")).unwrap();
    git(&src, &["init", "-q"]);
    std::fs::write(
        src.join("packs/one/pack.toml"),
        "name = \"one\"\nversion = \"1\"\nscenarios = [\"s.rhai\"]\n",
    )
    .unwrap();
    std::fs::write(
        src.join("packs/one/s.rhai"),
        "report::metric(\"v\", 1, \"n\", \"higher\");\n",
    )
    .unwrap();
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-qm", "one"]);
    git(&src, &["tag", "v1"]);
    let first = git(&src, &["rev-parse", "HEAD"]);
    std::fs::write(
        src.join("packs/one/s.rhai"),
        "report::metric(\"v\", 2, \"n\", \"higher\");\n",
    )
    .unwrap();
    git(&src, &["commit", "-qam", "two"]);
    git(d, &["clone", "-q", "--bare", "src", "bare.git"]);
    let url = format!("git+file://{}#", d.join("bare.git").display());
    std::fs::create_dir(d.join("t")).unwrap();
    let cache = d.join("cache");
    let run = |args: &[&str]| {
        crate::util::to_run(
            Command::new(crate::util::plumb_bin())
                .args(args)
                .env("PLUMB_CACHE_DIR", &cache)
                .current_dir(d)
                .output()
                .unwrap(),
        )
    };
    for (rev, value) in [(first.as_str(), 1.0), ("v1", 1.0), ("main", 2.0)] {
        let spec = format!("{url}{rev}:packs/one");
        let r = run(&["run", &spec, "--target", "t", "--json", "g.json"]);
        assert_eq!(r.code, 0, "{spec}: {}", r.stderr);
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("g.json")).unwrap()).unwrap();
        let s = &doc["scenarios"][0];
        assert_eq!(s["metrics"][0]["value"], value, "{spec}: {s}");
        let origin = s["pack_origin"].as_str().unwrap();
        assert!(
            origin.starts_with("git file://") && origin.ends_with(":packs/one"),
            "{origin}"
        );
        if rev != "main" {
            assert!(origin.contains(&format!("@{first}:")), "{origin}");
        }
    }
    // A wrong hash is refused before anything is written; a missing
    // revision is named.
    let wrong = "f".repeat(64);
    let r = run(&[
        "run",
        &format!("{url}v1:packs/one"),
        "--target",
        "t",
        "--sha256",
        &wrong,
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("nothing was run"), "{}", r.stderr);
    assert!(
        entries(&d.join("t")).is_empty(),
        "{:?}",
        entries(&d.join("t"))
    );
    let r = run(&["run", &format!("{url}nope:packs/one"), "--target", "t"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("revision nope"), "{}", r.stderr);
}
