//! `plumb compare`: result files side by side, with a verdict per metric that
//! the samples support (a bootstrap confidence interval of the median ratio).

pub mod load;
pub mod stats;

use crate::model::comparison::run_title;
pub use crate::model::comparison::{Cell, Comparison, Row, Verdict, COMPARE_SCHEMA};
use crate::model::document::{Better, Metric, RunDocument, ScenarioResult};
use std::collections::{HashMap, HashSet};

/// Builds the comparison; the first document is the baseline. A metric of a
/// scenario whose source, effective parameters or pack version differ from
/// the baseline's is marked not comparable, with the reason.
pub fn compare(docs: &[RunDocument]) -> Comparison {
    // (scenario, metric) keys in first-seen order, and per document the
    // first metric under each key: linear in the documents' size.
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut index: Vec<HashMap<(String, String), &Metric>> = Vec::with_capacity(docs.len());
    let mut scenarios: Vec<HashMap<String, &ScenarioResult>> = Vec::with_capacity(docs.len());
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for d in docs {
        let mut found = HashMap::new();
        let mut ran = HashMap::new();
        for s in &d.scenarios {
            let scenario = s.qualified_name();
            ran.entry(scenario.clone()).or_insert(s);
            for m in &s.metrics {
                let k = (scenario.clone(), m.name.clone());
                if seen.insert(k.clone()) {
                    keys.push(k.clone());
                }
                found.entry(k).or_insert(m);
            }
        }
        index.push(found);
        scenarios.push(ran);
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
                .map(|(i, m)| {
                    let why = match (scenarios[0].get(&k.0), scenarios[i].get(&k.0)) {
                        (Some(b), Some(s)) if i > 0 && m.is_some() && base.is_some() => {
                            mismatch(b, s)
                        }
                        _ => None,
                    };
                    match why {
                        Some(why) => not_comparable(*m, why),
                        None => cell(i, base, *m, first.better),
                    }
                })
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

/// Why scenario `s` did not measure what the baseline's `b` did: its
/// source, its effective parameters or its pack's version differ.
pub fn mismatch(b: &ScenarioResult, s: &ScenarioResult) -> Option<String> {
    let mut why = Vec::new();
    if b.source_sha256.is_some() && s.source_sha256.is_some() && b.source_sha256 != s.source_sha256
    {
        why.push("scenario changed".to_string());
    }
    let keys: std::collections::BTreeSet<&String> =
        b.params.keys().chain(s.params.keys()).collect();
    let differ: Vec<String> = keys
        .into_iter()
        .filter(|k| b.params.get(*k) != s.params.get(*k))
        .map(|k| {
            let v = |p: &std::collections::BTreeMap<String, String>| {
                p.get(k).cloned().unwrap_or_else(|| "unset".into())
            };
            format!("{k} {} vs {}", v(&b.params), v(&s.params))
        })
        .collect();
    if !differ.is_empty() {
        why.push(format!("params differ: {}", differ.join(", ")));
    }
    if b.pack_version.is_some() && s.pack_version.is_some() && b.pack_version != s.pack_version {
        why.push(format!(
            "pack version {} vs {}",
            b.pack_version.as_deref().unwrap_or_default(),
            s.pack_version.as_deref().unwrap_or_default()
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// A cell set apart from the baseline: its value, no ratio, no verdict.
fn not_comparable(m: Option<&Metric>, why: String) -> Cell {
    Cell {
        value: m.map(|m| m.value),
        samples: 0,
        sample_values: m.map(Metric::sample_values).unwrap_or_default(),
        ratio: None,
        ratio_ci: None,
        verdict: Verdict::NotComparable,
        not_comparable: Some(why),
        marks: m.map(|m| m.marks.clone()).unwrap_or_default(),
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
            sample_values: Vec::new(),
            ratio: None,
            ratio_ci: None,
            verdict: Verdict::Missing,
            not_comparable: None,
            marks: Default::default(),
        };
    };
    let samples = m.sample_values();
    let value = stats::median(&samples);
    if i == 0 {
        return Cell {
            value: Some(value),
            samples: samples.len(),
            sample_values: samples,
            ratio: Some(1.0),
            ratio_ci: None,
            verdict: Verdict::Baseline,
            not_comparable: None,
            marks: m.marks.clone(),
        };
    }
    let Some(b) = base else {
        return Cell {
            value: Some(value),
            samples: samples.len(),
            sample_values: samples,
            ratio: None,
            ratio_ci: None,
            verdict: Verdict::Missing,
            not_comparable: None,
            marks: m.marks.clone(),
        };
    };
    let base_samples = b.sample_values();
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
        sample_values: samples,
        ratio,
        ratio_ci,
        verdict,
        not_comparable: None,
        marks: m.marks.clone(),
    }
}

/// Metrics whose median is worse than the baseline by more than `pct`
/// percent; cells that are not comparable count only with `allow_mismatch`
/// (their ratio is then the ratio of medians).
pub fn regressions(c: &Comparison, pct: f64, allow_mismatch: bool) -> Vec<String> {
    let mut out = Vec::new();
    for r in &c.rows {
        let base = r.cells.first().and_then(|b| b.value);
        for (i, cell) in r.cells.iter().enumerate().skip(1) {
            let ratio = match (cell.verdict, cell.value, base) {
                (Verdict::NotComparable, Some(v), Some(b)) if allow_mismatch && b != 0.0 => v / b,
                (Verdict::NotComparable, ..) => continue,
                _ => match cell.ratio {
                    Some(r) => r,
                    None => continue,
                },
            };
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
