//! The git pack cache: what is planted in it runs nothing, a cache others
//! can write is refused, and runs of one `git+` pack at once all succeed
//! and leave no half-made clone behind.

use crate::pack::git;
use crate::util::{entries, plumb_bin, require_tool, to_run, workdir, Run};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A repository `src` with a one-scenario pack in `packs/one` (metric `v`
/// = `value`) and `padding` bytes of incompressible data beside it, cloned
/// bare into `name`; returns the `git+file://…#main:packs/one` spec.
fn repo(d: &Path, name: &str, value: u32, padding: usize) -> String {
    let src = d.join(format!("{name}-src"));
    std::fs::create_dir_all(src.join("packs/one")).unwrap();
    git(&src, &["init", "-q"]);
    std::fs::write(
        src.join("packs/one/pack.toml"),
        "name = \"one\"\nversion = \"1\"\nscenarios = [\"s.rhai\"]\n",
    )
    .unwrap();
    std::fs::write(
        src.join("packs/one/s.rhai"),
        format!("report::metric(\"v\", {value}, \"n\", \"higher\");\n"),
    )
    .unwrap();
    if padding > 0 {
        let mut bytes = vec![0u8; padding];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for b in &mut bytes {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        std::fs::write(src.join("padding.bin"), bytes).unwrap();
    }
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-qm", "one"]);
    git(d, &["clone", "-q", "--bare", &format!("{name}-src"), name]);
    format!("git+file://{}#main:packs/one", d.join(name).display())
}

/// The URL of `spec` and the folder plumb keeps its clone in, below `cache`.
fn clone_dir(cache: &Path, spec: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let url = spec
        .strip_prefix("git+")
        .unwrap()
        .split('#')
        .next()
        .unwrap();
    let key = format!("{:x}", Sha256::digest(url.as_bytes()));
    cache.join("git").join(&key[..24])
}

/// A cache folder as plumb makes it: private to this user.
fn private_cache(d: &Path) -> PathBuf {
    let cache = d.join("cache");
    std::fs::create_dir_all(cache.join("git")).unwrap();
    for p in [&cache, &cache.join("git")] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    cache
}

fn run_with(d: &Path, cache: &Path, args: &[&str]) -> Run {
    to_run(
        Command::new(plumb_bin())
            .args(args)
            .env("PLUMB_CACHE_DIR", cache)
            .current_dir(d)
            .output()
            .unwrap(),
    )
}

fn value(d: &Path, json: &str) -> serde_json::Value {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join(json)).unwrap()).unwrap();
    doc["scenarios"][0]["metrics"][0]["value"].clone()
}

