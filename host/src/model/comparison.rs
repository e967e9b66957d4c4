//! A comparison of result documents as `plumb compare` computes it and the
//! renderers (tables, JSON, charts) read it: one row per metric, one cell per
//! run, with the ratio to the baseline, its interval and a verdict.

use crate::model::document::{Better, Mark, RunDocument};
use serde::Serialize;
use std::collections::BTreeSet;

/// Schema of `plumb compare --format json`.
pub const COMPARE_SCHEMA: &str = "plumb.compare.v1";

/// What the samples say about a run's value against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The baseline itself.
    Baseline,
    /// Better, and the confidence interval of the ratio excludes 1.
    Better,
    /// Worse, and the confidence interval of the ratio excludes 1.
    Worse,
    /// The interval includes 1: the difference is within noise.
    WithinNoise,
    /// One side has a single sample: no significance can be claimed.
    Unknown,
    /// The metric is missing from this run or from the baseline.
    Missing,
    /// The runs did not measure the same thing (scenario, parameters or
    /// pack version differ): no ratio, no verdict.
    NotComparable,
}

/// One run's value of one metric.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Median value, if the run has the metric.
    pub value: Option<f64>,
    /// Samples behind it.
    pub samples: usize,
    /// The run's samples of the metric (for comparison templates; the JSON
    /// gives only their count).
    #[serde(skip)]
    pub sample_values: Vec<f64>,
    /// value / baseline value.
    pub ratio: Option<f64>,
    /// 95% interval of the ratio of medians (needs ≥ 2 samples on both sides):
    /// a bootstrap, or the order-statistics interval for large sample sets.
    pub ratio_ci: Option<(f64, f64)>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why the cell is not comparable with the baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_comparable: Option<String>,
    /// The marks of the run's figure (loopback, cached), shown beside it.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub marks: BTreeSet<Mark>,
}

/// One metric across runs.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Scenario name (with pack).
    pub scenario: String,
    /// Metric name.
    pub metric: String,
    /// Unit as reported.
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// One cell per run, baseline first.
    pub cells: Vec<Cell>,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Always [`COMPARE_SCHEMA`].
    pub schema: &'static str,
    /// Column titles: labels, or host names.
    pub runs: Vec<String>,
    /// One row per (scenario, metric), in the order first seen.
    pub rows: Vec<Row>,
}

/// The column title of a run: its label, else its host name.
pub fn run_title(doc: &RunDocument) -> String {
    doc.label
        .clone()
        .unwrap_or_else(|| doc.host.hostname.clone())
}

impl Comparison {
    /// How many cells are not comparable with the baseline.
    pub fn not_comparable(&self) -> usize {
        self.rows
            .iter()
            .flat_map(|r| &r.cells)
            .filter(|c| c.verdict == Verdict::NotComparable)
            .count()
    }
}
