//! Titled tables: a scenario's own tables (`report::table`: fs_mark's,
//! dbench's, iozone's grid) and those a pack's comparison template made
//! (YABS's, CrystalDiskMark's layouts), and what every format's exporter
//! ([`crate::report::export`]) shares to write them, so that every table
//! reads the same wherever it is printed.
//!
//! Every text is passed through [`cleaned`]: tables come from result files
//! and templates, which are input. A file may hold more than a terminal can
//! show: an output (a `show`, a `compare`, a report's whole page, all its
//! sections) has one allowance of [`SHOWN_CELLS`] cells ([`Cells`]); past
//! it, the remaining tables are counted, not printed (`--format json` has
//! them all).

use crate::report::markdown;
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

/// One output's allowance of table cells: every titled table the output
/// shows takes its cells (its widest row's width, by its rows and header)
/// from the one allowance, whatever part or section it is in, so that the
/// output is bounded as a whole and not per section. The first table that
/// does not fit closes it: that table and every later one are counted as
/// left out, so that what is shown is the output's beginning, in order.
#[derive(Debug)]
pub struct Cells {
    /// Cells still allowed.
    left: usize,
    /// Tables left out so far.
    left_out: usize,
}

impl Default for Cells {
    /// [`SHOWN_CELLS`], nothing left out yet.
    fn default() -> Cells {
        Cells {
            left: SHOWN_CELLS,
            left_out: 0,
        }
    }
}

impl Cells {
    /// Whether `t` is shown: its cells are taken when they fit and no
    /// table was left out before it; otherwise it is counted as left out.
    pub fn take(&mut self, t: &Titled) -> bool {
        let cells = columns(t).saturating_mul(t.rows.len().saturating_add(1));
        if self.left_out > 0 || cells > self.left {
            self.left_out += 1;
            return false;
        }
        self.left -= cells;
        true
    }

    /// How many tables were left out so far.
    pub fn left_out(&self) -> usize {
        self.left_out
    }
}

/// `n` with its thousands separated by commas (`1,000,000`), for the
/// lines that say what an output left out.
pub(crate) fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

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

/// `s` as the text of a cell, title or line: cleaned for the terminal, or
/// Markdown text ([`markdown::text`]: nothing in it is active).
pub fn cell_text(s: &str, markdown: bool) -> String {
    if markdown {
        markdown::text(s)
    } else {
        cleaned(s)
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

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn counts_read_with_their_thousands_apart() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1_000_000), "1,000,000");
    }
}
