//! File and metadata operations: per-operation handles whose data stays in
//! the host, whole-file reads/writes/copies, and metadata storms.

use super::{os_err, ApiError, Capability, Host};
use crate::workload::{fill_random, stamp_block};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

/// How to open a file (`fs::open(path, #{...})`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Open for reading.
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// Create it if missing.
    pub create: bool,
    /// Truncate it to 0.
    pub truncate: bool,
    /// Writes go to the end.
    pub append: bool,
    /// O_DIRECT.
    pub direct: bool,
    /// Write zeros instead of incompressible data.
    pub zero: bool,
}

/// A page-aligned host buffer holding the data written and read.
#[derive(Debug)]
struct HostBuffer {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the buffer owns its allocation and is only reached through `&mut`
// or `&` of its handle, like a `Vec<u8>`.
unsafe impl Send for HostBuffer {}

impl HostBuffer {
    fn new(len: usize, zero: bool) -> HostBuffer {
        let layout = Layout::from_size_align(len.max(4096).next_multiple_of(4096), 4096)
            .expect("buffer layout");
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory for a file buffer");
        let mut b = HostBuffer { ptr, layout };
        if !zero {
            fill_random(b.bytes(layout.size()), 0x9e37);
        }
        b
    }

    fn len(&self) -> usize {
        self.layout.size()
    }

    fn bytes(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: `len` is at most the allocation, which this value owns.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len.min(self.layout.size())) }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}

/// An open file; data is generated and kept in the host.
#[derive(Debug)]
pub struct FileHandle {
    fd: Option<OwnedFd>,
    path: String,
    opts: OpenOptions,
    buf: HostBuffer,
    seq: u64,
}

/// The result of a whole-file operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    /// Bytes moved.
    pub bytes: u64,
    /// Seconds it took.
    pub seconds: f64,
}

impl Transfer {
    /// Bytes per second.
    pub fn bw_bytes(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// The result of a metadata storm.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Storm {
    /// Operations done.
    pub ops: u64,
    /// Seconds it took.
    pub seconds: f64,
}

impl Storm {
    /// Operations per second.
    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }
}

const MAX_IO: u64 = 64 << 20;

fn check_len(op: &str, len: i64) -> Result<u64, ApiError> {
    if len < 0 || len as u64 > MAX_IO {
        return Err(ApiError::Invalid(format!(
            "{op}: length {len} must be between 0 and {MAX_IO}"
        )));
    }
    Ok(len as u64)
}

impl FileHandle {
    fn fd(&self, op: &str) -> Result<i32, ApiError> {
        self.fd
            .as_ref()
            .map(|f| f.as_raw_fd())
            .ok_or_else(|| ApiError::Invalid(format!("{op}: file '{}' is closed", self.path)))
    }

    fn ensure_buffer(&mut self, len: u64) {
        if self.buf.len() < len as usize {
            self.buf = HostBuffer::new(len as usize, self.opts.zero);
        }
    }

    /// The path it was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Reads `len` bytes at `offset`; returns the bytes read.
    pub fn read_at(&mut self, offset: i64, len: i64) -> Result<u64, ApiError> {
        let len = check_len("read_at", len)?;
        let fd = self.fd("read_at")?;
        self.ensure_buffer(len);
        // SAFETY: the buffer holds at least `len` bytes.
        let r = unsafe { libc::pread(fd, self.buf.ptr.cast(), len as usize, offset.max(0)) };
        if r < 0 {
            return Err(os_err(format!("read_at '{}' offset {offset}", self.path))(
                std::io::Error::last_os_error(),
            ));
        }
        Ok(r as u64)
    }

    /// Writes `len` bytes of generated data at `offset`; returns the bytes written.
    pub fn write_at(&mut self, host: &mut Host, offset: i64, len: i64) -> Result<u64, ApiError> {
        let len = check_len("write_at", len)?;
        let fd = self.fd("write_at")?;
        let size = self.size()?;
        host.charge(
            "write_at",
            (offset.max(0) as u64 + len).saturating_sub(size),
        )?;
        self.pwrite(fd, offset.max(0) as u64, len, true)
    }

    /// Appends `len` bytes of generated data; returns the bytes written.
    pub fn append(&mut self, host: &mut Host, len: i64) -> Result<u64, ApiError> {
        let len = check_len("append", len)?;
        let fd = self.fd("append")?;
        host.charge("append", len)?;
        let size = self.size()?;
        self.pwrite(fd, size, len, !self.opts.append)
    }

