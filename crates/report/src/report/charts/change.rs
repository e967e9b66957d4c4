//! The metrics chart. Several runs: one bar per metric and run against the
//! baseline, as a factor on a log scale that points right when the run is
//! better and left when it is worse (whichever way the metric counts), the
//! 95% interval of the ratio as whiskers, the colour saying what the
//! verdict is; no baseline bars. One run: its values, grouped by unit,
//! each group on an axis of its own.

use super::svg::{self, Anchor, Axis, Svg, BETTER, GRID, INK, MUTED, UNDECIDED, WORSE};
use super::{Chart, Kind, Names};
use crate::model::comparison::{Cell, Comparison, Row, Verdict};
use crate::model::document::{marks_suffix, Better, RunDocument};
use crate::units::Scale;
use std::collections::HashMap;

const WIDTH: f64 = 1000.0;
const LABELS: f64 = 330.0;
const PLOT0: f64 = 350.0;
const PLOT1: f64 = 750.0;
const ROW: f64 = 22.0;
const HEAD: f64 = 28.0;

/// The chart of `c`: changes with several runs, values with one; none
/// without metrics.
pub fn chart(docs: &[RunDocument], c: &Comparison, names: &mut Names) -> Option<Chart> {
    if c.rows.is_empty() {
        return None;
    }
    if c.runs.len() > 1 {
        Some(changes(c, names))
    } else {
        values(docs, c, names)
    }
}

/// How much better a run is than the baseline, as a factor: above 1
/// better, below 1 worse, whichever way the metric counts.
fn factor(better: Better, ratio: f64) -> f64 {
    match better {
        Better::Higher => ratio,
        Better::Lower => 1.0 / ratio,
    }
}

/// The factor as words: `1.23× better`, `2.37× worse`, `same`.
fn factor_text(f: f64) -> String {
    if (f - 1.0).abs() < 0.0005 {
        "same".into()
    } else if f > 1.0 {
        format!("{}× better", crate::units::significant(f))
    } else {
        format!("{}× worse", crate::units::significant(1.0 / f))
    }
}

fn verdict_words(cell: &Cell) -> &'static str {
    match cell.verdict {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::WithinNoise => "within noise",
        Verdict::Unknown => "no verdict (too few samples)",
        Verdict::Missing => "missing",
        Verdict::NotComparable => "not comparable",
        Verdict::Baseline => "baseline",
    }
}

/// A drawable bar: log2 of the factor and of its interval.
struct Bar {
    f: f64,
    ci: Option<(f64, f64)>,
}

fn bar(row: &Row, cell: &Cell) -> Option<Bar> {
    let r = cell.ratio.filter(|r| r.is_finite() && *r > 0.0)?;
    let ci = cell
        .ratio_ci
        .filter(|(lo, hi)| lo.is_finite() && hi.is_finite() && *lo > 0.0 && *hi > 0.0)
        .map(|(lo, hi)| {
            let (a, b) = (factor(row.better, lo), factor(row.better, hi));
            (a.min(b), a.max(b))
        });
    Some(Bar {
        f: factor(row.better, r),
        ci,
    })
}

/// Factors on the axis: `1.1×` to `1000×`.
const STEPS: [f64; 11] = [
    1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0, 300.0, 1000.0,
];

/// The widest factor drawn, as log2 (at least 1.25×, capped at 1000×:
/// beyond, the bar is clipped).
fn widest(c: &Comparison) -> f64 {
    c.rows
        .iter()
        .flat_map(|r| r.cells.iter().skip(1).filter_map(move |cell| bar(r, cell)))
        .flat_map(|b| {
            let (lo, hi) = b.ci.unwrap_or((b.f, b.f));
            [b.f, lo, hi]
        })
        .map(|f| f.log2().abs())
        .fold(1.25f64.log2(), f64::max)
        .min(1000f64.log2())
}

/// The factor axis for `widest`: `same` in the middle, up to three factors
/// a side, the largest that fits first, each at most about half the log
/// distance of the one before (no crowding).
fn factor_axis(widest: f64) -> Axis {
    let mut marks: Vec<f64> = Vec::new();
    for step in STEPS.iter().rev().filter(|s| s.log2() <= widest * 1.02) {
        let apart = marks.last().is_none_or(|m| step.log2() <= m.log2() * 0.6);
        if marks.len() < 3 && apart && step.log2() >= widest * 0.2 {
            marks.push(*step);
        }
    }
    let mut ticks = vec![(0.0, "same".to_string())];
    for m in &marks {
        let t = crate::units::significant(*m);
        let t = t.trim_end_matches('0').trim_end_matches('.').to_string();
        ticks.push((m.log2(), format!("{t}×")));
        ticks.push((-m.log2(), format!("{t}×")));
    }
    let span = widest * 1.08;
    Axis::fixed(-span, span, ticks)
}

