//! Which block a random I/O goes to: fio's random map (each block once per
//! pass), uniform with repeats, zipf, pareto, normal, or zoned shares.

use super::Permutation;
use crate::job::spec::{Dir, Distribution, ZoneSplit};
use rand::{rngs::SmallRng, Rng, RngCore};
use rand_distr::{Distribution as _, Normal, Zipf};

/// Draws block indices in `[0, blocks)` under a distribution.
pub(super) enum BlockChooser {
    /// Every block once per pass (fio's random map).
    Map { perm: Permutation, pos: u64 },
    /// Uniform with repeats (`norandommap`).
    Uniform,
    /// Zipf rank, spread over the region by a fixed permutation.
    Zipf { zipf: Zipf<f64>, spread: Spread },
    /// fio's pareto: rank = (n-1)·u^(ln h / ln(1-h)).
    Pareto { power: f64, spread: Spread },
    /// Normal around the middle of the region.
    Normal { normal: Normal<f64>, spread: Spread },
    /// `zoned`/`zoned_abs`: a zone by its share of the accesses, then a
    /// uniform block inside it.
    Zoned(Box<ZoneTables>),
}

/// Ranks of a skewed distribution spread over the region: a fixed
/// permutation, turned so the hottest rank lands where the distribution's
/// base says (fio's center), or where the permutation puts it.
pub(super) struct Spread {
    perm: Permutation,
    shift: u64,
}

impl Spread {
    fn new(blocks: u64, seed: u64, base: Option<f64>) -> Spread {
        let perm = Permutation::new(blocks, seed);
        let shift = match base {
            // The block the base names, less where rank 0 lands, mod blocks.
            Some(b) => {
                let at = ((blocks as f64 * b) as u64).min(blocks - 1);
                (at + blocks - perm.get(0)) % blocks
            }
            None => 0,
        };
        Spread { perm, shift }
    }

    #[inline]
    fn get(&self, rank: u64) -> u64 {
        let b = self.perm.get(rank) + self.shift;
        if b >= self.perm.len() {
            b - self.perm.len()
        } else {
            b
        }
    }
}

/// A `random_distribution` whose parameters cannot describe a distribution.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("random_distribution {0:?} cannot be used over {1} blocks")]
pub struct DistributionError(pub(super) Distribution, pub(super) u64);

impl BlockChooser {
    /// The chooser of `dist` over `blocks` blocks of `align` bytes;
    /// `norandommap` turns the uniform map into draws with repeats; `base`
    /// places a skewed distribution's hottest block (a fraction of the
    /// region).
    pub(super) fn new(
        dist: &Distribution,
        norandommap: bool,
        base: Option<f64>,
        blocks: u64,
        align: u64,
        rng: &mut SmallRng,
    ) -> Result<BlockChooser, DistributionError> {
        let spread = Spread::new(blocks.max(1), rng.next_u64(), base);
        let bad = || DistributionError(dist.clone(), blocks);
        Ok(match dist {
            Distribution::Uniform if norandommap => BlockChooser::Uniform,
            Distribution::Uniform => BlockChooser::Map {
                perm: Permutation::new(blocks, rng.next_u64()),
                pos: 0,
            },
            Distribution::Zipf(theta) => BlockChooser::Zipf {
                zipf: Zipf::new(blocks as f64, *theta).map_err(|_| bad())?,
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
            Distribution::Zoned(split) => {
                BlockChooser::Zoned(Box::new(ZoneTables::new(split, blocks, align)))
            }
        })
    }

    /// The next block for an I/O in direction `dir`.
    #[inline]
    pub(super) fn next(&mut self, blocks: u64, dir: Dir, rng: &mut SmallRng) -> u64 {
        match self {
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
            BlockChooser::Zoned(tables) => tables.next(blocks, dir, rng),
        }
    }
}

/// A zone as blocks: the first one and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BlockZone {
    first: u64,
    count: u64,
}

/// Per direction, the zone of each draw in 1..=100 (fio's zone index).
pub(super) struct ZoneTables {
    by_draw: [Box<[BlockZone; 100]>; 2],
}

