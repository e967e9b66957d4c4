//! Memory primitives: bandwidth as `sysbench memory` measures it (block
//! size, total size, scope, read/write, plus copy) and the access latency by
//! working-set size from a random pointer chase, which shows the cache levels.

mod bandwidth;
mod latency;

pub use bandwidth::{
    bandwidth, BandwidthError, BandwidthOptions, BandwidthResult, InvalidBandwidth, NameError,
    Oper, Scope,
};
pub use latency::{
    latency_curve, InvalidLatency, LatencyError, LatencyOptions, LatencyPoint, LatencyResult,
    Plateau,
};