    fn pwrite(
        &mut self,
        fd: i32,
        offset: u64,
        len: u64,
        positional: bool,
    ) -> Result<u64, ApiError> {
        self.ensure_buffer(len);
        self.seq += 1;
        if !self.opts.zero {
            let seq = self.seq;
            stamp_block(self.buf.bytes(len as usize), offset, seq, false);
        }
        // SAFETY: the buffer holds at least `len` bytes.
        let r = unsafe {
            if positional {
                libc::pwrite(fd, self.buf.ptr.cast(), len as usize, offset as i64)
            } else {
                libc::write(fd, self.buf.ptr.cast(), len as usize)
            }
        };
        if r < 0 {
            return Err(os_err(format!("write '{}' offset {offset}", self.path))(
                std::io::Error::last_os_error(),
            ));
        }
        Ok(r as u64)
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

    /// Sets the file's length.
    pub fn truncate(&mut self, host: &mut Host, len: i64) -> Result<(), ApiError> {
        let fd = self.fd("truncate")?;
        if len < 0 {
            return Err(ApiError::Invalid(format!(
                "truncate: length {len} is negative"
            )));
        }
        let size = self.size()?;
        host.charge("truncate", (len as u64).saturating_sub(size))?;
        // SAFETY: plain syscall.
        if unsafe { libc::ftruncate(fd, len) } != 0 {
            return Err(os_err(format!("truncate '{}'", self.path))(
                std::io::Error::last_os_error(),
            ));
        }
        host.refund(size.saturating_sub(len as u64));
        Ok(())
    }

    /// Allocates `len` bytes from the start of the file (fallocate(2)).
    pub fn fallocate(&mut self, host: &mut Host, len: i64) -> Result<(), ApiError> {
        let fd = self.fd("fallocate")?;
        if len <= 0 {
            return Err(ApiError::Invalid(format!(
                "fallocate: length {len} must be positive"
            )));
        }
        let size = self.size()?;
        host.charge("fallocate", (len as u64).saturating_sub(size))?;
        // SAFETY: plain syscall.
        if unsafe { libc::fallocate(fd, 0, 0, len) } != 0 {
            return Err(os_err(format!("fallocate '{}'", self.path))(
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// The file's current size.
    pub fn size(&self) -> Result<u64, ApiError> {
        let fd = self.fd("size")?;
        // SAFETY: fstat fills the zeroed struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(os_err(format!("size '{}'", self.path))(
                std::io::Error::last_os_error(),
            ));
        }
        Ok(st.st_size as u64)
    }

    /// Closes the file; later calls fail.
    pub fn close(&mut self) {
        self.fd = None;
    }
}

impl Host {
    /// Opens a file inside the run directory.
    pub fn open(&mut self, path: &str, opts: OpenOptions) -> Result<FileHandle, ApiError> {
        let mut flags = match (opts.read || !opts.write, opts.write || opts.append) {
            (true, true) => libc::O_RDWR,
            (false, true) => libc::O_WRONLY,
            _ => libc::O_RDONLY,
        };
        if opts.create {
            flags |= libc::O_CREAT;
        }
        if opts.truncate {
            flags |= libc::O_TRUNC;
            if let Ok(st) = self.run_dir().stat(path) {
                self.refund(st.size);
            }
        }
        if opts.append {
            flags |= libc::O_APPEND;
        }
        if opts.direct {
            self.allow(Capability::DirectIo)?;
            flags |= libc::O_DIRECT;
        }
        let fd = self.run_dir().open(path, flags, 0o644)?;
        Ok(FileHandle {
            fd: Some(fd),
            path: path.to_string(),
            opts,
            buf: HostBuffer::new(1 << 16, opts.zero),
            seq: 0,
        })
    }

    /// Writes a whole file of `size` bytes in blocks of `bs`, then optionally fsyncs.
    pub fn write_file(
        &mut self,
        path: &str,
        size: u64,
        bs: u64,
        direct: bool,
        fsync: bool,
    ) -> Result<Transfer, ApiError> {
        let bs = bs.clamp(512, MAX_IO);
        let t = Instant::now();
        let mut f = self.open(
            path,
            OpenOptions {
                write: true,
                create: true,
                truncate: true,
                direct,
                ..Default::default()
            },
        )?;
        self.charge("write_file", size)?;
        let fd = f.fd("write_file")?;
        let mut done = 0;
        while done < size {
            self.check()?;
            let n = (size - done).min(bs);
            let w = f.pwrite(fd, done, n, true)?;
            if w == 0 {
                return Err(ApiError::Invalid(format!(
                    "write_file '{path}': the disk accepted no more bytes"
                )));
            }
            done += w;
        }
        if fsync {
            f.fdatasync()?;
        }
        Ok(Transfer {
            bytes: done,
            seconds: t.elapsed().as_secs_f64(),
        })
    }

    /// Reads a whole file in blocks of `bs`.
    pub fn read_file(&mut self, path: &str, bs: u64, direct: bool) -> Result<Transfer, ApiError> {
        let bs = bs.clamp(512, MAX_IO) as i64;
        let t = Instant::now();
        let mut f = self.open(
            path,
            OpenOptions {
                read: true,
                direct,
                ..Default::default()
            },
        )?;
        let mut done = 0u64;
        loop {
            self.check()?;
            let r = f.read_at(done as i64, bs)?;
            if r == 0 {
                break;
            }
            done += r;
        }
        Ok(Transfer {
            bytes: done,
            seconds: t.elapsed().as_secs_f64(),
        })
    }

    /// Copies a file with read/write in blocks of `bs`, or with copy_file_range.
    pub fn copy(
        &mut self,
        src: &str,
        dst: &str,
        method: &str,
        bs: u64,
    ) -> Result<Transfer, ApiError> {
        let t = Instant::now();
        let from = self.run_dir().open(src, libc::O_RDONLY, 0)?;
        let size = self.run_dir().stat(src)?.size;
        self.charge("copy", size)?;
        let to = self
            .run_dir()
            .open(dst, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644)?;
        let mut done = 0u64;
        match method {
            "copy_file_range" => {
                while done < size {
                    self.check()?;
                    // SAFETY: valid descriptors; null offsets use the file positions.
                    let r = unsafe {
                        libc::copy_file_range(
                            from.as_raw_fd(),
                            std::ptr::null_mut(),
                            to.as_raw_fd(),
                            std::ptr::null_mut(),
                            (size - done).min(1 << 30) as usize,
                            0,
                        )
                    };
                    if r < 0 {
                        return Err(os_err(format!("copy '{src}' to '{dst}'"))(
                            std::io::Error::last_os_error(),
                        ));
                    }
                    if r == 0 {
                        break;
                    }
                    done += r as u64;
                }
            }
            "read-write" => {
                let bs = bs.clamp(4096, MAX_IO) as usize;
                let mut buf = HostBuffer::new(bs, true);
                loop {
                    self.check()?;
                    // SAFETY: the buffer holds `bs` bytes.
                    let r = unsafe {
                        libc::read(from.as_raw_fd(), buf.bytes(bs).as_mut_ptr().cast(), bs)
                    };
                    if r < 0 {
                        return Err(os_err(format!("copy: read '{src}'"))(
                            std::io::Error::last_os_error(),
                        ));
                    }
                    if r == 0 {
                        break;
                    }
                    let mut off = 0usize;
                    while off < r as usize {
                        // SAFETY: writes bytes just read into the buffer.
                        let w = unsafe {
                            libc::write(to.as_raw_fd(), buf.ptr.add(off).cast(), r as usize - off)
                        };
                        if w <= 0 {
                            return Err(os_err(format!("copy: write '{dst}'"))(
                                std::io::Error::last_os_error(),
                            ));
                        }
                        off += w as usize;
                    }
                    done += r as u64;
                }
            }
            other => {
                return Err(ApiError::Invalid(format!(
                    "copy: method '{other}' is not one of read-write, copy_file_range"
                )))
            }
        }
        Ok(Transfer {
            bytes: done,
            seconds: t.elapsed().as_secs_f64(),
        })
    }

    /// Renames a file or directory.
    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), ApiError> {
        Ok(self.run_dir().rename(from, to)?)
    }

    /// Names in a directory, sorted.
    pub fn list(&self, path: &str) -> Result<Vec<String>, ApiError> {
        Ok(self.run_dir().list(path)?)
    }

    /// Metadata of a path (a final symlink is not followed).
    pub fn stat(&self, path: &str) -> Result<crate::sandbox::Stat, ApiError> {
        Ok(self.run_dir().stat(path)?)
    }

    /// True when the path exists in the run directory.
    pub fn exists(&self, path: &str) -> Result<bool, ApiError> {
        Ok(self.run_dir().exists(path)?)
    }

    /// Removes a file or empty directory.
    pub fn remove(&mut self, path: &str) -> Result<(), ApiError> {
        let size = self.run_dir().stat(path)?.size;
        self.run_dir().remove(path)?;
        self.refund(size);
        Ok(())
    }

    /// Removes a directory tree.
    pub fn remove_all(&mut self, path: &str) -> Result<(), ApiError> {
        Ok(self.run_dir().remove_all(path)?)
    }

    /// Creates a directory.
    pub fn mkdir(&mut self, path: &str) -> Result<(), ApiError> {
        Ok(self.run_dir().mkdir(path)?)
    }

    /// Syncs every filesystem (sync(2)).
    pub fn sync_all(&mut self) {
        // SAFETY: plain syscall.
        unsafe { libc::sync() };
    }

    /// Drops the page cache (root only).
    pub fn drop_caches(&mut self) -> Result<(), ApiError> {
        self.allow(Capability::Root)?;
        self.sync_all();
        std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
            ApiError::Invalid(format!(
                "drop_caches needs root (writing /proc/sys/vm/drop_caches failed: {e})"
            ))
        })
    }

    /// Evicts one file from the page cache (flushing it first), without root.
    pub fn evict(&mut self, path: &str) -> Result<(), ApiError> {
        let fd = self.run_dir().open(path, libc::O_RDONLY, 0)?;
        // SAFETY: plain syscalls on a descriptor owned here.
        unsafe {
            if libc::fdatasync(fd.as_raw_fd()) != 0 {
                return Err(os_err(format!("evict '{path}'"))(
                    std::io::Error::last_os_error(),
                ));
            }
            libc::posix_fadvise(fd.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
        Ok(())
    }

    /// Creates `count` files of `size` bytes in `dir` (created if missing).
    pub fn create_files(&mut self, dir: &str, count: u64, size: u64) -> Result<Storm, ApiError> {
        if !self.run_dir().exists(dir)? {
            self.mkdir(dir)?;
        }
        self.charge("create_files", count.saturating_mul(size.max(4096)))?;
        let t = Instant::now();
        let mut buf = HostBuffer::new(size.clamp(1, MAX_IO) as usize, false);
        for i in 0..count {
            if i % 256 == 0 {
                self.check()?;
            }
            let fd = self.run_dir().open(
                &format!("{dir}/f{i:08}"),
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
                0o644,
            )?;
            if size > 0 {
                // SAFETY: the buffer holds `size` bytes.
                let w = unsafe {
                    libc::write(
                        fd.as_raw_fd(),
                        buf.bytes(size as usize).as_ptr().cast(),
                        size as usize,
                    )
                };
                if w < 0 {
                    return Err(os_err(format!("create_files '{dir}'"))(
                        std::io::Error::last_os_error(),
                    ));
                }
            }
        }
        Ok(Storm {
            ops: count,
            seconds: t.elapsed().as_secs_f64(),
        })
    }

    /// Stats every entry of `dir`.
    pub fn stat_files(&mut self, dir: &str) -> Result<Storm, ApiError> {
        let names = self.run_dir().list(dir)?;
        let t = Instant::now();
        for (i, n) in names.iter().enumerate() {
            if i % 256 == 0 {
                self.check()?;
            }
            self.run_dir().stat(&format!("{dir}/{n}"))?;
        }
        Ok(Storm {
            ops: names.len() as u64,
            seconds: t.elapsed().as_secs_f64(),
        })
    }

    /// Removes every file of `dir` (the directory stays).
    pub fn remove_files(&mut self, dir: &str) -> Result<Storm, ApiError> {
        let names = self.run_dir().list(dir)?;
        let t = Instant::now();
        for (i, n) in names.iter().enumerate() {
            if i % 256 == 0 {
                self.check()?;
            }
            self.remove(&format!("{dir}/{n}"))?;
        }
        Ok(Storm {
            ops: names.len() as u64,
            seconds: t.elapsed().as_secs_f64(),
        })
    }
}
