//! A trace replay as a plumb result document (`plumb.result.v1`), as
//! `plumb run --json` writes one: what `plumb trace replay --json` saves, so
//! that `plumb compare` and `plumb show` read two machines' replays.
//!
//! The document holds one scenario named after the trace's file: its
//! parameters are the replay's options, its source the trace's SHA-256 (a
//! comparison sets apart replays of different traces or options), its
//! metrics the replay's time and rate and each operation's and step's
//! latency, its tables the operations (and steps, and clients) as the
//! replay printed them, its notes the summary under them.

use crate::model::document::{Better, Metric, RunDocument, ScenarioResult, Table, SCHEMA};
use crate::model::machine::{HostInfo, TargetInfo};
use crate::report::replay::us;
use crate::trace::replay::ReplayResult;
use crate::trace::Halt;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What a replay's document says besides the figures.
pub struct Identity<'a> {
    /// The trace file.
    pub trace: &'a Path,
    /// The SHA-256 of its text (hex), the scenario's source.
    pub sha256: String,
    /// The run's label (`--label`).
    pub label: Option<String>,
    /// The machine that replayed.
    pub host: HostInfo,
    /// The file system of the `--target` directory, when it could be read.
    pub target: Option<TargetInfo>,
    /// The options as given: speed, threads, clients.
    pub params: BTreeMap<String, String>,
    /// When the replay began and ended, RFC 3339.
    pub started: String,
    /// When it ended.
    pub finished: String,
}

/// A metric with one sample.
fn metric(name: String, unit: &str, better: Better, value: f64) -> Metric {
    Metric {
        name,
        unit: unit.into(),
        better,
        value,
        samples: vec![value],
        marks: BTreeSet::new(),
    }
}

/// The replay's figures as metrics: its time, its rate, its outcome
/// counts (`noted`: maps noted but not replayed), and each operation's
/// and step's latency.
fn metrics(r: &ReplayResult) -> Vec<Metric> {
    let mut out = vec![
        metric("seconds".into(), "s", Better::Lower, r.seconds),
        metric(
            "ops_per_s".into(),
            "ops/s",
            Better::Higher,
            r.total_ops as f64 / r.seconds.max(1e-9),
        ),
        metric("ops".into(), "ops", Better::Higher, r.total_ops as f64),
        metric(
            "divergences".into(),
            "ops",
            Better::Lower,
            r.divergences as f64,
        ),
        metric(
            "expected_errors".into(),
            "ops",
            Better::Lower,
            r.expected_errors as f64,
        ),
        metric("noted".into(), "ops", Better::Lower, r.skipped as f64),
    ];
    if r.reference_seconds > 0.0 {
        out.push(metric(
            format!("time_vs_{}", r.reference.name()),
            "ratio",
            Better::Lower,
            r.time_ratio,
        ));
    }
    for o in &r.ops {
        for (what, v) in [
            ("mean_us", o.mean_us),
            ("p50_us", o.p50_us),
            ("p99_us", o.p99_us),
        ] {
            out.push(metric(format!("{}.{what}", o.op), "us", Better::Lower, v));
        }
    }
    for s in &r.steps {
        for (what, v) in [("mean_us", s.mean_us), ("p99_us", s.p99_us)] {
            out.push(metric(
                format!("step.{}.{what}", s.step),
                "us",
                Better::Lower,
                v,
            ));
        }
    }
    out
}

/// The operations table (numbers in full, so a reader can sum them), the
/// steps table and, for more than one client, each client's seconds.
fn tables(r: &ReplayResult) -> Vec<Table> {
    let header = |cells: &[&str]| cells.iter().map(|c| c.to_string()).collect();
    let (ops_header, ops_rows) = crate::report::replay::operations(r, |b| b.to_string());
    let mut out = vec![Table {
        title: "replayed operations".into(),
        header: ops_header,
        rows: ops_rows,
    }];
    if !r.steps.is_empty() {
        out.push(Table {
            title: "steps".into(),
            header: header(&["step", "count", "mean µs", "p50 µs", "p99 µs", "max µs"]),
            rows: r
                .steps
                .iter()
                .map(|s| {
                    vec![
                        s.step.clone(),
                        s.count.to_string(),
                        us(s.mean_us),
                        us(s.p50_us),
                        us(s.p99_us),
                        us(s.max_us),
                    ]
                })
                .collect(),
        });
    }
    if r.clients > 1 {
        out.push(Table {
            title: "clients".into(),
            header: header(&["client", "seconds"]),
            rows: r
                .client_seconds
                .iter()
                .enumerate()
                .map(|(k, s)| vec![(k + 1).to_string(), format!("{s:.6}")])
                .collect(),
        });
    }
    out
}

