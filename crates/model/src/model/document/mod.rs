//! plumb's own result file (`--json FILE`): one versioned document per run.

mod checks;

pub use checks::LimitError;

use crate::model::machine::{HostInfo, TargetInfo};
use crate::model::result::JobResult;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

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
    /// The machine's labels from a fleet's inventory, as written there: a
    /// plain tag (`nvme`) or `KEY=VALUE` (`zone=eu-west-1a`), which
    /// `--group-by KEY` groups runs by. Absent in documents older than the
    /// field and in runs not made by a fleet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
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

impl RunDocument {
    /// The value of this run's `KEY=VALUE` label (see [`label_value`]).
    pub fn label_value(&self, key: &str) -> Option<&str> {
        label_value(&self.labels, key)
    }
}

/// The value of the first `KEY=VALUE` label among `labels` whose key is
/// `key`; plain tags have no value.
pub fn label_value<'a>(labels: &'a [String], key: &str) -> Option<&'a str> {
    labels
        .iter()
        .find_map(|l| l.split_once('=').filter(|(k, _)| *k == key).map(|(_, v)| v))
}

/// One scenario (for `plumb fio`, the whole fio invocation).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScenarioResult {
    /// Scenario name.
    pub name: String,
    /// Pack it came from.
    pub pack: Option<String>,
    /// SHA-256 of the whole pack: its bundle's, whatever it was loaded from.
    #[serde(default)]
    pub pack_sha256: Option<String>,
    /// The pack's version (pack.toml).
    #[serde(default)]
    pub pack_version: Option<String>,
    /// Where the pack came from: `builtin`, `folder PATH`, `bundle PATH`,
    /// `script PATH`.
    #[serde(default)]
    pub pack_origin: Option<String>,
    /// The key id that signed the pack's bundle, with `verified` or
    /// `untrusted` (not checked).
    #[serde(default)]
    pub pack_signer: Option<String>,
    /// SHA-256 of its source (for `plumb fio`, of the job description).
    pub source_sha256: Option<String>,
    /// Parameters used.
    pub params: BTreeMap<String, String>,
    /// The parameters the scenario read: a comparison sets runs apart only
    /// on these. Absent in documents older than the field (every parameter
    /// then counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params_read: Option<std::collections::BTreeSet<String>>,
    /// How many times the scenario ran (`--repeat`); metrics hold one sample per run.
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
    /// Time series the scenario reported (`report::series`), for charts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Series>,
    /// The phases the scenario marked (`report::phase`): the cases of a
    /// multi-case scenario on its clock, drawn as labelled bands on its
    /// charts; the jobs started in one carry its name as their `case`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// What stopped it, when it failed: `deadline`, `interrupted`,
    /// `memory_limit`, `trap`, `script`, `failed`, `start`, or `host/` and
    /// the category of a host error the scenario did not handle
    /// (`host/sandbox`, `host/budget`, `host/os`, …).
    #[serde(default)]
    pub error_kind: Option<String>,
}

