//! The values a trace's records hold besides numbers: what a path is, a
//! file record, an open's flags and a rename's mode, with their spelling
//! in the text.

use super::error::{shown, ParseError};

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EntryKind {
    /// A regular file (or anything not known to be otherwise).
    #[default]
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
}

impl EntryKind {
    /// The letter a file record spells it with.
    pub(super) fn letter(self) -> &'static str {
        match self {
            EntryKind::File => "f",
            EntryKind::Dir => "d",
            EntryKind::Symlink => "l",
        }
    }

    /// The kind a file record's letter names.
    pub(super) fn from_letter(w: &str) -> Result<EntryKind, ParseError> {
        match w {
            "f" => Ok(EntryKind::File),
            "d" => Ok(EntryKind::Dir),
            "l" => Ok(EntryKind::Symlink),
            other => Err(ParseError::FileKind(shown(other))),
        }
    }
}

/// A file, directory or symlink the program touched.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileEntry {
    /// Path relative to the recording's root.
    pub path: String,
    /// Size when first touched; None when it did not exist yet.
    pub size: Option<u64>,
    /// What it was when first touched.
    pub kind: EntryKind,
    /// A symlink's target, as the link holds it.
    pub target: Option<String>,
}

impl FileEntry {
    /// A regular file of `size` bytes (None: did not exist yet).
    pub fn file(path: &str, size: Option<u64>) -> FileEntry {
        FileEntry {
            path: path.to_string(),
            size,
            ..FileEntry::default()
        }
    }
}

/// Flags of an `open`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenFlags {
    /// Opened for reading.
    pub read: bool,
    /// Opened for writing.
    pub write: bool,
    /// O_CREAT.
    pub create: bool,
    /// O_TRUNC.
    pub truncate: bool,
    /// O_APPEND.
    pub append: bool,
    /// O_EXCL.
    pub exclusive: bool,
    /// O_DIRECT.
    pub direct: bool,
    /// O_SYNC.
    pub sync: bool,
    /// O_DSYNC.
    pub dsync: bool,
    /// O_DIRECTORY: a directory, to read its entries or sync it.
    pub directory: bool,
    /// Opened before the trace began (not an operation of the program's).
    pub implicit: bool,
}

impl OpenFlags {
    /// The flags after the access mode, each with its word in the text.
    fn named(&mut self) -> [(&mut bool, &'static str); 9] {
        [
            (&mut self.create, "creat"),
            (&mut self.truncate, "trunc"),
            (&mut self.append, "append"),
            (&mut self.exclusive, "excl"),
            (&mut self.direct, "direct"),
            (&mut self.sync, "sync"),
            (&mut self.dsync, "dsync"),
            (&mut self.directory, "dir"),
            (&mut self.implicit, "implicit"),
        ]
    }

    /// The flags as a trace writes them: `r`, `w` or `rw`, then the others.
    pub(super) fn text(&self) -> String {
        let mut out = match (self.read, self.write) {
            (true, true) => "rw",
            (false, true) => "w",
            _ => "r",
        }
        .to_string();
        let mut copy = *self;
        for (on, name) in copy.named() {
            if *on {
                out.push(',');
                out.push_str(name);
            }
        }
        out
    }

    /// The flags a trace's word spells.
    pub(super) fn parse(s: &str) -> Result<OpenFlags, ParseError> {
        let mut f = OpenFlags::default();
        for (i, w) in s.split(',').enumerate() {
            if i == 0 {
                (f.read, f.write) = match w {
                    "r" => (true, false),
                    "w" => (false, true),
                    "rw" => (true, true),
                    _ => return Err(ParseError::OpenMode(w.to_string())),
                };
                continue;
            }
            match f.named().into_iter().find(|(_, name)| *name == w) {
                Some((on, _)) => *on = true,
                None => return Err(ParseError::OpenFlag(shown(w))),
            }
        }
        Ok(f)
    }
}

/// renameat2's flags that change what a rename does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RenameMode {
    /// rename(2): replaces the target.
    #[default]
    Replace,
    /// RENAME_NOREPLACE: fails with EEXIST when the target exists.
    NoReplace,
    /// RENAME_EXCHANGE: swaps the two paths.
    Exchange,
}
