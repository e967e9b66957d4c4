//! `PACK/SCENARIO`: one scenario of a built-in pack, a folder, a bundle or
//! a git repository, read by `plumb run`, `list` and `check` alike; the
//! selected pack keeps its name, hash and comparison template. Size
//! parameters and `max_bytes` reckoned from them: built-in scenarios at
//! small sizes fit a tight budget, a refusal names the parameter. What
//! `plumb check` finds before running: unknown option keys, undeclared
//! capabilities.

use crate::pack::git;
use crate::util::{plumb, workdir};
use serde_json::Value;
use std::path::Path;

/// The result document `plumb run ARGS --json FILE` saved in `dir`.
fn run_json(dir: &Path, file: &str, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--json", file, "--format", "json"]);
    let r = plumb(dir, &all);
    assert_eq!(r.code, 0, "plumb run {args:?}: {}", r.stderr);
    serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap()
}

/// The names of the scenarios a result holds.
fn names(d: &Value) -> Vec<&str> {
    d["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect()
}

/// A pack folder `two` with scenarios `a` and `b`, each reporting metric
/// `v` (1 and 2).
fn two_scenarios(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("two");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(
        p.join("pack.toml"),
        "name = \"two\"\nversion = \"1\"\nscenarios = [\"a.rhai\", \"b.rhai\"]\n",
    )
    .unwrap();
    for (n, v) in [("a", 1), ("b", 2)] {
        std::fs::write(
            p.join(format!("{n}.rhai")),
            format!("report::metric(\"v\", {v}, \"n\", \"higher\");\n"),
        )
        .unwrap();
    }
    p
}

#[test]
fn a_built_in_scenario_runs_alone_and_keeps_its_pack() {
    let dir = workdir();
    let d = run_json(
        dir.path(),
        "one.json",
        &["run", "pts-disk/dbench", "-p", "dbench_clients=1"],
    );
    assert_eq!(names(&d), ["dbench"]);
    let s = &d["scenarios"][0];
    assert_eq!(s["pack"], "pts-disk");
    // The pack's own hash and parameters, not a pack of one.
    let whole = plumb(dir.path(), &["pack", "inspect", "pts-disk"]);
    let sha = s["pack_sha256"].as_str().unwrap();
    assert!(whole.stdout.contains(sha), "{sha} not in {}", whole.stdout);
    assert_eq!(s["params"]["fsmark_files"], "1000");
}

#[test]
fn an_unknown_scenario_is_refused_naming_the_pack_s_scenarios() {
    let dir = workdir();
    for cmd in ["run", "check", "list"] {
        let r = plumb(dir.path(), &[cmd, "pts-disk/postmak"]);
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        assert!(
            r.stderr.contains("pts-disk has no scenario 'postmak' (did you mean 'postmark'?); its scenarios: fs-mark, postmark, dbench,"),
            "{cmd}: {}",
            r.stderr
        );
    }
    // Neither a path nor a pack: the whole argument is named.
    let r = plumb(dir.path(), &["run", "no-such/thing"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("no-such/thing: not a scenario file"),
        "{}",
        r.stderr
    );
    // `plumb list PACK` still lists every scenario; PACK/SCENARIO just one.
    let all = plumb(dir.path(), &["list", "pts-disk"]);
    assert!(all.stdout.contains("scenario postmark") && all.stdout.contains("scenario dbench"));
    let one = plumb(dir.path(), &["list", "pts-disk/dbench"]);
    assert!(one.stdout.contains("scenario dbench") && !one.stdout.contains("scenario postmark"));
    assert_eq!(plumb(dir.path(), &["check", "pts-disk/dbench"]).code, 0);
}

#[test]
fn folders_bundles_and_git_packs_select_a_scenario() {
    let dir = workdir();
    let d = dir.path();
    two_scenarios(d);
    assert_eq!(names(&run_json(d, "f.json", &["run", "./two/b"])), ["b"]);
    // A folder given as is still runs whole.
    assert_eq!(names(&run_json(d, "w.json", &["run", "two"])), ["a", "b"]);
    let r = plumb(d, &["pack", "bundle", "two", "-o", "two.plumbpack"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = run_json(d, "b.json", &["run", "two.plumbpack/a"]);
    assert_eq!(names(&b), ["a"]);
    assert_eq!(b["scenarios"][0]["metrics"][0]["value"], 1.0);
    // git: a second '#' selects.
    git(&d.join("two"), &["init", "-q"]);
    git(&d.join("two"), &["add", "-A"]);
    git(&d.join("two"), &["commit", "-qm", "two"]);
    let spec = format!("git+file://{}#HEAD#b", d.join("two").display());
    let g = run_json(d, "g.json", &["run", &spec]);
    assert_eq!(names(&g), ["b"]);
    let spec = format!("git+file://{}#HEAD#c", d.join("two").display());
    let r = plumb(d, &["run", &spec]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("two has no scenario 'c'; its scenarios: a, b"),
        "{}",
        r.stderr
    );
}

#[test]
fn two_single_scenario_results_compare_with_the_pack_s_template() {
    let dir = workdir();
    let d = dir.path();
    let args = [
        "run",
        "cloud-compare/ioping",
        "-p",
        "ioping_count=3",
        "-p",
        "ioping_interval=1ms",
    ];
    for f in ["x.json", "y.json"] {
        assert_eq!(names(&run_json(d, f, &args)), ["ioping"]);
    }
    let r = plumb(d, &["compare", "x.json", "y.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("ioping latency"), "{}", r.stdout);
}

#[test]
fn a_journal_of_a_selected_run_resumes_it_and_refuses_another_selection() {
    let dir = workdir();
    let d = dir.path();
    two_scenarios(d);
    // A journal holding `b` (as a killed `two/b` run leaves it).
    let b = run_json(d, "b.json", &["run", "two/b"]);
    let journal =
        serde_json::json!({"journal": "plumb.journal.v1", "started": b["started"], "label": null});
    std::fs::write(
        d.join("r.json.journal"),
        format!(
            "{journal}\n{}\n",
            serde_json::json!({"scenario": b["scenarios"][0]})
        ),
    )
    .unwrap();
    let r = plumb(d, &["run", "two/a", "--json", "r.json", "--resume"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("two/b, which this run does not include"),
        "{}",
        r.stderr
    );
    let r = plumb(d, &["run", "two/b", "--json", "r.json", "--resume"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("finished before, kept"), "{}", r.stderr);
}

/// Runs `args` (a pack at small sizes) under `--max-bytes max` and
/// returns the result, failing the test on any scenario error.
fn fits(dir: &Path, max: &str, args: &[&str]) -> Value {
    let mut all = vec!["run"];
    all.extend(args);
    all.extend(["--max-bytes", max, "--timeout", "60s"]);
    let d = run_json(dir, "fits.json", &all);
    for s in d["scenarios"].as_array().unwrap() {
        assert!(s["error"].is_null(), "{args:?}: {s}");
    }
    d
}

#[test]
fn file_writing_scenarios_at_small_sizes_fit_a_tight_budget() {
    let dir = workdir();
    let d = dir.path();
    let d_dir = d;
    let t = std::time::Instant::now();
    // Each --max-bytes is the pack's own max_bytes with these parameters.
    fits(
        d,
        "128M",
        &[
            "quick",
            "-p",
            "size=16M",
            "-p",
            "runtime=1s",
            "-p",
            "files=50",
        ],
    );
    fits(
        d,
        "185M",
        &[
            "cloud-compare",
            "-p",
            "size=16M",
            "-p",
            "fileio_size=16M",
            "-p",
            "fileio_time=1s",
            "-p",
            "dd_size=8M",
            "-p",
            "dd_runs=1",
            "-p",
            "ioping_size=1M",
            "-p",
            "ioping_count=2",
            "-p",
            "ioping_interval=1ms",
            "-p",
            "bonnie_size=8M",
            "-p",
            "bonnie_files=50",
        ],
    );
    fits(
        d,
        "32M",
        &[
            "yabs/disk",
            "-p",
            "size=16M",
            "-p",
            "runtime=1s",
            "-p",
            "block_sizes=4k",
        ],
    );
    fits(
        d,
        "32M",
        &[
            "crystaldiskmark",
            "-p",
            "size=16M",
            "-p",
            "runtime=1s",
            "-p",
            "passes=1",
            "-p",
            "interval=0s",
        ],
    );
    fits(
        d,
        "80M",
        &[
            "fileio",
            "-p",
            "file_total_size=16M",
            "-p",
            "file_num=4",
            "-p",
            "time=1s",
        ],
    );
    fits(
        d,
        "128M",
        &["interference", "-p", "size=16M", "-p", "runtime=1s"],
    );
    // The kernel-shaped trees at the pack's own budget are run by
    // suites::pts_disk_runs_every_test_at_small_sizes; here the small tree,
    // under the same declared budget.
    let d = fits(
        d,
        "2176M",
        &[
            "pts-disk",
            "-p",
            "tree=small",
            "-p",
            "fsmark_files=8",
            "-p",
            "fsmark_size=64k",
            "-p",
            "fsmark_threads=2",
            "-p",
            "fsmark_dirs=4",
            "-p",
            "postmark_files=50",
            "-p",
            "postmark_transactions=200",
            "-p",
            "dbench_clients=1",
            "-p",
            "iozone_size=2M",
            "-p",
            "iozone_records=4k,1m",
        ],
    );
    let metric = |scenario: &str, name: &str| crate::util::metric(&d, scenario, name).unwrap();
    let unpacked = metric("unpack-tree", "files_per_sec") * metric("unpack-tree", "seconds");
    assert!(
        (unpacked - 1100.0).abs() < 1e-3,
        "unpacked {unpacked} files"
    );
    let r = plumb(d_dir, &["run", "pts-disk/unpack-tree", "-p", "tree=big"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("tree big: kernel or small"),
        "{}",
        r.stderr
    );
    assert!(t.elapsed().as_secs() < 150, "took {:?}", t.elapsed());
}

#[test]
fn quick_latency_honours_runtime_and_size() {
    let dir = workdir();
    let t = std::time::Instant::now();
    let d = fits(
        dir.path(),
        "128M",
        &["quick/latency", "-p", "runtime=1s", "-p", "size=16M"],
    );
    let took = t.elapsed().as_secs_f64();
    assert!(took < 3.0, "quick/latency with runtime=1s took {took:.1} s");
    let job = &d["scenarios"][0]["jobs"][0];
    let ms = job["read"]["runtime_ms"].as_f64().unwrap();
    assert!((900.0..1500.0).contains(&ms), "{job}");
}

#[test]
fn a_budget_from_parameters_grants_small_runs_and_names_the_parameter_when_refusing() {
    let dir = workdir();
    let d = dir.path();
    // yabs: max_bytes = "size + 16M".
    fits(
        d,
        "40M",
        &[
            "yabs/disk",
            "-p",
            "size=16M",
            "-p",
            "runtime=1s",
            "-p",
            "block_sizes=4k",
        ],
    );
    let r = plumb(d, &["run", "yabs", "-p", "size=2G", "--max-bytes", "1G"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("yabs needs 2.02 GiB (max_bytes = size + 16M with size=2G) but --max-bytes grants 1.00 GiB: pass a smaller -p size=… or a larger --max-bytes"),
        "{}",
        r.stderr
    );
    // An unknown name is refused when the pack is read, naming the file and key.
    let p = d.join("typo");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(
        p.join("pack.toml"),
        "name = \"typo\"\nscenarios = [\"a.rhai\"]\n[params.size]\ndefault = \"1M\"\n[capabilities]\nmax_bytes = \"2 * sise\"\n",
    )
    .unwrap();
    std::fs::write(p.join("a.rhai"), "").unwrap();
    for cmd in ["run", "check", "list"] {
        let r = plumb(d, &[cmd, "typo"]);
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        assert!(
            r.stderr.contains("typo/pack.toml: capabilities.max_bytes: unknown parameter 'sise' (the pack's parameters: size)"),
            "{cmd}: {}",
            r.stderr
        );
    }
}

/// A pack folder `name` declaring `caps` with the one scenario `script`.
fn pack_with(dir: &Path, name: &str, caps: &str, script: &str) {
    let p = dir.join(name);
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(
        p.join("pack.toml"),
        format!("name = \"{name}\"\nscenarios = [\"s.rhai\"]\n[capabilities]\n{caps}\n"),
    )
    .unwrap();
    std::fs::write(p.join("s.rhai"), script).unwrap();
}

#[test]
fn check_finds_unknown_option_keys_and_undeclared_capabilities() {
    let dir = workdir();
    let d = dir.path();
    pack_with(
        d,
        "typo",
        "direct_io = true",
        "let x = 1;\nlet r = io::job(#{ rw: \"randread\", iodpeth: 32, size: \"1M\" });\nfs::open(\"f\", #{ wirte: true });\n",
    );
    let r = plumb(d, &["check", "typo"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "typo/s.rhai:2:17: unknown key 'iodpeth' in io::job options (did you mean 'iodepth'?)"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(
            "typo/s.rhai:3:15: unknown key 'wirte' in fs::open options (did you mean 'write'?)"
        ),
        "{}",
        r.stderr
    );
    pack_with(
        d,
        "direct",
        "max_bytes = \"8M\"",
        "fs::write_file(\"f\", 4096, #{ direct: true });\nfs::drop_caches();\n",
    );
    let r = plumb(d, &["check", "direct"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("direct/s.rhai:1:27: fs::write_file asks for direct I/O, which pack.toml does not declare (add direct_io = true under [capabilities])"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("direct/s.rhai:2:5: fs::drop_caches needs root"),
        "{}",
        r.stderr
    );
    // Declared, the same calls pass.
    pack_with(
        d,
        "declared",
        "direct_io = true\nroot = true",
        "fs::write_file(\"f\", 4096, #{ direct: true });\nfs::drop_caches();\n",
    );
    let r = plumb(d, &["check", "declared"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn every_built_in_pack_passes_check() {
    let dir = workdir();
    let list = plumb(dir.path(), &["list"]);
    let packs: Vec<&str> = list
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert!(packs.len() >= 10, "{}", list.stdout);
    for p in packs {
        let r = plumb(dir.path(), &["check", p]);
        assert_eq!(r.code, 0, "{p}: {}", r.stderr);
    }
}