/// A line of the chart: a scenario's heading (no row), or a metric's bar
/// for run `run`; with its label.
type Line<'a> = (Option<&'a Row>, usize, String);

/// The chart's lines: a heading per scenario, then per metric one bar per
/// run (labelled with the run when there are several).
fn lines(c: &Comparison) -> Vec<Line<'_>> {
    let others = c.runs.len() - 1;
    let mut lines: Vec<Line> = Vec::new();
    let mut last = None;
    for r in &c.rows {
        if last != Some(&r.scenario) {
            lines.push((None, 0, r.scenario.clone()));
            last = Some(&r.scenario);
        }
        for i in 1..c.runs.len() {
            let label = if others > 1 {
                format!("{} — {}", r.metric, c.runs[i])
            } else {
                r.metric.clone()
            };
            lines.push((Some(r), i, label));
        }
    }
    lines
}

/// The height a line takes.
fn height_of(l: &Line) -> f64 {
    if l.0.is_some() {
        ROW
    } else {
        HEAD
    }
}

/// Draws `cell`'s bar of `row` centred at `mid` (with its whiskers, the
/// axis clipped at `span`), and says in words what it shows.
fn draw_bar(
    s: &mut Svg,
    frame: &svg::Frame,
    span: f64,
    row: &Row,
    cell: &Cell,
    mid: f64,
) -> String {
    match (bar(row, cell), cell.verdict) {
        (_, Verdict::NotComparable) => match &cell.not_comparable {
            Some(why) => format!("not comparable: {why}"),
            None => "not comparable".into(),
        },
        (_, Verdict::Missing) | (None, _) => "missing".into(),
        (Some(b), v) => {
            let color = match v {
                Verdict::Better => BETTER,
                Verdict::Worse => WORSE,
                _ => UNDECIDED,
            };
            let zero = frame.px(0.0);
            let clip = |f: f64| f.log2().clamp(-span, span);
            let end = frame.px(clip(b.f));
            s.rect(zero, mid - 6.0, end - zero, 12.0, color, "");
            if let Some((lo, hi)) = b.ci {
                let (a, z) = (frame.px(clip(lo)), frame.px(clip(hi)));
                s.line(a, mid, z, mid, INK, 1.2);
                s.line(a, mid - 4.0, a, mid + 4.0, INK, 1.2);
                s.line(z, mid - 4.0, z, mid + 4.0, INK, 1.2);
            }
            match v {
                Verdict::Better | Verdict::Worse => factor_text(b.f),
                Verdict::Unknown => format!(
                    "{}, {} vs {} sample(s)",
                    factor_text(b.f),
                    row.cells[0].samples,
                    cell.samples
                ),
                _ => format!("{}, {}", factor_text(b.f), verdict_words(cell)),
            }
        }
    }
}

/// Draws one line at `y`: a scenario's heading, or a metric's label, bar
/// and words.
fn draw_line(s: &mut Svg, frame: &svg::Frame, span: f64, line: &Line, y: f64) {
    let h = height_of(line);
    let Some(row) = line.0 else {
        s.bold(
            16.0,
            y + h - 8.0,
            12.5,
            Anchor::Start,
            &svg::fit(&line.2, WIDTH - 32.0, 12.5),
        );
        s.line(16.0, y + h - 3.0, WIDTH - 16.0, y + h - 3.0, GRID, 1.0);
        return;
    };
    let cell = &row.cells[line.1];
    let mid = y + h / 2.0;
    s.text(
        LABELS,
        mid + 4.0,
        11.5,
        Anchor::End,
        INK,
        &svg::fit(
            &format!("{}{}", line.2, marks_suffix(&cell.marks)),
            LABELS - 24.0,
            11.5,
        ),
    );
    let words = draw_bar(s, frame, span, row, cell, mid);
    s.text(
        PLOT1 + 10.0,
        mid + 4.0,
        11.0,
        Anchor::Start,
        MUTED,
        &svg::fit(&words, WIDTH - PLOT1 - 20.0, 11.0),
    );
}

