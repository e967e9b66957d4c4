//! fio's pattern options, applied I/O by I/O: the `rw=` modifiers
//! (`read:-8k`, `write:112k`, `randread:8` with `rw_sequencer`),
//! `percentage_random`, strided zones, per-direction `blockalign`,
//! `number_ios`, `file_service_type`, and fio's end of a file (a pattern
//! that runs off its region finishes the file; when every file is done
//! the loop ends, and the next `loops` round starts from the beginning).
//!
//! The rules follow fio's `get_next_seq_offset`, `get_next_block`,
//! `setup_strided_zone_mode` and `__get_next_file` so that the offsets a
//! job issues are the offsets fio issues for the same options.

use super::chooser::BlockChooser;
use super::offsets::{NextIo, OffsetGenerator, Region};
use crate::job::spec::{Dir, Distribution, FileService, JobSpec, Sequencer, Zones};
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// fio's position in one file.
#[derive(Debug, Clone)]
struct Position {
    /// Where the region starts (fio's start offset).
    start: u64,
    /// Where the current zone starts (fio's `file_offset`): `start`, or
    /// further on with strided zones.
    base: u64,
    /// The region's length (fio's per-file `io_size`).
    len: u64,
    /// The end of the file as the job sees it (the region's end).
    end: u64,
    /// Per direction: where the last I/O ended (absolute).
    last_pos: [u64; 2],
    /// Per direction: where the last I/O started (absolute).
    last_start: [Option<u64>; 2],
    /// Ran off its region: no more I/O this loop.
    done: bool,
}

impl Position {
    fn new(r: &Region) -> Position {
        Position {
            start: r.start,
            base: r.start,
            len: r.len,
            end: r.start.saturating_add(r.len),
            last_pos: [r.start; 2],
            last_start: [None; 2],
            done: false,
        }
    }

    /// Back to the start of the region, as at the start of a loop.
    fn reset(&mut self) {
        self.base = self.start;
        self.last_pos = [self.start; 2];
        self.last_start = [None; 2];
        self.done = false;
    }
}

/// How the next file is picked, and the picker's state.
struct FilePicker {
    service: FileService,
    /// I/Os per pick (`file_service_type=...:N`).
    per_pick: u32,
    /// I/Os left on the current file before picking again.
    left: u32,
    current: Option<usize>,
    /// Round robin's next candidate.
    next: usize,
    /// For zipf, pareto and normal: the file's rank.
    skew: Option<BlockChooser>,
    /// Files that get I/O at once (`openfiles`): a file joins when fewer
    /// are open, and leaves when it is done.
    open_limit: usize,
    open: Vec<bool>,
    open_count: usize,
}

impl FilePicker {
    /// Whether file `f` can take the next I/O: it is open, or there is
    /// room to open it.
    fn can_use(&self, f: usize, done: bool) -> bool {
        !done && (self.open[f] || self.open_count < self.open_limit)
    }

    /// Uses file `f` from now on (opens it if it is not).
    fn take(&mut self, f: usize) {
        if !self.open[f] {
            self.open[f] = true;
            self.open_count += 1;
        }
        self.current = Some(f);
        self.left = self.per_pick - 1;
    }

    /// File `f` is done with: it no longer counts as open.
    fn close(&mut self, f: usize) {
        if self.open[f] {
            self.open[f] = false;
            self.open_count -= 1;
        }
        if self.current == Some(f) {
            self.current = None;
        }
    }
}

/// The state of fio's pattern options for one job clone.
pub(super) struct Shape {
    seq_add: i64,
    seq_nr: u32,
    /// I/Os until the next random one (fio's `td->ddir_seq_nr`).
    seq_left: u32,
    sequencer: Sequencer,
    pct_random: [u32; 2],
    /// Alignment of random offsets per direction.
    dir_align: [u64; 2],
    zones: Option<Zones>,
    /// Bytes done in the current zone (fio's `td->zone_bytes`).
    zone_bytes: u64,
    /// I/Os per loop (`number_ios`; 0: no limit).
    number_ios: u64,
    loop_ios: u64,
    /// Bytes per loop, and left in this one (`None`: time based).
    per_loop: Option<u64>,
    loop_left: Option<u64>,
    loops_left: u32,
    /// A sequential position that reaches the region's end starts over
    /// (fio: time based with one file, or `io_size` above `size`).
    wrap_at_end: bool,
    files: Vec<Position>,
    done_files: usize,
    picker: FilePicker,
}

