//! Where a job's threads run and at what priority: CPU sets, NUMA
//! policies, I/O priority classes and nice.

/// How the CPUs of `cpus_allowed`/`cpumask` are shared by the job's
/// threads (`cpus_allowed_policy=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpusPolicy {
    /// Every thread may run on every CPU of the set.
    #[default]
    Shared,
    /// Each thread gets one CPU of the set, round-robin by its number
    /// among the run's threads.
    Split,
}

/// A NUMA memory policy (`numa_mem_policy=`), applied to the job's threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemPolicy {
    /// The system's default policy.
    Default,
    /// Prefer this node, fall back to others.
    Prefer(u32),
    /// Only these nodes.
    Bind(Vec<u32>),
    /// Interleave pages over these nodes.
    Interleave(Vec<u32>),
    /// The node of the CPU that touches the page first.
    Local,
}

/// The job's placement options, with fio's defaults (nothing set: the
/// threads inherit plumb's own placement).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placement {
    /// `cpus_allowed` or `cpumask`: the CPUs, sorted.
    pub cpus: Option<Vec<u32>>,
    /// `cpus_allowed_policy`.
    pub cpus_policy: CpusPolicy,
    /// `numa_cpu_nodes`: run on these nodes' CPUs.
    pub numa_cpu_nodes: Option<Vec<u32>>,
    /// `numa_mem_policy`.
    pub numa_mem_policy: Option<MemPolicy>,
    /// `prio`: the I/O priority level (0 highest … 7).
    pub prio: Option<u32>,
    /// `prioclass`: the I/O priority class (1 RT, 2 BE, 3 IDLE; 0 none).
    pub prioclass: Option<u32>,
    /// `nice`: added to the thread's nice value.
    pub nice: Option<i32>,
}

impl Placement {
    /// True when no placement option was given: the job thread is left as it starts.
    pub fn is_default(&self) -> bool {
        *self == Placement::default()
    }
}
