//! Assertions in a scenario turn `plumb run` into a check.

use crate::util::{entries, run_scripts, script, workdir};

#[test]
fn assertions_turn_a_run_into_a_check() {
    let dir = workdir();
    let s = script(dir.path(), "m.rhai", "report::metric(\"iops\", 100, \"IOPS\", \"higher\");\nreport::metric(\"lat\", 1500, \"us\", \"lower\");\n");
    let (r, _) = run_scripts(
        dir.path(),
        &[&s, "--assert", "iops >= 50", "--assert", "m.lat <= 2ms"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (r, _) = run_scripts(
        dir.path(),
        &[
            &s,
            "--assert",
            "m.iops >= 1k",
            "--assert",
            "lat < 1ms",
            "--assert",
            "nope > 1",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("m.iops >= 1k")
            && r.stderr.contains("lat < 1ms")
            && r.stderr.contains("no metric named 'nope'"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains("iops"),
        "the table is still printed: {}",
        r.stdout
    );
    let (r, target) = run_scripts(dir.path(), &[&s, "--assert", "iops about 5"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(entries(&target).is_empty());
    // Thresholds declared by a pack.
    let pack = dir.path().join("gated");
    std::fs::create_dir(&pack).unwrap();
    std::fs::write(
        pack.join("pack.toml"),
        "name = \"gated\"\nscenarios = [\"m.rhai\"]\nassert = [\"iops >= 200\"]\n",
    )
    .unwrap();
    std::fs::copy(dir.path().join("m.rhai"), pack.join("m.rhai")).unwrap();
    let (r, _) = run_scripts(dir.path(), &["gated"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("iops >= 200"), "{}", r.stderr);
}