impl Shape {
    /// The alignment random offsets are drawn at: the smallest of the
    /// directions' `blockalign` (each defaulting to the smallest block).
    pub(super) fn random_align(job: &JobSpec) -> u64 {
        Self::dir_align(job)
            .into_iter()
            .zip(Dir::BOTH)
            .filter(|(_, d)| job.rw.does(*d))
            .map(|(a, _)| a)
            .min()
            .unwrap_or(4096)
            .max(1)
    }

    fn dir_align(job: &JobSpec) -> [u64; 2] {
        let min = job.min_bs();
        [
            job.pattern.blockalign[0].unwrap_or(min),
            job.pattern.blockalign[1].unwrap_or(min),
        ]
    }

    /// The shape of `job` over `regions` with `budget` bytes in all, or
    /// `None` for a plain job (the generator's short path does the same).
    pub(super) fn new(job: &JobSpec, regions: &[Region], budget: Option<u64>) -> Option<Shape> {
        let p = &job.pattern;
        let random = job.rw.is_random();
        let used = |d: Dir| job.rw.does(d);
        let dir_align = Self::dir_align(job);
        let open_limit = p.open_files(regions.len() as u64);
        let zones = p.zones(open_limit);
        let plain = p.seq_add == 0
            && (!random
                || (p.seq_nr == 1
                    && Dir::BOTH
                        .iter()
                        .all(|d| !used(*d) || p.percentage_random[d.index()] == 100)))
            && zones.is_none()
            && p.number_ios == 0
            && (regions.len() == 1
                || (p.file_service == FileService::RoundRobin
                    && p.file_service_nr == 1
                    && open_limit == regions.len() as u64))
            && (!(used(Dir::Read) && used(Dir::Write)) || dir_align[0] == dir_align[1]);
        if plain {
            return None;
        }
        let loops = job.loops.max(1);
        let per_loop = budget.map(|b| b / u64::from(loops));
        let total: u64 = regions.iter().map(|r| r.len).sum();
        let n = regions.len() as u64;
        let skew = |d: Distribution| {
            // Files ranked by the distribution over the file count.
            let mut rng = SmallRng::seed_from_u64(job.randseed ^ 0xf11e);
            BlockChooser::new(&d, true, None, n.max(1), 1, &mut rng).ok()
        };
        let skewed = match p.file_service {
            FileService::Zipf(t) => skew(Distribution::Zipf(t)),
            FileService::Pareto(h) => skew(Distribution::Pareto(h)),
            FileService::Normal(s) => skew(Distribution::Normal(s)),
            _ => None,
        };
        Some(Shape {
            seq_add: p.seq_add,
            seq_nr: p.seq_nr.max(1),
            seq_left: 1,
            sequencer: p.sequencer,
            pct_random: p.percentage_random,
            dir_align,
            zones,
            zone_bytes: 0,
            number_ios: p.number_ios,
            loop_ios: 0,
            per_loop,
            loop_left: per_loop,
            loops_left: loops - 1,
            wrap_at_end: (job.time_based && regions.len() == 1)
                || per_loop.is_some_and(|b| b > total),
            files: regions.iter().map(Position::new).collect(),
            done_files: 0,
            picker: FilePicker {
                service: p.file_service,
                per_pick: p.file_service_nr.max(1),
                left: 0,
                current: None,
                next: 0,
                skew: skewed,
                open_limit: open_limit as usize,
                open: vec![false; regions.len()],
                open_count: 0,
            },
        })
    }

