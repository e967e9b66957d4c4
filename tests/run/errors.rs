//! Script errors, at parse time (`plumb check`) and at run time, name the
//! file, line and column.

use crate::util::{doc, entries, plumb, run_scripts, script, workdir};

#[test]
fn script_errors_name_file_line_and_column() {
    let dir = workdir();
    let s = script(dir.path(), "bad.rhai", "let x = 1;\nlet y = (x + ;\n");
    let (r, target) = run_scripts(dir.path(), &[&s]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("bad.rhai:2:"), "{}", r.stderr);
    assert!(
        r.stderr.contains("let y = (x + ;"),
        "quotes the line: {}",
        r.stderr
    );
    assert!(entries(&target).is_empty(), "nothing ran");
    let c = plumb(dir.path(), &["check", &s]);
    assert_eq!(c.code, 2);
    assert!(c.stderr.contains("bad.rhai:2:"), "{}", c.stderr);
    let u = script(dir.path(), "unknown.rhai", "let f = fs::opn(\"x\");\n");
    let c = plumb(dir.path(), &["check", &u]);
    assert_eq!(c.code, 2);
    assert!(
        c.stderr.contains("unknown.rhai:1:") && c.stderr.contains("fs::opn"),
        "{}",
        c.stderr
    );
    assert!(c.stderr.contains("did you mean fs::open"), "{}", c.stderr);
    let ok = plumb(dir.path(), &["check", "quick"]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
}

#[test]
fn runtime_errors_name_the_place() {
    let dir = workdir();
    let s = script(
        dir.path(),
        "oops.rhai",
        "let a = 1;\nlet b = a + fs::stat(\"missing\").size;\n",
    );
    let (r, _) = run_scripts(dir.path(), &[&s]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("oops.rhai:2:"), "{}", r.stderr);
    assert!(r.stderr.contains("missing"), "{}", r.stderr);
}

/// Each script's error kind in the result file: a host error the script
/// did not handle keeps its category, whatever its message says; an error
/// of the script's own is a script error, even when it quotes a host error.
#[test]
fn result_files_say_what_stopped_each_scenario() {
    let dir = workdir();
    let cases = [
        (
            "escape.rhai",
            "fs::write_file(\"../out.dat\", 4096);\n",
            "host/sandbox",
        ),
        (
            "budget.rhai",
            "fs::write_file(\"big.dat\", \"1G\");\n",
            "host/budget",
        ),
        ("missing.rhai", "fs::stat(\"missing\");\n", "host/os"),
        (
            "denied.rhai",
            "net::rtt(#{ addr: \"127.0.0.1:9\" });\n",
            "host/denied",
        ),
        ("bad.rhai", "cpu::run(#{ threads: 0 });\n", "host/invalid"),
        (
            "rethrown.rhai",
            "try { fs::stat(\"missing\"); } catch (e) { throw e; }\n",
            "host/os",
        ),
        (
            "own.rhai",
            "try { fs::stat(\"missing\"); } catch (e) { throw `mine: ${e}`; }\n",
            "script",
        ),
        ("slow.rhai", "loop { }\n", "deadline"),
    ];
    for (name, source, kind) in cases {
        let s = script(dir.path(), name, source);
        let json = format!("{name}.json");
        let (r, _) = run_scripts(
            dir.path(),
            &[&s, "--json", &json, "--timeout", "1s", "--max-bytes", "1M"],
        );
        assert_eq!(r.code, 1, "{name}: {}", r.stderr);
        let d = doc(&dir.path().join(&json));
        assert_eq!(
            d["scenarios"][0]["error_kind"], kind,
            "{name}: {}",
            r.stderr
        );
    }
}
