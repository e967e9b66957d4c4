//! Memory bandwidth with `sysbench memory`'s model: every event reads or
//! writes one block; the run ends at the total size or the duration; MiB/s
//! counts bytes moved. `global` scope shares one block between threads (as
//! sysbench's default), `local` gives each thread its own.

use crate::halt::Halt;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What each event does to its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Oper {
    /// Read every word.
    Read,
    /// Write every word.
    Write,
    /// Copy the block to a second block of the same size (bytes counted once).
    Copy,
}

/// A name that is not one of a bandwidth run's operations or scopes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Not `read`, `write` or `copy`.
    #[error("oper '{0}' is not read, write or copy")]
    Oper(String),
    /// Not `global` or `local`.
    #[error("scope '{0}' is not global or local")]
    Scope(String),
}

impl std::str::FromStr for Oper {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Oper, NameError> {
        match s {
            "read" => Ok(Oper::Read),
            "write" => Ok(Oper::Write),
            "copy" => Ok(Oper::Copy),
            _ => Err(NameError::Oper(s.into())),
        }
    }
}

/// Which buffer the threads use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One block shared by all threads (sysbench's default).
    Global,
    /// One block per thread.
    Local,
}

impl std::str::FromStr for Scope {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Scope, NameError> {
        match s {
            "global" => Ok(Scope::Global),
            "local" => Ok(Scope::Local),
            _ => Err(NameError::Scope(s.into())),
        }
    }
}

/// A bandwidth run, with sysbench memory's defaults.
#[derive(Debug, Clone)]
pub struct BandwidthOptions {
    /// What each event does to its block.
    pub oper: Oper,
    /// Bytes per event (`--memory-block-size`, default 1 KiB).
    pub block_size: u64,
    /// Bytes to move in total (`--memory-total-size`, default 100 GiB).
    pub total_size: u64,
    /// Buffer scope (`--memory-scope`, default global).
    pub scope: Scope,
    /// Threads claiming events from the shared total.
    pub threads: u32,
    /// Time limit.
    pub duration: Duration,
}

impl Default for BandwidthOptions {
    fn default() -> Self {
        BandwidthOptions {
            oper: Oper::Write,
            block_size: 1024,
            total_size: 100 << 30,
            scope: Scope::Global,
            threads: 1,
            duration: Duration::from_secs(10),
        }
    }
}

/// Why a bandwidth run did not happen or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum BandwidthError {
    /// The options are out of bounds (threads, sizes, memory).
    #[error(transparent)]
    Invalid(#[from] InvalidBandwidth),
    /// A thread could not be started or died while running.
    #[error(transparent)]
    Failed(#[from] crate::gate::TogetherError),
}

/// Bandwidth options out of bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidBandwidth {
    /// A block below 8 bytes or above [`MAX_BLOCK_SIZE`].
    #[error("block_size {size} must be between 8 bytes and {}", crate::units::format_bytes_binary(MAX_BLOCK_SIZE as f64))]
    BlockSize {
        /// The block size given.
        size: u64,
    },
    /// No thread, or more than [`crate::gate::MAX_THREADS`].
    #[error(
        "threads must be between 1 and {}, not {threads}",
        crate::gate::MAX_THREADS
    )]
    Threads {
        /// The threads asked for.
        threads: u32,
    },
    /// The blocks would take more than half the available memory.
    #[error(transparent)]
    Memory(#[from] crate::headroom::TooBig),
}

/// What a bandwidth run measured.
#[derive(Debug, Clone, Serialize)]
pub struct BandwidthResult {
    /// What each event did to its block.
    pub oper: Oper,
    /// Block size in bytes.
    pub block_size: u64,
    /// Whether the threads shared one block or had one each.
    pub scope: Scope,
    /// Threads that ran.
    pub threads: u32,
    /// MiB/s over all threads (as sysbench prints).
    pub mib_per_sec: f64,
    /// MiB/s of each thread.
    pub per_thread: Vec<f64>,
    /// Bytes moved.
    pub bytes: u64,
    /// Events (blocks) done.
    pub events: u64,
    /// Wall seconds.
    pub seconds: f64,
}

/// A block of 64-bit words shared by several threads (relaxed atomics
/// compile to plain loads and stores, without a data race).
struct Block(Vec<AtomicU64>);

impl Block {
    fn new(bytes: u64) -> Block {
        Block((0..bytes.div_ceil(8)).map(|_| AtomicU64::new(0)).collect())
    }
}

/// The block one thread works on: its own (plain, vectorised loops and
/// memset/memcpy) or one shared with other threads (atomic words).
enum Buffer<'a> {
    Own(Vec<u64>),
    Shared(&'a Block, usize),
}

impl Buffer<'_> {
    /// One event; returns a value so reads are not optimised away. Threads
    /// sharing a block start their writes at spread offsets (wrapping), so
    /// they do not write the same cache lines in lockstep.
    fn event(&mut self, oper: Oper, copy_to: &mut [u64], value: u64) -> u64 {
        match (self, oper) {
            (Buffer::Own(b), Oper::Read) => b.iter().fold(0u64, |a, w| a.wrapping_add(*w)),
            (Buffer::Own(b), Oper::Write) => {
                b.fill(value);
                value
            }
            (Buffer::Own(b), Oper::Copy) => {
                copy_to.copy_from_slice(b);
                copy_to[0]
            }
            (Buffer::Shared(b, _), Oper::Read) => {
                b.0.iter()
                    .fold(0u64, |a, w| a.wrapping_add(w.load(Ordering::Relaxed)))
            }
            (Buffer::Shared(b, start), Oper::Write) => {
                let (head, tail) = b.0.split_at(*start);
                for part in [tail, head] {
                    for w in part {
                        w.store(value, Ordering::Relaxed);
                    }
                }
                value
            }
            (Buffer::Shared(b, _), Oper::Copy) => {
                for (d, s) in copy_to.iter_mut().zip(&b.0) {
                    *d = s.load(Ordering::Relaxed);
                }
                copy_to[0]
            }
        }
    }
}

