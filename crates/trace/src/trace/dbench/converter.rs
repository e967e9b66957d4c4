//! The conversion's state and the calls every line's conversion is made
//! of: a file id per path, operations pushed (the first of a line begins
//! its step), `resolve_name` and directory reads as fileio makes them, the
//! files dbench has open, and the statuses it checks.

use super::error::LoadError;
use super::load::{fnum, place, Place};
use super::tree::{base, getdents_calls, join, parent, Fs, Kind};
use super::GETDENTS_BYTES;
use crate::trace::format::{EntryKind, FileEntry, Op, OpKind, OpenFlags, Trace};
use crate::trace::limits::{MAX_FILES, MAX_OPS};
use std::collections::{HashMap, HashSet};

/// A file dbench has open: the trace's handle, the file, and the name it
/// was opened by (which SET_FILE_INFORMATION's `utime` uses).
#[derive(Clone)]
pub(super) struct Opened {
    pub(super) handle: u32,
    pub(super) path: String,
    /// Opened as a directory (read-only, `O_DIRECTORY`).
    pub(super) dir: bool,
}

/// Counts of what the conversion left out or found disagreeing, for the notes.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) set_up: Vec<usize>,
    pub(super) own_mkdir: Vec<usize>,
    pub(super) open_disagrees: Vec<usize>,
    pub(super) status_disagrees: Vec<usize>,
}

impl Tally {
    /// One note per kind of line counted.
    pub(super) fn notes(&self) -> Vec<String> {
        [
            (
                "line(s) name \\clients, dbench's set-up above the client's directory: left out (the replay makes the directories)",
                &self.set_up,
            ),
            (
                "mkdir(s) of the client's own directory left out (the replay makes it)",
                &self.own_mkdir,
            ),
            (
                "NTCreateX line(s) whose open ends otherwise under dbench's fileio backend than the status says: kept as fileio does it",
                &self.open_disagrees,
            ),
            (
                "QUERY_PATH_INFORMATION line(s) whose status disagrees with the model of the tree (dbench ignores it)",
                &self.status_disagrees,
            ),
        ]
        .into_iter()
        .filter_map(|(what, lines)| {
            let first = lines.first()?;
            Some(format!("{} {what} (first at line {first})", lines.len()))
        })
        .collect()
    }
}

/// The open flags of `opendir`.
pub(super) const DIR_OPEN: OpenFlags = OpenFlags {
    read: true,
    write: false,
    create: false,
    truncate: false,
    append: false,
    exclusive: false,
    direct: false,
    sync: false,
    dsync: false,
    directory: true,
    implicit: false,
};

/// The conversion so far: the trace, the model of the client's directory,
/// and dbench's open files.
pub(super) struct Converter {
    pub(super) t: Trace,
    pub(super) fs: Fs,
    ids: HashMap<String, u32>,
    /// File ids whose kind is settled (by their first creation).
    settled: HashSet<u32>,
    pub(super) open: HashMap<u64, Opened>,
    /// NTCreateX lines whose open failed under fileio (a later use of the
    /// fnum stops dbench).
    pub(super) unopened: HashMap<u64, usize>,
    next_handle: u32,
    pub(super) clock: u64,
    /// The step the next operation begins.
    pub(super) step: Option<&'static str>,
    client: Option<u64>,
    pub(super) tally: Tally,
}

impl Converter {
    /// A conversion from an empty directory: one thread, no files.
    pub(super) fn new() -> Converter {
        Converter {
            t: Trace {
                threads: vec![1],
                ..Trace::default()
            },
            fs: Fs::new(),
            ids: HashMap::new(),
            settled: HashSet::new(),
            open: HashMap::new(),
            unopened: HashMap::new(),
            next_handle: 0,
            clock: 0,
            step: None,
            client: None,
            tally: Tally::default(),
        }
    }

    /// The file id of path `p` (made on first use).
    pub(super) fn file(&mut self, p: &str) -> Result<u32, LoadError> {
        if let Some(id) = self.ids.get(p) {
            return Ok(*id);
        }
        if self.t.files.len() >= MAX_FILES {
            return Err(LoadError::TooManyFiles);
        }
        let id = self.t.files.len() as u32;
        self.t.files.push(if p.is_empty() {
            // The client's directory itself, there from the start.
            FileEntry {
                path: ".".into(),
                size: Some(0),
                kind: EntryKind::Dir,
                target: None,
            }
        } else {
            FileEntry::file(p, None)
        });
        self.ids.insert(p.to_string(), id);
        Ok(id)
    }

    /// The first creation of a path says what it is in the file table.
    pub(super) fn settle(&mut self, p: &str, kind: EntryKind) -> Result<(), LoadError> {
        let id = self.file(p)?;
        if self.settled.insert(id) {
            self.t.files[id as usize].kind = kind;
        }
        Ok(())
    }

    /// Adds an operation at the current time (beginning the line's step if
    /// it is the line's first).
    pub(super) fn push(&mut self, kind: OpKind, failed: Option<i32>) -> Result<(), LoadError> {
        if self.t.ops.len() >= MAX_OPS {
            return Err(LoadError::TooManyOps);
        }
        if let Some(name) = self.step.take() {
            // Below MAX_OPS, hence a u32.
            self.t.steps.mark(self.t.ops.len() as u32, name)?;
        }
        self.t.ops.push(Op {
            thread: 0,
            start_us: self.clock,
            dur_us: 0,
            kind,
            failed,
        });
        Ok(())
    }

