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
use crate::report::run_table::{self, scenario_name, Format};
use crate::report::tables::{self, Titled};
use crate::report::{comparison, made_tables};
use crate::terminal::{clean_json, cleaned};

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
        .flat_map(|l| l.tables.iter())
        .map(Titled::from)
        .collect()
}

/// Borrows the owned titles of `named` into the tables.
fn titled<'a>(named: &'a [(String, Titled<'a>)]) -> Vec<Titled<'a>> {
    named
        .iter()
        .map(|(title, t)| Titled { title, ..*t })
        .collect()
}

/// Joins sections, a blank line between two that are not empty.
fn sections(parts: &[String]) -> String {
    let parts: Vec<&str> = parts
        .iter()
        .map(|p| p.trim_end_matches('\n'))
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        parts.join("\n\n") + "\n"
    }
}

/// One run, as `plumb run` and `plumb show` print it: the metric table with
/// errors and notes under it, the scenarios' tables, then `layouts` (the
/// suite's own tables for this one run).
pub fn run(doc: &RunDocument, layouts: &[Layout], format: Format) -> String {
    let docs = std::slice::from_ref(doc);
    let named = scenario_tables(docs, &[]);
    let mut all = titled(&named);
    all.extend(layout_tables(layouts));
    match format {
        Format::Json => {
            let text = serde_json::to_string_pretty(doc).expect("serialisable");
            clean_json(&text).into_owned() + "\n"
        }
        Format::Csv => sections(&[run_table::csv(doc), tables::csv(&all)]),
        Format::Table | Format::Markdown => {
            let markdown = format == Format::Markdown;
            sections(&[run_table::text(doc, markdown), tables::text(&all, markdown)])
        }
    }
}

/// Several runs (or one) side by side, as `plumb compare` prints them: the
/// template's layout when there is one, else the generic comparison; then
/// every run's scenario tables (in CSV, after the template's in one
/// long-form section, or in a section after the comparison's records).
pub fn compare(
    c: &Comparison,
    docs: &[RunDocument],
    layout: Option<&Layout>,
    format: Format,
) -> String {
    let named = scenario_tables(docs, &c.runs);
    let scenario = titled(&named);
    match (format, layout) {
        (Format::Json, Some(l)) => made_tables::render(&l.tables, &l.file, c, format),
        (Format::Json, None) => comparison::render(c, docs, format),
        (Format::Csv, Some(l)) => {
            let mut all = layout_tables(std::slice::from_ref(l));
            all.extend(scenario);
            tables::csv(&all)
        }
        (Format::Csv, None) => {
            sections(&[comparison::render(c, docs, format), tables::csv(&scenario)])
        }
        (Format::Table | Format::Markdown, _) => {
            let head = match layout {
                Some(l) => made_tables::render(&l.tables, &l.file, c, format),
                None => comparison::render(c, docs, format),
            };
            sections(&[head, tables::text(&scenario, format == Format::Markdown)])
        }
    }
}
