//! Data verification (`verify=`): which blocks a job wrote, reading them back
//! after the run (`do_verify`), and how a block that fails its check is
//! reported. Blocks are stamped and checked by [`crate::workload`].

use super::jobstats::JobStats;
use crate::workload::{verify_block, Region, VerifyError};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

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

    /// Reads back every block written into `buf` (one idle slot, at least a
    /// block long) and checks it, counting into `stats`; stops early, with
    /// no error, when `stop` is raised. `name` gives a file's path for the
    /// failure message.
    pub(super) fn read_back(
        &self,
        fds: &[RawFd],
        buf: &mut [u8],
        stats: &mut JobStats,
        stop: &AtomicBool,
        name: impl Fn(u32) -> String,
    ) -> std::io::Result<()> {
        let bs = self.bs;
        for (fi, offset) in self.offsets() {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            // SAFETY: `buf` is at least `bs` bytes long and nothing else
            // uses it while verification runs.
            let r = unsafe {
                libc::pread(fds[fi], buf.as_mut_ptr().cast(), bs as usize, offset as i64)
            };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            stats.verified += 1;
            if let Err(e) = verify_block(&buf[..r as usize], offset) {
                record_failure(stats, &name(fi as u32), offset, bs, &e);
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
