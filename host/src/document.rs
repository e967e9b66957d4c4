//! plumb's own result file (`--json FILE`): one versioned document per run.

use crate::result::JobResult;
use crate::sysinfo::{HostInfo, TargetInfo};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema name written in every result file.
pub const SCHEMA: &str = "plumb.result.v1";

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunDocument {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Version of plumb that wrote it.
    pub plumb_version: String,
    /// The run's label (`--label`), if any.
    pub label: Option<String>,
    /// Start time, RFC 3339.
    pub started: String,
    /// End time, RFC 3339.
    pub finished: String,
    /// The machine.
    pub host: HostInfo,
    /// The storage measured.
    pub target: Option<TargetInfo>,
    /// What ran.
    pub scenarios: Vec<ScenarioResult>,
}

/// One scenario (for `plumb fio`, the whole fio invocation).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScenarioResult {
    /// Scenario name.
    pub name: String,
    /// Pack it came from.
    pub pack: Option<String>,
    /// SHA-256 of the whole pack (manifest and every scenario).
    #[serde(default)]
    pub pack_sha256: Option<String>,
    /// SHA-256 of its source (for `plumb fio`, of the job description).
    pub source_sha256: Option<String>,
    /// Parameters used.
    pub params: BTreeMap<String, String>,
    /// Repetitions.
    pub repeat: u32,
    /// Reported metrics.
    pub metrics: Vec<Metric>,
    /// Job results.
    pub jobs: Vec<JobResult>,
    /// Tables reported.
    pub tables: Vec<Table>,
    /// Notes the scenario wrote (`report::note`).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// Which direction of a metric is an improvement.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Bigger is better (IOPS, bandwidth).
    Higher,
    /// Smaller is better (latency, time).
    Lower,
}

/// A named figure with its unit and samples.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Metric {
    /// Name, e.g. `randread.read.iops`.
    pub name: String,
    /// Unit, e.g. `iops`, `bytes/s`, `ns`.
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// The value (median of samples when repeated).
    pub value: f64,
    /// Every sample.
    pub samples: Vec<f64>,
}

/// A table a scenario reported.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Table {
    /// Title.
    pub title: String,
    /// Column names.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

/// The standard metrics of a job: IOPS, bandwidth, mean and p99 latency per direction.
pub fn job_metrics(r: &JobResult) -> Vec<Metric> {
    let mut out = Vec::new();
    for (dir, d) in [("read", &r.read), ("write", &r.write)] {
        if d.total_ios == 0 {
            continue;
        }
        let mut push = |what: &str, unit: &str, better, value: f64| {
            out.push(Metric {
                name: format!("{}.{dir}.{what}", r.name),
                unit: unit.into(),
                better,
                value,
                samples: vec![value],
            })
        };
        push("iops", "iops", Better::Higher, d.iops);
        push("bw_bytes", "bytes/s", Better::Higher, d.bw_bytes as f64);
        push("lat_mean_ns", "ns", Better::Lower, d.lat.mean);
        push("lat_p99_ns", "ns", Better::Lower, d.lat.p99 as f64);
    }
    out
}
