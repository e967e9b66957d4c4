//! Charts on a scenario's clock, one per run of the scenario in each
//! result: the time series it reported (`report::series`; a second unit
//! against a right-hand axis) and, when several of its jobs ran, every job's
//! IOPS on one time axis. The scenario's phases (`report::phase`) are
//! drawn behind as labelled bands.

use super::jobs::{keys, rate_points, Key};
use super::svg::{self, Anchor, Axis, Entry, Frame, Svg, INK, PALETTE};
use super::{file_part, title_part, Chart, ChartError, Kind, Names};
use crate::model::document::{Phase, RunDocument, ScenarioResult, Series};
use crate::model::result::JobResult;
use crate::report::run_table::shown_name;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

const WIDTH: f64 = 900.0;
const X0: f64 = 90.0;
const X1: f64 = 810.0;

/// What one run of a scenario (`--repeat`) holds: its phases, series and
/// jobs (each with its key).
#[derive(Default)]
struct Run<'a> {
    phases: Vec<&'a Phase>,
    series: Vec<&'a Series>,
    jobs: Vec<(Key, &'a JobResult)>,
}

/// The runs a scenario's phases, series and jobs name (what names none is
/// run 1), in order: the runs the document holds, whatever `repeat` it
/// claims; one pass over them.
fn runs_of(s: &ScenarioResult) -> BTreeMap<u32, Run<'_>> {
    let mut runs: BTreeMap<u32, Run> = BTreeMap::new();
    for p in &s.phases {
        runs.entry(p.repeat.unwrap_or(1))
            .or_default()
            .phases
            .push(p);
    }
    for x in &s.series {
        runs.entry(x.repeat.unwrap_or(1))
            .or_default()
            .series
            .push(x);
    }
    for (key, j) in keys(s).into_iter().zip(&s.jobs) {
        runs.entry(j.repeat.unwrap_or(1))
            .or_default()
            .jobs
            .push((key, j));
    }
    runs
}

