//! Results are never lost or corrupted: saving is all or nothing (a full
//! disk keeps the old file and exits 1), finished scenarios survive SIGKILL
//! in a journal that `--resume` continues, and result files, labels and
//! names cannot inject terminal escapes or make `compare` slow.

use crate::util::{doc, metric, plumb, plumb_bin, run_scripts, script, workdir};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DONE: &str = r#"report::metric("done", 1, "", "higher");"#;

/// A small ext4 file system mounted on a loop device, unmounted when dropped.
struct SmallDisk {
    mnt: PathBuf,
}

impl SmallDisk {
    /// Makes an 8 MiB ext4 image in `dir` and mounts it (needs root and mkfs.ext4).
    fn mount(dir: &Path) -> SmallDisk {
        // SAFETY: geteuid has no preconditions.
        assert_eq!(
            unsafe { libc::geteuid() },
            0,
            "this test mounts a loop device: run the tests as root"
        );
        let img = dir.join("disk.img");
        let mnt = dir.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let f = std::fs::File::create(&img).unwrap();
        f.set_len(8 << 20).unwrap();
        let ok = Command::new("mkfs.ext4")
            .args(["-q", "-m", "0", "-F"])
            .arg(&img)
            .status()
            .expect("mkfs.ext4 is needed (Debian package e2fsprogs)");
        assert!(ok.success(), "mkfs.ext4 failed");
        let ok = Command::new("mount")
            .args(["-o", "loop"])
            .arg(&img)
            .arg(&mnt)
            .status()
            .expect("mount is needed");
        assert!(ok.success(), "mount -o loop failed");
        SmallDisk { mnt }
    }

    /// Fills the file system until writing fails.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.mnt.join("filler")).unwrap();
        let block = vec![0xa5u8; 64 << 10];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
        // Small writes to take the last partial blocks too.
        while f.write_all(&block[..512]).is_ok() && f.sync_all().is_ok() {}
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
    }
}

