//! How much memory the system can still give, and the one check that a
//! buffer plumb is asked to allocate (a memory walk, a CPU kernel's
//! matrices, a job's verify map) leaves the machine room: at most half of
//! what is available.

/// Bytes of memory the system can still give without swapping (MemAvailable).
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A buffer refused: more than half the available memory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} of {} is more than half the available memory ({})", crate::units::format_bytes_binary(*bytes as f64), crate::units::format_bytes_binary(*available as f64))]
pub struct TooBig {
    /// What the buffer is for.
    pub what: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Memory available, in bytes.
    pub available: u64,
}

/// Refuses a buffer larger than half the available memory.
pub fn check_size(what: &str, bytes: u64) -> Result<(), TooBig> {
    if let Some(avail) = available_bytes() {
        if bytes > avail / 2 {
            return Err(TooBig {
                what: what.into(),
                bytes,
                available: avail,
            });
        }
    }
    Ok(())
}
