//! Script errors, at parse time (`plumb check`) and at run time, name the
//! file, line and column.

use crate::util::{entries, plumb, run_scripts, script, workdir};

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
