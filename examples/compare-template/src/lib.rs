//! A comparison template as a WebAssembly component: one row per metric,
//! one column per run, the best figure marked, and a "winner" column that
//! claims a winner only where the samples support it. Build with
//! `cargo build --manifest-path examples/Cargo.toml --target wasm32-wasip2 --release`,
//! use with `plumb compare A.json B.json --template examples/target/wasm32-wasip2/release/compare_template.wasm`,
//! or ship it in a pack as `compare.wasm`.

wit_bindgen::generate!({ world: "compare-template", path: "../../wit" });

use plumb::bench::comparison::{Cell, Row, Verdict};
use plumb::bench::types::Better;

struct Winners;

/// The index of the best comparable median of a row.
fn best(row: &Row) -> Option<usize> {
    let higher = row.better == Better::HigherIsBetter;
    row.cells
        .iter()
        .enumerate()
        .filter(|(_, c)| c.verdict != Verdict::NotComparable)
        .filter_map(|(i, c)| c.value.map(|v| (i, v)))
        .reduce(|a, b| if (b.1 > a.1) == higher && b.1 != a.1 { b } else { a })
        .map(|(i, _)| i)
}

/// Three or four significant digits.
fn number(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn cell_text(c: &Cell, unit: &str) -> String {
    match c.value {
        None => "-".into(),
        Some(v) if c.verdict == Verdict::NotComparable => {
            format!("{} {unit} (not comparable)", number(v))
        }
        Some(v) => format!("{} {unit}", number(v)),
    }
}

/// Who won as far as the verdicts (each against the baseline) say.
fn winner(row: &Row, titles: &[String]) -> String {
    let Some(b) = best(row) else {
        return String::new();
    };
    let others: Vec<Verdict> = row.cells[1..]
        .iter()
        .map(|c| c.verdict)
        .filter(|v| !matches!(v, Verdict::Missing | Verdict::NotComparable))
        .collect();
    if others.is_empty() {
        return String::new();
    }
    let claim = if b == 0 {
        others.iter().all(|v| *v == Verdict::Worse)
    } else {
        row.cells[b].verdict == Verdict::Better
    };
    if claim {
        titles[b].clone()
    } else if others.contains(&Verdict::WithinNoise) {
        "tie (within noise)".into()
    } else {
        format!("{} (no significance)", titles[b])
    }
}

impl Guest for Winners {
    fn render(input: Comparison) -> Result<Vec<Table>, String> {
        let titles: Vec<String> = input.runs.iter().map(|r| r.title.clone()).collect();
        let mut header = vec!["metric".to_string()];
        header.extend(titles.iter().cloned());
        header.push("winner".into());
        let rows = input
            .rows
            .iter()
            .map(|row| {
                let mut line = vec![format!("{} {}", row.scenario, row.metric)];
                let b = best(row);
                for (i, c) in row.cells.iter().enumerate() {
                    let mark = if Some(i) == b && row.cells.len() > 1 { " *" } else { "" };
                    line.push(format!("{}{mark}", cell_text(c, &row.unit)));
                }
                line.push(winner(row, &titles));
                line
            })
            .collect();
        Ok(vec![Table {
            title: format!("{} runs compared (WebAssembly template)", input.runs.len()),
            header,
            rows,
            notes: vec!["* marks the best median of each metric.".into()],
        }])
    }
}

export!(Winners);
