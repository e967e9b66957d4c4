//! The end-of-run table of `plumb run`: each metric with unit, median and
//! spread, as a terminal table, Markdown, CSV or the JSON document.

use crate::model::document::RunDocument;
use crate::terminal::cleaned;
use comfy_table::{presets, Cell, CellAlignment, Table};

/// Output formats of `plumb run`.
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

const HEADER: [&str; 8] = [
    "scenario", "metric", "median", "unit", "min", "max", "runs", "better",
];

fn rows(doc: &RunDocument) -> Vec<[String; 8]> {
    let mut out = Vec::new();
    for s in &doc.scenarios {
        let scenario = match &s.pack {
            Some(p) => cleaned(&format!("{p}/{}", s.name)),
            None => cleaned(&s.name),
        };
        for m in &s.metrics {
            let min = m.samples.iter().copied().fold(f64::INFINITY, f64::min);
            let max = m.samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            out.push([
                scenario.clone(),
                cleaned(&m.name),
                num(m.value),
                cleaned(&m.unit),
                num(min),
                num(max),
                m.samples.len().to_string(),
                format!("{:?}", m.better).to_lowercase(),
            ]);
        }
        if let Some(e) = &s.error {
            let first = cleaned(e.lines().next().unwrap_or_default());
            out.push([
                scenario,
                "error".into(),
                first,
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
    }
    out
}

/// A number with about four significant digits.
fn num(v: f64) -> String {
    if v.abs() >= 1000.0 || v == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.6}")
    }
}

/// Renders the document in `format`.
pub fn render(doc: &RunDocument, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(doc).expect("serialisable") + "\n",
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record(HEADER);
            for r in rows(doc) {
                let _ = w.write_record(&r);
            }
            String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
        }
        Format::Table | Format::Markdown => {
            let mut t = Table::new();
            t.load_preset(if format == Format::Markdown {
                presets::ASCII_MARKDOWN
            } else {
                presets::UTF8_FULL_CONDENSED
            });
            t.set_header(HEADER);
            for r in rows(doc) {
                t.add_row(r.iter().enumerate().map(|(i, c)| {
                    let cell = Cell::new(c);
                    if matches!(i, 2 | 4 | 5 | 6) {
                        cell.set_alignment(CellAlignment::Right)
                    } else {
                        cell
                    }
                }));
            }
            format!("{t}\n")
        }
    }
}
