//! The comparison as a terminal table, Markdown, CSV or JSON, with units
//! scaled per row (every run's figure in the unit the baseline's takes)
//! and a machine table above the metrics.

use crate::model::comparison::{Comparison, Row, Verdict};
use crate::model::document::{marks_suffix, Better, RunDocument};
use crate::report::run_table::Format;
use crate::terminal::cleaned;
use crate::units::{format_bytes_binary, Scale};
use comfy_table::{presets, Table};

fn verdict_text(v: Verdict) -> &'static str {
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

/// Renders the machine table and the metric table.
pub fn render(c: &Comparison, docs: &[RunDocument], format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(c).expect("serialisable") + "\n",
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record([
                "scenario",
                "metric",
                "unit",
                "better",
                "run",
                "value",
                "samples",
                "ratio",
                "ci_low",
                "ci_high",
                "verdict",
                "not_comparable",
                "repeat_for_verdict",
            ]);
            for r in &c.rows {
                for (i, cell) in r.cells.iter().enumerate() {
                    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
                    let _ = w.write_record([
                        cleaned(&r.scenario),
                        cleaned(&r.metric),
                        cleaned(&r.unit),
                        format!("{:?}", r.better).to_lowercase(),
                        cleaned(&c.runs[i]),
                        opt(cell.value),
                        cell.samples.to_string(),
                        opt(cell.ratio),
                        opt(cell.ratio_ci.map(|x| x.0)),
                        opt(cell.ratio_ci.map(|x| x.1)),
                        verdict_text(cell.verdict).to_string(),
                        cell.not_comparable
                            .as_deref()
                            .map(cleaned)
                            .unwrap_or_default(),
                        cell.repeat_for_verdict
                            .map(|r| r.to_string())
                            .unwrap_or_default(),
                    ]);
                }
            }
            String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
        }
        Format::Table | Format::Markdown => {
            let preset = if format == Format::Markdown {
                presets::ASCII_MARKDOWN
            } else {
                presets::UTF8_FULL_CONDENSED
            };
            let mut machines = Table::new();
            machines.load_preset(preset);
            let (header, rows) = machine_grid(c, docs);
            machines.set_header(header);
            for r in rows {
                machines.add_row(r);
            }
            let mut metrics = Table::new();
            metrics.load_preset(preset);
            let (header, rows) = metric_grid(c);
            metrics.set_header(header);
            for r in rows {
                metrics.add_row(r);
            }
            let apart = not_comparable_line(c)
                .map(|l| format!("\n{l}"))
                .unwrap_or_default();
            format!("{machines}\n\n{metrics}\n\n{READING}{apart}\n")
        }
    }
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

/// The metric table in HTML, each cell of a run classed by its verdict
/// (`better`, `worse`, …) for colour, how to read it under it. The
/// machines are [`machine_grid`]'s, shown where the page puts them.
pub fn html(c: &Comparison) -> String {
    use crate::report::tables::html_grid;
    let mut out = String::new();
    let (header, rows) = metric_grid(c);
    let class = |r: usize, i: usize| -> Option<&'static str> {
        let cell = c.rows.get(r)?.cells.get(i.checked_sub(3)?)?;
        Some(match cell.verdict {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Baseline => "baseline",
            Verdict::NotComparable | Verdict::Missing => "apart",
            Verdict::WithinNoise | Verdict::Unknown => "noise",
        })
    };
    out.push_str(&html_grid(&header, &rows, &class));
    out.push_str(&format!(
        "<p class=\"note\">{}</p>\n",
        crate::report::charts::svg::esc(READING)
    ));
    if let Some(l) = not_comparable_line(c) {
        out.push_str(&format!(
            "<p class=\"note\">{}</p>\n",
            crate::report::charts::svg::esc(&l)
        ));
    }
    out
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
