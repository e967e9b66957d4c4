//! The operations of a trace, defined once: this table gives each its
//! names, the version that brought it, its fields with the kind of
//! argument each is (how it is read, checked and written), and what it
//! means for reports and the byte budget. Reading and writing a trace,
//! `plumb trace show`'s names and counts, and the budget's estimates (the
//! bytes a file may reach, the names and inodes made) all follow from it (see `table.rs` for the entry's grammar); adding an
//! operation is an entry here, plus its system call in the replay
//! (`replay/execute.rs`) and the converters that make it.

use super::args::{
    Arg, Args, BufLen, Call, Closing, FileId, Flags, Fresh, Handle, IoLen, Mode, Number, RangeLen,
    RenameFlag, RwKind, Size, Target,
};
use super::error::{shown, ParseError};
use super::{OpenFlags, RenameMode};

/// How an operation can make a file larger: what the byte budget
/// (`crate::trace::budget`) charges for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The file behind `handle` reaches `end` bytes.
    HandleTo {
        /// The handle.
        handle: u32,
        /// End of the extent.
        end: u64,
    },
    /// `len` bytes written at `offset` through `handle`: at the file's end
    /// instead when the handle was opened to append.
    Write {
        /// The handle.
        handle: u32,
        /// Byte offset.
        offset: u64,
        /// Bytes written.
        len: u64,
    },
    /// The file behind `handle` grows by up to `len` bytes (written at its
    /// position, wherever that is).
    HandleBy {
        /// The handle.
        handle: u32,
        /// Bytes added.
        len: u64,
    },
    /// File `file` reaches `end` bytes.
    FileTo {
        /// File id.
        file: u32,
        /// End of the extent.
        end: u64,
    },
}

/// A name an operation may make: what the byte budget charges for its
/// directory entry (and its inode, when it makes one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewName {
    /// The file id of the name.
    pub file: u32,
    /// A new inode with it (not for a hard link).
    pub inode: bool,
}

