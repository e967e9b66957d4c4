//! Tables a pack's comparison template made, in every output format:
//! terminal tables and Markdown (title, table, notes, then the line
//! counting cells not comparable), CSV in long form (one record per cell)
//! and JSON (the comparison with the tables added).

use crate::model::comparison::Comparison;
use crate::model::template::MadeTable;
use crate::report::comparison::not_comparable_line;
use crate::report::export::{exporter, Content, Machine, Part};
use crate::report::run_table::Format;
use crate::report::tables::Titled;

/// What `tables`, made by the template `file` for `c`, show: the tables,
/// the line counting cells not comparable under them.
pub fn content<'a>(tables: &'a [MadeTable], file: &'a str, c: &'a Comparison) -> Content<'a> {
    let mut parts = vec![Part::tables(titled(tables))];
    parts.extend(not_comparable_line(c).map(Part::Note));
    Content {
        parts,
        machine: Some(Machine::Template {
            comparison: c,
            file,
            tables,
        }),
    }
}

/// Renders `tables` made by the template `file` for `c`.
pub fn render(tables: &[MadeTable], file: &str, c: &Comparison, format: Format) -> String {
    exporter(format).write(&content(tables, file, c))
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

/// The tables as [`Titled`] ones.
pub fn titled(tables: &[MadeTable]) -> Vec<Titled<'_>> {
    tables.iter().map(Titled::from).collect()
}