    /// The next I/O of the job, or `None` when it is done.
    pub(super) fn next_io(&mut self, g: &mut OffsetGenerator) -> Option<NextIo> {
        // A loop that starts and issues nothing would start again forever.
        let mut fresh_loops = 0;
        loop {
            let spent = self.loop_left == Some(0)
                || (self.number_ios > 0 && self.loop_ios >= self.number_ios);
            if !spent {
                let dir = g.next_dir();
                let want = g.pickers[dir.index()].pick(&mut g.rng);
                let want = self.loop_left.map_or(want, |left| want.min(left));
                if let Some(io) = self.place(g, dir, want) {
                    self.account(g, &io);
                    return Some(io);
                }
            }
            fresh_loops += 1;
            if fresh_loops > 1 || !self.next_loop() {
                return None;
            }
        }
    }

    /// Starts the next loop (`loops`, or a time-based job's next round),
    /// or says there is none.
    fn next_loop(&mut self) -> bool {
        match self.per_loop {
            Some(_) if self.loops_left == 0 => return false,
            Some(_) => self.loops_left -= 1,
            None => {}
        }
        self.loop_left = self.per_loop;
        self.loop_ios = 0;
        self.zone_bytes = 0;
        self.done_files = 0;
        self.picker.next = 0;
        for f in 0..self.files.len() {
            self.picker.close(f);
        }
        self.files.iter_mut().for_each(Position::reset);
        true
    }

    /// Counts an I/O about to be issued.
    fn account(&mut self, g: &mut OffsetGenerator, io: &NextIo) {
        let p = &mut self.files[io.file as usize];
        p.last_start[io.dir.index()] = Some(io.offset);
        p.last_pos[io.dir.index()] = io.offset + io.len;
        self.zone_bytes = self.zone_bytes.saturating_add(io.len);
        self.loop_ios += 1;
        if let Some(left) = &mut self.loop_left {
            *left -= io.len;
        }
        if let Some(rem) = &mut g.remaining {
            *rem = rem.saturating_sub(io.len);
        }
    }

    /// An I/O of `want` bytes in `dir` on the file the service picks;
    /// files that ran off their region are done (with a skewed service,
    /// start over), and the next is tried. `None` when every file is done.
    fn place(&mut self, g: &mut OffsetGenerator, dir: Dir, want: u64) -> Option<NextIo> {
        let nonuniform = self.picker.skew.is_some();
        // Each file can end once per call; a skewed service's file may
        // also start over once.
        for _ in 0..=self.files.len() * 2 {
            let fi = self.pick_file(g)?;
            if let Some(io) = self.offset_in(g, fi, dir, want) {
                return Some(io);
            }
            if nonuniform {
                if self.files[fi].last_start == [None; 2] {
                    // Starting over did not help: the file has no room.
                    return None;
                }
                self.files[fi].reset();
            } else {
                self.files[fi].done = true;
                self.done_files += 1;
                self.picker.close(fi);
            }
        }
        None
    }

    /// The file of the next I/O (fio's `__get_next_file`).
    fn pick_file(&mut self, g: &mut OffsetGenerator) -> Option<usize> {
        let n = self.files.len();
        if self.done_files >= n {
            return None;
        }
        let pk = &mut self.picker;
        if let Some(c) = pk.current.filter(|c| !self.files[*c].done) {
            if pk.service == FileService::Sequential {
                return Some(c);
            }
            if pk.left > 0 {
                pk.left -= 1;
                return Some(c);
            }
        }
        let files = &self.files;
        let f = match (&mut pk.skew, pk.service) {
            (Some(skew), _) => skew.next(n as u64, Dir::Read, &mut g.rng) as usize,
            (None, FileService::Random) => {
                let first = g.rng.random_range(0..n);
                // The first usable file from a random place: uniform
                // while all are usable, always an answer when some are.
                let usable = |f: &usize| pk.can_use(*f, files[*f].done);
                (0..n).map(|i| (first + i) % n).find(usable)?
            }
            _ => {
                let usable = |f: &usize| pk.can_use(*f, files[*f].done);
                let f = (0..n).map(|i| (pk.next + i) % n).find(usable)?;
                pk.next = (f + 1) % n;
                f
            }
        };
        pk.take(f);
        Some(f)
    }

