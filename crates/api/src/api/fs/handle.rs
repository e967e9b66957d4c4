//! Open files (`fs::open`): handles whose data is generated and kept in the
//! host. Each handle's buffer grows to the largest I/O asked of it (at most
//! [`MAX_IO`]) and is freed on `close`; the number of open handles and the
//! memory of their buffers are bounded per scenario by a [`HandleBudget`].

use super::{data_buffer, io_len_arg, offset_arg, read_some, write_all, MAX_IO};
use crate::api::{os_err, ApiError, Capability, Host};
use crate::buffer::AlignedBuf;
use crate::sandbox::Held;
use crate::workload::{fill_random, stamp_block};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Most files a scenario may hold open at once.
pub const MAX_OPEN: u64 = 1024;

/// Most memory the buffers of a scenario's open files may hold: 256 MiB.
pub const MAX_BUFFER_BYTES: u64 = 256 << 20;

/// What a file opened for writing is filled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Incompressible data (what fio writes by default).
    #[default]
    Random,
    /// Zeros (compressible, and free to dedupe on some storage).
    Zero,
}

/// How to open a file (`fs::open(path, #{...})`): for reading only unless
/// told otherwise.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenOptions {
    /// Open for reading (default true).
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// Create it if missing.
    pub create: bool,
    /// Truncate it to 0 (implies writing).
    pub truncate: bool,
    /// Writes go to the end.
    pub append: bool,
    /// O_DIRECT: the page cache bypassed (the pack must declare `direct_io`).
    pub direct: bool,
    /// What writes put in the file.
    pub pattern: Pattern,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            read: true,
            write: false,
            create: false,
            truncate: false,
            append: false,
            direct: false,
            pattern: Pattern::Random,
        }
    }
}

impl OpenOptions {
    /// Whether writes put zeros in the file.
    fn zero(&self) -> bool {
        self.pattern == Pattern::Zero
    }
}

/// A scenario's count of open handles and of their buffer bytes; handles
/// give back what they hold when closed or dropped.
#[derive(Debug, Default)]
pub struct HandleBudget {
    open: AtomicU64,
    bytes: AtomicU64,
}

impl HandleBudget {
    /// Adds `n` to `counter` unless that passes `max`.
    fn take(counter: &AtomicU64, n: u64, max: u64) -> Result<(), u64> {
        counter
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                v.checked_add(n).filter(|t| *t <= max)
            })
            .map(|_| ())
    }

    fn give(counter: &AtomicU64, n: u64) {
        let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
            Some(v.saturating_sub(n))
        });
    }

    /// Files open now.
    pub fn open_files(&self) -> u64 {
        self.open.load(Ordering::Relaxed)
    }

    /// Bytes held by the buffers of open files now.
    pub fn buffer_bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Holds `bytes` of buffer for work outside an open file (a background
    /// copy's buffer), within the same [`MAX_BUFFER_BYTES`]; given back when
    /// the lease is dropped.
    pub fn lease(self: &Arc<Self>, op: &str, bytes: u64) -> Result<BufferLease, ApiError> {
        HandleBudget::take(&self.bytes, bytes, MAX_BUFFER_BYTES).map_err(|held| {
            ApiError::Invalid(format!(
                "{op}: buffers of {held} bytes are held already and this needs {bytes} more, over the {MAX_BUFFER_BYTES} bytes a scenario may hold"
            ))
        })?;
        Ok(BufferLease {
            budget: self.clone(),
            bytes,
        })
    }
}

/// Buffer bytes held against a scenario's [`HandleBudget`] until dropped.
#[derive(Debug)]
pub struct BufferLease {
    budget: Arc<HandleBudget>,
    bytes: u64,
}

impl Drop for BufferLease {
    fn drop(&mut self) {
        HandleBudget::give(&self.budget.bytes, self.bytes);
    }
}

/// An open file; data is generated and kept in the host.
#[derive(Debug)]
pub struct FileHandle {
    /// Held in the run directory's count of open files, so removing the
    /// file while it is open gives its bytes back only once it is closed.
    fd: Option<Held>,
    path: String,
    opts: OpenOptions,
    /// Made on the first I/O; grown to the largest I/O asked; freed on close.
    buf: Option<AlignedBuf>,
    /// Whether `buf` holds written-over content (generated data or what a
    /// read brought in) rather than the untouched zero pages a read grows it
    /// with: a read never pays for generating data it overwrites.
    filled: bool,
    seq: u64,
    budget: Arc<HandleBudget>,
}

impl FileHandle {
    /// The descriptor, or an error when the file was closed.
    pub(super) fn fd(&self, op: &str) -> Result<i32, ApiError> {
        self.fd
            .as_ref()
            .map(|f| f.as_raw_fd())
            .ok_or_else(|| ApiError::Invalid(format!("{op}: file '{}' is closed", self.path)))
    }

