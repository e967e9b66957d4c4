//! The sequence of I/Os: file (round robin), direction (rwmix), size and offset
//! (sequential, or random under a distribution), within a byte budget.

use super::{BlockSizePicker, Permutation};
use crate::job::spec::{Dir, Distribution, JobSpec};
use rand::{rngs::SmallRng, Rng, RngCore, SeedableRng};
use rand_distr::{Distribution as _, Normal, Zipf};

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

enum BlockChooser {
    /// Every block once per pass (fio's random map).
    Map { perm: Permutation, pos: u64 },
    /// Uniform with repeats (`norandommap`).
    Uniform,
    /// Zipf rank, spread over the region by a fixed permutation.
    Zipf {
        zipf: Zipf<f64>,
        spread: Permutation,
    },
    /// fio's pareto: rank = (n-1)·u^(ln h / ln(1-h)).
    Pareto { power: f64, spread: Permutation },
    /// Normal around the middle of the region.
    Normal {
        normal: Normal<f64>,
        spread: Permutation,
    },
}

struct FileState {
    region: Region,
    blocks: u64,
    seq: [u64; 2],
    chooser: Option<BlockChooser>,
}

/// Generates the I/Os of one job clone.
pub struct OffsetGenerator {
    files: Vec<FileState>,
    random: bool,
    read_pct: u32,
    mixed: bool,
    only_dir: Dir,
    pickers: [BlockSizePicker; 2],
    align: u64,
    rng: SmallRng,
    next_file: usize,
    remaining: Option<u64>,
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
        let align = job.min_bs();
        let random = job.rw.is_random();
        let files = regions
            .iter()
            .map(|r| {
                let blocks = (r.len / align).max(1);
                let chooser = random
                    .then(|| make_chooser(job, blocks, &mut rng))
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
                BlockSizePicker::new(&job.bs[0]),
                BlockSizePicker::new(&job.bs[1]),
            ],
            align,
            rng,
            next_file: 0,
            remaining: budget,
        })
    }

    /// Bytes still to issue, or `None` when unbounded (time based).
    pub fn remaining(&self) -> Option<u64> {
        self.remaining
    }

    /// Draws the next I/O, or `None` when the byte budget is spent.
    #[inline]
    pub fn next_io(&mut self) -> Option<NextIo> {
        let dir = if self.mixed {
            if self.rng.random_range(0..100u32) < self.read_pct {
                Dir::Read
            } else {
                Dir::Write
            }
        } else {
            self.only_dir
        };
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
            let block = next_block(
                f.chooser.as_mut().expect("random file state"),
                f.blocks,
                &mut self.rng,
            );
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

/// A `random_distribution` whose parameters cannot describe a distribution.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("random_distribution {0:?} cannot be used over {1} blocks")]
pub struct DistributionError(Distribution, u64);

fn make_chooser(
    job: &JobSpec,
    blocks: u64,
    rng: &mut SmallRng,
) -> Result<BlockChooser, DistributionError> {
    let spread = Permutation::new(blocks, rng.next_u64());
    let bad = || DistributionError(job.random_distribution, blocks);
    Ok(match job.random_distribution {
        Distribution::Uniform if job.norandommap => BlockChooser::Uniform,
        Distribution::Uniform => BlockChooser::Map {
            perm: Permutation::new(blocks, rng.next_u64()),
            pos: 0,
        },
        Distribution::Zipf(theta) => BlockChooser::Zipf {
            zipf: Zipf::new(blocks as f64, theta).map_err(|_| bad())?,
            spread,
        },
        Distribution::Pareto(h) => BlockChooser::Pareto {
            power: h.ln() / (1.0 - h).ln(),
            spread,
        },
        Distribution::Normal(sigma_pct) => BlockChooser::Normal {
            normal: Normal::new(
                blocks as f64 / 2.0,
                (blocks as f64 * sigma_pct / 100.0).max(1e-9),
            )
            .map_err(|_| bad())?,
            spread,
        },
    })
}

#[inline]
fn next_block(chooser: &mut BlockChooser, blocks: u64, rng: &mut SmallRng) -> u64 {
    match chooser {
        BlockChooser::Map { perm, pos } => {
            if *pos == blocks {
                *perm = Permutation::new(blocks, rng.next_u64());
                *pos = 0;
            }
            let b = perm.get(*pos);
            *pos += 1;
            b
        }
        BlockChooser::Uniform => rng.random_range(0..blocks),
        BlockChooser::Zipf { zipf, spread } => {
            let rank = (zipf.sample(rng) as u64).clamp(1, blocks) - 1;
            spread.get(rank)
        }
        BlockChooser::Pareto { power, spread } => {
            let u: f64 = rng.random();
            let rank = (((blocks - 1) as f64) * u.powf(*power)) as u64;
            spread.get(rank.min(blocks - 1))
        }
        BlockChooser::Normal { normal, spread } => loop {
            let x = normal.sample(rng);
            if x >= 0.0 && x < blocks as f64 {
                // Rank by distance from the centre so the hot blocks are the spread's first.
                break spread.get(x as u64);
            }
        },
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
        j.random_distribution = Distribution::Zipf(f64::NAN);
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
