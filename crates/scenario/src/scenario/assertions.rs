//! `--assert 'METRIC OP VALUE'`: thresholds that turn a run into a pass/fail check.

use crate::model::document::RunDocument;
use crate::terminal::clean;
use crate::units::{parse_duration_with_default, parse_size};

/// An `--assert` expression (or a pack's `assert`) that does not parse,
/// quoting it (made safe to print).
#[derive(Debug, thiserror::Error)]
pub enum AssertionError {
    /// Not `METRIC OP VALUE`.
    #[error("--assert '{}': expected METRIC >= VALUE (or >, <=, <), e.g. 'randrw.read_iops >= 50k'", clean(.0))]
    Usage(String),
    /// The value is no threshold for any unit.
    #[error("--assert '{}': '{}' is not a finite number, count (50k), duration (2ms) or size (1G)", clean(.text), clean(.value))]
    NotAThreshold {
        /// The expression.
        text: String,
        /// Its value.
        value: String,
    },
}

/// A threshold that cannot be read in a metric's unit.
#[derive(Debug, thiserror::Error)]
enum ThresholdError {
    /// Not a number, or a count, for the metric's unit.
    #[error("threshold '{0}' is not a number for unit '{1}'")]
    NotANumber(String, String),
    /// Infinite or NaN (`inf`, `1e400`).
    #[error("threshold '{0}' is not a finite number")]
    NotFinite(String),
    /// Not a duration or a size.
    #[error("threshold {0}")]
    Unit(crate::units::UnitError),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>=`
    Ge,
    /// `>`
    Gt,
    /// `<=`
    Le,
    /// `<`
    Lt,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Ge => a >= b,
            Op::Gt => a > b,
            Op::Le => a <= b,
            Op::Lt => a < b,
        }
    }
}

/// One parsed assertion.
#[derive(Debug, Clone, PartialEq)]
pub struct Assertion {
    /// As written.
    pub text: String,
    /// Metric name: `metric`, `scenario.metric` or `pack/scenario.metric`.
    pub metric: String,
    /// The operator.
    pub op: Op,
    /// The threshold as written (`50000`, `50k`, `2ms`, `1G`).
    pub value: String,
}

/// Parses `randread.iops >= 50000` or `p99 <= 2ms`. The metric is one
/// word without comparison characters; the value must be a finite number,
/// count (`50k`), duration (`2ms`) or size (`1G`). Errors quote the
/// expression (made safe to print).
pub fn parse(text: &str) -> Result<Assertion, AssertionError> {
    let usage = || AssertionError::Usage(text.to_string());
    let (sym, op) = [(">=", Op::Ge), ("<=", Op::Le), (">", Op::Gt), ("<", Op::Lt)]
        .into_iter()
        .find(|(sym, _)| text.contains(sym))
        .ok_or_else(usage)?;
    let (m, v) = text.split_once(sym).ok_or_else(usage)?;
    let (metric, value) = (m.trim(), v.trim());
    let odd = |s: &str| {
        s.is_empty()
            || s.chars()
                .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | '=' | '!'))
    };
    if odd(metric) || odd(value) {
        return Err(usage());
    }
    if !plausible_threshold(value) {
        return Err(AssertionError::NotAThreshold {
            text: text.to_string(),
            value: value.to_string(),
        });
    }
    Ok(Assertion {
        text: text.to_string(),
        metric: metric.to_string(),
        op,
        value: value.to_string(),
    })
}

/// Whether `value` is a threshold for some unit (the metric's unit is only
/// known when the run has finished): a finite number or count, a duration
/// or a size.
fn plausible_threshold(value: &str) -> bool {
    ["", "ns", "s", "B/s", "IOPS"]
        .iter()
        .any(|unit| threshold(value, unit).is_ok())
}

/// The threshold in the metric's unit; always finite.
fn threshold(value: &str, unit: &str) -> Result<f64, ThresholdError> {
    let v = threshold_any(value, unit)?;
    if !v.is_finite() {
        return Err(ThresholdError::NotFinite(value.to_string()));
    }
    Ok(v)
}

fn threshold_any(value: &str, unit: &str) -> Result<f64, ThresholdError> {
    if let Ok(v) = value.parse::<f64>() {
        return Ok(v);
    }
    let time_unit_ns = match unit {
        "ns" => Some(1.0),
        "us" | "µs" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    };
    if let Some(ns) = time_unit_ns {
        let d = parse_duration_with_default(value, 1).map_err(ThresholdError::Unit)?;
        return Ok(d.as_nanos() as f64 / ns);
    }
    let byte_unit = match unit {
        "bytes" | "B" | "bytes/s" | "B/s" => Some(1.0),
        "KiB/s" => Some(1024.0),
        "MiB/s" => Some(1048576.0),
        "GiB/s" => Some(1073741824.0),
        _ => None,
    };
    if let Some(b) = byte_unit {
        let bytes = parse_size(value.trim_end_matches("/s")).map_err(ThresholdError::Unit)?;
        return Ok(bytes as f64 / b);
    }
    // Counts (IOPS, ops/s): k, M, G as powers of 1000.
    let (num, mult) = if let Some(n) = value.strip_suffix(['k', 'K']) {
        (n, 1e3)
    } else if let Some(n) = value.strip_suffix('M') {
        (n, 1e6)
    } else if let Some(n) = value.strip_suffix('G') {
        (n, 1e9)
    } else {
        (value, 1.0)
    };
    num.parse::<f64>()
        .map(|v| v * mult)
        .map_err(|_| ThresholdError::NotANumber(value.to_string(), unit.to_string()))
}

/// Checks an assertion against a run; every matching metric must pass.
/// Returns the failures (empty when it holds).
pub fn check(doc: &RunDocument, a: &Assertion) -> Vec<String> {
    let mut failures = Vec::new();
    let mut matched = 0;
    for s in &doc.scenarios {
        let scenario = s.name.as_str();
        let full = match &s.pack {
            Some(p) => format!("{p}/{scenario}"),
            None => scenario.to_string(),
        };
        for m in &s.metrics {
            let names = [
                m.name.clone(),
                format!("{scenario}.{}", m.name),
                format!("{full}.{}", m.name),
            ];
            if !names.contains(&a.metric) {
                continue;
            }
            matched += 1;
            match threshold(&a.value, &m.unit) {
                Ok(t) if a.op.holds(m.value, t) => {}
                Ok(t) => failures.push(format!(
                    "{}: {full}.{} = {} {} (threshold {t} {})",
                    a.text, m.name, m.value, m.unit, m.unit
                )),
                Err(e) => failures.push(format!("{}: {e}", a.text)),
            }
        }
    }
    if matched == 0 {
        failures.push(format!(
            "{}: no metric named '{}' in this run",
            a.text, a.metric
        ));
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_convert_to_the_metric_unit() {
        assert_eq!(threshold("2ms", "us").unwrap(), 2000.0);
        assert_eq!(threshold("500us", "ns").unwrap(), 500_000.0);
        assert_eq!(threshold("50k", "IOPS").unwrap(), 50_000.0);
        assert_eq!(threshold("1G", "MiB/s").unwrap(), 1024.0);
        assert_eq!(threshold("12.5", "MiB/s").unwrap(), 12.5);
        assert!(threshold("fast", "IOPS").is_err());
    }

    #[test]
    fn parse_operators() {
        let a = parse("randrw.read_iops >= 50k").unwrap();
        assert_eq!(
            (a.metric.as_str(), a.op, a.value.as_str()),
            ("randrw.read_iops", Op::Ge, "50k")
        );
        assert_eq!(parse("p99<2ms").unwrap().op, Op::Lt);
        assert!(parse("iops").is_err());
    }

    #[test]
    fn non_finite_and_malformed_expressions_are_refused_naming_them() {
        for bad in [
            "m >= nan",
            "m >= NaN",
            "m >= inf",
            "m <= -infinity",
            "m >= 1e400",
            "m >= 1e400k",
            "m >= >= 3",
            "m => 3",
            "m >= 1 2",
            " >= 3",
            "m >= ",
            "a b >= 3",
            "m >= fast",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
        let e = parse("m\x1b[2J >= 1").unwrap_err().to_string();
        assert!(!e.contains('\x1b'), "{e:?}");
        for good in ["m >= 1", "m >= 1.5k", "m <= 2ms", "m > 1G", "m < 0"] {
            assert!(parse(good).is_ok(), "{good}");
        }
        assert!(threshold("inf", "ns").is_err());
    }
}
