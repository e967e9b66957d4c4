//! fio's steady-state detection (`ss=`): the job's throughput sampled every
//! `ss_interval` after `ss_ramp`, and the job stopped once the last
//! `ss_dur` of samples stay within the bound (fio's steadystate.c
//! criteria: the largest deviation from the window's mean, or the slope of
//! its least-squares line).
//!
//! The clones of a job with `group_reporting` are watched together (one
//! [`SteadyWatch`] they all add to, sampled by the first clone); otherwise
//! each clone is watched alone, as fio watches each thread.

use crate::job::spec::{SteadyLimit, SteadyMetric, SteadyOpts};
use crate::model::result::SteadyOutcome;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The counters a job's threads add to, and the judgement made from them.
#[derive(Debug)]
pub struct SteadyWatch {
    opts: SteadyOpts,
    ios: AtomicU64,
    bytes: AtomicU64,
    attained: AtomicBool,
    state: Mutex<Sampler>,
}

#[derive(Debug, Default)]
struct Sampler {
    /// (ios, bytes) at the last sample.
    last: (u64, u64),
    /// Time of the next sample, since the measured start.
    next: Duration,
    started: bool,
    window: VecDeque<(u64, u64)>,
    outcome: Option<SteadyOutcome>,
}

impl SteadyWatch {
    /// A watch for `opts`, or `None` when its window is 0 (not watched).
    pub fn new(opts: &SteadyOpts) -> Option<SteadyWatch> {
        (!opts.dur.is_zero()).then(|| SteadyWatch {
            opts: *opts,
            ios: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            attained: AtomicBool::new(false),
            state: Mutex::new(Sampler {
                next: opts.ramp,
                ..Sampler::default()
            }),
        })
    }

    /// Counts a completed I/O.
    #[inline]
    pub fn add(&self, bytes: u64) {
        self.ios.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// True once steady state is attained: the job's threads stop.
    #[inline]
    pub fn attained(&self) -> bool {
        self.attained.load(Ordering::Relaxed)
    }

    /// Takes a sample when one is due at `elapsed` (since the measured
    /// start) and judges the window once it is full.
    pub fn tick(&self, elapsed: Duration) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if elapsed < s.next {
            return;
        }
        let now = (
            self.ios.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        );
        if !s.started {
            // The ramp is over: the first sample counts from here.
            s.started = true;
            s.last = now;
            s.next = elapsed + self.opts.interval;
            return;
        }
        let secs = self.opts.interval.as_secs_f64();
        let sample = (
            ((now.0 - s.last.0) as f64 / secs) as u64,
            ((now.1 - s.last.1) as f64 / secs) as u64,
        );
        s.last = now;
        s.next += self.opts.interval;
        s.window.push_back(sample);
        let n = self.opts.window();
        while s.window.len() > n {
            s.window.pop_front();
        }
        let outcome = judge(&self.opts, &s.window, s.window.len() == n);
        if outcome.attained {
            self.attained.store(true, Ordering::Relaxed);
        }
        s.outcome = Some(outcome);
    }

    /// The last judgement (none before the first full sample).
    pub fn outcome(&self) -> Option<SteadyOutcome> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .outcome
            .clone()
    }
}

/// fio's judgement of a window: attained when `full` and within the bound.
fn judge(o: &SteadyOpts, window: &VecDeque<(u64, u64)>, full: bool) -> SteadyOutcome {
    let iops: Vec<u64> = window.iter().map(|s| s.0).collect();
    let bw: Vec<u64> = window.iter().map(|s| s.1).collect();
    let values: Vec<f64> = match o.metric {
        SteadyMetric::Iops => iops.iter().map(|v| *v as f64).collect(),
        SteadyMetric::Bw => bw.iter().map(|v| *v as f64).collect(),
    };
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let bound = match o.limit {
        SteadyLimit::Percent(p) => p / 100.0 * mean,
        SteadyLimit::Absolute(a) => a,
    };
    let as_criterion = |v: f64| match o.limit {
        SteadyLimit::Percent(_) if mean > 0.0 => format!("{:.6}%", v / mean * 100.0),
        SteadyLimit::Percent(_) => "0.000000%".to_string(),
        SteadyLimit::Absolute(_) => format!("{v:.6}"),
    };
    let (max_deviation, slope, figure) = if o.slope {
        let xm = (n - 1.0) / 2.0;
        let (mut num, mut den) = (0.0, 0.0);
        for (i, y) in values.iter().enumerate() {
            num += (i as f64 - xm) * (y - mean);
            den += (i as f64 - xm).powi(2);
        }
        let slope = if den > 0.0 { num / den } else { 0.0 };
        (0.0, slope, slope.abs())
    } else {
        let dev = values.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max);
        (dev, 0.0, dev)
    };
    SteadyOutcome {
        ss: o.describe(),
        duration: o.dur.as_secs(),
        attained: full && figure <= bound,
        criterion: as_criterion(figure),
        max_deviation,
        slope,
        bw_mean: (bw.iter().sum::<u64>() as f64 / n) as u64,
        iops_mean: (iops.iter().sum::<u64>() as f64 / n) as u64,
        iops,
        bw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(slope: bool, limit: SteadyLimit) -> SteadyOpts {
        SteadyOpts {
            metric: SteadyMetric::Iops,
            slope,
            limit,
            dur: Duration::from_secs(3),
            ramp: Duration::ZERO,
            interval: Duration::from_secs(1),
        }
    }

    #[test]
    fn deviation_and_slope_as_fio_judges_them() {
        let w: VecDeque<(u64, u64)> = [(100, 0), (105, 0), (95, 0)].into_iter().collect();
        let o = judge(&opts(false, SteadyLimit::Percent(10.0)), &w, true);
        assert!(o.attained);
        assert_eq!(o.max_deviation, 5.0);
        assert_eq!(o.criterion, "5.000000%");
        let o = judge(&opts(false, SteadyLimit::Percent(4.0)), &w, true);
        assert!(!o.attained);
        let rising: VecDeque<(u64, u64)> = [(100, 0), (110, 0), (120, 0)].into_iter().collect();
        let o = judge(&opts(true, SteadyLimit::Percent(5.0)), &rising, true);
        assert_eq!(o.slope, 10.0);
        assert!(!o.attained, "a slope of 10/s is 9% of the mean");
        assert!(judge(&opts(true, SteadyLimit::Absolute(10.0)), &rising, true).attained);
        assert!(!judge(&opts(true, SteadyLimit::Absolute(10.0)), &rising, false).attained);
    }

    #[test]
    fn samples_start_after_the_ramp() {
        let mut o = opts(false, SteadyLimit::Percent(50.0));
        o.ramp = Duration::from_secs(2);
        let w = SteadyWatch::new(&o).unwrap();
        for t in 0..8u64 {
            w.add(4096);
            w.tick(Duration::from_secs(t));
        }
        // Ramp to 2 s, first sample counts from 2 s; 3 samples by 5 s.
        assert!(w.attained());
        assert_eq!(w.outcome().unwrap().iops, vec![1, 1, 1]);
    }
}
