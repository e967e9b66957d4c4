//! How offsets, files and directions are chosen beyond `rw`/`bs`: fio's
//! `rw=` modifiers, zones, alignment, file service and trims.

use crate::units::SizeSpec;

/// What the I/Os between two random ones do (`rw_sequencer=`), when
/// `rw=randread:N` asks for a random offset only every N I/Os.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sequencer {
    /// Continue where the last I/O of that direction ended.
    #[default]
    Sequential,
    /// Repeat the last I/O's offset.
    Identical,
}

/// fio's `zonemode=`: how the region is cut into zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZoneMode {
    /// No zones.
    #[default]
    None,
    /// `zonesize` bytes in a zone of `zonerange`, then skip `zoneskip`.
    Strided,
}

/// The strided zones (`zonemode=strided`): every `size` bytes of I/O, the
/// zone start moves by `range + skip`; inside a zone the I/O covers at
/// most `range` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zones {
    /// `zonesize`: bytes of I/O done in a zone before moving on.
    pub size: u64,
    /// `zonerange`: the length of a zone (default `zonesize`).
    pub range: u64,
    /// `zoneskip`: bytes skipped after each zone.
    pub skip: u64,
}

/// One zone of a `zoned`/`zoned_abs` distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessZone {
    /// Percent of the accesses that fall in this zone (the zones sum to 100).
    pub access_pct: u32,
    /// Its length: percent of the region (`zoned`) or bytes (`zoned_abs`).
    pub size: u64,
}

/// A `zoned`/`zoned_abs` distribution: consecutive zones from the start of
/// the region, per direction (read, write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneSplit {
    /// True for `zoned_abs` (sizes in bytes), false for `zoned` (percent).
    pub absolute: bool,
    /// The zones of reads and of writes.
    pub zones: [Vec<AccessZone>; 2],
}

/// How the next file is chosen (`file_service_type=`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum FileService {
    /// Each file in turn.
    #[default]
    RoundRobin,
    /// One file until it is done, then the next.
    Sequential,
    /// A uniformly random file.
    Random,
    /// Files ranked by a zipf distribution of exponent θ.
    Zipf(f64),
    /// Files ranked by fio's pareto with parameter h.
    Pareto(f64),
    /// Files ranked by a normal distribution of σ percent of the files.
    Normal(f64),
}

/// How files are allocated when laid out (`fallocate=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fallocate {
    /// `none` / `0`: only set the size; blocks are allocated by the I/O.
    None,
    /// `native` / `posix` / `1` (fio's default on Linux): reserve the blocks.
    #[default]
    Posix,
    /// `keep`: reserve the blocks without changing the file's size.
    Keep,
    /// `truncate`: only set the size (`ftruncate`).
    Truncate,
}

/// Whether reads and writes are also reported together (`unified_rw_reporting=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnifiedReporting {
    /// `none` / `0`: per direction only.
    #[default]
    None,
    /// `mixed` / `1`: one `mixed` direction instead of read and write.
    Mixed,
    /// `both`: the directions and the `mixed` sum.
    Both,
}

/// The job's pattern options, with fio's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternOpts {
    /// `rw=read:-8k` / `rw=write:112k`: bytes added to the offset after each
    /// sequential I/O (negative: backwards; positive: holes).
    pub seq_add: i64,
    /// `rw=randread:N`: a random offset every N I/Os; the ones between follow
    /// `rw_sequencer`.
    pub seq_nr: u32,
    /// `rw_sequencer`.
    pub sequencer: Sequencer,
    /// `zonemode`.
    pub zonemode: ZoneMode,
    /// `zonesize`, `zonerange`, `zoneskip` as given (checked in `validate`).
    pub zone_size: u64,
    /// `zonerange`.
    pub zone_range: u64,
    /// `zoneskip`.
    pub zone_skip: u64,
    /// `blockalign` / `ba`: alignment of random offsets per direction
    /// (`None`: the direction's smallest block size).
    pub blockalign: [Option<u64>; 2],
    /// `bs_unaligned`: sizes drawn from `bsrange` need not be multiples of
    /// the smallest one.
    pub bs_unaligned: bool,
    /// `offset_increment`: clone N's region starts N × this further.
    pub offset_increment: SizeSpec,
    /// `number_ios`: stop after this many I/Os (0: no limit).
    pub number_ios: u64,
    /// `percentage_random`: percent of random I/Os per direction (random
    /// patterns only; the rest are sequential).
    pub percentage_random: [u32; 2],
    /// `file_service_type`: how the next file is chosen.
    pub file_service: FileService,
    /// `file_service_type=...:N`: I/Os on a file before switching (≥ 1).
    pub file_service_nr: u32,
    /// `filename_format`: how files are named (`$jobname`, `$jobnum`,
    /// `$filenum`, `$clientuid`).
    pub filename_format: Option<String>,
    /// `openfiles`: at most this many files open at once (0: all).
    pub openfiles: u32,
    /// `create_on_open`: create files when the job opens them.
    pub create_on_open: bool,
    /// `fallocate`: how layout allocates files a job only writes.
    pub fallocate: Fallocate,
    /// `unified_rw_reporting`.
    pub unified_rw_reporting: UnifiedReporting,
    /// `random_distribution=zipf:θ:base` (pareto, normal too): where the
    /// hottest block lands, as a fraction of the region (fio's center);
    /// `None`: a place drawn from the seed.
    pub random_base: Option<f64>,
}

impl PatternOpts {
    /// Files open at once for a job with `files` files (`openfiles`, at
    /// most `files`; all of them by default).
    pub fn open_files(&self, files: u64) -> u64 {
        match self.openfiles {
            0 => files,
            n => u64::from(n).min(files),
        }
    }

    /// The strided zones the job runs in, if any: `zonemode=strided`,
    /// `zonerange` defaulting to `zonesize`. Like fio, only a job with one
    /// open file uses them.
    pub fn zones(&self, open_files: u64) -> Option<Zones> {
        (self.zonemode == ZoneMode::Strided && self.zone_size > 0 && open_files == 1).then_some(
            Zones {
                size: self.zone_size,
                range: if self.zone_range == 0 {
                    self.zone_size
                } else {
                    self.zone_range
                },
                skip: self.zone_skip,
            },
        )
    }
}

impl Default for PatternOpts {
    fn default() -> Self {
        PatternOpts {
            seq_add: 0,
            seq_nr: 1,
            sequencer: Sequencer::Sequential,
            zonemode: ZoneMode::None,
            zone_size: 0,
            zone_range: 0,
            zone_skip: 0,
            blockalign: [None, None],
            bs_unaligned: false,
            offset_increment: SizeSpec::Bytes(0),
            number_ios: 0,
            percentage_random: [100, 100],
            file_service: FileService::RoundRobin,
            file_service_nr: 1,
            filename_format: None,
            openfiles: 0,
            create_on_open: false,
            fallocate: Fallocate::Posix,
            unified_rw_reporting: UnifiedReporting::None,
            random_base: None,
        }
    }
}
