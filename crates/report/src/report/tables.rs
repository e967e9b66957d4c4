//! Titled tables in the text formats: a scenario's own tables
//! (`report::table`: fs_mark's, dbench's, iozone's grid) and those a pack's
//! comparison template made (YABS's, CrystalDiskMark's layouts). One
//! routine per format, so that every table reads the same wherever it is
//! printed: a terminal table or Markdown under its title with its notes
//! below, or CSV in long form (one record per cell).
//!
//! Every text is passed through [`cleaned`]: tables come from result files
//! and templates, which are input. A file may hold more than a terminal can
//! show: past [`SHOWN_CELLS`] cells, the remaining tables are counted, not
//! printed (`--format json` has them all).

use crate::terminal::cleaned;
use comfy_table::{presets, Cell, CellAlignment, Table};

/// A table to print: borrowed from a scenario's result or a template's output.
#[derive(Debug, Clone, Copy)]
pub struct Titled<'a> {
    /// Heading (may be empty).
    pub title: &'a str,
    /// Column names.
    pub header: &'a [String],
    /// Rows; one shorter than the header is filled with empty cells, one
    /// longer gets columns without a name.
    pub rows: &'a [Vec<String>],
    /// Lines printed under the table.
    pub notes: &'a [String],
}

/// The most cells printed as text in one output; the rest are counted.
pub const SHOWN_CELLS: usize = 1_000_000;

/// The terminal table style, or Markdown's.
pub fn grid(markdown: bool) -> Table {
    let mut t = Table::new();
    t.load_preset(if markdown {
        presets::ASCII_MARKDOWN
    } else {
        presets::UTF8_FULL_CONDENSED
    });
    t
}

/// `s` cleaned for a cell; in Markdown a `|` would end the cell.
pub fn cell_text(s: &str, markdown: bool) -> String {
    let s = cleaned(s);
    if markdown {
        s.replace('|', "\\|")
    } else {
        s
    }
}

/// Whether a cell holds a figure (starts with a digit, a sign or a
/// point): such cells are aligned right, so that numbers line up.
pub fn is_figure(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.'))
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

/// How many columns `t` shows: its header's, or its longest row's.
fn columns(t: &Titled) -> usize {
    t.rows.iter().map(Vec::len).fold(t.header.len(), usize::max)
}

/// The tables as terminal tables (or Markdown): each under its title
/// (`### title` in Markdown), its notes below, a blank line after.
pub fn text(tables: &[Titled], markdown: bool) -> String {
    let mut out = String::new();
    let mut budget = SHOWN_CELLS;
    for (i, t) in tables.iter().enumerate() {
        let width = columns(t);
        let cells = width.saturating_mul(t.rows.len() + 1);
        if cells > budget {
            out.push_str(&format!(
                "({} more table(s) not shown: more than {SHOWN_CELLS} cells in all; --format json has them)\n\n",
                tables.len() - i
            ));
            break;
        }
        budget -= cells;
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
            out.push_str(&format!("{}\n", cleaned(n)));
        }
        out.push('\n');
    }
    out
}

/// One HTML table: `header`, then `rows` (a row shorter than the header
/// is filled with empty cells), every text escaped; figures aligned right
/// (the first column names the rows); `class` of each cell, if given, as
/// its class attribute. Sortable by a click on a column's heading when
/// the page has the sort script.
pub fn html_grid(
    header: &[String],
    rows: &[Vec<String>],
    class: &dyn Fn(usize, usize) -> Option<&'static str>,
) -> String {
    use crate::report::charts::svg::esc;
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

/// The tables in HTML, each under its title (`<h4>`), its notes below;
/// past [`SHOWN_CELLS`] cells, the rest are counted, as in [`text`].
pub fn html(tables: &[Titled]) -> String {
    use crate::report::charts::svg::esc;
    let mut out = String::new();
    let mut budget = SHOWN_CELLS;
    for (i, t) in tables.iter().enumerate() {
        let cells = columns(t).saturating_mul(t.rows.len() + 1);
        if cells > budget {
            out.push_str(&format!(
                "<p class=\"note\">({} more table(s) not shown: more than {SHOWN_CELLS} cells in all; the result files have them)</p>\n",
                tables.len() - i
            ));
            break;
        }
        budget -= cells;
        if !t.title.is_empty() {
            out.push_str(&format!("<h4>{}</h4>\n", esc(t.title)));
        }
        out.push_str(&html_grid(t.header, t.rows, &|_, _| None));
        for n in t.notes {
            out.push_str(&format!("<p class=\"note\">{}</p>\n", esc(n)));
        }
    }
    out
}

/// The tables in long form, one CSV record per cell: `table,row,column,value`
/// (rows counted from 1), with its header line; nothing when there are no
/// tables.
pub fn csv(tables: &[Titled]) -> String {
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
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}
