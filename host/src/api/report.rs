//! What a scenario reports: metrics, tables, notes, and the jobs it ran.

use super::{ApiError, Host};
use crate::model::document::{Better, Metric, Series, Table};
use crate::model::result::JobResult;

/// Most metrics one scenario run may report.
pub const MAX_METRICS: usize = 10_000;
/// Most tables one scenario run may report.
pub const MAX_TABLES: usize = 100;
/// Most rows in one table.
pub const MAX_ROWS: usize = 10_000;
/// Most columns in one table.
pub const MAX_COLUMNS: usize = 64;
/// Most notes one scenario run may report.
pub const MAX_NOTES: usize = 1_000;
/// Longest note, in bytes.
pub const MAX_NOTE_LEN: usize = 4_096;
/// Longest name, unit, title or table cell, in bytes.
pub const MAX_TEXT_LEN: usize = 1_024;
/// Most time series one scenario run may report.
pub const MAX_SERIES: usize = 64;
pub use crate::model::document::MAX_SERIES_VALUE;
/// Most points in one series.
pub const MAX_POINTS: usize = 100_000;
/// Most points in all the series of one scenario run (about 13 MB of the
/// result document's JSON).
pub const MAX_TOTAL_POINTS: usize = 200_000;

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
    /// Results of `io::job` calls.
    pub jobs: Vec<JobResult>,
}

impl Host {
    /// Records a metric: a name, a finite value, its unit and which way is
    /// better (bounded in length and count).
    pub fn metric(
        &mut self,
        name: &str,
        value: f64,
        unit: &str,
        better: Better,
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
        self.report.metrics.push(Metric {
            name: name.into(),
            unit: unit.into(),
            better,
            value,
            samples: vec![value],
        });
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
        self.report.tables.push(Table {
            title: title.into(),
            header,
            rows,
        });
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
        self.report.series.push(Series {
            name: name.into(),
            unit: unit.into(),
            points: points.into_iter().map(|(x, y)| [x, y]).collect(),
        });
        Ok(())
    }

    /// Records a note (at most [`MAX_NOTES`] of [`MAX_NOTE_LEN`] bytes).
    pub fn note(&mut self, text: &str) -> Result<(), ApiError> {
        bounded("report::note", "note", text, MAX_NOTE_LEN)?;
        room("report::note", "notes", self.report.notes.len(), MAX_NOTES)?;
        self.report.notes.push(text.to_string());
        Ok(())
    }
}