/// The change chart of several runs against the first.
fn changes(c: &Comparison, names: &mut Names) -> Chart {
    let base = &c.runs[0];
    let others = c.runs.len() - 1;
    let widest = widest(c);
    let span = widest * 1.08;
    let lines = lines(c);
    let title = if others == 1 {
        format!("Change of {} against {base}", c.runs[1])
    } else {
        format!("Change of each run against {base}")
    };
    let sub = vec![
        format!(
            "Each bar: the run's median as a factor of the baseline's ({base}), pointing right when better and left when worse, whichever way the metric counts (log scale)."
        ),
        "Whiskers: the 95% interval of the ratio. Green: better, red: worse (the interval excludes 1); grey: within noise, or fewer than 3 samples on a side (no verdict: run with --repeat 3).".to_string(),
    ];
    let mut s = Svg::new(WIDTH, 0.0);
    let top = svg::heading(&mut s, WIDTH, &title, &sub) + 8.0;
    let plot_h: f64 = lines.iter().map(height_of).sum();
    let frame = svg::Frame {
        x0: PLOT0,
        y0: top,
        x1: PLOT1,
        y1: top + plot_h,
        x: factor_axis(widest),
        y: Axis::fixed(0.0, 1.0, Vec::new()),
    };
    for (v, _) in &frame.x.ticks {
        let x = frame.px(*v);
        s.line(x, frame.y0, x, frame.y1, GRID, 1.0);
    }
    let mut y = top;
    for line in &lines {
        draw_line(&mut s, &frame, span, line, y);
        y += height_of(line);
    }
    let zero = frame.px(0.0);
    s.line(zero, frame.y0, zero, frame.y1, INK, 1.2);
    for (v, l) in &frame.x.ticks {
        s.text(frame.px(*v), frame.y1 + 16.0, 11.0, Anchor::Middle, INK, l);
    }
    s.text(
        (PLOT0 + PLOT1) / 2.0,
        frame.y1 + 34.0,
        12.0,
        Anchor::Middle,
        MUTED,
        "← worse · change against the baseline (log scale) · better →",
    );
    s.set_height(frame.y1 + 48.0);
    Chart {
        file: names.take("change"),
        kind: Kind::Change,
        title: title.clone(),
        scenario: None,
        svg: s.finish(&title),
    }
}

