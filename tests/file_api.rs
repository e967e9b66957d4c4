//! The file API against hostile sizes: no heap in files, bounded handle
//! memory, an honest byte budget, offsets checked, reports bounded, and
//! engines that say why they cannot start.

use crate::util::{
    doc, metric, pack_folder, plumb, plumb_bin, run_scripts, script, to_run, with_rlimits, workdir,
};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory under `target` (searched depth-first) that holds `name`:
/// where `plumb run --keep` left a scenario's files.
fn kept_run_dir(target: &Path, name: &str) -> PathBuf {
    fn find(dir: &Path, name: &str) -> Option<PathBuf> {
        if dir.join(name).exists() {
            return Some(dir.to_path_buf());
        }
        std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .find_map(|p| find(&p, name))
    }
    find(target, name).unwrap_or_else(|| panic!("no kept directory holds {name} in {target:?}"))
}

#[test]
fn create_files_beyond_the_buffer_writes_only_the_pattern() {
    // 65 MiB is past the 64 MiB the buffer used to be clamped to: the file
    // got the buffer plus whatever heap followed it.
    let dir = workdir();
    let s = script(
        dir.path(),
        "c.rhai",
        "let s = fs::create_files(\"d\", 2, \"65M\");\nreport::metric(\"ops\", s.ops, \"\", \"higher\");\n",
    );
    let (r, target) = run_scripts(dir.path(), &[&s, "--keep", "--json", "c.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        metric(&doc(&dir.path().join("c.json")), "c", "ops"),
        Some(2.0)
    );
    let run = kept_run_dir(&target, "d");
    let first = std::fs::read(run.join("d/f00000000")).unwrap();
    assert_eq!(first.len(), 65 << 20, "exactly the size asked");
    let chunk = &first[..1 << 20];
    assert!(
        chunk.iter().filter(|&&b| b == 0).count() < chunk.len() / 64,
        "the pattern is incompressible data, not zeros"
    );
    for (i, c) in first.chunks(1 << 20).enumerate() {
        assert!(c == chunk, "MiB {i} is not the pattern (heap or garbage)");
    }
    let second = std::fs::read(run.join("d/f00000001")).unwrap();
    assert!(second == first, "every file is the same pattern");
}

#[test]
fn closed_handles_give_their_memory_back() {
    // Under a 1 GiB data limit, 300 closed handles that kept their 8 MiB
    // buffers (2.4 GiB) could not exist; freed on close, one at a time fits.
    let dir = workdir();
    let s = script(
        dir.path(),
        "h.rhai",
        "fs::write_file(\"s\", \"4k\");\n\
         let closed = [];\n\
         for i in 0..300 { let f = fs::open(\"s\", #{ read: true }); f.read_at(0, 8388608); f.close(); closed.push(f); }\n\
         let kept = [];\n\
         let refused = \"\";\n\
         try { for i in 0..100 { let f = fs::open(\"s\", #{ read: true }); f.read_at(0, 8388608); kept.push(f); } } catch (e) { refused = e; }\n\
         report::metric(\"closed\", closed.len(), \"\", \"higher\");\n\
         report::metric(\"kept\", kept.len(), \"\", \"higher\");\n\
         report::note(refused);\n\
         for f in kept { f.close(); }\n\
         let open = 0;\n\
         try { let all = []; for i in 0..1100 { all.push(fs::open(\"s\", #{ read: true })); open += 1; } } catch (e) { report::note(e); }\n\
         report::metric(\"open\", open, \"\", \"higher\");\n",
    );
    let target = dir.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let mut cmd = Command::new(plumb_bin());
    cmd.args([
        "run",
        "--target",
        target.to_str().unwrap(),
        &s,
        "--json",
        "h.json",
    ])
    .current_dir(dir.path());
    // Room for the 1024 files plumb allows, whatever the default.
    with_rlimits(
        &mut cmd,
        vec![
            (libc::RLIMIT_DATA, 1 << 30, 1 << 30),
            (libc::RLIMIT_NOFILE, 4096, 4096),
        ],
    );
    let r = to_run(cmd.output().expect("run plumb"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let d = doc(&dir.path().join("h.json"));
    assert_eq!(metric(&d, "h", "closed"), Some(300.0));
    // 256 MiB of buffers per scenario: 32 open handles of 8 MiB.
    assert_eq!(metric(&d, "h", "kept"), Some(32.0));
    assert_eq!(metric(&d, "h", "open"), Some(1024.0));
    let notes = d["scenarios"][0]["notes"].to_string();
    assert!(
        notes.contains("268435456 bytes a scenario may hold"),
        "{notes}"
    );
    assert!(notes.contains("1024 files are already open"), "{notes}");
}

#[test]
fn big_buffers_are_charged_the_huge_pages_they_take() {
    // A buffer of 1 MiB or more sits in whole 2 MiB huge pages: one of
    // 1 MiB + 4 KiB takes 2 MiB, and the scenario's 256 MiB of buffers
    // hold 128 of them (by length alone, 249 would pass the bound).
    let dir = workdir();
    let s = script(
        dir.path(),
        "b.rhai",
        "fs::write_file(\"s\", \"4k\");\n\
         let kept = [];\n\
         let refused = \"\";\n\
         try { for i in 0..300 { let f = fs::open(\"s\", #{ read: true }); f.read_at(0, 1052672); kept.push(f); } } catch (e) { refused = e; }\n\
         report::metric(\"kept\", kept.len(), \"\", \"higher\");\n\
         report::note(refused);\n",
    );
    let (r, _) = run_scripts(dir.path(), &[&s, "--json", "b.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("b.json"));
    assert_eq!(metric(&d, "b", "kept"), Some(128.0));
    let notes = d["scenarios"][0]["notes"].to_string();
    assert!(
        notes.contains("268435456 bytes a scenario may hold"),
        "{notes}"
    );
}

#[test]
fn a_failed_truncating_open_refunds_nothing() {
    let dir = workdir();
    pack_folder(
        dir.path(),
        "budget",
        "name = \"budget\"\nscenarios = [\"b.rhai\"]\n\n[capabilities]\nmax_bytes = \"1M\"\n",
        &[(
            "b.rhai",
            "fs::write_file(\"big\", \"900k\");\n\
             let failed = 0;\n\
             for i in 0..50 { try { fs::open(\"big\", #{ write: true, truncate: true, direct: true }); } catch (e) { failed += 1; } }\n\
             let refused = 0;\n\
             try { fs::write_file(\"more\", \"900k\"); } catch (e) { if e.contains(\"byte budget exceeded\") { refused = 1; } }\n\
             let f = fs::open(\"big\", #{ write: true, truncate: true });\n\
             f.close();\n\
             fs::write_file(\"again\", \"900k\");\n\
             report::metric(\"failed\", failed, \"\", \"higher\");\n\
             report::metric(\"refused\", refused, \"\", \"higher\");\n",
        )],
    );
    let (r, target) = run_scripts(dir.path(), &["budget", "--keep", "--json", "b.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("b.json"));
    assert_eq!(metric(&d, "b", "failed"), Some(50.0));
    assert_eq!(metric(&d, "b", "refused"), Some(1.0), "the budget held");
    let run = kept_run_dir(&target, "again");
    assert_eq!(std::fs::metadata(run.join("big")).unwrap().len(), 0);
    assert_eq!(
        std::fs::metadata(run.join("again")).unwrap().len(),
        900 << 10
    );
    assert!(!run.join("more").exists());
}

#[test]
fn remove_all_gives_a_trees_bytes_back_once() {
    let dir = workdir();
    // Beside a kept 100k, ten rounds of a 900k tree under a 1M budget:
    // each fits only if the last one's bytes came back. Had any removal
    // given back more than it freed, the 100k would be forgotten and the
    // last 100k would fit beside 900k; counted right, it is refused.
    pack_folder(
        dir.path(),
        "tree",
        "name = \"tree\"\nscenarios = [\"t.rhai\"]\n\n[capabilities]\nmax_bytes = \"1M\"\n",
        &[(
            "t.rhai",
            "fs::write_file(\"base\", \"100k\");\n\
             for i in 0..10 {\n\
               fs::mkdir(\"d\"); fs::mkdir(\"d/e\");\n\
               fs::write_file(\"d/a\", \"600k\"); fs::write_file(\"d/e/b\", \"300k\");\n\
               fs::remove_all(\"d\");\n\
             }\n\
             fs::mkdir(\"d\"); fs::remove_all(\"d\");\n\
             fs::write_file(\"kept\", \"900k\");\n\
             let refused = 0;\n\
             try { fs::write_file(\"more\", \"100k\"); } catch (e) { if e.contains(\"byte budget exceeded\") { refused = 1; } }\n\
             report::metric(\"refused\", refused, \"\", \"higher\");\n",
        )],
    );
    let (r, target) = run_scripts(dir.path(), &["tree", "--keep", "--json", "t.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("t.json"));
    assert_eq!(metric(&d, "t", "refused"), Some(1.0), "the budget held");
    let run = kept_run_dir(&target, "kept");
    assert!(!run.join("more").exists() && !run.join("d").exists());
}

#[test]
fn a_file_removed_while_held_open_gives_its_bytes_back_when_closed() {
    let dir = workdir();
    // Under a 64M budget: a 40M file removed while a handle, a background
    // job or a background copy holds it open still takes its space, so a
    // second 40M is refused until the holder is done. Once it is, the
    // bytes come back (also those a handle wrote after the removal).
    pack_folder(
        dir.path(),
        "held",
        "name = \"held\"\nscenarios = [\"h.rhai\"]\n\n[capabilities]\nmax_bytes = \"64M\"\nthreads = 2\n",
        &[(
            "h.rhai",
            r#"
fn refused(path, size) {
    let r = 0;
    try { fs::write_file(path, size); fs::remove(path); }
    catch (e) { if e.contains("byte budget exceeded") { r = 1; } else { throw e; } }
    r
}
let f = fs::open("handle", #{ write: true, create: true });
f.write_at(0, 30 * 1024 * 1024);
fs::remove("handle");
f.write_at(30 * 1024 * 1024, 10 * 1024 * 1024);
report::metric("handle_open", refused("a", "40M"), "", "higher");
f.close();
report::metric("handle_closed", refused("a", "40M"), "", "lower");

let j = io::start(#{ name: "bg", filename: "job.dat", rw: "randread", bs: "4k", size: "40M",
                     time_based: true, runtime: "30s" });
while j.progress().read.ios == 0 { time::sleep(0.02); }
fs::remove("job.dat");
report::metric("job_running", refused("a", "40M"), "", "higher");
j.stop();
report::metric("job_stopped", refused("a", "40M"), "", "lower");

// The copy holds both ends from fs::start_copy's return.
fs::write_file("src", "20M");
let c = fs::start_copy("src", "dst", #{ bs: "4k", fsync: true });
fs::remove("src");
let during = refused("a", "30M");
let running = if c.done() { 0 } else { 1 };
c.wait();
fs::remove("dst");
report::metric("copy_during", during, "", "higher");
report::metric("copy_running_after", running, "", "higher");
report::metric("copy_done", refused("a", "60M"), "", "lower");
"#,
        )],
    );
    let (r, _) = run_scripts(dir.path(), &["held", "--json", "h.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("h.json"));
    for (name, want) in [
        ("handle_open", 1.0),
        ("handle_closed", 0.0),
        ("job_running", 1.0),
        ("job_stopped", 0.0),
        ("copy_done", 0.0),
    ] {
        assert_eq!(metric(&d, "h", name), Some(want), "{name}: {d}");
    }
    // A copy still running after the check held its source through it.
    if metric(&d, "h", "copy_running_after") == Some(1.0) {
        assert_eq!(metric(&d, "h", "copy_during"), Some(1.0), "{d}");
    }
}

#[test]
fn negative_and_huge_offsets_are_errors_naming_the_argument() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "o.rhai",
        "let f = fs::open(\"x\", #{ read: true, write: true, create: true });\n\
         let msgs = [];\n\
         try { f.write_at(-1, 4096); } catch (e) { msgs.push(e); }\n\
         try { f.read_at(-5, 4096); } catch (e) { msgs.push(e); }\n\
         try { f.write_at(0, -1); } catch (e) { msgs.push(e); }\n\
         try { f.truncate(-1); } catch (e) { msgs.push(e); }\n\
         try { f.fallocate(-4096); } catch (e) { msgs.push(e); }\n\
         try { f.append(134217728); } catch (e) { msgs.push(e); }\n\
         for m in msgs { report::note(m); }\n\
         report::metric(\"errors\", msgs.len(), \"\", \"higher\");\n\
         report::metric(\"size\", f.size(), \"B\", \"lower\");\n",
    );
    let (r, _) = run_scripts(dir.path(), &[&s, "--json", "o.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("o.json"));
    assert_eq!(metric(&d, "o", "errors"), Some(6.0));
    assert_eq!(
        metric(&d, "o", "size"),
        Some(0.0),
        "nothing was written at 0"
    );
    let notes: Vec<String> = d["scenarios"][0]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    let want = [
        "write_at: offset -1 is negative",
        "read_at: offset -5 is negative",
        "write_at: length -1 is negative",
        "truncate: length -1 is negative",
        "fallocate: length -4096 is negative",
        "append: length 134217728 must be between 0 and 67108864",
    ];
    for (n, w) in notes.iter().zip(want) {
        assert!(n.contains(w), "{n:?} should say {w:?}");
    }
}

#[test]
fn report_data_is_bounded() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "n.rhai",
        "let long = \"x\"; for i in 0..13 { long += long; }\n\
         let errors = [];\n\
         try { report::note(long); } catch (e) { errors.push(e); }\n\
         try { for i in 0..2000 { report::note(\"n\"); } } catch (e) { errors.push(e); }\n\
         try { report::table(\"t\", [long], []); } catch (e) { errors.push(e); }\n\
         report::metric(\"errors\", errors.len(), \"\", \"higher\");\n\
         if !errors[0].contains(\"report::note: the note is 8192 bytes long, more than the 4096 allowed\") { throw errors[0]; }\n\
         if !errors[1].contains(\"at most 1000 notes\") { throw errors[1]; }\n\
         if !errors[2].contains(\"report::table: the cell is 8192 bytes long\") { throw errors[2]; }\n",
    );
    let (r, _) = run_scripts(dir.path(), &[&s, "--json", "n.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("n.json"));
    assert_eq!(metric(&d, "n", "errors"), Some(3.0));
    assert_eq!(d["scenarios"][0]["notes"].as_array().unwrap().len(), 1000);
}

#[test]
fn absurd_buffer_sizes_are_job_errors_not_crashes() {
    let dir = workdir();
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=x",
            "--filename=f",
            "--ioengine=null",
            "--rw=read",
            "--bs=4k",
            "--size=64k",
            "--iodepth=100000000",
        ],
    );
    // Beyond fio's own bound the option is refused when it is read.
    assert_eq!(r.code, 2, "{}", r.stdout);
    let out = format!("{}{}", r.stdout, r.stderr);
    assert!(!out.contains("panicked"), "{out}");
    assert!(
        out.contains("iodepth") && out.contains("100000000") && out.contains("out of range"),
        "{out}"
    );
    // Within the bound, buffers that could never be allocated are refused
    // before any thread starts (64 MiB x 4096 = 256 GiB).
    let r = plumb(
        dir.path(),
        &[
            "fio",
            "--name=x",
            "--filename=f",
            "--ioengine=null",
            "--rw=read",
            "--bs=64M",
            "--size=128M",
            "--iodepth=4096",
        ],
    );
    assert_ne!(r.code, 0, "{}", r.stdout);
    let out = format!("{}{}", r.stdout, r.stderr);
    assert!(!out.contains("panicked"), "{out}");
    assert!(out.contains("buffers"), "{out}");
}

#[test]
fn engines_say_why_a_deep_queue_cannot_start() {
    let dir = workdir();
    std::fs::write(dir.path().join("f"), vec![0u8; 64 << 10]).unwrap();
    // libaio's io_setup limit (aio-max-nr, 65536 here) cannot be passed
    // within the option's own bound of 65536 for a 16-block file, so only
    // io_uring's ring limit (32768 entries) is reachable from the command line.
    let cases = [(
        "io_uring",
        65536u64,
        vec![
            "io_uring: cannot create a ring of depth 65536",
            "the kernel's limit is 32768 entries",
        ],
    )];
    for (engine, depth, needles) in cases {
        let r = plumb(
            dir.path(),
            &[
                "fio",
                "--name=x",
                "--filename=f",
                &format!("--ioengine={engine}"),
                "--rw=read",
                "--bs=4k",
                "--size=64k",
                &format!("--iodepth={depth}"),
            ],
        );
        assert_ne!(r.code, 0, "{engine}: {}", r.stdout);
        let out = format!("{}{}", r.stdout, r.stderr);
        assert!(!out.contains("panicked"), "{out}");
        for n in needles {
            assert!(out.contains(n), "{engine}: {n:?} in {out}");
        }
    }
}

/// Runs `script` in a fresh target under a descriptor limit of `soft`
/// (hard limit `hard`); the run, and its result document.
fn run_with_descriptor_limit(
    dir: &Path,
    script: &str,
    soft: u64,
    hard: u64,
) -> (crate::util::Run, PathBuf) {
    let target = dir.join(format!("target-{soft}-{hard}"));
    std::fs::create_dir_all(&target).unwrap();
    let json = dir.join(format!("r-{soft}-{hard}.json"));
    let mut cmd = Command::new(plumb_bin());
    cmd.args(["run", "--target", target.to_str().unwrap(), script])
        .arg("--json")
        .arg(&json)
        .current_dir(dir);
    with_rlimits(&mut cmd, vec![(libc::RLIMIT_NOFILE, soft, hard)]);
    (to_run(cmd.output().expect("run plumb")), json)
}

#[test]
fn a_job_of_many_files_runs_under_a_low_soft_descriptor_limit() {
    // A job's files are held (for the budget) by a descriptor each beside
    // the job's own, so 300 files take 600 descriptors: more than a soft
    // limit of 256. plumb raises its soft limit to the hard one, as a
    // process may; under a hard limit of 256 too the job fails, naming the
    // file it could not open.
    let dir = workdir();
    let s = script(
        dir.path(),
        "many.rhai",
        "let r = io::job(#{ name: \"many\", rw: \"randread\", bs: \"4k\", nrfiles: 300, filesize: \"4k\", size: \"1200k\", ioengine: \"psync\" });\n\
         report::metric(\"ios\", r.read.total_ios, \"\", \"higher\");\n",
    );
    let (r, json) = run_with_descriptor_limit(dir.path(), &s, 256, 4096);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        metric(&doc(&json), "many", "ios"),
        Some(300.0),
        "{}",
        r.stderr
    );
    let (r, _) = run_with_descriptor_limit(dir.path(), &s, 256, 256);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("many.0.") && r.stderr.contains("Too many open files"),
        "{}",
        r.stderr
    );
}

#[test]
fn truncating_a_file_a_background_job_rewrites_gives_nothing_back() {
    // A background job rewriting its 768k file (charged once, at layout)
    // grows it again for free after a truncation: while the job holds it,
    // emptying it through a handle's truncate, a truncating open or a
    // copy onto it gives nothing back, so no 800k fits beside it under a
    // 1M budget. Once the job is done, the same truncation does.
    let dir = workdir();
    pack_folder(
        dir.path(),
        "regrow",
        "name = \"regrow\"\nscenarios = [\"r.rhai\"]\n\n[capabilities]\nmax_bytes = \"1M\"\nthreads = 2\n",
        &[(
            "r.rhai",
            "fs::write_file(\"small\", \"4k\");\n\
             let j = io::start(#{ name: \"j\", rw: \"write\", bs: \"64k\", size: \"800k\", time_based: true, runtime: \"30s\", ioengine: \"psync\" });\n\
             while fs::list(\".\").index_of(\"j.0.0\") < 0 || fs::stat(\"j.0.0\").size < 786432 { time::sleep(0.05); }\n\
             let fitted = 0;\n\
             for way in 0..3 {\n\
               if way == 0 { let h = fs::open(\"j.0.0\", #{ write: true }); h.truncate(0); h.close(); }\n\
               if way == 1 { let h = fs::open(\"j.0.0\", #{ write: true, truncate: true }); h.close(); }\n\
               if way == 2 { fs::copy(\"small\", \"j.0.0\"); }\n\
               time::sleep(0.3);\n\
               try { fs::write_file(\"x\", 800000); fitted += 1; fs::remove(\"x\"); } catch (e) { if !e.contains(\"byte budget exceeded\") { throw e; } }\n\
             }\n\
             j.stop();\n\
             let h = fs::open(\"j.0.0\", #{ write: true }); h.truncate(0); h.close();\n\
             let after = 0;\n\
             try { fs::write_file(\"x\", 800000); after = 1; } catch (e) { report::note(e); }\n\
             report::metric(\"fitted_while_held\", fitted, \"\", \"lower\");\n\
             report::metric(\"fitted_after\", after, \"\", \"higher\");\n",
        )],
    );
    let (r, _) = run_scripts(
        dir.path(),
        &["regrow", "--json", "r.json", "--timeout", "60s"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("r.json"));
    assert_eq!(metric(&d, "r", "fitted_while_held"), Some(0.0), "{d}");
    assert_eq!(metric(&d, "r", "fitted_after"), Some(1.0), "{d}");
}

#[test]
fn a_background_jobs_file_removed_before_its_layout_is_charged_again() {
    // io::start is charged for the layout it plans when called (nothing:
    // the 800k file exists). Removed at once, before the job's thread lays
    // it out, it is given back; the layout then made must be charged, so
    // beside another 800k under a 1M budget the job is refused. (Had the
    // job's thread planned it first, the removal of the file it holds
    // gives nothing back and the 800k is refused instead; the job then
    // refuses to write a new file under the name: one of the two, never
    // both on disk.)
    let dir = workdir();
    pack_folder(
        dir.path(),
        "relay",
        "name = \"relay\"\nscenarios = [\"l.rhai\"]\n\n[capabilities]\nmax_bytes = \"1M\"\n",
        &[(
            "l.rhai",
            "fs::write_file(\"f\", 800000);\n\
             let j = io::start(#{ name: \"j\", filename: \"f\", rw: \"write\", bs: \"64k\", size: \"800000\", ioengine: \"psync\" });\n\
             fs::remove(\"f\");\n\
             let refused = 0;\n\
             try { fs::write_file(\"g\", 800000); } catch (e) { if e.contains(\"byte budget exceeded\") { refused += 1; } else { throw e; } }\n\
             try { j.wait(); } catch (e) { if e.contains(\"byte budget exceeded\") { refused += 1; } else if !e.contains(\"removed or replaced after the job was planned\") { throw e; } }\n\
             let size = |name| if fs::list(\".\").index_of(name) >= 0 { fs::stat(name).size } else { 0 };\n\
             report::metric(\"refused\", refused, \"\", \"higher\");\n\
             report::metric(\"bytes\", size.call(\"f\") + size.call(\"g\"), \"B\", \"lower\");\n",
        )],
    );
    let (r, _) = run_scripts(dir.path(), &["relay", "--json", "l.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("l.json"));
    assert_eq!(metric(&d, "l", "refused"), Some(1.0), "{d}");
    assert!(metric(&d, "l", "bytes").unwrap() <= 1048576.0, "{d}");
}

#[test]
fn truncating_a_background_jobs_file_before_it_opens_it_gives_nothing_back() {
    // The job's thread plans its files, lays out the others (here `a`),
    // then opens its own: a truncation of `f` through another handle in
    // that gap (aimed at by truncating as soon as `a` appears) used to be
    // refunded while the job wrote it back to full
    // size, so the budget forgot 3M and a 7M write fitted beside a 3M file
    // under 8M. The file is now held from its planning on. Whatever the
    // order the threads take, what is on disk stays within the budget.
    let dir = workdir();
    pack_folder(
        dir.path(),
        "gap",
        "name = \"gap\"\nscenarios = [\"g.rhai\"]\n\n[capabilities]\nmax_bytes = \"8M\"\nthreads = 4\n",
        &[(
            "g.rhai",
            "let budget = |e| if !e.contains(\"byte budget exceeded\") { throw e; };\n\
             fs::write_file(\"f\", \"3M\");\n\
             for i in 0..10 {\n\
               try {\n\
                 let j = io::start(#{ name: `j${i}`, filename: \"a:f\", rw: \"write\", bs: \"64k\", size: \"6M\", ioengine: \"psync\" });\n\
                 let n = 0; while !fs::exists(\"a\") && n < 100000 { n += 1; }\n\
                 let h = fs::open(\"f\", #{ write: true, truncate: true }); h.close();\n\
                 j.wait();\n\
               } catch (e) { budget.call(e); }\n\
               if fs::exists(\"a\") { fs::remove(\"a\"); }\n\
             }\n\
             let fitted = 0;\n\
             try { fs::write_file(\"x\", \"7M\"); fitted = 1; } catch (e) { budget.call(e); }\n\
             report::metric(\"f_bytes\", fs::stat(\"f\").size, \"B\", \"lower\");\n\
             report::metric(\"fitted\", fitted, \"\", \"lower\");\n",
        )],
    );
    let (r, _) = run_scripts(dir.path(), &["gap", "--json", "g.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = doc(&dir.path().join("g.json"));
    let f = metric(&d, "g", "f_bytes").unwrap();
    if metric(&d, "g", "fitted") == Some(1.0) {
        assert!(
            f + 7340032.0 <= 8388608.0,
            "7M fitted beside {f} bytes under 8M: {d}"
        );
    }
}
