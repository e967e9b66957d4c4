//! A comparison of many runs (a fleet), read by host: past [`WIDE_RUNS`]
//! runs a column per run is unreadable, so the terminal table and Markdown
//! turn it round — a row per run, a column per chosen metric. Each figure
//! is the run's median with its deviation from the fleet's median, outliers
//! (beyond [`OUTLIER_MADS`] median absolute deviations) are flagged, each
//! run is ranked by one metric (`--sort`, the first column by default), and
//! `--group-by` puts runs with the same machine field (CPU, kernel, …) or
//! the same value of a `KEY=VALUE` label (a fleet inventory's `zone=…`)
//! together. The metrics shown are those chosen (`--metrics`), else the
//! first ones that keep the table within [`MAX_WIDTH`] columns.

use crate::compare::stats::median;
use crate::model::comparison::{Comparison, Row};
use crate::model::document::{Better, RunDocument};
use crate::terminal::cleaned;
use crate::units::Scale;

/// Past this many runs a comparison is shown a row per run.
pub const WIDE_RUNS: usize = 4;
/// The widest table chosen metrics are fitted into (terminal columns).
pub const MAX_WIDTH: usize = 160;
/// How far from the fleet median, in median absolute deviations, a
/// figure is an outlier.
pub const OUTLIER_MADS: f64 = 3.0;
/// The widest line of the notes under the table (longer ones wrap, the
/// rest indented).
const NOTE_WIDTH: usize = 100;
/// The longest run name shown whole (longer ones are cut with `…`).
const MAX_NAME: usize = 24;

/// How to lay the many-run table out.
#[derive(Debug, Clone, Default)]
pub struct ManyOptions {
    /// The metrics to show, as `metric` or `scenario/metric` (any
    /// scenario's when only the metric is named); empty: fit the first.
    pub metrics: Vec<String>,
    /// The metric to rank and sort by (default: the first column's).
    pub sort: Option<String>,
    /// A machine field (see [`GROUP_FIELDS`]) or a label key to group runs
    /// by.
    pub group_by: Option<String>,
}

/// The machine fields `--group-by` takes (a label key of the same name is
/// hidden by the field).
pub const GROUP_FIELDS: [&str; 8] = [
    "cpu",
    "cores",
    "memory",
    "kernel",
    "os",
    "filesystem",
    "device",
    "scheduler",
];

/// Refuses a `--group-by` that is neither a machine field nor the key of
/// a `KEY=VALUE` label among `labels` (each run's, or each host's before a
/// fleet run).
pub fn check_group_by<'a>(
    field: Option<&str>,
    labels: impl IntoIterator<Item = &'a [String]>,
) -> Result<(), ManyError> {
    let Some(g) = field.filter(|g| !GROUP_FIELDS.contains(g)) else {
        return Ok(());
    };
    let keys: std::collections::BTreeSet<&str> = labels
        .into_iter()
        .flatten()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    if keys.contains(g) {
        return Ok(());
    }
    let keys = if keys.is_empty() {
        "none".to_string()
    } else {
        keys.into_iter().map(cleaned).collect::<Vec<_>>().join(", ")
    };
    Err(ManyError::UnknownField {
        name: cleaned(g),
        keys,
    })
}

/// A choice that names nothing in the comparison.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManyError {
    /// `--metrics` or `--sort` names no metric of the runs.
    #[error("{option} {name}: no metric of that name in these runs (for example {example})")]
    UnknownMetric {
        /// The option (`--sort`, `--metrics`).
        option: &'static str,
        /// What it named.
        name: String,
        /// A metric that exists, as `scenario/metric`.
        example: String,
    },
    /// `--group-by` names no machine field and no label key.
    #[error(
        "--group-by {name}: neither a machine field ({fields}) nor the key of a KEY=VALUE label of these runs (keys: {keys})",
        fields = GROUP_FIELDS.join(", ")
    )]
    UnknownField {
        /// What it named.
        name: String,
        /// The label keys the runs have, comma-separated (`none`).
        keys: String,
    },
}