fn values(docs: &[RunDocument], c: &Comparison, names: &mut Names) -> Option<Chart> {
    // Units in first-seen order, each with its rows.
    let mut groups: Vec<(String, Vec<&Row>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for r in c.rows.iter().filter(|r| r.cells[0].value.is_some()) {
        match at.get(r.unit.as_str()) {
            Some(g) => groups[*g].1.push(r),
            None => {
                at.insert(&r.unit, groups.len());
                groups.push((r.unit.clone(), vec![r]));
            }
        }
    }
    if groups.is_empty() {
        return None;
    }
    let run = &c.runs[0];
    let title = format!("Metrics of {run}");
    let repeats = docs
        .first()
        .map(|d| d.scenarios.iter().map(|s| s.repeat).max().unwrap_or(1))
        .unwrap_or(1);
    let sub = vec![
        "One run: each metric's value (median of its samples), grouped by unit, each group on an axis of its own from 0.".to_string(),
        format!(
            "No ratio without a second run to compare with; {}.",
            if repeats > 1 {
                format!("up to {repeats} samples per metric")
            } else {
                "one sample per metric".into()
            }
        ),
    ];
    let mut s = Svg::new(WIDTH, 0.0);
    let mut y = svg::heading(&mut s, WIDTH, &title, &sub) + 4.0;
    for (unit, rows) in &groups {
        let vals: Vec<f64> = rows.iter().filter_map(|r| r.cells[0].value).collect();
        let lo = vals.iter().copied().fold(0.0, f64::min);
        let hi = vals.iter().copied().fold(0.0, f64::max);
        let axis = Axis::linear(lo, hi, unit, 4, true);
        let unit_name = if unit.is_empty() { "(no unit)" } else { unit };
        s.bold(
            16.0,
            y + 18.0,
            12.5,
            Anchor::Start,
            &svg::fit(unit_name, LABELS - 20.0, 12.5),
        );
        let frame = svg::Frame {
            x0: PLOT0,
            y0: y + 26.0,
            x1: PLOT1 + 80.0,
            y1: y + 26.0 + rows.len() as f64 * ROW,
            x: axis,
            y: Axis::fixed(0.0, 1.0, Vec::new()),
        };
        for (v, l) in &frame.x.ticks {
            let x = frame.px(*v);
            s.line(x, frame.y0, x, frame.y1, GRID, 1.0);
            s.text(x, y + 20.0, 10.5, Anchor::Middle, MUTED, l);
        }
        let zero = frame.px(0.0);
        for (i, r) in rows.iter().enumerate() {
            let mid = frame.y0 + (i as f64 + 0.5) * ROW;
            let v = r.cells[0].value.unwrap_or(0.0);
            let scenario = r.scenario.rsplit('/').next().unwrap_or_default();
            let label = format!("{scenario} {}{}", r.metric, marks_suffix(&r.cells[0].marks));
            s.text(
                LABELS,
                mid + 4.0,
                11.5,
                Anchor::End,
                INK,
                &svg::fit(&label, LABELS - 24.0, 11.5),
            );
            let end = frame.px(v);
            s.rect(zero, mid - 6.0, end - zero, 12.0, svg::PALETTE[0], "");
            let shown = Scale::of(v, unit).show(v);
            s.text(
                end.max(zero) + 6.0,
                mid + 4.0,
                11.0,
                Anchor::Start,
                MUTED,
                &shown,
            );
        }
        s.line(zero, frame.y0, zero, frame.y1, INK, 1.0);
        y = frame.y1 + 6.0;
    }
    s.set_height(y + 12.0);
    Some(Chart {
        file: names.take("values"),
        kind: Kind::Values,
        title: title.clone(),
        scenario: None,
        svg: s.finish(&title),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::comparison::COMPARE_SCHEMA;

    fn cell(value: f64, ratio: Option<f64>, verdict: Verdict) -> Cell {
        Cell {
            value: Some(value),
            samples: 3,
            sample_values: Vec::new(),
            ratio,
            ratio_ci: ratio.map(|r| (r * 0.9, r * 1.1)),
            verdict,
            not_comparable: None,
            repeat_for_verdict: None,
            marks: Default::default(),
        }
    }

    fn row(metric: &str, better: Better, base: f64, ratio: f64, verdict: Verdict) -> Row {
        Row {
            scenario: "p/s".into(),
            metric: metric.into(),
            unit: "x".into(),
            better,
            cells: vec![
                cell(base, Some(1.0), Verdict::Baseline),
                cell(base * ratio, Some(ratio), verdict),
            ],
        }
    }

    #[test]
    fn bars_point_right_when_better_and_left_when_worse_whichever_way_a_metric_counts() {
        // copy_seconds ×2.37 is worse (longer bar to the left), reads ×0.2
        // is worse too, IOPS ×1.5 and latency ×0.5 are better.
        let r = [
            row("copy_seconds", Better::Lower, 1.0, 2.37, Verdict::Worse),
            row("reads_per_sec", Better::Higher, 100.0, 0.2, Verdict::Worse),
            row("iops", Better::Higher, 100.0, 1.5, Verdict::Better),
            row("lat", Better::Lower, 100.0, 0.5, Verdict::Better),
        ];
        let f: Vec<f64> = r.iter().map(|r| bar(r, &r.cells[1]).unwrap().f).collect();
        assert!(
            f[0] < 1.0 && f[1] < 1.0 && f[2] > 1.0 && f[3] > 1.0,
            "{f:?}"
        );
        assert_eq!(factor_text(f[0]), "2.37× worse");
        assert_eq!(factor_text(f[1]), "5.00× worse");
        assert_eq!(factor_text(f[3]), "2.00× better");
        // The interval follows the bar: a worse figure's lies left of 1.
        let (lo, hi) = bar(&r[0], &r[0].cells[1]).unwrap().ci.unwrap();
        assert!(lo < hi && hi < 1.0, "{lo} {hi}");
        let c = Comparison {
            schema: COMPARE_SCHEMA,
            runs: vec!["a".into(), "b".into()],
            rows: r.to_vec(),
        };
        let chart = chart(&[], &c, &mut Names::default()).unwrap();
        assert_eq!(chart.kind, Kind::Change);
        // One bar per metric and run: no baseline bars.
        assert_eq!(chart.svg.matches("<rect").count(), 1 + r.len());
        for (text, color) in [("2.37× worse", WORSE), ("1.50× better", BETTER)] {
            assert!(chart.svg.contains(text), "{text}");
            assert!(chart.svg.contains(color));
        }
    }

    #[test]
    fn one_run_gets_values_by_unit_not_ratios() {
        let mut r = row("iops", Better::Higher, 100.0, 1.0, Verdict::Baseline);
        r.cells.truncate(1);
        let c = Comparison {
            schema: COMPARE_SCHEMA,
            runs: vec!["a".into()],
            rows: vec![r],
        };
        let chart = chart(&[], &c, &mut Names::default()).unwrap();
        assert_eq!(chart.kind, Kind::Values);
        assert_eq!(chart.file, "values.svg");
        assert!(!chart.svg.contains("better") && chart.svg.contains("100 x"));
    }
}
