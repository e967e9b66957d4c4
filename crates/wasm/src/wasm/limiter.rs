//! The guest's memory limit as a `ResourceLimiter` of plumb's own: a growth
//! past the limit stops the guest, and the limiter remembers that it did,
//! so the runtime reports "memory limit" from a flag, not from error text.

use wasmtime::ResourceLimiter;

/// The most table elements an instance may have (function tables).
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// Refuses linear memories larger than `limit` bytes (each) and remembers
/// the refusal.
#[derive(Debug)]
pub struct MemoryLimiter {
    limit: usize,
    hit: bool,
}

/// The error that stops a guest growing past its memory limit.
#[derive(Debug, thiserror::Error)]
#[error("the guest asked for {desired} bytes of linear memory, more than its limit of {limit}")]
pub struct MemoryLimitHit {
    /// Bytes asked for.
    pub desired: usize,
    /// The limit.
    pub limit: usize,
}

impl MemoryLimiter {
    /// A limiter for memories of at most `limit` bytes.
    pub fn new(limit: usize) -> MemoryLimiter {
        MemoryLimiter { limit, hit: false }
    }

    /// True once a growth was refused.
    pub fn hit(&self) -> bool {
        self.hit
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.hit = true;
            return Err(MemoryLimitHit {
                desired,
                limit: self.limit,
            }
            .into());
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}
