//! The sequence of I/Os: file, direction (rwmix), size and offset
//! (sequential, or random under a distribution), within a byte budget.
//!
//! A plain job (files in turn, every I/O sequential or every I/O random)
//! runs the short path here; fio's pattern options (`rw=read:-8k`,
//! `randread:8`, `percentage_random`, strided zones, `number_ios`,
//! `file_service_type`, per-direction `blockalign`) run [`Shape`]'s, chosen
//! once when the generator is built.

use super::chooser::{BlockChooser, DistributionError};
use super::shaped::Shape;
use super::BlockSizePicker;
use crate::job::spec::{Dir, JobSpec};
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// The part of a file a job works on.
#[derive(Debug, Clone, Copy)]
pub struct Region {
    /// First byte.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
}

/// The next I/O to issue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NextIo {
    /// Index of the file.
    pub file: u32,
    /// Read or write.
    pub dir: Dir,
    /// Absolute offset in the file.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}

/// One file's region and where the job is in it.
pub(super) struct FileState {
    pub(super) region: Region,
    /// Random blocks in the region (or in a zone, with strided zones).
    pub(super) blocks: u64,
    /// The plain path's next sequential offset per direction, relative.
    pub(super) seq: [u64; 2],
    pub(super) chooser: Option<BlockChooser>,
}

/// Generates the I/Os of one job clone.
pub struct OffsetGenerator {
    pub(super) files: Vec<FileState>,
    pub(super) random: bool,
    read_pct: u32,
    mixed: bool,
    only_dir: Dir,
    pub(super) pickers: [BlockSizePicker; 2],
    /// Alignment of random offsets (`blockalign`, else the smallest block).
    pub(super) align: u64,
    pub(super) rng: SmallRng,
    next_file: usize,
    pub(super) remaining: Option<u64>,
    /// fio's pattern options, when the job has any.
    shape: Option<Box<Shape>>,
}

