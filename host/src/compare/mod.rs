//! `plumb compare`: result files side by side, with a verdict per metric that
//! the samples support (a bootstrap confidence interval of the median ratio).

pub mod load;
pub mod stats;

use crate::model::comparison::run_title;
pub use crate::model::comparison::{Cell, Comparison, Row, Verdict, COMPARE_SCHEMA};
use crate::model::document::{Better, Metric, RunDocument};
use std::collections::{HashMap, HashSet};

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

fn scenario_name(s: &crate::model::document::ScenarioResult) -> String {
    match &s.pack {
        Some(p) => format!("{p}/{}", s.name),
        None => s.name.clone(),
    }
}

fn cell(
    i: usize,
    base: Option<&crate::model::document::Metric>,
    m: Option<&crate::model::document::Metric>,
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
