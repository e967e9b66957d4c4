//! What a scenario reports: metrics, tables, notes, and the jobs it ran.
//!
//! Every call is held to the result document's [`limits`], the ones its
//! readers apply: what one run may report, and what the whole document may
//! hold beside the other scenarios ([`DocumentRoom`]). A call that would
//! make the document one no reader accepts is refused there, with an error
//! naming the limit.

use super::{ApiError, Host};
use crate::metrics::board::{check_script_series, MetricsError, MAX_SCRIPT_SERIES};
use crate::metrics::ScriptKind;
use crate::model::document::{
    json_bytes, limits, Better, Mark, Metric, Phase, ScenarioResult, Series, Table,
};
use crate::model::result::JobResult;
use std::collections::{BTreeSet, HashMap};

/// Most metrics one scenario run may report.
pub const MAX_METRICS: usize = limits::RUN_METRICS;
/// Most tables one scenario run may report.
pub const MAX_TABLES: usize = limits::RUN_TABLES;
/// Most rows in one table.
pub const MAX_ROWS: usize = limits::TABLE_ROWS;
/// Most columns in one table.
pub const MAX_COLUMNS: usize = limits::TABLE_COLUMNS;
/// Most notes one scenario run may report.
pub const MAX_NOTES: usize = limits::RUN_NOTES;
/// Longest note, in bytes.
pub const MAX_NOTE_LEN: usize = limits::NOTE_BYTES;
/// Longest name, unit, title or table cell, in bytes.
pub const MAX_TEXT_LEN: usize = limits::TEXT_BYTES;
/// Most time series one scenario run may report.
pub const MAX_SERIES: usize = limits::RUN_SERIES;
pub use crate::model::document::MAX_SERIES_VALUE;
/// Most points in one series.
pub const MAX_POINTS: usize = limits::SERIES_POINTS;
/// Most points in all the series of one scenario run (about 13 MB of the
/// result document's JSON).
pub const MAX_TOTAL_POINTS: usize = limits::RUN_POINTS;
/// Most phases one scenario run may mark.
pub const MAX_PHASES: usize = limits::RUN_PHASES;

/// Depth of a scenario's entries (a metric, a table, a job) in the result
/// document: `{"scenarios": [{"metrics": [ ... ]}]}`.
const ENTRY_DEPTH: usize = 4;

/// Refuses `text` longer than `max` bytes, naming the call and the field.
fn bounded(call: &str, field: &str, text: &str, max: usize) -> Result<(), ApiError> {
    if text.len() > max {
        return Err(ApiError::Invalid(format!(
            "{call}: the {field} is {} bytes long, more than the {max} allowed",
            text.len()
        )));
    }
    Ok(())
}

/// Refuses one more entry when `have` already reached `max`.
fn room(call: &str, what: &str, have: usize, max: usize) -> Result<(), ApiError> {
    if have >= max {
        return Err(ApiError::Invalid(format!(
            "{call}: a scenario may report at most {max} {what}"
        )));
    }
    Ok(())
}

/// What the result document already holds beside one run of a scenario:
/// the other scenarios' results and this scenario's own from its earlier
/// runs (`--repeat`), counted against the document's [`limits`].
#[derive(Debug, Clone, Default)]
pub struct DocumentRoom {
    /// Metrics in the document.
    metrics: usize,
    /// Jobs in the document.
    jobs: usize,
    /// Bytes of the document's JSON (with [`limits::HEADER_BYTES`] kept
    /// for the rest).
    bytes: u64,
    /// This scenario's metrics so far, by name, with their samples: a name
    /// reported again adds a sample, not a metric.
    earlier: HashMap<String, usize>,
    /// This scenario's tables, notes, series and phases so far.
    tables: usize,
    notes: usize,
    series: usize,
    phases: usize,
}

impl DocumentRoom {
    /// The room beside `done` (the scenarios the document holds) and
    /// `entry` (this scenario's results from its earlier runs).
    pub fn beside(done: &[ScenarioResult], entry: &ScenarioResult) -> DocumentRoom {
        let all = || done.iter().chain(std::iter::once(entry));
        DocumentRoom {
            metrics: all().map(|s| s.metrics.len()).sum(),
            jobs: all().map(|s| s.jobs.len()).sum(),
            bytes: all().fold(limits::HEADER_BYTES, |b, s| {
                b.saturating_add(json_bytes(s, 2))
            }),
            earlier: entry
                .metrics
                .iter()
                .map(|m| (m.name.clone(), m.samples.len()))
                .collect(),
            tables: entry.tables.len(),
            notes: entry.notes.len(),
            series: entry.series.len(),
            phases: entry.phases.len(),
        }
    }
}

