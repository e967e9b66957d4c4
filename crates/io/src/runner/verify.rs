//! Data verification (`verify=`): which blocks a job wrote, reading them back
//! after the run (`do_verify`), and how a block that fails its check is
//! reported. Blocks are stamped and checked by [`crate::workload`].

use super::jobstats::JobStats;
use crate::job::spec::{Dir, VerifyOpts};
use crate::workload::{verify_block, Region, VerifyError};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What a read-back needs besides the block: the files, a buffer, the
/// options that say how strict to be, and the files' names.
pub(super) struct ReadBack<'a, N: Fn(u32) -> String> {
    /// The job's open files.
    pub fds: &'a [RawFd],
    /// An idle slot, at least as long as the longest block.
    pub buf: &'a mut [u8],
    /// `verify_fatal`, `verify_dump`.
    pub opts: &'a VerifyOpts,
    /// A file's path, for messages and dumps.
    pub name: N,
}

impl<N: Fn(u32) -> String> ReadBack<'_, N> {
    /// Reads one block back and checks it. The read counts among the job's
    /// reads, as fio counts its verify reads. Returns false when the job
    /// must stop: a failure with `verify_fatal`.
    fn check(
        &mut self,
        file: u32,
        offset: u64,
        len: u64,
        stats: &mut JobStats,
    ) -> std::io::Result<bool> {
        let len = (len as usize).min(self.buf.len());
        let t = Instant::now();
        // SAFETY: `buf` holds at least `len` bytes and nothing else uses it
        // while verification runs.
        let r = unsafe {
            libc::pread(
                self.fds[file as usize],
                self.buf.as_mut_ptr().cast(),
                len,
                offset as i64,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let read = &mut stats.dirs[Dir::Read.index()];
        read.ios += 1;
        read.bytes += r as u64;
        read.clat.record(ns);
        read.lat.record(ns);
        stats.verified += 1;
        let block = &self.buf[..r as usize];
        if let Err(e) = verify_block(block, offset) {
            let path = (self.name)(file);
            record_failure(stats, &path, offset, len as u64, &e);
            if self.opts.dump {
                dump(&path, offset, block);
            }
            return Ok(!self.opts.fatal);
        }
        Ok(true)
    }
}

/// Writes a block that failed its check to `FILE.OFFSET.received` beside
/// its file, as fio's `verify_dump` (never through a symlink in its place;
/// a dump that cannot be written is skipped: the failure is already told).
pub(super) fn dump(path: &str, offset: u64, block: &[u8]) {
    use std::io::Write;
    if let Ok(mut f) = super::iolog::create_replacing(&format!("{path}.{offset}.received")) {
        let _ = f.write_all(block);
    }
}

/// The blocks written since the last check (`verify_backlog`), checked
/// every `every` blocks as the job goes.
pub(super) struct Backlog {
    every: u64,
    blocks: Vec<(u32, u64, u64)>,
}

impl Backlog {
    /// A backlog checked every `every` blocks.
    pub(super) fn new(every: u64) -> Backlog {
        Backlog {
            every,
            blocks: Vec::new(),
        }
    }

    /// Notes a block written.
    pub(super) fn push(&mut self, file: u32, offset: u64, len: u64) {
        self.blocks.push((file, offset, len));
    }

    /// True when `every` blocks wait for their check.
    pub(super) fn due(&self) -> bool {
        self.blocks.len() as u64 >= self.every
    }

    /// Reads back and checks the blocks waiting, in the order written;
    /// stops early, with no error, when `stop` is raised.
    pub(super) fn check<N: Fn(u32) -> String>(
        &mut self,
        rb: &mut ReadBack<'_, N>,
        stats: &mut JobStats,
        stop: &AtomicBool,
    ) -> std::io::Result<()> {
        for (file, offset, len) in self.blocks.drain(..) {
            if stop.load(Ordering::Relaxed) || !rb.check(file, offset, len, stats)? {
                break;
            }
        }
        self.blocks.clear();
        Ok(())
    }
}

/// The blocks written per file, one bit per block of the job's smallest
/// block size, counted from the start of the file's region. Empty when the
/// job does not verify its writes.
pub(super) struct WrittenBlocks {
    bits: Vec<Vec<u64>>,
    starts: Vec<u64>,
    bs: u64,
}

impl WrittenBlocks {
    /// A map that records nothing (the job does not verify its writes).
    pub(super) fn none() -> WrittenBlocks {
        WrittenBlocks {
            bits: Vec::new(),
            starts: Vec::new(),
            bs: 1,
        }
    }

    /// A cleared map for `regions` in blocks of `bs` bytes; an error when a
    /// map would take more than half the available memory.
    pub(super) fn new(regions: &[Region], bs: u64) -> std::io::Result<WrittenBlocks> {
        Ok(WrittenBlocks {
            bits: regions
                .iter()
                .map(|r| block_map(r.len / bs))
                .collect::<std::io::Result<_>>()?,
            starts: regions.iter().map(|r| r.start).collect(),
            bs,
        })
    }

    /// Notes a write at `offset` in `file` (a no-op for a map of nothing).
    pub(super) fn mark(&mut self, file: u32, offset: u64) {
        if self.bits.is_empty() {
            return;
        }
        let block = (offset - self.starts[file as usize]) / self.bs;
        self.bits[file as usize][(block / 64) as usize] |= 1 << (block % 64);
    }

    /// Every block written, as (file, offset), by file then offset.
    fn offsets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.bits.iter().enumerate().flat_map(move |(fi, bits)| {
            bits.iter().enumerate().flat_map(move |(word_i, word)| {
                let mut w = *word;
                std::iter::from_fn(move || {
                    if w == 0 {
                        return None;
                    }
                    let bit = w.trailing_zeros() as u64;
                    w &= w - 1;
                    let block = word_i as u64 * 64 + bit;
                    Some((fi, self.starts[fi] + block * self.bs))
                })
            })
        })
    }

    /// Reads back every block written and checks it, counting into
    /// `stats`; stops early, with no error, when `stop` is raised or a
    /// block fails with `verify_fatal`.
    pub(super) fn read_back<N: Fn(u32) -> String>(
        &self,
        rb: &mut ReadBack<'_, N>,
        stats: &mut JobStats,
        stop: &AtomicBool,
    ) -> std::io::Result<()> {
        for (fi, offset) in self.offsets() {
            if stop.load(Ordering::Relaxed) || !rb.check(fi as u32, offset, self.bs, stats)? {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// A zeroed bitmap of `blocks` bits, or an error when it would take more
/// than half the available memory (a huge region with `verify`).
fn block_map(blocks: u64) -> std::io::Result<Vec<u64>> {
    let words = blocks.div_ceil(64);
    crate::headroom::check_size("the verify map of written blocks", words.saturating_mul(8))
        .map_err(std::io::Error::other)?;
    Ok(vec![
        0u64;
        usize::try_from(words).map_err(std::io::Error::other)?
    ])
}

/// Counts a block that failed its check; the first failure of the job (if
/// it has no error yet) becomes its error, with `EILSEQ`.
pub(super) fn record_failure(
    stats: &mut JobStats,
    file: &str,
    offset: u64,
    len: u64,
    e: &VerifyError,
) {
    stats.verify_errors += 1;
    if stats.error.is_none() {
        stats.errno = libc::EILSEQ;
        stats.error = Some(format!(
            "verify failed in {file} at offset {offset} (length {len}): {e}"
        ));
    }
}
