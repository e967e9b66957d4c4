//! A guest's limits as a `ResourceLimiter` of plumb's own, held by its
//! store: one memory limit for the guest as a whole (every linear memory of
//! every instance it makes, counted together), caps on how many memories,
//! instances and tables it may make, and on its table elements in all.
//!
//! wasmtime's own limits apply to each linear memory and allow 10,000
//! memories, instances and tables per store, so without this a guest with
//! many memories would take many times its limit. A growth past the limit
//! stops the guest and the limiter remembers that it did, so the runtime
//! reports "memory limit" from a flag, not from error text.

use wasmtime::ResourceLimiter;

/// The most linear memories a guest may make, all its instances together.
/// A component built by `wit-bindgen` has one (an adapted preview-1 guest
/// two); each memory reserves gigabytes of address space, so the count is
/// capped as well as the bytes.
pub const MAX_MEMORIES: usize = 16;
/// The most core instances a guest may make (a `wit-bindgen` component
/// makes three or four).
pub const MAX_INSTANCES: usize = 64;
/// The most tables a guest may make.
pub const MAX_TABLES: usize = 64;
/// The most table elements a guest may hold, all its tables together.
pub const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// Holds a guest's linear memories to `limit` bytes in total and its
/// tables to [`MAX_TABLE_ELEMENTS`] elements in total, and remembers a
/// refusal of memory.
#[derive(Debug)]
pub struct GuestLimiter {
    limit: usize,
    /// Bytes of all the guest's memories, as allowed so far. A growth
    /// allowed here that wasmtime then fails to make still counts: wasmtime
    /// tells of failures without saying which growth failed (some come
    /// without a growth asked first), so the count errs on the strict side.
    memory_bytes: usize,
    /// Elements of all the guest's tables, as allowed so far (the same way).
    table_elements: usize,
    hit: bool,
}

/// The error that stops a guest growing past its memory limit.
#[derive(Debug, thiserror::Error)]
#[error(
    "the guest asked for {asked} more bytes of linear memory with {held} held in all its memories, past its limit of {limit}"
)]
pub struct MemoryLimitHit {
    /// Bytes asked for by this growth (or a new memory's initial size).
    pub asked: usize,
    /// Bytes the guest's memories held before it.
    pub held: usize,
    /// The limit for all of them together.
    pub limit: usize,
}

impl GuestLimiter {
    /// A limiter for a guest whose memories together may hold at most
    /// `limit` bytes.
    pub fn new(limit: usize) -> GuestLimiter {
        GuestLimiter {
            limit,
            memory_bytes: 0,
            table_elements: 0,
            hit: false,
        }
    }

    /// True once a memory growth was refused.
    pub fn hit(&self) -> bool {
        self.hit
    }
}

impl ResourceLimiter for GuestLimiter {
    /// Called with `current` 0 for a new memory, so every memory's bytes
    /// are counted from its creation; memories are freed only with the
    /// store, so the total never goes down.
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let asked = desired.saturating_sub(current);
        match self.memory_bytes.checked_add(asked) {
            Some(total) if total <= self.limit => {
                self.memory_bytes = total;
                Ok(true)
            }
            _ => {
                self.hit = true;
                Err(MemoryLimitHit {
                    asked,
                    held: self.memory_bytes,
                    limit: self.limit,
                }
                .into())
            }
        }
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let asked = desired.saturating_sub(current);
        match self.table_elements.checked_add(asked) {
            Some(total) if total <= MAX_TABLE_ELEMENTS => {
                self.table_elements = total;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memories_are_counted_together() {
        let mut l = GuestLimiter::new(100);
        assert!(l.memory_growing(0, 40, None).unwrap());
        assert!(l.memory_growing(0, 40, None).unwrap());
        let e = l.memory_growing(0, 40, None).unwrap_err();
        assert!(l.hit());
        assert!(e.to_string().contains("80 held"), "{e}");
        assert_eq!(l.memory_bytes, 80);
    }

    #[test]
    fn a_growth_counts_what_it_adds() {
        let mut l = GuestLimiter::new(100);
        assert!(l.memory_growing(0, 60, None).unwrap());
        assert!(l.memory_growing(60, 90, None).unwrap());
        assert_eq!(l.memory_bytes, 90);
        assert!(l.memory_growing(0, 10, None).unwrap());
        assert!(l.memory_growing(90, usize::MAX, None).is_err());
        assert!(l.hit());
    }

    #[test]
    fn table_elements_are_counted_together() {
        let mut l = GuestLimiter::new(0);
        assert!(l.table_growing(0, MAX_TABLE_ELEMENTS / 2, None).unwrap());
        assert!(l.table_growing(0, MAX_TABLE_ELEMENTS / 2, None).unwrap());
        assert!(!l.table_growing(0, 1, None).unwrap());
        assert!(!l.table_growing(0, usize::MAX, None).unwrap());
    }
}
