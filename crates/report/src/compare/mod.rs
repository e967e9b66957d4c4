//! `plumb compare`: result files side by side, with a verdict per metric that
//! the samples support (a bootstrap confidence interval of the median ratio).

pub mod load;
pub mod stats;

use crate::model::comparison::run_titles;
pub use crate::model::comparison::{
    Cell, Comparison, Row, Verdict, COMPARE_SCHEMA, MAX_CELLS, MIN_SAMPLES,
};
use crate::model::document::{cut_text, Better, Mark, Metric, RunDocument, ScenarioResult};
use std::collections::{HashMap, HashSet};

/// A comparison too large to build: the runs share so few metrics that a
/// cell per metric and run would be more than [`MAX_CELLS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{metrics} metrics in {runs} runs make {cells} cells to compare, more than {MAX_CELLS}: the runs share few metrics; compare fewer files at once")]
pub struct TooLarge {
    /// The distinct (scenario, metric) pairs.
    pub metrics: usize,
    /// The runs.
    pub runs: usize,
    /// Their product.
    pub cells: usize,
}

/// Builds the comparison; the first document is the baseline. A metric of a
/// scenario whose source, effective parameters or pack version differ from
/// the baseline's is marked not comparable, with the reason. Refused past
/// [`MAX_CELLS`] cells, before they are made.
pub fn compare(docs: &[RunDocument]) -> Result<Comparison, TooLarge> {
    compare_titled(docs, run_titles(docs, &[]))
}

