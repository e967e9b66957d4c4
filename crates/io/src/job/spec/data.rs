//! What the written buffers hold: patterns, refills, compressibility and
//! dedupe ratios, and how the buffers are allocated (`iomem`).

/// The job's data options, with fio's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataOpts {}
