//! `PACK/SCENARIO`: one scenario of a built-in pack, a folder, a bundle or
//! a git repository, read by `plumb run`, `list` and `check` alike; the
//! selected pack keeps its name, hash and comparison template.

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
