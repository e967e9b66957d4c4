//! What an engine lends the kernel: slot memory and open files, owned
//! jointly by the engine and the job that drives it.
//!
//! An asynchronous engine gives the kernel pointers into slot memory and
//! descriptors of open files, and the kernel may write into that memory
//! until the request completes, long after the call that queued it. So an
//! engine keeps an [`Arc`] of both for its whole life, and its `Drop` waits
//! for every request in flight before those `Arc`s go (or, when it cannot,
//! never lets them go). Whatever order a job drops things in (an error
//! returned from the hot loop, a panic), the memory is freed only after the
//! kernel is done with it. Safe code cannot hand an engine a pointer: it
//! hands it a [`SlotMemory`], and the engine derives every pointer from it
//! after checking the request's slot and length against it.

use crate::buffer::AlignedBuf;
use std::fs::File;
use std::io;
use std::sync::Arc;

/// Files of a job, indexed by [`super::IoRequest::file`], shared by the job
/// and its engine so no descriptor closes while the engine may use it.
pub type JobFiles = Arc<[File]>;

/// A buffer cut into `slots` slots of `slot_len` bytes each, one per request
/// that may be in flight; a request's identity is its slot.
#[derive(Debug)]
pub struct SlotMemory {
    buf: AlignedBuf,
    slot_len: usize,
    slots: u32,
}

impl SlotMemory {
    /// `slots` slots of `slot_len` bytes in `buf`; refused when they do not
    /// fit in it.
    pub fn new(buf: AlignedBuf, slot_len: usize, slots: u32) -> io::Result<Arc<SlotMemory>> {
        let fits = slot_len
            .checked_mul(slots as usize)
            .is_some_and(|total| total <= buf.len());
        if !fits {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{slots} slots of {slot_len} bytes do not fit in a buffer of {} bytes",
                    buf.len()
                ),
            ));
        }
        Ok(Arc::new(SlotMemory {
            buf,
            slot_len,
            slots,
        }))
    }

    /// Memory for an engine that moves no data (the null engine).
    pub fn none() -> io::Result<Arc<SlotMemory>> {
        SlotMemory::new(AlignedBuf::zeroed(0)?, 0, 0)
    }

    /// How many slots there are.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Bytes per slot.
    pub fn slot_len(&self) -> usize {
        self.slot_len
    }

    /// The start of `slot`, for the kernel; `None` past the last slot.
    pub(super) fn slot_ptr(&self, slot: u32) -> Option<*mut u8> {
        if slot >= self.slots {
            return None;
        }
        let start = slot as usize * self.slot_len;
        self.buf
            .raw_range(start..start + self.slot_len)
            .ok()
            .map(|(ptr, _)| ptr)
    }

    /// The first `len` bytes of `slot` (at most the slot's length).
    ///
    /// # Panics
    /// When `slot` is past the last slot.
    ///
    /// # Safety
    /// No request on `slot` may be in flight, and no other reference to the
    /// slot may be alive while the returned one is.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slot_mut(&self, slot: u32, len: usize) -> &mut [u8] {
        let ptr = self
            .slot_ptr(slot)
            .unwrap_or_else(|| panic!("slot {slot} of {} slots", self.slots));
        // SAFETY: a bounds-checked range inside one slot, disjoint from the
        // others; the caller vouches that nothing else uses it meanwhile.
        unsafe { std::slice::from_raw_parts_mut(ptr, len.min(self.slot_len)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{check_request, IoRequest, Op};

    #[test]
    fn slots_must_fit_and_requests_stay_inside_them() {
        let buf = || AlignedBuf::zeroed(4 * 4096).unwrap();
        assert!(SlotMemory::new(buf(), 4096, 5).is_err());
        assert!(SlotMemory::new(buf(), usize::MAX, 2).is_err());
        let m = SlotMemory::new(buf(), 4096, 4).unwrap();
        let req = |slot, len| IoRequest {
            slot,
            file: 0,
            op: Op::Read,
            offset: 0,
            len,
        };
        let first = check_request(&req(0, 4096), &m, 1).unwrap();
        let last = check_request(&req(3, 1), &m, 1).unwrap();
        assert_eq!(last as usize - first as usize, 3 * 4096);
        for bad in [req(4, 1), req(0, 4097), req(u32::MAX, 0)] {
            assert!(check_request(&bad, &m, 1).is_err());
        }
        assert!(check_request(&req(0, 1), &m, 0).is_err());
    }
}
