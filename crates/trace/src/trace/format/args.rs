//! The kinds of argument an operation takes, each knowing how to read its
//! word (with every check the format makes: handles opened before use and
//! never reused, file ids declared, numbers within [`crate::trace::limits`])
//! and how to write it back. The table of operations (`ops.rs`) gives each
//! field of an operation one of these kinds, so reading and writing follow
//! from the table.

use super::error::{shown, ParseError};
use super::escape::{decode, encode};
use super::{OpenFlags, RenameMode};
use crate::trace::limits::{
    MAX_FILE_BYTES, MAX_HANDLE, MAX_IO_BYTES, MAX_OPEN_HANDLES, MAX_TIME_US,
};
use std::collections::HashSet;

/// A decimal number of the trace (no sign, no more than u64 holds).
pub(super) fn number(w: &str) -> Result<u64, ParseError> {
    w.parse().map_err(|_| ParseError::NotANumber(shown(w)))
}

/// A time in µs, within [`MAX_TIME_US`].
pub(super) fn time(us: u64) -> Result<u64, ParseError> {
    if us > MAX_TIME_US {
        return Err(ParseError::Time(us));
    }
    Ok(us)
}

/// A file size or offset, within [`MAX_FILE_BYTES`].
pub(super) fn file_size(bytes: u64) -> Result<u64, ParseError> {
    if bytes > MAX_FILE_BYTES {
        return Err(ParseError::FileBytes(bytes));
    }
    Ok(bytes)
}

/// An offset and a length whose end is within [`MAX_FILE_BYTES`], the
/// length at most `max_len`.
fn extent(offset: u64, len: u64, max_len: u64) -> Result<(u64, u64), ParseError> {
    if len > max_len {
        return Err(ParseError::TooLong { len, max: max_len });
    }
    let end = offset
        .checked_add(len)
        .ok_or(ParseError::Overflow { offset, len })?;
    file_size(end)?;
    Ok((offset, len))
}

/// Handles while parsing: those open now, and every one ever named (a
/// handle id is never reused, so the replay's threads can cache them).
/// Both stay small however long the trace: at most [`MAX_OPEN_HANDLES`]
/// are open at once, and the ids named are a bit each, up to the highest.
#[derive(Default)]
pub(super) struct Handles {
    open: HashSet<u32>,
    seen: Bits,
}

/// A set of handle ids, a bit each up to the highest one named (at most
/// [`MAX_HANDLE`] bits, 2 MiB; a trace numbering its handles from 0 as
/// plumb's converters do takes a bit per handle it opens).
#[derive(Default)]
struct Bits(Vec<u64>);

impl Bits {
    /// Adds `h`; false when it was there already.
    fn insert(&mut self, h: u32) -> bool {
        let (word, bit) = (h as usize / 64, 1u64 << (h % 64));
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        let fresh = self.0[word] & bit == 0;
        self.0[word] |= bit;
        fresh
    }
}

/// What reading an operation's arguments needs: its words (`op THREAD
/// START DUR NAME ARGS...`, without `=ERRNO` and `@STEP`), the trace so far,
/// the handles, and whether the call failed in the recording.
pub(super) struct Args<'a> {
    pub(super) words: &'a [&'a str],
    /// Files declared so far (file ids are below).
    pub(super) files: usize,
    pub(super) handles: &'a mut Handles,
    pub(super) failed: bool,
    /// The operation's name as the table spells it.
    pub(super) name: &'static str,
}

impl Args<'_> {
    /// Word `at`, or the error of an operation cut short.
    fn word(&self, at: usize) -> Result<&str, ParseError> {
        self.words.get(at).copied().ok_or_else(|| {
            ParseError::OpCut(self.words.get(4).copied().unwrap_or("op").to_string())
        })
    }

    /// Word `at` as a number.
    pub(super) fn number(&self, at: usize) -> Result<u64, ParseError> {
        number(self.word(at)?)
    }
}

