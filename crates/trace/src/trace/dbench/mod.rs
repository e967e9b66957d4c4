//! dbench's load files (NetBench's `client.txt` format) as plumb traces.
//!
//! [`convert`] turns each line into the system calls dbench 4.0's `fileio`
//! backend makes for it on a local file system (`fileio.c` and `child.c` of
//! dbench 4.0, checked against `strace -f dbench -c client.txt 1`), as one
//! client's operations in its own directory, starting from an empty one:
//!
//! | load file | system calls (`fileio.c`) |
//! |---|---|
//! | every path (below) | `resolve_name`: a stat; if it fails, the parent directory is read through to look for the name without regard to case (open, fstat, getdents64, close) |
//! | `NTCreateX path opts disp fnum` | resolve; a `mkdir` first for a directory (opts & 1, result ignored); `open` read-write, with `O_CREAT` for disposition 2, `O_CREAT\|O_TRUNC` for 4 and 5, or read-only `O_DIRECTORY` for a directory, opened again as a directory when it fails with `EISDIR`; an `fstat` |
//! | `Close fnum` | `close` |
//! | `ReadX fnum off size ret` / `WriteX ...` | `pread` / `pwrite` of `size` bytes |
//! | `Flush fnum` | `fsync` |
//! | `QUERY_PATH_INFORMATION path level` | resolve only |
//! | `QUERY_FILE_INFORMATION fnum level` | `fstat` |
//! | `QUERY_FS_INFORMATION level` | `statfs` of the client's directory (dbench's: of `-D`) |
//! | `SET_FILE_INFORMATION fnum level` | `fstat`, then `utime` of the name it was opened by |
//! | `FIND_FIRST pattern level max count` | resolve; with a wildcard (`<>*?"`), the pattern's directory read through (up to `max` entries) |
//! | `Unlink path attr` / `Rmdir path` / `Rename old new` | resolve each path; `unlink` / `rmdir` / `rename`, which must succeed or fail as the status says (dbench stops otherwise) |
//! | `Mkdir path` | resolve; `mkdir` (result ignored) |
//! | `Deltree path` | read the directory, stat each entry, unlink files and descend into directories (which stay: dbench 4.0 removes no directory) |
//! | `LockX fnum off len` / `UnlockX ...` | `fcntl` write lock / unlock of the range (`lock`, `unlock` in the trace) |
//! | `Sleep usec` | think time |
//!
//! On a directory's handle a ReadX fails with `EISDIR` (dbench notes it
//! and goes on), a LockX with `EBADF` (not open for writing; ignored), and
//! a WriteX stops dbench, so it is refused. What plumb does not do: the
//! `-x` xattr hooks, `-S` directory syncs, `-s` `O_SYNC` and `-F` fsyncs
//! (dbench options off by default); `utime` sets the times to now, not to
//! dbench's "10 and 12 seconds ago"; locks are taken with `F_SETLK`, not
//! `F_SETLKW`, so a replay can never hang on one; a directory read is
//! counted as glibc's 32 KiB `getdents64` calls in name order (the real
//! order is the file system's); dbench's renaming of `client1` inside file
//! names for other clients is not copied (each client has its own
//! directory instead).
//!
//! The outcome of every call comes from a model of the client's directory
//! as the lines change it (case-sensitive, as a local file system is), so
//! the trace expects exactly the failures the replay will see; where dbench
//! checks a status (Unlink, Rmdir, Rename) a disagreement is an error, as
//! it stops dbench; elsewhere fileio's outcome is kept and counted in a
//! note. NT statuses map to errnos ([`status`]). Each line's calls form a
//! step named as dbench's latency table names the operation (`NTCreateX`,
//! `Qpathinfo`, `Find`, ...).
//!
//! Paths: `\` becomes `/` and the leading `\clients\clientN` is taken off,
//! so the trace is one client's tree; `\clients` itself (dbench's set-up)
//! is left out. A path that climbs, is absolute after that, is empty where
//! a name is needed, or holds a control byte is refused, naming the line.

//!
//! In the code: `load.rs` reads a line (words, numbers, statuses, paths),
//! `tree.rs` models the client's directory, `converter.rs` holds the
//! conversion and the calls every line is made of, `lines.rs` and
//! `create.rs` turn each operation into fileio's calls; errors are typed
//! ([`LoadError`]), each naming its line ([`DbenchError`]).