/// The table: its header, rows, and the lines under it.
#[derive(Debug, Clone, PartialEq)]
pub struct ManyTable {
    /// Column names.
    pub header: Vec<String>,
    /// A row per run, in rank order (within groups).
    pub rows: Vec<Vec<String>>,
    /// How to read it, the outliers, what is not shown.
    pub notes: Vec<String>,
}

/// One metric column: its row of the comparison, the fleet's median and
/// median absolute deviation, the scale of that median (its notes'), and
/// each run's cell, made once.
struct Column<'a> {
    row: &'a Row,
    median: f64,
    mad: f64,
    scale: Scale,
    cells: Vec<String>,
}

impl<'a> Column<'a> {
    fn new(row: &'a Row) -> Column<'a> {
        let values: Vec<f64> = row.cells.iter().filter_map(|c| c.value).collect();
        let m = median(&values);
        let deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
        let mut column = Column {
            row,
            median: m,
            mad: median(&deviations),
            scale: Scale::of(m, &row.unit),
            cells: Vec::new(),
        };
        column.cells = (0..row.cells.len()).map(|i| column.cell(i)).collect();
        column
    }

    /// Whether run `i`'s figure is an outlier. With half the runs or more
    /// equal (a MAD of 0), a figure more than 1% off is one.
    fn outlier(&self, i: usize) -> bool {
        let Some(v) = self.row.cells[i].value else {
            return false;
        };
        let spread = self.mad.max(0.01 * self.median.abs() / OUTLIER_MADS);
        (v - self.median).abs() > OUTLIER_MADS * spread
    }

    /// Run `i`'s cell: figure, deviation from the median, `!` if an
    /// outlier (made once, in [`Column::new`]).
    fn cell(&self, i: usize) -> String {
        let Some(v) = self.row.cells[i].value else {
            return "missing".into();
        };
        // Each figure in its own unit: an outlier a hundred times smaller
        // reads 8.44 MiB/s, not 0.00824 GiB/s.
        let mut s = cleaned(&Scale::of(v, &self.row.unit).show(v));
        if self.median != 0.0 && self.median.is_finite() {
            // Rounded first, so that a small deviation reads +0%, not -0%.
            let pct = ((v / self.median - 1.0) * 100.0).round() + 0.0;
            s.push_str(&format!(" {pct:+.0}%"));
        }
        if self.outlier(i) {
            s.push_str(" !");
        }
        s
    }

    /// `scenario metric`, the scenario without its pack.
    fn title(&self) -> String {
        let scenario = self
            .row
            .scenario
            .rsplit_once('/')
            .map_or(self.row.scenario.as_str(), |(_, s)| s);
        format!("{} {}", cleaned(scenario), cleaned(&self.row.metric))
    }

    /// `scenario/metric (unit, higher is better)`.
    fn described(&self) -> String {
        let way = match self.row.better {
            Better::Higher => "higher",
            Better::Lower => "lower",
        };
        format!(
            "{}/{} ({}, {way} is better)",
            cleaned(&self.row.scenario),
            cleaned(&self.row.metric),
            cleaned(self.scale.unit())
        )
    }
}

/// The row of `c` that `name` picks: `scenario/metric` exactly (with or
/// without the pack), else the first row of a metric of that name.
fn find<'a>(c: &'a Comparison, name: &str) -> Option<&'a Row> {
    let whole = |r: &Row| {
        let full = format!("{}/{}", r.scenario, r.metric);
        full == name || full.ends_with(&format!("/{name}"))
    };
    c.rows
        .iter()
        .find(|r| whole(r))
        .or_else(|| c.rows.iter().find(|r| r.metric == name))
}

