//! What a run may take on disk is one account for the whole run, and it
//! counts metadata: every file, directory and symlink costs a block and an
//! inode (issue 29, items 3 and 4).

use crate::util::*;

#[test]
fn directories_and_empty_files_are_charged_against_max_bytes() {
    let dir = workdir();
    // Before: 20,000 directories and 20,000 empty files under 1M left
    // 80 MiB on disk.
    let s = script(
        dir.path(),
        "meta.rhai",
        "let made = 0;\n\
         let why = \"\";\n\
         try {\n\
           for i in 0..20000 { fs::mkdir(\"d\" + i); fs::open(\"f\" + i, #{ write: true, create: true }).close(); made += 1; }\n\
         } catch (e) { why = e; }\n\
         report::metric(\"made\", made, \"\", \"higher\");\n\
         if !why.contains(\"byte budget exceeded\") { throw \"not refused by the byte budget: \" + why; }\n",
    );
    let (r, target) = run_scripts(
        dir.path(),
        &[&s, "--max-bytes", "1M", "--keep", "--json", "m.json"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let made = metric(&doc(&dir.path().join("m.json")), "meta", "made").unwrap();
    // Two inodes of a block each per round: about 1 MiB / 8 KiB rounds.
    assert!((100.0..=128.0).contains(&made), "made {made} rounds");
    let used = disk_usage(&target);
    assert!(
        used <= (1 << 20) + (64 << 10),
        "{used} bytes on disk under --max-bytes 1M"
    );
}

#[test]
fn the_inode_count_has_its_own_bound_and_removals_give_it_back() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "count.rhai",
        "for i in 0..1000 { fs::write_file(\"again\", 0); fs::remove(\"again\"); }\n\
         fs::mkdir(\"d\");\n\
         fs::remove_all(\"d\");\n\
         let made = 0;\n\
         let why = \"\";\n\
         try { for i in 0..1000 { fs::write_file(\"f\" + i, 0); made += 1; } } catch (e) { why = e; }\n\
         report::metric(\"made\", made, \"\", \"higher\");\n\
         if !why.contains(\"inode budget exceeded\") || !why.contains(\"--max-inodes\") { throw \"not refused by the inode bound: \" + why; }\n",
    );
    let (r, _) = run_scripts(dir.path(), &[&s, "--max-inodes", "50", "--json", "c.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let made = metric(&doc(&dir.path().join("c.json")), "count", "made").unwrap();
    assert_eq!(
        made, 50.0,
        "a thousand files made and removed cost nothing after"
    );
}

#[test]
fn create_files_charges_its_directories_and_files_before_it_starts() {
    let dir = workdir();
    // Before: 2,000 files in 500 directories were charged 4 KiB each, and
    // the directories nothing.
    let s = script(
        dir.path(),
        "storm.rhai",
        "fs::create_files(\"s\", 2000, 0, #{ dirs: 500 });\n",
    );
    let (r, target) = run_scripts(dir.path(), &[&s, "--max-bytes", "4M", "--keep"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("byte budget exceeded"), "{}", r.stderr);
    assert!(
        disk_usage(&target) < 256 << 10,
        "refused before it made them"
    );
}

#[test]
fn a_pack_declares_its_inodes_and_the_run_grants_them() {
    let dir = workdir();
    let manifest =
        "name = \"few\"\nscenarios = [\"few.rhai\"]\n\n[capabilities]\nmax_inodes = 20\n";
    let body = "for i in 0..40 { fs::write_file(\"f\" + i, 0); }\n";
    pack_folder(dir.path(), "few", manifest, &[("few.rhai", body)]);
    let (r, _) = run_scripts(dir.path(), &["few"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("inode budget exceeded"), "{}", r.stderr);
    assert!(r.stdout.contains("few") || r.stderr.contains("few"));
    // More than the run grants is refused before anything runs.
    let (r, target) = run_scripts(dir.path(), &["few", "--max-inodes", "10"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--max-inodes"), "{}", r.stderr);
    assert!(entries(&target).is_empty(), "{:?}", entries(&target));
    // A declaration out of range is refused when the pack is read.
    let manifest =
        "name = \"huge\"\nscenarios = [\"few.rhai\"]\n\n[capabilities]\nmax_inodes = 0\n";
    pack_folder(dir.path(), "huge", manifest, &[("few.rhai", body)]);
    let (r, _) = run_scripts(dir.path(), &["huge"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("capabilities.max_inodes"), "{}", r.stderr);
}

#[test]
fn a_trace_of_many_mkdirs_is_refused_before_it_starts() {
    let dir = workdir();
    // Before: 50,000 mkdir records in a pack declaring 1M took 196 MiB.
    let n = 5000;
    let mut t = String::from("plumb-trace 1\nduration_us 10\n");
    for i in 0..n {
        t.push_str(&format!("file {i} - d{i}\n"));
    }
    t.push_str("thread 0 1\n");
    for i in 0..n {
        t.push_str(&format!("op 0 {i} 1 mkdir {i}\n"));
    }
    t.push_str(&format!("end {n}\n"));
    let manifest = "name = \"dirs\"\nscenarios = [\"replay.rhai\"]\ndata = [\"dirs.trace\"]\n\n[capabilities]\nmax_bytes = \"1M\"\n";
    pack_folder(
        dir.path(),
        "dirs",
        manifest,
        &[
            ("replay.rhai", "trace::replay(\"dirs.trace\");\n"),
            ("dirs.trace", &t),
        ],
    );
    let (r, target) = run_scripts(dir.path(), &["dirs", "--keep"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("byte budget exceeded"), "{}", r.stderr);
    assert!(disk_usage(&target) < 256 << 10, "nothing was made");
}

#[test]
fn several_scenario_arguments_share_one_budget() {
    let dir = workdir();
    let mut args: Vec<String> = (0..4)
        .map(|i| {
            script(
                dir.path(),
                &format!("w{i}.rhai"),
                "fs::write_file(\"x\", \"600k\");\n",
            )
        })
        .collect();
    // Kept: the files stay, so the second script finds the budget taken.
    // Before: twelve scripts of 900 KiB kept 11 MB under 1M.
    args.extend(["--max-bytes", "1M", "--keep"].map(String::from));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (r, target) = run_scripts(dir.path(), &a);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("byte budget exceeded").count(),
        3,
        "{}",
        r.stderr
    );
    assert!(disk_usage(&target) <= (1 << 20) + (64 << 10));
    // Not kept: each script's directory is deleted before the next runs,
    // and what it took comes back.
    let a: Vec<&str> = a[..a.len() - 1].to_vec();
    let (r, _) = run_scripts(dir.path(), &a);
    assert_eq!(r.code, 0, "{}", r.stderr);
}
