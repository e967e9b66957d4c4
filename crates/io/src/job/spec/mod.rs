//! `JobSpec`: one job described with fio's option names, typed and validated.

mod data;
mod engine;
mod logs;
mod pacing;
mod pattern;
mod placement;
mod steady;
mod verify;

pub use data::{DataOpts, DedupeMode};
pub use engine::{CpuMode, EngineOpts, NetProtocol, StatType};
pub use logs::{LogOpts, LogWindow};
pub use pacing::{ErrorClasses, ExitWhat, Pacing, RateProcess, SubmitMode, ThinkCount};
pub use pattern::{
    AccessZone, Fallocate, FileService, PatternOpts, Sequencer, UnifiedReporting, ZoneMode,
    ZoneSplit, Zones,
};
pub use placement::{CpusPolicy, MemPolicy, Placement};
pub use steady::{SteadyLimit, SteadyMetric, SteadyOpts};
pub use verify::VerifyOpts;

use crate::units::SizeSpec;
use std::time::Duration;

/// Direction of one I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    /// A read.
    Read = 0,
    /// A write.
    Write = 1,
}

impl Dir {
    /// Both directions, reads first (fio's order).
    pub const BOTH: [Dir; 2] = [Dir::Read, Dir::Write];

    /// Index into per-direction arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The lowercase name used in results (`read`, `write`).
    pub fn name(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
        }
    }
}

/// The I/O pattern (`rw=` / `readwrite=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Sequential mixed reads and writes.
    ReadWrite,
    /// Random mixed reads and writes.
    RandRw,
}

impl Pattern {
    /// Parses fio's names for the pattern.
    pub fn parse(text: &str) -> Option<Pattern> {
        Some(match text {
            "read" => Pattern::Read,
            "write" => Pattern::Write,
            "randread" => Pattern::RandRead,
            "randwrite" => Pattern::RandWrite,
            "rw" | "readwrite" => Pattern::ReadWrite,
            "randrw" => Pattern::RandRw,
            _ => return None,
        })
    }

    /// fio's canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Read => "read",
            Pattern::Write => "write",
            Pattern::RandRead => "randread",
            Pattern::RandWrite => "randwrite",
            Pattern::ReadWrite => "rw",
            Pattern::RandRw => "randrw",
        }
    }

    /// True when offsets are random.
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Pattern::RandRead | Pattern::RandWrite | Pattern::RandRw
        )
    }

    /// True when the job issues I/O in this direction.
    pub fn does(self, dir: Dir) -> bool {
        match dir {
            Dir::Read => !matches!(self, Pattern::Write | Pattern::RandWrite),
            Dir::Write => !matches!(self, Pattern::Read | Pattern::RandRead),
        }
    }

    /// True when the job mixes reads and writes.
    pub fn is_mixed(self) -> bool {
        matches!(self, Pattern::ReadWrite | Pattern::RandRw)
    }
}

/// How offsets of random I/O are distributed (`random_distribution=`).
#[derive(Debug, Clone, PartialEq)]
pub enum Distribution {
    /// Uniform over the region.
    Uniform,
    /// Zipf with exponent θ over the blocks.
    Zipf(f64),
    /// Pareto with fio's parameter h (0 < h < 1): `pareto:0.2` sends 80% of I/O to 20% of blocks.
    Pareto(f64),
    /// Normal around the middle with σ in percent of the region.
    Normal(f64),
    /// `zoned:` / `zoned_abs:`: shares of the accesses to consecutive zones
    /// of the region, per direction.
    Zoned(Box<ZoneSplit>),
}

/// The block sizes of one direction.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockSize {
    /// Every I/O has this size.
    Fixed(u64),
    /// A random multiple of the minimum between `min` and `max` (`bsrange=`).
    Range(u64, u64),
    /// Weighted sizes (`bssplit=`): (size, percent) pairs summing to 100.
    Split(Vec<(u64, u32)>),
}

impl BlockSize {
    /// The smallest size this choice can produce.
    pub fn min(&self) -> u64 {
        match self {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range(lo, _) => *lo,
            BlockSize::Split(v) => v.iter().map(|(b, _)| *b).min().unwrap_or(4096),
        }
    }

    /// The largest size this choice can produce.
    pub fn max(&self) -> u64 {
        match self {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range(_, hi) => *hi,
            BlockSize::Split(v) => v.iter().map(|(b, _)| *b).max().unwrap_or(4096),
        }
    }
}

/// Data verification (`verify=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// No verification.
    None,
    /// Each block carries a header and a crc32c of its payload.
    Crc32c,
}