/// What this run added to the document so far, beyond its [`DocumentRoom`].
#[derive(Debug, Clone, Default)]
struct Added {
    /// Metrics under names the scenario had not reported before.
    metrics: usize,
    /// Bytes of JSON.
    bytes: u64,
}

/// Everything reported by one run of a scenario.
#[derive(Debug, Clone, Default)]
pub struct ScenarioReport {
    /// Metrics in the order reported.
    pub metrics: Vec<Metric>,
    /// Tables, in the order reported.
    pub tables: Vec<Table>,
    /// Free-form notes.
    pub notes: Vec<String>,
    /// Time series, for charts.
    pub series: Vec<Series>,
    /// Phases marked (`report::phase`), the last one open.
    pub phases: Vec<Phase>,
    /// Results of `io::job` calls.
    pub jobs: Vec<JobResult>,
    /// The run's parameters the scenario asked for (`param`): only these
    /// can make two runs' figures differ, so only these make a comparison
    /// refuse them.
    pub params_read: std::collections::BTreeSet<String>,
    /// The document beside this run.
    room: DocumentRoom,
    /// What this run added.
    added: Added,
    /// What the host has noted once already ([`Host::note_once`]).
    noted: std::collections::HashSet<String>,
    /// A job result refused where no error could be returned (a background
    /// job's, recorded as its task is collected), for the collector to take.
    refusal: Option<String>,
    /// The scenario's own series so far (`report::counter`,
    /// `report::gauge`), their kinds and a counter's sum: the rules (one
    /// kind per name, 256 names, a counter kept finite) hold with or
    /// without an endpoint.
    script_series: HashMap<String, (ScriptKind, f64)>,
}

impl ScenarioReport {
    /// Takes `bytes` more of the result file for `call`, or refuses them.
    fn take_bytes(&mut self, call: &str, bytes: u64) -> Result<(), ApiError> {
        let held = self.room.bytes.saturating_add(self.added.bytes);
        let total = held.saturating_add(bytes);
        if total > limits::FILE_BYTES {
            return Err(ApiError::Invalid(format!(
                "{call}: {} more bytes of results would make the result file {}, past its limit of {} (rule: result file limits)",
                bytes,
                crate::units::format_bytes_binary(total as f64),
                crate::units::format_bytes_binary(limits::FILE_BYTES as f64)
            )));
        }
        self.added.bytes = total.saturating_sub(self.room.bytes);
        Ok(())
    }

    /// Refuses one more of what the document counts when `held` already
    /// reached `max`, naming the call and the limit.
    fn document_room(call: &str, what: &str, held: usize, max: usize) -> Result<(), ApiError> {
        if held >= max {
            return Err(ApiError::Invalid(format!(
                "{call}: the result document already holds {held} {what}, its limit (rule: result file limits)"
            )));
        }
        Ok(())
    }

    /// Records a job's result, if the document has room for it.
    pub(crate) fn job(&mut self, call: &str, result: JobResult) -> Result<(), ApiError> {
        let held = self.room.jobs.saturating_add(self.jobs.len());
        Self::document_room(call, "jobs", held, limits::JOBS)?;
        bounded(call, "job name", &result.name, limits::NAME)?;
        let mut result = result;
        result.case = result
            .started_s
            .and_then(|t| self.phase_at(t))
            .map(|p| p.name.clone());
        self.take_bytes(call, json_bytes(&result, ENTRY_DEPTH))?;
        self.jobs.push(result);
        Ok(())
    }

    /// [`ScenarioReport::job`] for a caller that cannot return its error:
    /// the refusal is kept for [`ScenarioReport::take_refusal`].
    pub(crate) fn job_or_keep_refusal(&mut self, call: &str, result: JobResult) {
        if let Err(e) = self.job(call, result) {
            self.refusal = Some(e.to_string());
        }
    }

    /// The phase under way at `t` on the scenario's clock: the last one
    /// begun at or before it (a job is labelled with the case it started in).
    fn phase_at(&self, t: f64) -> Option<&Phase> {
        self.phases
            .iter()
            .rev()
            .find(|p| p.started_s <= t && p.ended_s.is_none_or(|end| t < end))
    }

