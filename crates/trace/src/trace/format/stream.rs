//! Reading a trace without holding its operations: a [`Source`] is the
//! text (a file, read at its own offsets so several readers share it, or
//! text in memory), and each [`Stream`] reads it from the start one line
//! at a time through the same [`Reader`] as [`Trace::parse`], handing back
//! each operation as it comes. A line is at most [`MAX_TRACE_LINE`] bytes
//! and the whole at most [`MAX_STREAMED_TRACE_BYTES`]; errors name the
//! line, as [`Trace::parse`]'s do.

use super::error::{ParseError, TraceError};
use super::parse::{Parsed, Reader};
use super::Trace;
use crate::trace::limits::{MAX_STREAMED_TRACE_BYTES, MAX_TRACE_LINE};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// Where a trace's text is: a regular file or text in memory.
#[derive(Clone)]
enum Text {
    File(Arc<File>),
    Memory(Arc<str>),
}

/// A trace's text, to be read through as many times as needed.
#[derive(Clone)]
pub struct Source {
    /// The trace's name in errors.
    name: String,
    text: Text,
}

/// Text in memory as bytes, for a [`Cursor`].
struct Shared(Arc<str>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// Reads a shared file from its own offset, at most
/// [`MAX_STREAMED_TRACE_BYTES`] in all.
struct At {
    file: Arc<File>,
    pos: u64,
}

impl Read for At {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos > MAX_STREAMED_TRACE_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "too large",
            ));
        }
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Bytes each stream reads from a file at once.
const CHUNK: usize = 64 << 10;

impl Source {
    /// A trace held in memory (a pack's data file).
    pub fn memory(name: &str, text: impl Into<Arc<str>>) -> Source {
        Source {
            name: name.to_string(),
            text: Text::Memory(text.into()),
        }
    }

    /// A trace in `file`, which must be a regular file of at most
    /// [`MAX_STREAMED_TRACE_BYTES`].
    pub fn file(name: &str, file: File) -> Result<Source, TraceError> {
        let err = |cause| TraceError {
            file: name.to_string(),
            line: 1,
            cause,
        };
        let meta = file
            .metadata()
            .map_err(|e| err(ParseError::Read(e.to_string())))?;
        if !meta.file_type().is_file() {
            return Err(err(ParseError::Read(
                "not a regular file (plumb reads traces only from regular files)".into(),
            )));
        }
        if meta.len() > MAX_STREAMED_TRACE_BYTES {
            return Err(err(ParseError::TooLarge {
                bytes: meta.len(),
                max: MAX_STREAMED_TRACE_BYTES,
                how: "streamed (`plumb trace show`, a replay)",
            }));
        }
        Ok(Source {
            name: name.to_string(),
            text: Text::File(Arc::new(file)),
        })
    }

    /// The trace's name in errors.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A new reader from the first line, which it reads.
    pub fn stream(&self) -> Result<Stream, TraceError> {
        self.stream_keeping(true)
    }

    /// A new reader that counts the file records without keeping them (a
    /// reading checked against an earlier one's head).
    pub fn stream_counting_files(&self) -> Result<Stream, TraceError> {
        self.stream_keeping(false)
    }

    fn stream_keeping(&self, keep_files: bool) -> Result<Stream, TraceError> {
        let input: Box<dyn BufRead + Send> = match &self.text {
            Text::File(f) => Box::new(BufReader::with_capacity(
                CHUNK,
                At {
                    file: f.clone(),
                    pos: 0,
                },
            )),
            Text::Memory(t) => Box::new(Cursor::new(Shared(t.clone()))),
        };
        let mut s = Stream {
            name: self.name.clone(),
            input,
            buf: Vec::new(),
            line: 0,
            reader: None,
            hasher: Sha256::new(),
            since_pause: 0,
        };
        let first = match s.read_line()? {
            true => Some(Stream::text(&s.buf).map_err(|e| s.error(e))?),
            false => None,
        };
        let reader = Reader::new(first).map_err(|e| s.error(e))?;
        s.reader = Some(match keep_files {
            true => reader,
            false => reader.counting_files(),
        });
        Ok(s)
    }
}

