//! Tables a pack's comparison template made, in every output format:
//! terminal tables and Markdown (title, table, notes) and CSV in long form
//! (one record per cell) as [`tables`] prints them, and JSON (the
//! comparison with the tables added).

use crate::model::comparison::Comparison;
use crate::model::template::MadeTable;
use crate::report::run_table::Format;
use crate::report::tables::{self, Titled};
use crate::terminal::cleaned;
use serde::Serialize;

/// `plumb compare --format json` when a template made the tables: the
/// comparison as always, and the template's tables.
#[derive(Serialize)]
struct WithTemplate<'a> {
    #[serde(flatten)]
    comparison: &'a Comparison,
    template: TemplateOutput<'a>,
}

#[derive(Serialize)]
struct TemplateOutput<'a> {
    /// The template's file.
    file: &'a str,
    tables: &'a [MadeTable],
}

/// Renders `tables` made by the template `file` for `c`.
pub fn render(tables: &[MadeTable], file: &str, c: &Comparison, format: Format) -> String {
    match format {
        Format::Json => {
            // JSON escapes C0 controls but not C1 ones or bidi overrides.
            let tables: Vec<MadeTable> = tables.iter().map(cleaned_table).collect();
            let doc = WithTemplate {
                comparison: c,
                template: TemplateOutput {
                    file: &cleaned(file),
                    tables: &tables,
                },
            };
            serde_json::to_string_pretty(&doc).expect("serialisable") + "\n"
        }
        Format::Csv => tables::csv(&titled(tables)),
        Format::Table | Format::Markdown => {
            let mut out = tables::text(&titled(tables), format == Format::Markdown);
            if let Some(line) = super::comparison::not_comparable_line(c) {
                out.push_str(&line);
                out.push('\n');
            }
            out
        }
    }
}

/// `tables` made by a template for `c`, in HTML (the line counting cells
/// not comparable under them).
pub fn html(tables: &[MadeTable], c: &Comparison) -> String {
    let mut out = tables::html(&titled(tables));
    if let Some(line) = super::comparison::not_comparable_line(c) {
        out.push_str(&format!(
            "<p class=\"note\">{}</p>\n",
            crate::report::charts::svg::esc(&line)
        ));
    }
    out
}

impl<'a> From<&'a MadeTable> for Titled<'a> {
    fn from(t: &'a MadeTable) -> Titled<'a> {
        Titled {
            title: &t.title,
            header: &t.header,
            rows: &t.rows,
            notes: &t.notes,
        }
    }
}

/// The tables as [`Titled`] ones, for [`tables`].
fn titled(tables: &[MadeTable]) -> Vec<Titled<'_>> {
    tables.iter().map(Titled::from).collect()
}

/// Every text of `t` through [`cleaned`].
fn cleaned_table(t: &MadeTable) -> MadeTable {
    let all = |v: &[String]| v.iter().map(|s| cleaned(s)).collect();
    MadeTable {
        title: cleaned(&t.title),
        header: all(&t.header),
        rows: t.rows.iter().map(|r| all(r)).collect(),
        notes: all(&t.notes),
    }
}
