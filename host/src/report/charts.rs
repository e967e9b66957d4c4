//! SVG charts with plotters: metrics normalised to the baseline, latency
//! percentiles per I/O job (log scale), per-second IOPS and bandwidth
//! timelines, and the time series each scenario reported.

use crate::model::comparison::Comparison;
use crate::model::document::{RunDocument, Series};
use crate::model::result::JobResult;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

type Res<T> = Result<T, String>;

fn e<E: std::fmt::Display>(err: E) -> String {
    err.to_string()
}

/// A job name as a file-name part: safe characters only, at most 80 of them.
fn file_name(s: &str) -> String {
    s.chars()
        .take(80)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes every chart for `docs` into `dir`; `c` is their comparison (made
/// once by the caller, titles in `c.runs`). Returns the files written.
pub fn write_all(dir: &Path, docs: &[RunDocument], c: &Comparison) -> Res<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|err| format!("--svg {}: {err}", dir.display()))?;
    let runs = &c.runs;
    let mut out = Vec::new();
    if let Some(svg) = metrics_chart(c)? {
        out.push(save(dir, "metrics.svg".into(), &svg)?);
    }
    let mut job_names: Vec<String> = Vec::new();
    for d in docs {
        for j in d.scenarios.iter().flat_map(|s| s.jobs.iter()) {
            if !job_names.contains(&j.name) {
                job_names.push(j.name.clone());
            }
        }
    }
    for name in job_names {
        let jobs: Vec<(String, &JobResult)> = docs
            .iter()
            .zip(runs)
            .filter_map(|(d, r)| {
                d.scenarios
                    .iter()
                    .flat_map(|s| s.jobs.iter())
                    .find(|j| j.name == name)
                    .map(|j| (r.clone(), j))
            })
            .collect();
        let file = file_name(&name);
        let latency = latency_chart(&name, &jobs)?;
        out.push(save(dir, format!("latency-{file}.svg"), &latency)?);
        let iops = timeline_chart(&name, &jobs, Rate::Iops)?;
        out.push(save(dir, format!("timeline-{file}.svg"), &iops)?);
        let bw = timeline_chart(&name, &jobs, Rate::Bandwidth)?;
        out.push(save(dir, format!("bandwidth-{file}.svg"), &bw)?);
    }
    let mut scenarios: Vec<String> = Vec::new();
    for d in docs {
        for g in d.scenarios.iter().filter(|g| !g.series.is_empty()) {
            if !scenarios.contains(&g.qualified_name()) {
                scenarios.push(g.qualified_name());
            }
        }
    }
    for name in scenarios {
        let mut lines: Vec<(String, &Series)> = Vec::new();
        for (d, run) in docs.iter().zip(runs) {
            for g in d.scenarios.iter().filter(|g| g.qualified_name() == name) {
                for x in &g.series {
                    let label = if docs.len() > 1 {
                        format!("{run} {}", x.name)
                    } else {
                        x.name.clone()
                    };
                    lines.push((label, x));
                }
            }
        }
        let svg = series_chart(&name, &lines)?;
        out.push(save(dir, format!("series-{}.svg", file_name(&name)), &svg)?);
    }
    Ok(out)
}

