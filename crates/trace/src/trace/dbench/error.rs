//! What can be wrong with a load file, one variant per cause, each worded
//! as the error the user reads; [`DbenchError`] adds the file and the line.

use super::{MAX_OPEN, MAX_PATH};
use crate::trace::format::StepError;
use crate::trace::limits::{MAX_FILES, MAX_FILE_BYTES, MAX_LOG_LINE, MAX_OPS, MAX_TIME_US};

/// A line of a load file that cannot be converted.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {cause}")]
pub struct DbenchError {
    /// The load file's name as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub cause: LoadError,
}

/// Why a line of a load file cannot be converted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    /// A line longer than [`MAX_LOG_LINE`].
    #[error("the line is {0} bytes long; a load-file line may have at most {MAX_LOG_LINE}")]
    LongLine(usize),
    /// A quote without its end.
    #[error("a quoted path has no closing quote")]
    OpenQuote,
    /// A leading time that is not a number of seconds.
    #[error("'{0}' is not a time in seconds")]
    NotATime(String),
    /// A leading time past [`MAX_TIME_US`].
    #[error("time {0} s is past the latest a trace may name ({MAX_TIME_US} µs)")]
    LateTime(f64),
    /// A time and nothing after it.
    #[error("a time without an operation")]
    TimeAlone,
    /// An operation dbench does not know.
    #[error("unknown operation '{0}'")]
    UnknownOp(String),
    /// An operation and nothing after it.
    #[error("{0} without its fields and status")]
    NoFields(String),
    /// The last field is not an NT status.
    #[error(
        "the last field of {op} must be its NT status (NT_STATUS_OK, 0x0, ...), not '{found}'"
    )]
    NotAStatus {
        /// The operation.
        op: String,
        /// What was there.
        found: String,
    },
    /// An NT status plumb does not map.
    #[error(
        "status '{found}' is not one plumb maps to an errno (it knows {known} and their 0x codes)"
    )]
    UnknownStatus {
        /// The status.
        found: String,
        /// The statuses plumb maps, comma-separated.
        known: String,
    },
    /// Too many or too few fields.
    #[error("{op} takes {need} field(s) before its status, not {given}")]
    Arity {
        /// The operation.
        op: String,
        /// Fields it takes.
        need: usize,
        /// Fields given.
        given: usize,
    },
    /// A field that should be a number.
    #[error("{what} '{found}' is not a number")]
    NotANumber {
        /// The field.
        what: &'static str,
        /// What was there.
        found: String,
    },
    /// A file number outside an `int`.
    #[error("fnum {0} is not from 0 to {max}", max = i32::MAX)]
    FnumRange(u64),
    /// A transfer longer than one operation may move.
    #[error("length {len} is more than the {max} bytes one operation may move")]
    TooLong {
        /// The length.
        len: u64,
        /// The most allowed.
        max: u64,
    },
    /// An extent past the largest file.
    #[error("offset {offset} + length {len} is past the largest file a trace may describe ({MAX_FILE_BYTES} bytes)")]
    PastLargest {
        /// The offset.
        offset: u64,
        /// The length.
        len: u64,
    },
    /// An offset and a length whose sum overflows.
    #[error("offset {offset} + length {len} overflows")]
    Overflow {
        /// The offset.
        offset: u64,
        /// The length.
        len: u64,
    },
    /// An empty path.
    #[error("the path is empty")]
    EmptyPath,
    /// A path with a control byte.
    #[error("the path '{0}' holds a NUL or control byte")]
    ControlByte(String),
    /// A path that does not start with `\`.
    #[error("the path '{0}' does not start with \\ (dbench reads only such paths)")]
    NotRooted(String),
    /// A path in `\clients` outside any client's directory.
    #[error("the path '{0}' is in \\clients but not in a client's directory (\\clients\\clientN)")]
    NotAClient(String),
    /// A path of another client than the earlier lines'.
    #[error("the path '{path}' is client{this}'s, but earlier lines are client{earlier}'s: a load file is one client's operations")]
    OtherClient {
        /// The path.
        path: String,
        /// Its client.
        this: u64,
        /// The earlier lines' client.
        earlier: u64,
    },
    /// A path absolute after its client's directory.
    #[error("the path '{0}' is absolute after its client's directory")]
    Absolute(String),
    /// A path with `\\` inside.
    #[error("the path '{0}' has an empty name between separators")]
    EmptyName(String),
    /// A path with `..`.
    #[error("the path '{0}' climbs with '..'")]
    Climbs(String),
    /// A path with `.`.
    #[error("the path '{0}' has a '.' component")]
    Dot(String),
    /// A name longer than a file system allows.
    #[error("the path '{0}' has a name longer than 255 bytes")]
    LongName(String),
    /// A path longer than dbench may name beneath a client's directory.
    #[error("the path '{0}' is longer than {MAX_PATH} bytes")]
    LongPath(String),
    /// More than [`MAX_FILES`] paths.
    #[error("more than {MAX_FILES} files (the most a trace may name)")]
    TooManyFiles,
    /// More than [`MAX_OPS`] operations.
    #[error("the load file makes more than {MAX_OPS} operations (the most a trace may hold)")]
    TooManyOps,
    /// A step the trace cannot mark.
    #[error(transparent)]
    Step(#[from] StepError),
    /// A file number whose open failed under fileio.
    #[error("fnum {fnum} is not open: its NTCreateX at line {at} fails under dbench's fileio backend, which stops at this use")]
    OpenFailed {
        /// The file number.
        fnum: u64,
        /// The NTCreateX's line.
        at: usize,
    },
    /// A file number never opened.
    #[error("fnum {0} is not open (dbench's fileio backend stops at an unknown handle)")]
    NotOpen(u64),
    /// An operation on `\clients` itself.
    #[error("{0} of \\clients, above the client's own directory, cannot be replayed")]
    AboveClient(String),
    /// An operation that needs a name, on the client's directory.
    #[error("{0} of the client's own directory: a name is needed")]
    NeedsName(String),
    /// A call that succeeds where the load file says it fails.
    #[error("{op} {path} succeeds under dbench's fileio backend but the load file says it fails; dbench stops here")]
    Succeeds {
        /// The operation.
        op: String,
        /// The path as the line gives it.
        path: String,
    },
    /// A call that fails where the load file says it succeeds.
    #[error("{op} {path} fails under dbench's fileio backend ({errno}) but the load file says it succeeds; dbench stops here")]
    Fails {
        /// The operation.
        op: String,
        /// The path as the line gives it.
        path: String,
        /// The errno's name.
        errno: String,
    },
    /// A WriteX to a directory's file number.
    #[error(
        "WriteX to fnum {0}, a directory: the write fails and dbench's fileio backend stops here"
    )]
    WriteToDir(String),
    /// A WriteX that expects a short write.
    #[error("WriteX of {size} bytes expects {ret} written; a local write of {size} bytes writes {size}, and dbench's fileio backend stops here")]
    ShortWrite {
        /// Bytes asked.
        size: u64,
        /// Bytes the line expects written.
        ret: u64,
    },
    /// A Rmdir of the client's directory.
    #[error("Rmdir of the client's own directory cannot be replayed")]
    RmdirOwn,
    /// A Sleep past the latest time.
    #[error("sleeping {0} µs goes past the latest time a trace may name ({MAX_TIME_US} µs)")]
    LateSleep(u64),
    /// A create disposition past 5.
    #[error("create disposition {0} is not 0 to 5 (FILE_SUPERSEDE to FILE_OVERWRITE_IF)")]
    Disposition(u64),
    /// An NTCreateX of the client's directory as a file.
    #[error("NTCreateX of the client's own directory as a file (create options without 0x1)")]
    OwnDirAsFile,
    /// A successful open given fnum 0.
    #[error("fnum 0 for an open that succeeds (dbench's fileio backend marks a free slot with 0)")]
    FnumZero,
    /// A file number opened while open.
    #[error("fnum {0} is opened again while it is open (dbench's fileio backend would then hold it twice)")]
    OpenTwice(u64),
    /// More than [`MAX_OPEN`] files open.
    #[error("more than {MAX_OPEN} files open at once (dbench's fileio backend holds at most {MAX_OPEN} per client)")]
    TooManyOpen,
    /// A load file without any operation.
    #[error("the load file holds no operation")]
    Empty,
}
