//! What can be wrong with a trace, one variant per cause, each worded as
//! the error the user reads; [`TraceError`] adds the file and the line.

use super::steps::MAX_STEPS;
use super::{MAGIC, MAGIC_V1, MAGIC_V3, MAGIC_V4, MAGIC_V5};
use crate::trace::limits::{
    MAX_FILES, MAX_FILE_BYTES, MAX_HANDLE, MAX_OPEN_HANDLES, MAX_OPS, MAX_TARGET, MAX_THREADS,
    MAX_TIME_US, MAX_TRACE_LINE,
};

/// A malformed trace, naming the record.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {cause}")]
pub struct TraceError {
    /// The trace file.
    pub file: String,
    /// 1-based line of the record.
    pub line: usize,
    /// What is wrong.
    pub cause: ParseError,
}

/// Up to 40 characters of a word of the input, as an error shows it.
pub(crate) fn shown(w: &str) -> String {
    w.chars().take(40).collect()
}

/// What is wrong with one record of a trace (or with the whole of it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The trace is larger than what is read of it:
    /// [`crate::trace::limits::MAX_TRACE_BYTES`] held in memory,
    /// [`crate::trace::limits::MAX_STREAMED_TRACE_BYTES`] replayed.
    #[error("the trace is {bytes} bytes; a trace {how} may have at most {max}")]
    TooLarge {
        /// Its size.
        bytes: u64,
        /// The most allowed.
        max: u64,
        /// How it is read (`held in memory`, `replayed`).
        how: &'static str,
    },
    /// A line that is not UTF-8 text.
    #[error("the line is not UTF-8 text")]
    NotText,
    /// Reading the trace failed.
    #[error("reading the trace: {0}")]
    Read(String),
    /// File paths and link targets of more than
    /// [`crate::trace::limits::MAX_FILE_TABLE_BYTES`] together.
    #[error("the file records' paths and targets pass {} MiB together, the most a trace may name", crate::trace::limits::MAX_FILE_TABLE_BYTES >> 20)]
    FileTableBytes,
    /// More than [`MAX_OPEN_HANDLES`] handles open at once.
    #[error("more than {MAX_OPEN_HANDLES} handles open at once")]
    TooManyOpen,
    /// A `plumb-trace N` line of a version this plumb does not read.
    #[error("unsupported trace version '{0}' (this plumb reads '{MAGIC_V5}', '{MAGIC_V4}', '{MAGIC_V3}', '{MAGIC}' and '{MAGIC_V1}')")]
    Version(String),
    /// The first line is not a trace's.
    #[error("not a plumb trace (the first line must be '{MAGIC}')")]
    NotATrace,
    /// A line longer than [`MAX_TRACE_LINE`].
    #[error("the line is longer than a trace line may be: at most {MAX_TRACE_LINE} bytes")]
    LongLine,
    /// Something after the `end` record.
    #[error("a record after 'end {0}'")]
    AfterEnd(u64),
    /// A record (`file`, `thread`, ...) without all its words.
    #[error("'{0}' record is cut short")]
    RecordCut(String),
    /// A word that should be a decimal number.
    #[error("'{0}' is not a number")]
    NotANumber(String),
    /// A time past [`MAX_TIME_US`].
    #[error("time {0} µs is past the latest a trace may name ({MAX_TIME_US} µs)")]
    Time(u64),
    /// A tracer record whose tracer name is not letters and digits.
    #[error("a tracer record names its tracer in letters and digits")]
    TracerName,
    /// An untraced record of the wrong length.
    #[error("an untraced record is 'untraced WALL_US'")]
    UntracedShape,
    /// An untraced record in a trace older than version 4.
    #[error("'untraced' is a record of trace version 4")]
    UntracedBeforeV4,
    /// A tracer record of the wrong length.
    #[error("a tracer record is 'tracer NAME WALL_US CALLS'")]
    TracerShape,
    /// More than [`MAX_FILES`] file records.
    #[error("more than {MAX_FILES} files (the most a trace may name)")]
    TooManyFiles,
    /// A file record out of sequence.
    #[error("file ids must count up from 0; expected {0}")]
    FileSequence(usize),
    /// More than [`MAX_THREADS`] thread records.
    #[error("more than {MAX_THREADS} threads (the most plumb replays at once)")]
    TooManyThreads,
    /// A thread record out of sequence.
    #[error("thread ids must count up from 0; expected {0}")]
    ThreadSequence(usize),
    /// More than [`MAX_OPS`] operations.
    #[error("more than {MAX_OPS} operations (the most a trace held whole in memory may have; `plumb trace show` and replays stream any number)")]
    TooManyOps,
    /// `@STEP` in a trace older than version 3.
    #[error("'@STEP' is a record of trace version 3")]
    StepBeforeV3,
    /// An operation that starts before the one above it.
    #[error("operations must be in start order")]
    OutOfOrder,
    /// The `end` record's count is not the number of operations.
    #[error("'end' says {said} operations but {read} were read")]
    EndCount {
        /// What `end` says.
        said: u64,
        /// Operations read.
        read: u64,
    },
    /// A record this plumb does not know.
    #[error("unknown record '{0}'")]
    UnknownRecord(String),
    /// No `end` record.
    #[error("the trace is truncated: no 'end' record after {0} operations")]
    Truncated(u64),
    /// A file record's kind is not `f`, `d` or `l`.
    #[error("file kind '{0}' is not f, d or l")]
    FileKind(String),
    /// A file record without its path.
    #[error("file record without a path")]
    NoPath,
    /// A file record with words after its path (and target).
    #[error("file record has extra words")]
    ExtraWords,
    /// A size, offset or extent past [`MAX_FILE_BYTES`].
    #[error("{0} bytes is past the largest file a trace may describe ({MAX_FILE_BYTES} bytes)")]
    FileBytes(u64),
    /// A `%` escape without its two hex digits.
    #[error("a % escape is cut short")]
    EscapeCut,
    /// A `%` escape that is not hex.
    #[error("bad % escape '%{0}'")]
    BadEscape(String),
    /// A decoded path that is not UTF-8.
    #[error("path is not UTF-8")]
    NotUtf8,
    /// An operation without all its words (it names the operation, or `op`).
    #[error("'{0}' operation is cut short")]
    OpCut(String),
    /// An operation of a thread without a thread record.
    #[error("thread {0} is not declared")]
    Thread(u64),
    /// An operation on a file without a file record.
    #[error("file {0} is not declared")]
    File(u64),
    /// A handle that is not open.
    #[error("handle {0} is used before it is opened")]
    NotOpen(u64),
    /// An open or dup without its new handle.
    #[error("the new handle is missing")]
    NewHandleMissing,
    /// A handle id of [`MAX_HANDLE`] or more.
    #[error("handle {0} is not below {MAX_HANDLE}")]
    HandleRange(u64),
    /// A handle id opened before.
    #[error("handle {0} is opened a second time")]
    Reopened(u32),
    /// A transfer longer than one operation may move.
    #[error("length {len} is more than the {max} bytes one operation may move")]
    TooLong {
        /// The length.
        len: u64,
        /// The most allowed.
        max: u64,
    },
    /// An offset and a length whose sum overflows.
    #[error("offset {offset} + length {len} overflows")]
    Overflow {
        /// The offset.
        offset: u64,
        /// The length.
        len: u64,
    },
    /// A chmod or fchmod without its mode.
    #[error("the mode is missing")]
    ModeMissing,
    /// A mode that is not octal permission bits.
    #[error("'{0}' is not a mode (octal, at most 7777)")]
    Mode(String),
    /// An open without its flags.
    #[error("open without flags")]
    FlagsMissing,
    /// An open's access mode is not r, w or rw.
    #[error("open mode '{0}' is not r, w or rw")]
    OpenMode(String),
    /// An open flag this plumb does not know.
    #[error("unknown open flag '{0}'")]
    OpenFlag(String),
    /// An `op` record without the operation's name.
    #[error("operation without a name")]
    NoName,
    /// An operation the trace's version cannot hold.
    #[error("'{name}' is an operation of trace version {since}")]
    Newer {
        /// The operation.
        name: &'static str,
        /// The first version that has it.
        since: u32,
    },
    /// A rename's mode is not noreplace or exchange.
    #[error("rename mode '{0}' is not noreplace or exchange")]
    RenameMode(String),
    /// A symlink without its target.
    #[error("symlink without a target")]
    NoTarget,
    /// A symlink's target longer than a link may hold ([`MAX_TARGET`]).
    #[error("a symlink's target is {0} bytes; a link holds at most {MAX_TARGET}")]
    LongTarget(usize),
    /// A lock's or a map's kind is not r or w.
    #[error("{op} kind '{word}' is not r or w")]
    Kind {
        /// The operation (`lock`, `map`).
        op: &'static str,
        /// The word found.
        word: String,
    },
    /// A lock or a map without its kind.
    #[error("{0} without its kind (r or w)")]
    KindMissing(&'static str),
    /// An operation this plumb does not know.
    #[error("unknown operation '{0}'")]
    UnknownOp(String),
    /// An operation with too many or too few arguments.
    #[error("'{name}' takes {arity} arguments, not {given}")]
    Arity {
        /// The operation.
        name: &'static str,
        /// Arguments it takes.
        arity: usize,
        /// Arguments given.
        given: usize,
    },
    /// `=ERRNO` naming no error number.
    #[error("'{0}' is not an error number (ENOENT, E2, ...)")]
    Errno(String),
    /// A step that cannot be marked.
    #[error(transparent)]
    Step(#[from] StepError),
}

/// Why a step cannot be marked (see [`super::Steps::mark`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// A name of the wrong length or with other characters.
    #[error("step name '{0}' is not 1 to 32 letters, digits, '_', '-' or '.'")]
    Name(String),
    /// More than [`MAX_STEPS`] names.
    #[error("more than {MAX_STEPS} step names (the most a trace may have)")]
    TooMany,
    /// A step marked before one marked earlier.
    #[error("steps must be marked in operation order")]
    Order,
}