operations! {
    /// Opens file `file` as handle `handle` (read flags first and the new
    /// handle last, so no handle is claimed by a record that is wrong).
    Open ["open"] since 1 {
        /// The open flags that matter to a replay.
        flags @ 7: OpenFlags as Flags,
        /// File id.
        file @ 6: u32 as FileId,
        /// The handle (the trace's descriptor number) the call used.
        handle @ 5: u32 as Fresh,
    } counted(!flags.implicit)
      makes(flags.create.then_some(NewName { file: *file, inode: true }));
    /// A read; `call` is read, pread, readv or preadv.
    Read ["read", "pread", "readv", "preadv"] since 1 {
        /// The system call.
        call @ 4: &'static str as Call,
        /// The handle (the trace's descriptor number) the call used.
        handle @ 5: u32 as Handle,
        /// Byte offset in the file.
        offset @ 6: u64 as Number,
        /// Length in bytes, as the call asked.
        len @ 7: u64 as IoLen,
    } moves(*len);
    /// A write; `call` is write, pwrite, writev or pwritev.
    Write ["write", "pwrite", "writev", "pwritev"] since 1 {
        /// The system call.
        call @ 4: &'static str as Call,
        /// The handle (the trace's descriptor number) the call used.
        handle @ 5: u32 as Handle,
        /// Byte offset in the file.
        offset @ 6: u64 as Number,
        /// Length in bytes, as the call asked.
        len @ 7: u64 as IoLen,
    } moves(*len) reaches(Reach::Write { handle: *handle, offset: *offset, len: *len });
    /// A seek to an absolute offset.
    Lseek ["lseek"] since 1 {
        /// The handle (the trace's descriptor number) the call used.
        handle @ 5: u32 as Handle,
        /// New offset.
        offset @ 6: u64 as Size,
    };
    /// `fsync(2)` as recorded.
    Fsync ["fsync"] since 1 {
        /// The handle.
        handle @ 5: u32 as Handle,
    };
    /// `fdatasync(2)` as recorded.
    Fdatasync ["fdatasync"] since 1 {
        /// The handle.
        handle @ 5: u32 as Handle,
    };
    /// `sync_file_range(2)` as recorded.
    SyncFileRange ["sync_file_range"] since 1 {
        /// The handle (the trace's descriptor number) the call used.
        handle @ 5: u32 as Handle,
        /// Byte offset in the file.
        offset @ 6: u64 as Number,
        /// Length in bytes, as the call asked.
        len @ 7: u64 as RangeLen,
    };
    /// `ftruncate(2)` as recorded.
    Ftruncate ["ftruncate"] since 1 {
        /// The handle (the trace's descriptor number) the call used.
        handle @ 5: u32 as Handle,
        /// New length.
        len @ 6: u64 as Size,
    } reaches(Reach::HandleTo { handle: *handle, end: *len });
    /// `fallocate(2)` as recorded.
    Fallocate ["fallocate"] since 1 {
        /// The handle (the trace's descriptor number) the call used.
        handle @ 5: u32 as Handle,
        /// Byte offset in the file.
        offset @ 6: u64 as Number,
        /// Length in bytes, as the call asked.
        len @ 7: u64 as RangeLen,
    } reaches(Reach::HandleTo { handle: *handle, end: offset.saturating_add(*len) });
    /// `close(2)` as recorded.
    Close ["close"] since 1 {
        /// The handle closed.
        handle @ 5: u32 as Closing,
    };
    /// `fstat(2)` as recorded.
    Fstat ["fstat"] since 1 {
        /// The handle.
        handle @ 5: u32 as Handle,
    };
    /// mmap of a file as versions 1 to 4 recorded it, without its offset
    /// or protection (noted, not replayed; [`OpKind::Map`] replaces it).
    Mmap ["mmap"] since 1 {
        /// The handle (the trace's descriptor number) the call used.
        handle @ 5: u32 as Handle,
        /// Bytes mapped.
        len @ 6: u64 as Size,
    };
    /// copy_file_range or sendfile.
    Copy ["copy"] since 1 {
        /// Source handle.
        from @ 5: u32 as Handle,
        /// Destination handle.
        to @ 6: u32 as Handle,
        /// Length in bytes, as the call asked.
        len @ 7: u64 as Size,
    } moves(*len) reaches(Reach::HandleBy { handle: *to, len: *len });
    /// stat of a path.
    Stat ["stat"] since 1 {
        /// The file id.
        file @ 5: u32 as FileId,
    };
    /// `unlink(2)` as recorded.
    Unlink ["unlink"] since 1 {
        /// The file id.
        file @ 5: u32 as FileId,
    };
    /// `mkdir(2)` as recorded.
    Mkdir ["mkdir"] since 1 {
        /// The file id.
        file @ 5: u32 as FileId,
    } makes(Some(NewName { file: *file, inode: true }));
    /// `rmdir(2)` as recorded.
    Rmdir ["rmdir"] since 1 {
        /// The file id.
        file @ 5: u32 as FileId,
    };
    /// `rename(2)`, `renameat(2)` or `renameat2(2)` as recorded (its
    /// optional mode, the last word, is read first).
    Rename ["rename"] since 1 {
        /// renameat2's flags.
        mode @ 7: RenameMode as RenameFlag,
        /// Source file id.
        from @ 5: u32 as FileId,
        /// Destination file id.
        to @ 6: u32 as FileId,
    };
    /// `getdents64(2)` on a directory handle, with a buffer of `len` bytes.
    Readdir ["readdir"] since 2 {
        /// The directory's handle.
        handle @ 5: u32 as Handle,
        /// The buffer size the call passed.
        len @ 6: u64 as BufLen,
    };
    /// `dup`, `dup2`, `dup3` or `fcntl(F_DUPFD*)`: `to` is a new descriptor
    /// for what `from` holds.
    Dup ["dup"] since 2 {
        /// The handle duplicated.
        from @ 5: u32 as Handle,
        /// The new handle.
        to @ 6: u32 as Fresh,
    };
    /// A child process's copy of a parent's descriptor, made by the kernel
    /// at fork (not a call of the program's: replayed, not counted).
    Inherit ["inherit"] since 2 {
        /// The parent's handle.
        from @ 5: u32 as Handle,
        /// The child's handle.
        to @ 6: u32 as Fresh,
    } counted(false);
    /// `fchmod(2)` as recorded.
    Fchmod ["fchmod"] since 2 {
        /// The handle.
        handle @ 5: u32 as Handle,
        /// The new mode (permission bits).
        mode @ 6: u32 as Mode,
    };
    /// `access(2)`/`faccessat(2)` of a path.
    Access ["access"] since 2 {
        /// The file id.
        file @ 5: u32 as FileId,
    };
    /// `statfs(2)` of a path.
    Statfs ["statfs"] since 2 {
        /// The file id.
        file @ 5: u32 as FileId,
    };
    /// `readlink(2)` of a path.
    Readlink ["readlink"] since 2 {
        /// The file id.
        file @ 5: u32 as FileId,
    };
    /// `utimensat(2)` on a path (times set to now on replay).
    Utimes ["utimes"] since 2 {
        /// The file id.
        file @ 5: u32 as FileId,
    };
    /// `chmod(2)`/`fchmodat(2)` of a path.
    Chmod ["chmod"] since 2 {
        /// The file id.
        file @ 5: u32 as FileId,
        /// The new mode (permission bits).
        mode @ 6: u32 as Mode,
    };
    /// `truncate(2)` of a path.
    Truncate ["truncate"] since 2 {
        /// The file id.
        file @ 5: u32 as FileId,
        /// New length.
        len @ 6: u64 as Size,
    } reaches(Reach::FileTo { file: *file, end: *len });
    /// `link(2)`/`linkat(2)`: a new name for an existing file.
    Link ["link"] since 2 {
        /// The existing file.
        from @ 5: u32 as FileId,
        /// The new name.
        to @ 6: u32 as FileId,
    } makes(Some(NewName { file: *to, inode: false }));
    /// `symlink(2)`/`symlinkat(2)`: a symlink at `file` holding `target`.
    Symlink ["symlink"] since 2 {
        /// Where the link is made.
        file @ 5: u32 as FileId,
        /// What it points to, as the program wrote it.
        target @ 6: String as Target,
    } makes(Some(NewName { file: *file, inode: true }));
    /// A POSIX byte-range lock (`fcntl(F_SETLK)`, `F_WRLCK` or `F_RDLCK`)
    /// on `len` bytes from `offset` (0: to the end of the file).
    Lock ["lock"] since 3 {
        /// The handle.
        handle @ 5: u32 as Handle,
        /// First byte locked.
        offset @ 6: u64 as Number,
        /// Bytes locked; 0 locks to the end of the file, however long.
        len @ 7: u64 as RangeLen,
        /// A write (exclusive) lock; a read (shared) lock otherwise.
        write @ 8: bool as RwKind,
    };
    /// `mmap(2)` of `len` bytes of a file from `offset`: replayed by
    /// mapping the same range and touching each of its pages the file
    /// holds once (an upper bound of what the program touched).
    Map ["map"] since 5 {
        /// The handle (the trace's descriptor number) the call used.
        handle @ 5: u32 as Handle,
        /// Byte offset in the file (page-aligned when the call succeeded).
        offset @ 6: u64 as Number,
        /// Bytes mapped.
        len @ 7: u64 as RangeLen,
        /// A shared writable map (`w`: stores reach the file); `r` for a
        /// read-only or private map.
        write @ 8: bool as RwKind,
    };
    /// The release of a byte range (`fcntl(F_SETLK)` with `F_UNLCK`).
    Unlock ["unlock"] since 3 {
        /// The handle.
        handle @ 5: u32 as Handle,
        /// First byte released.
        offset @ 6: u64 as Number,
        /// Bytes released; 0: to the end of the file.
        len @ 7: u64 as RangeLen,
    };
}

impl OpKind {
    /// The I/O buffer the operation needs on replay: the length of a read,
    /// a write or a directory read, else 0.
    pub fn transfer(&self) -> u64 {
        match self {
            OpKind::Read { len, .. } | OpKind::Write { len, .. } | OpKind::Readdir { len, .. } => {
                *len
            }
            _ => 0,
        }
    }
}
