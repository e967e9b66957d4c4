//! What a pack's comparison template receives and gives back: the loaded
//! runs with every metric's samples, medians, ratios, intervals and verdicts
//! ([`TemplateInput`]), and the tables it makes ([`MadeTable`]). Rhai
//! templates see the input as maps and arrays (the field names below); the
//! WIT world `compare-template` has the same records.

use crate::model::comparison::{Comparison, Verdict};
use crate::model::document::{Better, RunDocument};
use serde::Serialize;
use std::collections::BTreeMap;

/// Everything `plumb compare` knows, for a template.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateInput {
    /// One per result file, the baseline first.
    pub runs: Vec<RunView>,
    /// One per (scenario, metric), in the order first seen.
    pub rows: Vec<RowView>,
}

/// One run: its machine, its storage and what it ran with.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    /// The column title: its label, else its host name.
    pub title: String,
    /// `--label`, if given.
    pub label: Option<String>,
    /// Host name.
    pub hostname: String,
    /// CPU model.
    pub cpu_model: String,
    /// Logical CPUs.
    pub cpus: u32,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// Kernel release.
    pub kernel: String,
    /// Operating system.
    pub os: String,
    /// Architecture.
    pub arch: String,
    /// Filesystem of the target directory.
    pub filesystem: Option<String>,
    /// Block device of the target directory.
    pub device: Option<String>,
    /// Device model.
    pub device_model: Option<String>,
    /// Start time, RFC 3339.
    pub started: String,
    /// plumb's version.
    pub plumb_version: String,
    /// The pack's version, as its first scenario records it.
    pub pack_version: Option<String>,
    /// Effective parameters (defaults included), of all its scenarios.
    pub params: BTreeMap<String, String>,
}

/// One metric across the runs.
#[derive(Debug, Clone, Serialize)]
pub struct RowView {
    /// The scenario's name inside its pack (`dd`).
    pub scenario: String,
    /// The pack (`cloud-compare`), when there is one.
    pub pack: Option<String>,
    /// The metric's name (`write_bw`).
    pub metric: String,
    /// Its unit as reported.
    pub unit: String,
    /// Which way is better (`higher` or `lower` to a Rhai template).
    pub better: Better,
    /// One per run, the baseline first.
    pub cells: Vec<CellView>,
}

/// One run's figure of one metric.
#[derive(Debug, Clone, Serialize)]
pub struct CellView {
    /// The median, if the run has the metric.
    pub value: Option<f64>,
    /// Every sample behind it.
    pub samples: Vec<f64>,
    /// value / baseline value.
    pub ratio: Option<f64>,
    /// Low end of the 95% interval of the ratio.
    pub ci_low: Option<f64>,
    /// High end of that interval.
    pub ci_high: Option<f64>,
    /// What the samples say against the baseline (`baseline`, `better`,
    /// `worse`, `within_noise`, `unknown`, `missing` or `not_comparable` to
    /// a Rhai template).
    pub verdict: Verdict,
    /// Why the run did not measure what the baseline did.
    pub not_comparable: Option<String>,
    /// What the figure measured besides its name: `loopback`, `cached`.
    pub marks: Vec<String>,
    /// With too few samples for a verdict (`unknown`): the `--repeat` that
    /// would give one.
    pub repeat_for_verdict: Option<u32>,
}

/// A table a template made.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MadeTable {
    /// Heading.
    pub title: String,
    /// Column names.
    pub header: Vec<String>,
    /// Rows of cells (as many as the header, or fewer).
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the table.
    pub notes: Vec<String>,
}

impl TemplateInput {
    /// The input for `docs` as `c` compares them (each cell with the run's
    /// own samples).
    pub fn new(docs: &[RunDocument], c: &Comparison) -> TemplateInput {
        let runs = docs
            .iter()
            .zip(&c.runs)
            .map(|(d, title)| run_view(d, title))
            .collect();
        let rows = c
            .rows
            .iter()
            .map(|r| {
                let (pack, scenario) = match r.scenario.split_once('/') {
                    Some((p, s)) => (Some(p.to_string()), s.to_string()),
                    None => (None, r.scenario.clone()),
                };
                RowView {
                    scenario,
                    pack,
                    metric: r.metric.clone(),
                    unit: r.unit.clone(),
                    better: r.better,
                    cells: r
                        .cells
                        .iter()
                        .map(|cell| CellView {
                            value: cell.value,
                            samples: cell.sample_values.clone(),
                            ratio: cell.ratio,
                            ci_low: cell.ratio_ci.map(|x| x.0),
                            ci_high: cell.ratio_ci.map(|x| x.1),
                            verdict: cell.verdict,
                            not_comparable: cell.not_comparable.clone(),
                            marks: cell.marks.iter().map(|m| m.name().into()).collect(),
                            repeat_for_verdict: cell.repeat_for_verdict,
                        })
                        .collect(),
                }
            })
            .collect();
        TemplateInput { runs, rows }
    }
}

