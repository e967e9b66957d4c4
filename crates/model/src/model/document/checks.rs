//! The checks of a document against [`super::limits`], each error naming
//! the place in the document and what is too big.

use super::{limits, RunDocument, ScenarioResult, MAX_SERIES_VALUE};

/// Why a document is refused: where in it, and what is too big.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// A text longer than its limit.
    #[error("{place}: {what} ({len} bytes) exceeds the limit of {limit}")]
    TooLong {
        /// Where in the document.
        place: String,
        /// Which text.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// More items than their limit.
    #[error("{place}: {what} ({count}) exceeds the limit of {limit}")]
    TooMany {
        /// Where in the document.
        place: String,
        /// Which items.
        what: &'static str,
        /// How many there are.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A series' point or a phase's time that is not a finite number
    /// within ±[`MAX_SERIES_VALUE`].
    #[error("{place}: a {what} is not a number within ±{MAX_SERIES_VALUE:e}")]
    OutOfRange {
        /// Where in the document.
        place: String,
        /// `point` or `time`.
        what: &'static str,
    },
}

/// Refuses a text `s` longer than `limit` bytes.
fn check_len(place: &str, what: &'static str, s: &str, limit: usize) -> Result<(), LimitError> {
    if s.len() > limit {
        return Err(LimitError::TooLong {
            place: place.into(),
            what,
            len: s.len(),
            limit,
        });
    }
    Ok(())
}

/// Refuses more than `limit` items.
fn check_count(place: &str, what: &'static str, n: usize, limit: usize) -> Result<(), LimitError> {
    if n > limit {
        return Err(LimitError::TooMany {
            place: place.into(),
            what,
            count: n,
            limit,
        });
    }
    Ok(())
}

/// Refuses a run number (`repeat`) beyond [`limits::REPEAT`].
fn check_repeat(place: &str, what: &'static str, repeat: Option<u32>) -> Result<(), LimitError> {
    let n = repeat.unwrap_or(0);
    check_count(place, what, n as usize, limits::REPEAT as usize)
}

impl RunDocument {
    /// Checks the document against [`limits`]; the error names the place.
    pub fn check_limits(&self) -> Result<(), LimitError> {
        use limits::*;
        for (what, s) in [
            ("schema", &self.schema),
            ("plumb_version", &self.plumb_version),
            ("started", &self.started),
            ("finished", &self.finished),
            ("host.hostname", &self.host.hostname),
            ("host.os", &self.host.os),
            ("host.kernel", &self.host.kernel),
            ("host.arch", &self.host.arch),
            ("host.cpu_model", &self.host.cpu_model),
        ] {
            check_len("document", what, s, NAME)?;
        }
        check_len(
            "document",
            "label",
            self.label.as_deref().unwrap_or(""),
            NAME,
        )?;
        check_count("document", "labels", self.labels.len(), LABELS)?;
        for l in &self.labels {
            check_len("document", "labels[]", l, NAME)?;
        }
        if let Some(t) = &self.target {
            for (what, s) in [
                ("target.path", &t.path),
                ("target.fs_type", &t.fs_type),
                ("target.mount_point", &t.mount_point),
                ("target.source", &t.source),
            ] {
                check_len("document", what, s, NAME)?;
            }
            for (what, s) in [
                ("target.device", &t.device),
                ("target.model", &t.model),
                ("target.scheduler", &t.scheduler),
            ] {
                check_len("document", what, s.as_deref().unwrap_or(""), NAME)?;
            }
        }
        check_count("document", "scenarios", self.scenarios.len(), SCENARIOS)?;
        let mut metrics = 0usize;
        let mut jobs = 0usize;
        for (i, s) in self.scenarios.iter().enumerate() {
            s.check_limits(&format!("scenarios[{i}]"))?;
            metrics = metrics.saturating_add(s.metrics.len());
            jobs = jobs.saturating_add(s.jobs.len());
        }
        check_count("document", "metrics", metrics, METRICS)?;
        check_count("document", "jobs", jobs, JOBS)
    }
}

impl ScenarioResult {
    /// Checks one scenario against [`limits`]; `place` names it in errors.
    pub fn check_limits(&self, place: &str) -> Result<(), LimitError> {
        use limits::*;
        check_len(place, "name", &self.name, NAME)?;
        for (what, s) in [
            ("pack", &self.pack),
            ("pack_sha256", &self.pack_sha256),
            ("pack_version", &self.pack_version),
            ("pack_origin", &self.pack_origin),
            ("pack_signer", &self.pack_signer),
            ("source_sha256", &self.source_sha256),
        ] {
            check_len(place, what, s.as_deref().unwrap_or(""), NAME)?;
        }
        check_len(place, "error", self.error.as_deref().unwrap_or(""), TEXT)?;
        check_len(
            place,
            "error_kind",
            self.error_kind.as_deref().unwrap_or(""),
            NAME,
        )?;
        check_repeat(place, "repeat", Some(self.repeat))?;
        check_count(place, "params", self.params.len(), ITEMS)?;
        for (k, v) in &self.params {
            check_len(place, "a parameter name", k, NAME)?;
            check_len(place, "a parameter value", v, NAME)?;
        }
        let read = self.params_read.iter().flatten();
        check_count(place, "params_read", read.clone().count(), ITEMS)?;
        for k in read {
            check_len(place, "a parameter name", k, NAME)?;
        }
        check_count(place, "metrics", self.metrics.len(), METRICS)?;
        for (i, m) in self.metrics.iter().enumerate() {
            let at = format!("{place}.metrics[{i}]");
            check_len(&at, "name", &m.name, NAME)?;
            check_len(&at, "unit", &m.unit, NAME)?;
            check_count(&at, "samples", m.samples.len(), SAMPLES)?;
        }
        check_count(place, "notes", self.notes.len(), ITEMS)?;
        for n in &self.notes {
            check_len(place, "a note", n, TEXT)?;
        }
        check_count(place, "tables", self.tables.len(), ITEMS)?;
        for (i, t) in self.tables.iter().enumerate() {
            let at = format!("{place}.tables[{i}]");
            check_len(&at, "title", &t.title, TEXT)?;
            check_count(&at, "columns", t.header.len(), ITEMS)?;
            check_count(&at, "rows", t.rows.len(), ITEMS)?;
            for cell in t.header.iter().chain(t.rows.iter().flatten()) {
                check_len(&at, "a cell", cell, TEXT)?;
            }
        }
        check_count(place, "series", self.series.len(), ITEMS)?;
        for (i, x) in self.series.iter().enumerate() {
            let at = format!("{place}.series[{i}]");
            check_len(&at, "name", &x.name, NAME)?;
            check_len(&at, "unit", &x.unit, NAME)?;
            check_count(&at, "points", x.points.len(), SAMPLES)?;
            check_repeat(&at, "repeat", x.repeat)?;
            if x.points
                .iter()
                .flatten()
                .any(|v| !v.is_finite() || v.abs() > MAX_SERIES_VALUE)
            {
                return Err(LimitError::OutOfRange {
                    place: at,
                    what: "point",
                });
            }
        }
        check_count(place, "phases", self.phases.len(), ITEMS)?;
        for (i, p) in self.phases.iter().enumerate() {
            let at = format!("{place}.phases[{i}]");
            check_len(&at, "name", &p.name, NAME)?;
            check_repeat(&at, "repeat", p.repeat)?;
            if [Some(p.started_s), p.ended_s]
                .into_iter()
                .flatten()
                .any(|v| !v.is_finite() || v.abs() > MAX_SERIES_VALUE)
            {
                return Err(LimitError::OutOfRange {
                    place: at,
                    what: "time",
                });
            }
        }
        check_count(place, "jobs", self.jobs.len(), JOBS)?;
        for (i, j) in self.jobs.iter().enumerate() {
            let at = format!("{place}.jobs[{i}]");
            check_len(&at, "name", &j.name, NAME)?;
            check_len(&at, "case", j.case.as_deref().unwrap_or(""), NAME)?;
            check_repeat(&at, "repeat", j.repeat)?;
            check_len(&at, "error", j.error.as_deref().unwrap_or(""), TEXT)?;
            check_count(&at, "timeline", j.timeline.len(), SAMPLES)?;
            check_count(&at, "options", j.options.len(), ITEMS)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_number_past_the_limit_is_refused_where_it_is() {
        let mut s: ScenarioResult = serde_json::from_value(serde_json::json!({
            "name": "s", "pack": null, "source_sha256": null, "params": {}, "repeat": limits::REPEAT,
            "metrics": [], "jobs": [], "tables": [], "error": null,
            "phases": [{"name": "p", "started_s": 0.0, "repeat": limits::REPEAT}]
        }))
        .unwrap();
        assert_eq!(s.check_limits("scenarios[0]"), Ok(()));
        s.phases[0].repeat = Some(limits::REPEAT + 1);
        let e = s.check_limits("scenarios[0]").unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "scenarios[0].phases[0]: repeat ({}) exceeds the limit of {}",
                limits::REPEAT + 1,
                limits::REPEAT
            )
        );
        s.repeat = u32::MAX;
        let e = s.check_limits("scenarios[0]").unwrap_err().to_string();
        assert!(e.starts_with("scenarios[0]: repeat (4294967295)"), "{e}");
    }
}
