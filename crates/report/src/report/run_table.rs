//! The metric table of one run (`plumb run`, `plumb show`): each metric
//! with its figure in a unit scaled for its row (`1.08 GiB/s`, `60.0 µs`,
//! `72.1k IOPS`, three significant digits); with repeated runs, median, min,
//! max and how many runs; the scenarios' errors and notes on lines of their
//! own under the table. CSV keeps the raw figures in the metric's own unit
//! (a spreadsheet computes with them), one section per kind of record.

use crate::model::document::{marks_suffix, Metric, RunDocument, ScenarioResult};
use crate::terminal::cleaned;
use crate::units::Scale;

/// Output formats of `plumb run`, `show` and `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A terminal table.
    Table,
    /// A Markdown table to paste into a post.
    Markdown,
    /// CSV.
    Csv,
    /// The result document.
    Json,
}

/// How a scenario is named on screen: `PACK/NAME`, or `NAME` alone when
/// the pack is the scenario (a lone script); not cleaned.
pub fn shown_name(s: &ScenarioResult) -> String {
    match &s.pack {
        Some(p) if *p != s.name => format!("{p}/{}", s.name),
        _ => s.name.clone(),
    }
}

/// [`shown_name`] cleaned for printing.
pub fn scenario_name(s: &ScenarioResult) -> String {
    cleaned(&shown_name(s))
}

/// Which way is better, as its name (`higher`, `lower`).
pub(crate) fn better(m: &Metric) -> String {
    format!("{:?}", m.better).to_lowercase()
}

/// Whether any metric has more than one sample: then the table has median,
/// min, max and runs columns; else one value column.
fn repeated(doc: &RunDocument) -> bool {
    doc.scenarios
        .iter()
        .any(|s| s.metrics.iter().any(|m| m.samples.len() > 1))
}

/// The smallest and largest sample, when there are two or more.
pub(crate) fn spread(m: &Metric) -> Option<(f64, f64)> {
    (m.samples.len() > 1).then(|| {
        m.samples
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            })
    })
}

/// The metric table of one run: its header, its rows (texts cleaned,
/// figures scaled per row) and the columns that hold figures. One
/// definition for the terminal, Markdown and HTML (whose exporters make
/// each text Markdown or HTML).
pub fn metric_grid(doc: &RunDocument) -> (Vec<String>, Vec<Vec<String>>, Vec<usize>) {
    let repeated = repeated(doc);
    let header: Vec<&str> = if repeated {
        vec![
            "scenario", "metric", "median", "min", "max", "unit", "runs", "better",
        ]
    } else {
        vec!["scenario", "metric", "value", "unit", "better"]
    };
    let mut rows = Vec::new();
    for s in &doc.scenarios {
        let scenario = scenario_name(s);
        for m in &s.metrics {
            let scale = Scale::of(m.value, &m.unit);
            let mut row = vec![scenario.clone(), cleaned(&m.name), scale.number(m.value)];
            if repeated {
                let (lo, hi) = spread(m)
                    .map(|(lo, hi)| (scale.number(lo), scale.number(hi)))
                    .unwrap_or_default();
                row.extend([lo, hi]);
            }
            row.push(cleaned(&format!(
                "{}{}",
                scale.unit(),
                marks_suffix(&m.marks)
            )));
            if repeated {
                row.push(s.repeat.to_string());
            }
            row.push(better(m));
            rows.push(row);
        }
    }
    // Figures (and the count of runs) line up on the right.
    let right = if repeated { vec![2, 3, 4, 6] } else { vec![2] };
    (header.into_iter().map(String::from).collect(), rows, right)
}

/// The lines under the metric table: one per failed scenario and per
/// note (texts cleaned).
pub fn lines(doc: &RunDocument) -> Vec<String> {
    let mut lines = Vec::new();
    for s in &doc.scenarios {
        if let Some(e) = &s.error {
            let first = e.lines().next().unwrap_or_default();
            // A stop (Ctrl-C) is not a failure of the scenario.
            let how = match s.error_kind.as_deref() {
                Some("interrupted") => "stopped",
                _ => "failed",
            };
            lines.push(format!("{} {how}: {}", scenario_name(s), cleaned(first)));
        }
    }
    for s in &doc.scenarios {
        for n in &s.notes {
            lines.push(format!("note ({}): {}", scenario_name(s), cleaned(n)));
        }
    }
    lines
}
