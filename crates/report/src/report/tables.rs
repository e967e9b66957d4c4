//! Titled tables: a scenario's own tables (`report::table`: fs_mark's,
//! dbench's, iozone's grid) and those a pack's comparison template made
//! (YABS's, CrystalDiskMark's layouts), and what every format's exporter
//! ([`crate::report::export`]) shares to write them, so that every table
//! reads the same wherever it is printed.
//!
//! Every text is passed through [`cleaned`]: tables come from result files
//! and templates, which are input. A file may hold more than a terminal can
//! show: past [`SHOWN_CELLS`] cells, the remaining tables are counted, not
//! printed (`--format json` has them all).

use crate::terminal::cleaned;
use comfy_table::{presets, Table};

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

/// How many columns `t` shows: its header's, or its longest row's.
pub(crate) fn columns(t: &Titled) -> usize {
    t.rows.iter().map(Vec::len).fold(t.header.len(), usize::max)
}
