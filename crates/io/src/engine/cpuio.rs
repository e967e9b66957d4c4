//! `cpuio`: each I/O is a burst of `cpuchunks` microseconds of CPU work
//! (a spin on the clock, or `cpumode=qsort`: sorting random numbers) that
//! moves no data; the runner paces the bursts so each thread burns
//! `cpuload` percent of a CPU ([`pacing`]), as fio's think time between
//! its bursts does. fio counts the bursts as reads of 0 bytes whose
//! latency is the burst; so does plumb.

use super::{Completion, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest};
use crate::job::spec::{CpuMode, EngineOpts};
use rand::{rngs::SmallRng, RngCore, SeedableRng};
use std::io;
use std::time::{Duration, Instant};

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "cpuio",
    caps: EngineCaps {
        is_async: false,
        diskless: true,
        by_path: false,
        own_latency: false,
    },
    create,
};

/// Numbers sorted per round in `qsort` mode: a round takes about 0.1 ms,
/// so a burst overshoots its length by about that.
const QSORT_LEN: usize = 1 << 12;

/// The byte rate that spaces bursts of `len`-byte I/Os so a thread is busy
/// `cpuload` percent of the time: one burst of `cpuchunks` µs every
/// `cpuchunks × 100 / cpuload` µs. Rounded to the nearest byte per second.
pub fn pacing(opts: &EngineOpts, len: u64) -> u64 {
    let period_us = u128::from(opts.cpuchunks) * 100;
    let per_sec = u128::from(len) * 1_000_000 * u128::from(opts.cpuload.max(1));
    u64::try_from((per_sec + period_us / 2) / period_us.max(1))
        .unwrap_or(u64::MAX)
        .max(1)
}

struct CpuIo {
    chunk: Duration,
    mode: CpuMode,
    /// `qsort`: the numbers as drawn, and the copy sorted each round.
    data: Vec<u32>,
    work: Vec<u32>,
}

fn create(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    let o = &setup.options;
    let (data, work) = match o.cpumode {
        CpuMode::Noop => (Vec::new(), Vec::new()),
        CpuMode::Qsort => {
            let mut rng = SmallRng::seed_from_u64(521_288_629);
            let data: Vec<u32> = (0..QSORT_LEN).map(|_| rng.next_u32()).collect();
            (data, vec![0; QSORT_LEN])
        }
    };
    Ok(Box::new(CpuIo {
        chunk: Duration::from_micros(u64::from(o.cpuchunks)),
        mode: o.cpumode,
        data,
        work,
    }))
}

/// The CPU time this thread has used.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// How many times its length a burst may last in wall time.
const WALL_LIMIT: u32 = 10;

/// How long the burst works between two looks at the thread's CPU time.
const STEP: Duration = Duration::from_micros(100);

impl CpuIo {
    /// Works for about `STEP` of wall time.
    fn step(&mut self) {
        let start = Instant::now();
        match self.mode {
            CpuMode::Noop => {
                while start.elapsed() < STEP {
                    std::hint::spin_loop();
                }
            }
            CpuMode::Qsort => {
                self.work.copy_from_slice(&self.data);
                self.work.sort_unstable();
                std::hint::black_box(&self.work);
            }
        }
    }
}

impl IoEngine for CpuIo {
    /// One burst: works until the thread has used `cpuchunks` of CPU time
    /// (not of wall time: on a busy machine a burst takes longer, but each
    /// still burns what it should), or [`WALL_LIMIT`] times that in wall
    /// time (at most a second more), so a thread the scheduler starves
    /// still sees the job's end.
    fn queue(&mut self, _req: &IoRequest) -> io::Result<Option<i64>> {
        let wall = Instant::now();
        let until = thread_cpu() + self.chunk;
        let wall_limit = (self.chunk * WALL_LIMIT).min(self.chunk + Duration::from_secs(1));
        while thread_cpu() < until && wall.elapsed() < wall_limit {
            self.step();
        }
        Ok(Some(0))
    }

    fn submit(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _max: u32, _out: &mut Vec<Completion>) -> io::Result<()> {
        Ok(())
    }
}
