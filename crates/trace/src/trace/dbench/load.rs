//! Reading a load file's lines: words (double quotes may hold spaces),
//! numbers as dbench reads them, NT statuses as errnos, and paths made
//! relative to the client's directory.

use super::error::LoadError;
use super::MAX_PATH;
use crate::trace::limits::{MAX_FILE_BYTES, MAX_TIME_US};

/// The NT statuses plumb knows: name, code, and the errno a local file
/// system gives where the server gave the status (None: success).
const STATUSES: &[(&str, u32, Option<i32>)] = &[
    ("NT_STATUS_OK", 0, None),
    ("NT_STATUS_NO_SUCH_FILE", 0xC000_000F, Some(libc::ENOENT)),
    (
        "NT_STATUS_OBJECT_NAME_NOT_FOUND",
        0xC000_0034,
        Some(libc::ENOENT),
    ),
    (
        "NT_STATUS_OBJECT_PATH_NOT_FOUND",
        0xC000_003A,
        Some(libc::ENOENT),
    ),
    (
        "NT_STATUS_OBJECT_NAME_COLLISION",
        0xC000_0035,
        Some(libc::EEXIST),
    ),
    ("NT_STATUS_ACCESS_DENIED", 0xC000_0022, Some(libc::EACCES)),
    (
        "NT_STATUS_FILE_IS_A_DIRECTORY",
        0xC000_00BA,
        Some(libc::EISDIR),
    ),
    (
        "NT_STATUS_NOT_A_DIRECTORY",
        0xC000_0103,
        Some(libc::ENOTDIR),
    ),
    (
        "NT_STATUS_DIRECTORY_NOT_EMPTY",
        0xC000_0101,
        Some(libc::ENOTEMPTY),
    ),
    ("NT_STATUS_NO_MORE_FILES", 0x8000_0006, Some(libc::ENOENT)),
];

/// Up to `max` characters of `w` as an error may show them: no control
/// characters (a terminal would obey them).
pub(super) fn shown(w: &str, max: usize) -> String {
    w.chars().filter(|c| !c.is_control()).take(max).collect()
}

/// The errno an NT status stands for (None: success), by name
/// (`NT_STATUS_OBJECT_NAME_NOT_FOUND`) or code (`0xC0000034`, `0x0`).
pub fn status(s: &str) -> Result<Option<i32>, LoadError> {
    let found = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let code = u32::from_str_radix(hex, 16).ok();
        STATUSES.iter().find(|(_, c, _)| Some(*c) == code)
    } else {
        STATUSES.iter().find(|(n, _, _)| *n == s)
    };
    match found {
        Some((_, _, errno)) => Ok(*errno),
        None => {
            let known: Vec<&str> = STATUSES.iter().map(|(n, _, _)| *n).collect();
            Err(LoadError::UnknownStatus {
                found: shown(s, 48),
                known: known.join(", "),
            })
        }
    }
}

/// One line of a load file, split: when it happens (if it says), the
/// operation, its fields and the status the server gave.
pub(super) struct Line<'a> {
    /// µs after the start, when the line starts with a time.
    pub(super) at_us: Option<u64>,
    /// The operation (one dbench knows).
    pub(super) op: &'a str,
    /// The fields between the operation and the status.
    pub(super) args: Vec<&'a str>,
    /// The errno the status stands for (None: success).
    pub(super) want: Option<i32>,
}

/// Splits a line (not empty, not a comment) into its parts and checks
/// the operation is known and given its fields.
pub(super) fn line(line: &str) -> Result<Line<'_>, LoadError> {
    let w = words(line)?;
    // dbench 4 may start a line with a time in seconds.
    let (at_us, w) = match w.first() {
        Some(t) if t.starts_with(|ch: char| ch.is_ascii_digit()) => {
            let secs: f64 = t.parse().map_err(|_| LoadError::NotATime(shown(t, 40)))?;
            let us = secs * 1e6;
            if !us.is_finite() || us > MAX_TIME_US as f64 {
                return Err(LoadError::LateTime(secs));
            }
            (Some(us.round() as u64), &w[1..])
        }
        _ => (None, &w[..]),
    };
    let Some((&op, rest)) = w.split_first() else {
        return Err(LoadError::TimeAlone);
    };
    if step_name(op).is_none() {
        return Err(LoadError::UnknownOp(shown(op, 40)));
    }
    let Some((&st, args)) = rest.split_last() else {
        return Err(LoadError::NoFields(op.to_string()));
    };
    if !st.starts_with("NT_STATUS_") && !st.starts_with("0x") {
        return Err(LoadError::NotAStatus {
            op: op.to_string(),
            found: shown(st, 40),
        });
    }
    let want = status(st)?;
    let need = arity(op);
    if args.len() != need {
        return Err(LoadError::Arity {
            op: op.to_string(),
            need,
            given: args.len(),
        });
    }
    Ok(Line {
        at_us,
        op,
        args: args.to_vec(),
        want,
    })
}