/// The document's words for a halt: its error and error kind.
fn failure(h: &Halt, message: String) -> (String, &'static str) {
    let kind = match h {
        Halt::Interrupted => "interrupted",
        Halt::Deadline => "deadline",
        Halt::DiskFull(_) => "host/os",
        Halt::Budget(_) => "host/budget",
        Halt::Failed(_) => "host/failed",
    };
    (message, kind)
}

/// The result document of replay `r`: its figures, its tables, and the
/// summary `plumb trace replay` prints under them (with why it stopped,
/// for a replay that stopped early).
pub fn document(r: &ReplayResult, id: Identity) -> RunDocument {
    let summary = crate::report::replay::summary(r);
    let halted = r.halted.as_ref().map(crate::report::replay::halt_message);
    let name = id
        .trace
        .file_name()
        .map_or_else(|| "trace".into(), |n| n.to_string_lossy().into_owned());
    let (error, error_kind) = match (&r.halted, halted) {
        (Some(h), Some(m)) => {
            let (e, k) = failure(h, m);
            (Some(e), Some(k.to_string()))
        }
        _ => (None, None),
    };
    let params_read = Some(id.params.keys().cloned().collect());
    RunDocument {
        schema: SCHEMA.into(),
        plumb_version: env!("CARGO_PKG_VERSION").into(),
        label: id.label,
        labels: Vec::new(),
        started: id.started,
        finished: id.finished,
        host: id.host,
        target: id.target,
        scenarios: vec![ScenarioResult {
            name,
            pack: None,
            pack_sha256: None,
            pack_version: None,
            pack_origin: None,
            pack_signer: None,
            source_sha256: Some(id.sha256),
            params: id.params,
            params_read,
            repeat: 1,
            metrics: metrics(r),
            jobs: Vec::new(),
            tables: tables(r),
            notes: summary,
            series: Vec::new(),
            phases: Vec::new(),
            error,
            error_kind,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::replay::{OpSummary, Reference};
    use sha2::{Digest, Sha256};

    fn replayed() -> ReplayResult {
        ReplayResult {
            ops: vec![OpSummary {
                op: "pwrite".into(),
                count: 3,
                bytes: 12288,
                expected_errors: 0,
                divergences: 1,
                mean_us: 10.0,
                p50_us: 9.0,
                p99_us: 30.0,
                max_us: 31.0,
            }],
            total_ops: 3,
            divergences: 1,
            expected_errors: 0,
            skipped: 0,
            first_divergence: None,
            halted: None,
            seconds: 0.5,
            original_seconds: 2.0,
            reference: Reference::Untraced,
            reference_seconds: 0.4,
            time_ratio: 1.25,
            files_created: 0,
            bytes_laid_out: 0,
            clients: 2,
            client_seconds: vec![0.4, 0.5],
            steps: Vec::new(),
        }
    }

    #[test]
    fn a_replay_becomes_a_result_that_reads_back() {
        let id = Identity {
            trace: Path::new("dir/app.trace"),
            sha256: format!("{:x}", Sha256::digest(b"plumb-trace 2\n")),
            label: Some("vm-a".into()),
            host: HostInfo::default(),
            target: None,
            params: BTreeMap::from([("speed".to_string(), "1".to_string())]),
            started: "2026-01-01T00:00:00+00:00".into(),
            finished: "2026-01-01T00:00:01+00:00".into(),
        };
        let doc = document(&replayed(), id);
        let text = serde_json::to_string_pretty(&doc).unwrap();
        let back = crate::compare::load::parse("r.json", &text).unwrap();
        let s = &back.scenarios[0];
        assert_eq!(s.name, "app.trace");
        assert_eq!(back.label.as_deref(), Some("vm-a"));
        let value = |n: &str| s.metrics.iter().find(|m| m.name == n).map(|m| m.value);
        assert_eq!(value("seconds"), Some(0.5));
        assert_eq!(value("ops_per_s"), Some(6.0));
        assert_eq!(value("time_vs_untraced"), Some(1.25));
        assert_eq!(value("pwrite.p99_us"), Some(30.0));
        assert_eq!(s.tables[0].rows[0][2], "12288");
        assert_eq!(s.tables[1].title, "clients");
        assert_eq!(s.notes, crate::report::replay::summary(&replayed()));
    }
}
