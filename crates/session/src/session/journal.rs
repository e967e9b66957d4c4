//! The journal of a run saved with `--json FILE`: `FILE.journal` gets one
//! JSON line per finished scenario, appended and flushed to the disk as soon
//! as the scenario ends, so a run killed by SIGKILL or the OOM killer keeps
//! what it measured. The journal is removed once the full document is saved;
//! `plumb run --resume` reads a leftover one and runs only what is missing.
//!
//! A journal is read as hostile input: it is opened without following a
//! symlink and must be a regular file, lines are bounded, every line must
//! match the schema and the document limits, and the first line names the
//! run it belongs to. The process writing a journal holds its `flock`, so a
//! second plumb cannot continue it at the same time. Before a resumed run
//! appends, a last line cut short by a kill is cut off and the cut synced,
//! so a second kill never leaves a journal that cannot be read.

use crate::model::document::ScenarioResult;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Schema name on the journal's first line.
pub const JOURNAL_SCHEMA: &str = "plumb.journal.v1";
/// Longest line read back (one scenario's result).
pub const MAX_LINE: usize = 64 << 20;
/// Most scenarios a journal may hold.
pub const MAX_ENTRIES: usize = crate::model::document::limits::SCENARIOS;

/// The first line: what run the journal belongs to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always [`JOURNAL_SCHEMA`].
    pub journal: String,
    /// Start time of the run, RFC 3339 (kept by the resumed run).
    pub started: String,
    /// The run's label.
    pub label: Option<String>,
}

/// One finished scenario.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The scenario's result as it goes into the document.
    pub scenario: ScenarioResult,
}

/// `FILE.journal` beside the result file `FILE`.
pub fn path_for(json: &Path) -> PathBuf {
    let mut name = json.as_os_str().to_owned();
    name.push(".journal");
    PathBuf::from(name)
}

/// A journal being written.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    file: File,
}

impl Writer {
    /// Starts a new journal at `path` (refusing to replace an existing one)
    /// with its header line.
    pub fn create(path: &Path, header: &Header) -> io::Result<Writer> {
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)?;
        // Only this process knows the file yet: the lock is free.
        let _ = file.try_lock();
        let mut w = Writer {
            path: path.to_path_buf(),
            file,
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let started = w
            .append_line(header)
            .and_then(|()| File::open(dir)?.sync_all());
        if let Err(e) = started {
            // Leave no half-made journal behind to block the next run.
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        Ok(w)
    }

    /// Records a finished scenario: one line, on the disk when this returns.
    pub fn append(&mut self, scenario: &ScenarioResult) -> io::Result<()> {
        self.append_line(&Entry {
            scenario: scenario.clone(),
        })
    }

    fn append_line<T: Serialize>(&mut self, value: &T) -> io::Result<()> {
        let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A journal read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Journal {
    /// Its first line.
    pub header: Header,
    /// Finished scenarios, in order.
    pub entries: Vec<ScenarioResult>,
    /// A last line cut short (the run was killed while writing it) was dropped.
    pub torn_tail: bool,
}

/// Why a journal cannot be continued.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// It is not a journal to continue.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// Cutting off its torn last line failed.
    #[error("{}: cutting off its torn last line: {source}", .path.display())]
    Repair {
        /// The journal.
        path: PathBuf,
        /// The system's reason.
        source: io::Error,
    },
}

/// A journal that is not one to read or continue, naming the file (and
/// the line).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A symlink in its place.
    #[error("{}: a symbolic link; a journal is never read through one", .0.display())]
    Symlink(PathBuf),
    /// It cannot be opened or examined.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The journal.
        path: PathBuf,
        /// The system's reason.
        source: io::Error,
    },
    /// Not a regular file.
    #[error("{}: not a regular file", .0.display())]
    NotRegular(PathBuf),
    /// Another plumb holds its lock.
    #[error("{}: another plumb is writing it (a run still going, or resumed twice)", .0.display())]
    InUse(PathBuf),
    /// A line that is not what a journal holds.
    #[error("{}:{number}: {problem}", .path.display())]
    Line {
        /// The journal.
        path: PathBuf,
        /// The line's number, from 1.
        number: usize,
        /// What is wrong with it.
        problem: LineProblem,
    },
    /// No header line.
    #[error("{}: empty journal (no header line)", .0.display())]
    Empty(PathBuf),
}

