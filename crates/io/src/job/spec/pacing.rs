//! When I/Os are issued and when jobs start and stop: think time, rate
//! processes, flows, start delays, `wait_for`, `exitall` and the latency target.

/// The job's pacing options, with fio's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pacing {}