#[test]
fn a_failed_save_keeps_the_old_file_and_exits_1() {
    let dir = workdir();
    let s = script(dir.path(), "s.rhai", DONE);
    // Paths that cannot be files are refused before anything runs.
    for bad in ["/", "/nonexistent/dir/x.json", "."] {
        let (r, _) = run_scripts(dir.path(), &[&s, "--json", bad]);
        assert_eq!(r.code, 2, "--json {bad}: {}", r.stderr);
        assert!(!r.stderr.contains("[1/1]"), "nothing ran: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("--json {bad}")),
            "names the path: {}",
            r.stderr
        );
    }
    // A full disk: the old result stays whole, nothing else is left there.
    let disk = SmallDisk::mount(dir.path());
    let old = disk.mnt.join("old.json");
    std::fs::write(&old, "{\"the\": \"old results\"}\n").unwrap();
    disk.fill();
    let old_arg = old.to_str().unwrap();
    let (r, _) = run_scripts(dir.path(), &[&s, "--json", old_arg]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains(old_arg), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&old).unwrap(),
        "{\"the\": \"old results\"}\n"
    );
    // The journal could not be written either; nothing but ours is on the disk.
    let mut names = crate::util::entries(&disk.mnt);
    names.retain(|n| n != "lost+found");
    assert_eq!(names, ["filler", "old.json"], "no temporary files left");
    // plumb fio's --output and --json go through the same writer.
    for (opt, name) in [("--output", "old.json"), ("--json", "old.json")] {
        let path = disk.mnt.join(name);
        let mut args = vec![
            "fio",
            "--name=j",
            "--ioengine=null",
            "--rw=read",
            "--size=64k",
            "--bs=4k",
        ];
        let p = path.to_str().unwrap().to_string();
        args.push(opt);
        args.push(&p);
        let r = plumb(dir.path(), &args);
        assert_eq!(r.code, 1, "fio {opt}: {}", r.stderr);
        assert!(r.stderr.contains(&p), "{}", r.stderr);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"the\": \"old results\"}\n"
        );
    }
    drop(disk);
    // And with room, the file is replaced.
    let path = dir.path().join("new.json");
    std::fs::write(&path, "old").unwrap();
    let (r, _) = run_scripts(dir.path(), &[&s, "--json", "new.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(metric(&doc(&path), "s", "done"), Some(1.0));
    assert!(!dir.path().join("new.json.journal").exists());
}

/// Starts `plumb run ARGS` in `dir`, waits for `marker` on its stderr, then
/// SIGKILLs it; returns the stderr read so far.
pub(crate) fn kill_after_marker(dir: &Path, args: &[&str], marker: &str) -> String {
    // The journal's lines, which the markers are, are bookkeeping shown
    // with --verbose.
    let mut child = Command::new(plumb_bin())
        .args(args)
        .arg("--verbose")
        .current_dir(dir)
        .env("PLUMB_CACHE_DIR", crate::util::test_cache())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start plumb");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = err.read_line(&mut line).unwrap();
        assert!(n > 0, "plumb ended before {marker:?}:\n{seen}");
        seen.push_str(&line);
        if line.contains(marker) {
            break;
        }
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    seen
}

#[test]
fn sigkill_keeps_finished_scenarios_and_resume_runs_the_rest() {
    let dir = workdir();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let first = script(
        dir.path(),
        "first.rhai",
        r#"report::metric("done", 7, "", "higher"); report::note("first ran");"#,
    );
    let second = script(dir.path(), "second.rhai", "loop { time::sleep(0.05); }");
    let t = target.to_str().unwrap();
    let args = ["run", &first, &second, "--target", t, "--json", "r.json"];
    kill_after_marker(dir.path(), &args, "journalled first");
    let json = dir.path().join("r.json");
    let journal = dir.path().join("r.json.journal");
    assert!(!json.exists(), "nothing saved before the end");
    assert!(journal.exists(), "the journal survives SIGKILL");

    // Without --resume, the leftover journal is reported and kept.
    let r = plumb(dir.path(), &args);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("r.json.journal") && r.stderr.contains("--resume"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "one line: {}", r.stderr);
    assert!(journal.exists());

    // A changed scenario is not mixed with its earlier result.
    std::fs::write(dir.path().join("first.rhai"), DONE).unwrap();
    script(dir.path(), "second.rhai", DONE);
    let mut resume = args.to_vec();
    resume.push("--resume");
    let r = plumb(dir.path(), &resume);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not mixing"), "{}", r.stderr);
    // Parameters are part of a scenario's identity too.
    script(
        dir.path(),
        "first.rhai",
        r#"report::metric("done", 7, "", "higher"); report::note("first ran");"#,
    );
    let mut with_param = resume.clone();
    with_param.extend(["-p", "x=1"]);
    let r = plumb(dir.path(), &with_param);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("parameters"), "{}", r.stderr);

    // Resumed: the first scenario is kept, not run again; the second runs.
    let r = plumb(dir.path(), &resume);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("first: finished before"), "{}", r.stderr);
    assert!(!r.stderr.contains("[1/2] run/first ("), "{}", r.stderr);
    let d = doc(&json);
    assert_eq!(metric(&d, "first", "done"), Some(7.0));
    assert_eq!(metric(&d, "second", "done"), Some(1.0));
    assert_eq!(d["scenarios"][0]["notes"][0], "first ran");
    assert!(!journal.exists(), "removed once the document is saved");

    // --resume with nothing to resume, and a hostile journal.
    let r = plumb(dir.path(), &resume);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("nothing to resume"), "{}", r.stderr);
    std::fs::write(
        &journal,
        "{\"journal\":\"plumb.journal.v1\",\"started\":\"x\",\"label\":null}\n{\"scenario\": 5}\n",
    )
    .unwrap();
    let r = plumb(dir.path(), &resume);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("r.json.journal:2:"), "{}", r.stderr);
}

/// A result document whose one metric has `samples`, and names as given.
fn result_doc(label: &str, host: &str, metric: &str, samples: &[f64]) -> serde_json::Value {
    json!({
        "schema": "plumb.result.v1", "plumb_version": "0.1.0", "label": label,
        "started": "2026-11-30T10:00:00+00:00", "finished": "2026-11-30T10:01:00+00:00",
        "host": { "hostname": host, "os": "Linux", "kernel": "6.18", "arch": "x86_64",
                  "cpu_model": "Test CPU", "cpus": 4, "memory_bytes": 8589934592u64 },
        "target": null,
        "scenarios": [{ "name": "s", "pack": "p", "source_sha256": null, "params": {}, "repeat": 1,
                        "metrics": [{ "name": metric, "unit": "IOPS", "better": "higher",
                                      "value": samples[samples.len() / 2], "samples": samples }],
                        "jobs": [], "tables": [], "error": null }]
    })
}

fn save(dir: &Path, name: &str, v: &serde_json::Value) -> String {
    std::fs::write(dir.join(name), serde_json::to_vec(v).unwrap()).unwrap();
    name.to_string()
}

