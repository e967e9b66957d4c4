//! Reading a trace: every record checked (handles opened before use and
//! never reused, file and thread ids in range, numbers within the bounds of
//! [`crate::trace::limits`]), errors naming the line. Versions 1 to 5.
//! The operations' arguments are read as the table (`ops.rs`) says.

use super::args::{file_size, number, time, Args, Handles};
use super::error::{shown, ParseError, TraceError};
use super::escape::decode;
use super::{
    errno, EntryKind, FileEntry, Op, OpKind, Trace, Tracer, MAGIC, MAGIC_V1, MAGIC_V3, MAGIC_V4,
    MAGIC_V5,
};
use crate::trace::limits::{
    MAX_FILES, MAX_FILE_TABLE_BYTES, MAX_OPS, MAX_TARGET, MAX_THREADS, MAX_TRACE_BYTES,
    MAX_TRACE_LINE,
};

impl Trace {
    /// Parses a trace held whole in memory; `name` is used in errors. Every
    /// reference is checked (handles opened before use and never reused,
    /// file and thread ids in range), every number is within the bounds of
    /// [`crate::trace::limits`], at most [`MAX_OPS`] operations are held,
    /// and a trace without its `end` record is reported as truncated.
    /// [`super::stream`] reads one without holding its operations.
    pub fn parse(name: &str, text: &str) -> Result<Trace, TraceError> {
        let err = |line: usize, cause: ParseError| TraceError {
            file: name.to_string(),
            line,
            cause,
        };
        if text.len() as u64 > MAX_TRACE_BYTES {
            return Err(err(
                1,
                ParseError::TooLarge {
                    bytes: text.len() as u64,
                    max: MAX_TRACE_BYTES,
                    how: "held in memory",
                },
            ));
        }
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let mut reader = Reader::new(lines.next().map(|(_, l)| l)).map_err(|e| err(1, e))?;
        let mut ops = Vec::new();
        let mut starts = Vec::new();
        for (n, line) in lines {
            let Some(parsed) = reader.line(line).map_err(|e| err(n, e))? else {
                continue;
            };
            if ops.len() >= MAX_OPS {
                return Err(err(n, ParseError::TooManyOps));
            }
            if let Some(id) = parsed.step {
                // Below MAX_OPS, hence a u32.
                starts.push((ops.len() as u32, id));
            }
            ops.push(parsed.op);
        }
        let mut t = reader.finish().map_err(|e| err(text.lines().count(), e))?;
        t.ops = ops;
        t.steps.starts = starts;
        Ok(t)
    }
}

/// The version the first line names.
fn version(first: Option<&str>) -> Result<u32, ParseError> {
    match first.map(str::trim_end) {
        Some(MAGIC_V5) => Ok(5),
        Some(MAGIC_V4) => Ok(4),
        Some(MAGIC_V3) => Ok(3),
        Some(MAGIC) => Ok(2),
        Some(MAGIC_V1) => Ok(1),
        Some(l) if l.starts_with("plumb-trace ") && l.len() < 64 => {
            Err(ParseError::Version(l.to_string()))
        }
        _ => Err(ParseError::NotATrace),
    }
}

/// One operation as read, with the step it begins, if it begins one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The operation.
    pub op: Op,
    /// The id of the step it begins (see [`super::Steps`]).
    pub step: Option<u16>,
}

/// Reads a trace one line at a time, keeping what later lines need — the
/// head (files, threads, times, step names) and the handles open — and
/// handing each operation back as it comes, so a caller may hold them all
/// ([`Trace::parse`]) or none ([`super::stream`]).
pub struct Reader {
    version: u32,
    /// Everything but the operations (no file entries when not kept).
    head: Trace,
    /// Files declared so far.
    files: usize,
    /// Bytes of their paths and link targets.
    table_bytes: usize,
    /// Whether the file entries are kept in `head` (a reading that only
    /// checks them against an earlier one counts them).
    keep_files: bool,
    /// Operations read so far.
    count: u64,
    /// Start of the last operation read.
    last_start: u64,
    /// The count the `end` record gave, once read.
    ended: Option<u64>,
    handles: Handles,
}

