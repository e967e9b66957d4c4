//! Options that belong to one engine: `cpuio`'s load, `pvsync2`'s
//! `hipri`, the network engine's peer, per-command priorities.

/// The job's engine options, with fio's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineOpts {}
