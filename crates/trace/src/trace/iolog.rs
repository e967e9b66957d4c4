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
#[error("{file}:{line}: {message}")]
pub struct IologError {
    /// The iolog's name as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
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

/// Converts an iolog's text.
pub fn convert(name: &str, text: &str) -> Result<Trace, IologError> {
    let err = |line: usize, message: String| IologError {
        file: name.to_string(),
        line,
        message,
    };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end()));
    let timed = match lines.next() {
        Some((_, "fio version 2 iolog")) => false,
        Some((_, "fio version 3 iolog")) => true,
        _ => {
            return Err(err(
                1,
                "not a fio iolog (expected 'fio version 2 iolog' or 'fio version 3 iolog')".into(),
            ))
        }
    };
    struct Entry<'a> {
        line: usize,
        ts: Option<u64>,
        path: &'a str,
        action: &'a str,
        args: Vec<u64>,
    }
    let mut entries = Vec::new();
    for (n, l) in lines {
        if l.len() > MAX_LOG_LINE {
            return Err(err(
                n,
                format!(
                    "the line is {} bytes long; an iolog line may have at most {MAX_LOG_LINE}",
                    l.len()
                ),
            ));
        }
        if l.is_empty() {
            continue;
        }
        if entries.len() >= MAX_OPS {
            return Err(err(
                n,
                format!("more than {MAX_OPS} entries (the most a trace may hold)"),
            ));
        }
        let mut w = l.split_whitespace();
        let ts =
            if timed {
                Some(w.next().and_then(|t| t.parse().ok()).ok_or_else(|| {
                    err(n, "a version 3 line starts with a timestamp in µs".into())
                })?)
            } else {
                None
            };
        let path = w.next().ok_or_else(|| err(n, "missing file name".into()))?;
        let action = w.next().ok_or_else(|| err(n, "missing action".into()))?;
        let args = w
            .take(4)
            .map(|a| {
                a.parse::<u64>().map_err(|_| {
                    let shown: String = a.chars().take(40).collect();
                    err(n, format!("'{shown}' is not a number"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let need = match action {
            "read" | "write" | "trim" => 2,
            "wait" => 1,
            "add" | "open" | "close" | "sync" | "datasync" => 0,
            other => {
                let shown: String = other.chars().take(40).collect();
                return Err(err(n, format!("unknown iolog action '{shown}'")));
            }
        };
        if args.len() < need {
            return Err(err(n, format!("'{action}' needs {need} numbers")));
        }
        if let Some(ts) = ts.filter(|t| *t > MAX_TIME_US) {
            return Err(err(
                n,
                format!("timestamp {ts} µs is past the latest a trace may name ({MAX_TIME_US} µs)"),
            ));
        }
        if matches!(action, "read" | "write") {
            let (offset, len) = (args[0], args[1]);
            if len > MAX_IO_BYTES {
                return Err(err(
                    n,
                    format!(
                        "length {len} is more than the {MAX_IO_BYTES} bytes one operation may move"
                    ),
                ));
            }
            if offset
                .checked_add(len)
                .is_none_or(|end| end > MAX_FILE_BYTES)
            {
                return Err(err(
                    n,
                    format!("offset {offset} + length {len} is past the largest file a trace may describe ({MAX_FILE_BYTES} bytes)"),
                ));
            }
        }
        entries.push(Entry {
            line: n,
            ts,
            path,
            action,
            args,
        });
    }
    let paths: Vec<&str> = {
        let mut v: Vec<&str> = entries.iter().map(|e| e.path).collect();
        v.sort();
        v.dedup();
        v
    };
    if paths.len() > MAX_FILES {
        return Err(err(
            1,
            format!(
                "{} files; a trace may name at most {MAX_FILES}",
                paths.len()
            ),
        ));
    }
    let root = common_dir(&paths);
    let mut t = Trace {
        threads: vec![0],
        ..Trace::default()
    };
    let mut ids: HashMap<&str, u32> = HashMap::new();
    for p in &paths {
        let rel = p.strip_prefix(&root).unwrap_or(p).trim_start_matches('/');
        ids.insert(p, t.files.len() as u32);
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
    let mut open: HashMap<u32, u32> = HashMap::new();
    let mut next_handle = 0;
    let mut clock = 0u64;
    for e in &entries {
        let Some(&file) = ids.get(e.path) else {
            continue;
        };
        if let Some(ts) = e.ts {
            if ts < clock {
                return Err(err(
                    e.line,
                    format!("timestamp {ts} goes back in time (after {clock})"),
                ));
            }
            clock = ts;
        }
        let mut handle = |t: &mut Trace, implicit: bool| -> u32 {
            if let Some(h) = open.get(&file) {
                return *h;
            }
            let h = next_handle;
            next_handle += 1;
            open.insert(file, h);
            t.ops.push(Op {
                thread: 0,
                start_us: clock,
                dur_us: 0,
                failed: None,
                kind: OpKind::Open {
                    handle: h,
                    file,
                    flags: OpenFlags {
                        read: true,
                        write: true,
                        implicit,
                        ..Default::default()
                    },
                },
            });
            h
        };
        let kind = match e.action {
            "add" | "trim" => continue,
            "wait" => {
                clock = clock
                    .checked_add(e.args[0])
                    .filter(|c| *c <= MAX_TIME_US)
                    .ok_or_else(|| {
                        err(
                            e.line,
                            format!(
                                "waiting {} µs goes past the latest time a trace may name ({MAX_TIME_US} µs)",
                                e.args[0]
                            ),
                        )
                    })?;
                continue;
            }
            "open" => {
                handle(&mut t, false);
                continue;
            }
            "close" => match open.remove(&file) {
                Some(h) => OpKind::Close(h),
                None => continue,
            },
            "read" | "write" => {
                let h = handle(&mut t, true);
                let (offset, len) = (e.args[0], e.args[1]);
                let f = &mut t.files[file as usize];
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
            "sync" => OpKind::Fsync(handle(&mut t, true)),
            _ => OpKind::Fdatasync(handle(&mut t, true)),
        };
        t.ops.push(Op {
            thread: 0,
            start_us: clock,
            dur_us: 0,
            kind,
            failed: None,
        });
    }
    t.duration_us = clock;
    Ok(t)
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
        assert!(convert("h", &long).unwrap_err().message.contains("at most"));
    }
}