impl ScenarioResult {
    /// `PACK/NAME`, or the name alone for a scenario without a pack: how
    /// comparisons key a scenario's metrics.
    pub fn qualified_name(&self) -> String {
        match &self.pack {
            Some(p) => format!("{p}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// Largest magnitude of a series value: a chart's axis range around it
/// stays finite.
pub const MAX_SERIES_VALUE: f64 = 1e300;

/// A time series a scenario reported (`report::series`): `--svg` draws
/// the series of a scenario on one chart, those of a second unit against a
/// right-hand axis.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Series {
    /// What it shows (`probe p99`, `copy MiB/s`).
    pub name: String,
    /// Unit of the values.
    pub unit: String,
    /// `[x, y]` points, x in seconds on the scenario's clock.
    pub points: Vec<[f64; 2]>,
    /// In a repeated scenario: which run of it (from 1) reported the
    /// series; each run has its own clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
}

/// A phase of a scenario (`report::phase`): one case of a multi-case
/// scenario (interference's quiet, copy, rand-writes, fsync-stream), from
/// the call that began it to the next one or the scenario's end.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Phase {
    /// Its name, as the scenario gave it.
    pub name: String,
    /// When it began, in seconds on the scenario's clock.
    pub started_s: f64,
    /// When it ended; absent for the last one, which lasted to the
    /// scenario's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_s: Option<f64>,
    /// In a repeated scenario: which run of it (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
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

/// A name that is not one of an enumeration's: the first 40 characters
/// of what was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Not `higher` or `lower`.
    #[error("better must be \"higher\" or \"lower\", not \"{0}\"")]
    Better(String),
    /// Not a mark's name.
    #[error("a mark is \"loopback\", \"cached\" or \"partial\", not \"{0}\"")]
    Mark(String),
}

/// The first 40 characters of `s`, as an error shows what was given.
fn shown(s: &str) -> String {
    s.chars().take(40).collect()
}

impl std::str::FromStr for Better {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Better, NameError> {
        match s {
            "higher" => Ok(Better::Higher),
            "lower" => Ok(Better::Lower),
            other => Err(NameError::Better(shown(other))),
        }
    }
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
    /// What the figure measured besides what its name says (a loopback
    /// peer, a read served from the page cache), shown next to it.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub marks: BTreeSet<Mark>,
}

/// A mark on a figure: it measured something other than what a reader
/// would take it for.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Mark {
    /// The network peer was this machine (loopback or one of its own
    /// addresses): the kernel's loopback path, not a network.
    Loopback,
    /// A buffered read found the file's pages in the page cache: memory,
    /// not the device.
    Cached,
    /// The run was stopped (Ctrl-C, the deadline) while the figure was
    /// being measured: it covers only the time until then.
    Partial,
}

impl Mark {
    /// Its name in scripts, JSON and on screen.
    pub fn name(self) -> &'static str {
        match self {
            Mark::Loopback => "loopback",
            Mark::Cached => "cached",
            Mark::Partial => "partial",
        }
    }
}

impl std::str::FromStr for Mark {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Mark, NameError> {
        match s {
            "loopback" => Ok(Mark::Loopback),
            "cached" => Ok(Mark::Cached),
            "partial" => Ok(Mark::Partial),
            other => Err(NameError::Mark(shown(other))),
        }
    }
}

/// `" (loopback, cached)"` after a figure with marks, `""` without.
pub fn marks_suffix(marks: &BTreeSet<Mark>) -> String {
    if marks.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = marks.iter().map(|m| m.name()).collect();
    format!(" ({})", names.join(", "))
}

impl Metric {
    /// Its samples, or its value alone when it has none.
    pub fn sample_values(&self) -> Vec<f64> {
        if self.samples.is_empty() {
            vec![self.value]
        } else {
            self.samples.clone()
        }
    }
}

/// A table a scenario reported.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Table {
    /// The table's heading, as the scenario gave it.
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
                marks: BTreeSet::new(),
            })
        };
        push("iops", "iops", Better::Higher, d.iops);
        push("bw_bytes", "bytes/s", Better::Higher, d.bw_bytes as f64);
        push("lat_mean_ns", "ns", Better::Lower, d.lat.mean);
        push("lat_p99_ns", "ns", Better::Lower, d.lat.p99 as f64);
    }
    out
}

/// The limits of a result document: one definition for those who write
/// results (the host API's `report::` calls, job results) and those who
/// read them (`compare`, `show`, `--resume`), so that plumb never writes a
/// document it would refuse to read, and a hostile file cannot make a
/// reader run out of memory or time.
pub mod limits {
    /// Largest result file read, in bytes.
    pub const FILE_BYTES: u64 = 128 << 20;
    /// Scenarios in one document.
    pub const SCENARIOS: usize = 10_000;
    /// Metrics in one document, all scenarios together.
    pub const METRICS: usize = 100_000;
    /// Samples of one metric.
    pub const SAMPLES: usize = 10_000_000;
    /// Jobs in one document.
    pub const JOBS: usize = 10_000;
    /// Runs of one scenario (`--repeat`): a scenario's `repeat`, and the
    /// run a job, series or phase of it names.
    pub const REPEAT: u32 = 100_000;
    /// Bytes of a name, label, unit or parameter.
    pub const NAME: usize = 4096;
    /// Labels of one run (a fleet inventory gives a host at most 32 and
    /// its group names).
    pub const LABELS: usize = 1_000;
    /// Bytes of a note, an error message or a table cell.
    pub const TEXT: usize = 64 << 10;
    /// Notes, tables and parameters of one scenario; rows and columns of one table.
    pub const ITEMS: usize = 10_000;

