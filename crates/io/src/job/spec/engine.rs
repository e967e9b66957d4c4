//! Options that belong to one engine: `pvsync2`'s request flags,
//! `filestat`'s system call, `cpuio`'s load.

/// The job's engine options, with fio's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOpts {
    /// `hipri`: ask for polled completion (`RWF_HIPRI`, pvsync2).
    pub hipri: bool,
    /// `hipri_percentage`: the share of I/Os `hipri` applies to (pvsync2).
    pub hipri_percentage: u32,
    /// `uncached`: buffered I/O that drops its pages once done
    /// (`RWF_DONTCACHE`, pvsync2; ignored with `direct=1`, as fio).
    pub uncached: bool,
    /// `nowait`: fail with `EAGAIN` instead of blocking (`RWF_NOWAIT`, pvsync2).
    pub nowait: bool,
    /// `stat_type`: the call `filestat` measures.
    pub stat_type: StatType,
    /// `cpuload`: the share of one CPU each `cpuio` thread burns (1-100).
    pub cpuload: u32,
    /// `cpumode`: what `cpuio` burns the CPU with.
    pub cpumode: CpuMode,
    /// `cpuchunks`: microseconds of one `cpuio` burst.
    pub cpuchunks: u32,
}

impl Default for EngineOpts {
    fn default() -> Self {
        EngineOpts {
            hipri: false,
            hipri_percentage: 100,
            uncached: false,
            nowait: false,
            stat_type: StatType::Stat,
            cpuload: 0,
            cpumode: CpuMode::Noop,
            cpuchunks: 50_000,
        }
    }
}

/// The call `filestat` times (`stat_type=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatType {
    /// `stat(2)`: follows a final symlink.
    Stat,
    /// `lstat(2)`: the symlink itself.
    Lstat,
    /// `statx(2)` with every field asked for.
    Statx,
}

/// How `cpuio` burns a CPU (`cpumode=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuMode {
    /// A spin on the clock.
    Noop,
    /// Sorting an array of random numbers, again and again, for the burst.
    Qsort,
}
