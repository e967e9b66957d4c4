//! Tables a pack's comparison template made, in every output format:
//! terminal tables and Markdown (title, table, notes), CSV in long form
//! (one record per cell) and JSON (the comparison with the tables added).

use crate::model::comparison::Comparison;
use crate::model::template::MadeTable;
use crate::report::run_table::Format;
use crate::terminal::cleaned;
use comfy_table::{presets, Table};
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
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record(["table", "row", "column", "value"]);
            for t in tables {
                for (r, row) in t.rows.iter().enumerate() {
                    for (col, cell) in t.header.iter().zip(row) {
                        let _ = w.write_record([
                            cleaned(&t.title),
                            (r + 1).to_string(),
                            cleaned(col),
                            cleaned(cell),
                        ]);
                    }
                }
            }
            String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
        }
        Format::Table | Format::Markdown => {
            let markdown = format == Format::Markdown;
            // A `|` in Markdown would end the cell.
            let text = |s: &str| {
                let s = cleaned(s);
                if markdown {
                    s.replace('|', "\\|")
                } else {
                    s
                }
            };
            let mut out = String::new();
            for t in tables {
                if !t.title.is_empty() {
                    let title = cleaned(&t.title);
                    out.push_str(&if markdown {
                        format!("### {title}\n\n")
                    } else {
                        format!("{title}\n")
                    });
                }
                let mut table = Table::new();
                table.load_preset(if markdown {
                    presets::ASCII_MARKDOWN
                } else {
                    presets::UTF8_FULL_CONDENSED
                });
                table.set_header(t.header.iter().map(|h| text(h)));
                for row in &t.rows {
                    // Short rows are filled with empty cells.
                    let cells = (0..t.header.len())
                        .map(|i| row.get(i).map(|c| text(c)).unwrap_or_default());
                    table.add_row(cells);
                }
                out.push_str(&format!("{table}\n"));
                if !t.notes.is_empty() {
                    out.push('\n');
                }
                for n in &t.notes {
                    out.push_str(&format!("{}\n", cleaned(n)));
                }
                out.push('\n');
            }
            if let Some(line) = super::comparison::not_comparable_line(c) {
                out.push_str(&line);
                out.push('\n');
            }
            out
        }
    }
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
