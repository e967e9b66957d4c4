//! fio's steady state (`ss=`): a time-based job stops once its throughput
//! has settled over a window.

use std::time::Duration;

/// What is watched: IOPS or bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteadyMetric {
    /// I/Os per second.
    Iops,
    /// Bytes per second.
    Bw,
}

/// How far the window's samples may stray: a percentage of their mean, or
/// an absolute amount (IOPS, or bytes per second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SteadyLimit {
    /// Percent of the window's mean.
    Percent(f64),
    /// In the metric's own unit.
    Absolute(f64),
}

/// `ss`, `ss_dur`, `ss_ramp`, `ss_interval`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyOpts {
    /// IOPS or bandwidth.
    pub metric: SteadyMetric,
    /// True for `_slope`: the best-fit line's slope is bounded, else the
    /// largest deviation from the mean.
    pub slope: bool,
    /// The bound.
    pub limit: SteadyLimit,
    /// `ss_dur`: the window's length.
    pub dur: Duration,
    /// `ss_ramp`: time before the first sample.
    pub ramp: Duration,
    /// `ss_interval`: time between samples (fio's default: 1 s).
    pub interval: Duration,
}

impl SteadyOpts {
    /// Samples in a window (at least 2).
    pub fn window(&self) -> usize {
        let n = self.dur.as_nanos() / self.interval.as_nanos().max(1);
        usize::try_from(n).unwrap_or(usize::MAX).max(2)
    }

    /// fio's name of the criterion (`iops`, `bw_slope` …) with its bound,
    /// as fio's JSON writes it (`iops:10.000000%`).
    pub fn describe(&self) -> String {
        let metric = match (self.metric, self.slope) {
            (SteadyMetric::Iops, false) => "iops",
            (SteadyMetric::Iops, true) => "iops_slope",
            (SteadyMetric::Bw, false) => "bw",
            (SteadyMetric::Bw, true) => "bw_slope",
        };
        match self.limit {
            SteadyLimit::Percent(p) => format!("{metric}:{p:.6}%"),
            SteadyLimit::Absolute(a) => format!("{metric}:{a:.6}"),
        }
    }
}
