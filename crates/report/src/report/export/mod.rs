//! One exporter per output format behind one trait. A renderer builds
//! what it shows once, as [`Content`] (its parts: a run's metric table,
//! a comparison, titled tables, lines under them; and its machine form),
//! and the exporter of the chosen format writes it: [`text::Text`]
//! (terminal tables, or Markdown), [`csv::Csv`], [`json::Json`] and
//! [`html::Html`] (the pieces of `plumb report`'s page). The output format
//! is matched once, in [`exporter`].

pub mod csv;
pub mod html;
pub mod json;
pub mod text;

use crate::model::comparison::Comparison;
use crate::model::document::RunDocument;
use crate::model::template::MadeTable;
use crate::report::run_table::Format;
use crate::report::tables::{Cells, Titled};
use crate::trace::replay::ReplayResult;

/// Writes [`Content`] in one output format.
pub trait Exporter {
    /// `content` in this format, ready to print, as a part of an output
    /// whose tables all take their cells from `cells` (a report's page
    /// writes a section at a time).
    fn write_within(&self, content: &Content, cells: &mut Cells) -> String;

    /// `content` as a whole output: its tables within one [`Cells`].
    fn write(&self, content: &Content) -> String {
        self.write_within(content, &mut Cells::default())
    }
}

/// The exporter of `format`: the one place the output format is matched.
pub fn exporter(format: Format) -> &'static dyn Exporter {
    match format {
        Format::Table => &text::Text { markdown: false },
        Format::Markdown => &text::Text { markdown: true },
        Format::Csv => &csv::Csv,
        Format::Json => &json::Json,
    }
}

/// What a renderer shows: the parts people read, in order, and the form a
/// machine reads.
#[derive(Debug, Clone)]
pub struct Content<'a> {
    /// The parts, in the order they are shown.
    pub parts: Vec<Part<'a>>,
    /// The machine form (what JSON writes); none for a piece of a page.
    pub machine: Option<Machine<'a>>,
}

/// One part of [`Content`].
#[derive(Debug, Clone)]
pub enum Part<'a> {
    /// One run's metric table, with a line under it per failed scenario
    /// and per note.
    Metrics(&'a RunDocument),
    /// A comparison of runs: the machines, the metrics, how to read them.
    Comparison(&'a Comparison, &'a [RunDocument]),
    /// Titled tables, and summary lines: under the last table in the
    /// formats people read, a table of their own (`summary`, one column
    /// `line`) in CSV.
    Tables {
        /// The tables.
        tables: Vec<Titled<'a>>,
        /// The summary lines.
        summary: &'a [String],
    },
    /// A line under the part before it; CSV has no place for it.
    Note(String),
}

impl<'a> Part<'a> {
    /// Titled tables without a summary.
    pub fn tables(tables: Vec<Titled<'a>>) -> Part<'a> {
        Part::Tables {
            tables,
            summary: &[],
        }
    }
}

/// The machine form of what a renderer shows.
#[derive(Debug, Clone, Copy)]
pub enum Machine<'a> {
    /// One run: the result document, texts cleaned.
    Document(&'a RunDocument),
    /// A comparison.
    Comparison(&'a Comparison),
    /// A comparison with the tables its template made, from `file`.
    Template {
        /// The comparison.
        comparison: &'a Comparison,
        /// The template's file.
        file: &'a str,
        /// What it made.
        tables: &'a [MadeTable],
    },
    /// A trace replay's result, as `--json` saves it.
    Replay(&'a ReplayResult),
}

/// Joins the sections of the text formats (terminal, Markdown, CSV): a
/// lone section is written as it is; several are each trimmed of their
/// trailing newlines, the empty ones dropped, a blank line between two,
/// a newline at the end.
pub(crate) fn join(parts: &[String]) -> String {
    if let [lone] = parts {
        return lone.clone();
    }
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

/// The tables of one [`Part::Tables`] that an output's [`Cells`] allow.
pub(crate) struct Shown<'a> {
    /// The tables shown, the part's first ones.
    pub tables: Vec<Titled<'a>>,
    /// When the allowance closed at one of this part's tables: how many
    /// tables the content leaves out from there on (this part's and its
    /// later parts'), for the note under the tables shown. None when all
    /// were shown, or when it had closed before this part (the note was
    /// written where it closed).
    pub left_out: Option<usize>,
}

/// Which of `tables` (a part of a content whose parts after it are
/// `later`) are shown within `cells`, taking their cells.
pub(crate) fn shown<'a>(tables: &[Titled<'a>], cells: &mut Cells, later: &[Part]) -> Shown<'a> {
    let closed_before = cells.left_out() > 0;
    let shown: Vec<Titled<'a>> = tables.iter().copied().filter(|t| cells.take(t)).collect();
    let here = tables.len() - shown.len();
    let after: usize = later
        .iter()
        .map(|p| match p {
            Part::Tables { tables, .. } => tables.len(),
            _ => 0,
        })
        .sum();
    Shown {
        tables: shown,
        left_out: (!closed_before && here > 0).then_some(here + after),
    }
}

/// `tables` with `summary` as the notes of the last one (when there are
/// summary lines).
pub(crate) fn with_summary<'a>(tables: &[Titled<'a>], summary: &'a [String]) -> Vec<Titled<'a>> {
    let mut out = tables.to_vec();
    if !summary.is_empty() {
        if let Some(last) = out.last_mut() {
            last.notes = summary;
        }
    }
    out
}
