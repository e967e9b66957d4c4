//! The comparison's tables, built once for every format's exporter: a
//! machine table above the metrics, units scaled per row (every run's
//! figure in the unit the baseline's takes).

use crate::model::comparison::{Comparison, Row, Verdict};
use crate::model::document::{marks_suffix, Better, RunDocument};
use crate::report::export::{exporter, Content, Machine, Part};
use crate::report::run_table::Format;
use crate::terminal::cleaned;
use crate::units::{format_bytes_binary, Scale};

/// How a verdict reads in a cell and in CSV.
pub(crate) fn verdict_text(v: Verdict) -> &'static str {
    match v {
        Verdict::Baseline => "baseline",
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::WithinNoise => "within noise",
        Verdict::Unknown => "no verdict",
        Verdict::Missing => "missing",
        Verdict::NotComparable => "not comparable",
    }
}

/// The scale of a row: its baseline's figure (or the first there is)
/// decides, so that every figure of the row is in one unit.
fn row_scale(row: &Row) -> Scale {
    let headline = row.cells.iter().find_map(|c| c.value).unwrap_or(0.0);
    Scale::of(headline, &row.unit)
}

fn cell_text(row: &Row, scale: &Scale, i: usize) -> String {
    let c = &row.cells[i];
    let Some(v) = c.value else {
        return "missing".into();
    };
    let mut s = cleaned(&scale.show(v));
    s.push_str(&marks_suffix(&c.marks));
    if let Some(why) = &c.not_comparable {
        s.push_str(&format!(" not comparable ({})", cleaned(why)));
        return s;
    }
    if i > 0 {
        match c.ratio {
            Some(r) => s.push_str(&format!(" ×{r:.3}")),
            None => s.push_str(" (no baseline)"),
        }
        if let Some((lo, hi)) = c.ratio_ci {
            s.push_str(&format!(" [{lo:.3}–{hi:.3}]"));
        }
        s.push_str(&format!(" {}", verdict_text(c.verdict)));
        if let Some(repeat) = c.repeat_for_verdict {
            s.push_str(&format!(
                " ({} vs {} samples; --repeat {repeat} gives one)",
                row.cells[0].samples, c.samples
            ));
        }
    }
    s
}

fn machine_rows(docs: &[RunDocument]) -> Vec<Vec<String>> {
    type Field = fn(&RunDocument) -> String;
    let t = |d: &RunDocument, f: fn(&crate::model::machine::TargetInfo) -> String| {
        d.target.as_ref().map(f).unwrap_or_else(|| "-".into())
    };
    let fields: Vec<(&str, Field)> = vec![
        ("host", |d| d.host.hostname.clone()),
        ("CPU", |d| d.host.cpu_model.clone()),
        ("cores", |d| d.host.cpus.to_string()),
        ("memory", |d| {
            format_bytes_binary(d.host.memory_bytes as f64)
        }),
        ("kernel", |d| d.host.kernel.clone()),
        ("OS", |d| d.host.os.clone()),
        ("filesystem", |d| {
            d.target
                .as_ref()
                .map(|t| t.fs_type.clone())
                .unwrap_or_else(|| "-".into())
        }),
        ("device", |d| {
            d.target
                .as_ref()
                .and_then(|t| t.device.clone())
                .unwrap_or_else(|| "-".into())
        }),
        ("scheduler", |d| {
            d.target
                .as_ref()
                .and_then(|t| t.scheduler.clone())
                .unwrap_or_else(|| "-".into())
        }),
        ("rotational", |d| {
            d.target
                .as_ref()
                .and_then(|t| t.rotational)
                .map(|r| if r { "yes" } else { "no" }.to_string())
                .unwrap_or_else(|| "-".into())
        }),
    ];
    let mut rows: Vec<Vec<String>> = fields
        .iter()
        .map(|(name, f)| {
            std::iter::once(name.to_string())
                .chain(docs.iter().map(f))
                .collect()
        })
        .collect();
    rows.push(
        std::iter::once("free".to_string())
            .chain(
                docs.iter()
                    .map(|d| t(d, |t| format_bytes_binary(t.free_bytes as f64))),
            )
            .collect(),
    );
    rows
}

/// The comparison in `format`: the machine table and the metric table
/// (JSON: the comparison).
pub fn render(c: &Comparison, docs: &[RunDocument], format: Format) -> String {
    exporter(format).write(&Content {
        parts: vec![Part::Comparison(c, docs)],
        machine: Some(Machine::Comparison(c)),
    })
}

/// How to read the comparison's cells.
pub const READING: &str = "Each run: median, ×ratio to the baseline, [95% interval of the ratio], verdict. \
                        \"within noise\" when the interval includes 1; fewer than 3 samples on a side give no verdict.";

/// The machines side by side: a row per field, a column per run (texts cleaned).
pub fn machine_grid(c: &Comparison, docs: &[RunDocument]) -> (Vec<String>, Vec<Vec<String>>) {
    let header = std::iter::once("machine".to_string())
        .chain(c.runs.iter().map(|r| cleaned(r)))
        .collect();
    let rows = machine_rows(docs)
        .iter()
        .map(|r| r.iter().map(|cell| cleaned(cell)).collect())
        .collect();
    (header, rows)
}

/// The metric rows: scenario, metric, which way is better, then each
/// run's cell (figure scaled per row, ratio, interval, verdict).
pub fn metric_grid(c: &Comparison) -> (Vec<String>, Vec<Vec<String>>) {
    let header = ["scenario", "metric", "better"]
        .into_iter()
        .map(String::from)
        .chain(c.runs.iter().map(|r| cleaned(r)))
        .collect();
    let rows = c
        .rows
        .iter()
        .map(|r| {
            let better = match r.better {
                Better::Higher => "higher",
                Better::Lower => "lower",
            };
            let scale = row_scale(r);
            [cleaned(&r.scenario), cleaned(&r.metric), better.to_string()]
                .into_iter()
                .chain((0..r.cells.len()).map(|i| cell_text(r, &scale, i)))
                .collect()
        })
        .collect();
    (header, rows)
}

/// The summary line counting cells that are not comparable, when there are any.
pub fn not_comparable_line(c: &Comparison) -> Option<String> {
    let apart = c.not_comparable();
    (apart > 0).then(|| {
        format!(
            "{apart} cell(s) not comparable: those runs did not measure the same thing (no ratio, no verdict)."
        )
    })
}
