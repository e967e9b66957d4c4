//! Where a job's threads run and at what priority: CPU sets, NUMA
//! policies, I/O priority classes and nice.

/// The job's placement options, with fio's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placement {}
