//! NTCreateX as fileio's `nb_createx` carries it out: resolve the path,
//! make a directory when asked, open (again as a directory when the open
//! says it is one), and keep the file number when the open succeeds as
//! the status says.

use super::converter::{Converter, Opened, DIR_OPEN};
use super::error::LoadError;
use super::load::{fnum, number};
use super::tree::Kind;
use super::MAX_OPEN;
use crate::trace::format::{EntryKind, OpKind, OpenFlags};

impl Converter {
    /// `nb_createx`.
    pub(super) fn create(
        &mut self,
        n: usize,
        a: &[&str],
        want: Option<i32>,
    ) -> Result<(), LoadError> {
        let p = self.path(a[0], "NTCreateX")?;
        let options = number(a[1], "create options")?;
        let disposition = number(a[2], "create disposition")?;
        let fnum = fnum(a[3])?;
        if disposition > 5 {
            return Err(LoadError::Disposition(disposition));
        }
        let directory = options & 1 != 0;
        if p.is_empty() && !directory {
            return Err(LoadError::OwnDirAsFile);
        }
        self.resolve(&p)?;
        let f = self.file(&p)?;
        if directory {
            if p.is_empty() {
                // The replay makes the client's directory itself.
                self.tally.own_mkdir.push(n);
            } else {
                let r = self.fs.mkdir(&p);
                if r.is_ok() {
                    self.settle(&p, EntryKind::Dir)?;
                }
                self.push(OpKind::Mkdir { file: f }, r.err())?;
            }
        }
        let (h, r) = if directory {
            self.open_dir(&p, f)?
        } else {
            self.open_file(&p, f, disposition)?
        };
        self.keep(n, &p, fnum, h, r, want)
    }

    /// The open of a directory: read-only, `O_DIRECTORY`.
    fn open_dir(&mut self, p: &str, f: u32) -> Result<(u32, Result<(), i32>), LoadError> {
        let h = self.handle();
        let r = self.fs.dir(p);
        let kind = OpKind::Open {
            handle: h,
            file: f,
            flags: DIR_OPEN,
        };
        self.push(kind, r.err())?;
        Ok((h, r))
    }

    /// The open of a file, read-write, created and truncated as the
    /// disposition says; opened again as a directory when it is one.
    fn open_file(
        &mut self,
        p: &str,
        f: u32,
        disposition: u64,
    ) -> Result<(u32, Result<(), i32>), LoadError> {
        let create = matches!(disposition, 2 | 4 | 5);
        let truncate = matches!(disposition, 4 | 5);
        let h = self.handle();
        let existed = self.fs.kind(p).is_ok();
        let r = self.fs.open_file(p, create);
        if r.is_ok() && !existed {
            self.settle(p, EntryKind::File)?;
        }
        let flags = OpenFlags {
            read: true,
            write: true,
            create,
            truncate,
            ..OpenFlags::default()
        };
        let kind = OpKind::Open {
            handle: h,
            file: f,
            flags,
        };
        self.push(kind, r.err())?;
        if r == Err(libc::EISDIR) {
            // fileio opens it again as a directory.
            return self.open_dir(p, f);
        }
        Ok((h, r))
    }

    /// What the open's outcome `r` on handle `h` means for file number
    /// `fnum`, given the status's errno `want`.
    fn keep(
        &mut self,
        n: usize,
        p: &str,
        fnum: u64,
        h: u32,
        r: Result<(), i32>,
        want: Option<i32>,
    ) -> Result<(), LoadError> {
        match (r, want) {
            (Err(_), _) => {
                if want.is_none() {
                    self.tally.open_disagrees.push(n);
                }
                self.unopened.insert(fnum, n);
            }
            (Ok(()), Some(_)) => {
                // fileio closes what it should not have opened.
                self.tally.open_disagrees.push(n);
                self.push(OpKind::Close { handle: h }, None)?;
                self.unopened.insert(fnum, n);
            }
            (Ok(()), None) => {
                if fnum == 0 {
                    return Err(LoadError::FnumZero);
                }
                if self.open.contains_key(&fnum) {
                    return Err(LoadError::OpenTwice(fnum));
                }
                if self.open.len() >= MAX_OPEN {
                    return Err(LoadError::TooManyOpen);
                }
                self.push(OpKind::Fstat { handle: h }, None)?;
                self.unopened.remove(&fnum);
                let dir = self.fs.kind(p) == Ok(Kind::Dir);
                self.open.insert(
                    fnum,
                    Opened {
                        handle: h,
                        path: p.to_string(),
                        dir,
                    },
                );
            }
        }
        Ok(())
    }
}