/// The series of one scenario over time: those of the first unit against
/// the left axis, those of a second unit against the right one (a third
/// unit's series are left out, and the caption says so).
fn series_chart(name: &str, lines: &[(String, &Series)]) -> Res<String> {
    let mut units: Vec<&str> = Vec::new();
    for (_, x) in lines {
        if !units.contains(&x.unit.as_str()) {
            units.push(&x.unit);
        }
    }
    let side = |x: &Series| units.iter().position(|u| *u == x.unit);
    let range = |axis: usize| {
        lines
            .iter()
            .filter(|(_, x)| side(x) == Some(axis))
            .flat_map(|(_, x)| x.points.iter().map(|p| p[1]))
            .fold((0f64, 1e-9f64), |(lo, hi), v| (lo.min(v), hi.max(v)))
    };
    let x_max = lines
        .iter()
        .flat_map(|(_, x)| x.points.iter().map(|p| p[0]))
        .fold(1e-9, f64::max);
    let x_min = lines
        .iter()
        .flat_map(|(_, x)| x.points.iter().map(|p| p[0]))
        .fold(0f64, f64::min);
    let (l_lo, l_hi) = range(0);
    let (r_lo, r_hi) = range(1);
    // Values from a result file are bounded (±1e300), but spans and margins
    // of such values are not: an axis must have a finite length.
    let spans = [x_max * 1.02 - x_min, l_hi * 1.1 - l_lo, r_hi * 1.1 - r_lo];
    if spans.iter().any(|v| !v.is_finite()) {
        return Err(format!("series of {name}: values too far apart to draw"));
    }
    let left_out = units.len().saturating_sub(2);
    let caption = if left_out > 0 {
        format!("{name} ({left_out} more units not drawn)")
    } else {
        name.to_string()
    };
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .right_y_label_area_size(if units.len() > 1 { 80 } else { 0 })
        .build_cartesian_2d(x_min..x_max * 1.02, l_lo..l_hi * 1.1)
        .map_err(e)?
        .set_secondary_coord(x_min..x_max * 1.02, r_lo..r_hi * 1.1);
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc(units.first().copied().unwrap_or(""))
        .draw()
        .map_err(e)?;
    if units.len() > 1 {
        chart
            .configure_secondary_axes()
            .y_desc(units[1])
            .draw()
            .map_err(e)?;
    }
    for (i, (label, x)) in lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let pts: Vec<(f64, f64)> = x.points.iter().map(|p| (p[0], p[1])).collect();
        let legend = move |(x, y): (i32, i32)| {
            PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
        };
        match side(x) {
            Some(0) => {
                chart
                    .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                    .map_err(e)?
                    .label(format!("{label} ({})", x.unit))
                    .legend(legend);
            }
            Some(1) => {
                chart
                    .draw_secondary_series(LineSeries::new(pts, color.stroke_width(2)))
                    .map_err(e)?
                    .label(format!("{label} ({}, right)", x.unit))
                    .legend(legend);
            }
            _ => {}
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    drop(chart);
    drop(root);
    Ok(svg)
}

/// Saves one chart with the all-or-nothing writer.
fn save(dir: &Path, name: String, svg: &str) -> Res<PathBuf> {
    let path = dir.join(name);
    super::save::write_atomic(&path, svg.as_bytes()).map_err(e)?;
    Ok(path)
}

/// Grouped bars: every metric of every run divided by the baseline's.
fn metrics_chart(c: &Comparison) -> Res<Option<String>> {
    let runs = &c.runs;
    let rows: Vec<_> = c
        .rows
        .iter()
        .filter(|r| r.cells[0].value.is_some_and(|v| v != 0.0))
        .collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let height = u32::try_from(rows.len())
        .unwrap_or(u32::MAX)
        .saturating_mul(28)
        .saturating_add(120)
        .max(300);
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (1000, height)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let max = rows
        .iter()
        .flat_map(|r| r.cells.iter().filter_map(|c| c.ratio))
        .fold(1.0f64, f64::max)
        .max(1.2);
    let labels: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r.scenario.rsplit('/').next().unwrap_or(""),
                r.metric
            )
        })
        .collect();
    let n_rows = rows.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Metrics relative to the baseline (1.0 = baseline)",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(300)
        .build_cartesian_2d(0f64..max * 1.1, 0f64..n_rows)
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("ratio to baseline")
        .y_desc("metric")
        .draw()
        .map_err(e)?;
    // Metric names, one per row, right-aligned against the axis (top row first).
    let style = ("sans-serif", 12)
        .into_font()
        .into_text_style(&root)
        .pos(Pos::new(HPos::Right, VPos::Center));
    for (i, label) in labels.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(0.0, n_rows - i as f64 - 0.5));
        root.draw(&Text::new(label.clone(), (px - 8, py), style.clone()))
            .map_err(e)?;
    }
    let n = runs.len() as f64;
    for (j, run) in runs.iter().enumerate() {
        let color = PALETTE[j % PALETTE.len()];
        let bars = rows.iter().enumerate().filter_map(|(i, r)| {
            let ratio = r.cells[j].ratio?;
            let top = n_rows - i as f64 - 0.1 - 0.8 * j as f64 / n;
            Some(Rectangle::new(
                [(0.0, top - 0.8 / n), (ratio, top)],
                color.filled(),
            ))
        });
        chart
            .draw_series(bars)
            .map_err(e)?
            .label(run.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .draw_series(LineSeries::new(
            [(1.0, 0.0), (1.0, n_rows)],
            BLACK.stroke_width(1),
        ))
        .map_err(e)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    drop(chart);
    drop(root);
    Ok(Some(svg))
}

const PERCENTILES: [(&str, &str); 6] = [
    ("50.000000", "p50"),
    ("90.000000", "p90"),
    ("99.000000", "p99"),
    ("99.500000", "p99.5"),
    ("99.900000", "p99.9"),
    ("99.990000", "p99.99"),
];

/// Draws labelled lines with point markers, one colour each, and the legend.
fn draw_lines<'a, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>,
    series: Vec<(String, Vec<(f64, f64)>)>,
) -> Res<()>
where
    Y: Ranged<ValueType = f64>,
{
    for (i, (label, pts)) in series.into_iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
            .map_err(e)?;
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(e)?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    Ok(())
}

