//! What a trace's operations ask of a replay, gathered in one pass as they
//! are read ([`Profiler`]): how many there are, the bytes and names the
//! replay may make, each thread's largest transfer, whether any open is
//! direct, the think-time scale, and what the operations do to each file
//! (for the lay-out). A replay streaming its trace reads it once for this
//! and once to play it ([`Prepared`]); the profile holds per file and per
//! thread, never per operation.

use super::budget::{Estimate, Metadata};
use super::format::stream::{Source, Step};
use super::format::{Op, OpKind, ThinkTally, Trace, TraceError};
use plumb_base::halt::{Halt, Halted};
use sha2::Digest;

/// What the operations do to one file, for the lay-out: whether one
/// creates its name, makes it a symlink, or makes or removes it as a
/// directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileUse {
    /// An open that creates it, a mkdir, a symlink, or a rename or link
    /// to it succeeded in the recording.
    pub created: bool,
    /// A symlink of this name succeeded in the recording.
    pub symlinked: bool,
    /// Some `mkdir` names it (failed or not).
    pub mkdir: bool,
    /// Some `rmdir` names it (failed or not).
    pub rmdir: bool,
}

/// What a trace's operations ask of one client's replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Operations (records, counted or not).
    pub ops: u64,
    /// Bytes the replay may write at most (see [`Estimate::bytes`]).
    pub bytes: u64,
    /// The names it may make (see [`Estimate::metadata`]).
    pub metadata: Metadata,
    /// Per thread: its largest read, write or directory read, in bytes.
    pub largest: Vec<u64>,
    /// Some open asks for O_DIRECT.
    pub direct_io: bool,
    /// The share of think time a replay at speed 1 keeps (see
    /// [`Trace::think_scale`]).
    pub think_scale: f64,
    /// Per file id.
    pub files: Vec<FileUse>,
}

/// Gathers a [`Profile`] one operation at a time, in the trace's order.
#[derive(Default)]
pub struct Profiler {
    ops: u64,
    estimate: Estimate,
    largest: Vec<u64>,
    direct_io: bool,
    think: ThinkTally,
    files: Vec<FileUse>,
}

impl Profiler {
    /// Takes in `op`, the next operation of the trace whose head has been
    /// read up to it.
    pub fn op(&mut self, head: &Trace, op: &Op) {
        self.ops = self.ops.saturating_add(1);
        self.estimate.op(head, op);
        self.think.op(op);
        let transfer = op.kind.transfer();
        let thread = op.thread as usize;
        if self.largest.len() <= thread {
            self.largest.resize(thread + 1, 0);
        }
        self.largest[thread] = self.largest[thread].max(transfer);
        if let OpKind::Open { flags, .. } = &op.kind {
            self.direct_io |= flags.direct;
        }
        self.file_use(op);
    }

    /// Notes what `op` does to the files it names.
    fn file_use(&mut self, op: &Op) {
        let ok = op.failed.is_none();
        // File ids are below the head's count (the parser checks).
        let mut mark = |file: u32, f: &dyn Fn(&mut FileUse)| {
            let file = file as usize;
            if self.files.len() <= file {
                self.files.resize(file + 1, FileUse::default());
            }
            f(&mut self.files[file]);
        };
        match &op.kind {
            OpKind::Open { file, flags, .. } if ok && flags.create => {
                mark(*file, &|u| u.created = true)
            }
            OpKind::Mkdir { file } => mark(*file, &|u| {
                u.mkdir = true;
                u.created |= ok;
            }),
            OpKind::Rmdir { file } => mark(*file, &|u| u.rmdir = true),
            OpKind::Symlink { file, .. } if ok => mark(*file, &|u| {
                u.symlinked = true;
                u.created = true;
            }),
            OpKind::Rename { to, .. } | OpKind::Link { to, .. } if ok => {
                mark(*to, &|u| u.created = true)
            }
            _ => {}
        }
    }

    /// The profile of the trace whose head is `head` (read to its end).
    pub fn finish(mut self, head: &Trace) -> Profile {
        let mut largest = self.largest;
        largest.resize(head.threads.len().max(largest.len()), 0);
        self.files.resize(head.files.len(), FileUse::default());
        Profile {
            ops: self.ops,
            bytes: self.estimate.bytes(head),
            metadata: self.estimate.metadata(head),
            largest,
            direct_io: self.direct_io,
            think_scale: self.think.scale(head),
            files: self.files,
        }
    }
}

impl Profile {
    /// The profile of a trace held whole.
    pub fn of(t: &Trace) -> Profile {
        let mut p = Profiler::default();
        for op in &t.ops {
            p.op(t, op);
        }
        p.finish(t)
    }
}

/// A trace read once through, ready to replay: its head (files, threads,
/// times, step names; no operations), its profile, and where to read the
/// operations again.
pub struct Prepared {
    /// Everything but the operations.
    pub head: Trace,
    /// What the operations ask of a replay.
    pub profile: Profile,
    /// The text, read again as the replay plays it.
    pub source: Source,
    /// The SHA-256 of the text as read through (hex).
    pub sha256: String,
}

/// Why a trace could not be read through for a replay.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// A record is wrong (named by file and line), or reading failed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The stop flag or the deadline came first.
    #[error("reading the trace: {0}")]
    Halted(#[from] Halted),
}

impl Prepared {
    /// Reads `source` through once, checking every record as
    /// [`Trace::parse`] does (holding no operation); stops when `halt`
    /// says so (looking every [`crate::trace::format::stream::POLL_LINES`] lines).
    pub fn read(source: Source, halt: &Halt) -> Result<Prepared, PrepareError> {
        let mut stream = source.stream()?;
        let mut profiler = Profiler::default();
        loop {
            match stream.step()? {
                Step::Op(parsed) => profiler.op(stream.head(), &parsed.op),
                Step::Paused => halt.check()?,
                Step::End => break,
            }
        }
        let (head, sha256) = stream.finish_hashed()?;
        let profile = profiler.finish(&head);
        Ok(Prepared {
            head,
            profile,
            source,
            sha256,
        })
    }

    /// A trace held whole, as a prepared one (its text written out to be
    /// read again).
    pub fn of(t: &Trace, name: &str) -> Prepared {
        let mut head = t.clone();
        head.ops = Vec::new();
        head.steps.starts = Vec::new();
        let text = t.to_text();
        Prepared {
            head,
            profile: Profile::of(t),
            sha256: format!("{:x}", sha2::Sha256::digest(text.as_bytes())),
            source: Source::memory(name, text),
        }
    }
}
