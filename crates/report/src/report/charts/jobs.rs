//! Charts of job instances. An instance is a job in one scenario, one
//! case (its phase) and one run of the scenario (`--repeat`); two jobs of
//! one name in the same case and run are told apart by their order. Each
//! gets a latency chart and a timeline, titled with what it is, with one
//! line per run and direction: the same instance across result files is
//! drawn together.

use super::overlap::Overlaps;
use super::svg::{self, Axis, Entry, Frame, Svg, PALETTE};
use super::{file_part, title_part, Chart, Kind, Names};
use crate::model::document::{RunDocument, ScenarioResult};
use crate::model::result::JobResult;
use crate::report::run_table::shown_name;
use crate::stats::interval_of;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// What tells one job instance from another.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    /// The scenario as named on screen (`PACK/NAME`, or `NAME` when the
    /// pack is the scenario), shared by its jobs' keys.
    pub scenario: Arc<str>,
    /// The job's name.
    pub job: String,
    /// Its case (the phase it started in), if the scenario marked phases.
    pub case: Option<String>,
    /// Which run of the scenario (from 1).
    pub repeat: u32,
    /// Which of the jobs with all of the above (from 1).
    pub nth: usize,
}

impl Key {
    /// How the instance is named on its charts: `cloud-compare/fio-random ·
    /// fio · randread`, with the run of the scenario when it was repeated.
    /// Each name is cut to [`super::TITLE_NAME`] characters.
    pub fn title(&self, repeats: u32) -> String {
        let mut t = format!("{} · {}", title_part(&self.scenario), title_part(&self.job));
        if let Some(c) = &self.case {
            t.push_str(&format!(" · {}", title_part(c)));
        }
        if self.nth > 1 {
            t.push_str(&format!(" #{}", self.nth));
        }
        if repeats > 1 {
            t.push_str(&format!(" · run {} of {repeats}", self.repeat));
        }
        t
    }

    /// A file-name stem for it.
    fn stem(&self) -> String {
        let mut parts = vec![file_part(&self.scenario), file_part(&self.job)];
        if let Some(c) = &self.case {
            parts.push(file_part(c));
        }
        if self.repeat > 1 {
            parts.push(format!("r{}", self.repeat));
        }
        if self.nth > 1 {
            parts.push(self.nth.to_string());
        }
        parts.join("_")
    }
}

/// A job instance with its result in each run that has it.
pub struct Instance<'a> {
    /// What it is.
    pub key: Key,
    /// The scenario (of the first run that has it).
    pub scenario: &'a ScenarioResult,
    /// (run index, its result).
    pub jobs: Vec<(usize, &'a JobResult)>,
    /// Where its first result is: the scenario's index in its run's
    /// document, and the job's in the scenario.
    pub first: (usize, usize),
}

/// The keys of a scenario's jobs, in order: linear in its jobs (the jobs
/// of one name, case and run are counted as they come).
pub fn keys(s: &ScenarioResult) -> Vec<Key> {
    let scenario: Arc<str> = shown_name(s).into();
    let mut seen: HashMap<(&str, Option<&str>, u32), usize> = HashMap::new();
    s.jobs
        .iter()
        .map(|j| {
            let repeat = j.repeat.unwrap_or(1);
            let nth = seen
                .entry((j.name.as_str(), j.case.as_deref(), repeat))
                .or_insert(0);
            *nth += 1;
            Key {
                scenario: scenario.clone(),
                job: j.name.clone(),
                case: j.case.clone(),
                repeat,
                nth: *nth,
            }
        })
        .collect()
}

/// Every job instance of `docs`, in first-seen order: linear in their
/// jobs.
pub fn instances(docs: &[RunDocument]) -> Vec<Instance<'_>> {
    let mut out: Vec<Instance> = Vec::new();
    let mut at: HashMap<Key, usize> = HashMap::new();
    for (run, d) in docs.iter().enumerate() {
        for (si, s) in d.scenarios.iter().enumerate() {
            for (ji, (key, j)) in keys(s).into_iter().zip(&s.jobs).enumerate() {
                match at.get(&key) {
                    Some(i) => out[*i].jobs.push((run, j)),
                    None => {
                        at.insert(key.clone(), out.len());
                        out.push(Instance {
                            key,
                            scenario: s,
                            jobs: vec![(run, j)],
                            first: (si, ji),
                        });
                    }
                }
            }
        }
    }
    out
}

/// What the job was: its pattern, block size, depth, engine.
fn describe(j: &JobResult) -> String {
    let mut parts = vec![j.rw.clone()];
    if let Some(bs) = j.options.get("bs") {
        parts.push(format!("bs {bs}"));
    }
    parts.push(format!("QD{}", j.iodepth));
    if !j.ioengine.is_empty() {
        parts.push(j.ioengine.clone());
    }
    if j.jobs > 1 {
        parts.push(format!("{} threads", j.jobs));
    }
    if j.options
        .get("direct")
        .is_some_and(|v| v == "1" || v == "true")
    {
        parts.push("direct".into());
    }
    parts.join(", ")
}