    /// The refusal [`ScenarioReport::job_or_keep_refusal`] kept, once.
    pub(crate) fn take_refusal(&mut self) -> Option<String> {
        self.refusal.take()
    }
}

impl Host {
    /// Records a metric: a name, a finite value, its unit, which way is
    /// better (bounded in length and count), and the marks of the
    /// measurement it came from (a loopback peer, a cached read).
    pub fn metric(
        &mut self,
        name: &str,
        value: f64,
        unit: &str,
        better: Better,
        marks: BTreeSet<Mark>,
    ) -> Result<(), ApiError> {
        bounded("report::metric", "name", name, MAX_TEXT_LEN)?;
        bounded("report::metric", "unit", unit, MAX_TEXT_LEN)?;
        room(
            "report::metric",
            "metrics",
            self.report.metrics.len(),
            MAX_METRICS,
        )?;
        if name.is_empty() || !value.is_finite() {
            return Err(ApiError::Invalid(format!(
                "report::metric: '{name}' = {value} needs a name and a finite value"
            )));
        }
        let metric = Metric {
            name: name.into(),
            unit: unit.into(),
            better,
            value,
            samples: vec![value],
            marks,
        };
        let r = &mut self.report;
        let call = "report::metric";
        match r.room.earlier.get(name) {
            // Another sample of a metric of an earlier run.
            Some(samples) => {
                ScenarioReport::document_room(
                    call,
                    "samples of one metric",
                    *samples,
                    limits::SAMPLES,
                )?;
                r.take_bytes(call, json_bytes(&value, ENTRY_DEPTH + 2))?;
            }
            None => {
                let held = r.room.metrics.saturating_add(r.added.metrics);
                ScenarioReport::document_room(call, "metrics", held, limits::METRICS)?;
                r.take_bytes(call, json_bytes(&metric, ENTRY_DEPTH))?;
                r.added.metrics += 1;
            }
        }
        r.metrics.push(metric);
        Ok(())
    }

    /// Records a table; every row must have as many cells as the header.
    pub fn table(
        &mut self,
        title: &str,
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    ) -> Result<(), ApiError> {
        let call = "report::table";
        bounded(call, "title", title, MAX_TEXT_LEN)?;
        room(call, "tables", self.report.tables.len(), MAX_TABLES)?;
        if header.len() > MAX_COLUMNS || rows.len() > MAX_ROWS {
            return Err(ApiError::Invalid(format!(
                "{call} '{title}': {} columns and {} rows, more than the {MAX_COLUMNS} columns or {MAX_ROWS} rows allowed",
                header.len(),
                rows.len()
            )));
        }
        for cell in header.iter().chain(rows.iter().flatten()) {
            bounded(call, "cell", cell, MAX_TEXT_LEN)?;
        }
        if let Some(bad) = rows.iter().position(|r| r.len() != header.len()) {
            return Err(ApiError::Invalid(format!(
                "report::table '{title}': row {bad} has {} cells, the header has {}",
                rows[bad].len(),
                header.len()
            )));
        }
        let r = &mut self.report;
        let held = r.room.tables.saturating_add(r.tables.len());
        ScenarioReport::document_room(call, "tables for this scenario", held, limits::ITEMS)?;
        let table = Table {
            title: title.into(),
            header,
            rows,
        };
        r.take_bytes(call, json_bytes(&table, ENTRY_DEPTH))?;
        r.tables.push(table);
        Ok(())
    }

    /// Fails when a series of `len` points is longer than one may be
    /// (adapters check it before converting a script's points).
    pub fn series_length(name: &str, len: usize) -> Result<(), ApiError> {
        if len > MAX_POINTS {
            return Err(ApiError::Invalid(format!(
                "report::series '{name}': {len} points, more than the {MAX_POINTS} allowed"
            )));
        }
        Ok(())
    }