    /// The I/O on file `fi`, or `None` when the file is done (fio's
    /// `fill_io_u` for one file).
    fn offset_in(
        &mut self,
        g: &mut OffsetGenerator,
        fi: usize,
        dir: Dir,
        want: u64,
    ) -> Option<NextIo> {
        let d = dir.index();
        if let Some(z) = self.zones {
            let p = &mut self.files[fi];
            if self.zone_bytes >= z.size {
                self.zone_bytes = 0;
                p.base = p.base.saturating_add(z.range).saturating_add(z.skip);
                if p.base >= p.end {
                    p.base = p.start;
                }
                p.last_pos[d] = p.base;
            }
            if p.last_pos[d] >= p.base.saturating_add(z.range) {
                p.last_pos[d] = p.base;
            }
        }
        let rel = if g.random {
            let hit = if self.seq_nr > 1 {
                self.seq_left -= 1;
                if self.seq_left == 0 {
                    self.seq_left = self.seq_nr;
                    true
                } else {
                    false
                }
            } else {
                true
            };
            let pct = self.pct_random[d];
            if hit && (pct == 100 || g.rng.random_range(1..=100u32) <= pct) {
                self.random_rel(g, fi, dir, want)
            } else if !hit && self.sequencer == Sequencer::Identical {
                let p = &self.files[fi];
                p.last_start[d].map_or(0, |s| s.wrapping_sub(p.base))
            } else {
                match self.seq_rel(fi, dir) {
                    Some(rel) => rel,
                    None => self.random_rel(g, fi, dir, want),
                }
            }
        } else {
            self.seq_rel(fi, dir)?
        };
        let p = &self.files[fi];
        if rel >= p.len {
            return None;
        }
        let offset = p.base.checked_add(rel).filter(|o| *o < p.end)?;
        let room = p.end - offset;
        let mut len = want;
        if len > room {
            // A size from a range or split that does not fit gives way to
            // the largest multiple of the smallest that does (fio's
            // io_u_fits); a fixed size does not fit at all.
            let min = g.pickers[d].min();
            if room < min {
                return None;
            }
            len = room / min * min;
        }
        Some(NextIo {
            file: fi as u32,
            dir,
            offset,
            len,
        })
    }

    /// The next sequential offset in file `fi`, relative to its zone
    /// (fio's `get_next_seq_offset`, with its wrap rules for `rw=...:±N`).
    fn seq_rel(&mut self, fi: usize, dir: Dir) -> Option<u64> {
        let d = dir.index();
        let add = self.seq_add;
        let p = &mut self.files[fi];
        if self.wrap_at_end && p.last_pos[d] >= p.start.saturating_add(p.len) {
            p.last_pos[d] = p.base;
        }
        if p.last_pos[d] >= p.end {
            return None;
        }
        // Backwards from a region that does not start the file: fio
        // starts from the region's length.
        if p.last_pos[d] == p.base && p.base != 0 && add < 0 {
            p.last_pos[d] = p.len.min(p.end);
        }
        let mut pos = p.last_pos[d].wrapping_sub(p.base);
        if pos != 0 && add != 0 {
            pos = pos.wrapping_add(add as u64);
            if pos >= p.end {
                // Past either end: forwards to the start, backwards to the end.
                pos = if add > 0 {
                    p.base
                } else {
                    p.len.min(p.end).wrapping_add(add as u64)
                };
            }
        }
        Some(pos)
    }