    /// A new handle id.
    pub(super) fn handle(&mut self) -> u32 {
        let h = self.next_handle;
        self.next_handle += 1;
        h
    }

    /// A stat of `p`; true when it exists.
    pub(super) fn stat(&mut self, p: &str) -> Result<bool, LoadError> {
        let f = self.file(p)?;
        let r = self.fs.kind(p);
        self.push(OpKind::Stat { file: f }, r.err())?;
        Ok(r.is_ok())
    }

    /// `opendir` (an open and an fstat), the `getdents64` calls, `closedir`;
    /// `between` runs after the first batch (Deltree's work on each entry).
    /// False when the directory could not be opened.
    pub(super) fn read_dir(
        &mut self,
        d: &str,
        stop: Option<usize>,
        between: &mut dyn FnMut(&mut Converter) -> Result<(), LoadError>,
    ) -> Result<bool, LoadError> {
        let f = self.file(d)?;
        let h = self.handle();
        let open = OpKind::Open {
            handle: h,
            file: f,
            flags: DIR_OPEN,
        };
        if let Err(e) = self.fs.dir(d) {
            self.push(open, Some(e))?;
            return Ok(false);
        }
        self.push(open, None)?;
        self.push(OpKind::Fstat { handle: h }, None)?;
        let calls = getdents_calls(self.fs.names(d), stop);
        let readdir = OpKind::Readdir {
            handle: h,
            len: GETDENTS_BYTES,
        };
        if calls > 0 {
            self.push(readdir.clone(), None)?;
        }
        between(self)?;
        for _ in 1..calls {
            self.push(readdir.clone(), None)?;
        }
        self.push(OpKind::Close { handle: h }, None)?;
        Ok(true)
    }

    /// fileio's `resolve_name`: a stat, and when it fails a read of the
    /// parent directory looking for the name in any case.
    pub(super) fn resolve(&mut self, p: &str) -> Result<(), LoadError> {
        if self.stat(p)? || p.is_empty() {
            return Ok(());
        }
        let (d, name) = (parent(p), base(p));
        let at = self
            .fs
            .names(d)
            .position(|n| n.eq_ignore_ascii_case(name))
            // "." and ".." come first.
            .map(|i| i + 3);
        self.read_dir(d, at, &mut |_| Ok(()))?;
        Ok(())
    }

    /// The open file a fnum field names.
    pub(super) fn opened(&self, w: &str) -> Result<Opened, LoadError> {
        let n = fnum(w)?;
        if let Some(o) = self.open.get(&n) {
            return Ok(o.clone());
        }
        Err(match self.unopened.get(&n) {
            Some(at) => LoadError::OpenFailed { fnum: n, at: *at },
            None => LoadError::NotOpen(n),
        })
    }

    /// What a path field names (`\clients` itself, or a path in the
    /// client's directory), for the operation `op`.
    pub(super) fn place(&mut self, w: &str) -> Result<Place, LoadError> {
        place(w, &mut self.client)
    }

    /// A path field that must name something in the client's directory.
    pub(super) fn path(&mut self, w: &str, op: &str) -> Result<String, LoadError> {
        match self.place(w)? {
            Place::In(p) => Ok(p),
            Place::Clients => Err(LoadError::AboveClient(op.to_string())),
        }
    }

    /// A path field that must name a file or directory in it, not the
    /// client's directory itself.
    pub(super) fn name(&mut self, w: &str, op: &str) -> Result<String, LoadError> {
        let p = self.path(w, op)?;
        if p.is_empty() {
            return Err(LoadError::NeedsName(op.to_string()));
        }
        Ok(p)
    }

    /// An outcome dbench checks against the status (it stops otherwise).
    pub(super) fn checked(
        &self,
        op: &str,
        p: &str,
        r: Result<(), i32>,
        want: Option<i32>,
    ) -> Result<(), LoadError> {
        match (r, want) {
            (Ok(()), Some(_)) => Err(LoadError::Succeeds {
                op: op.to_string(),
                path: p.to_string(),
            }),
            (Err(e), None) => Err(LoadError::Fails {
                op: op.to_string(),
                path: p.to_string(),
                errno: crate::trace::format::errno::name(e),
            }),
            _ => Ok(()),
        }
    }

    /// `nb_deltree`: read the directory; stat each entry; descend into
    /// directories and unlink everything else.
    pub(super) fn deltree(&mut self, d: &str) -> Result<(), LoadError> {
        self.read_dir(d, None, &mut |c: &mut Converter| {
            let names: Vec<String> = c.fs.names(d).cloned().collect();
            for name in names {
                let p = join(d, &name);
                if !c.stat(&p)? {
                    continue;
                }
                if c.fs.kind(&p) == Ok(Kind::Dir) {
                    c.deltree(&p)?;
                } else {
                    let r = c.fs.unlink(&p);
                    let f = c.file(&p)?;
                    c.push(OpKind::Unlink { file: f }, r.err())?;
                }
            }
            Ok(())
        })?;
        Ok(())
    }
}
