//! What the written buffers hold: patterns, refills, compressibility and
//! dedupe ratios, and how the buffers are allocated (`iomem`).

use crate::buffer::IoMem;
use std::sync::Arc;

/// How dedupe buffers are chosen (`dedupe_mode=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DedupeMode {
    /// Repeat the last unique buffer (fio's default).
    #[default]
    Repeat,
    /// Pick a buffer at random from a working set of the first unique
    /// buffers (`dedupe_working_set_percentage` of the job's size).
    WorkingSet,
}

/// The job's data options, with fio's defaults. The options interact as
/// in fio (a pattern turns scrambling off, compression turns refills on…);
/// [`DataOpts::refill`] and [`DataOpts::scramble`] give the outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct DataOpts {
    /// `buffer_pattern`: the bytes repeated over every buffer.
    pub buffer_pattern: Option<Arc<[u8]>>,
    /// `zero_buffers`: buffers of zeros.
    pub zero_buffers: bool,
    /// `zero_buffers` was given (fio then stops scrambling by default).
    pub zero_given: bool,
    /// `refill_buffers` as given (`None`: not given).
    pub refill_buffers: Option<bool>,
    /// `scramble_buffers`: stamp each write so no two blocks are alike.
    pub scramble_buffers: bool,
    /// `scramble_buffers` was given.
    pub scramble_given: bool,
    /// `buffer_compress_percentage`: share of each chunk that is zeros (or the pattern).
    pub compress_percentage: u32,
    /// `buffer_compress_chunk`: bytes of one random-then-fixed chunk (0: the block).
    pub compress_chunk: u64,
    /// `dedupe_percentage`: share of writes that repeat an earlier buffer.
    pub dedupe_percentage: u32,
    /// `dedupe_mode`.
    pub dedupe_mode: DedupeMode,
    /// `dedupe_working_set_percentage`: the working set, in percent of the job's size.
    pub dedupe_working_set_percentage: u32,
    /// `dedupe_global`: the working set is shared by every job that sets it.
    pub dedupe_global: bool,
    /// `iomem`/`mem`: how the I/O buffers are allocated.
    pub iomem: IoMem,
    /// `iomem_align`/`mem_align`: the first buffer starts this many bytes past a page.
    pub mem_align: u64,
}

impl Default for DataOpts {
    fn default() -> Self {
        DataOpts {
            buffer_pattern: None,
            zero_buffers: false,
            zero_given: false,
            refill_buffers: None,
            scramble_buffers: true,
            scramble_given: false,
            compress_percentage: 0,
            compress_chunk: 512,
            dedupe_percentage: 0,
            dedupe_mode: DedupeMode::Repeat,
            dedupe_working_set_percentage: 5,
            dedupe_global: false,
            iomem: IoMem::Malloc,
            mem_align: 0,
        }
    }
}

impl DataOpts {
    /// The compression percentage that shapes buffers: 100 means all
    /// zeros (fio turns it into `zero_buffers`), so it counts as 0 here.
    pub fn compress(&self) -> u32 {
        if self.compress_percentage >= 100 {
            0
        } else {
            self.compress_percentage
        }
    }

    /// True when every buffer is all zeros (`zero_buffers`, or 100%
    /// compressible), unless a pattern or dedupe shapes it.
    pub fn zeros(&self) -> bool {
        self.zero_buffers || self.compress_percentage >= 100
    }

    /// True when buffers are made chunk by chunk from seeds
    /// (compression or dedupe asked for).
    pub fn generated(&self) -> bool {
        self.compress() > 0 || self.dedupe_percentage > 0
    }

    /// True when each write gets new content (fio's `refill_buffers`):
    /// given, or implied by compression or dedupe, or by a pattern in a
    /// job that also reads (a read would overwrite the pattern in the
    /// buffer it shares).
    pub fn refill(&self, reads: bool) -> bool {
        if self.dedupe_percentage > 0 {
            return true;
        }
        match self.refill_buffers {
            Some(given) => given,
            None => self.compress() > 0 || (self.buffer_pattern.is_some() && reads),
        }
    }

    /// True when each write is lightly scrambled (fio's
    /// `scramble_buffers`): on by default, off after `zero_buffers` or a
    /// pattern unless asked for again, and never when the buffers are
    /// refilled or generated (they are new already).
    pub fn scramble(&self, reads: bool) -> bool {
        let on = self.scramble_buffers
            && (self.scramble_given || !(self.zero_buffers && self.zero_given));
        on && !self.refill(reads) && self.compress_percentage == 0 && self.dedupe_percentage == 0
    }
}