mod converter;
mod create;
mod error;
mod lines;
mod load;
mod tree;

use super::format::Trace;
use super::limits::MAX_LOG_LINE;
use converter::Converter;
pub use error::{DbenchError, LoadError};
pub use load::status;

/// A converted load file, and what the conversion left out or noticed.
#[derive(Debug)]
pub struct Converted {
    /// The trace: one thread, the client's tree, nothing existing at first.
    pub trace: Trace,
    /// One line per thing worth knowing (left out, disagreeing statuses).
    pub notes: Vec<String>,
}

/// The buffer glibc's `readdir` hands `getdents64` (what `strace` shows
/// dbench using).
pub const GETDENTS_BYTES: u64 = 32 << 10;

/// Most files dbench's fileio backend holds open per client (its
/// `MAX_FILES`; one more stops it).
pub const MAX_OPEN: usize = 200;

/// Longest path dbench may name once it is beneath a client's directory.
const MAX_PATH: usize = 4000;

/// Converts a load file's text: one client's operations as dbench 4.0's
/// fileio backend makes them, from an empty directory.
pub fn convert(name: &str, text: &str) -> Result<Converted, DbenchError> {
    let err = |line: usize, cause: LoadError| DbenchError {
        file: name.to_string(),
        line,
        cause,
    };
    let mut c = Converter::new();
    let mut lines = 0usize;
    for (i, raw) in text.split('\n').enumerate() {
        let n = i + 1;
        if raw.len() > MAX_LOG_LINE {
            return Err(err(n, LoadError::LongLine(raw.len())));
        }
        let line = raw.trim_end_matches('\r').trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let l = load::line(line).map_err(|e| err(n, e))?;
        if let Some(us) = l.at_us {
            c.clock = c.clock.max(us);
        }
        c.line(n, l.op, &l.args, l.want).map_err(|e| err(n, e))?;
        lines += 1;
    }
    c.t.duration_us = c.clock;
    if lines == 0 {
        return Err(err(1, LoadError::Empty));
    }
    let notes = c.tally.notes();
    Ok(Converted { trace: c.t, notes })
}

#[cfg(test)]
mod tests {
    use super::load::status;
    use super::tree::getdents_calls;
    use super::*;

    fn names(t: &Trace) -> Vec<String> {
        t.ops
            .iter()
            .map(|o| match o.failed {
                Some(e) => format!("{}={}", o.kind.name(), crate::trace::format::errno::name(e)),
                None => o.kind.name().to_string(),
            })
            .collect()
    }

