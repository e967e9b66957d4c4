//! fio's iolog read into a trace: [`convert`] reads one (version 2, and
//! version 3 with µs timestamps) into a [`Trace`]: one thread, files
//! relative to their common directory, each file as large as the furthest
//! I/O in it (fio lays files out before it runs). A job writes version 2 as
//! it runs (`write_iolog=`) with
//! [`IologWriter`](plumb_io::runner::iolog::IologWriter).

use super::format::{FileEntry, Op, OpKind, OpenFlags, Trace};
use super::limits::{MAX_FILES, MAX_FILE_BYTES, MAX_IO_BYTES, MAX_LOG_LINE, MAX_OPS, MAX_TIME_US};
use std::collections::HashMap;

/// A line of the iolog that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {cause}")]
pub struct IologError {
    /// The iolog's name as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub cause: IologProblem,
}

/// Why an iolog cannot be converted, one variant per cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IologProblem {
    /// The first line is not an iolog's.
    #[error("not a fio iolog (expected 'fio version 2 iolog' or 'fio version 3 iolog')")]
    NotAnIolog,
    /// A line longer than [`MAX_LOG_LINE`].
    #[error("the line is {0} bytes long; an iolog line may have at most {MAX_LOG_LINE}")]
    LongLine(usize),
    /// More than [`MAX_OPS`] entries.
    #[error("more than {MAX_OPS} entries (the most a trace may hold)")]
    TooManyEntries,
    /// A version 3 line without its timestamp.
    #[error("a version 3 line starts with a timestamp in µs")]
    NoTimestamp,
    /// A line without its file name.
    #[error("missing file name")]
    NoFile,
    /// A line without its action.
    #[error("missing action")]
    NoAction,
    /// An argument that is not a number.
    #[error("'{0}' is not a number")]
    NotANumber(String),
    /// An action fio does not write.
    #[error("unknown iolog action '{0}'")]
    UnknownAction(String),
    /// An action without all its numbers.
    #[error("'{action}' needs {need} numbers")]
    TooFew {
        /// The action.
        action: String,
        /// Numbers it needs.
        need: usize,
    },
    /// A timestamp past [`MAX_TIME_US`].
    #[error("timestamp {0} µs is past the latest a trace may name ({MAX_TIME_US} µs)")]
    LateTimestamp(u64),
    /// A transfer longer than one operation may move.
    #[error("length {0} is more than the {MAX_IO_BYTES} bytes one operation may move")]
    TooLong(u64),
    /// An extent past the largest file.
    #[error("offset {offset} + length {len} is past the largest file a trace may describe ({MAX_FILE_BYTES} bytes)")]
    PastLargest {
        /// The offset.
        offset: u64,
        /// The length.
        len: u64,
    },
    /// More than [`MAX_FILES`] files.
    #[error("{0} files; a trace may name at most {MAX_FILES}")]
    TooManyFiles(usize),
    /// A timestamp before the one above it.
    #[error("timestamp {ts} goes back in time (after {clock})")]
    BackInTime {
        /// The timestamp.
        ts: u64,
        /// The latest before it.
        clock: u64,
    },
    /// A wait past the latest time.
    #[error("waiting {0} µs goes past the latest time a trace may name ({MAX_TIME_US} µs)")]
    LateWait(u64),
}

fn common_dir(paths: &[&str]) -> String {
    let split: Vec<Vec<&str>> = paths
        .iter()
        .map(|p| {
            let mut parts: Vec<&str> = p.split('/').collect();
            parts.pop();
            parts
        })
        .collect();
    let Some(first) = split.first() else {
        return String::new();
    };
    let mut n = first.len();
    for s in &split[1..] {
        n = n.min(s.iter().zip(first).take_while(|(a, b)| a == b).count());
    }
    first[..n].join("/")
}

/// One line of the iolog, read and checked.
struct Entry<'a> {
    line: usize,
    ts: Option<u64>,
    path: &'a str,
    action: &'a str,
    args: Vec<u64>,
}