/// [`compare`] of result files (`files`, one per document): a run without
/// a label whose title would clash with another's takes its file's stem.
pub fn compare_files(
    docs: &[RunDocument],
    files: &[std::path::PathBuf],
) -> Result<Comparison, TooLarge> {
    let stems: Vec<String> = files
        .iter()
        .map(|f| {
            f.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    compare_titled(docs, run_titles(docs, &stems))
}

/// [`compare`] with the runs' column titles given.
fn compare_titled(docs: &[RunDocument], runs: Vec<String>) -> Result<Comparison, TooLarge> {
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
    // A cell per key and run: runs sharing no metric would make the
    // comparison grow with the square of the files.
    let cells = keys.len().saturating_mul(docs.len());
    if cells > MAX_CELLS {
        return Err(TooLarge {
            metrics: keys.len(),
            runs: docs.len(),
            cells,
        });
    }
    // Why each run's scenario did not measure what the baseline's did:
    // once per pair of scenarios, not per metric.
    let apart: Vec<HashMap<&str, String>> = scenarios
        .iter()
        .map(|ran| {
            ran.iter()
                .filter_map(|(name, s)| {
                    let b = scenarios[0].get(name)?;
                    Some((name.as_str(), mismatch(b, s)?))
                })
                .collect()
        })
        .collect();
    // The bootstraps of every cell share one budget.
    let mut budget = stats::Budget::default();
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
                    let why = apart[i]
                        .get(k.0.as_str())
                        .filter(|_| i > 0 && m.is_some() && base.is_some());
                    let repeats = |j: usize| scenarios[j].get(&k.0).map_or(1, |s| s.repeat);
                    match why {
                        Some(why) => not_comparable(*m, why.clone()),
                        None => cell(
                            (i, base, *m),
                            first.better,
                            (repeats(0), repeats(i)),
                            &mut budget,
                        ),
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
    Ok(Comparison {
        schema: COMPARE_SCHEMA,
        runs,
        rows,
    })
}

/// Parameters a "params differ" reason names; the others are counted.
pub const NAMED_PARAMS: usize = 3;

/// Bytes of a parameter's name or value, or of a pack version, that a
/// reason quotes (longer ones are cut).
pub const QUOTED_BYTES: usize = 48;

/// Why scenario `s` did not measure what the baseline's `b` did: its
/// source, its effective parameters or its pack's version differ. The
/// reason is short whatever the scenarios hold: [`NAMED_PARAMS`]
/// parameters named (each name and value cut to [`QUOTED_BYTES`]), the
/// others counted.
pub fn mismatch(b: &ScenarioResult, s: &ScenarioResult) -> Option<String> {
    let quote = |t: &str| cut_text(t, QUOTED_BYTES).into_owned();
    let mut why = Vec::new();
    if b.source_sha256.is_some() && s.source_sha256.is_some() && b.source_sha256 != s.source_sha256
    {
        why.push("scenario changed".to_string());
    }
    // Only what the scenario read can change its figures; documents that
    // do not say what was read count every parameter.
    let keys: std::collections::BTreeSet<&String> = match (&b.params_read, &s.params_read) {
        (Some(rb), Some(rs)) => rb.iter().chain(rs).collect(),
        _ => b.params.keys().chain(s.params.keys()).collect(),
    };
    let mut differ = keys
        .into_iter()
        .filter(|k| b.params.get(*k) != s.params.get(*k));
    let value = |p: &std::collections::BTreeMap<String, String>, k: &str| {
        p.get(k).map_or_else(|| "unset".to_string(), |v| quote(v))
    };
    let named: Vec<String> = differ
        .by_ref()
        .take(NAMED_PARAMS)
        .map(|k| {
            format!(
                "{} {} vs {}",
                quote(k),
                value(&b.params, k),
                value(&s.params, k)
            )
        })
        .collect();
    if !named.is_empty() {
        let mut text = format!("params differ: {}", named.join(", "));
        let more = differ.count();
        if more > 0 {
            text.push_str(&format!(" and {more} more"));
        }
        why.push(text);
    }
    if b.pack_version.is_some() && s.pack_version.is_some() && b.pack_version != s.pack_version {
        why.push(format!(
            "pack version {} vs {}",
            quote(b.pack_version.as_deref().unwrap_or_default()),
            quote(s.pack_version.as_deref().unwrap_or_default())
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
        repeat_for_verdict: None,
        marks: m.map(|m| m.marks.clone()).unwrap_or_default(),
    }
}

/// The `--repeat` that gives a scenario which made `samples` samples of a
/// metric in `repeat` runs at least [`MIN_SAMPLES`] of them.
fn repeat_for(samples: usize, repeat: u32) -> u32 {
    let per_run = (samples / repeat.max(1) as usize).max(1);
    MIN_SAMPLES.div_ceil(per_run) as u32
}

/// Run `i`'s cell of metric `m` against the baseline's `base`; `repeats`
/// are how many times the baseline's scenario and run `i`'s ran; its
/// interval is drawn from the comparison's `budget`.
fn cell(
    (i, base, m): (usize, Option<&Metric>, Option<&Metric>),
    better: Better,
    repeats: (u32, u32),
    budget: &mut stats::Budget,
) -> Cell {
    let empty = Cell {
        value: None,
        samples: 0,
        sample_values: Vec::new(),
        ratio: None,
        ratio_ci: None,
        verdict: Verdict::Missing,
        not_comparable: None,
        repeat_for_verdict: None,
        marks: Default::default(),
    };
    let Some(m) = m else {
        return empty;
    };
    let samples = m.sample_values();
    let value = stats::median(&samples);
    let marked = Cell {
        value: Some(value),
        samples: samples.len(),
        marks: m.marks.clone(),
        ..empty
    };
    if i == 0 {
        return Cell {
            sample_values: samples,
            ratio: Some(1.0),
            verdict: Verdict::Baseline,
            ..marked
        };
    }
    let Some(b) = base else {
        return Cell {
            sample_values: samples,
            ..marked
        };
    };
    // A figure cut short by a stop measured another length of time.
    if [b, m].iter().any(|x| x.marks.contains(&Mark::Partial)) {
        return not_comparable(
            Some(m),
            "partial: a run was stopped while this was measured".into(),
        );
    }
    let base_samples = b.sample_values();
    let base_value = stats::median(&base_samples);
    let ratio = (base_value != 0.0).then(|| value / base_value);
    // Fewer than MIN_SAMPLES on a side: a ratio, no interval, no verdict,
    // and the --repeat that would give one.
    if base_samples.len().min(samples.len()) < MIN_SAMPLES {
        let need =
            repeat_for(base_samples.len(), repeats.0).max(repeat_for(samples.len(), repeats.1));
        return Cell {
            sample_values: samples,
            ratio,
            verdict: Verdict::Unknown,
            repeat_for_verdict: Some(need),
            ..marked
        };
    }
    let ratio_ci = stats::ratio_ci_within(&base_samples, &samples, budget);
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
        sample_values: samples,
        ratio,
        ratio_ci,
        verdict,
        ..marked
    }
}

/// Metrics worse than the baseline by more than `pct` percent with a
/// verdict that says so: the 95% interval of the ratio excludes 1 (a row
/// "within noise", or with too few samples for a verdict, never counts).
/// Cells that are not comparable count only with `allow_mismatch`, judged
/// by the interval of their own samples.
pub fn regressions(c: &Comparison, pct: f64, allow_mismatch: bool) -> Vec<String> {
    let mut out = Vec::new();
    // The intervals made here share one budget, as the comparison's did.
    let mut budget = stats::Budget::default();
    for r in &c.rows {
        let Some(base) = r.cells.first() else {
            continue;
        };
        for (i, cell) in r.cells.iter().enumerate().skip(1) {
            let (ratio, interval) = match (cell.verdict, cell.value, base.value) {
                (Verdict::NotComparable, Some(v), Some(b)) if allow_mismatch && b != 0.0 => {
                    if base.sample_values.len().min(cell.sample_values.len()) < MIN_SAMPLES {
                        continue;
                    }
                    (
                        v / b,
                        stats::ratio_ci_within(
                            &base.sample_values,
                            &cell.sample_values,
                            &mut budget,
                        ),
                    )
                }
                (Verdict::Worse, Some(_), _) => match cell.ratio {
                    Some(ratio) => (ratio, cell.ratio_ci),
                    None => continue,
                },
                _ => continue,
            };
            // The interval must lie wholly on the worse side of 1.
            let excludes_one = interval.is_some_and(|(lo, hi)| match r.better {
                Better::Higher => hi < 1.0,
                Better::Lower => lo > 1.0,
            });
            if !excludes_one {
                continue;
            }
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

/// The cells `--fail-if-slower` could not judge for want of samples, and
/// the `--repeat` that would give every one of them a verdict.
pub fn undecided(c: &Comparison) -> Option<(usize, u32)> {
    let need: Vec<u32> = c
        .rows
        .iter()
        .flat_map(|r| r.cells.iter().filter_map(|c| c.repeat_for_verdict))
        .collect();
    need.iter().max().map(|most| (need.len(), *most))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario with `params` and `metrics` metrics.
    fn scenario(params: &[(String, String)], metrics: usize) -> ScenarioResult {
        let metrics: Vec<serde_json::Value> = (0..metrics)
            .map(|i| serde_json::json!({"name": format!("m{i}"), "unit": "u", "better": "higher", "value": 1.0, "samples": [1.0]}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "name": "s", "pack": "p", "source_sha256": null, "repeat": 1,
            "params": params.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
            "metrics": metrics, "jobs": [], "tables": [], "error": null
        }))
        .unwrap()
    }

    fn doc(s: ScenarioResult) -> RunDocument {
        serde_json::from_value(serde_json::json!({
            "schema": "plumb.result.v1", "plumb_version": "0", "label": null,
            "started": "", "finished": "",
            "host": {"hostname": "h", "os": "", "kernel": "", "arch": "", "cpu_model": "", "cpus": 1, "memory_bytes": 1},
            "target": null, "scenarios": [s]
        }))
        .unwrap()
    }

    #[test]
    fn a_reason_names_a_few_parameters_cut_short_and_counts_the_rest() {
        let params = |v: &str| -> Vec<(String, String)> {
            (0..200)
                .map(|i| (format!("k{i:03}{}", "n".repeat(100)), v.repeat(4000)))
                .collect()
        };
        let (a, b) = (scenario(&params("A"), 0), scenario(&params("B"), 0));
        let why = mismatch(&a, &b).unwrap();
        assert!(why.starts_with("params differ: k000"), "{why}");
        assert!(
            why.ends_with(&format!("and {} more", 200 - NAMED_PARAMS)),
            "{why}"
        );
        // Three names and six values, each cut, and the words between.
        assert!(why.len() < 9 * QUOTED_BYTES + 100, "{} bytes", why.len());
        let mut unset = b.clone();
        unset.params.clear();
        assert!(mismatch(&a, &unset).unwrap().contains("vs unset"));
    }

    #[test]
    fn the_reason_is_made_once_and_every_cell_holds_it_short() {
        let params = |v: &str| -> Vec<(String, String)> {
            (0..50).map(|i| (format!("k{i}"), v.repeat(4000))).collect()
        };
        let docs = [
            doc(scenario(&params("A"), 300)),
            doc(scenario(&params("B"), 300)),
        ];
        let c = compare(&docs).unwrap();
        assert_eq!(c.rows.len(), 300);
        let reasons: Vec<&String> = c
            .rows
            .iter()
            .map(|r| r.cells[1].not_comparable.as_ref().unwrap())
            .collect();
        assert!(reasons.iter().all(|r| *r == reasons[0] && r.len() < 1000));
        assert_eq!(c.not_comparable(), 300);
    }
}

#[cfg(test)]
mod size {
    use super::*;

    #[test]
    fn runs_sharing_no_metric_are_refused_before_their_cells_are_made() {
        let doc = |metrics: std::ops::Range<usize>| -> RunDocument {
            let metrics: Vec<serde_json::Value> = metrics
                .map(|i| serde_json::json!({"name": format!("m{i}"), "unit": "u", "better": "higher", "value": 1.0, "samples": [1.0]}))
                .collect();
            serde_json::from_value(serde_json::json!({
                "schema": "plumb.result.v1", "plumb_version": "0", "label": null,
                "started": "", "finished": "",
                "host": {"hostname": "h", "os": "", "kernel": "", "arch": "", "cpu_model": "", "cpus": 1, "memory_bytes": 1},
                "target": null,
                "scenarios": [{"name": "s", "pack": null, "source_sha256": null, "params": {}, "repeat": 1,
                               "metrics": metrics, "jobs": [], "tables": [], "error": null}]
            }))
            .unwrap()
        };
        // 50 runs of 1,000 metrics each, none shared: 2.5 million cells.
        let per = 1_000;
        let docs: Vec<RunDocument> = (0..50).map(|i| doc(i * per..(i + 1) * per)).collect();
        let e = compare(&docs).unwrap_err();
        assert_eq!((e.metrics, e.runs, e.cells), (50 * per, 50, 2_500_000));
        assert!(e.to_string().contains("more than 2000000"), "{e}");
        // 200 runs sharing their metrics: a cell each.
        let shared: Vec<RunDocument> = (0..200).map(|_| doc(0..per)).collect();
        assert_eq!(compare(&shared).unwrap().rows.len(), per);
    }
}