/// The series and jobs charts of every scenario run in `docs`.
pub fn charts(
    docs: &[RunDocument],
    runs: &[String],
    names: &mut Names,
) -> Result<Vec<Chart>, ChartError> {
    let mut out = Vec::new();
    for (ri, d) in docs.iter().enumerate() {
        let run = runs.get(ri).map_or("", String::as_str);
        for s in &d.scenarios {
            let scenario: Arc<str> = shown_name(s).into();
            // Runs are counted from 1: a 0 names none.
            for (rep, held) in runs_of(s).into_iter().filter(|(rep, _)| *rep > 0) {
                let mut title = title_part(&scenario).into_owned();
                let mut stem = file_part(&scenario);
                if docs.len() > 1 {
                    title.push_str(&format!(" · {}", title_part(run)));
                    stem.push_str(&format!("_{}", file_part(run)));
                }
                if s.repeat > 1 {
                    title.push_str(&format!(" · run {rep} of {}", s.repeat));
                    stem.push_str(&format!("_r{rep}"));
                }
                if !held.series.is_empty() {
                    let t = format!("Series: {title}");
                    out.push(Chart {
                        file: names.take(&format!("series-{stem}")),
                        kind: Kind::Series,
                        svg: series_chart(&t, &held.series, &held.phases)?,
                        title: t,
                        scenario: Some(scenario.clone()),
                    });
                }
                let timed = held
                    .jobs
                    .iter()
                    .filter(|(_, j)| j.started_s.is_some())
                    .count();
                if timed > 1 {
                    let t = format!("Jobs on the scenario's clock: {title}");
                    out.push(Chart {
                        file: names.take(&format!("jobs-{stem}")),
                        kind: Kind::Jobs,
                        svg: jobs_chart(&t, &held.jobs, &held.phases),
                        title: t,
                        scenario: Some(scenario.clone()),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Light bands behind the data, one per phase, named above the plot.
fn bands(s: &mut Svg, f: &Frame, phases: &[&Phase], end: f64) {
    for (i, p) in phases.iter().enumerate() {
        let a = f.px(p.started_s.max(f.x.range().0));
        let b = f.px(p.ended_s.unwrap_or(end).min(f.x.range().1));
        if b <= a {
            continue;
        }
        let fill = if i % 2 == 0 { "#eef3fb" } else { "#fbf4e8" };
        s.rect(a, f.y0, b - a, f.y1 - f.y0, fill, "");
        s.line(a, f.y0 - 14.0, a, f.y1, "#b9c3d0", 1.0);
        s.text(
            a + 4.0,
            f.y0 - 4.0,
            11.0,
            Anchor::Start,
            INK,
            &svg::fit(&p.name, (b - a - 6.0).max(12.0), 11.0),
        );
    }
}

/// The x range of a scenario's clock: the data's, and the phases'.
fn x_range(xs: impl Iterator<Item = f64>, phases: &[&Phase]) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for x in xs.chain(
        phases
            .iter()
            .flat_map(|p| [Some(p.started_s), p.ended_s])
            .flatten(),
    ) {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    (lo.min(0.0), if hi > lo { hi } else { lo + 1.0 })
}

/// A scenario's series: those of the first unit against the left axis,
/// those of a second against the right one; a third unit's are left out
/// and the subtitle says so.
fn series_chart(title: &str, lines: &[&Series], phases: &[&Phase]) -> Result<String, ChartError> {
    // Each line's unit as its place among the units, in first-seen order.
    let mut units: Vec<&str> = Vec::new();
    let mut place: HashMap<&str, usize> = HashMap::new();
    let side: Vec<usize> = lines
        .iter()
        .map(|x| {
            *place.entry(x.unit.as_str()).or_insert_with(|| {
                units.push(&x.unit);
                units.len() - 1
            })
        })
        .collect();
    let pts = || lines.iter().flat_map(|x| x.points.iter());
    let (x_lo, x_hi) = x_range(pts().map(|p| p[0]), phases);
    let y_of = |want: usize| {
        lines
            .iter()
            .zip(&side)
            .filter(|(_, s)| **s == want)
            .flat_map(|(x, _)| x.points.iter().map(|p| p[1]))
            .fold((0f64, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)))
    };
    let (l_lo, l_hi) = y_of(0);
    let (r_lo, r_hi) = y_of(1);
    for v in [x_hi - x_lo, l_hi - l_lo, r_hi - r_lo] {
        if !v.is_finite() {
            return Err(ChartError::FarApart {
                title: title.into(),
            });
        }
    }
    let mut sub = vec![
        "What the scenario reported over time (report::series), on its clock; its phases as bands."
            .to_string(),
    ];
    let left_out = units.len().saturating_sub(2);
    if left_out > 0 {
        sub.push(format!(
            "{left_out} more unit(s) not drawn: a chart has two axes."
        ));
    }
    let mut s = Svg::new(WIDTH, 0.0);
    let top = svg::heading(&mut s, WIDTH, title, &sub) + 20.0;
    let right = units.get(1).copied();
    let x1 = if right.is_some() { X1 - 10.0 } else { X1 };
    let frame = Frame {
        x0: X0,
        y0: top,
        x1,
        y1: top + 300.0,
        x: Axis::linear(x_lo, x_hi, "s", 8, true),
        y: Axis::linear(
            l_lo,
            l_hi * 1.08,
            units.first().copied().unwrap_or(""),
            5,
            true,
        ),
    };
    bands(&mut s, &frame, phases, x_hi);
    frame.draw_axes(
        &mut s,
        "time on the scenario's clock",
        units.first().copied().unwrap_or(""),
    );
    let right_frame = right.map(|u| {
        let f = Frame {
            y: Axis::linear(r_lo, r_hi * 1.08, u, 5, true),
            ..frame.clone()
        };
        for (v, l) in &f.y.ticks {
            s.text(f.x1 + 6.0, f.py(*v) + 4.0, 11.0, Anchor::Start, INK, l);
        }
        s.line(f.x1, f.y0, f.x1, f.y1, INK, 1.0);
        f
    });
    let mut legend: Vec<Entry> = Vec::new();
    for (i, (x, side)) in lines.iter().zip(&side).enumerate() {
        let f = match side {
            0 => &frame,
            1 => match &right_frame {
                Some(f) => f,
                None => continue,
            },
            _ => continue,
        };
        let color = PALETTE[i % PALETTE.len()];
        let px: Vec<(f64, f64)> = x.points.iter().map(|p| (f.px(p[0]), f.py(p[1]))).collect();
        let values: Vec<f64> = x.points.iter().map(|p| p[1]).collect();
        let dashed = *side == 1;
        s.data_line(&px, &values, color, dashed.then_some("6 3"));
        let axis = if dashed { ", right axis" } else { "" };
        legend.push((
            color.to_string(),
            dashed,
            format!("{} ({}{axis})", x.name, x.unit),
        ));
    }
    let bottom = svg::legend(&mut s, &legend, X0, X1, frame.y1 + 40.0);
    s.set_height(bottom + 8.0);
    Ok(s.finish(title))
}

/// Every job of one run of a scenario on its clock (`jobs`, each with
/// its key): IOPS (reads and writes together) of each interval at its
/// time, phases as bands.
fn jobs_chart(title: &str, jobs: &[(Key, &JobResult)], phases: &[&Phase]) -> String {
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (key, j) in jobs {
        let Some(start) = j.started_s else {
            continue;
        };
        let (r, _) = rate_points(j, 0, false);
        let (w, _) = rate_points(j, 1, false);
        let pts: Vec<(f64, f64)> = r
            .iter()
            .zip(&w)
            .map(|((t, a), (_, b))| (start + t, a + b))
            .collect();
        let mut name = key.job.clone();
        if let Some(c) = &key.case {
            name.push_str(&format!(" ({c})"));
        }
        if key.nth > 1 {
            name.push_str(&format!(" #{}", key.nth));
        }
        lines.push((name, pts));
    }
    let (x_lo, x_hi) = x_range(
        jobs.iter()
            .flat_map(|(_, j)| [j.started_s, j.ended_s])
            .flatten(),
        phases,
    );
    let hi = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let sub = vec![
        "Each job's I/Os per second (reads and writes together) in each interval of its timeline, on the scenario's clock: jobs that ran together line up.".to_string(),
    ];
    let mut s = Svg::new(WIDTH, 0.0);
    let top = svg::heading(&mut s, WIDTH, title, &sub) + 20.0;
    let frame = Frame {
        x0: X0,
        y0: top,
        x1: X1,
        y1: top + 280.0,
        x: Axis::linear(x_lo, x_hi, "s", 8, true),
        y: Axis::linear(0.0, hi * 1.08, "IOPS", 5, false),
    };
    bands(&mut s, &frame, phases, x_hi);
    frame.draw_axes(&mut s, "time on the scenario's clock", "IOPS");
    let mut legend: Vec<Entry> = Vec::new();
    for (i, (name, pts)) in lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let px = frame.plot(&mut s, pts, color);
        if px.len() == 1 {
            s.dot(px[0].0, px[0].1, 3.0, color);
        }
        legend.push((color.to_string(), false, name.clone()));
    }
    if lines.is_empty() {
        frame.say_empty(&mut s, "no job to draw");
    }
    let bottom = svg::legend(&mut s, &legend, X0, X1, frame.y1 + 40.0);
    s.set_height(bottom + 8.0);
    s.finish(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_made_for_the_runs_held_not_the_runs_claimed() {
        let mut doc: RunDocument = serde_json::from_value(serde_json::json!({
            "schema": "plumb.result.v1", "plumb_version": "0", "label": null,
            "started": "", "finished": "",
            "host": {"hostname": "h", "os": "", "kernel": "", "arch": "", "cpu_model": "", "cpus": 1, "memory_bytes": 1},
            "target": null,
            "scenarios": [{"name": "s", "pack": null, "source_sha256": null, "params": {}, "repeat": 1,
                           "metrics": [], "jobs": [], "tables": [], "error": null,
                           "series": [{"name": "x", "unit": "u", "points": [[0.0, 1.0]]},
                                      {"name": "y", "unit": "u", "points": [[0.0, 2.0]], "repeat": 7}]}]
        }))
        .unwrap();
        // A claim of four billion runs: two charts, at once.
        doc.scenarios[0].repeat = u32::MAX;
        let started = std::time::Instant::now();
        let charts = charts(&[doc], &["r".into()], &mut Names::default()).unwrap();
        let files: Vec<&str> = charts.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(files, ["series-s_r1.svg", "series-s_r7.svg"]);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
