//! A scenario's result, run after run: what each run reported folded into
//! it (metrics as samples, the rest tagged with the run's number), and the
//! run document the session ends with.

use crate::api::ScenarioReport;
use crate::model::document::{Metric, Phase, RunDocument, ScenarioResult, Series, SCHEMA};
use crate::model::result::JobResult;
use crate::scenario::pack::{Pack, ScenarioSource};
use std::collections::BTreeMap;
use std::path::Path;

/// The empty result of scenario `s` of pack `p`, run with `params`.
pub fn planned(p: &Pack, s: &ScenarioSource, params: &BTreeMap<String, String>) -> ScenarioResult {
    ScenarioResult {
        name: s.name.clone(),
        pack: Some(p.name.clone()),
        pack_sha256: Some(p.sha256.clone()),
        pack_version: Some(p.version.clone()).filter(|v| !v.is_empty()),
        pack_origin: Some(p.origin.describe()),
        pack_signer: p.origin.signer(),
        source_sha256: Some(s.sha256()),
        params: params.clone(),
        params_read: Some(Default::default()),
        repeat: 0,
        metrics: Vec::new(),
        jobs: Vec::new(),
        tables: Vec::new(),
        notes: Vec::new(),
        series: Vec::new(),
        phases: Vec::new(),
        error: None,
        error_kind: None,
    }
}

/// Folds what run number `run` (from 1) of a scenario reported into its
/// result `g`: each run has its own clock, so its jobs, series and phases
/// say which run they belong to; a note an earlier run already wrote (a
/// loopback peer, a cached read) is kept once.
pub fn fold(g: &mut ScenarioResult, report: ScenarioReport, run: u32) {
    merge_samples(&mut g.metrics, report.metrics);
    let run = Some(run);
    g.jobs.extend(
        report
            .jobs
            .into_iter()
            .map(|j| JobResult { repeat: run, ..j }),
    );
    g.phases.extend(
        report
            .phases
            .into_iter()
            .map(|p| Phase { repeat: run, ..p }),
    );
    g.tables.extend(report.tables);
    let earlier = g.notes.len();
    for n in report.notes {
        if !g.notes[..earlier].contains(&n) {
            g.notes.push(n);
        }
    }
    g.series.extend(
        report
            .series
            .into_iter()
            .map(|x| Series { repeat: run, ..x }),
    );
    if let Some(read) = &mut g.params_read {
        read.extend(report.params_read);
    }
    g.repeat += 1;
}

/// Adds a run's metrics as samples of the same-named metrics; each
/// metric's value is the median of its samples.
pub fn merge_samples(into: &mut Vec<Metric>, new: Vec<Metric>) {
    for m in new {
        match into.iter_mut().find(|x| x.name == m.name) {
            Some(x) => {
                x.samples.extend(m.samples);
                x.marks.extend(m.marks);
            }
            None => into.push(m),
        }
    }
    for m in into.iter_mut() {
        if m.samples.is_empty() {
            continue;
        }
        let mut s = m.samples.clone();
        s.sort_by(f64::total_cmp);
        m.value = s[s.len() / 2];
        if s.len() % 2 == 0 {
            m.value = (s[s.len() / 2 - 1] + s[s.len() / 2]) / 2.0;
        }
    }
}

/// The run document of a session labelled `label` on `target`.
pub fn document(
    label: Option<String>,
    target: &Path,
    scenarios: Vec<ScenarioResult>,
    started: String,
    finished: String,
) -> RunDocument {
    RunDocument {
        schema: SCHEMA.into(),
        plumb_version: env!("CARGO_PKG_VERSION").into(),
        label,
        labels: Vec::new(),
        started,
        finished,
        host: crate::sysinfo::host_info(),
        target: crate::sysinfo::target_info(target).ok(),
        scenarios,
    }
}