/// Converts an iolog's text.
pub fn convert(name: &str, text: &str) -> Result<Trace, IologError> {
    let err = |line: usize, cause: IologProblem| IologError {
        file: name.to_string(),
        line,
        cause,
    };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end()));
    let timed = match lines.next() {
        Some((_, "fio version 2 iolog")) => false,
        Some((_, "fio version 3 iolog")) => true,
        _ => return Err(err(1, IologProblem::NotAnIolog)),
    };
    let mut entries = Vec::new();
    for (n, l) in lines {
        if l.len() > MAX_LOG_LINE {
            return Err(err(n, IologProblem::LongLine(l.len())));
        }
        if l.is_empty() {
            continue;
        }
        if entries.len() >= MAX_OPS {
            return Err(err(n, IologProblem::TooManyEntries));
        }
        entries.push(entry(n, l, timed).map_err(|e| err(n, e))?);
    }
    let paths: Vec<&str> = {
        let mut v: Vec<&str> = entries.iter().map(|e| e.path).collect();
        v.sort();
        v.dedup();
        v
    };
    if paths.len() > MAX_FILES {
        return Err(err(1, IologProblem::TooManyFiles(paths.len())));
    }
    let mut b = Builder::new(&paths);
    for e in &entries {
        b.entry(e).map_err(|cause| err(e.line, cause))?;
    }
    b.t.duration_us = b.clock;
    Ok(b.t)
}