/// Events each thread claims at a time from the shared total.
const CLAIM: u64 = 256;

/// Largest block: one event (the unit between two checks of the deadline and
/// the stop flag) stays around a tenth of a second.
pub const MAX_BLOCK_SIZE: u64 = 1 << 30;

/// Bytes moved between two checks of the clock, the deadline and the stop flag.
const BYTES_PER_CHECK: u64 = 16 << 20;

impl BandwidthOptions {
    /// Bytes of memory the run holds: the blocks (one shared, or one per
    /// thread) and, for `copy`, each thread's destination block.
    pub fn memory(&self) -> u64 {
        let sharing = self.scope == Scope::Global && self.threads > 1;
        let sources = if sharing { 1 } else { self.threads as u64 };
        let destinations = if self.oper == Oper::Copy {
            self.threads as u64
        } else {
            0
        };
        self.block_size
            .saturating_mul(sources.saturating_add(destinations))
    }

    /// Checks the bounds: a block of 8 bytes to [`MAX_BLOCK_SIZE`], 1 to
    /// [`crate::gate::MAX_THREADS`] threads, and [`Self::memory`] within half
    /// the available memory.
    pub fn validate(&self) -> Result<(), InvalidBandwidth> {
        if self.block_size < 8 || self.block_size > MAX_BLOCK_SIZE {
            return Err(InvalidBandwidth::BlockSize {
                size: self.block_size,
            });
        }
        if self.threads == 0 || self.threads > crate::gate::MAX_THREADS {
            return Err(InvalidBandwidth::Threads {
                threads: self.threads,
            });
        }
        crate::headroom::check_size(
            "the blocks (block_size × threads, × 2 for copy)",
            self.memory(),
        )?;
        Ok(())
    }
}

/// Runs the bandwidth test until the total size, the duration, or `halt`.
pub fn bandwidth(o: &BandwidthOptions, halt: &Halt) -> Result<BandwidthResult, BandwidthError> {
    o.validate().map_err(BandwidthError::Invalid)?;
    // One thread on a global block has it to itself.
    let sharing = o.scope == Scope::Global && o.threads > 1;
    let shared = sharing.then(|| Block::new(o.block_size));
    let words = o.block_size.div_ceil(8) as usize;
    let copy_words = if o.oper == Oper::Copy { words } else { 0 };
    let check_every = (BYTES_PER_CHECK / o.block_size).max(1);
    let total_events = (o.total_size / o.block_size).max(1);
    let claimed = AtomicU64::new(0);
    let (per_thread, seconds) = crate::gate::run_together("mem", o.threads, |t, start| {
        let mut block = match &shared {
            Some(b) => Buffer::Shared(b, words * t / o.threads as usize),
            None => Buffer::Own(vec![1u64; words]),
        };
        let mut copy_to = vec![0u64; copy_words];
        block.event(o.oper, &mut copy_to, 1);
        if !start() {
            return (0, 0.0);
        }
        let t0 = Instant::now();
        let ended = || t0.elapsed() >= o.duration || halt.due();
        let mut events = 0u64;
        let mut sink = 0u64;
        'run: while !ended() {
            let first = claimed.fetch_add(CLAIM, Ordering::Relaxed);
            if first >= total_events {
                break;
            }
            for _ in first..(first + CLAIM).min(total_events) {
                sink = sink.wrapping_add(block.event(o.oper, &mut copy_to, events));
                events += 1;
                if events.is_multiple_of(check_every) && ended() {
                    break 'run;
                }
            }
        }
        std::hint::black_box(sink);
        (events, t0.elapsed().as_secs_f64())
    })
    .map_err(BandwidthError::Failed)?;
    let mib = |events: u64, secs: f64| {
        (events * o.block_size) as f64 / (1u64 << 20) as f64 / secs.max(1e-9)
    };
    let events: u64 = per_thread.iter().map(|(e, _)| e).sum();
    Ok(BandwidthResult {
        oper: o.oper,
        block_size: o.block_size,
        scope: o.scope,
        threads: o.threads,
        mib_per_sec: mib(events, seconds),
        per_thread: per_thread.iter().map(|(e, s)| mib(*e, *s)).collect(),
        bytes: events * o.block_size,
        events,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_at_the_total_size() {
        let o = BandwidthOptions {
            block_size: 4096,
            total_size: 4096 * 1000,
            threads: 2,
            scope: Scope::Local,
            ..Default::default()
        };
        let r = bandwidth(&o, &Halt::after(Default::default(), Duration::MAX)).unwrap();
        assert_eq!(r.events, 1000);
        assert_eq!(r.bytes, 4096 * 1000);
        assert!(r.mib_per_sec > 0.0);
    }

    #[test]
    fn every_operation_moves_its_block() {
        let shared = Block::new(64);
        for mut b in [Buffer::Own(vec![0; 8]), Buffer::Shared(&shared, 3)] {
            let mut to = vec![0u64; 8];
            b.event(Oper::Write, &mut to, 7);
            assert_eq!(b.event(Oper::Read, &mut to, 0), 56);
            assert_eq!(b.event(Oper::Copy, &mut to, 0), 7);
            assert!(to.iter().all(|w| *w == 7));
        }
    }
}