/// Word `i` of a record as a number.
fn field(words: &[&str], i: usize) -> Result<u64, ParseError> {
    let w = words
        .get(i)
        .ok_or_else(|| ParseError::RecordCut(words.first().copied().unwrap_or_default().into()))?;
    number(w)
}

impl Reader {
    /// A reader of the trace whose first line is `first`.
    pub fn new(first: Option<&str>) -> Result<Reader, ParseError> {
        Ok(Reader {
            version: version(first)?,
            head: Trace::default(),
            files: 0,
            table_bytes: 0,
            keep_files: true,
            count: 0,
            last_start: 0,
            ended: None,
            handles: Handles::default(),
        })
    }

    /// A reader that counts the file entries without keeping them.
    pub fn counting_files(mut self) -> Reader {
        self.keep_files = false;
        self
    }

    /// The head read so far: files (unless only counted), threads, times
    /// and step names (no operations).
    pub fn head(&self) -> &Trace {
        &self.head
    }

    /// Files declared so far.
    pub fn files(&self) -> usize {
        self.files
    }

    /// Operations read so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The head, once the `end` record has been read; a trace without it
    /// is truncated.
    pub fn finish(self) -> Result<Trace, ParseError> {
        match self.ended {
            Some(_) => Ok(self.head),
            None => Err(ParseError::Truncated(self.count)),
        }
    }

    /// Reads one line after the first: the operation it holds, if any.
    pub fn line(&mut self, line: &str) -> Result<Option<Parsed>, ParseError> {
        if line.len() > MAX_TRACE_LINE {
            return Err(ParseError::LongLine);
        }
        if line.trim().is_empty() || line.starts_with('#') {
            return Ok(None);
        }
        if let Some(count) = self.ended {
            return Err(ParseError::AfterEnd(count));
        }
        let words: Vec<&str> = line.split(' ').collect();
        match words.first().copied().unwrap_or_default() {
            "duration_us" => self.head.duration_us = time(field(&words, 1)?)?,
            "tracer" if self.version >= 2 => self.head.tracer = Some(tracer(&words)?),
            "untraced" if self.version >= 4 => self.head.untraced_us = Some(untraced(&words)?),
            "untraced" => return Err(ParseError::UntracedBeforeV4),
            "file" => self.file(&words)?,
            "thread" => self.thread(&words)?,
            "op" => return self.op(&words).map(Some),
            "end" => self.end(&words)?,
            other => return Err(ParseError::UnknownRecord(shown(other))),
        }
        Ok(None)
    }

    fn file(&mut self, words: &[&str]) -> Result<(), ParseError> {
        if self.files >= MAX_FILES {
            return Err(ParseError::TooManyFiles);
        }
        if field(words, 1)? != self.files as u64 {
            return Err(ParseError::FileSequence(self.files));
        }
        let entry = file_record(words, self.version)?;
        let bytes = entry.path.len() + entry.target.as_ref().map_or(0, String::len);
        self.table_bytes = self.table_bytes.saturating_add(bytes);
        if self.table_bytes > MAX_FILE_TABLE_BYTES {
            return Err(ParseError::FileTableBytes);
        }
        self.files += 1;
        if self.keep_files {
            self.head.files.push(entry);
        }
        Ok(())
    }

    fn thread(&mut self, words: &[&str]) -> Result<(), ParseError> {
        if self.head.threads.len() >= MAX_THREADS {
            return Err(ParseError::TooManyThreads);
        }
        if field(words, 1)? != self.head.threads.len() as u64 {
            return Err(ParseError::ThreadSequence(self.head.threads.len()));
        }
        self.head.threads.push(field(words, 2)?);
        Ok(())
    }

    fn op(&mut self, words: &[&str]) -> Result<Parsed, ParseError> {
        // A step begins here: "@NAME" after everything else (version 3).
        let (words, step) = match words.last().and_then(|l| l.strip_prefix('@')) {
            Some(name) if self.version >= 3 => (&words[..words.len() - 1], Some(name)),
            Some(_) => return Err(ParseError::StepBeforeV3),
            None => (words, None),
        };
        let op = parse_op(
            words,
            &self.head,
            self.files,
            &mut self.handles,
            self.version,
        )?;
        if self.count > 0 && op.start_us < self.last_start {
            return Err(ParseError::OutOfOrder);
        }
        let step = match step {
            Some(name) => Some(self.head.steps.id(name)?),
            None => None,
        };
        self.last_start = op.start_us;
        self.count += 1;
        Ok(Parsed { op, step })
    }