impl ZoneTables {
    /// Lays the zones out over `blocks` blocks of `align` bytes: `zoned`
    /// sizes as shares of the region (fio's rounding: a zone starts at
    /// `before% × blocks / 100`), `zoned_abs` sizes in bytes, clipped to the
    /// region. A zone left with no block draws over the whole region.
    fn new(split: &ZoneSplit, blocks: u64, align: u64) -> ZoneTables {
        let table = |zones: &[crate::job::spec::AccessZone]| {
            let mut out = Box::new(
                [BlockZone {
                    first: 0,
                    count: blocks,
                }; 100],
            );
            let (mut before, mut draw) = (0u64, 0usize);
            for z in zones {
                let zone = if split.absolute {
                    let first = before.min(blocks);
                    let count = (z.size / align.max(1)).min(blocks - first);
                    before = before.saturating_add(z.size / align.max(1));
                    BlockZone { first, count }
                } else {
                    let end = (before + z.size).min(100);
                    let first = (u128::from(before) * u128::from(blocks) / 100) as u64;
                    let last = (u128::from(end) * u128::from(blocks) / 100) as u64;
                    before = end;
                    BlockZone {
                        first,
                        count: last - first,
                    }
                };
                for _ in 0..z.access_pct {
                    if draw < 100 {
                        out[draw] = zone;
                        draw += 1;
                    }
                }
            }
            out
        };
        ZoneTables {
            by_draw: [table(&split.zones[0]), table(&split.zones[1])],
        }
    }

    #[inline]
    fn next(&self, blocks: u64, dir: Dir, rng: &mut SmallRng) -> u64 {
        let zone = self.by_draw[dir.index()][rng.random_range(0..100usize)];
        if zone.count == 0 {
            return rng.random_range(0..blocks);
        }
        zone.first + rng.random_range(0..zone.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::spec::AccessZone;
    use rand::SeedableRng;

    #[test]
    fn zoned_shares_land_in_their_zones() {
        let split = ZoneSplit {
            absolute: false,
            zones: [
                vec![
                    AccessZone {
                        access_pct: 60,
                        size: 10,
                    },
                    AccessZone {
                        access_pct: 40,
                        size: 90,
                    },
                ],
                vec![AccessZone {
                    access_pct: 100,
                    size: 50,
                }],
            ],
        };
        let mut rng = SmallRng::seed_from_u64(3);
        let mut c = BlockChooser::new(
            &Distribution::Zoned(Box::new(split)),
            true,
            None,
            1000,
            4096,
            &mut rng,
        )
        .unwrap();
        let n = 100_000;
        let first = (0..n)
            .filter(|_| c.next(1000, Dir::Read, &mut rng) < 100)
            .count() as f64;
        assert!((first / n as f64 - 0.6).abs() < 0.02, "{first}");
        assert!((0..1000).all(|_| c.next(1000, Dir::Write, &mut rng) < 500));
    }

    #[test]
    fn a_base_places_the_hottest_block() {
        let mut rng = SmallRng::seed_from_u64(5);
        let mut c = BlockChooser::new(
            &Distribution::Zipf(3.0),
            true,
            Some(0.25),
            1000,
            4096,
            &mut rng,
        )
        .unwrap();
        let hits = (0..1000)
            .filter(|_| c.next(1000, Dir::Read, &mut rng) == 250)
            .count();
        // θ = 3: rank 0 takes about 83% of the draws.
        assert!(hits > 700, "{hits}");
    }

    #[test]
    fn zoned_abs_zones_are_clipped_to_the_region() {
        let split = ZoneSplit {
            absolute: true,
            zones: [
                vec![
                    AccessZone {
                        access_pct: 50,
                        size: 4096 * 10,
                    },
                    AccessZone {
                        access_pct: 50,
                        size: 1 << 40,
                    },
                ],
                vec![],
            ],
        };
        let mut rng = SmallRng::seed_from_u64(3);
        let t = ZoneTables::new(&split, 100, 4096);
        assert_eq!(
            t.by_draw[0][0],
            BlockZone {
                first: 0,
                count: 10
            }
        );
        assert_eq!(
            t.by_draw[0][99],
            BlockZone {
                first: 10,
                count: 90
            }
        );
        assert!((0..1000).all(|_| t.next(100, Dir::Read, &mut rng) < 100));
    }
}
