//! What a person reads: `plumb run` and `plumb show` print one run the
//! same way — figures scaled per row, one value column for one sample,
//! median, min, max and the number of runs when repeated, errors and notes
//! on lines of their own under the table, every scenario's tables after it —
//! in the terminal, Markdown and CSV; JSON keeps the raw figures.

use crate::util::{assert_scaled, first_table, plumb, run_scripts, script, workdir};
use std::path::Path;

/// A scenario with figures that read badly raw, a table, a note, and a
/// failure after them.
const FAILING: &str = r#"
report::metric("bw", 17074595695.0, "bytes/s", "higher");
report::metric("lat", 0.000060, "s", "lower");
report::metric("wait", 4014, "us", "lower");
report::metric("ops", 1234567, "ops/s", "higher");
report::table("phases", ["phase", "seconds"], [["create", "1.5"], ["delete", "0.25"]]);
report::note("the disk was warm");
throw "disk on fire";
"#;

/// The row of `metric` in a table's rows.
fn row<'a>(table: &'a [Vec<String>], metric: &str) -> &'a [String] {
    table
        .iter()
        .find(|r| r.get(1).is_some_and(|m| m == metric))
        .unwrap_or_else(|| panic!("no row {metric} in {table:?}"))
}

/// Runs `failing.rhai` once, saving `f.json`; returns the run's stdout.
fn run_failing(dir: &Path) -> String {
    script(dir, "failing.rhai", FAILING);
    let (r, _) = run_scripts(dir, &["failing.rhai", "--json", "f.json"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    r.stdout
}

#[test]
fn one_sample_shows_one_scaled_value_column_and_the_error_under_the_table() {
    let dir = workdir();
    let out = run_failing(dir.path());
    let table = assert_scaled(&out);
    assert_eq!(
        table[0],
        ["scenario", "metric", "value", "unit", "better"],
        "{out}"
    );
    for (metric, value, unit) in [
        ("bw", "15.9", "GiB/s"),
        ("lat", "60.0", "µs"),
        ("wait", "4.01", "ms"),
        ("ops", "1.23M", "ops/s"),
    ] {
        let r = row(&table, metric);
        assert_eq!((r[2].as_str(), r[3].as_str()), (value, unit), "{out}");
    }
    // The error and the note: on lines of their own after the table.
    let end = out.find('└').expect("the table ends");
    let under = &out[end..];
    let failed = under
        .lines()
        .find(|l| l.contains("disk on fire"))
        .unwrap_or_else(|| panic!("no error under the table:\n{out}"));
    assert!(failed.starts_with("failing failed: "), "{failed:?}");
    assert!(under.contains("note (failing): the disk was warm"), "{out}");
    assert!(
        !out.lines()
            .any(|l| l.starts_with('│') && l.contains("disk on fire")),
        "the error is inside a table:\n{out}"
    );
    // The scenario's own table, after the metrics.
    let phases = out.find("failing: phases").expect("the scenario's table");
    assert!(phases > end, "{out}");
    assert!(out[phases..].contains("create") && out[phases..].contains("0.25"));

    // `plumb show` prints the saved run as `plumb run` did.
    let shown = plumb(dir.path(), &["show", "f.json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert_eq!(shown.stdout, out);
}

#[test]
fn show_prints_every_format() {
    let dir = workdir();
    run_failing(dir.path());
    let show = |format: &str| {
        let r = plumb(dir.path(), &["show", "f.json", "--format", format]);
        assert_eq!(r.code, 0, "{format}: {}", r.stderr);
        r.stdout
    };
    let md = show("markdown");
    let header: Vec<&str> = md
        .lines()
        .next()
        .unwrap_or_default()
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(
        header,
        ["", "scenario", "metric", "value", "unit", "better", ""],
        "{md}"
    );
    for text in [
        "GiB/s",
        "- failing failed: ",
        "### failing: phases",
        "| phase ",
    ] {
        assert!(md.contains(text), "no {text:?} in:\n{md}");
    }
    let csv = show("csv");
    let mut sections = csv.split("\n\n");
    let metrics = sections.next().unwrap();
    assert!(
        metrics.starts_with("scenario,metric,median,unit,min,max,runs,better,marks\n"),
        "{csv}"
    );
    // CSV keeps the raw figure in the metric's own unit.
    assert!(
        metrics.contains("failing,bw,17074595695,bytes/s,17074595695,17074595695,1,higher"),
        "{csv}"
    );
    assert!(
        sections
            .next()
            .is_some_and(|s| s.starts_with("scenario,error\nfailing,")),
        "{csv}"
    );
    let tables = sections.next().unwrap_or_default();
    assert!(tables.starts_with("table,row,column,value\n"), "{csv}");
    assert!(tables.contains("failing: phases,2,seconds,0.25"), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&show("json")).unwrap();
    assert_eq!(json["scenarios"][0]["metrics"][0]["value"], 17074595695.0);
}

#[test]
fn repeated_runs_show_median_min_max_and_count_runs_not_samples() {
    let dir = workdir();
    // Two samples per run: runs must say 2, not 4.
    script(
        dir.path(),
        "twice.rhai",
        "report::metric(\"t\", 1000, \"ms\", \"lower\");\nreport::metric(\"t\", 3000, \"ms\", \"lower\");\n",
    );
    let (r, _) = run_scripts(dir.path(), &["twice.rhai", "--repeat", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let table = assert_scaled(&r.stdout);
    assert_eq!(
        table[0],
        ["scenario", "metric", "median", "min", "max", "unit", "runs", "better"],
        "{}",
        r.stdout
    );
    assert_eq!(
        row(&table, "t")[2..7],
        ["2.00", "1.00", "3.00", "s", "2"],
        "{}",
        r.stdout
    );
}

#[test]
fn show_filters_scenarios_and_cleans_what_the_file_holds() {
    let dir = workdir();
    script(
        dir.path(),
        "a.rhai",
        "report::metric(\"x\", 1, \"\", \"higher\");\nreport::table(\"t\", [\"k\"], [[\"v\"]]);\n",
    );
    script(
        dir.path(),
        "b.rhai",
        "report::metric(\"y\", 2, \"\", \"higher\");\n",
    );
    let (r, _) = run_scripts(dir.path(), &["a.rhai", "b.rhai", "--json", "ab.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let only_b = plumb(dir.path(), &["show", "ab.json", "--scenario", "b"]);
    assert_eq!(only_b.code, 0, "{}", only_b.stderr);
    let names: Vec<String> = first_table(&only_b.stdout)[1..]
        .iter()
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(names, ["y"], "{}", only_b.stdout);
    assert!(!only_b.stdout.contains("a: t"), "{}", only_b.stdout);
    let none = plumb(dir.path(), &["show", "ab.json", "--scenario", "c"]);
    assert_eq!(none.code, 2);
    assert!(
        none.stderr.contains("--scenario c") && none.stderr.contains("it has: a, b"),
        "{}",
        none.stderr
    );

    // Terminal controls in a table, a metric and a note of the file are
    // shown escaped, never sent raw.
    let mut d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ab.json")).unwrap())
            .unwrap();
    d["scenarios"][0]["tables"][0]["title"] = "\u{1b}]0;pwned\u{7}".into();
    d["scenarios"][0]["tables"][0]["rows"][0][0] = "\u{9b}31mred".into();
    d["scenarios"][0]["metrics"][0]["unit"] = "\u{1b}[2J".into();
    d["scenarios"][0]["notes"] = serde_json::json!(["\u{202e}backwards"]);
    d["scenarios"][1]["error"] = "line one\n\u{1b}[1mline two".into();
    std::fs::write(dir.path().join("evil.json"), d.to_string()).unwrap();
    for format in ["table", "markdown", "csv", "json"] {
        let r = plumb(dir.path(), &["show", "evil.json", "--format", format]);
        assert_eq!(r.code, 0, "{format}: {}", r.stderr);
        assert!(
            !r.stdout.contains(['\u{1b}', '\u{9b}', '\u{202e}', '\u{7}']),
            "{format}: raw controls in:\n{}",
            r.stdout
        );
    }
    let r = plumb(dir.path(), &["show", "evil.json"]);
    assert!(r.stdout.contains("\\x1b]0;pwned\\x07"), "{}", r.stdout);
    assert!(r.stdout.contains("b failed: line one\n"), "{}", r.stdout);

    // What is not a result file is refused, naming it.
    std::fs::write(dir.path().join("not.json"), "{\"ops\": []}").unwrap();
    let r = plumb(dir.path(), &["show", "not.json"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not.json"), "{}", r.stderr);
}

#[test]
fn show_prints_a_trace_replay_s_operations_table() {
    let dir = workdir();
    let (r, _) = run_scripts(
        dir.path(),
        &["replay", "-p", "speed=max", "--json", "replay.json"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let shown = plumb(dir.path(), &["show", "replay.json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert_eq!(shown.stdout, r.stdout);
    let at = shown
        .stdout
        .find("replay/sqlite: replayed operations")
        .unwrap_or_else(|| panic!("no operations table in:\n{}", shown.stdout));
    let ops = first_table(&shown.stdout[at..]);
    assert_eq!(
        ops[0],
        [
            "op",
            "count",
            "bytes",
            "expected errors",
            "divergences",
            "mean us",
            "p50 us",
            "p99 us"
        ]
    );
    let fdatasync = ops
        .iter()
        .find(|r| r[0] == "fdatasync")
        .unwrap_or_else(|| panic!("no fdatasync row in {ops:?}"));
    // Counts as counts, the errors and divergences counted (0 here).
    assert!(fdatasync[1].parse::<u64>().unwrap() > 0, "{fdatasync:?}");
    assert_eq!(fdatasync[3..5], ["0", "0"], "{fdatasync:?}");
}

/// A small trace: a file written, synced, closed and removed.
const SMALL_TRACE: &str = "plumb-trace 2
duration_us 2000
file 0 f - a.dat
thread 0 1
op 0 0 10 open 0 0 w,creat
op 0 20 10 write 0 0 4096
op 0 40 500 fsync 0
op 0 600 5 close 0
op 0 700 50 unlink 0
end 5
";

#[test]
fn show_prints_what_trace_replay_json_saved_in_every_format() {
    let dir = workdir();
    let d = dir.path();
    std::fs::write(d.join("small.trace"), SMALL_TRACE).unwrap();
    std::fs::create_dir(d.join("t")).unwrap();
    let r = plumb(
        d,
        &[
            "trace",
            "replay",
            "small.trace",
            "--target",
            "t",
            "--json",
            "rep.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("rep.json")).unwrap()).unwrap();
    // A result document, as `plumb run --json` writes.
    assert_eq!(saved["schema"], "plumb.result.v1", "{saved}");
    assert_eq!(
        crate::trace_results::replayed(&d.join("rep.json"))["total_ops"],
        5
    );
    let shown = plumb(d, &["show", "rep.json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown.stdout.contains("small.trace: replayed operations"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("replayed 5 operations"),
        "{}",
        shown.stdout
    );
    let md = plumb(d, &["show", "rep.json", "--format", "markdown"]);
    assert!(md.stdout.contains("replayed operations"), "{}", md.stdout);
    let csv = plumb(d, &["show", "rep.json", "--format", "csv"]);
    assert!(csv.stdout.contains("fsync"), "{}", csv.stdout);
    let json = plumb(d, &["show", "rep.json", "--format", "json"]);
    assert_eq!(json.json()["scenarios"][0]["name"], "small.trace");
    let r = plumb(d, &["show", "rep.json", "--scenario", "x"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no such scenario"), "{}", r.stderr);

    // Hostile: escapes in names are shown escaped; a wrong shape is an
    // error naming the file.
    let mut evil = saved.clone();
    evil["scenarios"][0]["tables"][0]["rows"][0][0] = "\u{1b}[2Jwiped".into();
    std::fs::write(d.join("evil.json"), evil.to_string()).unwrap();
    let r = plumb(d, &["show", "evil.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stdout.contains('\u{1b}') && r.stdout.contains("wiped"),
        "{}",
        r.stdout
    );
    evil["scenarios"][0]["tables"] = "many".into();
    std::fs::write(d.join("bad.json"), evil.to_string()).unwrap();
    let r = plumb(d, &["show", "bad.json"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("bad.json") && r.stderr.contains("plumb.result.v1"),
        "{}",
        r.stderr
    );
}

#[test]
fn compare_prints_every_run_s_scenario_tables_after_the_comparison() {
    let dir = workdir();
    run_failing(dir.path());
    std::fs::copy(dir.path().join("f.json"), dir.path().join("g.json")).unwrap();
    let r = plumb(dir.path(), &["compare", "f.json", "g.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let at = r.stdout.find("within noise").unwrap_or(0);
    let titled: Vec<&str> = r.stdout[at..]
        .lines()
        .filter(|l| l.ends_with(" — failing: phases"))
        .collect();
    assert_eq!(
        titled.len(),
        2,
        "one per run, after the comparison:\n{}",
        r.stdout
    );
    let csv = plumb(
        dir.path(),
        &["compare", "f.json", "g.json", "--format", "csv"],
    );
    assert_eq!(csv.code, 0, "{}", csv.stderr);
    assert_eq!(
        csv.stdout.matches("table,row,column,value\n").count(),
        1,
        "{}",
        csv.stdout
    );
    assert_eq!(
        csv.stdout
            .matches(" — failing: phases,1,phase,create")
            .count(),
        2
    );
}
