//! The one renderer of results: what `plumb run`, `plumb show`, `plumb
//! compare` and `plumb fleet` print, in every `--format`.
//!
//! One run: its metric table (errors and notes under it), every scenario's
//! own tables, then the layouts its packs' comparison templates made for it
//! (YABS's tables from one machine). Several runs: the template's layout or
//! the generic comparison, then every run's scenario tables. JSON is the
//! machine format: the result document (one run) or the comparison, raw
//! figures.

use crate::model::comparison::Comparison;
use crate::model::document::RunDocument;
use crate::model::template::MadeTable;
use crate::report::export::{exporter, Content, Machine, Part};
use crate::report::made_tables;
use crate::report::many::{self, ManyError, ManyOptions};
use crate::report::run_table::{scenario_name, Format};
use crate::report::tables::{Cells, Titled};
use crate::terminal::cleaned;

/// The tables a pack's comparison template made, and the template's file.
#[derive(Debug, Clone)]
pub struct Layout {
    /// How the template is named (`yabs/compare.rhai`).
    pub file: String,
    /// What it made.
    pub tables: Vec<MadeTable>,
}

/// The scenario tables of `docs`, titled `PACK/SCENARIO: TITLE`, with the
/// run's title in front when there are several runs.
fn scenario_tables<'a>(docs: &'a [RunDocument], titles: &[String]) -> Vec<(String, Titled<'a>)> {
    let mut out = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        for s in &d.scenarios {
            for t in &s.tables {
                let mut title = format!("{}: {}", scenario_name(s), cleaned(&t.title));
                if docs.len() > 1 {
                    if let Some(run) = titles.get(i) {
                        title = format!("{} — {title}", cleaned(run));
                    }
                }
                out.push((
                    title,
                    Titled {
                        title: "",
                        header: &t.header,
                        rows: &t.rows,
                        notes: &[],
                    },
                ));
            }
        }
    }
    out
}

/// The template tables of `layouts` as [`Titled`] tables.
fn layout_tables(layouts: &[Layout]) -> Vec<Titled<'_>> {
    layouts
        .iter()
        .flat_map(|l| made_tables::titled(&l.tables))
        .collect()
}

/// Borrows the owned titles of `named` into the tables.
fn titled<'a>(named: &'a [(String, Titled<'a>)]) -> Vec<Titled<'a>> {
    named
        .iter()
        .map(|(title, t)| Titled { title, ..*t })
        .collect()
}

/// One run, as `plumb run` and `plumb show` print it: the metric table
/// with errors and notes under it, the scenarios' tables, then `layouts`
/// (the suite's own tables for this one run).
pub fn run(doc: &RunDocument, layouts: &[Layout], format: Format) -> String {
    run_within(doc, layouts, format, &mut Cells::default())
}

/// [`run`] as a part of a larger output, its tables within `cells`.
pub fn run_within(
    doc: &RunDocument,
    layouts: &[Layout],
    format: Format,
    cells: &mut Cells,
) -> String {
    let named = scenario_tables(std::slice::from_ref(doc), &[]);
    let mut all = titled(&named);
    all.extend(layout_tables(layouts));
    exporter(format).write_within(
        &Content {
            parts: vec![Part::Metrics(doc), Part::tables(all)],
            machine: Some(Machine::Document(doc)),
        },
        cells,
    )
}

/// Several runs (or one) side by side, as `plumb compare` prints them: the
/// template's layout when there is one (the line counting cells not
/// comparable under it), else the generic comparison; then every run's
/// scenario tables (in CSV, in the one long-form section of tables).
///
/// Past [`many::WIDE_RUNS`] runs, the terminal table and Markdown show a
/// row per run instead ([`many::table`], laid out by `many`): no template
/// layout, machine table or per-run scenario tables, which would be a
/// column or a table per run.
pub fn compare(
    c: &Comparison,
    docs: &[RunDocument],
    layout: Option<&Layout>,
    format: Format,
    many: &ManyOptions,
) -> Result<String, ManyError> {
    compare_within(c, docs, layout, format, many, &mut Cells::default())
}

/// [`compare`] as a part of a larger output, its tables within `cells`.
pub fn compare_within(
    c: &Comparison,
    docs: &[RunDocument],
    layout: Option<&Layout>,
    format: Format,
    many: &ManyOptions,
    cells: &mut Cells,
) -> Result<String, ManyError> {
    if c.runs.len() > many::WIDE_RUNS && matches!(format, Format::Table | Format::Markdown) {
        let t = many::table(c, docs, many)?;
        let mut notes = t.notes.clone();
        if layout.is_some() {
            notes.push(format!(
                "The pack's comparison template lays out at most {} runs; its tables are not shown.",
                many::WIDE_RUNS
            ));
        }
        notes.push(
            "Each run's machine and scenario tables: plumb show FILE; --format json has the whole comparison."
                .into(),
        );
        let titled = Titled {
            title: "",
            header: &t.header,
            rows: &t.rows,
            notes: &notes,
        };
        return Ok(exporter(format).write_within(
            &Content {
                parts: vec![Part::tables(vec![titled])],
                machine: Some(Machine::Comparison(c)),
            },
            cells,
        ));
    }
    let named = scenario_tables(docs, &c.runs);
    let scenario = Part::tables(titled(&named));
    let content = match layout {
        Some(l) => {
            let mut content = made_tables::content(&l.tables, &l.file, c);
            content.parts.push(scenario);
            content
        }
        None => Content {
            parts: vec![Part::Comparison(c, docs), scenario],
            machine: Some(Machine::Comparison(c)),
        },
    };
    Ok(exporter(format).write_within(&content, cells))
}