    /// A random offset in file `fi` (in its zone), relative to the zone,
    /// aligned for `dir`, with room for `len` bytes.
    fn random_rel(&mut self, g: &mut OffsetGenerator, fi: usize, dir: Dir, len: u64) -> u64 {
        let f = &mut g.files[fi];
        let block = match &mut f.chooser {
            Some(c) => c.next(f.blocks, dir, &mut g.rng),
            None => 0,
        };
        let align = self.dir_align[dir.index()].max(1);
        let span = self
            .zones
            .map_or(f.region.len, |z| z.range.min(f.region.len));
        let mut rel = block.saturating_mul(g.align);
        rel -= rel % align;
        if rel.saturating_add(len) > span {
            rel = span.saturating_sub(len) / align * align;
        }
        rel
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::options::{apply, validate};

    /// A validated job from options, or `None` when the options refuse it.
    fn job(opts: &[(&str, &str)]) -> Option<JobSpec> {
        let mut j = JobSpec {
            name: "t".into(),
            ..JobSpec::default()
        };
        for (k, v) in opts {
            apply(&mut j, k, Some(v)).ok()?;
        }
        validate(&j).ok()?;
        Some(j)
    }

    /// Every combination of hostile pattern values the options accept
    /// issues I/O inside its regions, ends, and never panics.
    #[test]
    fn hostile_shapes_stay_inside_their_regions() {
        let rws = [
            "read:-8k",
            "read:-8E",
            "write:7E",
            "read:1",
            "randread:4294967295",
            "randrw:2",
            "rw:-4k",
        ];
        let extras: &[&[(&str, &str)]] = &[
            &[],
            &[
                ("zonemode", "strided"),
                ("zonesize", "8E"),
                ("zoneskip", "8E"),
            ],
            &[
                ("zonemode", "strided"),
                ("zonesize", "4k"),
                ("zonerange", "8E"),
            ],
            &[
                ("zonemode", "strided"),
                ("zonesize", "4k"),
                ("zonerange", "4k"),
                ("zoneskip", "1"),
            ],
            &[("ba", "1g,512")],
            &[("bsrange", "512-64k"), ("bs_unaligned", "1")],
            &[("number_ios", "18446744073709551615")],
            &[("percentage_random", "1,99")],
            &[("file_service_type", "zipf:100")],
            &[
                ("file_service_type", "random:1073741824"),
                ("openfiles", "1"),
            ],
            &[("random_distribution", "zoned_abs:1/8E:99/1")],
        ];
        let regions = [
            Region {
                start: 0,
                len: 4096,
            },
            Region {
                start: (1 << 62) - (1 << 20),
                len: 1 << 20,
            },
            Region {
                start: 12288,
                len: 64 << 10,
            },
        ];
        for rw in rws {
            for extra in extras {
                let mut opts = vec![("rw", rw), ("bs", "4k")];
                opts.extend_from_slice(extra);
                let Some(j) = job(&opts) else { continue };
                for budget in [Some(1 << 20), None] {
                    let mut g = OffsetGenerator::new(&j, &regions, budget, 7).unwrap();
                    for _ in 0..5000 {
                        let Some(io) = g.next_io() else { break };
                        let r = regions[io.file as usize];
                        assert!(
                            io.offset >= r.start && io.offset + io.len <= r.start + r.len,
                            "{opts:?}: {io:?} outside {r:?}"
                        );
                        assert!(io.len > 0, "{opts:?}: {io:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn loops_restart_a_pattern_that_ends_its_file() {
        // fio: past the region but inside the file, the file is done; the
        // next loop starts it again (checked against fio 3.33's iolog).
        let j = job(&[("rw", "write:12k"), ("bs", "4k"), ("loops", "3")]).unwrap();
        let r = Region {
            start: 16 << 10,
            len: 64 << 10,
        };
        let mut g = OffsetGenerator::new(&j, &[r], Some(3 * (64 << 10)), 1).unwrap();
        let offsets: Vec<u64> = std::iter::from_fn(|| g.next_io())
            .map(|io| io.offset / 4096)
            .collect();
        assert_eq!(offsets, [4, 8, 12, 16].repeat(3));
        // Past the file's end, fio wraps to the start instead: the budget ends it.
        let r = Region {
            start: 0,
            len: 64 << 10,
        };
        let mut g = OffsetGenerator::new(&j, &[r], Some(3 * (64 << 10)), 1).unwrap();
        let offsets: Vec<u64> = std::iter::from_fn(|| g.next_io())
            .map(|io| io.offset / 4096)
            .collect();
        assert_eq!(offsets, [0, 4, 8, 12].repeat(12));
    }
}
