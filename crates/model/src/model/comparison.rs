//! A comparison of result documents as `plumb compare` computes it and the
//! renderers (tables, JSON, charts) read it: one row per metric, one cell per
//! run, with the ratio to the baseline, its interval and a verdict.

use crate::model::document::{Better, Mark, RunDocument};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

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
    /// One side has fewer than [`MIN_SAMPLES`] samples: no significance
    /// can be claimed.
    Unknown,
    /// The metric is missing from this run or from the baseline.
    Missing,
    /// The runs did not measure the same thing (scenario, parameters or
    /// pack version differ): no ratio, no verdict.
    NotComparable,
}

/// The most cells (metrics × runs) a comparison holds: runs that share
/// their metrics stay far within it (400 runs of 5,000 metrics), while runs
/// sharing none would make it grow with the square of the files (500 runs
/// of 5,000 metrics of their own: 1.25 billion cells, hundreds of GB).
pub const MAX_CELLS: usize = 2_000_000;

/// The fewest samples on each side for a better/worse verdict: with two,
/// a bootstrap interval is the two samples' own spread and says little.
pub const MIN_SAMPLES: usize = 3;

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
    /// With too few samples for a verdict: the `--repeat` that would give
    /// both runs enough ([`MIN_SAMPLES`] each).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_for_verdict: Option<u32>,
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

/// The column titles of runs, one per document and all different: a
/// run's label, else its host name; where two would be the same, the host
/// name and the start time (`vm 2026-12-05 09:18:34`), then the file's
/// stem (`stems`, one per document when the runs came from files), then
/// the title with its position (`vm #2`).
pub fn run_titles(docs: &[RunDocument], stems: &[String]) -> Vec<String> {
    let mut titles: Vec<String> = docs
        .iter()
        .map(|d| d.label.clone().unwrap_or_else(|| d.host.hostname.clone()))
        .collect();
    // Each step retitles the runs that still clash, until none does.
    for step in 0..3 {
        let mut count: HashMap<&str, usize> = HashMap::new();
        for t in &titles {
            *count.entry(t).or_default() += 1;
        }
        let clashing: Vec<usize> = (0..titles.len())
            .filter(|&i| count[titles[i].as_str()] > 1)
            .collect();
        if clashing.is_empty() {
            break;
        }
        for i in clashing {
            let d = &docs[i];
            let retitled = match step {
                // RFC 3339 to the second, as a person reads it.
                0 if d.label.is_none() => {
                    let when: String = d.started.chars().take(19).collect();
                    Some(format!("{} {}", d.host.hostname, when.replace('T', " ")))
                }
                0 => None,
                1 => stems.get(i).cloned(),
                _ => Some(format!("{} #{}", titles[i], i + 1)),
            };
            if let Some(t) = retitled {
                titles[i] = t;
            }
        }
    }
    titles
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
