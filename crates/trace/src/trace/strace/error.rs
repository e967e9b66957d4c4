//! What can be wrong with an strace log, one variant per cause, each
//! worded as the error the user reads; [`StraceError`] adds the file and
//! the line.

use crate::trace::limits::{
    MAX_FILES, MAX_FILE_BYTES, MAX_LOG_LINE, MAX_OPS, MAX_THREADS, MAX_TIME_US,
};

/// A line that could not be understood.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {cause}")]
pub struct StraceError {
    /// The log.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub cause: LogError,
}

/// Why a line of an strace log cannot be converted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LogError {
    /// A line longer than [`MAX_LOG_LINE`].
    #[error("the line is {0} bytes long; an strace line may have at most {MAX_LOG_LINE}")]
    LongLine(usize),
    /// A line without its timestamp.
    #[error("expected a timestamp: capture with strace -f -ttt -T -y -s 0")]
    NoTimestamp,
    /// A timestamp that is not a time.
    #[error("timestamp {0} is not a time")]
    BadTimestamp(f64),
    /// A timestamp too long after the first.
    #[error("timestamp {ts} is more than {} s after the log's first", MAX_TIME_US / 1_000_000)]
    LateTimestamp {
        /// The timestamp.
        ts: f64,
    },
    /// A `<... resumed>` line strace did not write.
    #[error("a malformed 'resumed' line")]
    BadResumed,
    /// A call that cannot be read.
    #[error("cannot read the system call in '{0}'")]
    BadCall(String),
    /// A duration that is not a time.
    #[error("duration <{0:e}> s is not a time")]
    BadDuration(f64),
    /// A size, offset or length past [`MAX_FILE_BYTES`].
    #[error(
        "{what} {value} is past the largest file a trace may describe ({MAX_FILE_BYTES} bytes)"
    )]
    PastLargest {
        /// What it is (`lseek offset`, `file size`, ...).
        what: &'static str,
        /// The value.
        value: u64,
    },
    /// An offset and a length whose sum overflows.
    #[error("offset {offset} + length {len} overflows")]
    Overflow {
        /// The offset.
        offset: u64,
        /// The length.
        len: u64,
    },
    /// More than [`MAX_THREADS`] threads.
    #[error("more than {MAX_THREADS} threads (the most plumb replays at once)")]
    TooManyThreads,
    /// More than [`MAX_FILES`] paths.
    #[error("more than {MAX_FILES} files (the most a trace may name)")]
    TooManyFiles,
    /// More than [`MAX_OPS`] operations.
    #[error("more than {MAX_OPS} operations (the most a trace may hold)")]
    TooManyOps,
}