/// What is wrong with a line of a journal.
#[derive(Debug, thiserror::Error)]
pub enum LineProblem {
    /// It cannot be read.
    #[error(transparent)]
    Io(io::Error),
    /// Longer than [`MAX_LINE`].
    #[error("line longer than {} MiB", MAX_LINE >> 20)]
    TooLong,
    /// Not the JSON of a header or an entry.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A header of another schema.
    #[error("not a plumb journal (expected {JOURNAL_SCHEMA})")]
    NotAJournal,
    /// A header field over the document's limit.
    #[error("header field longer than {0} bytes")]
    HeaderTooLong(usize),
    /// More than [`MAX_ENTRIES`] entries.
    #[error("more than {MAX_ENTRIES} scenarios")]
    TooMany,
    /// An entry over the document's limits.
    #[error("{0}")]
    Limits(crate::model::document::LimitError),
}

/// Opens `path` without following a symlink in its place and without
/// blocking (a FIFO waits for no writer), for reading and, when `append`,
/// appending; it must be a regular file.
fn open_journal(path: &Path, append: bool) -> Result<File, Refusal> {
    let io = |source| Refusal::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .append(append)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Refusal::Symlink(path.to_path_buf()),
            _ => io(e),
        })?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(Refusal::NotRegular(path.to_path_buf()));
    }
    Ok(file)
}

/// Reads `path`; errors name the file and line.
pub fn read(path: &Path) -> Result<Journal, Refusal> {
    parse(&open_journal(path, false)?, path).map(|(j, _)| j)
}

/// Opens the journal at `path` to continue it (`--resume`): takes its lock
/// (refused while another plumb holds it), reads it, and cuts off a torn
/// last line, syncing the cut before anything is appended. Returns what it
/// holds and the writer that appends to it.
pub fn resume(path: &Path) -> Result<(Journal, Writer), JournalError> {
    let file = open_journal(path, true)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(Refusal::InUse(path.to_path_buf()).into())
        }
        Err(std::fs::TryLockError::Error(source)) => {
            return Err(Refusal::Io {
                path: path.to_path_buf(),
                source,
            }
            .into())
        }
    }
    let (journal, whole) = parse(&file, path)?;
    if journal.torn_tail {
        file.set_len(whole)
            .and_then(|()| file.sync_all())
            .map_err(|source| JournalError::Repair {
                path: path.to_path_buf(),
                source,
            })?;
    }
    Ok((
        journal,
        Writer {
            path: path.to_path_buf(),
            file,
        },
    ))
}

