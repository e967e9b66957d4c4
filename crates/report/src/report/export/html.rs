//! HTML, the pieces of `plumb report`'s page: tables every text of which
//! is escaped, figures aligned right, sortable by their headings; notes
//! as paragraphs under them.

use super::{shown, with_summary, Content, Exporter, Part};
use crate::model::comparison::{Comparison, Verdict};
use crate::model::document::RunDocument;
use crate::report::charts::svg::esc;
use crate::report::comparison::{metric_grid, not_comparable_line, READING};
use crate::report::run_table;
use crate::report::tables::{grouped, is_figure, Cells, Titled, SHOWN_CELLS};

/// HTML for a page.
#[derive(Debug, Clone, Copy)]
pub struct Html;

impl Exporter for Html {
    /// The parts one after another, the tables past `cells` counted, not
    /// shown.
    fn write_within(&self, content: &Content, cells: &mut Cells) -> String {
        let mut out = String::new();
        for (i, part) in content.parts.iter().enumerate() {
            out.push_str(&match part {
                Part::Metrics(doc) => metrics(doc),
                Part::Comparison(c, _) => comparison(c),
                Part::Tables { tables, summary } => {
                    let tables = with_summary(tables, summary);
                    titled(&tables, cells, &content.parts[i + 1..])
                }
                Part::Note(line) => note(line),
            });
        }
        out
    }
}

/// `line` as a note paragraph, escaped.
fn note(line: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", esc(line))
}

/// One HTML table: `header`, then `rows` (a row shorter than the header
/// is filled with empty cells), every text escaped; figures aligned right
/// (the first column names the rows); `class` of each cell, if given, as
/// its class attribute. Sortable by a click on a column's heading when
/// the page has the sort script.
pub fn grid(
    header: &[String],
    rows: &[Vec<String>],
    class: &dyn Fn(usize, usize) -> Option<&'static str>,
) -> String {
    let width = rows.iter().map(Vec::len).fold(header.len(), usize::max);
    let mut out = String::from("<div class=\"wide\"><table class=\"sortable\">\n<thead><tr>");
    for i in 0..width {
        out.push_str(&format!(
            "<th>{}</th>",
            esc(header.get(i).map_or("", String::as_str))
        ));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (r, row) in rows.iter().enumerate() {
        out.push_str("<tr>");
        for i in 0..width {
            let text = row.get(i).map_or("", String::as_str);
            let mut classes: Vec<&str> = Vec::new();
            if i > 0 && is_figure(text) {
                classes.push("num");
            }
            classes.extend(class(r, i));
            let attr = if classes.is_empty() {
                String::new()
            } else {
                format!(" class=\"{}\"", classes.join(" "))
            };
            out.push_str(&format!("<td{attr}>{}</td>", esc(text)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
    out
}

/// The metric table, the errors and notes under it.
fn metrics(doc: &RunDocument) -> String {
    let (header, rows, _) = run_table::metric_grid(doc);
    let mut out = if rows.is_empty() {
        String::new()
    } else {
        grid(&header, &rows, &|_, _| None)
    };
    for l in run_table::lines(doc) {
        out.push_str(&note(&l));
    }
    out
}

/// The metric table, each cell of a run classed by its verdict (`better`,
/// `worse`, …) for colour, how to read it under it. The machines are
/// [`crate::report::comparison::machine_grid`]'s, shown where the page
/// puts them.
fn comparison(c: &Comparison) -> String {
    let (header, rows) = metric_grid(c);
    let class = |r: usize, i: usize| -> Option<&'static str> {
        let cell = c.rows.get(r)?.cells.get(i.checked_sub(3)?)?;
        Some(match cell.verdict {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Baseline => "baseline",
            Verdict::NotComparable | Verdict::Missing => "apart",
            Verdict::WithinNoise | Verdict::Unknown => "noise",
        })
    };
    let mut out = grid(&header, &rows, &class);
    out.push_str(&note(READING));
    if let Some(l) = not_comparable_line(c) {
        out.push_str(&note(&l));
    }
    out
}

/// The tables, each under its title (`<h4>`), its notes below; those past
/// the page's `cells` are left out, and where the first is, a note says
/// that no table is shown from there on (the page counts them at its top).
fn titled(tables: &[Titled], cells: &mut Cells, later: &[Part]) -> String {
    let mut out = String::new();
    let shown = shown(tables, cells, later);
    for t in &shown.tables {
        if !t.title.is_empty() {
            out.push_str(&format!("<h4>{}</h4>\n", esc(t.title)));
        }
        out.push_str(&grid(t.header, t.rows, &|_, _| None));
        for n in t.notes {
            out.push_str(&note(n));
        }
    }
    if shown.left_out.is_some() {
        out.push_str(&note(&format!(
            "(No table is shown from here on: a page shows at most {} table cells in all; the result files have them.)",
            grouped(SHOWN_CELLS)
        )));
    }
    out
}
