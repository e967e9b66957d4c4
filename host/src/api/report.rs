//! What a scenario reports: metrics, tables, notes, and the jobs it ran.

use super::{ApiError, Host};
use crate::document::{Better, Metric, Table};
use crate::result::JobResult;

/// Everything reported by one run of a scenario.
#[derive(Debug, Clone, Default)]
pub struct ScenarioReport {
    /// Metrics in the order reported.
    pub metrics: Vec<Metric>,
    /// Tables.
    pub tables: Vec<Table>,
    /// Free-form notes.
    pub notes: Vec<String>,
    /// Results of `io::job` calls.
    pub jobs: Vec<JobResult>,
}

impl Host {
    /// Records a metric; `better` is "higher" or "lower".
    pub fn metric(
        &mut self,
        name: &str,
        value: f64,
        unit: &str,
        better: &str,
    ) -> Result<(), ApiError> {
        let better = match better {
            "higher" => Better::Higher,
            "lower" => Better::Lower,
            other => {
                return Err(ApiError::Invalid(format!(
                    "report::metric: better must be \"higher\" or \"lower\", not \"{other}\""
                )))
            }
        };
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

    /// Records a note.
    pub fn note(&mut self, text: &str) {
        self.report.notes.push(text.to_string());
    }
}