/// Line `n`, `l`: `[TIMESTAMP] PATH ACTION [NUMBERS]`.
fn entry(n: usize, l: &str, timed: bool) -> Result<Entry<'_>, IologProblem> {
    let mut w = l.split_whitespace();
    let ts = if timed {
        Some(
            w.next()
                .and_then(|t| t.parse().ok())
                .ok_or(IologProblem::NoTimestamp)?,
        )
    } else {
        None
    };
    let path = w.next().ok_or(IologProblem::NoFile)?;
    let action = w.next().ok_or(IologProblem::NoAction)?;
    let args = w
        .take(4)
        .map(|a| {
            a.parse::<u64>()
                .map_err(|_| IologProblem::NotANumber(a.chars().take(40).collect()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let need = match action {
        "read" | "write" | "trim" => 2,
        "wait" => 1,
        "add" | "open" | "close" | "sync" | "datasync" => 0,
        other => {
            return Err(IologProblem::UnknownAction(
                other.chars().take(40).collect(),
            ))
        }
    };
    if args.len() < need {
        return Err(IologProblem::TooFew {
            action: action.to_string(),
            need,
        });
    }
    if let Some(ts) = ts.filter(|t| *t > MAX_TIME_US) {
        return Err(IologProblem::LateTimestamp(ts));
    }
    if matches!(action, "read" | "write") {
        let (offset, len) = (args[0], args[1]);
        if len > MAX_IO_BYTES {
            return Err(IologProblem::TooLong(len));
        }
        if offset
            .checked_add(len)
            .is_none_or(|end| end > MAX_FILE_BYTES)
        {
            return Err(IologProblem::PastLargest { offset, len });
        }
    }
    Ok(Entry {
        line: n,
        ts,
        path,
        action,
        args,
    })
}

/// The trace made of the entries: one thread, a file per path (relative
/// to their common directory), the clock.
struct Builder<'a> {
    t: Trace,
    ids: HashMap<&'a str, u32>,
    /// Per file, its handle while open.
    open: HashMap<u32, u32>,
    next_handle: u32,
    clock: u64,
}

impl<'a> Builder<'a> {
    /// Files for `paths` (sorted, without duplicates), each empty at first.
    fn new(paths: &[&'a str]) -> Builder<'a> {
        let root = common_dir(paths);
        let mut t = Trace {
            threads: vec![0],
            ..Trace::default()
        };
        let mut ids = HashMap::new();
        for p in paths {
            let rel = p.strip_prefix(&root).unwrap_or(p).trim_start_matches('/');
            ids.insert(*p, t.files.len() as u32);
            t.files.push(FileEntry {
                path: if rel.is_empty() {
                    "file".into()
                } else {
                    rel.into()
                },
                size: Some(0),
                ..FileEntry::default()
            });
        }
        Builder {
            t,
            ids,
            open: HashMap::new(),
            next_handle: 0,
            clock: 0,
        }
    }

    /// Adds an operation at the current time.
    fn push(&mut self, kind: OpKind) {
        self.t.ops.push(Op {
            thread: 0,
            start_us: self.clock,
            dur_us: 0,
            kind,
            failed: None,
        });
    }

    /// The handle of `file`, opened now if it is not open (an implicit
    /// open when fio's log did not show one).
    fn handle(&mut self, file: u32, implicit: bool) -> u32 {
        if let Some(h) = self.open.get(&file) {
            return *h;
        }
        let h = self.next_handle;
        self.next_handle += 1;
        self.open.insert(file, h);
        self.push(OpKind::Open {
            handle: h,
            file,
            flags: OpenFlags {
                read: true,
                write: true,
                implicit,
                ..Default::default()
            },
        });
        h
    }

    /// Adds what entry `e` does.
    fn entry(&mut self, e: &Entry) -> Result<(), IologProblem> {
        let Some(&file) = self.ids.get(e.path) else {
            return Ok(());
        };
        if let Some(ts) = e.ts {
            if ts < self.clock {
                return Err(IologProblem::BackInTime {
                    ts,
                    clock: self.clock,
                });
            }
            self.clock = ts;
        }
        let kind = match e.action {
            "add" | "trim" => return Ok(()),
            "wait" => {
                self.clock = self
                    .clock
                    .checked_add(e.args[0])
                    .filter(|c| *c <= MAX_TIME_US)
                    .ok_or(IologProblem::LateWait(e.args[0]))?;
                return Ok(());
            }
            "open" => {
                self.handle(file, false);
                return Ok(());
            }
            "close" => match self.open.remove(&file) {
                Some(h) => OpKind::Close { handle: h },
                None => return Ok(()),
            },
            "read" | "write" => {
                let h = self.handle(file, true);
                let (offset, len) = (e.args[0], e.args[1]);
                let f = &mut self.t.files[file as usize];
                f.size = Some(f.size.unwrap_or(0).max(offset.saturating_add(len)));
                if e.action == "read" {
                    OpKind::Read {
                        call: "pread",
                        handle: h,
                        offset,
                        len,
                    }
                } else {
                    OpKind::Write {
                        call: "pwrite",
                        handle: h,
                        offset,
                        len,
                    }
                }
            }
            "sync" => OpKind::Fsync {
                handle: self.handle(file, true),
            },
            _ => OpKind::Fdatasync {
                handle: self.handle(file, true),
            },
        };
        self.push(kind);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_versions_2_and_3() {
        let v2 = "fio version 2 iolog\n/d/f add\n/d/f open\n/d/f read 0 4096\n/d/f write 8192 4096\n/d/f sync\n/d/f close\n";
        let t = convert("a", v2).unwrap();
        let names: Vec<&str> = t.ops.iter().map(|o| o.kind.name()).collect();
        assert_eq!(names, ["open", "pread", "pwrite", "fsync", "close"]);
        assert_eq!(t.files[0].path, "f");
        assert_eq!(t.files[0].size, Some(12288));
        let v3 =
            "fio version 3 iolog\n0 /d/f add\n5 /d/f open\n100 /d/f read 0 4096\n350 /d/f close\n";
        let t = convert("b", v3).unwrap();
        assert_eq!(t.ops[1].start_us, 100);
        assert_eq!(t.duration_us, 350);
        let e = convert("c", "fio version 3 iolog\n10 /d/f open\nx /d/f read 0 1\n").unwrap_err();
        assert_eq!(e.line, 3);
    }

    #[test]
    fn hostile_numbers_and_lines_are_refused_by_line() {
        let cases = [
            (
                "fio version 2 iolog\n/d/f read 18446744073709551615 4096\n",
                2,
                "overflows",
            ),
            (
                "fio version 2 iolog\n/d/f read 0 1099511627776\n",
                2,
                "one operation may move",
            ),
            (
                "fio version 2 iolog\n/d/f read -1 4096\n",
                2,
                "not a number",
            ),
            (
                "fio version 2 iolog\n/d/f wait 18446744073709551615\n/d/f wait 1\n",
                2,
                "latest time",
            ),
            (
                "fio version 3 iolog\n99999999999999999 /d/f open\n",
                2,
                "latest",
            ),
        ];
        for (text, line, what) in cases {
            let e = convert("h", text).unwrap_err();
            assert_eq!(e.line, line, "{e}");
            let m = e.to_string();
            assert!(
                m.contains(what) || (what == "overflows" && m.contains("largest file")),
                "{m}"
            );
        }
        let long = format!("fio version 2 iolog\n{} add\n", "x".repeat(1 << 20));
        assert!(convert("h", &long)
            .unwrap_err()
            .cause
            .to_string()
            .contains("at most"));
    }
}