#[test]
fn compare_of_a_million_samples_is_fast() {
    let dir = workdir();
    // Deterministic spread around 100 and 103.
    let spread = |centre: f64| -> Vec<f64> {
        (0..1_000_000u64)
            .map(|i| centre + ((i.wrapping_mul(2654435761) % 1000) as f64 / 100.0 - 5.0))
            .collect()
    };
    let a = save(
        dir.path(),
        "a.json",
        &result_doc("A", "h", "iops", &spread(100.0)),
    );
    let b = save(
        dir.path(),
        "b.json",
        &result_doc("B", "h", "iops", &spread(103.0)),
    );
    let started = Instant::now();
    let r = plumb(dir.path(), &["compare", &a, &b, "--format", "json"]);
    let took = started.elapsed();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let c = r.json();
    let cell = &c["rows"][0]["cells"][1];
    assert_eq!(cell["verdict"], "better", "{cell}");
    let (lo, hi) = (
        cell["ratio_ci"][0].as_f64().unwrap(),
        cell["ratio_ci"][1].as_f64().unwrap(),
    );
    assert!(lo > 1.02 && hi < 1.04 && lo < hi, "{lo} {hi}");
    // Before: 126 s on the release build. Debug builds parse slower; still bounded.
    assert!(took < Duration::from_secs(30), "compare took {took:?}");
}