/// A run's machine field `name`, or else the value of its label keyed
/// `name`; `-` when it has none.
fn field(doc: &RunDocument, name: &str) -> String {
    let target = doc.target.as_ref();
    let text = match name {
        "cpu" => doc.host.cpu_model.clone(),
        "cores" => doc.host.cpus.to_string(),
        "memory" => crate::units::format_bytes_binary(doc.host.memory_bytes as f64),
        "kernel" => doc.host.kernel.clone(),
        "os" => doc.host.os.clone(),
        "filesystem" => target.map(|t| t.fs_type.clone()).unwrap_or_default(),
        "device" => target.and_then(|t| t.device.clone()).unwrap_or_default(),
        "scheduler" => target.and_then(|t| t.scheduler.clone()).unwrap_or_default(),
        key => doc.label_value(key).unwrap_or_default().to_string(),
    };
    if text.is_empty() {
        "-".into()
    } else {
        cleaned(&text)
    }
}

/// A run's name, cut to [`MAX_NAME`] characters.
fn short(name: &str) -> String {
    let name = cleaned(name);
    if name.chars().count() <= MAX_NAME {
        return name;
    }
    let mut s: String = name.chars().take(MAX_NAME - 1).collect();
    s.push('…');
    s
}

/// The width comfy-table gives columns of these widest cells.
fn table_width(widths: &[usize]) -> usize {
    widths.iter().map(|w| w + 3).sum::<usize>() + 1
}

/// The widest of a column's cells.
fn widest<'s>(cells: impl Iterator<Item = &'s str>) -> usize {
    cells.map(|c| c.chars().count()).max().unwrap_or(0)
}

/// The many-run table of `c` (whose runs are `docs`, in order).
pub fn table(
    c: &Comparison,
    docs: &[RunDocument],
    o: &ManyOptions,
) -> Result<ManyTable, ManyError> {
    let example = c
        .rows
        .first()
        .map(|r| format!("{}/{}", r.scenario, r.metric))
        .unwrap_or_default();
    let unknown = |option, name: &str| ManyError::UnknownMetric {
        option,
        name: cleaned(name),
        example: cleaned(&example),
    };
    check_group_by(
        o.group_by.as_deref(),
        docs.iter().map(|d| d.labels.as_slice()),
    )?;
    let sort_row = match &o.sort {
        Some(s) => Some(find(c, s).ok_or_else(|| unknown("--sort", s))?),
        None => None,
    };
    let names: Vec<String> = c.runs.iter().map(|r| short(r)).collect();
    let groups: Option<Vec<String>> = o
        .group_by
        .as_ref()
        .map(|g| docs.iter().map(|d| field(d, g)).collect());
    // The fixed columns: rank, run, and the group.
    let mut fixed = vec![
        "rank".len().max(c.runs.len().to_string().len()),
        widest(names.iter().map(String::as_str)).max(3),
    ];
    if let Some(g) = &groups {
        fixed.push(widest(g.iter().map(String::as_str)).max(5));
    }
    let columns = choose(c, o, sort_row, fixed, &unknown)?;
    let left_out = c.rows.len().saturating_sub(columns.len());
    let ranked = columns.first().map(|c| c.row);
    let rank = ranks(ranked, c.runs.len());
    // Rows: by group, then rank (runs without the figure last).
    let mut order: Vec<usize> = (0..c.runs.len()).collect();
    order.sort_by_key(|&i| {
        (
            groups.as_ref().map(|g| g[i].clone()),
            rank[i].unwrap_or(usize::MAX),
            i,
        )
    });
    let mut header = vec!["rank".to_string(), "run".to_string()];
    if groups.is_some() {
        header.push(o.group_by.clone().unwrap_or_default());
    }
    header.extend(columns.iter().map(Column::title));
    let rows = order
        .iter()
        .map(|&i| {
            let mut r = vec![
                rank[i].map_or("-".into(), |k| k.to_string()),
                names[i].clone(),
            ];
            if let Some(g) = &groups {
                r.push(g[i].clone());
            }
            r.extend(columns.iter().map(|col| col.cells[i].clone()));
            r
        })
        .collect();
    let notes = notes(c, &columns, &names, left_out, groups.as_deref())
        .iter()
        .flat_map(|n| wrap(n, NOTE_WIDTH))
        .collect();
    Ok(ManyTable {
        header,
        rows,
        notes,
    })
}

