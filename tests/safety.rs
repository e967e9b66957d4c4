//! Bad input changes nothing; faults keep results; devices need permission.

use crate::util::{entries, plumb, run_scripts, script, workdir};

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
        ("--ioengine=splice", "splice"),
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
    if !crate::util::privileged("writes_to_block_devices_need_allow_device", "mknod") {
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
        "running r=",
        libc::SIGINT,
    );
    assert_eq!(out.status.code(), Some(130));
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("partial results printed");
    let ios = json["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    assert!(
        (1000..10_000).contains(&ios),
        "about 2 s of 2000 IOPS (the first progress line), got {ios}"
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

/// Files under `dir`, recursively, as paths relative to it (symlinks not followed).
fn tree(dir: &std::path::Path) -> Vec<String> {
    fn walk(base: &std::path::Path, d: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(base).unwrap().display().to_string());
            if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                walk(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Waits (bounded) until `found` holds, polling.
fn wait_for(what: &str, mut found: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !found() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The scenario's run directory: the one holding `name`, beneath `target`.
fn find_in_target(target: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    tree(target)
        .into_iter()
        .find(|p| p.ends_with(&format!("/{name}")))
        .map(|p| target.join(p).parent().unwrap().to_path_buf())
}

#[test]
fn io_job_names_cannot_leave_the_run_directory() {
    let dir = workdir();
    // The scenario's run directory is TARGET/plumb-run-A/plumb-run-B, so
    // "../../../o" is DIR/o.
    let outside = dir.path().join("o");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("victim.0.0"), b"precious").unwrap();
    let abs = outside.join("abs");
    let w = "rw: \"write\"";
    let cases = [
        (
            "name",
            format!("name: \"../../../o/pwn\", {w}"),
            "../../../o/pwn.0.0",
        ),
        (
            "name",
            format!("name: \"{}\", {w}", abs.display()),
            "abs.0.0",
        ),
        (
            "directory",
            format!("name: \"pwn\", directory: \"../../../o\", {w}"),
            "../../../o/pwn.0.0",
        ),
        (
            "filename",
            format!("name: \"j\", filename: \"../../../o/pwn\", {w}"),
            "../../../o/pwn",
        ),
        (
            "name",
            "name: \"../../../o/victim\", rw: \"read\", unlink: true".into(),
            "../../../o/victim.0.0",
        ),
    ];
    for (i, (option, fields, shown)) in cases.iter().enumerate() {
        let s = script(
            dir.path(),
            &format!("esc{i}.rhai"),
            &format!("io::job(#{{ {fields}, bs: \"4k\", size: \"8k\" }});\n"),
        );
        let (r, target) = run_scripts(dir.path(), &[&s]);
        assert_ne!(r.code, 0, "{fields}: {}", r.stderr);
        assert!(
            r.stderr.contains(shown),
            "{fields}: names the path: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(&format!("option '{option}'")),
            "{fields}: names the option: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains("outside the run directory"),
            "{fields}: {}",
            r.stderr
        );
        assert_eq!(
            tree(&outside),
            ["victim.0.0"],
            "{fields}: nothing created or removed outside"
        );
        assert_eq!(
            std::fs::read(outside.join("victim.0.0")).unwrap(),
            b"precious"
        );
        assert!(entries(&target).is_empty(), "no run directory left");
    }
}

#[test]
fn io_job_does_not_follow_a_symlink_planted_in_the_run_directory() {
    let dir = workdir();
    let outside = dir.path().join("outside");
    std::fs::write(&outside, b"precious").unwrap();
    // The scenario signals it is running, waits for the symlink, then uses it.
    let s = script(
        dir.path(),
        "planted.rhai",
        "fs::write_file(\"ready\", \"4k\");\n\
         while !fs::exists(\"go\") { time::sleep(0.02); }\n\
         io::job(#{ name: \"j\", filename: \"link\", rw: \"write\", bs: \"4k\", size: \"8k\", unlink: true });\n",
    );
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let child = std::process::Command::new(crate::util::plumb_bin())
        .args(["run", "--target", "target", &s, "--timeout", "60s"])
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut run_dir = None;
    wait_for("the scenario's ready file", || {
        run_dir = find_in_target(&target, "ready");
        run_dir.is_some()
    });
    let run_dir = run_dir.unwrap();
    std::os::unix::fs::symlink(&outside, run_dir.join("link")).unwrap();
    std::fs::write(run_dir.join("go"), b"").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("'link'"), "names the path: {stderr}");
    assert!(stderr.contains("outside the run directory"), "{stderr}");
    assert_eq!(std::fs::read(&outside).unwrap(), b"precious", "untouched");
}

#[test]
fn io_job_layout_stops_at_the_deadline_and_removes_its_file() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "big.rhai",
        "io::job(#{ name: \"big\", rw: \"read\", bs: \"1M\", size: \"20G\" });\n",
    );
    let start = std::time::Instant::now();
    let (r, target) = run_scripts(dir.path(), &[&s, "--timeout", "1s"]);
    let took = start.elapsed();
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("deadline"), "{}", r.stderr);
    // Laying out 20 GiB takes well over 15 s on this disk; the slack covers
    // a loaded machine (the suite runs disk-heavy tests beside this one).
    assert!(
        took < std::time::Duration::from_secs(8),
        "stopped within the deadline plus slack, took {took:?}"
    );
    assert!(entries(&target).is_empty(), "{:?}", tree(&target));
}

