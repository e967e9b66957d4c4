//! File and metadata operations, split along their seams:
//! [`handle`] (open files whose data stays in the host), [`whole`]
//! (whole-file writes, reads and copies), [`meta`] (names, directories,
//! the stat and remove storms) and [`create`] (the create storm).
//!
//! Shared rules: sizes and offsets from a script are validated here, in the
//! operation (the Rhai and WIT adapters pass them through unchanged); data
//! moves through [`AlignedBuf`] slices, and every `read`/`write` is given the
//! pointer and length of one slice.

pub mod create;
pub mod handle;
pub mod meta;
pub mod resident;
pub mod whole;

pub use create::CreateOptions;
pub use handle::{FileHandle, HandleBudget, OpenOptions, Pattern};
pub use meta::FileStat;
pub use whole::{CopyHandle, CopyMethod, CopyOptions, ReadOptions, WriteOptions};

use super::clock::{Clock, Span};
use super::{os_err, ApiError};
use crate::buffer::AlignedBuf;
use std::os::fd::RawFd;
use std::time::Instant;

/// The largest single I/O (and per-handle buffer): 64 MiB.
pub const MAX_IO: u64 = 64 << 20;

/// The largest file offset Linux accepts (`off_t`).
const MAX_OFFSET: u64 = i64::MAX as u64;

/// The result of a whole-file operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    /// Bytes moved.
    pub bytes: u64,
    /// When it ran, on the scenario's clock.
    pub span: Span,
    /// A buffered read that found the file in the page cache
    /// ([`resident::Residency::cached`]): the figure is memory's.
    pub cached: bool,
}

impl Transfer {
    /// `bytes` moved from `from` until now.
    pub fn measured(bytes: u64, from: Instant, clock: Clock) -> Transfer {
        Transfer {
            bytes,
            span: clock.since(from),
            cached: false,
        }
    }

    /// Seconds it took.
    pub fn seconds(&self) -> f64 {
        self.span.seconds()
    }

    /// Bytes per second.
    pub fn bw_bytes(&self) -> f64 {
        let seconds = self.seconds();
        if seconds > 0.0 {
            self.bytes as f64 / seconds
        } else {
            0.0
        }
    }
}

/// A transfer as scripts read it (a Rhai map, the WIT record `transfer`):
/// the derived figures computed here once, for both adapters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TransferReport {
    /// Bytes moved.
    pub bytes: u64,
    /// Seconds it took.
    pub seconds: f64,
    /// Bytes per second.
    pub bw_bytes: f64,
    /// When it began, in seconds on the scenario's clock.
    pub started_s: f64,
    /// When it ended, on the same clock.
    pub ended_s: f64,
    /// A buffered read that found the file in the page cache.
    pub cached: bool,
}

impl From<Transfer> for TransferReport {
    fn from(t: Transfer) -> Self {
        TransferReport {
            bytes: t.bytes,
            seconds: t.seconds(),
            bw_bytes: t.bw_bytes(),
            started_s: t.span.started_s,
            ended_s: t.span.ended_s,
            cached: t.cached,
        }
    }
}

/// `"87%"`: a share of a file's pages, as notes give it.
fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// The result of a metadata storm.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Storm {
    /// Operations done.
    pub ops: u64,
    /// When it ran, on the scenario's clock.
    pub span: Span,
}

impl Storm {
    /// `ops` done from `from` until now.
    pub fn measured(ops: u64, from: Instant, clock: Clock) -> Storm {
        Storm {
            ops,
            span: clock.since(from),
        }
    }

    /// Seconds it took.
    pub fn seconds(&self) -> f64 {
        self.span.seconds()
    }

    /// Operations per second.
    pub fn ops_per_sec(&self) -> f64 {
        let seconds = self.seconds();
        if seconds > 0.0 {
            self.ops as f64 / seconds
        } else {
            0.0
        }
    }
}

/// A metadata storm as scripts read it (a Rhai map, the WIT record
/// `storm`): the derived figures computed here once, for both adapters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StormReport {
    /// Operations done.
    pub ops: u64,
    /// Seconds it took.
    pub seconds: f64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// When it began, in seconds on the scenario's clock.
    pub started_s: f64,
    /// When it ended, on the same clock.
    pub ended_s: f64,
}

impl From<Storm> for StormReport {
    fn from(s: Storm) -> Self {
        StormReport {
            ops: s.ops,
            seconds: s.seconds(),
            ops_per_sec: s.ops_per_sec(),
            started_s: s.span.started_s,
            ended_s: s.span.ended_s,
        }
    }
}

/// A script's integer argument (Rhai gives `i64`, WIT `u64`) checked to lie
/// in `min..=max`; the error names the operation and the argument.
pub(crate) fn arg(op: &str, name: &str, value: i128, min: u64, max: u64) -> Result<u64, ApiError> {
    if value < i128::from(min) || value > i128::from(max) {
        let why = if value < 0 {
            "is negative".to_string()
        } else {
            format!("must be between {min} and {max}")
        };
        return Err(ApiError::Invalid(format!("{op}: {name} {value} {why}")));
    }
    // In min..=max, hence a u64.
    Ok(value as u64)
}

