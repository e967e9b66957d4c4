//! [`Content`]: how a job clone fills its write buffers, once at the start
//! and before each write, with fio's rules (`io_u.c`'s `fill_io_buffer`
//! and `get_io_u`):
//!
//! - by default the buffers hold random data filled once, and each write
//!   is *scrambled*: [`stamp_block`] puts 8 bytes derived from the offset
//!   and a write counter every 512 bytes, as fio's `small_content_scramble`
//!   puts the offset and the time, so no two written blocks are alike;
//! - `zero_buffers` and `buffer_pattern` fill them with zeros or the
//!   pattern (and stop the scrambling unless `scramble_buffers=1` is given
//!   again);
//! - `refill_buffers` gives every write new content;
//! - `buffer_compress_percentage` makes each chunk of
//!   `buffer_compress_chunk` bytes random for (100 − p)% and zeros (or the
//!   pattern) for the rest; `dedupe_percentage` makes that share of the
//!   writes a copy of an earlier buffer: the last unique one (`repeat`) or
//!   one of a working set (`working_set`), shared between jobs with
//!   `dedupe_global`. Every generated buffer comes from a seed, so a copy
//!   is the same buffer made again, compression included.
//!
//! The per-write cost is a branch when nothing is asked beyond the default.

use super::pattern::repeat_into;
use crate::job::spec::{DedupeMode, Dir, JobSpec};
use crate::workload::{fill_random, stamp_block};
use rand::{rngs::SmallRng, Rng, RngCore, SeedableRng};
use std::sync::Arc;

/// Where a clone stands among the run's threads, for `dedupe_global`.
#[derive(Debug, Clone, Copy)]
pub struct Participation {
    /// Its number among all the run's threads (0-based, in job order).
    pub thread: u32,
    /// The run's threads in all.
    pub threads: u32,
    /// The bytes of the clone's region over its files (the working set is
    /// a share of it).
    pub region_bytes: u64,
}

/// A job clone's write content: what fills its buffers, and what happens
/// to a buffer before each write.
pub struct Content {
    fill: Fill,
    /// New content before every write.
    refill: bool,
    /// Stamp every write (fio's scramble).
    scramble: bool,
    /// Random data for refills and dedupe draws.
    rng: SmallRng,
}

/// What fills a buffer.
enum Fill {
    Random,
    Zero,
    Pattern(Arc<[u8]>),
    Generated(Box<Generator>),
}

/// Compressible or deduplicable buffers made from seeds.
struct Generator {
    /// Percent of each chunk left fixed (zeros or the pattern).
    compress: u32,
    /// Bytes of one chunk; 0: the whole buffer.
    chunk: usize,
    /// The fixed part's bytes (none: zeros).
    fixed: Option<Arc<[u8]>>,
    /// Percent of buffers that repeat an earlier one.
    dedupe: u32,
    mode: DedupeMode,
    /// Entries of the working set (at least 1).
    working_set: u64,
    /// Seeds of this clone's unique buffers.
    stream: u64,
    /// `dedupe_global`: the working set is spread over every thread's stream.
    global: Option<(u32, u32)>,
    /// Unique buffers made so far.
    next_unique: u64,
    /// The seed of the last unique buffer.
    last_unique: Option<u64>,
}

/// The stream of thread `t` when the working set is shared: the same for
/// every job, so the threads' buffers can match.
fn global_stream(t: u32) -> u64 {
    0x6a09_e667_f3bc_c908 ^ (u64::from(t) << 40)
}