/// One kind of argument: a field of an operation, read from word `at` of
/// its record and written back the same way.
pub(super) trait Arg {
    /// The field's type in [`super::OpKind`].
    type Value;
    /// True when the word may be left out (it is then not counted among
    /// the operation's arguments).
    const OPTIONAL: bool = false;
    /// Reads and checks word `at`.
    fn parse(a: &mut Args, at: usize) -> Result<Self::Value, ParseError>;
    /// The word as written, None when nothing is written.
    fn text(v: &Self::Value) -> Option<String>;
    /// The operation's name when this field holds it (see [`Call`]).
    fn op_name(_v: &Self::Value) -> Option<&'static str> {
        None
    }
}

/// The system call of an operation that has several (`read`, `pread`,
/// ...): its name, not an argument.
pub(super) struct Call;

impl Arg for Call {
    type Value = &'static str;
    fn parse(a: &mut Args, _at: usize) -> Result<&'static str, ParseError> {
        Ok(a.name)
    }
    fn text(_v: &&'static str) -> Option<String> {
        None
    }
    fn op_name(v: &&'static str) -> Option<&'static str> {
        Some(v)
    }
}

/// A handle open now.
pub(super) struct Handle;

impl Arg for Handle {
    type Value = u32;
    fn parse(a: &mut Args, at: usize) -> Result<u32, ParseError> {
        let h = a.number(at)?;
        match u32::try_from(h) {
            Ok(h) if a.handles.open.contains(&h) => Ok(h),
            _ => Err(ParseError::NotOpen(h)),
        }
    }
    fn text(v: &u32) -> Option<String> {
        Some(v.to_string())
    }
}

/// A handle the operation closes: open until then, unless the call failed.
pub(super) struct Closing;

impl Arg for Closing {
    type Value = u32;
    fn parse(a: &mut Args, at: usize) -> Result<u32, ParseError> {
        let h = Handle::parse(a, at)?;
        if !a.failed {
            a.handles.open.remove(&h);
        }
        Ok(h)
    }
    fn text(v: &u32) -> Option<String> {
        Some(v.to_string())
    }
}

/// A new handle: below [`MAX_HANDLE`], never named before; it is open
/// afterwards unless the call failed.
pub(super) struct Fresh;

impl Arg for Fresh {
    type Value = u32;
    fn parse(a: &mut Args, at: usize) -> Result<u32, ParseError> {
        let w = a.words.get(at).ok_or(ParseError::NewHandleMissing)?;
        let h = number(w)?;
        if h >= MAX_HANDLE {
            return Err(ParseError::HandleRange(h));
        }
        let h = h as u32;
        if !a.handles.seen.insert(h) {
            return Err(ParseError::Reopened(h));
        }
        if !a.failed {
            if a.handles.open.len() >= MAX_OPEN_HANDLES {
                return Err(ParseError::TooManyOpen);
            }
            a.handles.open.insert(h);
        }
        Ok(h)
    }
    fn text(v: &u32) -> Option<String> {
        Some(v.to_string())
    }
}

/// A file id with its file record above.
pub(super) struct FileId;

impl Arg for FileId {
    type Value = u32;
    fn parse(a: &mut Args, at: usize) -> Result<u32, ParseError> {
        let f = a.number(at)?;
        if f >= a.files as u64 {
            return Err(ParseError::File(f));
        }
        u32::try_from(f).map_err(|_| ParseError::File(f))
    }
    fn text(v: &u32) -> Option<String> {
        Some(v.to_string())
    }
}

/// A number checked only with the length after it (an offset).
pub(super) struct Number;

impl Arg for Number {
    type Value = u64;
    fn parse(a: &mut Args, at: usize) -> Result<u64, ParseError> {
        a.number(at)
    }
    fn text(v: &u64) -> Option<String> {
        Some(v.to_string())
    }
}

/// A size, offset or length within the largest file a trace may describe.
pub(super) struct Size;

impl Arg for Size {
    type Value = u64;
    fn parse(a: &mut Args, at: usize) -> Result<u64, ParseError> {
        file_size(a.number(at)?)
    }
    fn text(v: &u64) -> Option<String> {
        Some(v.to_string())
    }
}

/// The length of a read or write, after its offset: at most
/// [`MAX_IO_BYTES`], and offset + length within the largest file.
pub(super) struct IoLen;