    #[test]
    fn each_line_becomes_what_fileio_does() {
        let text = "Deltree \"\\clients\\client1\" NT_STATUS_OK\n\
                    Mkdir \"\\clients\" NT_STATUS_OK\n\
                    NTCreateX \"\\clients\\client1\\mixfile\" 0x40 0x1 9935 NT_STATUS_OBJECT_NAME_NOT_FOUND\n\
                    NTCreateX \"\\clients\\client1\\d\" 0x1 0x2 9937 NT_STATUS_OK\n\
                    Close 9937 NT_STATUS_OK\n\
                    0.5 NTCreateX \"\\clients\\client1\\d\\f\" 0x40 0x2 9938 NT_STATUS_OK\n\
                    WriteX 9938 0 65536 65536 NT_STATUS_OK\n\
                    LockX 9938 100 1 NT_STATUS_OK\n\
                    UnlockX 9938 100 1 NT_STATUS_OK\n\
                    Flush 9938 NT_STATUS_OK\n\
                    SET_FILE_INFORMATION 9938 1004 NT_STATUS_OK\n\
                    Close 9938 NT_STATUS_OK\n\
                    FIND_FIRST \"\\clients\\client1\\d\\*.*\" 260 1366 1 NT_STATUS_OK\n\
                    Unlink \"\\clients\\client1\\d\\f\" 0x6 NT_STATUS_OK\n";
        let c = convert("c.txt", text).unwrap();
        let t = &c.trace;
        assert_eq!(
            names(t),
            [
                // Deltree of the (empty) client directory.
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                // NTCreateX of a missing file: resolve_name reads the directory.
                "stat=ENOENT",
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                "open=ENOENT",
                // A directory: mkdir, then opened as one.
                "stat=ENOENT",
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                "mkdir",
                "open",
                "fstat",
                "close",
                "stat=ENOENT",
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                "open",
                "fstat",
                "pwrite",
                "lock",
                "unlock",
                "fsync",
                "fstat",
                "utimes",
                "close",
                // FIND_FIRST: resolve the pattern, then read its directory.
                "stat=ENOENT",
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                "open",
                "fstat",
                "readdir",
                "readdir",
                "close",
                "stat",
                "unlink",
            ]
        );
        assert_eq!(t.files[0].path, ".");
        assert!(t.files.iter().skip(1).all(|f| f.size.is_none()));
        assert!(
            c.notes.iter().any(|n| n.contains("\\clients")),
            "{:?}",
            c.notes
        );
        assert_eq!(t.ops.last().unwrap().start_us, 500_000);
        let steps: Vec<&str> = t
            .steps
            .starts
            .iter()
            .map(|(_, s)| t.steps.name(*s))
            .collect();
        assert_eq!(
            steps,
            [
                "Deltree",
                "NTCreateX",
                "NTCreateX",
                "Close",
                "NTCreateX",
                "WriteX",
                "LockX",
                "UnlockX",
                "Flush",
                "Sfileinfo",
                "Close",
                "Find",
                "Unlink"
            ]
        );
        // What the importer writes reads back the same.
        assert_eq!(Trace::parse("c.trace", &t.to_text()).unwrap(), *t);
        assert!(t.to_text().starts_with("plumb-trace 3\n"));
    }

    #[test]
    fn deltree_unlinks_files_and_keeps_directories() {
        let text = "NTCreateX \"\\clients\\client1\\a\" 0x1 0x2 1 NT_STATUS_OK\n\
                    Close 1 NT_STATUS_OK\n\
                    NTCreateX \"\\clients\\client1\\a\\x\" 0x40 0x5 2 NT_STATUS_OK\n\
                    Close 2 NT_STATUS_OK\n\
                    Deltree \"\\clients\\client1\" NT_STATUS_OK\n\
                    QUERY_PATH_INFORMATION \"\\clients\\client1\\a\" 1004 NT_STATUS_OK\n\
                    QUERY_PATH_INFORMATION \"\\clients\\client1\\a\\x\" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND\n";
        let t = convert("d.txt", text).unwrap().trace;
        let n = names(&t);
        let from = t.steps.starts[4].0 as usize;
        let to = t.steps.starts[5].0 as usize;
        assert_eq!(
            &n[from..to],
            [
                "open", "fstat", "readdir", "stat", "open", "fstat", "readdir", "stat", "unlink",
                "readdir", "close", "readdir", "close"
            ]
        );
        assert_eq!(&n[to..to + 1], ["stat"]);
        assert_eq!(n[to + 1], "stat=ENOENT");
    }

    #[test]
    fn statuses_map_to_errnos() {
        assert_eq!(status("NT_STATUS_OK"), Ok(None));
        assert_eq!(status("0x00000000"), Ok(None));
        assert_eq!(
            status("NT_STATUS_OBJECT_NAME_COLLISION"),
            Ok(Some(libc::EEXIST))
        );
        assert_eq!(status("0xC0000034"), Ok(Some(libc::ENOENT)));
        assert!(status("NT_STATUS_WHATEVER")
            .unwrap_err()
            .to_string()
            .contains("not one plumb maps"));
        assert!(status("0xZZ").is_err());
    }