/// The metric columns: the sort metric's first, then the chosen
/// (`--metrics`), else as many of the comparison's rows as fit beside the
/// `fixed` columns within [`MAX_WIDTH`] (figures most runs have).
fn choose<'a>(
    c: &'a Comparison,
    o: &ManyOptions,
    sort_row: Option<&'a Row>,
    fixed: Vec<usize>,
    unknown: &dyn Fn(&'static str, &str) -> ManyError,
) -> Result<Vec<Column<'a>>, ManyError> {
    let mut columns: Vec<Column> = Vec::new();
    let chosen: Vec<&Row> = if o.metrics.is_empty() {
        c.rows
            .iter()
            .filter(|r| r.cells.iter().filter(|c| c.value.is_some()).count() * 2 >= r.cells.len())
            .collect()
    } else {
        o.metrics
            .iter()
            .map(|m| find(c, m).ok_or_else(|| unknown("--metrics", m)))
            .collect::<Result<_, _>>()?
    };
    let mut widths = fixed;
    for row in sort_row.into_iter().chain(chosen) {
        if columns.iter().any(|c| std::ptr::eq(c.row, row)) {
            continue;
        }
        let column = Column::new(row);
        let title = column.title();
        let w = widest(
            column
                .cells
                .iter()
                .map(String::as_str)
                .chain([title.as_str()]),
        );
        let mut wider = widths.clone();
        wider.push(w);
        if o.metrics.is_empty() && !columns.is_empty() && table_width(&wider) > MAX_WIDTH {
            continue;
        }
        widths = wider;
        columns.push(column);
    }
    Ok(columns)
}

/// Each run's rank by `row` (1 = best, equal figures share a rank); None
/// for a run without the figure, or for all without a row.
fn ranks(row: Option<&Row>, runs: usize) -> Vec<Option<usize>> {
    let Some(row) = row else {
        return vec![None; runs];
    };
    let key = |v: f64| match row.better {
        Better::Higher => -v,
        Better::Lower => v,
    };
    let mut values: Vec<f64> = row.cells.iter().filter_map(|c| c.value).map(key).collect();
    values.sort_by(f64::total_cmp);
    row.cells
        .iter()
        .map(|c| c.value.map(|v| values.partition_point(|x| *x < key(v)) + 1))
        .collect()
}

/// How to read the table, each column in full, the outliers, and what
/// is left out.
fn notes(
    c: &Comparison,
    columns: &[Column],
    names: &[String],
    left_out: usize,
    groups: Option<&[String]>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(first) = columns.first() {
        notes.push(format!(
            "{} runs, ranked by {}. Each figure: the run's median and its deviation from the median of all runs; ! marks an outlier (more than {OUTLIER_MADS} median absolute deviations from it).",
            c.runs.len(),
            first.described()
        ));
    }
    for (k, col) in columns.iter().enumerate() {
        notes.push(format!(
            "column {}: {}; median of all runs {}",
            k + 1,
            col.described(),
            cleaned(&col.scale.show(col.median))
        ));
    }
    for col in columns {
        for (i, name) in names.iter().enumerate() {
            if col.outlier(i) {
                notes.push(format!(
                    "outlier: {name}: {} {}",
                    cleaned(&col.row.metric),
                    col.cells[i].trim_end_matches(" !")
                ));
            }
        }
    }
    if let Some(groups) = groups {
        let distinct: std::collections::BTreeSet<&String> = groups.iter().collect();
        notes.push(format!("{} group(s).", distinct.len()));
    }
    if left_out > 0 {
        notes.push(format!(
            "{left_out} more metric(s) not shown (to stay within {MAX_WIDTH} columns): --metrics NAME,... chooses them; --format json has every figure."
        ));
    }
    notes
}

/// `text` in lines of at most `width` characters, broken between words
/// (a longer word stands alone); lines after the first indented by two.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(format!("  {word}"));
        } else {
            if len > 0 {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_wrap_between_words() {
        let lines = wrap("aaa bbb ccc ddd", 7);
        assert_eq!(lines, ["aaa bbb", "  ccc", "  ddd"]);
        assert_eq!(wrap("averyverylongword x", 5), ["averyverylongword", "  x"]);
    }
}
