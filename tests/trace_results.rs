//! A replay's `--json` is a plumb result document: `plumb show` and
//! `plumb compare` read it, and [`replayed`] gives the tests its figures.

use crate::util::{doc, first_table, plumb, workdir};
use serde_json::{json, Value};
use std::path::Path;

/// The figures of a replay's result document at `path`, by the names the
/// replay gives them: `total_ops`, `divergences`, `expected_errors`,
/// `seconds`, `time_ratio` and `reference` (from its metrics), `ops` and
/// `steps` (name and count, from its tables), `client_seconds`, `halted`
/// (its error kind) and `first_divergence` (from its notes).
pub fn replayed(path: &Path) -> Value {
    let d = doc(path);
    assert_eq!(d["schema"], "plumb.result.v1", "{d}");
    let s = &d["scenarios"][0];
    let metric = |name: &str| {
        s["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .map(|m| m["value"].clone())
            .unwrap_or(Value::Null)
    };
    let vs = s["metrics"].as_array().unwrap().iter().find_map(|m| {
        m["name"]
            .as_str()?
            .strip_prefix("time_vs_")
            .map(str::to_string)
    });
    let table = |title: &str| -> Vec<Vec<String>> {
        s["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["title"] == title)
            .map(|t| serde_json::from_value(t["rows"].clone()).unwrap())
            .unwrap_or_default()
    };
    let named = |rows: Vec<Vec<String>>, key: &str| -> Vec<Value> {
        rows.iter()
            .map(|r| json!({ key: r[0], "count": r[1].parse::<u64>().unwrap() }))
            .collect()
    };
    let mut ops = named(table("replayed operations"), "op");
    for (o, row) in ops.iter_mut().zip(table("replayed operations")) {
        o["bytes"] = json!(row[2].parse::<u64>().unwrap());
    }
    let notes: Vec<String> = serde_json::from_value(s["notes"].clone()).unwrap();
    let count = |name: &str| metric(name).as_f64().map(|v| v as u64);
    json!({
        "total_ops": count("ops"),
        "divergences": count("divergences"),
        "expected_errors": count("expected_errors"),
        "skipped": count("noted"),
        "seconds": metric("seconds"),
        "time_ratio": vs.as_ref().map_or(Value::Null, |v| metric(&format!("time_vs_{v}"))),
        "reference": vs,
        "ops": ops,
        "steps": named(table("steps"), "step"),
        "client_seconds": match table("clients") {
            rows if rows.is_empty() => vec![metric("seconds")],
            rows => rows.iter().map(|r| json!(r[1].parse::<f64>().unwrap())).collect(),
        },
        "halted": s["error_kind"],
        "clients": s["params"]["clients"].as_str().and_then(|c| c.parse::<u64>().ok()),
        "first_divergence": notes.iter().find_map(|n| n.strip_prefix("first divergence: ")),
        "notes": notes,
    })
}

const SMALL: &str = "plumb-trace 2\nduration_us 1000\ntracer strace 1000 9\nfile 0 f - a.dat\nthread 0 1\n\
op 0 0 5 open 0 0 rw,creat\nop 0 10 5 pwrite 0 0 4096\nop 0 40 500 fsync 0\nop 0 600 5 close 0\nop 0 700 50 unlink 0\nend 5\n";

#[test]
fn two_replays_compare_as_a_table_and_show_prints_one() {
    let dir = workdir();
    let d = dir.path();
    std::fs::write(d.join("small.trace"), SMALL).unwrap();
    std::fs::create_dir(d.join("t")).unwrap();
    for label in ["vm-a", "vm-b"] {
        let json = format!("{label}.json");
        let r = plumb(
            d,
            &[
                "trace",
                "replay",
                "small.trace",
                "--target",
                "t",
                "--speed",
                "max",
                "--label",
                label,
                "--json",
                &json,
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let saved = doc(&d.join(&json));
        assert_eq!(saved["label"], label, "{saved}");
        assert!(saved["host"]["hostname"].is_string(), "{saved}");
        let s = &saved["scenarios"][0];
        assert_eq!(s["name"], "small.trace");
        assert_eq!(s["params"]["speed"], "max");
        let got = replayed(&d.join(&json));
        assert_eq!(got["total_ops"], 5, "{got}");
        assert_eq!(got["divergences"], 0, "{got}");
        assert_eq!(got["reference"], "traced", "{got}");
        assert!(got["ops"]
            .as_array()
            .unwrap()
            .contains(&json!({"op": "pwrite", "count": 1, "bytes": 4096})));
    }
    let c = plumb(d, &["compare", "vm-a.json", "vm-b.json"]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let rows = first_table(
        c.stdout
            .split("\n\n")
            .find(|t| t.contains("scenario"))
            .unwrap(),
    );
    assert_eq!(rows[0][..4], ["scenario", "metric", "better", "vm-a"]);
    for metric in ["seconds", "ops_per_s", "fsync.p99_us", "pwrite.mean_us"] {
        assert!(
            rows.iter().any(|r| r[0] == "small.trace" && r[1] == metric),
            "{metric}: {}",
            c.stdout
        );
    }
    let shown = plumb(d, &["show", "vm-a.json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown.stdout.contains("replayed operations"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("replayed 5 operations"),
        "{}",
        shown.stdout
    );
    // Replays of other options are set apart, not compared.
    let r = plumb(
        d,
        &[
            "trace",
            "replay",
            "small.trace",
            "--target",
            "t",
            "--json",
            "slow.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let c = plumb(d, &["compare", "vm-a.json", "slow.json"]);
    assert!(c.stdout.contains("speed"), "{}{}", c.stdout, c.stderr);
    // A label a result may not hold is refused before anything runs.
    let long = "l".repeat(5000);
    let r = plumb(
        d,
        &[
            "trace",
            "replay",
            "small.trace",
            "--target",
            "t",
            "--label",
            &long,
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--label"), "{}", r.stderr);
}

#[test]
fn a_pack_s_trace_missing_from_data_names_the_key_to_add() {
    let dir = workdir();
    let p = crate::util::pack_folder(
        dir.path(),
        "nodata",
        "name = \"nodata\"\nscenarios = [\"r.rhai\"]\n",
        &[
            ("r.rhai", "trace::replay(\"git.trace\");\n"),
            ("git.trace", SMALL),
        ],
    );
    std::fs::create_dir(dir.path().join("t")).unwrap();
    let r = plumb(
        dir.path(),
        &["run", &p.display().to_string(), "--target", "t"],
    );
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stderr.contains("data = [\"git.trace\"]"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}
