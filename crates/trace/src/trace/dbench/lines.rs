//! Each line's operation as fileio carries it out: on an open file number
//! (Close, ReadX, WriteX, Flush, the file queries, locks), on paths
//! (Qpathinfo, Find, Unlink, Rmdir, Mkdir, Rename, Deltree), and the rest
//! (Qfsinfo, Sleep); NTCreateX is `create.rs`'s.

use super::converter::Converter;
use super::error::LoadError;
use super::load::{extent, fnum, number, shown, step_name, Place};
use super::tree::parent;
use crate::trace::format::{EntryKind, OpKind, RenameMode};
use crate::trace::limits::{MAX_FILE_BYTES, MAX_IO_BYTES, MAX_TIME_US};

impl Converter {
    /// Converts line `n`: operation `op` with its fields `a` and the errno
    /// its status stands for.
    pub(super) fn line(
        &mut self,
        n: usize,
        op: &str,
        a: &[&str],
        want: Option<i32>,
    ) -> Result<(), LoadError> {
        self.step = step_name(op);
        match op {
            "NTCreateX" => self.create(n, a, want),
            "Close" => {
                let o = self.opened(a[0])?;
                self.open.remove(&fnum(a[0])?);
                self.push(OpKind::Close { handle: o.handle }, None)
            }
            "ReadX" | "WriteX" => self.transfer(op == "WriteX", a),
            "Flush" => {
                let o = self.opened(a[0])?;
                self.push(OpKind::Fsync { handle: o.handle }, None)
            }
            "QUERY_FILE_INFORMATION" => {
                let o = self.opened(a[0])?;
                number(a[1], "level")?;
                self.push(OpKind::Fstat { handle: o.handle }, None)
            }
            "SET_FILE_INFORMATION" => {
                let o = self.opened(a[0])?;
                number(a[1], "level")?;
                self.push(OpKind::Fstat { handle: o.handle }, None)?;
                let f = self.file(&o.path)?;
                let r = self.fs.kind(&o.path);
                self.push(OpKind::Utimes { file: f }, r.err())
            }
            "LockX" | "UnlockX" => self.lock(op == "LockX", a),
            "QUERY_FS_INFORMATION" => {
                number(a[0], "level")?;
                let f = self.file("")?;
                self.push(OpKind::Statfs { file: f }, None)
            }
            "Sleep" => {
                let us = number(a[0], "sleep")?;
                self.clock = self
                    .clock
                    .checked_add(us)
                    .filter(|c| *c <= MAX_TIME_US)
                    .ok_or(LoadError::LateSleep(us))?;
                Ok(())
            }
            _ => self.path_line(n, op, a, want),
        }
    }

    /// The operations on paths.
    fn path_line(
        &mut self,
        n: usize,
        op: &str,
        a: &[&str],
        want: Option<i32>,
    ) -> Result<(), LoadError> {
        match op {
            "QUERY_PATH_INFORMATION" => {
                let p = self.path(a[0], op)?;
                number(a[1], "level")?;
                let exists = self.fs.kind(&p).is_ok();
                if exists != want.is_none() {
                    self.tally.status_disagrees.push(n);
                }
                self.resolve(&p)
            }
            "FIND_FIRST" => self.find(a),
            "Unlink" => {
                let p = self.name(a[0], op)?;
                number(a[1], "attributes")?;
                self.resolve(&p)?;
                let r = self.fs.unlink(&p);
                self.checked(op, a[0], r, want)?;
                let f = self.file(&p)?;
                self.push(OpKind::Unlink { file: f }, r.err())
            }
            "Rmdir" => {
                let Some(p) = self.set_up(n, a[0])? else {
                    return Ok(());
                };
                if p.is_empty() {
                    return Err(LoadError::RmdirOwn);
                }
                self.resolve(&p)?;
                let r = self.fs.rmdir(&p);
                self.checked(op, a[0], r, want)?;
                let f = self.file(&p)?;
                self.push(OpKind::Rmdir { file: f }, r.err())
            }
            "Mkdir" => self.mkdir(n, a),
            "Rename" => self.rename(a, want),
            "Deltree" => match self.set_up(n, a[0])? {
                Some(p) => self.deltree(&p),
                None => Ok(()),
            },
            other => Err(LoadError::UnknownOp(shown(other, 40))),
        }
    }