/// A file offset: `0..=i64::MAX`.
pub(crate) fn offset_arg(op: &str, value: i128) -> Result<u64, ApiError> {
    arg(op, "offset", value, 0, MAX_OFFSET)
}

/// A length for one I/O: `0..=MAX_IO`.
pub(crate) fn io_len_arg(op: &str, value: i128) -> Result<u64, ApiError> {
    arg(op, "length", value, 0, MAX_IO)
}

/// A block size for a whole-file operation: `1..=MAX_IO` (0 would never
/// make progress; smaller sizes are rounded up by the operation).
pub(crate) fn bs_arg(op: &str, value: u64) -> Result<u64, ApiError> {
    arg(op, "bs", i128::from(value), 1, MAX_IO)
}

/// `offset` as an `off_t`, or an error naming the operation.
fn off_t(op: &str, offset: u64) -> Result<i64, ApiError> {
    i64::try_from(offset).map_err(|_| {
        ApiError::Invalid(format!(
            "{op}: offset {offset} is beyond the largest file offset {MAX_OFFSET}"
        ))
    })
}

/// Writes all of `data` at `offset` (or at the file position when `None`),
/// looping on short writes. A write that accepts nothing is an error (the
/// disk or a limit is full) rather than a silent stop.
pub(crate) fn write_all(
    fd: RawFd,
    mut data: &[u8],
    mut offset: Option<u64>,
    what: &str,
) -> Result<u64, ApiError> {
    let mut done = 0u64;
    while !data.is_empty() {
        // SAFETY: pointer and length come from the same slice.
        let r = unsafe {
            match offset {
                Some(at) => libc::pwrite(fd, data.as_ptr().cast(), data.len(), off_t(what, at)?),
                None => libc::write(fd, data.as_ptr().cast(), data.len()),
            }
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(os_err(what.to_string())(e));
        }
        if r == 0 {
            return Err(ApiError::Invalid(format!(
                "{what}: the disk accepted no more bytes after {done}"
            )));
        }
        // 0 < r <= data.len().
        let n = r as usize;
        data = &data[n..];
        done += n as u64;
        if let Some(at) = &mut offset {
            *at += n as u64;
        }
    }
    Ok(done)
}

/// Reads up to `buf.len()` bytes at `offset` (or the file position when
/// `None`) with one call; returns the bytes read (0 at the end of the file).
pub(crate) fn read_some(
    fd: RawFd,
    buf: &mut [u8],
    offset: Option<u64>,
    what: &str,
) -> Result<u64, ApiError> {
    loop {
        // SAFETY: pointer and length come from the same slice.
        let r = unsafe {
            match offset {
                Some(at) => libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), off_t(what, at)?),
                None => libc::read(fd, buf.as_mut_ptr().cast(), buf.len()),
            }
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(os_err(what.to_string())(e));
        }
        return Ok(r as u64);
    }
}

/// A buffer error as an [`ApiError`] naming the operation.
pub(crate) fn buf_err(op: &str) -> impl FnOnce(crate::buffer::BufError) -> ApiError + '_ {
    move |e| ApiError::Invalid(format!("{op}: {e}"))
}

/// A buffer of `len` bytes (at most [`MAX_IO`]) of incompressible data, or
/// zeros.
pub(crate) fn data_buffer(op: &str, len: u64, zero: bool) -> Result<AlignedBuf, ApiError> {
    let len = len.min(MAX_IO) as usize;
    let buf = if zero {
        AlignedBuf::zeroed(len)
    } else {
        AlignedBuf::random(len, 0x9e37)
    };
    buf.map_err(buf_err(op))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_outside_their_range_name_themselves() {
        let e = offset_arg("write_at", -1).unwrap_err().to_string();
        assert_eq!(e, "write_at: offset -1 is negative");
        let e = offset_arg("read_at", u64::MAX as i128)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "read_at: offset 18446744073709551615 must be between 0 and 9223372036854775807"
            ),
            "{e}"
        );
        assert_eq!(offset_arg("x", i64::MAX as i128).unwrap(), i64::MAX as u64);
        let e = io_len_arg("append", (MAX_IO + 1) as i128)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("append: length 67108865 must be between"),
            "{e}"
        );
        assert_eq!(io_len_arg("append", 0).unwrap(), 0);
    }

    #[test]
    fn write_all_writes_everything_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("f")).unwrap();
        use std::os::fd::AsRawFd;
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        assert_eq!(
            write_all(f.as_raw_fd(), &data, Some(5), "t").unwrap(),
            10_000
        );
        let back = std::fs::read(dir.path().join("f")).unwrap();
        assert_eq!(back.len(), 10_005);
        assert_eq!(&back[5..], &data[..]);
        let e = write_all(f.as_raw_fd(), &data, Some(u64::MAX), "t").unwrap_err();
        assert!(
            e.to_string().contains("beyond the largest file offset"),
            "{e}"
        );
    }
}