    /// Records a time series of `(x, y)` points (x in seconds): a name, a
    /// unit, finite values, at most [`MAX_POINTS`] points, [`MAX_SERIES`]
    /// series and [`MAX_TOTAL_POINTS`] points in all.
    pub fn series(
        &mut self,
        name: &str,
        unit: &str,
        points: Vec<(f64, f64)>,
    ) -> Result<(), ApiError> {
        let call = "report::series";
        bounded(call, "name", name, MAX_TEXT_LEN)?;
        bounded(call, "unit", unit, MAX_TEXT_LEN)?;
        room(call, "series", self.report.series.len(), MAX_SERIES)?;
        if name.is_empty() {
            return Err(ApiError::Invalid(format!("{call}: a series needs a name")));
        }
        Host::series_length(name, points.len())?;
        let held: usize = self.report.series.iter().map(|x| x.points.len()).sum();
        if held + points.len() > MAX_TOTAL_POINTS {
            return Err(ApiError::Invalid(format!(
                "{call} '{name}': {} more points beside the {held} reported, more than the {MAX_TOTAL_POINTS} a scenario may report",
                points.len()
            )));
        }
        let drawable = |v: f64| v.is_finite() && v.abs() <= MAX_SERIES_VALUE;
        if let Some(i) = points
            .iter()
            .position(|(x, y)| !drawable(*x) || !drawable(*y))
        {
            return Err(ApiError::Invalid(format!(
                "{call} '{name}': point {i} ({:?}) is not a pair of numbers within ±{MAX_SERIES_VALUE:e}",
                points[i]
            )));
        }
        let r = &mut self.report;
        let held = r.room.series.saturating_add(r.series.len());
        ScenarioReport::document_room(call, "series for this scenario", held, limits::ITEMS)?;
        let series = Series {
            name: name.into(),
            unit: unit.into(),
            points: points.into_iter().map(|(x, y)| [x, y]).collect(),
            repeat: None,
        };
        r.take_bytes(call, json_bytes(&series, ENTRY_DEPTH))?;
        r.series.push(series);
        Ok(())
    }

    /// Begins a phase named `name` now on the scenario's clock, ending the
    /// one under way: a case of a multi-case scenario, drawn as a labelled
    /// band on its charts; jobs started from now on carry its name as their
    /// `case` (at most [`MAX_PHASES`] phases, names of [`MAX_TEXT_LEN`] bytes).
    pub fn phase(&mut self, name: &str) -> Result<(), ApiError> {
        let call = "report::phase";
        bounded(call, "name", name, MAX_TEXT_LEN)?;
        if name.is_empty() {
            return Err(ApiError::Invalid(format!("{call}: a phase needs a name")));
        }
        room(call, "phases", self.report.phases.len(), MAX_PHASES)?;
        let held = self
            .report
            .room
            .phases
            .saturating_add(self.report.phases.len());
        ScenarioReport::document_room(call, "phases for this scenario", held, limits::ITEMS)?;
        let now = self.clock().at(std::time::Instant::now());
        let phase = Phase {
            name: name.into(),
            started_s: now,
            ended_s: None,
            repeat: None,
        };
        let r = &mut self.report;
        // The phase's end adds a number to the one before.
        r.take_bytes(call, json_bytes(&phase, ENTRY_DEPTH).saturating_add(32))?;
        if let Some(last) = r.phases.last_mut() {
            last.ended_s = Some(now);
        }
        r.phases.push(phase);
        Ok(())
    }

    /// Adds `amount` (finite, at least 0) to the scenario's own counter
    /// `name`, which `/metrics` shows as `plumb_script_NAME_total` while
    /// the run lasts (`--metrics-listen`); without an endpoint the call is
    /// checked the same and has no effect. Names: lowercase letters,
    /// digits and `_`, starting with a letter, at most 64 bytes, not ending
    /// with `_total` or another OpenMetrics suffix; a scenario may have 256;
    /// an amount that would take the counter past the largest finite value
    /// is refused. The endpoint keeps at most 256 for the whole run: past them it drops
    /// series and counts them, and the scenario goes on as without it.
    pub fn counter(&mut self, name: &str, amount: f64) -> Result<(), ApiError> {
        self.script_series("report::counter", name, amount, ScriptKind::Counter)
    }

    /// Sets the scenario's own gauge `name` to `value` (finite), shown as
    /// `plumb_script_NAME`; the rules of [`Host::counter`] otherwise.
    pub fn gauge(&mut self, name: &str, value: f64) -> Result<(), ApiError> {
        self.script_series("report::gauge", name, value, ScriptKind::Gauge)
    }