/// Run `d` as a template sees it, titled `title` (the comparison's).
fn run_view(d: &RunDocument, title: &str) -> RunView {
    let params = d
        .scenarios
        .iter()
        .flat_map(|s| s.params.iter())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    RunView {
        title: title.to_string(),
        label: d.label.clone(),
        hostname: d.host.hostname.clone(),
        cpu_model: d.host.cpu_model.clone(),
        cpus: d.host.cpus,
        memory_bytes: d.host.memory_bytes,
        kernel: d.host.kernel.clone(),
        os: d.host.os.clone(),
        arch: d.host.arch.clone(),
        filesystem: d.target.as_ref().map(|t| t.fs_type.clone()),
        device: d.target.as_ref().and_then(|t| t.device.clone()),
        device_model: d.target.as_ref().and_then(|t| t.model.clone()),
        started: d.started.clone(),
        plumb_version: d.plumb_version.clone(),
        pack_version: d.scenarios.iter().find_map(|s| s.pack_version.clone()),
        params,
    }
}

/// Bounds on what a template may return.
pub mod limits {
    /// How long a template may run.
    pub const TIME: std::time::Duration = std::time::Duration::from_secs(5);
    /// Linear memory a WebAssembly template may grow to.
    pub const WASM_MEMORY: usize = 64 << 20;
    /// Most tables.
    pub const TABLES: usize = 32;
    /// Most columns in a table.
    pub const COLUMNS: usize = 64;
    /// Most rows in a table.
    pub const ROWS: usize = 10_000;
    /// Most notes under a table.
    pub const NOTES: usize = 64;
    /// Longest cell, title or note, in characters.
    pub const TEXT_CHARS: usize = 4096;
    /// Most text in all tables together, in bytes.
    pub const TOTAL_BYTES: usize = 4 << 20;
}

/// Why what a template returned is refused; tables and rows are counted
/// from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// No table at all.
    #[error("it returned no table")]
    NoTable,
    /// More tables than [`limits::TABLES`].
    #[error("it returned {count} tables, more than {}", limits::TABLES)]
    TooManyTables {
        /// How many.
        count: usize,
    },
    /// A text longer than [`limits::TEXT_CHARS`] characters.
    #[error("{what} is longer than {} characters", limits::TEXT_CHARS)]
    TextTooLong {
        /// Which text (`table 2's title`, `a note of table 1`).
        what: String,
    },
    /// More than [`limits::TOTAL_BYTES`] of text in all.
    #[error("its tables hold more than {} MiB of text", limits::TOTAL_BYTES >> 20)]
    TooMuchText,
    /// No column, or more than [`limits::COLUMNS`].
    #[error(
        "table {table} has {count} columns; a table has 1 to {}",
        limits::COLUMNS
    )]
    Columns {
        /// The table.
        table: usize,
        /// Its columns.
        count: usize,
    },
    /// More rows than [`limits::ROWS`].
    #[error("table {table} has {count} rows, more than {}", limits::ROWS)]
    Rows {
        /// The table.
        table: usize,
        /// Its rows.
        count: usize,
    },
    /// A row with more cells than the header has columns.
    #[error("table {table}, row {row}: {cells} cells for {columns} columns")]
    Cells {
        /// The table.
        table: usize,
        /// The row.
        row: usize,
        /// Its cells.
        cells: usize,
        /// The header's columns.
        columns: usize,
    },
    /// More notes than [`limits::NOTES`].
    #[error("table {table} has {count} notes, more than {}", limits::NOTES)]
    Notes {
        /// The table.
        table: usize,
        /// Its notes.
        count: usize,
    },
}

/// Checks what a template returned against [`limits`]: the error names the
/// table (1-based) and the row.
pub fn check_tables(tables: &[MadeTable]) -> Result<(), TableError> {
    if tables.is_empty() {
        return Err(TableError::NoTable);
    }
    if tables.len() > limits::TABLES {
        return Err(TableError::TooManyTables {
            count: tables.len(),
        });
    }
    let mut total = 0usize;
    let mut text = |what: &dyn Fn() -> String, s: &str| -> Result<(), TableError> {
        if s.chars().count() > limits::TEXT_CHARS {
            return Err(TableError::TextTooLong { what: what() });
        }
        total = total.saturating_add(s.len());
        if total > limits::TOTAL_BYTES {
            return Err(TableError::TooMuchText);
        }
        Ok(())
    };
    for (t, table) in tables.iter().enumerate() {
        let number = t + 1;
        let at = format!("table {number}");
        text(&|| format!("{at}'s title"), &table.title)?;
        if table.header.is_empty() || table.header.len() > limits::COLUMNS {
            return Err(TableError::Columns {
                table: number,
                count: table.header.len(),
            });
        }
        for h in &table.header {
            text(&|| format!("a column name of {at}"), h)?;
        }
        if table.rows.len() > limits::ROWS {
            return Err(TableError::Rows {
                table: number,
                count: table.rows.len(),
            });
        }
        for (r, row) in table.rows.iter().enumerate() {
            if row.len() > table.header.len() {
                return Err(TableError::Cells {
                    table: number,
                    row: r + 1,
                    cells: row.len(),
                    columns: table.header.len(),
                });
            }
            for cell in row {
                text(&|| format!("{at}, row {}: a cell", r + 1), cell)?;
            }
        }
        if table.notes.len() > limits::NOTES {
            return Err(TableError::Notes {
                table: number,
                count: table.notes.len(),
            });
        }
        for n in &table.notes {
            text(&|| format!("a note of {at}"), n)?;
        }
    }
    Ok(())
}
