//! The terminal table and Markdown: the metric table with its lines
//! under it, the comparison's machine and metric tables, titled tables
//! under their titles with their notes below.

use super::{join, shown, with_summary, Content, Exporter, Part};
use crate::model::comparison::Comparison;
use crate::model::document::RunDocument;
use crate::report::comparison::{machine_grid, metric_grid, not_comparable_line, READING};
use crate::report::run_table;
use crate::report::tables::{
    cell_text, columns, grid, grouped, is_figure, Cells, Titled, SHOWN_CELLS,
};
use comfy_table::{Cell, CellAlignment, Table};

/// Terminal tables (`markdown` false) or Markdown tables to paste into a post.
#[derive(Debug, Clone, Copy)]
pub struct Text {
    /// Markdown rather than the terminal's table style.
    pub markdown: bool,
}

impl Exporter for Text {
    /// The parts as sections (see [`join`]); a note goes under the section
    /// before it. Tables past `cells` are counted, not printed.
    fn write_within(&self, content: &Content, cells: &mut Cells) -> String {
        let mut sections: Vec<String> = Vec::new();
        for (i, part) in content.parts.iter().enumerate() {
            match part {
                Part::Metrics(doc) => sections.push(self.metrics(doc)),
                Part::Comparison(c, docs) => sections.push(self.comparison(c, docs)),
                Part::Tables { tables, summary } => {
                    let tables = with_summary(tables, summary);
                    let later = &content.parts[i + 1..];
                    sections.push(self.tables(&tables, cells, later))
                }
                Part::Note(line) => {
                    let line = cell_text(line, self.markdown);
                    match sections.last_mut() {
                        Some(last) => {
                            last.push_str(&line);
                            last.push('\n');
                        }
                        None => sections.push(format!("{line}\n")),
                    }
                }
            }
        }
        join(&sections)
    }
}

/// A cell aligned right when it holds a figure ([`is_figure`]). The first
/// column names the rows (`4k`, `4k random read IOPS`) and stays on the left.
fn aligned(text: String) -> Cell {
    let numeric = is_figure(&text);
    let cell = Cell::new(text);
    if numeric {
        cell.set_alignment(CellAlignment::Right)
    } else {
        cell
    }
}

impl Text {
    /// The metric table, then one line per failed scenario and per note.
    fn metrics(&self, doc: &RunDocument) -> String {
        let markdown = self.markdown;
        let (header, rows, right) = run_table::metric_grid(doc);
        let mut table = grid(markdown);
        table.set_header(header.iter().map(|h| cell_text(h, markdown)));
        for row in &rows {
            table.add_row(row.iter().enumerate().map(|(i, c)| {
                let c = cell_text(c, markdown);
                if right.contains(&i) {
                    Cell::new(c).set_alignment(CellAlignment::Right)
                } else {
                    Cell::new(c)
                }
            }));
        }
        let mut out = if rows.is_empty() {
            String::new()
        } else {
            format!("{table}\n")
        };
        let bullet = if markdown { "- " } else { "" };
        let lines = run_table::lines(doc);
        if !lines.is_empty() {
            out.push('\n');
            for l in lines {
                out.push_str(&format!("{bullet}{}\n", cell_text(&l, markdown)));
            }
        }
        out
    }

    /// The machine table, the metric table, how to read them, and the line
    /// counting cells not comparable.
    fn comparison(&self, c: &Comparison, docs: &[RunDocument]) -> String {
        let markdown = self.markdown;
        let table = |(header, rows): (Vec<String>, Vec<Vec<String>>)| -> Table {
            let mut t = grid(markdown);
            t.set_header(header.iter().map(|h| cell_text(h, markdown)));
            for r in rows {
                t.add_row(r.iter().map(|c| cell_text(c, markdown)));
            }
            t
        };
        let machines = table(machine_grid(c, docs));
        let metrics = table(metric_grid(c));
        let apart = not_comparable_line(c)
            .map(|l| format!("\n{}", cell_text(&l, markdown)))
            .unwrap_or_default();
        let reading = cell_text(READING, markdown);
        format!("{machines}\n\n{metrics}\n\n{reading}{apart}\n")
    }

    /// The tables, each under its title (`### title` in Markdown), its
    /// notes below, a blank line after; those past the output's `cells`
    /// are counted (with those of the `later` parts), not printed.
    fn tables(&self, tables: &[Titled], cells: &mut Cells, later: &[Part]) -> String {
        let shown = shown(tables, cells, later);
        let mut out: String = shown.tables.iter().map(|t| self.table(t)).collect();
        if let Some(n) = shown.left_out {
            out.push_str(&format!(
                "({n} more table(s) not shown: more than {} cells in all; --format json has them)\n\n",
                grouped(SHOWN_CELLS)
            ));
        }
        out
    }

    /// One titled table, its notes and the blank line after it.
    fn table(&self, t: &Titled) -> String {
        let markdown = self.markdown;
        let width = columns(t);
        let mut out = String::new();
        if !t.title.is_empty() {
            let title = cell_text(t.title, markdown);
            out.push_str(&if markdown {
                format!("### {title}\n\n")
            } else {
                format!("{title}\n")
            });
        }
        let mut table = grid(markdown);
        table.set_header((0..width).map(|i| {
            t.header
                .get(i)
                .map(|h| cell_text(h, markdown))
                .unwrap_or_default()
        }));
        for row in t.rows {
            table.add_row((0..width).map(|i| {
                let text = row
                    .get(i)
                    .map(|c| cell_text(c, markdown))
                    .unwrap_or_default();
                if i == 0 {
                    Cell::new(text)
                } else {
                    aligned(text)
                }
            }));
        }
        out.push_str(&format!("{table}\n"));
        if !t.notes.is_empty() {
            out.push('\n');
        }
        for n in t.notes {
            out.push_str(&format!("{}\n", cell_text(n, markdown)));
        }
        out.push('\n');
        out
    }
}
