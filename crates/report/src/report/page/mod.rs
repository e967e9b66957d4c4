//! `plumb report`: results as one page to publish. HTML: a single file
//! that needs nothing else (charts inline as SVG, CSS inline, a content
//! security policy that forbids every request, readable without script;
//! a few lines of inline script sort tables). Markdown: the same sections,
//! the charts as SVG files beside it.
//!
//! The page is assembled from the renderers every command uses — the run
//! table, the comparison, the template's tables, titled tables, the
//! charts — in one more output format; every text from a result file is
//! escaped where it is written.

mod html;
mod markdown;

pub use html::{html, kind_name, CSP};
pub use markdown::markdown;

use crate::model::comparison::Comparison;
use crate::model::document::{RunDocument, ScenarioResult};
use crate::report::charts::Chart;
use crate::report::results::Layout;
use crate::report::run_table::{self, scenario_name};
use crate::terminal::cleaned;
use std::collections::{HashMap, HashSet};

/// What a page shows.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// The runs, the first the baseline.
    pub docs: &'a [RunDocument],
    /// The files they were read from, as given.
    pub files: &'a [String],
    /// Their comparison (titles of runs in `runs`).
    pub c: &'a Comparison,
    /// The pack's comparison template's tables, when there are some.
    pub layouts: &'a [Layout],
    /// Every chart.
    pub charts: &'a [Chart],
}

/// The scenarios of the runs by name (`PACK/NAME`), in first-seen order, each
/// with its result in every run that has it: linear in the scenarios.
fn scenarios(docs: &[RunDocument]) -> Vec<(String, Vec<(usize, &ScenarioResult)>)> {
    let mut out: Vec<(String, Vec<(usize, &ScenarioResult)>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (i, d) in docs.iter().enumerate() {
        for s in &d.scenarios {
            let name = run_table::shown_name(s);
            match at.get(&name) {
                Some(k) => out[*k].1.push((i, s)),
                None => {
                    at.insert(name.clone(), out.len());
                    out.push((name, vec![(i, s)]));
                }
            }
        }
    }
    out
}

/// The packs a page's title names, at most.
const TITLE_PACKS: usize = 4;

/// The page's title: the packs (the first [`TITLE_PACKS`]) and the runs.
fn title(p: &Page) -> String {
    let mut packs: Vec<&str> = Vec::new();
    for s in p.docs.iter().flat_map(|d| &d.scenarios) {
        if packs.len() == TITLE_PACKS {
            break;
        }
        let name = s.pack.as_deref().unwrap_or(&s.name);
        if !packs.contains(&name) {
            packs.push(name);
        }
    }
    let runs = p.c.runs.join(" vs ");
    format!("{}: {runs}", packs.join(", "))
}

/// Each scenario's charts, by the scenario's name ([`Chart::scenario`]),
/// in the charts' order: made once, for pages that look them up per
/// scenario.
fn charts_by_scenario(charts: &[Chart]) -> HashMap<&str, Vec<&Chart>> {
    let mut out: HashMap<&str, Vec<&Chart>> = HashMap::new();
    for c in charts {
        if let Some(s) = &c.scenario {
            out.entry(&**s).or_default().push(c);
        }
    }
    out
}

/// An RFC 3339 time as a person reads it: to the second, with its offset
/// (`2026-12-06 02:06:16 +00:00`).
fn when(t: &str) -> String {
    let day: String = t.chars().take(19).collect::<String>().replace('T', " ");
    let offset = t
        .rfind(['+', '-'])
        .filter(|i| *i >= 19)
        .map(|i| &t[i..])
        .or_else(|| t.ends_with('Z').then_some("UTC"))
        .unwrap_or("");
    format!("{day} {offset}").trim_end().to_string()
}

/// One row per run: its title, machine, times, plumb version, target, file.
fn runs_grid(p: &Page) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "run", "host", "started", "finished", "plumb", "target", "file",
    ]
    .map(String::from)
    .to_vec();
    let rows = p
        .docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let target = d
                .target
                .as_ref()
                .map(|t| format!("{} ({})", t.path, t.fs_type))
                .unwrap_or_else(|| "-".into());
            let mut run = p.c.runs.get(i).cloned().unwrap_or_default();
            if i == 0 && p.docs.len() > 1 {
                run.push_str(" (baseline)");
            }
            vec![
                run,
                d.host.hostname.clone(),
                when(&d.started),
                when(&d.finished),
                d.plumb_version.clone(),
                target,
                p.files.get(i).cloned().unwrap_or_default(),
            ]
            .into_iter()
            .map(|s| cleaned(&s))
            .collect()
        })
        .collect();
    (header, rows)
}

/// The packs each run ran, once each: version, SHA-256 of the whole pack,
/// where it came from, who signed it.
fn packs_grid(p: &Page) -> (Vec<String>, Vec<Vec<String>>) {
    let header = ["pack", "run", "version", "sha256", "origin", "signer"]
        .map(String::from)
        .to_vec();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut seen: HashSet<Vec<String>> = HashSet::new();
    for (i, d) in p.docs.iter().enumerate() {
        for s in &d.scenarios {
            let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
            let row: Vec<String> = vec![
                s.pack.clone().unwrap_or_else(|| s.name.clone()),
                p.c.runs.get(i).cloned().unwrap_or_default(),
                opt(&s.pack_version),
                opt(&s.pack_sha256),
                opt(&s.pack_origin),
                opt(&s.pack_signer),
            ]
            .into_iter()
            .map(|t| cleaned(&t))
            .collect();
            if seen.insert(row.clone()) {
                rows.push(row);
            }
        }
    }
    (header, rows)
}

/// What each scenario measured in each run: the parameters it read, how
/// many runs, and whether it failed.
fn measured_grid(p: &Page) -> (Vec<String>, Vec<Vec<String>>) {
    let header = ["scenario", "run", "parameters", "runs", "status"]
        .map(String::from)
        .to_vec();
    let mut rows = Vec::new();
    for (_, runs) in scenarios(p.docs) {
        for (i, s) in runs {
            let params: Vec<String> = s
                .params
                .iter()
                .filter(|(k, _)| s.params_read.as_ref().is_none_or(|r| r.contains(*k)))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let status = match (&s.error, s.error_kind.as_deref()) {
                (None, _) => "ok".to_string(),
                (Some(_), Some("interrupted")) => "stopped: figures partial".into(),
                (Some(e), _) => format!("failed: {}", e.lines().next().unwrap_or_default()),
            };
            rows.push(
                vec![
                    scenario_name(s),
                    p.c.runs.get(i).cloned().unwrap_or_default(),
                    if params.is_empty() {
                        "-".into()
                    } else {
                        params.join(", ")
                    },
                    s.repeat.to_string(),
                    status,
                ]
                .into_iter()
                .map(|t| cleaned(&t))
                .collect(),
            );
        }
    }
    (header, rows)
}

/// What the marks beside figures mean.
const MARKS: [(&str, &str); 3] = [
    (
        "loopback",
        "the network peer was this machine: the kernel's loopback path, not a network",
    ),
    (
        "cached",
        "a buffered read found the file in the page cache: memory, not the device",
    ),
    (
        "partial",
        "the run was stopped while the figure was measured: it covers the time until then",
    ),
];