/// What [`Stream::step`] came to.
#[derive(Debug)]
pub enum Step {
    /// An operation.
    Op(Parsed),
    /// [`POLL_LINES`] lines were read since the last pause.
    Paused,
    /// The end of the text.
    End,
}

/// Lines a long reading takes between two looks at its stop flag.
pub const POLL_LINES: usize = 4096;

/// One reading of a trace from its start.
pub struct Stream {
    name: String,
    input: Box<dyn BufRead + Send>,
    /// The line being read.
    buf: Vec<u8>,
    /// Its number, from 1.
    line: usize,
    /// Set once the first line is read.
    reader: Option<Reader>,
    /// Of every byte read.
    hasher: Sha256,
    /// Lines read since [`Stream::step`] last paused.
    since_pause: usize,
}

impl Stream {
    fn error(&self, cause: ParseError) -> TraceError {
        TraceError {
            file: self.name.clone(),
            line: self.line.max(1),
            cause,
        }
    }

    /// Reads the next line into `buf` without its end; false at the end
    /// of the text.
    fn read_line(&mut self) -> Result<bool, TraceError> {
        self.buf.clear();
        let limit = MAX_TRACE_LINE as u64 + 2;
        let n = (&mut self.input)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| self.error(ParseError::Read(e.to_string())))?;
        if n == 0 {
            return Ok(false);
        }
        self.hasher.update(&self.buf);
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        } else if n as u64 == limit {
            return Err(self.error(ParseError::LongLine));
        }
        Ok(true)
    }

    /// The line in `buf` as text.
    fn text(buf: &[u8]) -> Result<&str, ParseError> {
        std::str::from_utf8(buf).map_err(|_| ParseError::NotText)
    }

    /// The next operation; None at the end of the text.
    pub fn next_op(&mut self) -> Result<Option<Parsed>, TraceError> {
        loop {
            match self.step()? {
                Step::Op(parsed) => return Ok(Some(parsed)),
                Step::End => return Ok(None),
                Step::Paused => {}
            }
        }
    }

    /// Reads on to the next operation, pausing every [`POLL_LINES`] lines
    /// (whatever they hold), so a caller can look at its stop flag however
    /// the lines are made.
    pub fn step(&mut self) -> Result<Step, TraceError> {
        loop {
            if self.since_pause >= POLL_LINES {
                self.since_pause = 0;
                return Ok(Step::Paused);
            }
            self.since_pause += 1;
            if !self.read_line()? {
                return Ok(Step::End);
            }
            let reader = self.reader.as_mut().expect("read by Source::stream");
            match Stream::text(&self.buf).and_then(|line| reader.line(line)) {
                Ok(Some(parsed)) => return Ok(Step::Op(parsed)),
                Ok(None) => {}
                Err(e) => return Err(self.error(e)),
            }
        }
    }

    /// The head read so far (files, threads, times, step names).
    pub fn head(&self) -> &Trace {
        self.reader.as_ref().expect("read by Source::stream").head()
    }

    /// The SHA-256 of the text read so far (hex).
    pub fn digest(&self) -> String {
        format!("{:x}", self.hasher.clone().finalize())
    }

    /// File records read so far.
    pub fn files(&self) -> usize {
        self.reader.as_ref().map_or(0, Reader::files)
    }

    /// Operations read so far.
    pub fn count(&self) -> u64 {
        self.reader.as_ref().map_or(0, Reader::count)
    }

    /// The head, once the text has been read to its end; a trace without
    /// its `end` record is truncated.
    pub fn finish(self) -> Result<Trace, TraceError> {
        self.finish_hashed().map(|(head, _)| head)
    }

    /// [`Stream::finish`], with the SHA-256 of the text read (hex).
    pub fn finish_hashed(mut self) -> Result<(Trace, String), TraceError> {
        let reader = self.reader.take().expect("read by Source::stream");
        let head = reader.finish().map_err(|e| self.error(e))?;
        Ok((head, self.digest()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(s: &Source) -> Result<(Vec<Parsed>, Trace), TraceError> {
        let mut stream = s.stream()?;
        let mut all = Vec::new();
        while let Some(p) = stream.next_op()? {
            all.push(p);
        }
        Ok((all, stream.finish()?))
    }

    const TEXT: &str = "plumb-trace 3\r\nduration_us 10\nfile 0 f - a\nthread 0 1\n\
                        op 0 0 1 open 0 0 rw,creat @Open\n\n# note\nop 0 1 1 pwrite 0 0 4096\n\
                        op 0 2 1 close 0 @Close\nend 3\n";

    #[test]
    fn a_stream_reads_what_parse_reads_from_memory_and_from_a_file() {
        let whole = Trace::parse("t", TEXT).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.trace");
        std::fs::write(&path, TEXT).unwrap();
        let file = Source::file("t", File::open(&path).unwrap()).unwrap();
        for s in [Source::memory("t", TEXT), file] {
            let (all, head) = ops(&s).unwrap();
            let got: Vec<_> = all.iter().map(|p| p.op.clone()).collect();
            assert_eq!(got, whole.ops);
            assert_eq!(all[0].step, Some(0));
            assert_eq!(all[2].step, Some(1));
            assert_eq!(head.files, whole.files);
            assert_eq!(head.steps.names, whole.steps.names);
            let mut again = s.stream().unwrap();
            while again.next_op().unwrap().is_some() {}
            let (_, sha) = again.finish_hashed().unwrap();
            assert_eq!(sha, format!("{:x}", Sha256::digest(TEXT.as_bytes())));
            // Read again from the start: the same.
            assert_eq!(ops(&s).unwrap().0, all);
        }
    }

    #[test]
    fn a_stream_pauses_every_poll_lines_whatever_they_hold() {
        let mut text = String::from("plumb-trace 2\nduration_us 10\nfile 0 f 0 a\nthread 0 1\n");
        for i in 0..10_000 {
            text.push_str(&format!("op 0 {i} 1 stat 0\n"));
        }
        text.push_str("end 10000\n");
        let mut s = Source::memory("t", text.as_str()).stream().unwrap();
        let (mut ops, mut pauses) = (0, 0);
        loop {
            match s.step().unwrap() {
                Step::Op(_) => ops += 1,
                Step::Paused => pauses += 1,
                Step::End => break,
            }
        }
        assert_eq!(ops, 10_000);
        assert_eq!(
            pauses,
            10_005 / POLL_LINES,
            "a pause every {POLL_LINES} lines"
        );
    }

    #[test]
    fn errors_name_the_line_as_parse_does() {
        let cases = [
            (TEXT.replace("pwrite 0 0", "pwrite 9 0"), 8),
            (TEXT.replace("end 3\n", ""), 9),
            (TEXT.replace("end 3", "end 4"), 10),
            (format!("{TEXT}op 0 3 1 stat 0\n"), 11),
            (TEXT.replace("# note", &"x".repeat(MAX_TRACE_LINE + 5)), 7),
        ];
        for (text, line) in cases {
            let whole = Trace::parse("t", &text).unwrap_err();
            let e = ops(&Source::memory("t", text.as_str())).unwrap_err();
            assert_eq!(e.line, line, "{e}");
            assert_eq!(e.line, whole.line, "{e} / {whole}");
        }
        let bytes = [b"plumb-trace 2\n\xff\n".as_slice()].concat();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.trace");
        std::fs::write(&path, bytes).unwrap();
        let s = Source::file("b", File::open(&path).unwrap()).unwrap();
        let e = ops(&s).unwrap_err();
        assert_eq!((e.line, e.cause.clone()), (2, ParseError::NotText), "{e}");
        // A sparse file one byte past what is streamed: refused by its size,
        // before anything is read.
        let huge = dir.path().join("huge.trace");
        File::create(&huge)
            .unwrap()
            .set_len(MAX_STREAMED_TRACE_BYTES + 1)
            .unwrap();
        let e = Source::file("huge", File::open(&huge).unwrap())
            .err()
            .unwrap();
        assert!(matches!(e.cause, ParseError::TooLarge { .. }), "{e}");
        let e = Source::file("d", File::open(dir.path()).unwrap())
            .err()
            .unwrap();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