    /// The first `len` bytes of the handle's buffer, growing it if needed
    /// (within the scenario's [`MAX_BUFFER_BYTES`]). A buffer grown for a
    /// read (`for_write` false) is left as zero pages, which the read
    /// overwrites; one a write uses holds generated data (or zeros with
    /// `zero`) first.
    fn buffer(&mut self, op: &str, len: u64, for_write: bool) -> Result<&mut [u8], ApiError> {
        let have = self.buf.as_ref().map_or(0, |b| b.len() as u64);
        if have < len {
            let want = len
                .min(MAX_IO)
                .next_multiple_of(crate::buffer::ALIGN as u64);
            // The budget holds the memory the buffers take (whole huge
            // pages for big ones), not only their length.
            let held = self.buf.as_ref().map_or(0, |b| b.footprint() as u64);
            let more = (crate::buffer::footprint(want as usize) as u64).saturating_sub(held);
            HandleBudget::take(&self.budget.bytes, more, MAX_BUFFER_BYTES).map_err(|held| {
                ApiError::Invalid(format!(
                    "{op} '{}': open files already hold {held} bytes of buffers and this I/O needs {more} more, over the {MAX_BUFFER_BYTES} bytes a scenario may hold (close files you are done with, or use smaller I/Os)",
                    self.path
                ))
            })?;
            // The old buffer goes first: it is never held twice.
            self.buf = None;
            let made = if for_write {
                data_buffer(op, want, self.opts.zero())
            } else {
                AlignedBuf::zeroed(want as usize).map_err(super::buf_err(op))
            };
            match made {
                Ok(b) => {
                    self.buf = Some(b);
                    self.filled = for_write;
                }
                Err(e) => {
                    HandleBudget::give(&self.budget.bytes, held + more);
                    return Err(e);
                }
            }
        }
        let zero = self.opts.zero();
        let buf = self
            .buf
            .as_mut()
            .ok_or_else(|| ApiError::Invalid(format!("{op}: no buffer")))?;
        if for_write && !self.filled {
            if !zero {
                fill_random(buf.as_mut_slice(), 0x9e37);
            }
            self.filled = true;
        }
        if !for_write {
            self.filled = true;
        }
        buf.prefix_mut(len as usize).map_err(super::buf_err(op))
    }

    /// The path it was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Reads `len` bytes at `offset` (one pread); returns the bytes read.
    pub fn read_at(
        &mut self,
        offset: impl Into<i128>,
        len: impl Into<i128>,
    ) -> Result<u64, ApiError> {
        let offset = offset_arg("read_at", offset.into())?;
        let len = io_len_arg("read_at", len.into())?;
        let fd = self.fd("read_at")?;
        let what = format!("read_at '{}' offset {offset}", self.path);
        let buf = self.buffer("read_at", len, false)?;
        read_some(fd, buf, Some(offset), &what)
    }

    /// Writes `len` bytes of generated data at `offset`; returns the bytes written.
    pub fn write_at(
        &mut self,
        host: &mut Host,
        offset: impl Into<i128>,
        len: impl Into<i128>,
    ) -> Result<u64, ApiError> {
        let offset = offset_arg("write_at", offset.into())?;
        let len = io_len_arg("write_at", len.into())?;
        let fd = self.fd("write_at")?;
        let size = self.size()?;
        // offset <= i64::MAX and len <= 64 MiB: no overflow.
        host.charge("write_at", (offset + len).saturating_sub(size))?;
        self.write_block(fd, Some(offset), offset, len)
    }

    /// Appends `len` bytes of generated data; returns the bytes written.
    pub fn append(&mut self, host: &mut Host, len: impl Into<i128>) -> Result<u64, ApiError> {
        let len = io_len_arg("append", len.into())?;
        let fd = self.fd("append")?;
        host.charge("append", len)?;
        let size = self.size()?;
        let at = (!self.opts.append).then_some(size);
        self.write_block(fd, at, size, len)
    }

    /// Writes one block of `len` generated bytes at `at` (the file position
    /// when `None`); `stamp_at` makes the data unique to that offset.
    pub(super) fn write_block(
        &mut self,
        fd: i32,
        at: Option<u64>,
        stamp_at: u64,
        len: u64,
    ) -> Result<u64, ApiError> {
        self.seq += 1;
        let (seq, zero) = (self.seq, self.opts.zero());
        let what = format!("write '{}' offset {stamp_at}", self.path);
        let buf = self.buffer("write", len, true)?;
        if !zero {
            stamp_block(buf, stamp_at, seq, false);
        }
        write_all(fd, buf, at, &what)
    }