    /// The path of a line that may name `\clients` (dbench's set-up, left
    /// out and counted: None).
    fn set_up(&mut self, n: usize, w: &str) -> Result<Option<String>, LoadError> {
        match self.place(w)? {
            Place::Clients => {
                self.tally.set_up.push(n);
                Ok(None)
            }
            Place::In(p) => Ok(Some(p)),
        }
    }

    /// ReadX or WriteX: a pread or pwrite of the size asked.
    fn transfer(&mut self, write: bool, a: &[&str]) -> Result<(), LoadError> {
        let o = self.opened(a[0])?;
        let offset = number(a[1], "offset")?;
        let size = number(a[2], "size")?;
        let ret = number(a[3], "returned size")?;
        let (offset, len) = extent(offset, size, MAX_IO_BYTES)?;
        if write && o.dir {
            return Err(LoadError::WriteToDir(a[0].to_string()));
        }
        if write && ret != size {
            return Err(LoadError::ShortWrite { size, ret });
        }
        // A read of a directory fails (dbench notes it and goes on).
        let failed = o.dir.then_some(libc::EISDIR);
        let kind = if write {
            OpKind::Write {
                call: "pwrite",
                handle: o.handle,
                offset,
                len,
            }
        } else {
            OpKind::Read {
                call: "pread",
                handle: o.handle,
                offset,
                len,
            }
        };
        self.push(kind, failed)
    }

    /// LockX or UnlockX: a write lock or a release of the range.
    fn lock(&mut self, lock: bool, a: &[&str]) -> Result<(), LoadError> {
        let o = self.opened(a[0])?;
        let offset = number(a[1], "offset")?;
        let len = number(a[2], "length")?;
        let (offset, len) = extent(offset, len, MAX_FILE_BYTES)?;
        // A write lock needs a descriptor open for writing: a directory's
        // is not (fileio ignores the failure).
        let (kind, failed) = if lock {
            let kind = OpKind::Lock {
                handle: o.handle,
                offset,
                len,
                write: true,
            };
            (kind, o.dir.then_some(libc::EBADF))
        } else {
            let kind = OpKind::Unlock {
                handle: o.handle,
                offset,
                len,
            };
            (kind, None)
        };
        self.push(kind, failed)
    }

    /// FIND_FIRST: resolve the pattern; with a wildcard, read its directory.
    fn find(&mut self, a: &[&str]) -> Result<(), LoadError> {
        let p = self.path(a[0], "FIND_FIRST")?;
        number(a[1], "level")?;
        let max = number(a[2], "maximum count")?;
        number(a[3], "count")?;
        self.resolve(&p)?;
        if p.contains(['<', '>', '*', '?', '"']) {
            let stop = usize::try_from(max).unwrap_or(usize::MAX);
            self.read_dir(parent(&p), Some(stop), &mut |_| Ok(()))?;
        }
        Ok(())
    }

    /// Mkdir: resolve, then a mkdir whose result dbench ignores.
    fn mkdir(&mut self, n: usize, a: &[&str]) -> Result<(), LoadError> {
        let Some(p) = self.set_up(n, a[0])? else {
            return Ok(());
        };
        self.resolve(&p)?;
        if p.is_empty() {
            self.tally.own_mkdir.push(n);
            return Ok(());
        }
        let r = self.fs.mkdir(&p);
        let f = self.file(&p)?;
        if r.is_ok() {
            self.settle(&p, EntryKind::Dir)?;
        }
        self.push(OpKind::Mkdir { file: f }, r.err())
    }

    /// Rename: resolve both, then a rename that must end as the status says.
    fn rename(&mut self, a: &[&str], want: Option<i32>) -> Result<(), LoadError> {
        let from = self.name(a[0], "Rename")?;
        let to = self.name(a[1], "Rename")?;
        self.resolve(&from)?;
        self.resolve(&to)?;
        let r = self.fs.rename(&from, &to);
        self.checked("Rename", a[0], r, want)?;
        let (f, t) = (self.file(&from)?, self.file(&to)?);
        self.push(
            OpKind::Rename {
                from: f,
                to: t,
                mode: RenameMode::Replace,
            },
            r.err(),
        )
    }
}
