//! The journal of a run saved with `--json FILE`: `FILE.journal` gets one
//! JSON line per finished scenario, appended and flushed to the disk as soon
//! as the scenario ends, so a run killed by SIGKILL or the OOM killer keeps
//! what it measured. The journal is removed once the full document is saved;
//! `plumb run --resume` reads a leftover one and runs only what is missing.
//!
//! A journal is read as hostile input: lines are bounded, every line must
//! match the schema and the document limits, and the first line names the
//! run it belongs to.

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

    /// Continues an existing journal (for `--resume`).
    pub fn reopen(path: &Path) -> io::Result<Writer> {
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(Writer {
            path: path.to_path_buf(),
            file,
        })
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

/// Reads `path`; errors name the file and line.
pub fn read(path: &Path) -> Result<Journal, String> {
    let name = path.display();
    // Non-blocking, so that opening a FIFO does not wait for a writer.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("{name}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("{name}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{name}: not a regular file"));
    }
    let mut reader = BufReader::new(file);
    let mut header = None;
    let mut entries = Vec::new();
    let mut torn_tail = false;
    let mut number = 0usize;
    loop {
        number += 1;
        let mut line = Vec::new();
        let n = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{name}:{number}: {e}"))?;
        if n == 0 {
            break;
        }
        if line.len() > MAX_LINE {
            return Err(format!(
                "{name}:{number}: line longer than {} MiB",
                MAX_LINE >> 20
            ));
        }
        if line.last() != Some(&b'\n') {
            // Only the last line can lack its newline: a write cut short.
            torn_tail = true;
            break;
        }
        let at = |e: &dyn std::fmt::Display| format!("{name}:{number}: {e}");
        if header.is_none() {
            let h: Header = serde_json::from_slice(&line).map_err(|e| at(&e))?;
            if h.journal != JOURNAL_SCHEMA {
                return Err(at(&format!(
                    "not a plumb journal (expected {JOURNAL_SCHEMA})"
                )));
            }
            let limit = crate::model::document::limits::NAME;
            if h.started.len() > limit || h.label.as_ref().is_some_and(|l| l.len() > limit) {
                return Err(at(&format!("header field longer than {limit} bytes")));
            }
            header = Some(h);
            continue;
        }
        if entries.len() >= MAX_ENTRIES {
            return Err(at(&format!("more than {MAX_ENTRIES} scenarios")));
        }
        let e: Entry = serde_json::from_slice(&line).map_err(|e| at(&e))?;
        e.scenario.check_limits("scenario").map_err(|e| at(&e))?;
        entries.push(e.scenario);
    }
    let header = header.ok_or_else(|| format!("{name}: empty journal (no header line)"))?;
    Ok(Journal {
        header,
        entries,
        torn_tail,
    })
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
            repeat: 1,
            metrics: Vec::new(),
            jobs: Vec::new(),
            tables: Vec::new(),
            notes: Vec::new(),
            series: Vec::new(),
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
        drop(w);
        let mut w = Writer::reopen(&p).unwrap();
        w.append(&scenario("b")).unwrap();
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
            let e = read(&p).unwrap_err();
            assert!(e.contains(&format!("x.journal:{line}:")), "{e}");
        }
        let mut big = scenario("a");
        big.name = "n".repeat(crate::model::document::limits::NAME + 1);
        let line = serde_json::to_string(&Entry { scenario: big }).unwrap();
        std::fs::write(&p, format!("{head}\n{line}\n")).unwrap();
        let e = read(&p).unwrap_err();
        assert!(e.contains("x.journal:2:") && e.contains("limit"), "{e}");
        std::fs::write(&p, "").unwrap();
        assert!(read(&p).unwrap_err().contains("empty journal"));
    }
}