impl Arg for IoLen {
    type Value = u64;
    fn parse(a: &mut Args, at: usize) -> Result<u64, ParseError> {
        let offset = a.number(at.saturating_sub(1))?;
        Ok(extent(offset, a.number(at)?, MAX_IO_BYTES)?.1)
    }
    fn text(v: &u64) -> Option<String> {
        Some(v.to_string())
    }
}

/// The length of a byte range after its offset (a sync, an allocation, a
/// lock): offset + length within the largest file.
pub(super) struct RangeLen;

impl Arg for RangeLen {
    type Value = u64;
    fn parse(a: &mut Args, at: usize) -> Result<u64, ParseError> {
        let offset = a.number(at.saturating_sub(1))?;
        Ok(extent(offset, a.number(at)?, MAX_FILE_BYTES)?.1)
    }
    fn text(v: &u64) -> Option<String> {
        Some(v.to_string())
    }
}

/// A buffer's size (a directory read's): at most [`MAX_IO_BYTES`].
pub(super) struct BufLen;

impl Arg for BufLen {
    type Value = u64;
    fn parse(a: &mut Args, at: usize) -> Result<u64, ParseError> {
        Ok(extent(0, a.number(at)?, MAX_IO_BYTES)?.1)
    }
    fn text(v: &u64) -> Option<String> {
        Some(v.to_string())
    }
}

/// Permission bits in octal (at most 07777).
pub(super) struct Mode;

impl Arg for Mode {
    type Value = u32;
    fn parse(a: &mut Args, at: usize) -> Result<u32, ParseError> {
        let w = a.words.get(at).ok_or(ParseError::ModeMissing)?;
        match u32::from_str_radix(w, 8) {
            Ok(m) if m <= 0o7777 => Ok(m),
            _ => Err(ParseError::Mode(shown(w))),
        }
    }
    fn text(v: &u32) -> Option<String> {
        Some(format!("{v:o}"))
    }
}

/// An open's flags.
pub(super) struct Flags;

impl Arg for Flags {
    type Value = OpenFlags;
    fn parse(a: &mut Args, at: usize) -> Result<OpenFlags, ParseError> {
        OpenFlags::parse(a.words.get(at).ok_or(ParseError::FlagsMissing)?)
    }
    fn text(v: &OpenFlags) -> Option<String> {
        Some(v.text())
    }
}

/// A rename's mode: nothing for a plain rename, `noreplace` or `exchange`.
pub(super) struct RenameFlag;

impl Arg for RenameFlag {
    type Value = RenameMode;
    const OPTIONAL: bool = true;
    fn parse(a: &mut Args, at: usize) -> Result<RenameMode, ParseError> {
        match a.words.get(at) {
            None => Ok(RenameMode::Replace),
            Some(&"noreplace") => Ok(RenameMode::NoReplace),
            Some(&"exchange") => Ok(RenameMode::Exchange),
            Some(other) => Err(ParseError::RenameMode(shown(other))),
        }
    }
    fn text(v: &RenameMode) -> Option<String> {
        match v {
            RenameMode::Replace => None,
            RenameMode::NoReplace => Some("noreplace".into()),
            RenameMode::Exchange => Some("exchange".into()),
        }
    }
}

/// Whether an operation writes: `w` (true) or `r`. A lock's kind
/// (exclusive or shared) and a map's (shared and writable, or read-only or
/// private); errors name the operation.
pub(super) struct RwKind;

impl Arg for RwKind {
    type Value = bool;
    fn parse(a: &mut Args, at: usize) -> Result<bool, ParseError> {
        match a.words.get(at) {
            Some(&"w") => Ok(true),
            Some(&"r") => Ok(false),
            Some(other) => Err(ParseError::Kind {
                op: a.name,
                word: shown(other),
            }),
            None => Err(ParseError::KindMissing(a.name)),
        }
    }
    fn text(v: &bool) -> Option<String> {
        Some(if *v { "w" } else { "r" }.into())
    }
}

/// A symlink's target, percent-encoded.
pub(super) struct Target;

impl Arg for Target {
    type Value = String;
    fn parse(a: &mut Args, at: usize) -> Result<String, ParseError> {
        decode(a.words.get(at).ok_or(ParseError::NoTarget)?)
    }
    fn text(v: &String) -> Option<String> {
        Some(encode(v))
    }
}