/// The latency and timeline charts of every job instance.
pub fn charts(docs: &[RunDocument], runs: &[String], names: &mut Names) -> Vec<Chart> {
    let mut out = Vec::new();
    // The overlaps of each scenario's jobs, made once: (run, scenario).
    let mut overlaps: HashMap<(usize, usize), Overlaps> = HashMap::new();
    for inst in instances(docs) {
        let title = inst.key.title(inst.scenario.repeat);
        let stem = inst.key.stem();
        let (run, first) = inst.jobs[0];
        let mut about = vec![describe(first)];
        let (si, ji) = inst.first;
        let with = overlaps
            .entry((run, si))
            .or_insert_with(|| Overlaps::new(&inst.scenario.jobs))
            .beside(ji);
        if let Some(with) = with {
            about[0].push_str(&format!("; {}", with.text()));
        }
        out.push(Chart {
            file: names.take(&format!("latency-{stem}")),
            kind: Kind::Latency,
            title: format!("Latency: {title}"),
            scenario: Some(inst.key.scenario.clone()),
            svg: latency(&format!("Latency: {title}"), &about, &inst, runs),
        });
        out.push(Chart {
            file: names.take(&format!("timeline-{stem}")),
            kind: Kind::Timeline,
            title: format!("Timeline: {title}"),
            scenario: Some(inst.key.scenario.clone()),
            svg: timeline(&format!("Timeline: {title}"), &about, &inst, runs),
        });
    }
    out
}

/// The lines' names: the run and the direction.
fn line_name(runs: &[String], run: usize, dir: &str) -> String {
    match runs.get(run) {
        Some(r) => format!("{r} {dir}"),
        None => dir.to_string(),
    }
}

const WIDTH: f64 = 860.0;
const X0: f64 = 90.0;
const X1: f64 = 830.0;

/// Completion latency percentiles, one line per run and direction, on a
/// log axis from the decade under the smallest to the one over the largest.
fn latency(title: &str, about: &[String], inst: &Instance, runs: &[String]) -> String {
    const AT: [&str; 6] = ["p50", "p90", "p95", "p99", "p99.9", "p99.99"];
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (run, j) in &inst.jobs {
        for (name, d) in [("read", &j.read), ("write", &j.write)] {
            if d.total_ios == 0 || d.lat.samples == 0 {
                continue;
            }
            let l = &d.lat;
            let v = [l.p50, l.p90, l.p95, l.p99, l.p99_9, l.p99_99];
            let pts = v
                .iter()
                .enumerate()
                .filter(|(_, v)| **v > 0)
                .map(|(i, v)| (i as f64, *v as f64))
                .collect();
            lines.push((line_name(runs, *run, name), pts));
        }
    }
    let ys = || lines.iter().flat_map(|l| l.1.iter().map(|p| p.1));
    let lo = ys().fold(f64::INFINITY, f64::min);
    let hi = ys().fold(0.0, f64::max);
    let mut sub = about.to_vec();
    sub.push("Completion latency (issue to completion) at each percentile, log scale.".into());
    let mut s = Svg::new(WIDTH, 0.0);
    let top = svg::heading(&mut s, WIDTH, title, &sub) + 6.0;
    let ticks = AT
        .iter()
        .enumerate()
        .map(|(i, a)| (i as f64, a.to_string()))
        .collect();
    let frame = Frame {
        x0: X0,
        y0: top,
        x1: X1,
        y1: top + 280.0,
        x: Axis::fixed(-0.3, AT.len() as f64 - 0.7, ticks),
        y: Axis::log(if lo.is_finite() { lo } else { 1000.0 }, hi.max(1.0), "ns"),
    };
    frame.draw_axes(&mut s, "percentile", "completion latency");
    let mut legend: Vec<Entry> = Vec::new();
    for (i, (name, pts)) in lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let px = frame.plot(&mut s, pts, color);
        for (x, y) in &px {
            s.dot(*x, *y, 3.0, color);
        }
        legend.push((color.to_string(), false, name.clone()));
    }
    if lines.is_empty() {
        frame.say_empty(&mut s, "no I/O completed");
    }
    let bottom = svg::legend(&mut s, &legend, X0, X1, frame.y1 + 40.0);
    s.set_height(bottom + 8.0);
    s.finish(title)
}

/// A timeline's points as (seconds at the middle of the interval, rate),
/// each interval's count divided by its real length; a last partial
/// interval shorter than half the others is left out (too short to say a
/// rate, and no drop that did not happen). Also whether one was left out.
pub fn rate_points(j: &JobResult, dir: usize, bandwidth: bool) -> (Vec<(f64, f64)>, bool) {
    let interval = interval_of(&j.timeline);
    let mut dropped = false;
    let pts = j
        .timeline
        .iter()
        .filter(|p| {
            let keep = p.duration_ms > 0 && p.duration_ms.saturating_mul(2) >= interval;
            dropped |= !keep;
            keep
        })
        .map(|p| {
            let y = if bandwidth {
                p.bw_bytes(dir)
            } else {
                p.iops(dir)
            };
            ((p.t_ms as f64 + p.duration_ms as f64 / 2.0) / 1000.0, y)
        })
        .collect();
    (pts, dropped)
}

