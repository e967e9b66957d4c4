//! `--assert 'METRIC OP VALUE'`: thresholds that turn a run into a pass/fail check.

use crate::document::RunDocument;
use crate::units::{parse_duration_with_default, parse_size};

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

/// Parses `randread.iops >= 50000` or `p99 <= 2ms`.
pub fn parse(text: &str) -> Result<Assertion, String> {
    for (sym, op) in [(">=", Op::Ge), ("<=", Op::Le), (">", Op::Gt), ("<", Op::Lt)] {
        if let Some((m, v)) = text.split_once(sym) {
            let (metric, value) = (m.trim(), v.trim());
            if metric.is_empty() || value.is_empty() {
                break;
            }
            return Ok(Assertion {
                text: text.to_string(),
                metric: metric.to_string(),
                op,
                value: value.to_string(),
            });
        }
    }
    Err(format!(
        "--assert '{text}': expected METRIC >= VALUE (or >, <=, <), e.g. 'randrw.read_iops >= 50k'"
    ))
}

/// The threshold in the metric's unit.
fn threshold(value: &str, unit: &str) -> Result<f64, String> {
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
        let d = parse_duration_with_default(value, 1).map_err(|e| format!("threshold {e}"))?;
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
        let bytes =
            parse_size(value.trim_end_matches("/s")).map_err(|e| format!("threshold {e}"))?;
        return Ok(bytes as f64 / b);
    }
    // Counts (IOPS, ops/s): k, M, G as powers of 1000.
    let (num, mult) = match value.chars().last() {
        Some('k') | Some('K') => (&value[..value.len() - 1], 1e3),
        Some('M') => (&value[..value.len() - 1], 1e6),
        Some('G') => (&value[..value.len() - 1], 1e9),
        _ => (value, 1.0),
    };
    num.parse::<f64>()
        .map(|v| v * mult)
        .map_err(|_| format!("threshold '{value}' is not a number for unit '{unit}'"))
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
}