    // What one run of a scenario may report, each within the above.

    /// Metrics one run of a scenario may report.
    pub const RUN_METRICS: usize = 10_000;
    /// Tables one run of a scenario may report.
    pub const RUN_TABLES: usize = 100;
    /// Rows of one reported table.
    pub const TABLE_ROWS: usize = 10_000;
    /// Columns of one reported table.
    pub const TABLE_COLUMNS: usize = 64;
    /// Notes one run of a scenario may report.
    pub const RUN_NOTES: usize = 1_000;
    /// Bytes of one reported note.
    pub const NOTE_BYTES: usize = 4_096;
    /// Bytes of a reported name, unit, title or table cell.
    pub const TEXT_BYTES: usize = 1_024;
    /// Time series one run of a scenario may report.
    pub const RUN_SERIES: usize = 64;
    /// Points of one reported series.
    pub const SERIES_POINTS: usize = 100_000;
    /// Points of all the series of one run (about 13 MB of JSON).
    pub const RUN_POINTS: usize = 200_000;
    /// Phases one run of a scenario may mark.
    pub const RUN_PHASES: usize = 1_000;
    /// Bytes of the file kept for what is not a scenario's results (the
    /// machine, the target, the run's times and label).
    pub const HEADER_BYTES: u64 = 1 << 20;

    const _: () = assert!(
        RUN_METRICS <= METRICS
            && RUN_TABLES <= ITEMS
            && TABLE_ROWS <= ITEMS
            && TABLE_COLUMNS <= ITEMS
            && RUN_NOTES <= ITEMS
            && NOTE_BYTES <= TEXT
            && TEXT_BYTES <= NAME
            && RUN_SERIES <= ITEMS
            && RUN_PHASES <= ITEMS
            && SERIES_POINTS <= SAMPLES
            && HEADER_BYTES < FILE_BYTES
    );
}

/// `text` cut to at most `max` bytes (at a character boundary), saying
/// where it was cut: for messages quoting what a scenario gave, which the
/// result file holds within [`limits::TEXT`].
pub fn cut_text(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    const MARK: &str = " …(cut)";
    if text.len() <= max {
        return text.into();
    }
    let mut end = max.saturating_sub(MARK.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARK}", &text[..end]).into()
}

/// Bytes `value` takes in a result file, written as plumb writes it
/// (pretty JSON) `depth` levels deep in the document.
pub fn json_bytes<T: Serialize + ?Sized>(value: &T, depth: usize) -> u64 {
    /// Counts what is written: bytes and line breaks.
    #[derive(Default)]
    struct Count {
        bytes: u64,
        lines: u64,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes += buf.len() as u64;
            self.lines += buf.iter().filter(|b| **b == b'\n').count() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count::default();
    // Writing into a counter fails only for a value JSON cannot hold,
    // which no result type is.
    let _ = serde_json::to_writer_pretty(&mut count, value);
    // Every line of a nested value is indented two spaces per level more,
    // and the value is followed by a comma and a line break.
    count
        .bytes
        .saturating_add(
            count
                .lines
                .saturating_add(1)
                .saturating_mul(2 * depth as u64),
        )
        .saturating_add(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bytes_is_what_an_entry_adds_to_the_pretty_document() {
        let m = Metric {
            name: "a.read.iops".into(),
            unit: "iops".into(),
            better: Better::Higher,
            value: 1.5,
            samples: vec![1.5, 2.5],
            marks: BTreeSet::new(),
        };
        let doc = |n: usize| {
            let metrics = vec![serde_json::to_value(&m).unwrap(); n];
            serde_json::to_vec_pretty(&serde_json::json!({ "scenarios": [{ "metrics": metrics }] }))
                .unwrap()
                .len() as u64
        };
        let added = doc(3) - doc(2);
        let counted = json_bytes(&m, 4);
        assert!(
            counted >= added && counted <= added + 4,
            "{counted} for {added}"
        );
    }

    #[test]
    fn cut_text_keeps_short_text_and_cuts_at_a_character() {
        assert_eq!(cut_text("short", 10), "short");
        let long = "é".repeat(100);
        let cut = cut_text(&long, 41);
        assert!(cut.len() <= 41 && cut.ends_with("…(cut)"), "{cut}");
    }
}