/// A named line: its points (seconds, value).
type Points = Vec<(f64, f64)>;

/// What a job instance's timeline draws.
struct RateLines {
    /// IOPS, one named line per run and direction.
    iops: Vec<(String, Points)>,
    /// Bandwidth, the same lines.
    bw: Vec<(String, Points)>,
    /// The lengths of the intervals, in ms, each once.
    intervals: BTreeSet<u64>,
    /// Whether a short last interval was left out.
    dropped: bool,
}

/// The IOPS and bandwidth lines of `inst`, one per run and direction.
fn rate_lines(inst: &Instance, runs: &[String]) -> RateLines {
    let mut iops: Vec<(String, Points)> = Vec::new();
    let mut bw: Vec<(String, Points)> = Vec::new();
    let mut dropped = false;
    let mut intervals = BTreeSet::new();
    for (run, j) in &inst.jobs {
        intervals.insert(interval_of(&j.timeline));
        for (di, name) in ["read", "write"].iter().enumerate() {
            if j.dir(di).total_ios == 0 {
                continue;
            }
            let (a, d1) = rate_points(j, di, false);
            let (b, _) = rate_points(j, di, true);
            dropped |= d1;
            let n = line_name(runs, *run, name);
            iops.push((n.clone(), a));
            bw.push((n, b));
        }
    }
    RateLines {
        iops,
        bw,
        intervals,
        dropped,
    }
}

/// The lines under the timeline's title: `about`, how often it was
/// sampled, and the final sync when the job has one.
fn timeline_notes(
    about: &[String],
    inst: &Instance,
    intervals: &BTreeSet<u64>,
    dropped: bool,
) -> Vec<String> {
    let every = intervals
        .iter()
        .map(|i| {
            if *i >= 1000 {
                "second".to_string()
            } else {
                format!("{i} ms")
            }
        })
        .collect::<Vec<_>>()
        .join(" or ");
    let mut sub = about.to_vec();
    sub.push(format!(
        "I/Os and bytes completed in each interval (every {every}) divided by its length, on the job's clock (0 = start of its measured part){}.",
        if dropped {
            "; a last interval shorter than half the others is not drawn"
        } else {
            ""
        }
    ));
    let synced = inst.jobs.iter().any(|(_, j)| {
        j.options
            .get("end_fsync")
            .is_some_and(|v| v == "1" || v == "true")
    });
    if synced {
        sub.push(
            "The job ends with end_fsync: intervals at 0 after its last read or write are its final sync, timed as fio times it.".into(),
        );
    }
    sub
}

/// The IOPS panel above the bandwidth one, `end` seconds wide, from `y`
/// down; the legend goes under them.
fn rate_panels(
    s: &mut Svg,
    iops: &[(String, Points)],
    bw: &[(String, Points)],
    end: f64,
    mut y: f64,
) -> f64 {
    let mut legend: Vec<Entry> = Vec::new();
    for (panel, (lines, unit, ytitle)) in [(iops, "IOPS", "IOPS"), (bw, "bytes/s", "bandwidth")]
        .into_iter()
        .enumerate()
    {
        let hi = lines
            .iter()
            .flat_map(|l| l.1.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        let frame = Frame {
            x0: X0,
            y0: y,
            x1: X1,
            y1: y + 170.0,
            x: Axis::linear(0.0, end, "s", 8, true),
            y: Axis::linear(0.0, hi * 1.08, unit, 4, panel == 1),
        };
        frame.draw_axes(
            s,
            if panel == 1 {
                "time since the job began"
            } else {
                ""
            },
            ytitle,
        );
        for (i, (name, pts)) in lines.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let px = frame.plot(s, pts, color);
            if px.len() <= 40 {
                for (x, y) in &px {
                    s.dot(*x, *y, 2.5, color);
                }
            }
            if panel == 0 {
                legend.push((color.to_string(), false, name.clone()));
            }
        }
        if lines.iter().all(|l| l.1.is_empty()) {
            frame.say_empty(s, "no interval to draw");
        }
        y = frame.y1 + if panel == 0 { 30.0 } else { 40.0 };
    }
    svg::legend(s, &legend, X0, X1, y)
}

/// IOPS above, bandwidth below, over the job's own clock (0 when its
/// measured part began), one line per run and direction.
fn timeline(title: &str, about: &[String], inst: &Instance, runs: &[String]) -> String {
    let lines = rate_lines(inst, runs);
    let sub = timeline_notes(about, inst, &lines.intervals, lines.dropped);
    let end = inst
        .jobs
        .iter()
        .flat_map(|(_, j)| {
            j.timeline
                .iter()
                .map(|p| (p.t_ms + p.duration_ms) as f64 / 1000.0)
        })
        .fold(0.0, f64::max)
        .max(0.1);
    let mut s = Svg::new(WIDTH, 0.0);
    let y = svg::heading(&mut s, WIDTH, title, &sub) + 6.0;
    let bottom = rate_panels(&mut s, &lines.iops, &lines.bw, end, y);
    s.set_height(bottom + 8.0);
    s.finish(title)
}
