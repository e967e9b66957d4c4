//! `plumb compare`: result files side by side, with a verdict per metric that
//! the samples support (a bootstrap confidence interval of the median ratio).

pub mod load;
pub mod render;
pub mod stats;

use crate::document::{Better, Metric, RunDocument};
use crate::report::terminal::clean;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

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
}

/// One run's value of one metric.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Median value, if the run has the metric.
    pub value: Option<f64>,
    /// Samples behind it.
    pub samples: usize,
    /// value / baseline value.
    pub ratio: Option<f64>,
    /// 95% interval of the ratio of medians (needs ≥ 2 samples on both sides):
    /// a bootstrap, or the order-statistics interval for large sample sets.
    pub ratio_ci: Option<(f64, f64)>,
    /// The verdict.
    pub verdict: Verdict,
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
    /// Metrics.
    pub rows: Vec<Row>,
}

/// The column title of a run: its label, else its host name.
pub fn run_title(doc: &RunDocument) -> String {
    doc.label
        .clone()
        .unwrap_or_else(|| doc.host.hostname.clone())
}

/// Builds the comparison; the first document is the baseline.
pub fn compare(docs: &[RunDocument]) -> Comparison {
    // (scenario, metric) keys in first-seen order, and per document the
    // first metric under each key: linear in the documents' size.
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut index: Vec<HashMap<(String, String), &Metric>> = Vec::with_capacity(docs.len());
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for d in docs {
        let mut found = HashMap::new();
        for s in &d.scenarios {
            let scenario = scenario_name(s);
            for m in &s.metrics {
                let k = (scenario.clone(), m.name.clone());
                if seen.insert(k.clone()) {
                    keys.push(k.clone());
                }
                found.entry(k).or_insert(m);
            }
        }
        index.push(found);
    }
    let rows = keys
        .iter()
        .filter_map(|k| {
            let metrics: Vec<Option<&Metric>> = index.iter().map(|f| f.get(k).copied()).collect();
            let first = metrics.iter().flatten().next()?;
            let base = metrics[0];
            let cells = metrics
                .iter()
                .enumerate()
                .map(|(i, m)| cell(i, base, *m, first.better))
                .collect();
            Some(Row {
                scenario: k.0.clone(),
                metric: k.1.clone(),
                unit: first.unit.clone(),
                better: first.better,
                cells,
            })
        })
        .collect();
    Comparison {
        schema: COMPARE_SCHEMA,
        runs: docs.iter().map(run_title).collect(),
        rows,
    }
}

fn scenario_name(s: &crate::document::ScenarioResult) -> String {
    match &s.pack {
        Some(p) => format!("{p}/{}", s.name),
        None => s.name.clone(),
    }
}

fn cell(
    i: usize,
    base: Option<&crate::document::Metric>,
    m: Option<&crate::document::Metric>,
    better: Better,
) -> Cell {
    let Some(m) = m else {
        return Cell {
            value: None,
            samples: 0,
            ratio: None,
            ratio_ci: None,
            verdict: Verdict::Missing,
        };
    };
    let samples = if m.samples.is_empty() {
        vec![m.value]
    } else {
        m.samples.clone()
    };
    let value = stats::median(&samples);
    if i == 0 {
        return Cell {
            value: Some(value),
            samples: samples.len(),
            ratio: Some(1.0),
            ratio_ci: None,
            verdict: Verdict::Baseline,
        };
    }
    let Some(b) = base else {
        return Cell {
            value: Some(value),
            samples: samples.len(),
            ratio: None,
            ratio_ci: None,
            verdict: Verdict::Missing,
        };
    };
    let base_samples = if b.samples.is_empty() {
        vec![b.value]
    } else {
        b.samples.clone()
    };
    let base_value = stats::median(&base_samples);
    let ratio = (base_value != 0.0).then(|| value / base_value);
    let ratio_ci = stats::ratio_ci(&base_samples, &samples);
    let verdict = match (ratio, ratio_ci) {
        (None, _) => Verdict::Unknown,
        (Some(_), None) => Verdict::Unknown,
        (Some(_), Some((lo, hi))) if lo <= 1.0 && hi >= 1.0 => Verdict::WithinNoise,
        (Some(r), Some(_)) => {
            let up = r > 1.0;
            if up == (better == Better::Higher) {
                Verdict::Better
            } else {
                Verdict::Worse
            }
        }
    };
    Cell {
        value: Some(value),
        samples: samples.len(),
        ratio,
        ratio_ci,
        verdict,
    }
}

/// Metrics whose median is worse than the baseline by more than `pct` percent.
pub fn regressions(c: &Comparison, pct: f64) -> Vec<String> {
    let mut out = Vec::new();
    for r in &c.rows {
        for (i, cell) in r.cells.iter().enumerate().skip(1) {
            let Some(ratio) = cell.ratio else { continue };
            let worse_by = match r.better {
                Better::Higher => (1.0 - ratio) * 100.0,
                Better::Lower => (ratio - 1.0) * 100.0,
            };
            if worse_by > pct {
                out.push(format!(
                    "{} {} in {}: {:.1}% worse than {}",
                    r.scenario, r.metric, c.runs[i], worse_by, c.runs[0]
                ));
            }
        }
    }
    out
}

/// `plumb compare`: prints the comparison; exit 1 when `--fail-if-slower` trips.
pub fn main(
    files: &[std::path::PathBuf],
    format: crate::report::run_table::Format,
    fail_if_slower: Option<&str>,
    svg: Option<&std::path::Path>,
) -> crate::ExitCode {
    use crate::ExitCode;
    if files.len() < 2 {
        eprintln!(
            "plumb compare: error: give at least two result files (the first is the baseline)"
        );
        return ExitCode::BadInput;
    }
    let threshold = match fail_if_slower.map(|t| t.trim_end_matches('%').parse::<f64>()) {
        None => None,
        Some(Ok(p)) if p >= 0.0 => Some(p),
        Some(_) => {
            eprintln!(
                "plumb compare: error: --fail-if-slower: '{}' is not a percentage",
                fail_if_slower.unwrap_or_default()
            );
            return ExitCode::BadInput;
        }
    };
    let mut docs = Vec::new();
    for f in files {
        match load::load(f) {
            Ok(d) => docs.push(d),
            Err(e) => {
                eprintln!("plumb compare: error: {}", clean(&e));
                return ExitCode::BadInput;
            }
        }
    }
    let c = compare(&docs);
    print!("{}", render::render(&c, &docs, format));
    if let Some(dir) = svg {
        match crate::report::charts::write_all(dir, &docs, &c) {
            Ok(files) => eprintln!("wrote {} chart(s) to {}", files.len(), dir.display()),
            Err(err) => {
                eprintln!("plumb compare: error: charts: {}", clean(&err));
                return ExitCode::Failed;
            }
        }
    }
    if let Some(pct) = threshold {
        let bad = regressions(&c, pct);
        if !bad.is_empty() {
            eprintln!(
                "plumb compare: {} metric(s) regressed by more than {pct}%:",
                bad.len()
            );
            for b in &bad {
                eprintln!("  {}", clean(b));
            }
            return ExitCode::Failed;
        }
    }
    ExitCode::Ok
}