    #[test]
    fn hostile_lines_are_refused_by_line() {
        let ok = "NTCreateX \"\\clients\\client1\\f\" 0x40 0x2 7 NT_STATUS_OK\n";
        let cases = [
            (
                "NTCreateX \"\\clients\\client1\\..\\..\\etc\" 0x40 0x2 7 NT_STATUS_OK\n",
                "climbs",
            ),
            (
                "NTCreateX \"\\clients\\client1\\\\etc\\passwd\" 0x40 0x2 7 NT_STATUS_OK\n",
                "absolute",
            ),
            (
                "NTCreateX \"etc\\passwd\" 0x40 0x2 7 NT_STATUS_OK\n",
                "does not start",
            ),
            (
                "NTCreateX \"\\clients\\client1\\a\u{1}b\" 0x40 0x2 7 NT_STATUS_OK\n",
                "control byte",
            ),
            ("NTCreateX \"\" 0x40 0x2 7 NT_STATUS_OK\n", "empty"),
            (
                "NTCreateX \"\\clients\\client2\\f\" 0x40 0x2 8 NT_STATUS_OK\n",
                "one client",
            ),
            (
                "ReadX 7 1125899906842620 4096 4096 NT_STATUS_OK\n",
                "largest file",
            ),
            (
                "ReadX 7 18446744073709551615 4096 4096 NT_STATUS_OK\n",
                "overflows",
            ),
            (
                "ReadX 7 0 1099511627776 1 NT_STATUS_OK\n",
                "one operation may move",
            ),
            ("ReadX 7 -1 4096 4096 NT_STATUS_OK\n", "not a number"),
            ("ReadX 7 0 4096 NT_STATUS_OK\n", "takes 4 field"),
            ("ReadX 8 0 4096 4096 NT_STATUS_OK\n", "not open"),
            ("Close 0 NT_STATUS_OK\n", "not open"),
            ("Close 99999999999 NT_STATUS_OK\n", "not from 0"),
            (
                "NTCreateX \"\\clients\\client1\\g\" 0x40 0x2 0 NT_STATUS_OK\n",
                "fnum 0",
            ),
            ("Close 7 NT_STATUS_BOGUS\n", "not one plumb maps"),
            ("Close 7 OK\n", "must be its NT status"),
            ("Close\n", "without its fields"),
            (
                "Frobnicate 7 NT_STATUS_OK\n",
                "unknown operation 'Frobnicate'",
            ),
            ("WriteX 7 0 10 5 NT_STATUS_OK\n", "stops here"),
            (
                "Unlink \"\\clients\\client1\\nope\" 0x6 NT_STATUS_OK\n",
                "stops here",
            ),
            (
                "NTCreateX \"\\clients\\client1\\g\" 0x40 0x9 9 NT_STATUS_OK\n",
                "disposition",
            ),
            (
                "NTCreateX \"\\clients\\client1\\g\" 0x40 0x2 7 NT_STATUS_OK\n",
                "again",
            ),
            ("Sleep 18446744073709551615 NT_STATUS_OK\n", "latest time"),
            ("99999999999 Close 7 NT_STATUS_OK\n", "latest"),
            (
                "Rename \"\\clients\\client1\\f\" \"\\clients\" NT_STATUS_OK\n",
                "above",
            ),
            (
                "Unlink \"\\clients\\client1\" 0x6 NT_STATUS_OK\n",
                "a name is needed",
            ),
            ("Close \"7 NT_STATUS_OK\n", "closing quote"),
        ];
        for (line, what) in cases {
            let e = convert("h.txt", &format!("{ok}{line}")).unwrap_err();
            assert_eq!(e.line, 2, "{line}: {e}");
            assert!(e.to_string().starts_with("h.txt:2: "), "{e}");
            assert!(e.cause.to_string().contains(what), "{line}: {e}");
        }
        let long = format!("{ok}# {}\n", "x".repeat(1 << 20));
        assert!(convert("h", &long)
            .unwrap_err()
            .cause
            .to_string()
            .contains("at most"));
        assert!(convert("h", "# nothing\n\n")
            .unwrap_err()
            .cause
            .to_string()
            .contains("no operation"));
    }

    #[test]
    fn readdir_calls_follow_the_directory_size() {
        let few: Vec<String> = (0..10).map(|i| format!("f{i}")).collect();
        assert_eq!(getdents_calls(few.iter(), None), 2);
        assert_eq!(getdents_calls(few.iter(), Some(3)), 1);
        assert_eq!(getdents_calls(few.iter(), Some(0)), 0);
        let many: Vec<String> = (0..2000).map(|i| format!("file{i:08}")).collect();
        // 2002 entries of 32 bytes: two full buffers and a part, then the end.
        assert_eq!(getdents_calls(many.iter(), None), 3);
    }
}