    fn end(&mut self, words: &[&str]) -> Result<(), ParseError> {
        let count = field(words, 1)?;
        if count != self.count {
            return Err(ParseError::EndCount {
                said: count,
                read: self.count,
            });
        }
        self.ended = Some(count);
        Ok(())
    }
}

/// An `untraced WALL_US` record.
fn untraced(words: &[&str]) -> Result<u64, ParseError> {
    if words.len() != 2 {
        return Err(ParseError::UntracedShape);
    }
    time(field(words, 1)?)
}

/// A `tracer NAME WALL_US CALLS` record.
fn tracer(words: &[&str]) -> Result<Tracer, ParseError> {
    let name = words
        .get(1)
        .filter(|w| (1..=32).contains(&w.len()) && w.bytes().all(|b| b.is_ascii_alphanumeric()))
        .ok_or(ParseError::TracerName)?;
    if words.len() != 4 {
        return Err(ParseError::TracerShape);
    }
    Ok(Tracer {
        name: name.to_string(),
        wall_us: time(field(words, 2)?)?,
        calls: field(words, 3)?,
    })
}

/// A `file` record: `file ID SIZE PATH` (version 1) or
/// `file ID KIND SIZE PATH [TARGET]` (version 2, TARGET for symlinks only).
fn file_record(words: &[&str], version: u32) -> Result<FileEntry, ParseError> {
    let cut = || ParseError::RecordCut("file".into());
    let (kind, rest) = if version == 1 {
        (EntryKind::File, &words[2.min(words.len())..])
    } else {
        let kind = EntryKind::from_letter(words.get(2).ok_or_else(cut)?)?;
        (kind, &words[3.min(words.len())..])
    };
    let size = match rest.first() {
        Some(&"-") => None,
        Some(w) => Some(file_size(number(w)?)?),
        None => return Err(cut()),
    };
    let path = decode(rest.get(1).ok_or(ParseError::NoPath)?)?;
    let target = match (kind, rest.get(2)) {
        (EntryKind::Symlink, Some(t)) => {
            let target = decode(t)?;
            if target.len() > MAX_TARGET {
                return Err(ParseError::LongTarget(target.len()));
            }
            Some(target)
        }
        (_, None) => None,
        (_, Some(_)) => return Err(ParseError::ExtraWords),
    };
    if rest.len() > 3 {
        return Err(ParseError::ExtraWords);
    }
    Ok(FileEntry {
        path,
        size,
        kind,
        target,
    })
}

/// An `op THREAD START DUR NAME ARGS... [=ERRNO]` record: the thread and
/// times, then the arguments as the table of operations reads them, then
/// the version and the count of arguments.
fn parse_op(
    w: &[&str],
    t: &Trace,
    files: usize,
    handles: &mut Handles,
    version: u32,
) -> Result<Op, ParseError> {
    // A failed call ends with "=ERRNO" (version 2).
    let (w, failed) = match w.last().and_then(|l| l.strip_prefix('=')) {
        Some(e) if version >= 2 => (&w[..w.len() - 1], Some(errno::parse(e)?)),
        _ => (w, None),
    };
    let mut a = Args {
        words: w,
        files,
        handles,
        failed: failed.is_some(),
        name: "op",
    };
    let thread = a.number(1)?;
    if thread >= t.threads.len() as u64 {
        return Err(ParseError::Thread(thread));
    }
    let start_us = time(a.number(2)?)?;
    let dur_us = time(a.number(3)?)?;
    let name = *w.get(4).ok_or(ParseError::NoName)?;
    let (kind, since, arity) = OpKind::parse_args(name, &mut a)?;
    if version < since {
        return Err(ParseError::Newer {
            name: kind.name(),
            since,
        });
    }
    if w.len() != 5 + arity {
        return Err(ParseError::Arity {
            name: kind.name(),
            arity,
            given: w.len() - 5,
        });
    }
    Ok(Op {
        // Below the thread count, at most MAX_THREADS.
        thread: thread as u32,
        start_us,
        dur_us,
        kind,
        failed,
    })
}