impl OffsetGenerator {
    /// Builds the generator for `job` over `regions`, issuing at most `budget` bytes.
    ///
    /// Fails when the job's distribution cannot be built over a region (a
    /// parameter the option parser should already have refused).
    pub fn new(
        job: &JobSpec,
        regions: &[Region],
        budget: Option<u64>,
        seed: u64,
    ) -> Result<Self, DistributionError> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let random = job.rw.is_random();
        let align = Shape::random_align(job);
        let zones = job
            .pattern
            .zones(job.pattern.open_files(regions.len() as u64));
        let files = regions
            .iter()
            .map(|r| {
                // With strided zones, random offsets fall in the current zone.
                let span = zones.map_or(r.len, |z| z.range.min(r.len));
                let blocks = (span / align).max(1);
                let chooser = random
                    .then(|| {
                        BlockChooser::new(
                            &job.random_distribution,
                            job.norandommap,
                            job.pattern.random_base,
                            blocks,
                            align,
                            &mut rng,
                        )
                    })
                    .transpose()?;
                Ok(FileState {
                    region: *r,
                    blocks,
                    seq: [0; 2],
                    chooser,
                })
            })
            .collect::<Result<_, DistributionError>>()?;
        Ok(OffsetGenerator {
            files,
            random,
            read_pct: job.read_percent(),
            mixed: job.rw.is_mixed(),
            only_dir: if job.rw.does(Dir::Read) {
                Dir::Read
            } else {
                Dir::Write
            },
            pickers: [
                BlockSizePicker::new(&job.bs[0], job.pattern.bs_unaligned),
                BlockSizePicker::new(&job.bs[1], job.pattern.bs_unaligned),
            ],
            align,
            rng,
            next_file: 0,
            remaining: budget,
            shape: Shape::new(job, regions, budget).map(Box::new),
        })
    }

    /// Bytes still to issue, or `None` when unbounded (time based).
    pub fn remaining(&self) -> Option<u64> {
        self.remaining
    }

    /// The direction of the next I/O (rwmix).
    #[inline]
    pub(super) fn next_dir(&mut self) -> Dir {
        if self.mixed {
            if self.rng.random_range(0..100u32) < self.read_pct {
                Dir::Read
            } else {
                Dir::Write
            }
        } else {
            self.only_dir
        }
    }

    /// Draws the next I/O, or `None` when the job is done (its byte budget
    /// spent, or with fio's pattern options its I/O count or its files).
    #[inline]
    pub fn next_io(&mut self) -> Option<NextIo> {
        if let Some(mut shape) = self.shape.take() {
            let io = shape.next_io(self);
            self.shape = Some(shape);
            return io;
        }
        let dir = self.next_dir();
        let mut len = self.pickers[dir.index()].pick(&mut self.rng);
        if let Some(rem) = self.remaining {
            if rem == 0 {
                return None;
            }
            len = len.min(rem);
            self.remaining = Some(rem - len);
        }
        let fi = self.next_file;
        self.next_file = if fi + 1 == self.files.len() {
            0
        } else {
            fi + 1
        };
        let f = &mut self.files[fi];
        len = len.min(f.region.len);
        let rel = if self.random {
            let block =
                f.chooser
                    .as_mut()
                    .expect("random file state")
                    .next(f.blocks, dir, &mut self.rng);
            let mut rel = block * self.align;
            if rel + len > f.region.len {
                rel = (f.region.len - len) / self.align * self.align;
            }
            rel
        } else {
            let d = dir.index();
            let mut rel = f.seq[d];
            if rel + len > f.region.len {
                rel = 0;
            }
            f.seq[d] = rel + len;
            rel
        };
        Some(NextIo {
            file: fi as u32,
            dir,
            offset: f.region.start + rel,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::options::apply;

    fn job(opts: &[(&str, &str)]) -> JobSpec {
        let mut j = JobSpec {
            name: "t".into(),
            ..JobSpec::default()
        };
        for (k, v) in opts {
            apply(&mut j, k, Some(v)).unwrap();
        }
        j
    }

    #[test]
    fn a_zipf_theta_the_parser_would_refuse_is_an_error_not_a_panic() {
        let mut j = job(&[("rw", "randread"), ("bs", "4k")]);
        j.random_distribution = crate::job::spec::Distribution::Zipf(f64::NAN);
        let region = Region {
            start: 0,
            len: 4096 * 10,
        };
        assert!(OffsetGenerator::new(&j, &[region], None, 1).is_err());
    }

    #[test]
    fn random_map_touches_each_block_once() {
        let j = job(&[("rw", "randread"), ("bs", "4k")]);
        let mut g = OffsetGenerator::new(
            &j,
            &[Region {
                start: 0,
                len: 4096 * 1000,
            }],
            Some(4096 * 1000),
            1,
        )
        .unwrap();
        let mut seen = std::collections::HashSet::new();
        while let Some(io) = g.next_io() {
            assert_eq!(io.offset % 4096, 0);
            assert!(seen.insert(io.offset));
        }
        assert_eq!(seen.len(), 1000);
    }

    #[test]
    fn sequential_mixed_keeps_a_position_per_direction() {
        let j = job(&[("rw", "rw"), ("bs", "4k")]);
        let mut g = OffsetGenerator::new(
            &j,
            &[Region {
                start: 8192,
                len: 4096 * 8,
            }],
            Some(4096 * 8),
            1,
        )
        .unwrap();
        let mut next = [8192u64, 8192];
        while let Some(io) = g.next_io() {
            assert_eq!(io.offset, next[io.dir.index()]);
            next[io.dir.index()] += 4096;
        }
    }

    #[test]
    fn budget_is_exact() {
        let j = job(&[("rw", "randrw"), ("bssplit", "4k/50:64k/50")]);
        let mut g = OffsetGenerator::new(
            &j,
            &[Region {
                start: 0,
                len: 1 << 24,
            }],
            Some(1 << 24),
            1,
        )
        .unwrap();
        let mut total = 0;
        while let Some(io) = g.next_io() {
            assert!(io.offset + io.len <= 1 << 24);
            total += io.len;
        }
        assert_eq!(total, 1 << 24);
    }
}