#[test]
fn fio_on_a_fifo_is_refused_without_blocking() {
    let dir = workdir();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed");
    let mut child = std::process::Command::new(crate::util::plumb_bin())
        .args([
            "fio",
            "--name=f",
            "--filename=fifo",
            "--rw=read",
            "--size=64k",
        ])
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("plumb fio blocked on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("fifo is a FIFO"), "{stderr}");
}

/// A pack folder `p` in `dir` with `pack.toml` and the given files.
fn pack_with(dir: &std::path::Path, manifest: &str) -> std::path::PathBuf {
    let p = dir.join("p");
    std::fs::create_dir(&p).unwrap();
    std::fs::write(p.join("pack.toml"), manifest).unwrap();
    p
}

#[test]
fn pack_scenarios_are_not_read_through_symlinks() {
    let dir = workdir();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "TOPSECRET ((( not rhai").unwrap();
    let p = pack_with(dir.path(), "name = \"p\"\nscenarios = [\"a.rhai\"]\n");
    std::os::unix::fs::symlink(&secret, p.join("a.rhai")).unwrap();
    let (r, target) = run_scripts(dir.path(), &[p.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("a.rhai"), "names the file: {}", r.stderr);
    assert!(r.stderr.contains("symlinks"), "{}", r.stderr);
    assert!(!r.stderr.contains("TOPSECRET"), "not read: {}", r.stderr);
    assert!(entries(&target).is_empty());
}

#[test]
fn pack_data_is_not_read_through_symlinks_nor_from_fifos() {
    let dir = workdir();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "TOPSECRET").unwrap();
    let p = pack_with(
        dir.path(),
        "name = \"p\"\nscenarios = [\"a.rhai\"]\ndata = [\"d.trace\"]\n",
    );
    std::fs::write(p.join("a.rhai"), "let x = 1;\n").unwrap();
    std::os::unix::fs::symlink(&secret, p.join("d.trace")).unwrap();
    let (r, _) = run_scripts(dir.path(), &[p.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("d.trace"), "names the file: {}", r.stderr);
    assert!(r.stderr.contains("symlinks"), "{}", r.stderr);
    std::fs::remove_file(p.join("d.trace")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(p.join("d.trace"))
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed");
    let (r, _) = run_scripts(dir.path(), &[p.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("d.trace: it is not a regular file"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_killed_runs_directory_is_removed_by_the_next_run() {
    let dir = workdir();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    // Not plumb's: no owner mark, so never removed.
    std::fs::create_dir(target.join("plumb-run-1-0")).unwrap();
    let s = script(
        dir.path(),
        "wait.rhai",
        "fs::write_file(\"ready\", \"4k\");\ntime::sleep(120);\n",
    );
    let mut child = std::process::Command::new(crate::util::plumb_bin())
        .args(["run", "--target", "target", &s, "--timeout", "300s"])
        .current_dir(dir.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the scenario's ready file", || {
        find_in_target(&target, "ready").is_some()
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let left = entries(&target);
    assert_eq!(left.len(), 3, "the killed run left its directory: {left:?}");
    let stale = left
        .iter()
        .find(|n| n.starts_with(&format!("plumb-run-{}-", child.id())) && !n.ends_with(".owner"))
        .expect("the killed run's directory")
        .clone();
    let ok = script(dir.path(), "ok.rhai", "let x = 1;\n");
    let (r, _) = run_scripts(dir.path(), &[&ok]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let said: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("removed stale run directory"))
        .collect();
    assert_eq!(said.len(), 1, "{}", r.stderr);
    assert!(said[0].contains(&stale), "{}", said[0]);
    assert_eq!(
        entries(&target),
        ["plumb-run-1-0"],
        "only the unmarked one is left"
    );
}