/// Splits a line into words; a word in double quotes may hold spaces (the
/// quotes are taken off, as dbench's `next_token` does).
fn words(line: &str) -> Result<Vec<&str>, LoadError> {
    let mut out = Vec::new();
    let mut rest = line;
    loop {
        rest = rest.trim_start_matches([' ', '\t']);
        if rest.is_empty() {
            return Ok(out);
        }
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').ok_or(LoadError::OpenQuote)?;
            out.push(&q[..end]);
            rest = &q[end + 1..];
        } else {
            let end = rest.find([' ', '\t']).unwrap_or(rest.len());
            out.push(&rest[..end]);
            rest = &rest[end..];
        }
    }
}

/// dbench's name for each operation in its latency table.
pub(super) fn step_name(op: &str) -> Option<&'static str> {
    Some(match op {
        "NTCreateX" => "NTCreateX",
        "Close" => "Close",
        "Rename" => "Rename",
        "Unlink" => "Unlink",
        "Deltree" => "Deltree",
        "Rmdir" => "Rmdir",
        "Mkdir" => "Mkdir",
        "QUERY_PATH_INFORMATION" => "Qpathinfo",
        "QUERY_FILE_INFORMATION" => "Qfileinfo",
        "QUERY_FS_INFORMATION" => "Qfsinfo",
        "SET_FILE_INFORMATION" => "Sfileinfo",
        "FIND_FIRST" => "Find",
        "WriteX" => "WriteX",
        "ReadX" => "ReadX",
        "LockX" => "LockX",
        "UnlockX" => "UnlockX",
        "Flush" => "Flush",
        "Sleep" => "Sleep",
        _ => return None,
    })
}

/// Fields each operation takes between its name and its status.
fn arity(op: &str) -> usize {
    match op {
        "NTCreateX" | "FIND_FIRST" | "WriteX" | "ReadX" => 4,
        "LockX" | "UnlockX" => 3,
        "Rename"
        | "Unlink"
        | "QUERY_PATH_INFORMATION"
        | "QUERY_FILE_INFORMATION"
        | "SET_FILE_INFORMATION" => 2,
        _ => 1,
    }
}

/// A number as dbench reads it (`strtol` base 0): decimal or `0x` hex.
pub(super) fn number(w: &str, what: &'static str) -> Result<u64, LoadError> {
    let parsed = match w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None if w.bytes().all(|b| b.is_ascii_digit()) => w.parse().ok(),
        None => None,
    };
    parsed.ok_or_else(|| LoadError::NotANumber {
        what,
        found: shown(w, 40),
    })
}

/// A file number as dbench keeps them (an `int`). 0 is what a load file
/// gives an open that fails; dbench's table marks a free slot with it, so
/// an open that succeeds may not use it.
pub(super) fn fnum(w: &str) -> Result<u64, LoadError> {
    let n = number(w, "fnum")?;
    if n > i32::MAX as u64 {
        return Err(LoadError::FnumRange(n));
    }
    Ok(n)
}

/// An offset and a length within the bounds of a trace's transfers.
pub(super) fn extent(offset: u64, len: u64, max_len: u64) -> Result<(u64, u64), LoadError> {
    if len > max_len {
        return Err(LoadError::TooLong { len, max: max_len });
    }
    match offset.checked_add(len) {
        Some(end) if end <= MAX_FILE_BYTES => Ok((offset, len)),
        Some(_) => Err(LoadError::PastLargest { offset, len }),
        None => Err(LoadError::Overflow { offset, len }),
    }
}

/// What a load file's path names, once `\clients\clientN` is taken off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Place {
    /// `\clients`: where dbench's clients live, above this one's directory.
    Clients,
    /// A path in the client's directory ("" for the directory itself).
    In(String),
}

/// Where client 1's names begin (the client number is checked to be one).
pub(super) fn place(w: &str, client: &mut Option<u64>) -> Result<Place, LoadError> {
    let shown = || shown(w, 60);
    if w.is_empty() {
        return Err(LoadError::EmptyPath);
    }
    if w.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err(LoadError::ControlByte(shown()));
    }
    let p = w.replace('\\', "/");
    let Some(rest) = p.strip_prefix('/') else {
        return Err(LoadError::NotRooted(shown()));
    };
    let mut parts: Vec<&str> = rest.split('/').collect();
    if parts.first() == Some(&"clients") {
        if parts.len() == 1 {
            return Ok(Place::Clients);
        }
        let n = parts[1]
            .strip_prefix("client")
            .filter(|d| !d.is_empty() && d.len() < 10 && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u64>().ok())
            .ok_or_else(|| LoadError::NotAClient(shown()))?;
        match client {
            Some(c) if *c != n => {
                return Err(LoadError::OtherClient {
                    path: shown(),
                    this: n,
                    earlier: *c,
                })
            }
            _ => *client = Some(n),
        }
        parts.drain(..2);
        if parts.is_empty() {
            return Ok(Place::In(String::new()));
        }
    }
    if parts.first() == Some(&"") {
        return Err(LoadError::Absolute(shown()));
    }
    for c in &parts {
        match *c {
            "" => return Err(LoadError::EmptyName(shown())),
            ".." => return Err(LoadError::Climbs(shown())),
            "." => return Err(LoadError::Dot(shown())),
            c if c.len() > 255 => return Err(LoadError::LongName(shown())),
            _ => {}
        }
    }
    let rel = parts.join("/");
    if rel.len() > MAX_PATH {
        return Err(LoadError::LongPath(shown()));
    }
    Ok(Place::In(rel))
}