/// One job, with fio's option names and fio's defaults.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// `name`: the job's name, also the base of its file names.
    pub name: String,
    /// `filename`: one or more files (`:`-separated); default `name.jobnum.filenum`.
    pub filename: Option<String>,
    /// `directory`: where files go; default the current directory.
    pub directory: Option<String>,
    /// `size`: total bytes of the job's region across its files.
    pub size: Option<SizeSpec>,
    /// `filesize`: size of each file (else `size / nrfiles`).
    pub filesize: Option<SizeSpec>,
    /// `io_size`: bytes to transfer per loop; default `size`.
    pub io_size: Option<SizeSpec>,
    /// `offset`: where the region starts in each file.
    pub offset: SizeSpec,
    /// `nrfiles`: files per job.
    pub nrfiles: u32,
    /// `rw`: the pattern.
    pub rw: Pattern,
    /// `rwmixread`: percent of reads in mixed patterns.
    pub rwmixread: u32,
    /// `bs`, `bsrange`, `bssplit`: block sizes per direction (read, write).
    pub bs: [BlockSize; 2],
    /// `ioengine`: the engine's name.
    pub ioengine: String,
    /// `iodepth`: I/Os in flight for async engines.
    pub iodepth: u32,
    /// `iodepth_batch_submit`: submit after this many queued I/Os (0 means 1, as in fio).
    pub iodepth_batch_submit: u32,
    /// `direct`: O_DIRECT.
    pub direct: bool,
    /// `numjobs`: clones of this job.
    pub numjobs: u32,
    /// `group_reporting`: report clones (and the group) as one.
    pub group_reporting: bool,
    /// `runtime`: stop after this long.
    pub runtime: Option<Duration>,
    /// `time_based`: run for `runtime` even when the region is done.
    pub time_based: bool,
    /// `ramp_time`: run this long before statistics start.
    pub ramp_time: Duration,
    /// `loops`: repeat the job this many times.
    pub loops: u32,
    /// `fsync`: fsync after this many writes (0 = never).
    pub fsync: u32,
    /// `fdatasync`: fdatasync after this many writes (0 = never).
    pub fdatasync: u32,
    /// `end_fsync`: fsync the files when the job ends.
    pub end_fsync: bool,
    /// `random_distribution`.
    pub random_distribution: Distribution,
    /// `randrepeat`: seed the generators the same way every run.
    pub randrepeat: bool,
    /// `randseed`: the seed when `randrepeat` is set.
    pub randseed: u64,
    /// `norandommap`: random offsets may repeat before every block is touched.
    pub norandommap: bool,
    /// `rate_iops`: IOPS cap per direction.
    pub rate_iops: [Option<u64>; 2],
    /// `rate`: bytes per second cap per direction.
    pub rate: [Option<u64>; 2],
    /// `thread`: accepted; plumb always runs jobs as threads.
    pub thread: bool,
    /// `unlink`: delete the files when the job ends.
    pub unlink: bool,
    /// `verify`: data verification method.
    pub verify: Verify,
    /// `do_verify`: read back and verify after writing.
    pub do_verify: bool,
    /// `stonewall` / `wait_for_previous`: wait for earlier jobs; starts a new group.
    pub stonewall: bool,
    /// `new_group`: start a new reporting group.
    pub new_group: bool,
    /// `invalidate`: drop the files' page cache before the job.
    pub invalidate: bool,
    /// `create_only`: lay out files and stop.
    pub create_only: bool,
    /// `write_iolog`: record every I/O issued to this file (fio's iolog v2).
    pub write_iolog: Option<String>,
    /// Offsets, files and directions beyond `rw` and `bs`.
    pub pattern: PatternOpts,
    /// When I/Os are issued and jobs start and stop.
    pub pacing: Pacing,
    /// Where the job's threads run, at what priority.
    pub placement: Placement,
    /// What the buffers hold and how they are allocated.
    pub data: DataOpts,
    /// Options of one engine.
    pub engine: EngineOpts,
    /// fio's bandwidth, IOPS and latency logs.
    pub logs: LogOpts,
    /// When and how strictly written data is verified.
    pub verify_opts: VerifyOpts,
    /// `ss=`: stop once the throughput has settled.
    pub steady: Option<SteadyOpts>,
    /// Every option as given, for reporting (`job options` in fio's JSON).
    pub given: Vec<(String, String)>,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            name: String::new(),
            filename: None,
            directory: None,
            size: None,
            filesize: None,
            io_size: None,
            offset: SizeSpec::Bytes(0),
            nrfiles: 1,
            rw: Pattern::Read,
            rwmixread: 50,
            bs: [BlockSize::Fixed(4096), BlockSize::Fixed(4096)],
            ioengine: "psync".into(),
            iodepth: 1,
            iodepth_batch_submit: 1,
            direct: false,
            numjobs: 1,
            group_reporting: false,
            runtime: None,
            time_based: false,
            ramp_time: Duration::ZERO,
            loops: 1,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            random_distribution: Distribution::Uniform,
            randrepeat: true,
            randseed: 0x89,
            norandommap: false,
            rate_iops: [None, None],
            rate: [None, None],
            thread: false,
            unlink: false,
            verify: Verify::None,
            do_verify: true,
            stonewall: false,
            new_group: false,
            invalidate: true,
            create_only: false,
            write_iolog: None,
            pattern: PatternOpts::default(),
            pacing: Pacing::default(),
            placement: Placement::default(),
            data: DataOpts::default(),
            engine: EngineOpts::default(),
            logs: LogOpts::default(),
            verify_opts: VerifyOpts::default(),
            steady: None,
            given: Vec::new(),
        }
    }
}

impl JobSpec {
    /// The smallest block size over the directions the job uses.
    pub fn min_bs(&self) -> u64 {
        Dir::BOTH
            .iter()
            .filter(|d| self.rw.does(**d))
            .map(|d| self.bs[d.index()].min())
            .min()
            .unwrap_or(4096)
    }

    /// The largest block size over the directions the job uses.
    pub fn max_bs(&self) -> u64 {
        Dir::BOTH
            .iter()
            .filter(|d| self.rw.does(**d))
            .map(|d| self.bs[d.index()].max())
            .max()
            .unwrap_or(4096)
    }

    /// Bytes of one queue slot's buffer: the largest block, page-aligned.
    pub fn slot_size(&self) -> u64 {
        self.max_bs().next_multiple_of(4096)
    }

    /// The most I/O buffer memory one clone allocates: a slot per queued I/O
    /// (an upper bound: synchronous engines use one slot).
    pub fn buffer_bytes_per_clone(&self) -> u64 {
        self.slot_size().saturating_mul(self.iodepth.max(1) as u64)
    }

    /// Percent of I/Os that are reads.
    pub fn read_percent(&self) -> u32 {
        match self.rw {
            Pattern::Read | Pattern::RandRead => 100,
            Pattern::Write | Pattern::RandWrite => 0,
            _ => self.rwmixread,
        }
    }
}