    fn script_series(
        &mut self,
        call: &str,
        name: &str,
        value: f64,
        kind: ScriptKind,
    ) -> Result<(), ApiError> {
        let refused = |e: MetricsError| ApiError::Invalid(format!("{call}: {e}"));
        check_script_series(name, value, kind).map_err(refused)?;
        let known = &mut self.report.script_series;
        let full = known.len() >= MAX_SCRIPT_SERIES;
        match known.get_mut(name) {
            Some((was, _)) if *was != kind => {
                return Err(refused(MetricsError::KindClash {
                    name: name.to_string(),
                    was: was.name(),
                }))
            }
            Some((_, sum)) if kind == ScriptKind::Counter => {
                if !(*sum + value).is_finite() {
                    return Err(refused(MetricsError::Value {
                        name: name.to_string(),
                        value,
                        want: "an amount that keeps the counter finite",
                    }));
                }
                *sum += value;
            }
            Some(_) => {}
            None if full => return Err(refused(MetricsError::TooMany)),
            None => {
                known.insert(name.to_string(), (kind, value));
            }
        }
        match &self.metrics {
            Some(scope) => scope.script(name, value, kind).map_err(refused),
            None => Ok(()),
        }
    }

    /// Records a note (at most [`MAX_NOTES`] of [`MAX_NOTE_LEN`] bytes).
    pub fn note(&mut self, text: &str) -> Result<(), ApiError> {
        let call = "report::note";
        bounded(call, "note", text, MAX_NOTE_LEN)?;
        room(call, "notes", self.report.notes.len(), MAX_NOTES)?;
        let r = &mut self.report;
        let held = r.room.notes.saturating_add(r.notes.len());
        ScenarioReport::document_room(call, "notes for this scenario", held, limits::ITEMS)?;
        r.take_bytes(call, json_bytes(text, ENTRY_DEPTH))?;
        r.notes.push(text.to_string());
        Ok(())
    }

    /// Records a note the host writes about a measurement, once per `key`
    /// in this run of the scenario (a note per file read from the cache
    /// would bury the table).
    pub(crate) fn note_once(&mut self, key: &str, text: &str) -> Result<(), ApiError> {
        if !self.report.noted.insert(key.to_string()) {
            return Ok(());
        }
        self.note(text)
    }

    /// Runs this scenario beside what the result document already holds
    /// (`room`): its calls are refused where the document would pass its
    /// limits.
    pub fn within(mut self, room: DocumentRoom) -> Host {
        self.report.room = room;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(name: &str, metrics: &[&str]) -> ScenarioResult {
        let doc: ScenarioResult = serde_json::from_value(serde_json::json!({
            "name": name, "pack": null, "source_sha256": null, "params": {}, "repeat": 1,
            "metrics": [], "jobs": [], "tables": [], "error": null
        }))
        .unwrap();
        ScenarioResult {
            metrics: metrics
                .iter()
                .map(|n| Metric {
                    name: n.to_string(),
                    unit: "u".into(),
                    better: Better::Higher,
                    value: 1.0,
                    samples: vec![1.0],
                    marks: Default::default(),
                })
                .collect(),
            ..doc
        }
    }

    #[test]
    fn the_room_counts_the_other_scenarios_and_this_ones_earlier_runs() {
        let done = [scenario("a", &["x", "y"]), scenario("b", &["x"])];
        let room = DocumentRoom::beside(&done, &scenario("c", &["z"]));
        assert_eq!(room.metrics, 4);
        assert_eq!(room.earlier.get("z"), Some(&1));
        assert!(!room.earlier.contains_key("x"));
        assert!(room.bytes > limits::HEADER_BYTES);
    }

    #[test]
    fn bytes_past_the_result_file_limit_are_refused() {
        let mut r = ScenarioReport {
            room: DocumentRoom {
                bytes: limits::FILE_BYTES - 10,
                ..DocumentRoom::default()
            },
            ..ScenarioReport::default()
        };
        assert!(r.take_bytes("report::note", 6).is_ok());
        let e = r.take_bytes("report::note", 6).unwrap_err().to_string();
        assert!(e.contains("past its limit of 128MiB"), "{e}");
        assert_eq!(r.added.bytes, 6);
    }

    #[test]
    fn a_job_past_the_documents_jobs_is_refused_and_kept_for_a_background_collector() {
        let mut r = ScenarioReport {
            room: DocumentRoom {
                jobs: limits::JOBS,
                ..DocumentRoom::default()
            },
            ..ScenarioReport::default()
        };
        r.job_or_keep_refusal("io::start", JobResult::default());
        let e = r.take_refusal().unwrap();
        assert!(e.contains("already holds 10000 jobs"), "{e}");
        assert!(r.take_refusal().is_none() && r.jobs.is_empty());
    }
}