#[test]
fn oversized_or_odd_result_files_are_refused_naming_them() {
    let dir = workdir();
    let ok = save(
        dir.path(),
        "ok.json",
        &result_doc("A", "h", "iops", &[1.0, 2.0]),
    );
    let long_name = "m".repeat(5000);
    let big = save(
        dir.path(),
        "big.json",
        &result_doc("A", "h", &long_name, &[1.0]),
    );
    let r = plumb(dir.path(), &["compare", &ok, &big]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("big.json") && r.stderr.contains("limit"),
        "{}",
        r.stderr
    );
    let mut many = result_doc("A", "h", "iops", &[1.0]);
    let one = many["scenarios"][0].clone();
    many["scenarios"] = serde_json::Value::Array(vec![one; 10_001]);
    let many = save(dir.path(), "many.json", &many);
    let r = plumb(dir.path(), &["compare", &ok, &many]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("many.json") && r.stderr.contains("scenarios"),
        "{}",
        r.stderr
    );
    // The parameters a scenario read: a million names, or one too long,
    // are refused by show and compare alike, naming the file and the field.
    let mut read_many = result_doc("A", "h", "iops", &[1.0]);
    read_many["scenarios"][0]["params_read"] = (0..1_000_000)
        .map(|i| format!("p{i}"))
        .collect::<Vec<_>>()
        .into();
    let read_many = save(dir.path(), "read-many.json", &read_many);
    let mut read_long = result_doc("A", "h", "iops", &[1.0]);
    read_long["scenarios"][0]["params_read"] = serde_json::json!(["n".repeat(5000)]);
    let read_long = save(dir.path(), "read-long.json", &read_long);
    for (file, says) in [(&read_many, "params_read"), (&read_long, "parameter name")] {
        for args in [
            vec!["show", file.as_str()],
            vec!["compare", &ok, file.as_str()],
        ] {
            let r = plumb(dir.path(), &args);
            assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
            assert!(
                r.stderr.contains(file.as_str()) && r.stderr.contains(says),
                "{args:?}: {}",
                r.stderr
            );
        }
    }
    // A directory, a device and a FIFO are not read (a FIFO would block).
    std::fs::create_dir(dir.path().join("d.json")).unwrap();
    let fifo = dir.path().join("f.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for odd in ["d.json", "/dev/zero", "f.json"] {
        let started = Instant::now();
        let r = plumb(dir.path(), &["compare", &ok, odd]);
        assert_eq!(r.code, 2, "{odd}: {}", r.stderr);
        assert!(r.stderr.contains(odd), "{}", r.stderr);
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}

#[test]
fn escapes_in_labels_names_and_notes_never_reach_the_terminal() {
    let dir = workdir();
    let evil = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m";
    let a = save(
        dir.path(),
        "a.json",
        &result_doc(evil, evil, evil, &[1.0, 2.0, 3.0]),
    );
    let b = save(
        dir.path(),
        "b.json",
        &result_doc("B", evil, evil, &[1.0, 2.0, 3.0]),
    );
    for format in ["table", "markdown", "csv"] {
        let r = plumb(
            dir.path(),
            &[
                "compare",
                &a,
                &b,
                "--format",
                format,
                "--fail-if-slower",
                "0",
            ],
        );
        assert!(r.code == 0 || r.code == 1, "{format}: {}", r.stderr);
        for out in [&r.stdout, &r.stderr] {
            assert!(
                !out.contains('\u{1b}') && !out.contains('\u{9b}') && !out.contains('\u{7}'),
                "{format}: raw escapes in {out:?}"
            );
        }
        // Shown as visible escapes; Markdown escapes them again as text
        // (a backslash and a `]` are Markdown's).
        let shown = if format == "markdown" {
            "\\\\x1b\\]0;pwned\\\\x07"
        } else {
            "\\x1b]0;pwned\\x07"
        };
        assert!(r.stdout.contains(shown), "{format}: {}", r.stdout);
    }
    // A result file that is not a document: the error quotes it safely.
    std::fs::write(
        dir.path().join("bad.json"),
        format!("{{\"schema\": \"{}\"}}", "\\u001b[2J"),
    )
    .unwrap();
    let r = plumb(dir.path(), &["compare", &a, "bad.json"]);
    assert_eq!(r.code, 2);
    assert!(!r.stderr.contains('\u{1b}'), "{:?}", r.stderr);

    // plumb run: names, notes and errors from a scenario.
    let s = script(
        dir.path(),
        "s\u{1b}[31m.rhai",
        r#"report::note("\x1b]0;note\x07"); report::metric("m\x1b[5m", 1, "\x1b[1m", "higher"); throw "bad\x1b[2J";"#,
    );
    let (r, _) = run_scripts(dir.path(), &[&s, "--format", "markdown"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    for out in [&r.stdout, &r.stderr] {
        assert!(!out.contains('\u{1b}'), "raw escape in {out:?}");
    }
    assert!(r.stderr.contains("\\x1b]0;note\\x07"), "{}", r.stderr);
}

#[test]
fn bad_thresholds_and_parameter_names_are_refused() {
    let dir = workdir();
    let s = script(dir.path(), "s.rhai", DONE);
    for expr in [
        "done >= nan",
        "done >= inf",
        "done >= 1e999",
        "done => 1",
        "done >= >= 1",
        ">= 1",
    ] {
        let (r, _) = run_scripts(dir.path(), &[&s, "--assert", expr]);
        assert_eq!(r.code, 2, "{expr}: {}", r.stderr);
        assert!(r.stderr.contains(expr), "names {expr}: {}", r.stderr);
    }
    for p in ["=x", "a b=1", "1a=1", "a\u{1b}=1", "a=b\u{1b}[2J"] {
        let (r, _) = run_scripts(dir.path(), &[&s, "-p", p]);
        assert_eq!(r.code, 2, "-p {p:?}: {}", r.stderr);
        assert!(r.stderr.contains("-p "), "{}", r.stderr);
        assert!(!r.stderr.contains('\u{1b}'), "{:?}", r.stderr);
    }
    let (r, _) = run_scripts(
        dir.path(),
        &[&s, "-p", "size_x.1=4k", "--assert", "done >= 1"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// A step longer than two seconds shows a progress line naming where the
/// scenario is, and a repeat says how long is left from the last one's
/// time; bookkeeping (the journal) only with --verbose; the end says where
/// the result went.
#[test]
fn a_long_silent_step_shows_progress_and_the_end_says_saved() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "slow.rhai",
        r#"time::sleep(2.8); report::metric("done", 1, "", "higher");"#,
    );
    let args = [
        "run", &s, "--target", ".", "--repeat", "2", "--json", "r.json",
    ];
    let r = plumb(dir.path(), &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<&str> = r.stderr.lines().collect();
    let first = lines
        .iter()
        .position(|l| l.starts_with("[1/1] slow/slow run 1/2: in time::sleep · 2 s elapsed"))
        .unwrap_or_else(|| panic!("no progress line in the first run: {}", r.stderr));
    assert!(
        lines[first..].iter().any(|l| l
            .starts_with("[1/1] slow/slow run 2/2: in time::sleep · 2 s elapsed, about ")
            && l.ends_with(" s left")),
        "the second run's line has the time left: {}",
        r.stderr
    );
    assert!(!r.stderr.contains("journalled"), "{}", r.stderr);
    assert_eq!(lines.last().copied(), Some("saved r.json"), "{}", r.stderr);
    let r = plumb(dir.path(), &[&args[..], &["--verbose"]].concat());
    assert!(
        r.stderr.contains("journalled slow in r.json.journal"),
        "{}",
        r.stderr
    );
}
