//! Charts on a scenario's clock, one per run of the scenario in each
//! result: the time series it reported (`report::series`; a second unit
//! against a right-hand axis) and, when several of its jobs ran, every job's
//! IOPS on one time axis. The scenario's phases (`report::phase`) are
//! drawn behind as labelled bands.

use super::jobs::{keys, rate_points};
use super::svg::{self, Anchor, Axis, Entry, Frame, Svg, INK, PALETTE};
use super::{file_part, Chart, ChartError, Kind, Names};
use crate::model::document::{Phase, RunDocument, ScenarioResult, Series};
use crate::report::run_table::shown_name;

const WIDTH: f64 = 900.0;
const X0: f64 = 90.0;
const X1: f64 = 810.0;

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
            let scenario = shown_name(s);
            for rep in 1..=s.repeat.max(1) {
                let of = |r: Option<u32>| r.unwrap_or(1) == rep;
                let phases: Vec<&Phase> = s.phases.iter().filter(|p| of(p.repeat)).collect();
                let mut title = scenario.clone();
                let mut stem = file_part(&scenario);
                if docs.len() > 1 {
                    title.push_str(&format!(" · {run}"));
                    stem.push_str(&format!("_{}", file_part(run)));
                }
                if s.repeat > 1 {
                    title.push_str(&format!(" · run {rep} of {}", s.repeat));
                    stem.push_str(&format!("_r{rep}"));
                }
                let series: Vec<&Series> = s.series.iter().filter(|x| of(x.repeat)).collect();
                if !series.is_empty() {
                    let t = format!("Series: {title}");
                    out.push(Chart {
                        file: names.take(&format!("series-{stem}")),
                        kind: Kind::Series,
                        svg: series_chart(&t, &series, &phases)?,
                        title: t,
                        scenario: Some(scenario.clone()),
                    });
                }
                let timed = s
                    .jobs
                    .iter()
                    .filter(|j| of(j.repeat) && j.started_s.is_some())
                    .count();
                if timed > 1 {
                    let t = format!("Jobs on the scenario's clock: {title}");
                    out.push(Chart {
                        file: names.take(&format!("jobs-{stem}")),
                        kind: Kind::Jobs,
                        svg: jobs_chart(&t, s, rep, &phases),
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
    let mut units: Vec<&str> = Vec::new();
    for x in lines {
        if !units.contains(&x.unit.as_str()) {
            units.push(&x.unit);
        }
    }
    let pts = || lines.iter().flat_map(|x| x.points.iter());
    let (x_lo, x_hi) = x_range(pts().map(|p| p[0]), phases);
    let y_of = |side: usize| {
        lines
            .iter()
            .filter(|x| units.iter().position(|u| *u == x.unit) == Some(side))
            .flat_map(|x| x.points.iter().map(|p| p[1]))
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
    for (i, x) in lines.iter().enumerate() {
        let side = units.iter().position(|u| *u == x.unit);
        let f = match side {
            Some(0) => &frame,
            Some(1) => match &right_frame {
                Some(f) => f,
                None => continue,
            },
            _ => continue,
        };
        let color = PALETTE[i % PALETTE.len()];
        let px: Vec<(f64, f64)> = x.points.iter().map(|p| (f.px(p[0]), f.py(p[1]))).collect();
        let values: Vec<f64> = x.points.iter().map(|p| p[1]).collect();
        let dashed = side == Some(1);
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

/// Every job of one run of a scenario on its clock: IOPS (reads and
/// writes together) of each interval at its time, phases as bands.
fn jobs_chart(title: &str, sc: &ScenarioResult, rep: u32, phases: &[&Phase]) -> String {
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (key, j) in keys(sc).into_iter().zip(&sc.jobs) {
        let Some(start) = j.started_s.filter(|_| j.repeat.unwrap_or(1) == rep) else {
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
        sc.jobs
            .iter()
            .filter(|j| j.repeat.unwrap_or(1) == rep)
            .flat_map(|j| [j.started_s, j.ended_s])
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