/// Plants at `clone` what someone able to write the cache once could: a
/// bare repository whose configuration sends the fetch of `url` to an ssh
/// command, and sets a credential helper, fsmonitor, hooks and an include,
/// each of which would leave a file in `marks`.
fn plant(d: &Path, clone: &Path, url: &str, marks: &Path) {
    std::fs::create_dir_all(marks).unwrap();
    git(d, &["clone", "-q", "--bare", url, clone.to_str().unwrap()]);
    let hooks = d.join("planted-hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for hook in ["reference-transaction", "post-checkout", "pre-auto-gc"] {
        let h = hooks.join(hook);
        std::fs::write(
            &h,
            format!("#!/bin/sh\ntouch '{}/{hook}'\n", marks.display()),
        )
        .unwrap();
        std::fs::set_permissions(&h, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::copy(&h, clone.join("hooks").join(hook)).unwrap();
    }
    let include = d.join("planted-include");
    std::fs::write(
        &include,
        format!(
            "[core]\n\tsshCommand = \"touch '{m}/included'; false\"\n",
            m = marks.display()
        ),
    )
    .unwrap();
    let m = marks.display();
    let mut config = std::fs::read_to_string(clone.join("config")).unwrap();
    config.push_str(&format!(
        "[core]\n\tsshCommand = \"touch '{m}/ssh'; false\"\n\tfsmonitor = \"touch '{m}/fsmonitor'; false\"\n\thooksPath = {hooks}\n\
         [url \"ssh://plumb-test.invalid/x\"]\n\tinsteadOf = {url}\n\
         [credential]\n\thelper = \"!touch '{m}/credential'; false\"\n\
         [include]\n\tpath = {include}\n",
        hooks = hooks.display(),
        include = include.display(),
    ));
    std::fs::write(clone.join("config"), config).unwrap();
}

#[test]
fn a_clone_planted_in_the_cache_runs_nothing_and_is_replaced() {
    require_tool("git", "--version", "git");
    let dir = workdir();
    let d = dir.path();
    let spec = repo(d, "good.git", 7, 0);
    let url = spec
        .strip_prefix("git+")
        .unwrap()
        .split('#')
        .next()
        .unwrap();
    let cache = private_cache(d);
    let clone = clone_dir(&cache, &spec);
    let marks = d.join("marks");
    plant(d, &clone, url, &marks);
    // The attack is real: git itself, asked as plumb used to ask it, runs
    // the planted ssh command.
    let _ = Command::new("git")
        .arg("--git-dir")
        .arg(&clone)
        .args(["fetch", "-q", "--", url, "+refs/heads/*:refs/heads/*"])
        .output()
        .unwrap();
    assert!(
        !entries(&marks).is_empty(),
        "the planted repository is inert: no test"
    );
    std::fs::remove_dir_all(&marks).unwrap();
    std::fs::create_dir(&marks).unwrap();

    std::fs::create_dir(d.join("t")).unwrap();
    let r = run_with(
        d,
        &cache,
        &["run", &spec, "--target", "t", "--json", "r.json"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(value(d, "r.json"), 7.0);
    assert!(
        r.stderr.contains("not using the cached clone") && r.stderr.contains("sshcommand"),
        "{}",
        r.stderr
    );
    assert_eq!(entries(&marks), Vec::<String>::new(), "something ran");
    let config = std::fs::read_to_string(clone.join("config")).unwrap();
    assert!(
        !config.contains("insteadOf") && !config.contains("sshCommand"),
        "{config}"
    );
    assert!(entries(&d.join("t")).is_empty());

    // A clone of another repository under this URL's name is not used.
    let other = repo(d, "other.git", 9, 0);
    let other_url = other
        .strip_prefix("git+")
        .unwrap()
        .split('#')
        .next()
        .unwrap();
    std::fs::remove_dir_all(&clone).unwrap();
    git(
        d,
        &["clone", "-q", "--bare", other_url, clone.to_str().unwrap()],
    );
    let r = run_with(
        d,
        &cache,
        &["run", &spec, "--target", "t", "--json", "r.json"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("it is a clone of"), "{}", r.stderr);
    assert_eq!(value(d, "r.json"), 7.0, "the pack of the URL asked for");
    assert_eq!(entries(&marks), Vec::<String>::new());
}

#[test]
fn a_cache_others_can_write_is_refused() {
    require_tool("git", "--version", "git");
    let dir = workdir();
    let d = dir.path();
    let spec = repo(d, "good.git", 7, 0);
    let url = spec
        .strip_prefix("git+")
        .unwrap()
        .split('#')
        .next()
        .unwrap();
    let cache = private_cache(d);
    let clone = clone_dir(&cache, &spec);
    let marks = d.join("marks");
    plant(d, &clone, url, &marks);
    std::fs::create_dir(d.join("t")).unwrap();
    for (path, mode) in [(cache.join("git"), 0o777), (cache.clone(), 0o770)] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let r = run_with(d, &cache, &["run", &spec, "--target", "t"]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.contains(&path.display().to_string())
                && r.stderr.contains("writable by group or others"),
            "{}",
            r.stderr
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(cache.join("git"), Some(65534), None).unwrap();
        let r = run_with(d, &cache, &["run", &spec, "--target", "t"]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("owned by uid 65534"), "{}", r.stderr);
        std::os::unix::fs::chown(cache.join("git"), Some(0), None).unwrap();
    }
    assert_eq!(entries(&marks), Vec::<String>::new(), "something ran");
    assert!(
        std::fs::read_to_string(clone.join("config"))
            .unwrap()
            .contains("sshCommand"),
        "a refused cache is left as it is"
    );
    assert!(entries(&d.join("t")).is_empty());
}

#[test]
fn runs_of_one_git_pack_at_once_all_succeed_and_leave_no_partial_clone() {
    require_tool("git", "--version", "git");
    let dir = workdir();
    let d = dir.path();
    // 24 MiB that git cannot compress: each clone takes a while, so the
    // runs overlap.
    let spec = repo(d, "big.git", 3, 24 << 20);
    let cache = private_cache(d);
    let clone = clone_dir(&cache, &spec);
    let key = clone.file_name().unwrap().to_str().unwrap().to_string();
    let together = |round: &str| {
        let children: Vec<_> = (0..3)
            .map(|i| {
                let t = d.join(format!("t-{round}-{i}"));
                std::fs::create_dir(&t).unwrap();
                Command::new(plumb_bin())
                    .args(["run", &spec, "--target"])
                    .arg(&t)
                    .env("PLUMB_CACHE_DIR", &cache)
                    .current_dir(d)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(
            entries(&cache.join("git")),
            vec![key.clone(), format!("{key}.lock")],
            "{round}"
        );
    };
    together("clone");
    together("fetch");

    // What killed runs left is swept: a clone of this key, one of another
    // key whose lock is free, and one of an earlier plumb whose process is
    // gone; a clone whose key another process holds is left alone.
    let busy = "b".repeat(24);
    let lock = std::fs::File::create(cache.join("git").join(format!("{busy}.lock"))).unwrap();
    lock.lock().unwrap();
    let left = [
        format!(".clone-{key}-999999999"),
        format!(".clone-{}-999999999", "a".repeat(24)),
        ".clone-999999999".to_string(),
    ];
    let kept = format!(".clone-{busy}-1");
    for name in left.iter().chain([&kept]) {
        let p = cache.join("git").join(name);
        std::fs::create_dir_all(p.join("objects")).unwrap();
        std::fs::write(p.join("objects/pack"), vec![1u8; 1 << 20]).unwrap();
    }
    std::fs::create_dir(d.join("t")).unwrap();
    let r = run_with(d, &cache, &["run", &spec, "--target", "t"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let now = entries(&cache.join("git"));
    for name in &left {
        assert!(!now.contains(name), "{name} left: {now:?}");
    }
    assert!(now.contains(&kept), "{now:?}");
    drop(lock);
}
