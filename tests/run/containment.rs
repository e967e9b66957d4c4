//! What a scenario cannot do: reach outside its run directory, or run past
//! its limits without ending (the other scenarios still run).

use crate::util::{doc, entries, metric, run_scripts, script, workdir};
use std::path::Path;

#[test]
fn hostile_paths_are_refused_catchably_and_nothing_escapes() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "escape.rhai",
        r#"
        let refused = 0;
        fs::mkdir("a");
        for p in ["../outside.dat", "/tmp/plumb-evil.dat", "a/../../outside.dat"] {
            try { fs::write_file(p, 4096); } catch (e) {
                if e.contains("outside the run directory") { refused += 1; } else { throw e; }
            }
        }
        try { io::job(#{ filename: "../job.dat", size: "1M", rw: "write" }); } catch (e) {
            if e.contains("outside the run directory") { refused += 1; } else { throw e; }
        }
        try { io::job(#{ directory: "/tmp", size: "1M" }); } catch (e) { refused += 1; }
        report::metric("refused", refused, "", "higher");
        "#,
    );
    let (r, target) = run_scripts(dir.path(), &[&s, "--json", "e.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        metric(&doc(&dir.path().join("e.json")), "escape", "refused"),
        Some(5.0)
    );
    assert!(!dir.path().join("outside.dat").exists() && !target.join("outside.dat").exists());
    assert!(!Path::new("/tmp/plumb-evil.dat").exists());
    assert!(entries(&target).is_empty());
}

#[test]
fn limits_end_a_scenario_and_the_run_goes_on() {
    let dir = workdir();
    let cases = [
        ("endless.rhai", "loop { }", "deadline"),
        ("recursion.rhai", "fn f(x) { f(x + 1) } f(0);", "too deep"),
        (
            "string.rhai",
            "let s = \"xxxxxxxx\"; loop { s += s; }",
            "too large",
        ),
        ("array.rhai", "let a = [1]; loop { a += a; }", "too large"),
        (
            "bigjob.rhai",
            "io::job(#{ rw: \"write\", size: \"900T\" });",
            "free",
        ),
        (
            "ok.rhai",
            "report::metric(\"fine\", 1, \"\", \"higher\");",
            "",
        ),
    ];
    let mut args: Vec<String> = cases
        .iter()
        .map(|(n, src, _)| script(dir.path(), n, src))
        .collect();
    args.extend([
        "--timeout".into(),
        "2s".into(),
        "--json".into(),
        "l.json".into(),
    ]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (r, target) = run_scripts(dir.path(), &argv);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let d = doc(&dir.path().join("l.json"));
    for (name, _, needle) in cases {
        let s = d["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name.trim_end_matches(".rhai"))
            .unwrap();
        if needle.is_empty() {
            assert!(s["error"].is_null(), "{s}");
            assert_eq!(metric(&d, "ok", "fine"), Some(1.0));
        } else {
            let e = s["error"]
                .as_str()
                .unwrap_or_else(|| panic!("{name} should fail: {s}"));
            assert!(e.contains(needle), "{name}: {e}");
            assert!(e.contains(name), "{name}: error names the file: {e}");
        }
    }
    assert!(entries(&target).is_empty());
}