/// Completion latency percentiles of one job, one line per run and direction, log scale.
fn latency_chart(name: &str, jobs: &[(String, &JobResult)]) -> Res<String> {
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (run, j) in jobs {
        for (dir_name, d) in [("read", &j.read), ("write", &j.write)] {
            if d.total_ios == 0 {
                continue;
            }
            let pts: Vec<(f64, f64)> = PERCENTILES
                .iter()
                .enumerate()
                .filter_map(|(i, (k, _))| {
                    d.lat
                        .percentiles
                        .get(*k)
                        .map(|v| (i as f64, (*v as f64 / 1000.0).max(0.001)))
                })
                .collect();
            series.push((format!("{run} {dir_name}"), pts));
        }
    }
    let (lo, hi) = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let (lo, hi) = if lo > hi {
        (0.001, 1.0)
    } else {
        (lo / 1.5, hi * 1.5)
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Completion latency percentiles: {name}"),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..(PERCENTILES.len() - 1) as f64, (lo..hi).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_labels(PERCENTILES.len())
        .x_label_formatter(&|x| {
            PERCENTILES
                .get(x.round() as usize)
                .map(|p| p.1.to_string())
                .unwrap_or_default()
        })
        .x_desc("percentile")
        .y_desc("latency (µs, log scale)")
        .draw()
        .map_err(e)?;
    draw_lines(&mut chart, series)?;
    root.present().map_err(e)?;
    drop(chart);
    drop(root);
    Ok(svg)
}

/// What a timeline chart plots.
#[derive(Clone, Copy, PartialEq)]
enum Rate {
    Iops,
    Bandwidth,
}

/// IOPS (or MiB/s) per second of one job, one line per run and direction.
fn timeline_chart(name: &str, jobs: &[(String, &JobResult)], rate: Rate) -> Res<String> {
    let (title, axis) = match rate {
        Rate::Iops => ("IOPS per second", "IOPS"),
        Rate::Bandwidth => ("Bandwidth per second", "MiB/s"),
    };
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (run, j) in jobs {
        for (di, dir_name) in ["read", "write"].iter().enumerate() {
            if j.dir(di).total_ios == 0 {
                continue;
            }
            // Each interval's rate (a partial last one normalised by its
            // length), drawn at its end; a partial interval shorter than a
            // fifth of a second holds too few I/Os to draw a rate from.
            let pts = j
                .timeline
                .iter()
                .filter(|p| !p.partial || p.duration_ms >= 200)
                .map(|p| {
                    let y = match rate {
                        Rate::Iops => p.iops(di),
                        Rate::Bandwidth => p.bw_bytes(di) / 1048576.0,
                    };
                    ((p.t_ms + p.duration_ms) as f64 / 1000.0, y)
                })
                .collect();
            series.push((format!("{run} {dir_name}"), pts));
        }
    }
    let x_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.0))
        .fold(1.0, f64::max)
        * 1.05;
    let y_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{title}: {name}"), ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max * 1.1)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc(axis)
        .draw()
        .map_err(e)?;
    draw_lines(&mut chart, series)?;
    root.present().map_err(e)?;
    drop(chart);
    drop(root);
    Ok(svg)
}
