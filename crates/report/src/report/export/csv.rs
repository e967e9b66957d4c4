//! CSV: raw figures in each metric's own unit (a spreadsheet computes
//! with them), one section per kind of record; every titled table in one
//! long-form section (one record per cell).

use super::{join, Content, Exporter, Part};
use crate::model::comparison::Comparison;
use crate::model::document::RunDocument;
use crate::report::comparison::verdict_text;
use crate::report::run_table::{better, scenario_name, spread};
use crate::report::tables::{Cells, Titled};
use crate::terminal::cleaned;

/// CSV.
#[derive(Debug, Clone, Copy)]
pub struct Csv;

impl Exporter for Csv {
    /// The metric or comparison records, each a section, then the titled
    /// tables (and summaries, as tables of their own) in one long-form
    /// section, every table in full (a record per cell it holds); notes
    /// are left out.
    fn write_within(&self, content: &Content, _cells: &mut Cells) -> String {
        let mut sections = Vec::new();
        let mut tables: Option<Vec<Titled>> = None;
        let summary_header = [String::from("line")];
        let mut summaries: Vec<Vec<Vec<String>>> = Vec::new();
        for part in &content.parts {
            match part {
                Part::Metrics(doc) => sections.push(metrics(doc)),
                Part::Comparison(c, _) => sections.push(comparison(c)),
                Part::Tables { tables: t, summary } => {
                    tables
                        .get_or_insert_with(Vec::new)
                        .extend(t.iter().copied());
                    if !summary.is_empty() {
                        summaries.push(summary.iter().map(|l| vec![l.clone()]).collect());
                    }
                }
                Part::Note(_) => {}
            }
        }
        if let Some(mut tables) = tables {
            tables.extend(summaries.iter().map(|rows| Titled {
                title: "summary",
                header: &summary_header,
                rows,
                notes: &[],
            }));
            sections.push(long_form(&tables));
        }
        join(&sections)
    }
}

/// The text of a CSV writer's records.
fn finish(w: csv::Writer<Vec<u8>>) -> String {
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The metrics, raw figures in each metric's unit:
/// `scenario,metric,median,unit,min,max,runs,better,marks` (marks
/// separated by `;`); then, after a blank line, `scenario,error` records
/// when a scenario failed.
fn metrics(doc: &RunDocument) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "scenario", "metric", "median", "unit", "min", "max", "runs", "better", "marks",
    ]);
    for s in &doc.scenarios {
        let scenario = scenario_name(s);
        for m in &s.metrics {
            let (lo, hi) = spread(m).unwrap_or((m.value, m.value));
            let _ = w.write_record([
                scenario.clone(),
                cleaned(&m.name),
                m.value.to_string(),
                cleaned(&m.unit),
                lo.to_string(),
                hi.to_string(),
                s.repeat.to_string(),
                better(m),
                m.marks
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(";"),
            ]);
        }
    }
    let mut out = finish(w);
    if doc.scenarios.iter().any(|s| s.error.is_some()) {
        let mut w = csv::Writer::from_writer(Vec::new());
        let _ = w.write_record(["scenario", "error"]);
        for s in &doc.scenarios {
            if let Some(e) = &s.error {
                let _ = w.write_record([scenario_name(s), cleaned(e)]);
            }
        }
        out.push('\n');
        out.push_str(&finish(w));
    }
    out
}

/// The comparison, one record per run of each metric.
fn comparison(c: &Comparison) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "scenario",
        "metric",
        "unit",
        "better",
        "run",
        "value",
        "samples",
        "ratio",
        "ci_low",
        "ci_high",
        "verdict",
        "not_comparable",
        "repeat_for_verdict",
    ]);
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in &c.rows {
        for (i, cell) in r.cells.iter().enumerate() {
            let _ = w.write_record([
                cleaned(&r.scenario),
                cleaned(&r.metric),
                cleaned(&r.unit),
                format!("{:?}", r.better).to_lowercase(),
                cleaned(&c.runs[i]),
                opt(cell.value),
                cell.samples.to_string(),
                opt(cell.ratio),
                opt(cell.ratio_ci.map(|x| x.0)),
                opt(cell.ratio_ci.map(|x| x.1)),
                verdict_text(cell.verdict).to_string(),
                cell.not_comparable
                    .as_deref()
                    .map(cleaned)
                    .unwrap_or_default(),
                cell.repeat_for_verdict
                    .map(|r| r.to_string())
                    .unwrap_or_default(),
            ]);
        }
    }
    finish(w)
}

/// The tables in long form, one record per cell: `table,row,column,value`
/// (rows counted from 1), with its header line; nothing when there are no
/// tables.
fn long_form(tables: &[Titled]) -> String {
    if tables.is_empty() {
        return String::new();
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(["table", "row", "column", "value"]);
    for t in tables {
        let title = cleaned(t.title);
        for (r, row) in t.rows.iter().enumerate() {
            for (i, cell) in row.iter().enumerate() {
                let column = t.header.get(i).map(|h| cleaned(h)).unwrap_or_default();
                let _ = w.write_record([&title, &(r + 1).to_string(), &column, &cleaned(cell)]);
            }
        }
    }
    finish(w)
}