/// The seed of the `k`th unique buffer of `stream`.
fn seed_of(stream: u64, k: u64) -> u64 {
    stream ^ k.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl Content {
    /// The content of one clone of `job`, its generators seeded with `seed`.
    pub fn new(job: &JobSpec, seed: u64, at: Participation) -> Content {
        let d = &job.data;
        let reads = job.rw.does(Dir::Read);
        let fill = if d.generated() {
            let global = d.dedupe_global.then_some((at.thread, at.threads.max(1)));
            let min_bs = job.bs[Dir::Write.index()].min().max(1);
            let share =
                u128::from(at.region_bytes) * u128::from(d.dedupe_working_set_percentage) / 100;
            let working_set = u64::try_from(share / u128::from(min_bs))
                .unwrap_or(u64::MAX)
                .max(1);
            Fill::Generated(Box::new(Generator {
                compress: d.compress(),
                chunk: usize::try_from(d.compress_chunk).unwrap_or(usize::MAX),
                fixed: d.buffer_pattern.clone(),
                dedupe: d.dedupe_percentage,
                mode: d.dedupe_mode,
                working_set,
                stream: match global {
                    Some((t, _)) => global_stream(t),
                    None => seed,
                },
                global,
                next_unique: 0,
                last_unique: None,
            }))
        } else if let Some(p) = &d.buffer_pattern {
            Fill::Pattern(Arc::clone(p))
        } else if d.zeros() {
            Fill::Zero
        } else {
            Fill::Random
        };
        Content {
            fill,
            refill: d.refill(reads),
            scramble: d.scramble(reads),
            rng: SmallRng::seed_from_u64(seed ^ 0xd1b5_4a32_d192_ed03),
        }
    }

    /// True when `before_write` changes the buffer's bytes beyond a stamp.
    pub fn refills(&self) -> bool {
        self.refill
    }

    /// Fills a slot's buffer at the start of the job.
    pub fn fill(&mut self, buf: &mut [u8]) {
        match &mut self.fill {
            Fill::Random => fill_random(buf, self.rng.next_u64()),
            Fill::Zero => buf.fill(0),
            Fill::Pattern(p) => repeat_into(p, buf),
            Fill::Generated(g) => {
                let seed = g.next_seed(&mut self.rng);
                g.make(seed, buf);
            }
        }
    }

    /// Readies `buf` to be written at `offset` as write number `seq`:
    /// refills it when asked, then stamps it (the scramble, or with
    /// `verify` the verify header, which the stamp carries).
    #[inline]
    pub fn before_write(&mut self, buf: &mut [u8], offset: u64, seq: u64, verify: bool) {
        if self.refill {
            self.fill(buf);
        }
        if self.scramble || verify {
            stamp_block(buf, offset, seq, verify);
        }
    }
}

impl Generator {
    /// The seed of the next buffer: a new unique one, or (for
    /// `dedupe_percentage` of them) one made before.
    fn next_seed(&mut self, rng: &mut SmallRng) -> u64 {
        let dup =
            self.dedupe >= 100 || (self.dedupe > 0 && rng.random_range(1..=100) <= self.dedupe);
        if dup {
            match self.mode {
                DedupeMode::Repeat => {
                    if let Some(s) = self.last_unique {
                        return s;
                    }
                }
                DedupeMode::WorkingSet => {
                    let i = rng.random_range(0..self.working_set);
                    return self.working_set_seed(i);
                }
            }
        }
        let s = seed_of(self.stream, self.next_unique);
        self.next_unique += 1;
        self.last_unique = Some(s);
        s
    }

    /// Entry `i` of the working set: this stream's `i`th unique buffer, or
    /// with `dedupe_global` an early unique buffer of one of the threads,
    /// the set spread evenly over them (as fio spreads it).
    fn working_set_seed(&self, i: u64) -> u64 {
        match self.global {
            None => seed_of(self.stream, i),
            Some((thread, threads)) => {
                let per = (self.working_set / u64::from(threads)).max(1);
                let t = (u64::from(thread) + i / per) % u64::from(threads);
                seed_of(global_stream(t as u32), i % per)
            }
        }
    }

    /// Makes the buffer of `seed`: per chunk, (100 − compress)% random
    /// bytes, then the fixed part.
    fn make(&self, seed: u64, buf: &mut [u8]) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let chunk = if self.chunk == 0 {
            buf.len()
        } else {
            self.chunk.min(buf.len())
        }
        .max(1);
        for piece in buf.chunks_mut(chunk) {
            let random = piece.len() * (100 - self.compress.min(100) as usize) / 100;
            let (head, tail) = piece.split_at_mut(random);
            rng.fill_bytes(head);
            match &self.fixed {
                Some(p) => repeat_into(p, tail),
                None => tail.fill(0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::options::apply;
    use std::collections::HashSet;

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

    fn content(j: &JobSpec) -> Content {
        Content::new(
            j,
            7,
            Participation {
                thread: 0,
                threads: 1,
                region_bytes: 4 << 20,
            },
        )
    }

    /// Share of 4 KiB blocks of `n` writes that repeat an earlier block.
    fn dup_share(j: &JobSpec, n: usize) -> f64 {
        let mut c = content(j);
        let mut seen = HashSet::new();
        let mut buf = vec![0u8; 4096];
        for i in 0..n {
            c.before_write(&mut buf, i as u64 * 4096, i as u64 + 1, false);
            seen.insert(buf.clone());
        }
        1.0 - seen.len() as f64 / n as f64
    }

    #[test]
    fn default_is_random_filled_once_and_scrambled() {
        let j = job(&[("rw", "write")]);
        let mut c = content(&j);
        assert!(!c.refills());
        let mut buf = vec![0u8; 4096];
        c.fill(&mut buf);
        let before = buf.clone();
        c.before_write(&mut buf, 0, 1, false);
        let changed = buf.iter().zip(&before).filter(|(a, b)| a != b).count();
        assert!(
            changed > 0 && changed <= 64,
            "the scramble changed {changed} bytes"
        );
    }

    #[test]
    fn zeros_and_patterns_stay_exact() {
        let j = job(&[("rw", "write"), ("zero_buffers", "1")]);
        let mut c = content(&j);
        let mut buf = vec![9u8; 4096];
        c.fill(&mut buf);
        c.before_write(&mut buf, 4096, 1, false);
        assert!(buf.iter().all(|&b| b == 0));
        let j = job(&[("rw", "write"), ("buffer_pattern", "\"ab\"0x01")]);
        let mut c = content(&j);
        c.fill(&mut buf);
        c.before_write(&mut buf, 4096, 1, false);
        assert_eq!(&buf[..7], b"ab\x01ab\x01a");
        // Asked for again after the pattern, the scramble comes back.
        let j = job(&[
            ("rw", "write"),
            ("buffer_pattern", "0x01"),
            ("scramble_buffers", "1"),
        ]);
        let mut c = content(&j);
        c.fill(&mut buf);
        c.before_write(&mut buf, 4096, 1, false);
        assert!(buf.iter().any(|&b| b != 1));
    }

    #[test]
    fn compression_leaves_the_asked_share_fixed() {
        let j = job(&[("rw", "write"), ("buffer_compress_percentage", "70")]);
        let mut c = content(&j);
        assert!(c.refills());
        let mut buf = vec![0u8; 4096];
        c.before_write(&mut buf, 0, 1, false);
        for piece in buf.chunks(512) {
            // 512 × 30 / 100 = 153 random bytes, then zeros.
            assert!(piece[153..].iter().all(|&b| b == 0));
            assert!(piece[..153].iter().filter(|&&b| b == 0).count() < 10);
        }
    }

    #[test]
    fn dedupe_shares_match() {
        for (mode, p) in [("repeat", 30), ("repeat", 75), ("working_set", 40)] {
            let j = job(&[
                ("rw", "write"),
                ("dedupe_percentage", &p.to_string()),
                ("dedupe_mode", mode),
            ]);
            let share = dup_share(&j, 4000);
            assert!(
                (share - p as f64 / 100.0).abs() < 0.03,
                "{mode} {p}%: {share}"
            );
        }
        assert_eq!(dup_share(&job(&[("rw", "write")]), 500), 0.0);
    }
}