/// Parses the journal `file` (named `path` in errors) from its start; also
/// returns the length of its whole lines (all of it but a torn tail).
fn parse(file: &File, path: &Path) -> Result<(Journal, u64), Refusal> {
    let mut reader = BufReader::new(file);
    let mut header = None;
    let mut entries = Vec::new();
    let mut torn_tail = false;
    let mut whole = 0u64;
    let mut number = 0usize;
    loop {
        number += 1;
        let at = |problem| Refusal::Line {
            path: path.to_path_buf(),
            number,
            problem,
        };
        let mut line = Vec::new();
        let n = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| at(LineProblem::Io(e)))?;
        if n == 0 {
            break;
        }
        if line.len() > MAX_LINE {
            return Err(at(LineProblem::TooLong));
        }
        if line.last() != Some(&b'\n') {
            // Only the last line can lack its newline: a write cut short.
            torn_tail = true;
            break;
        }
        whole += n as u64;
        if header.is_none() {
            let h: Header = serde_json::from_slice(&line).map_err(|e| at(e.into()))?;
            if h.journal != JOURNAL_SCHEMA {
                return Err(at(LineProblem::NotAJournal));
            }
            let limit = crate::model::document::limits::NAME;
            if h.started.len() > limit || h.label.as_ref().is_some_and(|l| l.len() > limit) {
                return Err(at(LineProblem::HeaderTooLong(limit)));
            }
            header = Some(h);
            continue;
        }
        if entries.len() >= MAX_ENTRIES {
            return Err(at(LineProblem::TooMany));
        }
        let e: Entry = serde_json::from_slice(&line).map_err(|e| at(e.into()))?;
        e.scenario
            .check_limits("scenario")
            .map_err(|e| at(LineProblem::Limits(e)))?;
        entries.push(e.scenario);
    }
    let header = header.ok_or_else(|| Refusal::Empty(path.to_path_buf()))?;
    Ok((
        Journal {
            header,
            entries,
            torn_tail,
        },
        whole,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(name: &str) -> ScenarioResult {
        ScenarioResult {
            name: name.into(),
            pack: Some("p".into()),
            pack_sha256: None,
            pack_version: None,
            pack_origin: None,
            pack_signer: None,
            source_sha256: Some("abc".into()),
            params: Default::default(),
            params_read: None,
            repeat: 1,
            metrics: Vec::new(),
            jobs: Vec::new(),
            tables: Vec::new(),
            notes: Vec::new(),
            series: Vec::new(),
            phases: Vec::new(),
            error: None,
            error_kind: None,
        }
    }

    fn header() -> Header {
        Header {
            journal: JOURNAL_SCHEMA.into(),
            started: "2026-01-01T00:00:00+00:00".into(),
            label: Some("l".into()),
        }
    }

    #[test]
    fn entries_round_trip_and_a_torn_last_line_is_dropped() {
        let d = tempfile::tempdir().unwrap();
        let p = path_for(&d.path().join("r.json"));
        assert!(p.ends_with("r.json.journal"));
        let mut w = Writer::create(&p, &header()).unwrap();
        w.append(&scenario("a")).unwrap();
        assert!(
            matches!(resume(&p), Err(JournalError::Refused(e)) if e.to_string().contains("another plumb")),
            "a journal being written is not continued by a second plumb"
        );
        drop(w);
        let (_, mut w) = resume(&p).unwrap();
        w.append(&scenario("b")).unwrap();
        drop(w);
        let j = read(&p).unwrap();
        assert_eq!(j.header, header());
        assert_eq!(j.entries, vec![scenario("a"), scenario("b")]);
        assert!(!j.torn_tail);
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"scenario\": {\"na").unwrap();
        let j = read(&p).unwrap();
        assert_eq!(j.entries.len(), 2);
        assert!(j.torn_tail);
        assert!(
            Writer::create(&p, &header()).is_err(),
            "never replaces a journal"
        );
    }

    #[test]
    fn a_resumed_journal_loses_its_torn_tail_before_the_next_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json.journal");
        let mut w = Writer::create(&p, &header()).unwrap();
        w.append(&scenario("a")).unwrap();
        drop(w);
        let whole = std::fs::metadata(&p).unwrap().len();
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"scenario\": {\"na").unwrap();
        let (j, mut w) = resume(&p).unwrap();
        assert!(j.torn_tail);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), whole, "cut at once");
        w.append(&scenario("b")).unwrap();
        let j = read(&p).unwrap();
        assert_eq!(j.entries, vec![scenario("a"), scenario("b")]);
        assert!(!j.torn_tail);
    }

    #[test]
    fn a_symlinked_journal_is_neither_read_nor_continued() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        let mut w = Writer::create(&real, &header()).unwrap();
        w.append(&scenario("a")).unwrap();
        drop(w);
        let before = std::fs::read(&real).unwrap();
        let link = d.path().join("r.json.journal");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(read(&link)
            .unwrap_err()
            .to_string()
            .contains("symbolic link"));
        assert!(
            matches!(resume(&link), Err(JournalError::Refused(e)) if e.to_string().contains("symbolic link"))
        );
        assert!(Writer::create(&link, &header()).is_err());
        assert_eq!(std::fs::read(&real).unwrap(), before);
    }

    #[test]
    fn hostile_journals_are_refused_naming_the_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.journal");
        let head = serde_json::to_string(&header()).unwrap();
        for (text, line) in [
            (
                "{\"journal\":\"other\",\"started\":\"\",\"label\":null}\n".to_string(),
                1,
            ),
            ("[1,2]\n".to_string(), 1),
            (format!("{head}\n{{\"scenario\":{{}}}}\n"), 2),
            (format!("{head}\n{{\"scenario\":null,\"extra\":1}}\n"), 2),
        ] {
            std::fs::write(&p, text).unwrap();
            let e = read(&p).unwrap_err().to_string();
            assert!(e.contains(&format!("x.journal:{line}:")), "{e}");
        }
        let mut big = scenario("a");
        big.name = "n".repeat(crate::model::document::limits::NAME + 1);
        let line = serde_json::to_string(&Entry { scenario: big }).unwrap();
        std::fs::write(&p, format!("{head}\n{line}\n")).unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("x.journal:2:") && e.contains("limit"), "{e}");
        std::fs::write(&p, "").unwrap();
        assert!(read(&p).unwrap_err().to_string().contains("empty journal"));
    }
}
