//! JSON, the machine format: the result document, the comparison (with
//! the tables a template made) or a replay's saved result; raw figures.

use super::{Content, Exporter, Machine};
use crate::model::comparison::Comparison;
use crate::model::template::MadeTable;
use crate::report::replay::SavedReplay;
use crate::report::tables::Cells;
use crate::terminal::{clean_json, cleaned};
use serde::Serialize;

/// JSON.
#[derive(Debug, Clone, Copy)]
pub struct Json;

impl Exporter for Json {
    /// The machine form, pretty-printed, with a newline at the end;
    /// nothing when the content has none; every table in full.
    fn write_within(&self, content: &Content, _cells: &mut Cells) -> String {
        content.machine.map(machine).unwrap_or_default()
    }
}

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

/// `value` pretty-printed.
fn pretty(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value).expect("serialisable")
}

/// The machine form as JSON text.
fn machine(m: Machine) -> String {
    match m {
        Machine::Document(doc) => clean_json(&pretty(doc)).into_owned() + "\n",
        Machine::Comparison(c) => pretty(c) + "\n",
        Machine::Template {
            comparison,
            file,
            tables,
        } => {
            // JSON escapes C0 controls but not C1 ones or bidi overrides.
            let tables: Vec<MadeTable> = tables.iter().map(cleaned_table).collect();
            let doc = WithTemplate {
                comparison,
                template: TemplateOutput {
                    file: &cleaned(file),
                    tables: &tables,
                },
            };
            pretty(&doc) + "\n"
        }
        Machine::Replay(r) => {
            let saved = SavedReplay::new(r.clone());
            clean_json(&pretty(&saved)).into_owned() + "\n"
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