    /// fsync(2).
    pub fn fsync(&mut self) -> Result<(), ApiError> {
        let fd = self.fd("fsync")?;
        // SAFETY: plain syscall.
        if unsafe { libc::fsync(fd) } != 0 {
            return Err(os_err(format!("fsync '{}'", self.path))(
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// fdatasync(2).
    pub fn fdatasync(&mut self) -> Result<(), ApiError> {
        let fd = self.fd("fdatasync")?;
        // SAFETY: plain syscall.
        if unsafe { libc::fdatasync(fd) } != 0 {
            return Err(os_err(format!("fdatasync '{}'", self.path))(
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// Sets the file's length; growth is charged first, shrinking is
    /// refunded once it happened, unless another descriptor holds the file
    /// (a job or copy rewriting it would grow it again for free).
    pub fn truncate(&mut self, host: &mut Host, len: impl Into<i128>) -> Result<(), ApiError> {
        let len = super::arg("truncate", "length", len.into(), 0, i64::MAX as u64)?;
        let fd = self.fd("truncate")?;
        let size = self.size()?;
        host.charge("truncate", len.saturating_sub(size))?;
        // SAFETY: plain syscall; `len` <= i64::MAX.
        if unsafe { libc::ftruncate(fd, len as i64) } != 0 {
            return Err(os_err(format!("truncate '{}'", self.path))(
                std::io::Error::last_os_error(),
            ));
        }
        let shared = self
            .fd
            .as_ref()
            .is_some_and(|f| host.run_dir().shared(f.inode()));
        if !shared {
            host.refund(size.saturating_sub(len));
        }
        Ok(())
    }

    /// Allocates `len` bytes from the start of the file (fallocate(2)).
    pub fn fallocate(&mut self, host: &mut Host, len: impl Into<i128>) -> Result<(), ApiError> {
        let len = super::arg("fallocate", "length", len.into(), 1, i64::MAX as u64)?;
        let fd = self.fd("fallocate")?;
        let size = self.size()?;
        host.charge("fallocate", len.saturating_sub(size))?;
        // SAFETY: plain syscall; `len` <= i64::MAX.
        if unsafe { libc::fallocate(fd, 0, 0, len as i64) } != 0 {
            return Err(os_err(format!("fallocate '{}'", self.path))(
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// The file's current size.
    pub fn size(&self) -> Result<u64, ApiError> {
        let fd = self.fd("size")?;
        Ok(fstat(fd)
            .map_err(os_err(format!("size '{}'", self.path)))?
            .st_size
            .max(0) as u64)
    }

    /// Closes the file and frees its buffer; later calls fail.
    pub fn close(&mut self) {
        if self.fd.take().is_some() {
            HandleBudget::give(&self.budget.open, 1);
        }
        if let Some(b) = self.buf.take() {
            HandleBudget::give(&self.budget.bytes, b.footprint() as u64);
        }
    }
}

impl Drop for FileHandle {
    fn drop(&mut self) {
        self.close();
    }
}

/// fstat(2) of a descriptor.
fn fstat(fd: i32) -> std::io::Result<libc::stat> {
    // SAFETY: fstat fills the zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

impl Host {
    /// Opens a file inside the run directory. With `truncate`, the bytes the
    /// file held go back to the budget once it has really been emptied.
    pub fn open(&mut self, path: &str, opts: OpenOptions) -> Result<FileHandle, ApiError> {
        let writes = opts.write || opts.append || opts.truncate;
        let mut flags = match (opts.read || !writes, writes) {
            (true, true) => libc::O_RDWR,
            (false, true) => libc::O_WRONLY,
            _ => libc::O_RDONLY,
        };
        if opts.create {
            flags |= libc::O_CREAT;
        }
        if opts.append {
            flags |= libc::O_APPEND;
        }
        if opts.direct {
            self.allow(Capability::DirectIo)?;
            flags |= libc::O_DIRECT;
        }
        let fd = self.run_dir().open_held(path, flags, 0o644)?;
        let budget = self.handle_budget().clone();
        HandleBudget::take(&budget.open, 1, MAX_OPEN).map_err(|_| {
            ApiError::Invalid(format!(
                "fs::open '{path}': {MAX_OPEN} files are already open, the most a scenario may hold (close files you are done with)"
            ))
        })?;
        // From here the handle owns the slot: dropping it gives it back.
        let handle = FileHandle {
            fd: Some(fd),
            path: path.to_string(),
            opts,
            buf: None,
            filled: false,
            seq: 0,
            budget,
        };
        if opts.truncate {
            self.empty("fs::open", handle.fd("fs::open")?, path)?;
        }
        Ok(handle)
    }

    /// Truncates an open file, held by the caller's one descriptor `fd`,
    /// to 0 and refunds what that freed: the size of a regular file, unless
    /// another descriptor holds it too (a job or copy rewriting it would
    /// grow it again for free). `op` names the operation in errors.
    pub(super) fn empty(&mut self, op: &str, fd: i32, path: &str) -> Result<(), ApiError> {
        let what = || format!("{op} '{path}' (truncate)");
        let st = fstat(fd).map_err(os_err(what()))?;
        // SAFETY: plain syscall on a descriptor the caller holds open.
        if unsafe { libc::ftruncate(fd, 0) } != 0 {
            return Err(os_err(what())(std::io::Error::last_os_error()));
        }
        let inode = crate::sandbox::Inode {
            dev: st.st_dev,
            ino: st.st_ino,
        };
        // The data goes whatever names the file has: its links share it.
        if st.st_mode & libc::S_IFMT == libc::S_IFREG && !self.run_dir().shared(inode) {
            self.refund(st.st_size.max(0) as u64);
        }
        Ok(())
    }
}
