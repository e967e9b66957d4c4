//! CPU time of the calling thread (`getrusage(RUSAGE_THREAD)`).

use std::time::Duration;

/// User and system CPU time plus context switches.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuUsage {
    /// Time in user mode.
    pub user: Duration,
    /// Time in the kernel.
    pub system: Duration,
    /// Voluntary and involuntary context switches.
    pub ctx_switches: u64,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
}

impl CpuUsage {
    /// Reads the calling thread's usage so far.
    pub fn thread_now() -> CpuUsage {
        // SAFETY: getrusage fills the zeroed struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        CpuUsage {
            user: tv(ru.ru_utime),
            system: tv(ru.ru_stime),
            ctx_switches: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
            minor_faults: ru.ru_minflt as u64,
            major_faults: ru.ru_majflt as u64,
        }
    }

    /// Usage between `earlier` and `self`.
    pub fn since(&self, earlier: &CpuUsage) -> CpuUsage {
        CpuUsage {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
            ctx_switches: self.ctx_switches.saturating_sub(earlier.ctx_switches),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
        }
    }

    /// Sum of two usages (threads of one job).
    pub fn add(&self, other: &CpuUsage) -> CpuUsage {
        CpuUsage {
            user: self.user + other.user,
            system: self.system + other.system,
            ctx_switches: self.ctx_switches + other.ctx_switches,
            minor_faults: self.minor_faults + other.minor_faults,
            major_faults: self.major_faults + other.major_faults,
        }
    }
}
